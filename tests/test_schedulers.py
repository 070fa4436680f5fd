"""Tests of the schedulers: the scalar lowering's math, the pointwise heuristics, and the kernels
they emit, checked against the numpy reference (`fuser.runtime.reference`).

Kernels run on `simulate`, a small interpreter of `kernel.func` with `arith`/`math`/`scf` on numpy
values: one thread at a time, every access bounds- and alignment-checked, outputs pre-filled with
a sentinel so an element nobody writes fails. The arith/math semantics it implements are the ones
the CUDA emitter must give those ops (`arith.fptosi` is PTX `cvt.rzi`: saturating, NaN -> 0).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import scipy.special
from ir_helpers import NUMERIC_UNARY, UNARY
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    Builtin,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.parser import Parser

from fuser.dialects import fusion as fu
from fuser.dialects import kernel, libm
from fuser.runtime import philox
from fuser.runtime.dtypes import numpy_dtype, round_to_float
from fuser.runtime.reference import evaluate, sort_order
from fuser.transforms.schedule import schedule_fusion
from fuser.transforms.schedulers import SCHEDULERS, get_scheduler, propose
from fuser.transforms.schedulers.base import LaunchConfig, Params, Scheduler
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import iteration_space
from fuser.transforms.schedulers.pointwise import PointwiseParams, PointwiseScheduler
from fuser.transforms.schedulers.scalar_lowering import is_pointwise, lower_pointwise

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {
    "f16": np.dtype(np.float16),
    "bf16": BF16,
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}

# --------------------------------------------------------------------------------------------
# arith / math on numpy values (scalars or arrays, elementwise)
# --------------------------------------------------------------------------------------------


def _scalar(x: Any) -> Any:
    return x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x


def _trunc_div(a: Any, b: Any) -> Any:
    """C division: truncates toward zero (division by zero gives 0, as the reference)."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, 1, b).astype(b.dtype)
    q = a // safe + ((a % safe != 0) & ((a < 0) != (safe < 0))).astype(a.dtype)
    return np.where(b == 0, 0, q).astype(a.dtype)


def _fptosi(x: Any, dtype: np.dtype) -> Any:
    """PTX cvt.rzi: truncate toward zero, saturate to the range; NaN gives 0 from f32 to i32
    and the most negative integer otherwise."""
    source = np.asarray(x).dtype
    f = np.trunc(np.asarray(x, dtype=np.float64))
    bound = 2.0 ** (np.iinfo(dtype).bits - 1)
    nan = np.isnan(f)
    inside = np.where((f >= bound) | (f < -bound) | nan, 0, f).astype(dtype)
    info = np.iinfo(dtype)
    nan_value = 0 if source == np.float32 and dtype == np.int32 else info.min
    inside = np.where(nan, nan_value, inside).astype(dtype)
    return np.where(f >= bound, info.max, np.where(f < -bound, info.min, inside)).astype(dtype)


def _unsigned(x: Any) -> Any:
    a = np.asarray(x)
    return a if a.dtype == np.bool_ else a.view(f"u{a.dtype.itemsize}")


CMPF: dict[int, Callable[[Any, Any], Any]] = {
    1: np.equal,
    2: np.greater,
    3: np.greater_equal,
    4: np.less,
    5: np.less_equal,
    13: np.not_equal,  # une: NaN != x is true
    14: lambda a, b: np.isnan(a) | np.isnan(b),  # uno
}
CMPI: dict[int, Callable[[Any, Any], Any]] = {
    0: np.equal,
    1: np.not_equal,
    2: np.less,
    3: np.less_equal,
    4: np.greater,
    5: np.greater_equal,
    6: lambda a, b: _unsigned(a) < _unsigned(b),
    7: lambda a, b: _unsigned(a) <= _unsigned(b),
    8: lambda a, b: _unsigned(a) > _unsigned(b),
    9: lambda a, b: _unsigned(a) >= _unsigned(b),
}


def _constant(op: arith.ConstantOp) -> Any:
    t = op.result.type
    dtype = numpy_dtype(t)
    if isinstance(op.value, IntegerAttr):
        v = op.value.value.data
        return np.bool_(v != 0) if dtype == np.bool_ else dtype.type(v)
    assert isinstance(op.value, FloatAttr)
    return round_to_float(np.float64(op.value.value.data), dtype)[()]


def _convert_float(x: Any, t: Attribute) -> Any:
    return _scalar(round_to_float(np.asarray(x), numpy_dtype(t)))


def _astype(x: Any, t: Attribute) -> Any:
    return _scalar(np.asarray(x).astype(numpy_dtype(t)))


def _rsqrt(x: Any) -> Any:
    return _scalar(np.asarray(1, dtype=np.asarray(x).dtype) / np.sqrt(x))


def _shift(fn: Callable[[Any, Any], Any], unsigned: bool) -> Callable[[Operation, list[Any]], Any]:
    """A C shift as the emitter prints it (through the unsigned type where `unsigned`); the
    count must lie in [0, bits), as the lowering guarantees."""

    def run(op: Operation, a: list[Any]) -> Any:
        x, count = np.asarray(a[0]), np.asarray(a[1])
        assert np.all((count >= 0) & (count < 8 * x.dtype.itemsize)), "a C shift out of range"
        value = fn(_unsigned(x), count.astype(_unsigned(x).dtype)) if unsigned else fn(x, count)
        return _scalar(np.asarray(value).view(x.dtype) if unsigned else value)

    return run


def _gcd(a: Any, b: Any) -> Any:
    """`fuser::gcd`: Euclid's in the signed type from |a|, |b| (|INT_MIN| wraps), `x % -1`
    taken as 0; written as a plain loop per element."""
    x, y = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    out = np.empty(x.shape, x.dtype)
    bits = 8 * x.dtype.itemsize
    for i in np.ndindex(x.shape):
        p, q = int(x[i]), int(y[i])
        p, q = (-p if p < 0 else p), (-q if q < 0 else q)
        p = p - 2**bits if p >= 2 ** (bits - 1) else p  # the wrap of |INT_MIN|
        q = q - 2**bits if q >= 2 ** (bits - 1) else q
        while p != 0:
            r = 0 if p == -1 else int(np.fmod(q, p))  # C's remainder
            p, q = r, p
        out[i] = q
    return _scalar(out)


SCALAR_OPS: dict[type[Operation], Callable[[Operation, list[Any]], Any]] = {
    arith.ConstantOp: lambda op, a: _constant(op),  # type: ignore[arg-type]
    arith.AddfOp: lambda op, a: a[0] + a[1],
    arith.SubfOp: lambda op, a: a[0] - a[1],
    arith.MulfOp: lambda op, a: a[0] * a[1],
    arith.DivfOp: lambda op, a: a[0] / a[1],
    arith.NegfOp: lambda op, a: -a[0],
    arith.MaximumfOp: lambda op, a: np.maximum(a[0], a[1]),
    arith.MinimumfOp: lambda op, a: np.minimum(a[0], a[1]),
    arith.AddiOp: lambda op, a: a[0] + a[1],
    arith.SubiOp: lambda op, a: a[0] - a[1],
    arith.MuliOp: lambda op, a: a[0] * a[1],
    arith.DivSIOp: lambda op, a: _scalar(_trunc_div(a[0], a[1])),
    arith.RemSIOp: lambda op, a: a[0] - _scalar(_trunc_div(a[0], a[1])) * a[1],
    arith.MaxSIOp: lambda op, a: np.maximum(a[0], a[1]),
    arith.MinSIOp: lambda op, a: np.minimum(a[0], a[1]),
    arith.AndIOp: lambda op, a: a[0] & a[1],
    arith.OrIOp: lambda op, a: a[0] | a[1],
    arith.XOrIOp: lambda op, a: a[0] ^ a[1],
    arith.ShLIOp: _shift(np.left_shift, unsigned=True),
    arith.ShRSIOp: _shift(np.right_shift, unsigned=False),
    arith.ShRUIOp: _shift(np.right_shift, unsigned=True),
    arith.CmpfOp: lambda op, a: CMPF[op.predicate.value.data](a[0], a[1]),  # type: ignore[attr-defined]
    arith.CmpiOp: lambda op, a: CMPI[op.predicate.value.data](a[0], a[1]),  # type: ignore[attr-defined]
    arith.SelectOp: lambda op, a: _scalar(np.where(a[0], a[1], a[2])),
    arith.ExtFOp: lambda op, a: _convert_float(a[0], op.results[0].type),
    arith.TruncFOp: lambda op, a: _convert_float(a[0], op.results[0].type),
    arith.SIToFPOp: lambda op, a: _astype(a[0], op.results[0].type),
    arith.UIToFPOp: lambda op, a: _astype(a[0], op.results[0].type),
    arith.FPToSIOp: lambda op, a: _scalar(_fptosi(a[0], numpy_dtype(op.results[0].type))),
    arith.ExtSIOp: lambda op, a: _astype(a[0], op.results[0].type),
    arith.ExtUIOp: lambda op, a: _astype(a[0], op.results[0].type),
    arith.TruncIOp: lambda op, a: _astype(a[0], op.results[0].type),
    xmath.ExpOp: lambda op, a: np.exp(a[0]),
    xmath.Exp2Op: lambda op, a: np.exp2(a[0]),
    xmath.LogOp: lambda op, a: np.log(a[0]),
    xmath.SqrtOp: lambda op, a: np.sqrt(a[0]),
    xmath.RsqrtOp: lambda op, a: _rsqrt(a[0]),
    xmath.SinOp: lambda op, a: np.sin(a[0]),
    xmath.CosOp: lambda op, a: np.cos(a[0]),
    xmath.TanhOp: lambda op, a: np.tanh(a[0]),
    xmath.ErfOp: lambda op, a: scipy.special.erf(a[0]),
    xmath.PowFOp: lambda op, a: np.power(a[0], a[1]),
    xmath.AbsFOp: lambda op, a: np.abs(a[0]),
    xmath.AbsIOp: lambda op, a: np.abs(a[0]),
    xmath.AcosOp: lambda op, a: np.arccos(a[0]),
    xmath.AcoshOp: lambda op, a: np.arccosh(a[0]),
    xmath.AsinOp: lambda op, a: np.arcsin(a[0]),
    xmath.AsinhOp: lambda op, a: np.arcsinh(a[0]),
    xmath.AtanOp: lambda op, a: np.arctan(a[0]),
    xmath.AtanhOp: lambda op, a: np.arctanh(a[0]),
    xmath.Atan2Op: lambda op, a: np.arctan2(a[0], a[1]),
    xmath.CoshOp: lambda op, a: np.cosh(a[0]),
    xmath.SinhOp: lambda op, a: np.sinh(a[0]),
    xmath.TanOp: lambda op, a: np.tan(a[0]),
    xmath.ExpM1Op: lambda op, a: np.expm1(a[0]),
    xmath.Log10Op: lambda op, a: np.log10(a[0]),
    xmath.Log1pOp: lambda op, a: np.log1p(a[0]),
    xmath.Log2Op: lambda op, a: np.log2(a[0]),
    xmath.CeilOp: lambda op, a: np.ceil(a[0]),
    xmath.FloorOp: lambda op, a: np.floor(a[0]),
    xmath.TruncOp: lambda op, a: np.trunc(a[0]),
    xmath.RoundEvenOp: lambda op, a: np.rint(a[0]),
    xmath.CopySignOp: lambda op, a: np.copysign(a[0], a[1]),
    libm.ErfcOp: lambda op, a: scipy.special.erfc(a[0]),
    libm.ErfinvOp: lambda op, a: scipy.special.erfinv(a[0]),
    libm.ErfcinvOp: lambda op, a: np.where(a[0] == 1, 0, scipy.special.erfcinv(a[0])),
    libm.LgammaOp: lambda op, a: np.where(np.isneginf(a[0]), np.inf, scipy.special.gammaln(a[0])),
    libm.FmodOp: lambda op, a: np.fmod(a[0], a[1]),
    libm.NextafterOp: lambda op, a: np.nextafter(a[0], a[1]),
    libm.GcdOp: lambda op, a: _gcd(a[0], a[1]),
}
"""Each arith/math op the schedulers emit, on numpy scalars or arrays."""


def run_scalar_ops(ops: Sequence[Operation], env: dict[SSAValue, Any]) -> None:
    """Evaluates straight-line arith/math ops, binding their results in `env`."""
    with np.errstate(all="ignore"):
        for op in ops:
            env[op.results[0]] = SCALAR_OPS[type(op)](op, [env[o] for o in op.operands])


# --------------------------------------------------------------------------------------------
# A simulator of kernel.func launches
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class TensorArg:
    """A `Tensor<T, N>` parameter: a flat buffer with extents and strides in elements."""

    buffer: np.ndarray
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    @staticmethod
    def of(a: np.ndarray) -> TensorArg:
        """A view `a` whose data starts at the start of its (contiguous) base buffer."""
        base = a if a.base is None else a.base
        assert a.__array_interface__["data"][0] == base.__array_interface__["data"][0]
        strides = tuple(s // a.itemsize for s in a.strides)
        return TensorArg(base.reshape(-1), a.shape, strides)


class ThreadSim:
    """Runs a kernel's body for one thread at a time."""

    def __init__(self, func: kernel.FuncOp, args: Sequence[Any]) -> None:
        self.func = func
        self.params = dict(zip(func.args, args, strict=True))
        self.geometry: dict[tuple[type[Operation], str], int] = {}
        self.steps = 0

    def launch(self, launch: LaunchConfig) -> None:
        gx, gy, gz = launch.grid
        bx, by, bz = launch.block
        for block in np.ndindex(gz, gy, gx):
            for thread in np.ndindex(bz, by, bx):
                for op_type, index, dims in (
                    (kernel.BlockIdOp, block, None),
                    (kernel.ThreadIdOp, thread, None),
                    (kernel.GridDimOp, None, (gx, gy, gz)),
                    (kernel.BlockDimOp, None, (bx, by, bz)),
                ):
                    values = dims if dims is not None else tuple(reversed(index))
                    for name, v in zip("xyz", values, strict=True):
                        self.geometry[op_type, name] = v
                with np.errstate(all="ignore"):
                    self.run(self.func.body.block, dict(self.params))

    def run(self, block: Block, env: dict[SSAValue, Any]) -> None:
        for op in block.ops:
            self.steps += 1
            args = [env.get(o) for o in op.operands]
            if type(op) in SCALAR_OPS:
                env[op.results[0]] = SCALAR_OPS[type(op)](op, args)
            elif isinstance(op, scf.ForOp):
                t = numpy_dtype(op.lb.type).type
                for i in range(int(args[0]), int(args[1]), int(args[2])):
                    env[op.body.block.args[0]] = t(i)
                    self.run(op.body.block, env)
            elif isinstance(op, scf.IfOp):
                if args[0]:
                    self.run(op.true_region.block, env)
            elif isinstance(op, kernel.GeometryOp):
                v = self.geometry[type(op), op.dimension.data.value]
                env[op.result] = numpy_dtype(op.result.type).type(v)
            elif isinstance(op, kernel.SizeOp | kernel.StrideOp):
                tensor: TensorArg = args[0]
                values = tensor.sizes if isinstance(op, kernel.SizeOp) else tensor.strides
                env[op.result] = np.int64(values[op.axis.value.data])
            elif isinstance(op, kernel.AllocOp):
                t = op.result.type
                assert isinstance(t, kernel.ArrayType)
                env[op.result] = _sentinel(t.size.data, numpy_dtype(t.element_type))
            elif isinstance(op, kernel.LoadOp | kernel.ArrayLoadOp):
                memory, index = args
                buffer = memory.buffer if isinstance(memory, TensorArg) else memory
                env[op.result] = _access(buffer, int(index), op.result.type)
            elif isinstance(op, kernel.RandomOp):
                seed, offset, subsequence, component = (int(a) for a in args)
                # (negative outside a pad's operand: drawn there, never selected)
                index = (subsequence * op.per_block + component) % 2**64
                normal = op.distribution.data == kernel.Distribution.NORMAL
                dtype = numpy_dtype(op.result.type)
                element = philox.elements(np.array([index]), dtype, seed, offset, normal)
                env[op.result] = element[0]
            elif isinstance(op, kernel.BlockScanOp):
                # one thread a group (threads cooperate nowhere else in a simulated launch)
                assert self.geometry[kernel.BlockDimOp, "x"] == 1, "simulator: block_scan of 1"
                dtype = numpy_dtype(op.value.type)
                identity = fu.reduction_identity(op.kind.data.value, op.value.type)
                env[op.exclusive], env[op.total] = dtype.type(identity), args[0]
            elif isinstance(op, kernel.BlockTopkOp):
                # one thread a block: the thread's elements are the row (the GPU tests run the
                # cooperative selection and sort of fuser/sort.cuh)
                assert self.geometry[kernel.BlockDimOp, "x"] == 1, "simulator: block_topk of 1"
                values, n, k, out_values, out_indices = args
                row = values[: int(n)]
                descending, equal_zeros = op.descending is not None, op.equal_zeros is not None
                order = sort_order(row, 0, descending, equal_zeros)[: min(int(k), int(n))]
                out_values[: len(order)] = row[order]
                out_indices[: len(order)] = order
            elif isinstance(op, kernel.SelectLoadOp):
                condition, a, i, b, j = args
                memory, index = (a, i) if condition else (b, j)
                env[op.result] = _access(memory.buffer, int(index), op.result.type)
            elif isinstance(op, kernel.StoreOp | kernel.ArrayStoreOp):
                value, memory, index = args
                buffer = memory.buffer if isinstance(memory, TensorArg) else memory
                width = _width(op.value.type)
                _check_access(buffer, int(index), width)
                buffer[int(index) : int(index) + width] = value
            elif not isinstance(op, kernel.CommentOp | kernel.ReturnOp | scf.YieldOp):
                raise NotImplementedError(f"simulator: {op.name}")


def _width(t: Attribute) -> int:
    return t.get_shape()[0] if isinstance(t, VectorType) else 1


def _check_access(buffer: np.ndarray, index: int, width: int) -> None:
    assert index >= 0 and index + width <= buffer.size, f"[{index}, +{width}) of {buffer.size}"
    assert index % width == 0, f"vector of {width} at misaligned offset {index}"


def _access(buffer: np.ndarray, index: int, t: Attribute) -> Any:
    width = _width(t)
    _check_access(buffer, index, width)
    return buffer[index : index + width].copy() if width > 1 else buffer[index]


def _sentinel(n: int | tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Memory no one wrote: NaN, or an unlikely integer."""
    if dtype.kind == "f" or dtype == BF16:
        return np.full(n, np.nan, dtype)
    if dtype == np.bool_:
        return np.zeros(n, dtype)
    return np.full(n, np.iinfo(dtype).min + 7, dtype)


# --------------------------------------------------------------------------------------------
# Fusions and inputs
# --------------------------------------------------------------------------------------------


def parse_fusion(text: str) -> fu.FusionOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(fu.Fusion)
    ops = list(Parser(ctx, text).parse_module().ops)
    assert len(ops) == 1 and isinstance(ops[0], fu.FusionOp)
    return ops[0]


def random_values(rng: np.random.Generator, shape: Sequence[int], el: str) -> np.ndarray:
    """Random data of an element type, with the special values of its kind mixed in."""
    dtype = DTYPES[el]
    n = math.prod(shape)
    if el == "i1":
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        values = rng.integers(-1000, 1000, n).astype(dtype)
        specials = np.array([0, 1, -1, info.max, info.min, 7, -7], dtype)
    else:
        values = (rng.standard_normal(n) * 3).astype(np.float64)
        specials = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 1e30, -3e9])
        values = round_to_float(values, dtype)
        specials = round_to_float(specials, dtype)
    k = min(len(specials), n // 3)
    values[rng.choice(n, k, replace=False)] = specials[:k]
    return values.reshape(shape)


def info_of(
    fusion: fu.FusionOp, inputs: Sequence[Any], device: DeviceInfo | None = None
) -> FusionInfo:
    metas: list[TensorMeta | None] = []
    for arg, x in zip(fusion.inputs, inputs, strict=True):
        if isinstance(arg.type, TensorType):
            a = np.asarray(x)
            metas.append(TensorMeta(a.shape, tuple(s // a.itemsize for s in a.strides), 16))
        else:
            metas.append(None)
    return FusionInfo(tuple(metas), device or DeviceInfo())


ULPS = {"f16": 2.0**-10, "bf16": 2.0**-7, "f32": 2.0**-20, "f64": 1e-13}


def assert_matches(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind == "f" or got.dtype == BF16:
        el = {v: k for k, v in DTYPES.items()}[got.dtype]
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=ULPS[el],
            atol=0,
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(got, expected)


def run_kernel(
    text: str,
    inputs: Sequence[Any],
    device: DeviceInfo | None = None,
    **overrides: Any,
) -> PointwiseParams:
    """Schedules `text` for `inputs`, simulates the kernel and checks it against the reference.

    `overrides` replace fields of the heuristics' parameters before emission.
    """
    fusion = parse_fusion(text)
    fusion.verify()
    info = info_of(fusion, inputs, device)
    scheduler, params = propose(fusion, info)
    params = dataclasses.replace(params, **overrides)
    func = scheduler.emit(fusion, params, "k")
    func.verify()
    launch = scheduler.launch_config(fusion, params, info)
    expected = evaluate(fusion, inputs)
    outputs = [_sentinel(e.shape, e.dtype) for e in expected]
    args = [
        TensorArg.of(np.asarray(x)) if isinstance(a.type, TensorType) else x
        for a, x in zip(fusion.inputs, inputs, strict=True)
    ]
    threads = math.prod(launch.grid) * math.prod(launch.block)
    assert threads <= 20_000, f"test too large to simulate: {launch}"
    ThreadSim(func, [*args, *(TensorArg.of(o) for o in outputs)]).launch(launch)
    for got, want in zip(outputs, expected, strict=True):
        assert_matches(got, want)
    assert isinstance(params, PointwiseParams)
    return params


def simulate_exactly(
    text: str, inputs: Sequence[np.ndarray], scheduler_type: type[Scheduler], **overrides: Any
) -> Params:
    """Schedules `text` for `inputs` (a scheduler of `scheduler_type` must take it, with
    `overrides` of its parameters), runs the kernel on the simulator and checks each output
    equals the reference's exactly (inputs whose arithmetic rounds nowhere); the parameters."""
    fusion = parse_fusion(text)
    fusion.verify()
    info = info_of(fusion, inputs)
    scheduler, params = propose(fusion, info)
    assert isinstance(scheduler, scheduler_type), scheduler.name
    params = dataclasses.replace(params, **overrides)
    func = scheduler.emit(fusion, params, "k")
    func.verify()
    launch = scheduler.launch_config(fusion, params, info)
    expected = evaluate(fusion, list(inputs))
    outputs = [_sentinel(e.shape, e.dtype) for e in expected]
    args = [TensorArg.of(x) for x in inputs]
    assert math.prod(launch.grid) * math.prod(launch.block) <= 20_000, launch
    ThreadSim(func, [*args, *(TensorArg.of(o) for o in outputs)]).launch(launch)
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    return params


def dyn(rank: int, el: str) -> str:
    return "tensor<" + "?x" * rank + el + ">"


# --------------------------------------------------------------------------------------------
# The scalar lowering, op by op, against the reference
# --------------------------------------------------------------------------------------------

BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]


def check_lowering(rng: np.random.Generator, text: str, n: int = 301) -> None:
    """Lowers the one op of fusion `text` on scalar arguments, evaluates the arith/math it
    emits on every element at once, and compares with the reference on the same inputs."""
    _, got, expected = lower_and_evaluate(rng, text, n)
    assert_matches(got, expected)


def lower_and_evaluate(
    rng: np.random.Generator, text: str, n: int = 301
) -> tuple[list[Any], np.ndarray, np.ndarray]:
    """The inputs, the lowering's values and the reference's values of the one op of fusion
    `text` on `n` random elements (special values included)."""
    fusion = parse_fusion(text)
    fusion.verify()
    ops = [op for op in fusion.body.block.ops if not isinstance(op, fu.OutputOp)]
    (op,) = ops
    assert is_pointwise(op)
    element_args = [o for o in op.operands if not isinstance(o.type, fu.IndexType)]
    block = Block(arg_types=[fu.element_type(a.type) for a in element_args])
    with ImplicitBuilder(block):
        result = lower_pointwise(op, block.args)
    assert result.type == fu.element_type(op.results[0].type)
    inputs = []
    for a in fusion.inputs:
        values = random_values(rng, (n,), str(fu.element_type(a.type)))
        inputs.append(values if isinstance(a.type, TensorType) else values[n // 2])
    if isinstance(op, fu.DivOp) and inputs[0].dtype.kind == "i":
        inputs[1][inputs[1] == 0] = 3  # division by zero is undefined on the GPU
    env: dict[SSAValue, Any] = dict(zip(block.args, inputs, strict=True))
    run_scalar_ops(list(block.ops), env)
    got = np.broadcast_to(np.asarray(env[result]), (n,))
    (expected,) = evaluate(fusion, inputs)
    return inputs, np.asarray(got), expected


@pytest.mark.parametrize(
    ("name", "el"),
    [(n, el) for n in UNARY for el in ("f32", "f64")]
    + [(n, el) for n in NUMERIC_UNARY for el in ("i32", "i64")],
)
def test_unary_lowering(rng: np.random.Generator, name: str, el: str) -> None:
    t = dyn(1, el)
    check_lowering(
        rng,
        f"""fusion.fusion @f(%x: {t}) -> ({t}) {{
      %y = fusion.{name} %x : {t}
      fusion.output %y : {t} }}""",
    )


@pytest.mark.parametrize("el", ["f32", "f64"])
@pytest.mark.parametrize("approximation", ["none", "tanh"])
def test_gelu_lowering(rng: np.random.Generator, approximation: str, el: str) -> None:
    t = dyn(1, el)
    text = f"""fusion.fusion @f(%x: {t}) -> ({t}) {{
      %y = fusion.gelu %x {approximation} : {t}
      fusion.output %y : {t} }}"""
    # both forms as the reference (and torch's CUDA kernels) compute them
    check_lowering(rng, text)


@pytest.mark.parametrize(
    "name, el",
    [
        (name, el)
        for el in ("f32", "f64", "i32", "i64")
        for name in BINARY + COMPARISONS
        if el[0] == "f" or name != "pow"  # pow is defined on floats only
    ],
)
def test_binary_lowering(rng: np.random.Generator, name: str, el: str) -> None:
    t = dyn(1, el)
    r = dyn(1, "i1") if name in COMPARISONS else t
    sig = f"({t}, {t}) -> {r}" if name in COMPARISONS else t
    check_lowering(
        rng,
        f"""fusion.fusion @f(%x: {t}, %y: {t}) -> ({r}) {{
      %z = fusion.{name} %x, %y : {sig}
      fusion.output %z : {r} }}""",
    )


@pytest.mark.parametrize("name", COMPARISONS)
def test_boolean_comparison_lowering(rng: np.random.Generator, name: str) -> None:
    t = dyn(1, "i1")
    check_lowering(
        rng,
        f"""fusion.fusion @f(%x: {t}, %y: {t}) -> ({t}) {{
      %z = fusion.{name} %x, %y : {t}
      fusion.output %z : {t} }}""",
    )


def test_scalar_operand_lowering(rng: np.random.Generator) -> None:
    t = dyn(1, "f32")
    check_lowering(
        rng,
        f"""fusion.fusion @f(%x: {t}, %a: f32) -> ({t}) {{
      %z = fusion.sub %x, %a : ({t}, f32) -> {t}
      fusion.output %z : {t} }}""",
    )


@pytest.mark.parametrize("el", ["f16", "bf16", "f32", "i64", "i1"])
def test_where_lowering(rng: np.random.Generator, el: str) -> None:
    c, t = dyn(1, "i1"), dyn(1, el)
    check_lowering(
        rng,
        f"""fusion.fusion @f(%c: {c}, %x: {t}, %y: {t}) -> ({t}) {{
      %z = fusion.where %c, %x, %y : ({c}, {t}, {t}) -> {t}
      fusion.output %z : {t} }}""",
    )


@pytest.mark.parametrize("dst", list(DTYPES))
@pytest.mark.parametrize("src", list(DTYPES))
def test_cast_lowering(rng: np.random.Generator, src: str, dst: str) -> None:
    s, d = dyn(1, src), dyn(1, dst)
    check_lowering(
        rng,
        f"""fusion.fusion @f(%x: {s}) -> ({d}) {{
      %y = fusion.cast %x : {s} -> {d}
      fusion.output %y : {d} }}""",
    )


def test_cast_rounds_once_from_integers() -> None:
    """int -> bf16 goes through f64: 2**24 + 2**16 + 1 rounds up once (through f32 it would
    round to 2**24 + 2**16, then tie to even 2**24)."""
    fusion = parse_fusion(f"""fusion.fusion @f(%x: {dyn(1, "i64")}) -> ({dyn(1, "bf16")}) {{
      %y = fusion.cast %x : {dyn(1, "i64")} -> {dyn(1, "bf16")}
      fusion.output %y : {dyn(1, "bf16")} }}""")
    x = np.array([2**24 + 2**16 + 1, -(2**24 + 2**16 + 1)], np.int64)
    (op,) = [o for o in fusion.body.block.ops if isinstance(o, fu.CastOp)]
    block = Block(arg_types=[fu.I64])
    with ImplicitBuilder(block):
        result = lower_pointwise(op, block.args)
    env: dict[SSAValue, Any] = {block.args[0]: x}
    run_scalar_ops(list(block.ops), env)
    assert [o.name for o in block.ops] == ["arith.sitofp", "arith.truncf"]
    np.testing.assert_array_equal(env[result].astype(np.float64), [2**24 + 2**17, -(2**24 + 2**17)])


@pytest.mark.parametrize(
    "value, el", [(2.5, "f32"), (-1.25, "f64"), (0.1, "bf16"), (-7, "i32"), (True, "i1")]
)
def test_constant_lowering(value: float, el: str) -> None:
    t = fu.ConstantOp.of(
        value, {"f32": fu.F32, "f64": fu.F64, "bf16": fu.BF16, "i32": fu.I32, "i1": fu.I1}[el]
    )
    block = Block()
    with ImplicitBuilder(block):
        result = lower_pointwise(t, [])
    env: dict[SSAValue, Any] = {}
    run_scalar_ops(list(block.ops), env)
    assert (
        env[result] == round_to_float(np.float64(value), DTYPES[el])[()]
        if el[0] in "fb"
        else env[result] == DTYPES[el].type(value)
    )


def test_data_movement_is_identity() -> None:
    fusion = parse_fusion(f"""fusion.fusion @f(%x: {dyn(1, "f32")}, %a: f32) -> ({dyn(2, "f32")}) {{
      %s = fusion.set %x : {dyn(1, "f32")}
      %n = fusion.dim %x[0] : {dyn(1, "f32")}
      %b = fusion.broadcast_in_dim %s [1] sizes(%n) : {dyn(1, "f32")} -> {dyn(2, "f32")}
      fusion.output %b : {dyn(2, "f32")} }}""")
    block = Block(arg_types=[fu.F32])
    for op in fusion.body.block.ops:
        if isinstance(op, fu.SetOp | fu.BroadcastInDimOp):
            with ImplicitBuilder(block):
                assert lower_pointwise(op, [block.args[0]]) is block.args[0]
    assert not block.ops


def test_non_pointwise_ops_are_not_lowered() -> None:
    fusion = parse_fusion(f"""fusion.fusion @f(%x: {dyn(2, "f32")}) -> ({dyn(1, "f32")}) {{
      %s = fusion.sum %x [1] : {dyn(2, "f32")} -> {dyn(1, "f32")}
      fusion.output %s : {dyn(1, "f32")} }}""")
    (op, _) = list(fusion.body.block.ops)
    assert not is_pointwise(op)
    with pytest.raises(ValueError, match="not a pointwise op"):
        lower_pointwise(op, [])


# --------------------------------------------------------------------------------------------
# Pointwise kernels, simulated
# --------------------------------------------------------------------------------------------

GELU_BIAS = """
fusion.fusion @gelu_bias(%x: tensor<?x?xf32>, %bias: tensor<?xf32>) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %b = fusion.broadcast_in_dim %bias [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %t = fusion.add %x, %b : tensor<?x?xf32>
  %y = fusion.gelu %t none : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}"""


def cast_chain(src: str, mid: str, dst: str) -> str:
    s, m, d = dyn(2, src), dyn(2, mid), dyn(2, dst)
    return f"""fusion.fusion @chain(%x: {s}) -> ({d}, {m}) {{
      %a = fusion.cast %x : {s} -> {m}
      %y = fusion.cast %a : {m} -> {d}
      fusion.output %y, %a : {d}, {m}
    }}"""


@pytest.mark.parametrize("shape", [(1, 1), (3, 127), (3, 201), (2, 64), (1, 3)])
def test_gelu_bias(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    x = random_values(rng, shape, "f32")
    bias = random_values(rng, shape[1:], "f32")
    params = run_kernel(GELU_BIAS, [x, bias])
    assert params.vector_width == (4 if shape[1] % 4 == 0 else 1)
    assert params.dense_reads == (True, False)


@pytest.mark.parametrize("sm_count, grid_2d", [(1, True), (1, False)])
def test_unrolled_and_2d_grids(rng: np.random.Generator, sm_count: int, grid_2d: bool) -> None:
    """Few SMs make the heuristics unroll (2 vectors of 4 per thread: 16 elements loaded from
    the two reads at most); long rows take a 2-D grid."""
    shape = (2, 2048) if grid_2d else (4, 520)
    x = random_values(rng, shape, "f32")
    bias = random_values(rng, shape[1:], "f32")
    params = run_kernel(GELU_BIAS, [x, bias], DeviceInfo(sm_count=sm_count))
    assert params.unroll == 2 and params.grid_2d == grid_2d and params.vector_width == 4


@pytest.mark.parametrize("unroll, width", [(2, 1), (4, 2), (1, 4)])
def test_forced_parameters_with_tails(rng: np.random.Generator, unroll: int, width: int) -> None:
    """The template is correct for any unroll and width the shapes allow, in i64 as in i32."""
    x = random_values(rng, (7, 36), "f32")
    bias = random_values(rng, (36,), "f32")
    for bits in (32, 64):
        run_kernel(GELU_BIAS, [x, bias], unroll=unroll, vector_width=width, index_bits=bits)


@pytest.mark.parametrize(
    "src, mid, dst",
    [
        ("f32", "bf16", "f32"),
        ("bf16", "f32", "f16"),
        ("f64", "f32", "i32"),
        ("i32", "f64", "bf16"),
        ("f16", "f32", "i1"),
    ],
)
def test_cast_chains(rng: np.random.Generator, src: str, mid: str, dst: str) -> None:
    x = random_values(rng, (3, 40), src)
    params = run_kernel(cast_chain(src, mid, dst), [x])
    widest = max(DTYPES[e].itemsize for e in (src, mid, dst) if e in (src, dst, mid))
    assert params.vector_width == min(8, 16 // widest)


def test_broadcast_on_every_axis(rng: np.random.Generator) -> None:
    t = dyn(3, "f64")
    text = f"""fusion.fusion @f(%s: tensor<f64>, %x: {t}, %a: f64) -> ({t}) {{
      %d0 = fusion.dim %x[0] : {t}
      %d1 = fusion.dim %x[1] : {t}
      %d2 = fusion.dim %x[2] : {t}
      %b = fusion.broadcast_in_dim %s [] sizes(%d0, %d1, %d2) : tensor<f64> -> {t}
      %c = fusion.broadcast_in_dim %a [] sizes(%d0, %d1, %d2) : f64 -> {t}
      %m = fusion.mul %x, %b : {t}
      %y = fusion.sub %m, %c : {t}
      fusion.output %y : {t}
    }}"""
    s = random_values(rng, (), "f64")
    x = random_values(rng, (2, 3, 6), "f64")
    params = run_kernel(text, [s, x, np.float64(rng.standard_normal())])
    assert params.vector_width == 2


def test_outputs_of_different_shapes(rng: np.random.Generator) -> None:
    """`%e` spans the innermost dim only: the points of row 0 write it."""
    text = f"""fusion.fusion @f(%x: {dyn(1, "f32")}, %w: {dyn(2, "f32")})
        -> ({dyn(1, "f32")}, {dyn(2, "f32")}, tensor<?x1xf32>) {{
      %e = fusion.exp %x : {dyn(1, "f32")}
      %m = fusion.dim %w[0] : {dyn(2, "f32")}
      %b = fusion.broadcast_in_dim %e [1] sizes(%m) : {dyn(1, "f32")} -> {dyn(2, "f32")}
      %y = fusion.add %w, %b : {dyn(2, "f32")}
      %z = fusion.dim %x[0] : {dyn(1, "f32")}
      %c = fusion.constant 2.0 : f32
      %col = fusion.broadcast_in_dim %c [] sizes(%m) : f32 -> tensor<?x1xf32>
      fusion.output %e, %y, %col : {dyn(1, "f32")}, {dyn(2, "f32")}, tensor<?x1xf32>
    }}"""
    for shape in [(3, 8), (5, 3)]:
        params = run_kernel(
            text, [random_values(rng, shape[1:], "f32"), random_values(rng, shape, "f32")]
        )
        assert params.reference == 1 and params.dense_outputs == (False, True, False)


def test_one_input_read_two_ways(rng: np.random.Generator) -> None:
    """`%x` is read along rows and along columns: two accesses, each with its own map."""
    t = dyn(2, "i32")
    text = f"""fusion.fusion @f(%x: {dyn(1, "i32")}) -> ({t}) {{
      %n = fusion.dim %x[0] : {dyn(1, "i32")}
      %r = fusion.broadcast_in_dim %x [0] sizes(%n) : {dyn(1, "i32")} -> {t}
      %c = fusion.broadcast_in_dim %x [1] sizes(%n) : {dyn(1, "i32")} -> {t}
      %y = fusion.sub %r, %c : {t}
      fusion.output %y : {t}
    }}"""
    params = run_kernel(text, [random_values(rng, (12,), "i32")])
    assert params.vector_width == 4


CAT_HALVES = """
fusion.fusion @rotate(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> (tensor<?x16xf32>) {
  %n = fusion.neg %b : tensor<?x8xf32>
  %c = fusion.cat %n, %a dim 1 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  fusion.output %c : tensor<?x16xf32>
}
"""

CAT_BESIDE_PAD = """
fusion.fusion @cat_pad(%a: tensor<?x8xf32>, %b: tensor<?x4xf32>, %v: f32) -> (tensor<?x20xf32>) {
  %p = fusion.pad %b low [0, 4] high [0, 4] value %v : tensor<?x4xf32> -> tensor<?x12xf32>
  %c = fusion.cat %a, %p dim 1 : tensor<?x8xf32>, tensor<?x12xf32> -> tensor<?x20xf32>
  fusion.output %c : tensor<?x20xf32>
}
"""


@pytest.mark.parametrize(("unroll", "width"), [(1, 4), (2, 4), (4, 2), (1, 1)])
@pytest.mark.parametrize("text", [CAT_HALVES, CAT_BESIDE_PAD], ids=["halves", "beside_pad"])
def test_a_cats_operands_load_together(
    rng: np.random.Generator, text: str, unroll: int, width: int
) -> None:
    """A cat's operands at disjoint intervals of the row share one array, loaded once at the
    selected place (`kernel.select_load`): unpredicated where they cover the row, under either
    predicate beside a pad's fill; every element against the reference, in bounds."""
    rows = 5
    a = random_values(rng, (rows, 8), "f32")
    second = random_values(rng, (rows, 8 if text is CAT_HALVES else 4), "f32")
    inputs = [a, second] if text is CAT_HALVES else [a, second, np.float32(1.5)]
    run_kernel(text, inputs, unroll=unroll, vector_width=width)
    fusion = parse_fusion(text)
    info = info_of(fusion, inputs, None)
    scheduler, params = propose(fusion, info)
    func = scheduler.emit(fusion, dataclasses.replace(params, vector_width=width), "k")
    ops = list(func.walk())
    assert sum(isinstance(op, kernel.SelectLoadOp) for op in ops) == 1
    assert any(isinstance(op, arith.OrIOp) for op in ops) == (text is CAT_BESIDE_PAD)


def test_strided_and_runtime_broadcast_inputs(rng: np.random.Generator) -> None:
    """A transposed input (strides (1, 5)) forces scalar accesses; a `?` dim of extent 1 at
    run time, broadcast to 5, is read with stride 0."""
    text = """fusion.fusion @f(%x: tensor<5x?xf32>, %y: tensor<?x?xf32>) -> (tensor<5x?xf32>) {
      %b = fusion.broadcast_in_dim %y [0, 1] : tensor<?x?xf32> -> tensor<5x?xf32>
      %z = fusion.mul %x, %b : tensor<5x?xf32>
      fusion.output %z : tensor<5x?xf32>
    }"""
    x = np.ascontiguousarray(random_values(rng, (8, 5), "f32")).T
    assert x.strides == (4, 20)
    params = run_kernel(text, [x, random_values(rng, (1, 8), "f32")])
    assert params.vector_width == 1 and params.dense_reads == (False, False)
    contiguous = run_kernel(text, [x.copy(), random_values(rng, (1, 8), "f32")])
    assert contiguous.vector_width == 4 and contiguous.dense_reads == (True, False)
    same = run_kernel(text, [x.copy(), random_values(rng, (5, 8), "f32")])
    assert same.vector_width == 4 and same.dense_reads == (True, True)
    # broadcast at run time along the innermost dim: no vectors
    static = text.replace("tensor<5x?xf32>", "tensor<5x8xf32>")
    for y_shape in [(5, 1), (1, 1)]:
        inner = run_kernel(static, [x.copy(), random_values(rng, y_shape, "f32")])
        assert inner.vector_width == 1


def test_rank_zero_and_empty(rng: np.random.Generator) -> None:
    text = """fusion.fusion @f(%x: tensor<f32>) -> (tensor<f32>) {
      %y = fusion.sigmoid %x : tensor<f32>
      fusion.output %y : tensor<f32>
    }"""
    run_kernel(text, [np.array(rng.standard_normal(), np.float32)])
    x, bias = random_values(rng, (0, 8), "f32"), random_values(rng, (8,), "f32")
    run_kernel(GELU_BIAS, [x, bias])


# --------------------------------------------------------------------------------------------
# Heuristics and rejections
# --------------------------------------------------------------------------------------------


def params_for(text: str, metas: Sequence[TensorMeta | None], **device: Any) -> PointwiseParams:
    fusion = parse_fusion(text)
    params = PointwiseScheduler().heuristics(fusion, FusionInfo(tuple(metas), DeviceInfo(**device)))
    assert isinstance(params, PointwiseParams)
    return params


def test_vector_width_rules() -> None:
    c = TensorMeta.contiguous
    assert params_for(GELU_BIAS, [c((8, 1024)), c((1024,))]).vector_width == 4
    assert params_for(GELU_BIAS, [c((8, 1001)), c((1001,))]).vector_width == 1
    assert params_for(GELU_BIAS, [c((8, 1022)), c((1022,))]).vector_width == 2
    # an 8-byte aligned pointer allows 2 floats; a 4-byte aligned one none
    assert params_for(GELU_BIAS, [c((8, 1024), 8), c((1024,))]).vector_width == 2
    assert params_for(GELU_BIAS, [c((8, 1024)), c((1024,), 4)]).vector_width == 1
    # a row stride that is not a multiple of the width misaligns rows
    assert params_for(GELU_BIAS, [TensorMeta((8, 1024), (1026, 1)), c((1024,))]).vector_width == 2
    # a non-unit innermost stride: scalar accesses everywhere
    assert params_for(GELU_BIAS, [TensorMeta((8, 1024), (1, 8)), c((1024,))]).vector_width == 1
    # widest element decides: bf16 in, f32 inside, f16 out
    assert params_for(cast_chain("bf16", "f32", "f16"), [c((4, 64))]).vector_width == 4
    assert params_for(cast_chain("bf16", "bf16", "f16"), [c((4, 64))]).vector_width == 8


def test_broadcast_innermost_input_keeps_vectors() -> None:
    t = dyn(2, "f32")
    text = f"""fusion.fusion @f(%x: {t}, %col: {dyn(1, "f32")}) -> ({t}) {{
      %n = fusion.dim %x[1] : {t}
      %b = fusion.broadcast_in_dim %col [0] sizes(%n) : {dyn(1, "f32")} -> {t}
      %y = fusion.div %x, %b : {t}
      fusion.output %y : {t}
    }}"""
    c = TensorMeta.contiguous
    assert params_for(text, [c((16, 64)), c((16,), 4)]).vector_width == 4


def test_launch_fills_the_device() -> None:
    c = TensorMeta.contiguous
    fusion = parse_fusion(GELU_BIAS)
    scheduler = PointwiseScheduler()
    for shape, sms in [((16384, 4096), 132), ((1000, 1000), 132), ((3, 5), 132), ((64, 64), 8)]:
        info = FusionInfo((c(shape), c(shape[1:])), DeviceInfo(sm_count=sms))
        params = scheduler.heuristics(fusion, info)
        launch = scheduler.launch_config(fusion, params, info)
        elements = math.prod(launch.grid) * params.threads * params.unroll * params.vector_width
        rows = shape[0] if params.grid_2d else 1
        assert (
            elements
            >= math.prod(shape)
            >= (elements - params.threads * params.unroll * params.vector_width * rows) * 0.5
        )
        assert 128 <= params.threads <= 512 and launch.block == params.block
        if math.prod(shape) >= 4 * 128 * sms * params.vector_width:
            assert math.prod(launch.grid) >= 2 * sms  # enough blocks for every SM
    big = scheduler.heuristics(fusion, FusionInfo((c((16384, 4096)), c((4096,)))))
    assert big.grid_2d and big.unroll == 2 and big.vector_width == 4 and big.index_bits == 32


def test_64_bit_indexing_only_when_needed() -> None:
    c = TensorMeta.contiguous
    assert params_for(GELU_BIAS, [c((46341, 46341)), c((46341,))]).index_bits == 64
    assert params_for(GELU_BIAS, [c((46000, 46000)), c((46000,))]).index_bits == 32
    # a small space read from a huge strided buffer
    huge = TensorMeta((4, 8), (2**30, 1))
    assert params_for(GELU_BIAS, [huge, c((8,))]).index_bits == 64


@pytest.mark.parametrize(
    "body, reason",
    [
        (
            "%s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>",
            "'fusion.sum' (%s) is a reduction",
        ),
        (
            "%v, %s = fusion.var_mean %x [1] correction(1) : tensor<?x?xf32> -> tensor<?xf32>, "
            "tensor<?xf32>",
            "'fusion.var_mean' (%v, %s) is a reduction",
        ),
        (
            "%a, %s, %n = fusion.welford %x [1] : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>, "
            "tensor<?xi64>",
            "'fusion.welford' (%a, %s, %n) is a reduction",
        ),
    ],
)
def test_reductions_are_rejected(body: str, reason: str) -> None:
    fusion = parse_fusion(f"""fusion.fusion @r(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {{
      {body}
      fusion.output %s : tensor<?xf32> }}""")
    info = FusionInfo((TensorMeta.contiguous((4, 4)),))
    verdict = PointwiseScheduler().accepts(fusion, info)
    assert not verdict and verdict.reason == reason
    scheduler, _ = propose(fusion, info)
    assert scheduler.name == "reduction"


def test_segment_set_and_matmul_are_rejected() -> None:
    t = "tensor<4x4xf32>"
    for body, reason in [
        (f"%s = fusion.segment_set %x : {t}", "marks a kernel boundary"),
        (f"%s = fusion.matmul %x, %x : {t}, {t} -> {t}", "'fusion.matmul' (%s) is a matmul"),
    ]:
        fusion = parse_fusion(f"""fusion.fusion @r(%x: {t}) -> ({t}) {{
          {body}
          fusion.output %s : {t} }}""")
        verdict = PointwiseScheduler().accepts(fusion, FusionInfo((TensorMeta.contiguous((4, 4)),)))
        assert not verdict and reason in verdict.reason


def test_unrelated_outputs_are_rejected() -> None:
    text = """fusion.fusion @f(%x: tensor<?xf32>, %y: tensor<?xf32>, %w: tensor<?x?xf32>)
        -> (tensor<?xf32>, tensor<?x?xf32>) {
      %a = fusion.exp %x : tensor<?xf32>
      %b = fusion.exp %w : tensor<?x?xf32>
      fusion.output %a, %b : tensor<?xf32>, tensor<?x?xf32>
    }"""
    c = TensorMeta.contiguous
    verdict = PointwiseScheduler().accepts(
        parse_fusion(text), FusionInfo((c((5,)), c((5,)), c((3, 5))))
    )
    assert not verdict and "output #0 ([?]) cannot be indexed" in verdict.reason


def test_outputs_that_do_not_fit_the_space_are_rejected() -> None:
    text = """fusion.fusion @f(%x: tensor<?xf32>, %y: tensor<?xf32>)
        -> (tensor<?xf32>, tensor<?xf32>) {
      %a = fusion.exp %x : tensor<?xf32>
      %b = fusion.exp %y : tensor<?xf32>
      fusion.output %a, %b : tensor<?xf32>, tensor<?xf32>
    }"""
    c = TensorMeta.contiguous
    fusion = parse_fusion(text)
    assert PointwiseScheduler().accepts(fusion, FusionInfo((c((5,)), c((5,)))))
    verdict = PointwiseScheduler().accepts(fusion, FusionInfo((c((5,)), c((3,)))))
    assert not verdict and "input #1 has extent 3 in dim 0" in verdict.reason


def test_iteration_space_maps() -> None:
    fusion = parse_fusion(GELU_BIAS)
    space = iteration_space(fusion, 0)
    assert space.output_maps == ((0, 1),)
    assert space.reads(fusion) == [(0, (0, 1)), (1, (1,))]


def test_registry() -> None:
    assert [s.name for s in SCHEDULERS] == [
        "transpose",
        "pointwise",
        "reduction",
        "persistent",
        "inner_outer",
        "looped",
        "scan",
        "sort",
        "matmul",
    ]
    assert get_scheduler("pointwise") is SCHEDULERS[1]
    with pytest.raises(KeyError):
        get_scheduler("wgmma")


def test_schedule_fusion_api() -> None:
    fusion = parse_fusion(GELU_BIAS)
    c = TensorMeta.contiguous
    scheduled = schedule_fusion(fusion, FusionInfo((c((3, 8)), c((8,)))))
    assert scheduled.func.sym_name.data == "gelu_bias_pointwise"
    assert scheduled.func.attributes["fuser.scheduler"].data == "pointwise"  # type: ignore[attr-defined]
    assert scheduled.func.attributes["fuser.params"].data == repr(scheduled.params)  # type: ignore[attr-defined]
    assert scheduled.launch == LaunchConfig((1, 1, 1), (128, 1, 1))
    assert scheduled.func.max_threads is not None and scheduled.func.max_threads.value.data == 128
    named = schedule_fusion(fusion, FusionInfo((c((3, 8)), c((8,)))), "my_kernel")
    assert named.func.sym_name.data == "my_kernel"


# --------------------------------------------------------------------------------------------
# Every scheduled kernel prints as CUDA and compiles with NVRTC
# --------------------------------------------------------------------------------------------

FLOAT_UNARY = [n for n in UNARY if n not in NUMERIC_UNARY]


def everything_fusion(el: str) -> str:
    """A fusion of `el` inputs (a broadcast bias, a scalar) that uses every pointwise op its
    compute type allows and casts the result to every element type."""
    c = "f32" if el in ("f16", "bf16") else el
    t, tc = dyn(2, el), dyn(2, c)
    lines = [
        f"%n = fusion.dim %x[0] : {t}",
        f"%bb = fusion.broadcast_in_dim %bias [1] sizes(%n) : {dyn(1, el)} -> {t}",
        f"%xc = fusion.cast %x : {t} -> {tc}",
        f"%bc = fusion.cast %bb : {t} -> {tc}",
        f"%t = fusion.add %xc, %bc : {tc}",
        f"%ta = fusion.mul %t, %a : ({tc}, {c}) -> {tc}",
    ]
    acc = "%ta"
    floats = c in ("f32", "f64")
    for i, name in enumerate((FLOAT_UNARY if floats else []) + NUMERIC_UNARY):
        lines.append(f"%u{i} = fusion.{name} {acc} : {tc}")
        lines.append(f"%v{i} = fusion.add {acc}, %u{i} : {tc}")
        acc = f"%v{i}"
    if floats:
        lines.append(f"%g0 = fusion.gelu {acc} none : {tc}")
        lines.append(f"%g1 = fusion.gelu %g0 tanh : {tc}")
        acc = "%g1"
    for i, name in enumerate(b for b in BINARY if floats or b != "pow"):
        lines.append(f"%b{i} = fusion.{name} {acc}, %t : {tc}")
        acc = f"%b{i}"
    mask = dyn(2, "i1")
    for i, name in enumerate(COMPARISONS):
        lines.append(f"%c{i} = fusion.{name} {acc}, %t : ({tc}, {tc}) -> {mask}")
        lines.append(f"%w{i} = fusion.where %c{i}, {acc}, %t : ({mask}, {tc}, {tc}) -> {tc}")
        acc = f"%w{i}"
    outputs = []
    for e in DTYPES:
        lines.append(f"%o_{e} = fusion.cast {acc} : {tc} -> {dyn(2, e)}")
        outputs.append((f"%o_{e}", dyn(2, e)))
    body = "\n  ".join(lines)
    results = ", ".join(ty for _, ty in outputs)
    return f"""fusion.fusion @all_{el}(%x: {t}, %bias: {dyn(1, el)}, %a: {c}) -> ({results}) {{
  {body}
  fusion.output {", ".join(v for v, _ in outputs)} : {results}
}}"""


def narrow_fusion(el: str) -> str:
    """Only `el` in memory: the widest vectors (8 for f16/bf16)."""
    c = "f32" if el in ("f16", "bf16") else el
    t, tc = dyn(2, el), dyn(2, c)
    return f"""fusion.fusion @narrow_{el}(%x: {t}) -> ({t}) {{
      %xc = fusion.cast %x : {t} -> {tc}
      %r = fusion.relu %xc : {tc}
      %y = fusion.cast %r : {tc} -> {t}
      fusion.output %y : {t}
    }}"""


@pytest.mark.parametrize("el", ["f32", "f16", "bf16", "f64", "i32"])
def test_kernels_compile_with_nvrtc(el: str) -> None:
    from xdsl.dialects.builtin import ModuleOp

    from fuser.codegen.cuda import emit_cuda
    from fuser.runtime.compiled_kernel import nvrtc_compile

    c = TensorMeta.contiguous
    kernels: list[kernel.FuncOp] = []
    expected_widths = set()
    for text in (everything_fusion(el), narrow_fusion(el), GELU_BIAS):
        fusion = parse_fusion(text)
        fusion.verify()
        ranks = [
            a.type.get_num_dims() if isinstance(a.type, TensorType) else None for a in fusion.inputs
        ]
        for shape in [(64, 1024), (3, 1001), (70000, 8)]:
            metas = [None if r is None else c(shape[2 - r :]) for r in ranks]
            info = FusionInfo(tuple(metas))
            name = f"{fusion.sym_name.data}_{shape[1]}"
            scheduled = schedule_fusion(fusion, info, name)
            kernels.append(scheduled.func)
            expected_widths.add(cast_params(scheduled.params).vector_width)
        params = dataclasses.replace(cast_params(scheduled.params), index_bits=64, unroll=2)
        kernels.append(PointwiseScheduler().emit(fusion, params, f"{fusion.sym_name.data}_64"))
    assert 1 in expected_widths and len(expected_widths) >= 2
    module = ModuleOp(kernels)
    module.verify()
    source = emit_cuda(module)
    for func in kernels:
        threads = func.max_threads.value.data  # type: ignore[union-attr]
        assert re.search(rf"__launch_bounds__\({threads}\)\s+{func.sym_name.data}\(", source)
    nvrtc_compile(source, kernels[0].sym_name.data, "sm_90")


def cast_params(params: Any) -> PointwiseParams:
    assert isinstance(params, PointwiseParams)
    return params


def test_pass_through_and_constant_outputs(rng: np.random.Generator) -> None:
    """An input returned as is, twice, and an output made of a constant alone."""
    text = """fusion.fusion @f(%x: tensor<?x?xi64>)
        -> (tensor<?x?xi64>, tensor<?x?xi64>, tensor<2x3xf32>) {
      %c = fusion.constant 1.5 : f32
      %k = fusion.broadcast_in_dim %c [] : f32 -> tensor<2x3xf32>
      fusion.output %x, %x, %k : tensor<?x?xi64>, tensor<?x?xi64>, tensor<2x3xf32>
    }"""
    params = run_kernel(text, [random_values(rng, (2, 3), "i64")])
    assert params.vector_width == 1  # 3 is odd


def test_extent_one_strides_do_not_matter() -> None:
    """numpy gives extent-1 dims arbitrary strides: still dense, still vectorized."""
    odd = TensorMeta((1, 64), (7, 1))
    params = params_for(GELU_BIAS, [odd, TensorMeta.contiguous((64,))])
    assert params.dense_reads == (True, False) and params.vector_width == 4


def test_info_that_does_not_describe_the_fusion_is_rejected() -> None:
    fusion = parse_fusion(GELU_BIAS)
    c = TensorMeta.contiguous
    for metas, reason in [
        ((c((3, 4)),), "1 input(s) described for 2 fusion inputs"),
        ((c((3, 4)), None), "input #1 of type tensor<?xf32> is described as None"),
        ((c((3, 4)), c((3, 4))), "input #1 of type tensor<?xf32> is described as TensorMeta"),
    ]:
        verdict = PointwiseScheduler().accepts(fusion, FusionInfo(metas))
        assert not verdict and reason in verdict.reason


@pytest.mark.parametrize("rows", [0, 1, 5])
def test_pointwise_iterates_over_the_highest_rank_of_equal_outputs(rows: int) -> None:
    """The GPU fuzzer's find: with a zero extent every output is empty, and the iteration space
    was the first output, [rows, 1], from which the [rows, 1, 129] one cannot be indexed (no
    scheduler accepted the segment). Of equal sizes the highest rank is taken."""
    from fuser import DataType, FusionDefinition

    with FusionDefinition("equal_outputs") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.ops.exp(x)
        fd.add_output(y)
        fd.add_output(
            fd.ops.broadcast_in_dim(y, shape=[y.size(0), y.size(1), 129], broadcast_dims=[0, 1])
        )
    xs = np.full((rows, 1), 0.5, np.float32)
    compiled = fd.compile([xs], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["pointwise"]
    small, big = fd.reference([xs])
    assert small.shape == (rows, 1) and big.shape == (rows, 1, 129)


def _transposed(shape: tuple[int, ...], order: tuple[int, ...]) -> TensorMeta:
    """A view of logical `shape` whose dims lie in memory in `order` (slowest first)."""
    strides = [0] * len(shape)
    stride = 1
    for d in reversed(order):
        strides[d] = stride
        stride *= shape[d]
    return TensorMeta(tuple(shape), tuple(strides))


def test_transpose_takes_a_transposed_input_and_says_why_not() -> None:
    """The transpose scheduler takes gelu(x + b) where x's fastest dim is not the output's,
    and leaves the rest to the pointwise scheduler with a reason."""
    from fuser.transforms.schedulers.transpose import TransposeParams, TransposeScheduler

    transpose = TransposeScheduler()
    fusion = parse_fusion(GELU_BIAS)
    bias = TensorMeta.contiguous((4096,))
    info = FusionInfo((_transposed((8192, 4096), (1, 0)), bias))
    scheduler, params = propose(fusion, info)
    assert scheduler.name == "transpose"
    assert params == TransposeParams(
        block=(32, 8, 1), tile=32, width=1, reference=0, tiled=0, staged=(0,), index_bits=32
    )
    assert transpose.launch_config(fusion, params, info).grid == (128, 256, 1)
    row_major = transpose.accepts(fusion, FusionInfo((TensorMeta.contiguous((8192, 4096)), bias)))
    assert not row_major and "no input's fastest dim differs" in row_major.reason
    narrow = FusionInfo((_transposed((8192, 8), (1, 0)), TensorMeta.contiguous((8,))))
    short = transpose.accepts(fusion, narrow)
    assert not short and "a 32x32 tile would stay mostly idle" in short.reason
    assert propose(fusion, narrow)[0].name == "pointwise"


@pytest.mark.parametrize("el", ["f32", "bf16", "f64"])
def test_transpose_kernels_compile_with_nvrtc(el: str) -> None:
    """f32 and f64 tiles of 32 elements a side, bf16 of 64 moved in pairs."""
    from fuser.codegen.cuda import emit_cuda
    from fuser.runtime.compiled_kernel import nvrtc_compile
    from fuser.transforms.schedulers.transpose import TransposeScheduler

    text = GELU_BIAS.replace("f32", el)
    fusion = parse_fusion(text)
    info = FusionInfo((_transposed((1000, 4096), (1, 0)), TensorMeta.contiguous((4096,))))
    transpose = TransposeScheduler()
    params = transpose.heuristics(fusion, info)
    assert params.tile == (64 if el == "bf16" else 32)
    # bf16 moves pairs (4-byte loads along T, 2-element stores along I) where both extents
    # are even and the strides keep pairs aligned
    assert params.width == (2 if el == "bf16" else 1)
    odd = FusionInfo((_transposed((1000, 4097), (1, 0)), TensorMeta.contiguous((4097,))))
    assert transpose.heuristics(fusion, odd).width == 1
    func = transpose.emit(fusion, params, f"transpose_{el}")
    func.verify()
    names = [op.name for op in func.walk()]
    assert names.count("kernel.barrier") == 1 and "kernel.alloc" in names
    nvrtc_compile(emit_cuda(ModuleOp([func])), func.sym_name.data, "sm_90")
