"""Layer norm and RMS norm backward on the GPU (row sums for dx, column sums for dw and db), against
the float64 reference: the `split-reductions` form on the `inner_outer` scheduler where rows are
many enough to split, the unsplit segmentation otherwise (few rows, a transposed input).

Covered: f32, f16 and bf16; rows 0, 1, 3, 16, 127 and 4097 and widths 1, 3, 127, 1024 and 4096
(odd widths load one element at a time, widths of 8k vectors); a row-sliced `dy` (row stride
width + 8: still row-major, still split) and a transposed `x` (its rows are not its fastest dim:
not split); a column-sum-only fusion (`partial_sum` with no row reduction) from IR.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
import math
from typing import Any, cast

import numpy as np
import pytest
from definitions import back, to_f32
from gpu_helpers import DTYPES, TOL, assert_close, numpy_of, parse_fusion, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.compiler import compiler_for
from fuser.runtime.dtypes import numpy_dtype, round_to_float
from fuser.transforms.schedulers import inner_outer
from fuser.transforms.schedulers.persistent import PersistentParams

pytestmark = pytest.mark.gpu

SHAPES = [(0, 64), (1, 7), (3, 127), (16, 1), (127, 1024), (4097, 3), (4097, 4096)]


SPLIT = ["inner_outer", "reduction"]
"""The kernels of a split norm backward: row sums, dx and the partial column sums; then the sums
of the partials of every weight gradient (layer norm's dw and db in one kernel)."""


@functools.cache
def rms_norm_backward(dtype: DataType, tag: str = "") -> FusionDefinition:
    """dx, dw of y = x * rstd * w, with rstd saved by the forward and 1/H a scalar input (a
    `tag` names a definition of its own, compiled afresh)."""
    with FusionDefinition(f"rms_norm_backward_{dtype.name}{tag}") as fd:
        dy, x = fd.define_tensor([-1, -1], dtype), fd.define_tensor([-1, -1], dtype)
        rstd = fd.define_tensor([-1], DataType.Float)
        w = fd.define_tensor([-1], dtype)
        inv_h = fd.define_scalar(dtype=DataType.Float)
        shape = x.shape()
        rb = fd.ops.broadcast_in_dim(rstd, shape, [0])
        dyf = to_f32(fd, dy)
        xhat = fd.ops.mul(to_f32(fd, x), rb)
        dxhat = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(to_f32(fd, w), shape, [1]))
        c = fd.ops.mul(fd.ops.sum(fd.ops.mul(dxhat, xhat), [1]), inv_h)
        dx = fd.ops.mul(
            rb, fd.ops.sub(dxhat, fd.ops.mul(xhat, fd.ops.broadcast_in_dim(c, shape, [0])))
        )
        fd.add_output(back(fd, dx, dtype))
        fd.add_output(back(fd, fd.ops.sum(fd.ops.mul(dyf, xhat), [0]), dtype))
    return fd


@functools.cache
def layer_norm_backward(dtype: DataType, tag: str = "") -> FusionDefinition:
    """dx, dw, db of y = (x - mean) * rstd * w + b, with mean and rstd saved by the forward (a
    `tag` names a definition of its own, compiled afresh)."""
    with FusionDefinition(f"layer_norm_backward_{dtype.name}{tag}") as fd:
        dy, x = fd.define_tensor([-1, -1], dtype), fd.define_tensor([-1, -1], dtype)
        mean, rstd = fd.define_tensor([-1], DataType.Float), fd.define_tensor([-1], DataType.Float)
        w = fd.define_tensor([-1], dtype)
        inv_h = fd.define_scalar(dtype=DataType.Float)
        shape = x.shape()
        rb = fd.ops.broadcast_in_dim(rstd, shape, [0])
        dyf = to_f32(fd, dy)
        xhat = fd.ops.mul(fd.ops.sub(to_f32(fd, x), fd.ops.broadcast_in_dim(mean, shape, [0])), rb)
        dxhat = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(to_f32(fd, w), shape, [1]))
        c1 = fd.ops.broadcast_in_dim(fd.ops.mul(fd.ops.sum(dxhat, [1]), inv_h), shape, [0])
        c2 = fd.ops.mul(fd.ops.sum(fd.ops.mul(dxhat, xhat), [1]), inv_h)
        t = fd.ops.mul(xhat, fd.ops.broadcast_in_dim(c2, shape, [0]))
        dx = fd.ops.mul(rb, fd.ops.sub(fd.ops.sub(dxhat, c1), t))
        fd.add_output(back(fd, dx, dtype))
        fd.add_output(back(fd, fd.ops.sum(fd.ops.mul(dyf, xhat), [0]), dtype))
        fd.add_output(back(fd, fd.ops.sum(dyf, [0]), dtype))
    return fd


def _inputs(rng: np.random.Generator, kind: str, dtype: DataType, n: int, h: int) -> list[Any]:
    d = numpy_dtype(dtype.element_type)
    dy = round_to_float(rng.standard_normal((n, h)), d)
    x = round_to_float(0.5 + 2.0 * rng.standard_normal((n, h)), d)
    w = round_to_float(1.0 + 0.5 * rng.standard_normal(h), d)
    rstd = rng.uniform(0.3, 1.2, n).astype(np.float32)
    if kind == "rms":
        return [dy, x, rstd, w, np.float32(1.0 / max(h, 1))]
    mean = (0.5 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    return [dy, x, mean, rstd, w, np.float32(1.0 / max(h, 1))]


def _check(fd: FusionDefinition, inputs: list[Any], outputs: list[Any], n: int, h: int) -> None:
    expected = fd.reference(inputs, compute_dtype=np.float64)
    for i, (out, ref) in enumerate(zip(outputs, expected, strict=True)):
        rtol, atol = TOL[out.dtype]
        if out.dtype == np.float32:
            rtol, atol = 2e-5, 1e-5
        if i > 0:  # a column sum of n values of magnitude about 3
            atol += 2e-5 * math.sqrt(max(n, 1)) * 3.0
        else:  # dx: sums of h products enter each element
            atol += 2e-6 * math.sqrt(max(h, 1)) * 3.0
        assert_close(out, ref, f"{fd.name} output #{i} [{n}, {h}]", (rtol, atol))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_norm_backward(
    rng: np.random.Generator, kind: str, dtype: DataType, shape: tuple[int, int]
) -> None:
    n, h = shape
    fd = rms_norm_backward(dtype) if kind == "rms" else layer_norm_backward(dtype)
    inputs = _inputs(rng, kind, dtype, n, h)
    _check(fd, inputs, fd.execute(inputs), n, h)
    if n >= 16 and h > 1:
        assert schedulers(fd, inputs) == SPLIT


@pytest.mark.parametrize(
    "shape", [(64, 12288), (33, 24576), (127, 4096), (4097, 3)], ids=lambda s: f"{s[0]}x{s[1]}"
)
@pytest.mark.parametrize("policy", ["staged", "shared sums", "registers"])
@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_inner_outer_policies(
    rng: np.random.Generator,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    policy: str,
    shape: tuple[int, int],
) -> None:
    """Each way the inner-outer kernel holds its sums and rows against the reference: the
    next row copied into shared memory while this one is worked on, beside the sums (12288
    bf16: 144-192 KiB of dynamic shared memory, past the 48 KiB default); the sums alone there
    (24576: the buffers do not fit); the sums in registers (and short rows, several a block,
    whatever the policy)."""
    monkeypatch.setenv("FUSER_RUNNABLE_STORE", "0")  # the policy is not in the store's key
    monkeypatch.setattr(inner_outer, "PREFETCH", policy == "staged")
    monkeypatch.setattr(inner_outer, "SHARED_SUMS", policy != "registers")
    n, h = shape
    dtype = DataType.BFloat16
    tag = "_" + policy.replace(" ", "_")
    fd = rms_norm_backward(dtype, tag) if kind == "rms" else layer_norm_backward(dtype, tag)
    inputs = _inputs(rng, kind, dtype, n, h)
    _check(fd, inputs, fd.execute(inputs), n, h)
    kernels = fd.compile(inputs).kernels
    if (kind, policy, shape) == ("layer", "registers", (33, 24576)):
        # layer norm's row of 24576 does not fit registers beside its sums: not split
        assert [k.scheduler for k in kernels] == ["reduction", "persistent", "reduction"]
        return
    assert kernels[0].scheduler == "inner_outer"
    p = cast(PersistentParams, kernels[0].heuristics)
    # short rows (3, several a block) keep their sums in registers; 24576 has no room for the
    # buffers
    shared = policy != "registers" and h > 3
    staged = policy == "staged" and h in (4096, 12288)
    assert (p.shared_sums, p.prefetch) == (shared, staged)
    assert (p.block[1] > 1) == (h == 3)


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_norm_backward_of_torch_views(rng: np.random.Generator, torch: Any, kind: str) -> None:
    """A row-sliced dy (row stride h + 8) keeps the split; a transposed x is not split."""
    n, h = 1031, 1024
    fd = (
        rms_norm_backward(DataType.BFloat16)
        if kind == "rms"
        else layer_norm_backward(DataType.BFloat16)
    )
    host = _inputs(rng, kind, DataType.BFloat16, n, h)
    wide = np.concatenate([host[0], host[0][:, :8]], axis=1)
    dy = torch_of(torch, wide)[:, :h]
    rest = [torch_of(torch, a) if isinstance(a, np.ndarray) else float(a) for a in host[1:]]
    outs = fd.execute([dy, *rest])
    _check(fd, host, [numpy_of(torch, o) for o in outs], n, h)
    assert schedulers(fd, [dy, *rest]) == SPLIT

    xt = torch_of(torch, np.ascontiguousarray(host[1].T)).t()
    assert not xt.is_contiguous()
    views = [torch_of(torch, host[0]), xt, *rest[1:]]
    outs = fd.execute(views)
    _check(fd, host, [numpy_of(torch, o) for o in outs], n, h)
    assert "inner_outer" not in schedulers(fd, views)


@pytest.mark.parametrize(
    "shape", [(4097, 3), (100003, 64), (262144, 16), (65537, 1000)], ids=lambda s: f"{s[0]}x{s[1]}"
)
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_tall_narrow_column_sums(
    rng: np.random.Generator, shape: tuple[int, int], dtype: DataType
) -> None:
    """A column sum of a tall, narrow matrix is split (no row sums beside it): the inner-outer
    kernel sums chunks of rows, several rows at a time for rows of few threads."""
    with FusionDefinition(f"colsum_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        fd.add_output(fd.ops.sum(to_f32(fd, x), [0]))
    d = numpy_dtype(dtype.element_type)
    inputs = [round_to_float(rng.standard_normal(shape), d)]
    (out,) = fd.execute(inputs)
    (ref,) = fd.reference(inputs, compute_dtype=np.float64)
    assert_close(out, ref, f"column sums {shape}", (2e-5, 1e-5 + 2e-5 * math.sqrt(shape[0])))
    assert schedulers(fd, inputs) == ["inner_outer", "reduction"]


@pytest.mark.parametrize("shape", [(4097, 33), (5, 4096), (0, 8)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_column_partial_sums(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    """`partial_sum` over rows with no row reduction: the inner-outer kernel alone."""
    fusion = parse_fusion(
        """
fusion.fusion @colsum(%x: tensor<?x?xf32>) -> (tensor<6x?xf32>) {
  %p = fusion.partial_sum %x [0] splits(6) : tensor<?x?xf32> -> tensor<6x?xf32>
  fusion.output %p : tensor<6x?xf32>
}
"""
    )
    x = rng.standard_normal(shape).astype(np.float32)
    compiler = compiler_for(fusion)
    (out,) = compiler.execute([x])
    from fuser.runtime.reference import evaluate

    (ref,) = evaluate(fusion, [x], compute_dtype=np.float64)
    assert_close(out, ref, "partial sums", (2e-5, 1e-5 + 2e-5 * math.sqrt(shape[0] + 1)))
    assert [k.scheduler for k in compiler.compile([x]).kernels] == ["inner_outer"]
