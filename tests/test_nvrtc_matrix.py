"""Every scheduler's kernels, for every element type it takes, compile with NVRTC for sm_80 and
sm_90 — in CI, without a GPU.

All kernels of one architecture go into one translation unit (one preamble), so the matrix costs
one NVRTC call per architecture.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from ir_helpers import parse
from xdsl.dialects.builtin import ModuleOp

from fuser import DataType, FusionDefinition
from fuser.codegen.cuda import emit_cuda
from fuser.compiler import FusionCompiler
from fuser.runtime.compiled_kernel import nvrtc_compile
from fuser.transforms.schedule import schedule_fusion

FLOATS = (DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double)
INTS = (DataType.Int32, DataType.Int)
NUMPY = {
    DataType.Float: np.float32,
    DataType.Half: np.float16,
    DataType.BFloat16: ml_dtypes.bfloat16,
    DataType.Double: np.float64,
    DataType.Int32: np.int32,
    DataType.Int: np.int64,
}


def gelu_bias(dt: DataType) -> FusionDefinition:
    with FusionDefinition("gelu_bias") as fd:
        x = fd.define_tensor([-1, -1], dt)
        b = fd.define_tensor([-1], dt)
        bb = fd.ops.broadcast_in_dim(b, x.shape(), [1])
        fd.add_output(fd.ops.gelu(fd.ops.add(x, bb), approximate="tanh"))
    return fd


def int_pointwise(dt: DataType) -> FusionDefinition:
    with FusionDefinition("int_pointwise") as fd:
        x = fd.define_tensor([-1, -1], dt)
        y = fd.define_tensor([-1, -1], dt)
        q = fd.ops.div(fd.ops.maximum(x, y), 3)
        fd.add_output(fd.ops.where(fd.ops.gt(q, 0), q, fd.ops.neg(x)))
    return fd


def reduce(dims: list[int], rank: int = 2) -> Callable[[DataType], FusionDefinition]:
    def define(dt: DataType) -> FusionDefinition:
        with FusionDefinition(f"sum{''.join(map(str, dims))}") as fd:
            x = fd.define_tensor([-1] * rank, dt)
            fd.add_output(fd.ops.sum(x, dims))
            fd.add_output(fd.ops.max(x, dims))
            fd.add_output(fd.ops.prod(x, dims))
        return fd

    return define


def var_mean(dt: DataType) -> FusionDefinition:
    with FusionDefinition("var_mean") as fd:
        x = fd.define_tensor([-1, -1], dt)
        xf = x if dt in (DataType.Float, DataType.Double) else fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(xf, [1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


def softmax(dt: DataType, name: str = "softmax") -> FusionDefinition:
    with FusionDefinition(name) as fd:
        x = fd.define_tensor([-1, -1], dt)
        m = fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), x.shape(), [0])
        e = fd.ops.exp(fd.ops.sub(x, m))
        s = fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), x.shape(), [0])
        fd.add_output(fd.ops.div(e, s))
    return fd


def layer_norm(dt: DataType, name: str = "layer_norm") -> FusionDefinition:
    with FusionDefinition(name) as fd:
        x = fd.define_tensor([-1, -1], dt)
        w = fd.define_tensor([-1], dt)
        xf = x if dt in (DataType.Float, DataType.Double) else fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(xf, [1], correction=0)
        shape = x.shape()
        centered = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape, [0]))
        inv = fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(var, 1e-5)), shape, [0])
        y = fd.ops.mul(fd.ops.mul(centered, inv), fd.ops.broadcast_in_dim(w, shape, [1]))
        fd.add_output(fd.ops.cast(y, dt))
    return fd


def long_softmax(dt: DataType) -> FusionDefinition:
    """Softmax over rows too long for registers (the looped scheduler)."""
    return softmax(dt, "long_softmax")


def long_layer_norm(dt: DataType) -> FusionDefinition:
    """Layer norm (a Welford reduction) over rows too long for registers."""
    return layer_norm(dt, "long_layer_norm")


def scan(op: str, dim: int) -> Callable[[DataType], FusionDefinition]:
    """A scan with a prologue and an epilogue: rows (dim -1) or columns (dim 0)."""

    def define(dt: DataType) -> FusionDefinition:
        with FusionDefinition(f"{op}{dim % 2}") as fd:
            x = fd.define_tensor([-1, -1], dt)
            y = getattr(fd.ops, op)(fd.ops.abs(x), dim)
            fd.add_output(fd.ops.sub(y, x))
        return fd

    return define


def topk(dt: DataType) -> FusionDefinition:
    """The 5 largest of each row, with a prologue and an epilogue."""
    with FusionDefinition("topk") as fd:
        x = fd.define_tensor([-1, -1], dt)
        values, indices = fd.ops.topk(fd.ops.abs(x), 5)
        fd.add_output(fd.ops.neg(values))
        fd.add_output(indices)
    return fd


def argsort(dt: DataType) -> FusionDefinition:
    with FusionDefinition("argsort") as fd:
        fd.add_output(fd.ops.argsort(fd.define_tensor([-1, -1], dt), descending=True))
    return fd


class _Parsed:
    """A fusion parsed from text where the frontend has no spelling for it (as `fd.fusion`)."""

    def __init__(self, text: str) -> None:
        self.fusion = parse(text)[1]


def inner_outer(dt: DataType) -> _Parsed:
    """The split form of a norm backward: a row sum, a full output using it, and partial sums
    over chunks of rows (`split-reductions` writes it)."""
    el = {DataType.Float: "f32", DataType.Half: "f16", DataType.BFloat16: "bf16"}.get(dt, "f64")
    acc = "f64" if el == "f64" else "f32"
    cast = "" if el == acc else f"%xf = fusion.cast %x : tensor<?x?x{el}> -> tensor<?x?x{acc}>"
    xf = "%x" if el == acc else "%xf"
    return _Parsed(
        f"""
fusion.fusion @inner_outer(%x: tensor<?x?x{el}>) -> (tensor<?x?x{acc}>, tensor<6x?x{acc}>) {{
  %h = fusion.dim %x[1] : tensor<?x?x{el}>
  {cast}
  %s = fusion.sum {xf} [1] : tensor<?x?x{acc}> -> tensor<?x{acc}>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%h) : tensor<?x{acc}> -> tensor<?x?x{acc}>
  %y = fusion.mul {xf}, %sb : tensor<?x?x{acc}>
  %p = fusion.partial_sum %y [0] splits(6) : tensor<?x?x{acc}> -> tensor<6x?x{acc}>
  fusion.output %y, %p : tensor<?x?x{acc}>, tensor<6x?x{acc}>
}}"""
    )


# (definition, dtypes, input shapes, expected scheduler)
CASES = [
    (gelu_bias, FLOATS, [(64, 1000), (1000,)], "pointwise"),
    (int_pointwise, INTS, [(64, 1000), (64, 1000)], "pointwise"),
    (reduce([1]), FLOATS + INTS, [(64, 1000)], "reduction"),
    (reduce([0]), FLOATS + INTS, [(1000, 64)], "reduction"),
    (reduce([0, 2], 3), FLOATS + INTS, [(5, 64, 7)], "reduction"),
    (var_mean, FLOATS, [(64, 1000)], "reduction"),
    (softmax, FLOATS, [(64, 1000)], "persistent"),
    (layer_norm, FLOATS, [(64, 1000), (1000,)], "persistent"),
    (inner_outer, FLOATS, [(64, 1000)], "inner_outer"),
    (long_softmax, FLOATS, [(8, 70001)], "looped"),
    (long_layer_norm, FLOATS, [(8, 100003), (100003,)], "looped"),
    (scan("cumsum", -1), FLOATS + INTS, [(64, 1000)], "scan"),
    (scan("cummax", 0), FLOATS + INTS, [(1000, 64)], "scan"),
    (topk, FLOATS + INTS, [(64, 1000)], "sort"),
    (argsort, FLOATS + INTS, [(64, 1000)], "sort"),
]


def scheduled_module(arch: str) -> tuple[ModuleOp, list[str]]:
    funcs, names = [], []
    for define, dtypes, shapes, scheduler in CASES:
        for dt in dtypes:
            fd = define(dt)
            inputs = [np.ones(s, NUMPY[dt]) for s in shapes]
            info = FusionCompiler(fd.fusion).info_for(inputs, arch=arch)
            name = f"{fd.fusion.sym_name.data}_{dt.name.lower()}"
            kernel = schedule_fusion(fd.fusion, info, name)
            assert kernel.scheduler.name == scheduler, (name, kernel.scheduler.name)
            funcs.append(kernel.func)
            names.append(name)
    return ModuleOp(funcs), names


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_scheduler_and_dtype_compiles(arch: str) -> None:
    module, names = scheduled_module(arch)
    source = emit_cuda(module)
    cubin, log = nvrtc_compile(source, names[0], arch)
    assert cubin and "warning" not in log.lower(), log
    for name in names:
        assert "void __launch_bounds__" in source and f" {name}(" in source
