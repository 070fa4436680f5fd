"""Tests of the reduction and persistent schedulers: acceptance and reasons, heuristics for the
benchmark shapes, NVRTC compilation of every kernel they emit, and the kernels' results.

There is no GPU here, so the kernels' logic is checked by `KernelSim`, a small interpreter of
the `kernel` dialect (below): it runs every thread of every block of a launch on numpy scalars,
threads as generators resumed together at each cooperative op (block/warp reductions and Welford
combines), and fails on an out-of-bounds access, a read of an uninitialized array element, or an
output element written twice. Its results are compared with the numpy reference
(`fuser.runtime.reference.evaluate`) on tiny odd shapes.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import scipy.special
from definitions import attention_softmax, logsumexp_bf16
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    Builtin,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    VectorType,
)
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.parser import Parser

from fuser import DataType, FusionDefinition
from fuser.codegen.cuda import emit_cuda
from fuser.dialects import kernel
from fuser.dialects.fusion import BF16, F16, F32, F64, I1, I32, I64, Fusion, FusionOp
from fuser.dialects.kernel import Kernel
from fuser.runtime.compiled_kernel import nvrtc_compile
from fuser.runtime.reference import evaluate
from fuser.transforms.schedulers import get_scheduler, propose
from fuser.transforms.schedulers.base import Params, Scheduler
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.looped import LoopedParams, LoopedScheduler, online_sums
from fuser.transforms.schedulers.persistent import PersistentParams, PersistentScheduler
from fuser.transforms.schedulers.reduction import ReductionParams, ReductionScheduler
from fuser.transforms.schedulers.reduction_structure import structure_of
from fuser.transforms.split_reductions import plan_split_reductions

REDUCTION = ReductionScheduler()
PERSISTENT = PersistentScheduler()
LOOPED = LoopedScheduler()

# --------------------------------------------------------------------------------------------
# A kernel-dialect interpreter
# --------------------------------------------------------------------------------------------

DTYPES: dict[Attribute, np.dtype] = {
    F16: np.dtype(np.float16),
    BF16: np.dtype(ml_dtypes.bfloat16),
    F32: np.dtype(np.float32),
    F64: np.dtype(np.float64),
    I32: np.dtype(np.int32),
    I64: np.dtype(np.int64),
    I1: np.dtype(np.bool_),
}


def _wrap(value: int, t: Attribute) -> Any:
    """An integer wrapped to the two's complement range of `t`."""
    if t == I1:
        return np.bool_(value & 1)
    bits = 32 if t == I32 else 64
    value &= (1 << bits) - 1
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    return DTYPES[t].type(value)


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_CMPI: list[Callable[[int, int, int], bool]] = [
    lambda a, b, m: a == b,
    lambda a, b, m: a != b,
    lambda a, b, m: a < b,
    lambda a, b, m: a <= b,
    lambda a, b, m: a > b,
    lambda a, b, m: a >= b,
    lambda a, b, m: (a & m) < (b & m),
    lambda a, b, m: (a & m) <= (b & m),
    lambda a, b, m: (a & m) > (b & m),
    lambda a, b, m: (a & m) >= (b & m),
]


def _cmpf(predicate: int, a: Any, b: Any) -> bool:
    unordered = bool(np.isnan(a) or np.isnan(b))
    ordered_tests = {1: a == b, 2: a > b, 3: a >= b, 4: a < b, 5: a <= b, 6: a != b}
    if predicate in ordered_tests:
        return not unordered and bool(ordered_tests[predicate])
    if predicate == 7:
        return not unordered
    if 8 <= predicate <= 13:
        return unordered or bool(ordered_tests[predicate - 7])
    if predicate == 14:
        return unordered
    return predicate == 15


_FLOAT_BINARY: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddfOp: lambda a, b: a + b,
    arith.SubfOp: lambda a, b: a - b,
    arith.MulfOp: lambda a, b: a * b,
    arith.DivfOp: lambda a, b: a / b,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    mathd.PowFOp: np.power,
}
_INT_BINARY: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _trunc_div,
    arith.RemSIOp: lambda a, b: a - _trunc_div(a, b) * b if b else 0,
    arith.MaxSIOp: max,
    arith.MinSIOp: min,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
}
_FLOAT_UNARY: dict[type[Operation], Callable[[Any], Any]] = {
    arith.NegfOp: lambda a: -a,
    mathd.ExpOp: np.exp,
    mathd.Exp2Op: np.exp2,
    mathd.LogOp: np.log,
    mathd.SqrtOp: np.sqrt,
    mathd.RsqrtOp: lambda a: 1 / np.sqrt(a),
    mathd.TanhOp: np.tanh,
    mathd.ErfOp: scipy.special.erf,
    mathd.AbsFOp: np.abs,
    mathd.SinOp: np.sin,
    mathd.CosOp: np.cos,
}


@dataclasses.dataclass
class Buffer:
    """A tensor parameter: a flat buffer, sizes and strides in elements, and write counts."""

    data: np.ndarray
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    writes: np.ndarray | None = None

    def check(self, offset: int, width: int, what: str) -> None:
        if offset < 0 or offset + width > self.data.size:
            raise IndexError(f"{what} of [{offset}, {offset + width}) out of {self.data.size}")
        if width > 1 and offset % width:
            raise IndexError(f"vector {what} at offset {offset} is not aligned to {width}")


class _Yield(Exception):
    def __init__(self, values: list[Any]) -> None:
        self.values = values


Request = tuple[Operation, list[Any]]


class KernelSim:
    """Runs a `kernel.func` on the CPU for one launch (see the module docstring)."""

    def __init__(self, func: kernel.FuncOp) -> None:
        self.func = func

    def launch(
        self, grid: tuple[int, int, int], block: tuple[int, int, int], args: Sequence[Any]
    ) -> None:
        self.grid, self.block = grid, block
        for bz, by, bx in itertools.product(*(range(g) for g in reversed(grid))):
            self._run_block((bx, by, bz), args)

    def _run_block(self, block_id: tuple[int, int, int], args: Sequence[Any]) -> None:
        bdx, bdy, bdz = self.block
        threads = []
        for tz, ty, tx in itertools.product(range(bdz), range(bdy), range(bdx)):
            env: dict[SSAValue, Any] = dict(zip(self.func.args, args, strict=True))
            ctx = {"thread": (tx, ty, tz), "block": block_id}
            threads.append((ctx, self._body(self.func.body.block, env, ctx)))
        pending: list[Request | None] = []
        for _, gen in threads:
            pending.append(self._advance(gen, None))
        while any(p is not None for p in pending):
            if any(p is None for p in pending):
                raise AssertionError("a cooperative op is not reached by every thread")
            ops = {id(p[0]) for p in pending if p is not None}
            if len(ops) != 1:
                raise AssertionError("threads wait at different cooperative ops")
            results = self._cooperate(
                [(ctx, p) for (ctx, _), p in zip(threads, pending, strict=True)]
            )
            pending = [self._advance(gen, r) for (_, gen), r in zip(threads, results, strict=True)]

    @staticmethod
    def _advance(gen: Generator[Request, Any, None], value: Any) -> Request | None:
        try:
            return gen.send(value)
        except StopIteration:
            return None

    def _groups(self, entries: list[tuple[dict, Request]]) -> list[list[int]]:
        op = entries[0][1][0]
        groups: dict[Any, list[int]] = {}
        bdx, bdy, _ = self.block
        for k, (ctx, _) in enumerate(entries):
            tx, ty, tz = ctx["thread"]
            if isinstance(op, kernel.WarpReduceOp | kernel.WarpWelfordOp):
                key: Any = (tx + bdx * (ty + bdy * tz)) // 32
            elif op.along.data == kernel.Dimension.X:
                key = (ty, tz)
            else:
                key = (tx, tz)
            groups.setdefault(key, []).append(k)
        return list(groups.values())

    def _cooperate(self, entries: list[tuple[dict, Request]]) -> list[Any]:
        op = entries[0][1][0]
        results: list[Any] = [None] * len(entries)
        for members in self._groups(entries):
            values = [entries[k][1][1] for k in members]
            if isinstance(op, kernel.WarpWelfordOp | kernel.BlockWelfordOp):
                acc = values[0]
                for other in values[1:]:
                    acc = _welford_combine(acc, other)
                combined: Any = acc
            else:
                kind = op.kind.data
                f = {
                    kernel.ReduceKind.SUM: lambda a, b: a + b,
                    kernel.ReduceKind.MAX: np.maximum,
                    kernel.ReduceKind.MIN: np.minimum,
                    kernel.ReduceKind.PROD: lambda a, b: np.multiply(a, b, dtype=type(a)),
                }[kind]
                acc = values[0][0]
                for other in values[1:]:
                    acc = f(acc, other[0])
                combined = [acc]
            for k in members:
                results[k] = combined
        return results

    # --- executing ops ------------------------------------------------------------------------

    def _body(self, block: Block, env: dict, ctx: dict) -> Generator[Request, Any, None]:
        try:
            yield from self._block(block, env, ctx)
        except _Yield:
            raise AssertionError("scf.yield outside a region op") from None

    def _block(self, block: Block, env: dict, ctx: dict) -> Generator[Request, Any, list[Any]]:
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                return [env[v] for v in op.operands]
            if isinstance(op, scf.ForOp):
                lb, ub, step = (int(env[v]) for v in (op.lb, op.ub, op.step))
                carried = [env[v] for v in op.iter_args]
                body = op.body.block
                for i in range(lb, ub, step):
                    env[body.args[0]] = _wrap(i, body.args[0].type)
                    for arg, value in zip(body.args[1:], carried, strict=True):
                        env[arg] = value
                    carried = yield from self._block(body, env, ctx)
                for r, value in zip(op.results, carried, strict=True):
                    env[r] = value
                continue
            if isinstance(op, scf.IfOp):
                if bool(env[op.cond]):
                    yield from self._block(op.true_region.block, env, ctx)
                continue
            if isinstance(
                op,
                kernel.BlockReduceOp
                | kernel.WarpReduceOp
                | kernel.BlockWelfordOp
                | kernel.WarpWelfordOp,
            ):
                values = [env[v] for v in op.operands]
                result = yield (op, values)
                for r, value in zip(op.results, result, strict=True):
                    env[r] = value
                continue
            if isinstance(op, kernel.ReturnOp):
                return []
            self._step(op, env, ctx)
        return []

    def _step(self, op: Operation, env: dict, ctx: dict) -> None:
        def val(v: SSAValue) -> Any:
            return env[v]

        def out(value: Any) -> None:
            env[op.results[0]] = value

        match op:
            case kernel.CommentOp():
                return
            case (
                kernel.ThreadIdOp() | kernel.BlockIdOp() | kernel.BlockDimOp() | kernel.GridDimOp()
            ):
                axis = "xyz".index(op.dimension.data.value)
                source = {
                    kernel.ThreadIdOp: ctx["thread"],
                    kernel.BlockIdOp: ctx["block"],
                    kernel.BlockDimOp: self.block,
                    kernel.GridDimOp: self.grid,
                }[type(op)]
                out(_wrap(source[axis], op.result.type))
            case kernel.SizeOp() | kernel.StrideOp():
                buf: Buffer = val(op.tensor)
                info = buf.sizes if isinstance(op, kernel.SizeOp) else buf.strides
                out(np.int64(info[op.axis.value.data]))
            case kernel.LoadOp():
                buf = val(op.tensor)
                offset = int(val(op.offset))
                t = op.result.type
                width = t.get_shape()[0] if isinstance(t, VectorType) else 1
                buf.check(offset, width, "load")
                chunk = buf.data[offset : offset + width]
                out(tuple(chunk) if isinstance(t, VectorType) else chunk[0])
            case kernel.StoreOp():
                buf = val(op.tensor)
                offset = int(val(op.offset))
                value = val(op.value)
                values = value if isinstance(value, tuple) else (value,)
                buf.check(offset, len(values), "store")
                for k, x in enumerate(values):
                    buf.data[offset + k] = x
                    if buf.writes is not None:
                        buf.writes[offset + k] += 1
            case kernel.AllocOp():
                t = op.result.type
                fill = DTYPES[t.element_type].type(0) if op.zeroed is not None else None
                out([fill] * t.size.data)
            case kernel.ArrayLoadOp():
                array = val(op.array)
                index = int(val(op.index))
                t = op.result.type
                width = t.get_shape()[0] if isinstance(t, VectorType) else 1
                items = array[index : index + width]
                if len(items) != width or any(x is None for x in items):
                    raise AssertionError(f"array_load of uninitialized [{index}, +{width})")
                out(tuple(items) if width > 1 else items[0])
            case kernel.ArrayStoreOp():
                array = val(op.array)
                index = int(val(op.index))
                value = val(op.value)
                values = value if isinstance(value, tuple) else (value,)
                if index < 0 or index + len(values) > len(array):
                    raise IndexError("array_store out of bounds")
                array[index : index + len(values)] = list(values)
            case arith.ConstantOp():
                t = op.result.type
                if isinstance(op.value, FloatAttr):
                    out(DTYPES[t].type(op.value.value.data))
                else:
                    assert isinstance(op.value, IntegerAttr)
                    out(_wrap(op.value.value.data, t))
            case arith.SelectOp():
                out(val(op.lhs) if bool(val(op.cond)) else val(op.rhs))
            case arith.CmpiOp():
                bits = 1 if op.lhs.type == I1 else (32 if op.lhs.type == I32 else 64)
                mask = (1 << bits) - 1
                fn = _CMPI[op.predicate.value.data]
                out(np.bool_(fn(int(val(op.lhs)), int(val(op.rhs)), mask)))
            case arith.CmpfOp():
                out(np.bool_(_cmpf(op.predicate.value.data, val(op.lhs), val(op.rhs))))
            case arith.ExtFOp() | arith.TruncFOp():
                out(DTYPES[op.result.type].type(val(op.input)))
            case arith.SIToFPOp() | arith.UIToFPOp():
                out(DTYPES[op.result.type].type(int(val(op.input))))
            case arith.FPToSIOp():
                x = val(op.input)
                out(_wrap(0 if np.isnan(x) else int(np.trunc(x)), op.result.type))
            case arith.ExtSIOp() | arith.ExtUIOp() | arith.TruncIOp():
                x = int(val(op.input))
                if isinstance(op, arith.ExtSIOp) and op.input.type == I1:
                    x = -x
                out(_wrap(x, op.result.type))
            case _ if type(op) in _FLOAT_BINARY:
                with np.errstate(all="ignore"):
                    out(_FLOAT_BINARY[type(op)](val(op.operands[0]), val(op.operands[1])))
            case _ if type(op) in _INT_BINARY:
                a, b = (int(val(v)) for v in op.operands)
                out(_wrap(_INT_BINARY[type(op)](a, b), op.results[0].type))
            case _ if type(op) in _FLOAT_UNARY:
                with np.errstate(all="ignore"):
                    x = _FLOAT_UNARY[type(op)](val(op.operands[0]))
                out(DTYPES[op.results[0].type].type(x))
            case _:
                raise NotImplementedError(f"KernelSim cannot run '{op.name}'")


def _welford_combine(a: list[Any], b: list[Any]) -> list[Any]:
    """Chan et al.'s combination, as the preamble's `WelfordCombine`."""
    avg_a, m2_a, n_a = a
    avg_b, m2_b, n_b = b
    n = n_a + n_b
    if n == 0:
        zero = type(n)(0)
        return [zero, zero, zero]
    delta = avg_b - avg_a
    w_b = n_b / n
    return [avg_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n]


# --------------------------------------------------------------------------------------------
# Running fusions through a scheduler and the interpreter
# --------------------------------------------------------------------------------------------


def parse_fusion(text: str) -> FusionOp:
    ctx = Context()
    for dialect in (Builtin, Fusion, Kernel, Arith, Scf, Math):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return next(op for op in module.walk() if isinstance(op, FusionOp))


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def fusion_info(fusion: FusionOp, inputs: Sequence[Any]) -> FusionInfo:
    metas: list[TensorMeta | None] = []
    for arg, x in zip(fusion.inputs, inputs, strict=True):
        if isinstance(arg.type, TensorType):
            metas.append(TensorMeta(tuple(x.shape), element_strides(x), 16))
        else:
            metas.append(None)
    return FusionInfo(tuple(metas))


def random_input(
    rng: np.random.Generator,
    shape: Sequence[int],
    t: Attribute,
    perm: Sequence[int] | None = None,
    loc: float = 0.0,
) -> np.ndarray:
    """Random data of element type `t`; with `perm`, a permuted view of a contiguous array
    (so its strides are not row-major)."""
    perm = list(range(len(shape))) if perm is None else list(perm)
    stored = [shape[p] for p in np.argsort(perm)]
    if t in (I32, I64):
        base = rng.integers(-50, 50, size=stored).astype(DTYPES[t])
    elif t == I1:
        base = rng.random(stored) < 0.5
    else:
        base = np.asarray(loc + rng.standard_normal(stored)).astype(DTYPES[t])
    return np.asarray(base).transpose(perm)


def _buffer(a: np.ndarray) -> Buffer:
    """The buffer of a view of a contiguous array (its base), with the view's strides."""
    base = a
    while base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    flat = base.reshape(-1)
    assert np.shares_memory(flat, a) or a.size == 0
    return Buffer(flat, tuple(a.shape), element_strides(a))


def run_kernel(
    scheduler: Scheduler,
    fusion: FusionOp,
    inputs: Sequence[Any],
    params: Params | None = None,
) -> tuple[list[np.ndarray], Params, kernel.FuncOp]:
    """Schedules `fusion` for `inputs`, runs its kernel in `KernelSim` and returns the outputs
    (checking that every output element is written exactly once)."""
    from fuser.transforms.schedulers.shapes import value_shapes

    info = fusion_info(fusion, inputs)
    verdict = scheduler.accepts(fusion, info)
    assert verdict, verdict.reason
    if params is None:
        params = scheduler.heuristics(fusion, info)
    func = scheduler.emit(fusion, params, "k")
    func.verify()
    launch = scheduler.launch_config(fusion, params, info)
    env = value_shapes(fusion, [getattr(x, "shape", None) for x in inputs])
    args: list[Any] = []
    for arg, x in zip(fusion.inputs, inputs, strict=True):
        args.append(_buffer(x) if isinstance(arg.type, TensorType) else DTYPES[arg.type].type(x))
    outputs: list[Buffer] = []
    for value in fusion.output_op.values:
        shape = env[value]
        t = value.type.element_type
        size = math.prod(shape)
        fill = np.nan if np.issubdtype(DTYPES[t], np.floating) else 0
        strides = TensorMeta.contiguous(shape).strides
        buf = Buffer(
            np.full(size, fill, DTYPES[t]), tuple(shape), strides, np.zeros(size, np.int64)
        )
        outputs.append(buf)
    KernelSim(func).launch(launch.grid, launch.block, [*args, *outputs])
    for k, buf in enumerate(outputs):
        assert (buf.writes == 1).all(), f"output #{k}: writes {buf.writes}"
    return [b.data.reshape(b.sizes) for b in outputs], params, func


def check(
    scheduler: Scheduler,
    fusion: FusionOp,
    inputs: Sequence[Any],
    params: Params | None = None,
    rtol: float = 2e-5,
    atol: float = 1e-5,
) -> Params:
    """The kernel's outputs match the float64 reference."""
    got, params, _ = run_kernel(scheduler, fusion, inputs, params)
    want = evaluate(fusion, list(inputs), compute_dtype=np.float64)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, (k, g.shape, w.shape)
        if np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, w, err_msg=f"output #{k} {params}")
        else:
            tol = rtol if g.dtype in (np.float32, np.float64) else 1e-2
            np.testing.assert_allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol=tol,
                atol=max(atol, tol),
                err_msg=f"output #{k} {params}",
            )
    return params


# --------------------------------------------------------------------------------------------
# Fusions
# --------------------------------------------------------------------------------------------


def _tensor(dims: Sequence[str], t: str) -> str:
    return f"tensor<{'x'.join([*dims, t])}>"


def reduce_fusion(
    op: str, rank: int, axes: Sequence[int], t: str = "f32", keepdim: bool = False
) -> FusionOp:
    """`op` (sum, max, min, prod) of a rank-`rank` tensor over `axes`, computed in f32 for
    f16/bf16."""
    x = _tensor(["?"] * rank, t)
    compute = "f32" if t in ("f16", "bf16") else t
    xc = _tensor(["?"] * rank, compute)
    out_dims = [("1" if keepdim else None) if d in axes else "?" for d in range(rank)]
    out = _tensor([d for d in out_dims if d is not None], compute)
    cast = f"%xc = fusion.cast %x : {x} -> {xc}" if compute != t else "%xc = fusion.set %x : " + x
    flag = " keepdim" if keepdim else ""
    return parse_fusion(f"""
fusion.fusion @{op}_{"_".join(map(str, axes))}(%x: {x}) -> ({out}) {{
  {cast}
  %r = fusion.{op} %xc {list(axes)}{flag} : {xc} -> {out}
  fusion.output %r : {out}
}}""")


def softmax(t: str = "f32") -> FusionOp:
    """softmax(-1) computed in f32 (f64 for f64)."""
    c = "f64" if t == "f64" else "f32"
    x, f = _tensor(["?", "?"], t), _tensor(["?", "?"], c)
    cast_in = f"fusion.cast %x : {x} -> {f}" if t != c else f"fusion.set %x : {x}"
    cast_out = f"fusion.cast %y : {f} -> {x}" if t != c else f"fusion.set %y : {f}"
    return parse_fusion(f"""
fusion.fusion @softmax(%x: {x}) -> ({x}) {{
  %d = fusion.dim %x[1] : {x}
  %xf = {cast_in}
  %m = fusion.max %xf [1] : {f} -> tensor<?x{c}>
  %mb = fusion.broadcast_in_dim %m [0] sizes(%d) : tensor<?x{c}> -> {f}
  %c = fusion.sub %xf, %mb : {f}
  %e = fusion.exp %c : {f}
  %s = fusion.sum %e [1] : {f} -> tensor<?x{c}>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?x{c}> -> {f}
  %y = fusion.div %e, %sb : {f}
  %yo = {cast_out}
  fusion.output %yo : {x}
}}""")


def layer_norm(t: str = "bf16") -> FusionOp:
    text = (Path(__file__).resolve().parents[1] / "examples" / "layer_norm.mlir").read_text()
    return parse_fusion(text.replace("bf16", t))


def rms_norm(t: str = "bf16") -> FusionOp:
    x, f = _tensor(["?", "?"], t), _tensor(["?", "?"], "f32")
    w = _tensor(["?"], t)
    return parse_fusion(f"""
fusion.fusion @rms_norm(%x: {x}, %w: {w}, %k: f32) -> ({x}) {{
  %n = fusion.dim %x[0] : {x}
  %d = fusion.dim %x[1] : {x}
  %xf = fusion.cast %x : {x} -> {f}
  %sq = fusion.mul %xf, %xf : {f}
  %ms = fusion.sum %sq [1] : {f} -> tensor<?xf32>
  %mean = fusion.mul %ms, %k : (tensor<?xf32>, f32) -> tensor<?xf32>
  %eps = fusion.constant 1.0e-05 : f32
  %me = fusion.add %mean, %eps : (tensor<?xf32>, f32) -> tensor<?xf32>
  %inv = fusion.rsqrt %me : tensor<?xf32>
  %ib = fusion.broadcast_in_dim %inv [0] sizes(%d) : tensor<?xf32> -> {f}
  %wf = fusion.cast %w : {w} -> tensor<?xf32>
  %wb = fusion.broadcast_in_dim %wf [1] sizes(%n) : tensor<?xf32> -> {f}
  %y0 = fusion.mul %xf, %ib : {f}
  %y1 = fusion.mul %y0, %wb : {f}
  %y = fusion.cast %y1 : {f} -> {x}
  fusion.output %y : {x}
}}""")


def var_mean(axis: int, correction: int = 1, t: str = "f32") -> FusionOp:
    x = _tensor(["?", "?"], t)
    r = _tensor(["?"], t)
    return parse_fusion(f"""
fusion.fusion @var_mean(%x: {x}) -> ({r}, {r}) {{
  %v, %m = fusion.var_mean %x [{axis}] correction({correction}) : {x} -> {r}, {r}
  fusion.output %v, %m : {r}, {r}
}}""")


WELFORD = """
fusion.fusion @welford(%x: tensor<?x?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi64>) {
  %a, %m2, %n = fusion.welford %x [0, 2]
      : tensor<?x?x?xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?xi64>
  fusion.output %a, %m2, %n : tensor<?xf32>, tensor<?xf32>, tensor<?xi64>
}"""

TWO_REDUCTIONS_EPILOGUE = """
fusion.fusion @two(%x: tensor<?x?xf32>, %b: tensor<?xf32>) -> (tensor<?xf32>, tensor<?x1xf32>) {
  %two = fusion.constant 2.0 : f32
  %y = fusion.mul %x, %two : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
  %s = fusion.sum %y [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = fusion.max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = fusion.div %s, %m : tensor<?xf32>
  %rb = fusion.add %r, %b : tensor<?xf32>
  %mk = fusion.broadcast_in_dim %m [0] : tensor<?xf32> -> tensor<?x1xf32>
  fusion.output %rb, %mk : tensor<?xf32>, tensor<?x1xf32>
}"""

PROLOGUE_OUTPUT = """
fusion.fusion @prologue(%x: tensor<?x?xf32>, %w: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %wb = fusion.broadcast_in_dim %w [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.mul %x, %wb : tensor<?x?xf32>
  %s = fusion.sum %y [{axis}] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %y, %s : tensor<?x?xf32>, tensor<?xf32>
}"""


def inputs_for(fusion: FusionOp, shapes: Sequence[Sequence[int] | None], rng, **kw) -> list:
    result: list[Any] = []
    it = iter(shapes)
    for arg in fusion.inputs:
        if isinstance(arg.type, TensorType):
            result.append(random_input(rng, next(it), arg.type.element_type, **kw))
        else:
            result.append(float(rng.standard_normal()))
    return result


# --------------------------------------------------------------------------------------------
# Kernels against the reference
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(5, 37), (3, 128), (1, 1), (130, 8), (0, 5), (4, 0)])
def test_sum_2d(rng: np.random.Generator, axis: int, shape: tuple[int, int]) -> None:
    fusion = reduce_fusion("sum", 2, [axis])
    params = check(REDUCTION, fusion, [random_input(rng, shape, F32)])
    assert isinstance(params, ReductionParams)
    # the reduced dim is the fastest of a row-major input: inner for -1, outer for 0
    if 0 not in shape and shape[1] > 1 and shape[0] > 1:
        assert params.layout.inner == (axis == 1)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize(
    "axes", [a for r in (1, 2, 3) for a in itertools.combinations(range(3), r)]
)
def test_every_axis_subset_of_3d(
    rng: np.random.Generator, axes: tuple[int, ...], keepdim: bool
) -> None:
    fusion = reduce_fusion("sum", 3, axes, keepdim=keepdim)
    check(REDUCTION, fusion, [random_input(rng, (3, 4, 5), F32)])


@pytest.mark.parametrize(
    ("op", "t"),
    [
        ("max", "f32"),
        ("min", "f64"),
        ("sum", "i32"),
        ("max", "i64"),
        ("sum", "bf16"),
        ("min", "f16"),
        ("prod", "f32"),
        ("prod", "i64"),
        ("prod", "bf16"),
    ],
)
@pytest.mark.parametrize("axis", [0, 1])
def test_kinds_and_types(rng: np.random.Generator, op: str, t: str, axis: int) -> None:
    fusion = reduce_fusion(op, 2, [axis], t)
    (x,) = inputs_for(fusion, [(6, 19)], rng)
    check(REDUCTION, fusion, [x])


@pytest.mark.parametrize("order", [(1, 0), (0, 1)])
@pytest.mark.parametrize("axis", [0, 1])
def test_strided_inputs(rng: np.random.Generator, axis: int, order: tuple[int, int]) -> None:
    """A transposed input swaps inner and outer: the layout follows the strides."""
    fusion = reduce_fusion("sum", 2, [axis])
    x = random_input(rng, (9, 12), F32, perm=order)
    params = check(REDUCTION, fusion, [x])
    assert params.layout.inner == ((axis == 1) == (order == (0, 1)))


def test_middle_axis_takes_the_general_path(rng: np.random.Generator) -> None:
    fusion = reduce_fusion("sum", 3, [1])
    params = check(REDUCTION, fusion, [random_input(rng, (3, 7, 5), F32)])
    assert not params.layout.inner
    assert params.layout.reads[0].kept == "general"
    assert params.layout.vector_width == 1


def test_two_reductions_and_epilogue(rng: np.random.Generator) -> None:
    fusion = parse_fusion(TWO_REDUCTIONS_EPILOGUE)
    x = random_input(rng, (7, 24), F32)
    b = random_input(rng, (7,), F32)
    check(REDUCTION, fusion, [x, b])


@pytest.mark.parametrize("axis", [0, 1])
def test_full_shape_output_of_the_prologue(rng: np.random.Generator, axis: int) -> None:
    fusion = parse_fusion(PROLOGUE_OUTPUT.replace("{axis}", str(axis)))
    x = random_input(rng, (6, 16), F32)
    w = random_input(rng, (16,), F32)
    params = check(REDUCTION, fusion, [x, w])
    assert params.layout.vector_width == 4


@pytest.mark.parametrize(
    ("axis", "shape", "block"),
    [
        (1, (5, 100), (32, 2, 1)),  # a warp per row: warp_reduce
        (1, (5, 100), (64, 3, 1)),  # two warps per row, odd rows per block
        (1, (5, 100), (3, 5, 1)),  # not a power of two
        (0, (37, 12), (2, 8, 1)),
        (0, (37, 12), (3, 7, 1)),
    ],
)
def test_block_shapes(
    rng: np.random.Generator, axis: int, shape: tuple[int, int], block: tuple[int, int, int]
) -> None:
    """The kernels are correct for any block shape, not only the heuristics' ones."""
    fusion = var_mean(axis)
    (x,) = inputs_for(fusion, [shape], rng)
    params = REDUCTION.heuristics(fusion, fusion_info(fusion, [x]))
    check(REDUCTION, fusion, [x], dataclasses.replace(params, block=block, unroll=2))


@pytest.mark.parametrize("axis", [0, 1])
def test_welford_large_mean(rng: np.random.Generator, axis: int) -> None:
    """var_mean of data with mean 1e4 and std 1 in f32 stays accurate (a sum of squares would
    lose every digit)."""
    fusion = var_mean(axis)
    shape = (3, 700) if axis == 1 else (700, 3)
    x = random_input(rng, shape, F32, loc=1e4)
    (var, mean), _, _ = run_kernel(REDUCTION, fusion, [x])
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(var, x64.var(axis=axis, ddof=1), rtol=2e-3)
    np.testing.assert_allclose(mean, x64.mean(axis=axis), rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("length", [5, 700])
def test_welford_of_rows_with_infinities(rng: np.random.Generator, axis: int, length: int) -> None:
    """As torch: a row holding +inf has var NaN and mean +inf, one holding -inf mean -inf, one
    holding both mean NaN (Chan's merge of an infinite mean with a finite one must not give
    inf - inf); the other rows stay exact."""
    fusion = var_mean(axis)
    rows = random_input(rng, (4, length), F32)
    rows[0, length // 2] = np.inf
    rows[1, length - 1] = -np.inf
    rows[2, 0], rows[2, length - 1] = np.inf, -np.inf
    x = np.ascontiguousarray(rows if axis == 1 else rows.T)
    with np.errstate(invalid="ignore"):  # inf - inf, as on the GPU
        (var, mean), _, _ = run_kernel(REDUCTION, fusion, [x])
    assert np.isnan(var[:3]).all()
    np.testing.assert_array_equal(mean[:3], [np.inf, -np.inf, np.nan])
    x64 = rows[3].astype(np.float64)
    np.testing.assert_allclose(var[3], x64.var(ddof=1), rtol=1e-4)
    np.testing.assert_allclose(mean[3], x64.mean(), rtol=1e-4, atol=1e-6)


def test_welford_op_over_two_axes(rng: np.random.Generator) -> None:
    fusion = parse_fusion(WELFORD)
    check(REDUCTION, fusion, [random_input(rng, (4, 3, 5), F32)])


@pytest.mark.parametrize("t", ["f32", "bf16"])
@pytest.mark.parametrize("shape", [(3, 37), (5, 256), (2, 1), (1, 1030)])
def test_softmax(rng: np.random.Generator, t: str, shape: tuple[int, int]) -> None:
    fusion = softmax(t)
    (x,) = inputs_for(fusion, [shape], rng)
    check(PERSISTENT, fusion, [x])


@pytest.mark.parametrize("t", ["f32", "bf16"])
def test_layer_norm(rng: np.random.Generator, t: str) -> None:
    fusion = layer_norm(t)
    inputs = inputs_for(fusion, [(3, 40), (40,), (40,)], rng, loc=0.5)
    check(PERSISTENT, fusion, inputs)


def test_layer_norm_large_mean(rng: np.random.Generator) -> None:
    fusion = layer_norm("f32")
    x = random_input(rng, (2, 512), F32, loc=1e4)
    w, b = random_input(rng, (512,), F32), random_input(rng, (512,), F32)
    (_, mean, invstd), _, _ = run_kernel(PERSISTENT, fusion, [x, w, b])
    x64 = x.astype(np.float64)
    want_invstd = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    np.testing.assert_allclose(invstd, want_invstd, rtol=2e-3)
    np.testing.assert_allclose(mean, x64.mean(axis=1), rtol=1e-6)


def test_rms_norm(rng: np.random.Generator) -> None:
    fusion = rms_norm()
    inputs = inputs_for(fusion, [(4, 48), (48,)], rng)
    inputs[2] = 1.0 / 48
    check(PERSISTENT, fusion, inputs)


@pytest.mark.parametrize(
    ("shape", "block", "chunks"),
    [((3, 100), (32, 2, 1), 1), ((3, 100), (8, 3, 1), 4), ((3, 100), (5, 1, 1), 5)],
)
def test_persistent_block_shapes(
    rng: np.random.Generator, shape: tuple[int, int], block: tuple[int, int, int], chunks: int
) -> None:
    fusion = softmax()
    (x,) = inputs_for(fusion, [shape], rng)
    params = PERSISTENT.heuristics(fusion, fusion_info(fusion, [x]))
    assert isinstance(params, PersistentParams)
    assert block[0] * chunks * params.layout.vector_width >= shape[1]
    check(PERSISTENT, fusion, [x], dataclasses.replace(params, block=block, chunks=chunks))


def test_persistent_takes_reduction_fusions_too(rng: np.random.Generator) -> None:
    fusion = parse_fusion(TWO_REDUCTIONS_EPILOGUE)
    check(PERSISTENT, fusion, inputs_for(fusion, [(5, 30), (5,)], rng))


# --------------------------------------------------------------------------------------------
# Acceptance, rejection reasons and the registry
# --------------------------------------------------------------------------------------------


OUTER_NORM = """
fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %s = fusion.sum %x [0] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = fusion.broadcast_in_dim %s [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.div %x, %sb : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}"""
"""x / sum(x, 0): a normalization over the columns, whose reduced dim is not the fastest."""


def contiguous_info(fusion: FusionOp, shapes: Sequence[Sequence[int]]) -> FusionInfo:
    it = iter(shapes)
    return FusionInfo(
        tuple(
            TensorMeta.contiguous(next(it)) if isinstance(a.type, TensorType) else None
            for a in fusion.inputs
        )
    )


def test_looped_takes_long_rows_read_by_two_passes() -> None:
    """The looped scheduler takes an inner normalization whose row does not fit in registers
    where a later pass reads an input an earlier one read, and says why not otherwise."""
    f = softmax()
    info = contiguous_info(f, [(10, 100000)])
    assert not PERSISTENT.accepts(f, info) and LOOPED.accepts(f, info)
    assert propose(f, info)[0].name == "looped"
    params = LOOPED.heuristics(f, info)
    assert isinstance(params, LoopedParams)
    # one block of 1024 threads per SM: 132 rows of 400 KB in flight do not fit half of L2
    assert params.block == (1024, 1, 1) and params.blocks == 132 and params.unroll == 4
    assert LOOPED.launch_config(f, params, info).grid == (10, 1, 1)
    assert LOOPED.launch_config(f, params, contiguous_info(f, [(5000, 100000)])).grid == (132, 1, 1)
    # rows of 32 KB: two blocks per SM fit half of L2, each 256 threads (two tiles per thread)
    short = LOOPED.heuristics(f, contiguous_info(f, [(10000, 8192)]))
    assert short.block == (256, 1, 1) and short.blocks == 264
    # a logsumexp reads its row once (the sum online beside the max): four blocks per SM
    lse = logsumexp_bf16().fusion
    once = LOOPED.heuristics(lse, contiguous_info(lse, [(10, 100000)]))
    assert once.block == (256, 1, 1) and once.blocks == 4 * 132
    # z / sum(x): x is read by the first pass only, z by the second: two kernels are as good
    sum_div = parse_fusion("""
fusion.fusion @f(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.div %z, %sb : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}""")
    verdict = LOOPED.accepts(sum_div, contiguous_info(sum_div, [(10, 100000), (10, 100000)]))
    assert not verdict and verdict.reason.startswith("no input is read by two passes")
    outer_norm = parse_fusion(OUTER_NORM)
    verdict = LOOPED.accepts(outer_norm, contiguous_info(outer_norm, [(100000, 64)]))
    assert not verdict and "not the fastest-varying dims" in verdict.reason


def test_looped_computes_softmax_normalizer_online() -> None:
    """softmax: the max and the sum of exp(x - max) in one pass (two carried values), then the
    output: two loops over the row; a sum of exp(x - max) of another value stays a pass."""
    f = softmax()
    func = LOOPED.emit(f, LOOPED.heuristics(f, contiguous_info(f, [(4, 100003)])), "k")
    loops = [
        op for op in func.walk() if isinstance(op, scf.ForOp) and "unroll" not in op.attributes
    ]
    assert len(loops) == 3  # the rows, the normalizer pass, the output pass
    assert len(loops[1].results) == 2
    names = [op.name for op in func.walk()]
    assert names.count("kernel.block_reduce") == 2


TWO_MAXIMA = """
fusion.fusion @f(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %mx = fusion.max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %my = fusion.max %y [1] : tensor<?x?xf32> -> tensor<?xf32>
  %b = fusion.broadcast_in_dim %M [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %s = fusion.sub %y, %b : tensor<?x?xf32>
  %e = fusion.exp %s : tensor<?x?xf32>
  %t = fusion.sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %mx, %t : tensor<?xf32>, tensor<?xf32>
}"""
"""max(x) and max(y) in one stage, then sum(exp(y - M)) for M one of them."""


def test_looped_finds_the_max_its_online_sum_subtracts() -> None:
    """The online sum pairs with the max of its own input among the stage's maxima, and with
    none where it subtracts another input's max."""
    paired = structure_of(parse_fusion(TWO_MAXIMA.replace("%M", "%my")))
    ((q, online),) = online_sums(paired).items()
    assert q == 0 and online.max_op.results[0].name_hint == "my"
    assert online_sums(structure_of(parse_fusion(TWO_MAXIMA.replace("%M", "%mx")))) == {}


def test_looped_softmax_over_the_last_of_four_dims() -> None:
    """Attention's softmax, [batch, heads, queries, keys] over keys too long for registers: the
    online sum finds its max under the space's own rank (4), and NVRTC compiles the kernel."""
    compiled = attention_softmax().compile([np.zeros((2, 3, 5, 70001), np.float32)], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["looped"]
    assert compiled.kernels[0].launch.grid == (30, 1, 1)


def test_looped_combines_welford_states_by_shifted_sums() -> None:
    """A long row's var_mean: per-thread states merged across tiles, then across the block by
    three sums (the first thread's mean as a shift, the shifted count x mean, the moved M2),
    not pairwise (`kernel.block_welford` lost 3 ulps of a mean of 1e4)."""
    f = parse_fusion("""
fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %var, %mean = fusion.var_mean %x [1] correction(1)
      : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %mb = fusion.broadcast_in_dim %mean [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %c = fusion.sub %x, %mb : tensor<?x?xf32>
  fusion.output %var, %c : tensor<?xf32>, tensor<?x?xf32>
}""")
    info = contiguous_info(f, [(4, 100003)])
    func = LOOPED.emit(f, LOOPED.heuristics(f, info), "k")
    names = [op.name for op in func.walk()]
    assert names.count("kernel.block_reduce") == 3 and "kernel.block_welford" not in names
    assert names.count("scf.for") == 3  # the rows; the Welford pass; the output pass


def test_registry_names() -> None:
    """(The order is pinned in test_schedulers.py.)"""
    assert isinstance(get_scheduler("reduction"), ReductionScheduler)
    assert isinstance(get_scheduler("persistent"), PersistentScheduler)


@pytest.mark.parametrize(
    ("fusion", "shapes", "name"),
    [
        (lambda: reduce_fusion("sum", 2, [1]), [(64, 64)], "reduction"),
        (lambda: var_mean(0), [(64, 64)], "reduction"),
        (lambda: parse_fusion(TWO_REDUCTIONS_EPILOGUE), [(8, 8), (8,)], "reduction"),
        (lambda: softmax("bf16"), [(64, 64)], "persistent"),
        (lambda: layer_norm("f32"), [(64, 64), (64,), (64,)], "persistent"),
        (lambda: rms_norm(), [(64, 64), (64,)], "persistent"),
    ],
)
def test_propose_picks(fusion: Callable[[], FusionOp], shapes: list, name: str) -> None:
    f = fusion()
    scheduler, _ = propose(f, contiguous_info(f, shapes))
    assert scheduler.name == name


def test_reduction_rejects_persistent_buffers() -> None:
    f = softmax()
    verdict = REDUCTION.accepts(f, contiguous_info(f, [(8, 8)]))
    assert not verdict
    assert verdict.reason == (
        "it has persistent buffers: 'fusion.sum' (%s) needs the result of 'fusion.max' (%m): "
        "the row must stay on chip between the two reductions"
    )
    f = layer_norm()
    verdict = REDUCTION.accepts(f, contiguous_info(f, [(8, 8), (8,), (8,)]))
    assert not verdict
    assert (
        "output #0 uses 'fusion.var_mean' (%var, %mean) with per-element values" in verdict.reason
    )


def test_rejections() -> None:
    different_axes = parse_fusion("""
fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %a = fusion.sum %x [0] : tensor<?x?xf32> -> tensor<?xf32>
  %b = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %a, %b : tensor<?xf32>, tensor<?xf32>
}""")
    verdict = REDUCTION.accepts(different_axes, contiguous_info(different_axes, [(4, 5)]))
    assert not verdict
    assert "one kernel takes reductions of one shape over the same axes" in verdict.reason
    pointwise = parse_fusion("""
fusion.fusion @f(%x: tensor<?xf32>) -> (tensor<?xf32>) {
  %y = fusion.exp %x : tensor<?xf32>
  fusion.output %y : tensor<?xf32>
}""")
    verdict = PERSISTENT.accepts(pointwise, contiguous_info(pointwise, [(4,)]))
    assert not verdict and verdict.reason == "the fusion has no reduction"
    outer_norm = parse_fusion(OUTER_NORM)
    verdict = PERSISTENT.accepts(outer_norm, contiguous_info(outer_norm, [(64, 64)]))
    assert not verdict and "not the fastest-varying dims" in verdict.reason
    f = softmax()
    verdict = PERSISTENT.accepts(f, contiguous_info(f, [(10, 100000)]))
    assert not verdict
    assert verdict.reason.startswith("row of 100000 f32 elements does not fit in registers")
    assert PERSISTENT.accepts(f, contiguous_info(f, [(10, 32768)]))
    # f64 values take two registers each: rows of at most 1024 threads x 20 elements
    f = softmax("f64")
    assert PERSISTENT.accepts(f, contiguous_info(f, [(10, 20480)]))
    verdict = PERSISTENT.accepts(f, contiguous_info(f, [(10, 20481)]))
    assert not verdict
    assert "at most 20480 (1024 threads x 20 elements of 2 register(s) each)" in verdict.reason
    f = layer_norm("f32")
    shapes = [(4, 20000), (20000,), (20000,)]
    assert PERSISTENT.accepts(f, contiguous_info(f, shapes))


def test_mismatched_run_time_shapes_are_rejected() -> None:
    f = parse_fusion(TWO_REDUCTIONS_EPILOGUE)
    verdict = REDUCTION.accepts(f, contiguous_info(f, [(8, 9), (7,)]))
    assert not verdict and "'fusion.add'" in verdict.reason


# --------------------------------------------------------------------------------------------
# Heuristics for the benchmark workloads
# --------------------------------------------------------------------------------------------


def _workloads() -> list[Any]:
    import importlib.util
    import sys
    import types

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "workloads.py"
    spec = importlib.util.spec_from_file_location("fuser_benchmark_workloads", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fake_torch = types.SimpleNamespace(nn=types.SimpleNamespace(functional=None))
    return [w for w in module.all_workloads(fake_torch) if not w.name.startswith("gelu")]


EXPECTED = {
    # name, dtype: (scheduler, inner, vector width, block, launch grid x)
    ("softmax(-1)", "float32"): ("persistent", True, 4, (512, 1, 1), 8192),
    ("softmax(-1)", "bfloat16"): ("persistent", True, 8, (32, 4, 1), 8192),
    ("layer norm", "float32"): ("persistent", True, 4, (512, 1, 1), 8192),
    ("layer norm", "bfloat16"): ("persistent", True, 8, (128, 1, 1), 16384),
    ("RMS norm", "bfloat16"): ("persistent", True, 8, (128, 1, 1), 16384),
    ("var_mean(-1)", "float32"): ("reduction", True, 4, (128, 2, 1), 8192),
    ("sum(-1)", "float32"): ("reduction", True, 4, (512, 1, 1), 16384),
    ("sum(0)", "float32"): ("reduction", False, 4, (8, 16, 1), 512),
}


def test_benchmark_heuristics() -> None:
    """The decisions for the benchmark shapes that run as one kernel (printed: `pytest -s`);
    those `split-reductions` splits in two (the tall, narrow column sum) are left to
    tests/test_split_reductions.py."""
    seen = set()
    for w in _workloads():
        fusion = w.define().fusion
        info = contiguous_info(fusion, w.shapes)
        if any(f > 1 for f in plan_split_reductions(fusion, info)):
            continue
        scheduler, params = propose(fusion, info)
        launch = scheduler.launch_config(fusion, params, info)
        layout = params.layout
        extra = f"unroll={params.unroll}" if isinstance(params, ReductionParams) else ""
        if isinstance(params, PersistentParams):
            extra = f"chunks={params.chunks} ({params.slots} elements per thread)"
        print(
            f"{w.name:14} {w.dtype:8} {w.shapes[0]!s:15} -> {scheduler.name:10} "
            f"{'inner' if layout.inner else 'outer'} vector={layout.vector_width} "
            f"block={params.block} grid={launch.grid} {extra}"
        )
        key = (w.name, w.dtype)
        seen.add(key)
        name, inner, width, block, grid = EXPECTED[key]
        assert (scheduler.name, layout.inner, layout.vector_width) == (name, inner, width)
        assert (params.block, launch.grid[0]) == (block, grid)
        # every vectorized access moves 16 bytes; the whole row or column is covered
        assert all(p.vector for p in layout.reads if p.reduced != "none" or not inner)
        assert launch.grid[0] >= info.device.sm_count
        if isinstance(params, PersistentParams):
            assert params.slots * params.block[0] >= w.shapes[0][1]
    assert seen == set(EXPECTED)


# --------------------------------------------------------------------------------------------
# Every kernel prints as CUDA and compiles with NVRTC
# --------------------------------------------------------------------------------------------


def _compile_cases() -> list[tuple[Scheduler, FusionOp, list[tuple[int, ...]]]]:
    cases: list[tuple[Scheduler, FusionOp, list[tuple[int, ...]]]] = []
    for t in ("f32", "f16", "bf16", "f64"):
        for axis in (0, 1):
            for op in ("sum", "max"):
                cases.append((REDUCTION, reduce_fusion(op, 2, [axis], t), [(4096, 4096)]))
            cases.append((REDUCTION, reduce_fusion("min", 2, [axis], t), [(33, 77)]))
    for t in ("i32", "i64"):
        for axis in (0, 1):
            cases.append((REDUCTION, reduce_fusion("sum", 2, [axis], t), [(1024, 1000)]))
            cases.append((REDUCTION, reduce_fusion("max", 2, [axis], t), [(5, 3)]))
    for axes in (a for r in (1, 2, 3) for a in itertools.combinations(range(3), r)):
        for keepdim in (False, True):
            cases.append(
                (REDUCTION, reduce_fusion("sum", 3, axes, keepdim=keepdim), [(64, 96, 128)])
            )
    for t in ("f32", "f64"):
        for axis in (0, 1):
            cases.append((REDUCTION, var_mean(axis, t=t), [(16384, 4096)]))
    cases.append((REDUCTION, parse_fusion(WELFORD), [(8, 300, 5)]))
    cases.append((REDUCTION, parse_fusion(TWO_REDUCTIONS_EPILOGUE), [(1000, 96), (1000,)]))
    for axis in (0, 1):
        cases.append(
            (
                REDUCTION,
                parse_fusion(PROLOGUE_OUTPUT.replace("{axis}", str(axis))),
                [(2048, 2048), (2048,)],
            )
        )
    for t in ("f32", "f16", "bf16"):
        cases.append((PERSISTENT, softmax(t), [(8192, 8192)]))
        cases.append((PERSISTENT, softmax(t), [(32768, 1024)]))
        cases.append((PERSISTENT, layer_norm(t), [(16384, 4096), (4096,), (4096,)]))
        cases.append((PERSISTENT, rms_norm(t), [(16384, 4096), (4096,)]))
    cases.append((PERSISTENT, softmax(), [(100, 32768)]))  # 1024 threads x 32 elements
    cases.append((PERSISTENT, softmax(), [(100, 77)]))  # scalar accesses
    cases.append((PERSISTENT, parse_fusion(TWO_REDUCTIONS_EPILOGUE), [(1000, 96), (1000,)]))
    cases.append((LOOPED, softmax(), [(100, 100003)]))  # scalar accesses
    cases.append((LOOPED, softmax("bf16"), [(7, 262144)]))
    cases.append((LOOPED, softmax("f64"), [(7, 20481)]))
    return cases


def test_every_kernel_compiles_with_nvrtc() -> None:
    cases = _compile_cases()
    funcs: list[kernel.FuncOp] = []
    for k, (scheduler, fusion, shapes) in enumerate(cases):
        info = contiguous_info(fusion, shapes)
        verdict = scheduler.accepts(fusion, info)
        assert verdict, (fusion.sym_name.data, verdict.reason)
        params = scheduler.heuristics(fusion, info)
        func = scheduler.emit(fusion, params, f"k{k}_{fusion.sym_name.data}")
        func.verify()
        funcs.append(func)
    source = emit_cuda(ModuleOp(funcs))
    assert source.count('extern "C" __global__') == len(cases)
    cubin, _ = nvrtc_compile(source, funcs[0].sym_name.data, "sm_90")
    assert len(cubin) > 0


# --------------------------------------------------------------------------------------------
# Edge cases: extents of 1 and 0, scalar and rank-0 inputs
# --------------------------------------------------------------------------------------------

SCALAR_AND_RANK0 = """
fusion.fusion @scalars(%x: tensor<?x?xf32>, %a: f32, %z: tensor<f32>) -> (tensor<?xf32>) {
  %n0 = fusion.dim %x[0] : tensor<?x?xf32>
  %n1 = fusion.dim %x[1] : tensor<?x?xf32>
  %zb = fusion.broadcast_in_dim %z [] sizes(%n0, %n1) : tensor<f32> -> tensor<?x?xf32>
  %y = fusion.mul %x, %a : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
  %y2 = fusion.add %y, %zb : tensor<?x?xf32>
  %s = fusion.sum %y2 [1] : tensor<?x?xf32> -> tensor<?xf32>
  %s2 = fusion.mul %s, %a : (tensor<?xf32>, f32) -> tensor<?xf32>
  fusion.output %s2 : tensor<?xf32>
}"""


@pytest.mark.parametrize(
    ("scheduler", "make", "shapes"),
    [
        (REDUCTION, lambda: reduce_fusion("sum", 2, [1]), [(5, 1)]),
        (REDUCTION, lambda: reduce_fusion("sum", 3, [0, 2]), [(1, 6, 1)]),
        (REDUCTION, lambda: reduce_fusion("sum", 3, [1], keepdim=True), [(4, 1, 9)]),
        (REDUCTION, lambda: reduce_fusion("sum", 1, [0]), [(1001,)]),
        (REDUCTION, lambda: var_mean(1, correction=5), [(3, 4)]),
        (REDUCTION, lambda: var_mean(0), [(0, 3)]),
        (PERSISTENT, lambda: var_mean(1), [(3, 0)]),
        (PERSISTENT, lambda: softmax(), [(3, 1)]),
        (PERSISTENT, lambda: softmax("f64"), [(3, 10)]),
        (REDUCTION, lambda: parse_fusion(SCALAR_AND_RANK0), [(4, 12), ()]),
    ],
)
def test_edge_cases(
    rng: np.random.Generator, scheduler: Scheduler, make: Callable[[], FusionOp], shapes: list
) -> None:
    fusion = make()
    with np.errstate(all="ignore"):  # the reference divides by zero for empty reductions
        check(scheduler, fusion, inputs_for(fusion, shapes, rng))


@pytest.mark.parametrize("length", [0, 5])
def test_an_output_broadcast_along_the_reduced_dims_is_refused(
    rng: np.random.Generator, length: int
) -> None:
    """The GPU fuzzer's find: `lt(min(x, keepdim), y)` with `y` of extent 1 is an output of
    extent 1 along the reduced dim. Taken as a per-element output it was stored by every thread
    of a row, and for an empty row by none (the GPU returned the poisoned byte). The persistent
    template refuses it; the segmenter then gives it a pointwise kernel."""
    with FusionDefinition("min_lt") as fd:
        y = fd.define_tensor([-1], DataType.Half)
        x = fd.define_tensor([-1], DataType.Double)
        fd.add_output(fd.ops.lt(fd.ops.min(x, dims=[0], keepdim=True), y))
    inputs = [np.array([0.5], np.float16), rng.standard_normal(length)]
    info = fusion_info(fd.fusion, inputs)
    assert not REDUCTION.accepts(fd.fusion, info)  # (a per-element output of the min)
    verdict = PERSISTENT.accepts(fd.fusion, info)
    assert not verdict and "stores each output element once" in verdict.reason
    compiled = fd.compile(inputs, arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["reduction", "pointwise"]


@pytest.mark.parametrize("rows", [0, 4])
def test_an_output_that_does_not_vary_along_the_kept_dims_is_refused(
    rng: np.random.Generator, rows: int
) -> None:
    """The GPU fuzzer's find: `sigmoid(z)` of a [1, 1] input beside `sum(x, dims=[1],
    keepdim=True)` of an [n, 5] input is an output of extent 1 along the kept dim. Stored once per
    row, it was written by n rows, and for n = 0 by none (the GPU returned the poisoned bytes).
    Both reduction templates refuse it; the segmenter gives it a pointwise kernel of its own."""
    with FusionDefinition("sum_beside") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        z = fd.define_tensor([1, 1], DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[1], keepdim=True))
        fd.add_output(fd.ops.sigmoid(z))
    inputs = [rng.standard_normal((rows, 5)).astype(np.float32), np.array([[2.0]], np.float32)]
    info = fusion_info(fd.fusion, inputs)
    for scheduler in (REDUCTION, PERSISTENT):
        verdict = scheduler.accepts(fd.fusion, info)
        assert not verdict and "does not vary along dim 0" in verdict.reason, verdict
    compiled = fd.compile(inputs, arch="sm_90")
    assert sorted(k.scheduler for k in compiled.kernels) == ["pointwise", "reduction"]


def test_persistent_reduces_a_static_extent_of_one(rng: np.random.Generator) -> None:
    """Reduced dims of static extent 1: a reduction's input is then a row value (its map drops
    the dim), computed once per row; the persistent kernel copies it into a slot array to
    reduce it."""
    with FusionDefinition("static_one") as fd:
        x = fd.define_tensor([-1, 1], DataType.Double)
        sq = fd.ops.mul(x, x)
        total = fd.ops.sum(sq, dims=[1], keepdim=True)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=True)
        fd.add_output(fd.ops.mul(fd.ops.sub(x, mean), total))
        fd.add_output(var)
    fusion = fd.fusion
    check(PERSISTENT, fusion, [random_input(rng, (5, 1), F64)])
    check(PERSISTENT, fusion, [random_input(rng, (0, 1), F64)])
