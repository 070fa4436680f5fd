"""The looped scheduler on the GPU: normalizations over rows too long for registers, one kernel
that walks each row once per stage of reductions, against the float64 reference.

Covered: softmax in f32, f16 and bf16 over rows of 32769 to 262147 elements (odd lengths load one
element at a time; multiples of 8 as vectors), 0, 1, 3 and 127 rows (fewer and more rows than
blocks); log-softmax with logsumexp beside it (a full and a reduced output); layer norm over
100003 columns (a Welford reduction merged across tiles, rows with a large mean); a row-sliced
input (row stride not a multiple of the vector width) and a transposed one (not the fastest
dim: not looped).

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pytest
from definitions import attention_softmax, back, softmax, to_f32
from gpu_helpers import DTYPES, TOL, assert_close, numpy_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu


@functools.cache
def log_softmax(dtype: DataType) -> FusionDefinition:
    """logsumexp (a reduced output) and log-softmax (a full one) of the same rows."""
    with FusionDefinition(f"log_softmax_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        xf = to_f32(fd, x)
        m = fd.ops.max(xf, [1])
        e = fd.ops.exp(fd.ops.sub(xf, fd.ops.broadcast_in_dim(m, x.shape(), [0])))
        lse = fd.ops.add(fd.ops.log(fd.ops.sum(e, [1])), m)
        fd.add_output(lse)
        fd.add_output(back(fd, fd.ops.sub(xf, fd.ops.broadcast_in_dim(lse, x.shape(), [0])), dtype))
    return fd


@functools.cache
def layer_norm(dtype: DataType) -> FusionDefinition:
    with FusionDefinition(f"layer_norm_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        w = fd.define_tensor([-1], dtype)
        xf = to_f32(fd, x)
        var, mean = fd.ops.var_mean(xf, [1], correction=0)
        shape = x.shape()
        centered = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape, [0]))
        inv = fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(var, 1e-5)), shape, [0])
        scaled = fd.ops.mul(centered, inv)
        y = fd.ops.mul(scaled, fd.ops.broadcast_in_dim(to_f32(fd, w), shape, [1]))
        fd.add_output(back(fd, y, dtype))
        fd.add_output(mean)
    return fd


def _rows(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: DataType, scale: float = 4.0
) -> np.ndarray:
    return round_to_float(scale * rng.standard_normal(shape), numpy_dtype(dtype.element_type))


@pytest.mark.parametrize(
    "shape",
    [(0, 70000), (1, 70000), (3, 50257), (127, 32769), (5, 131072), (2, 262147)],
    ids=lambda s: f"{s[0]}x{s[1]}",
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_softmax_of_long_rows(
    rng: np.random.Generator, dtype: DataType, shape: tuple[int, int]
) -> None:
    fd = softmax(dtype)
    x = _rows(rng, shape, dtype)
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x], compute_dtype=np.float64)
    rtol, atol = TOL[out.dtype]
    assert_close(out, ref, f"softmax {shape}", (rtol, atol))
    if shape[0]:
        assert np.allclose(out.astype(np.float64).sum(axis=1), 1.0, atol=1e-2)
    assert schedulers(fd, [x]) == ["looped"]


@pytest.mark.parametrize("shape", [(3, 50257), (64, 65536)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_logsumexp_and_log_softmax(
    rng: np.random.Generator, dtype: DataType, shape: tuple[int, int]
) -> None:
    fd = log_softmax(dtype)
    x = _rows(rng, shape, dtype)
    lse, out = fd.execute([x])
    ref_lse, ref = fd.reference([x], compute_dtype=np.float64)
    assert_close(lse, ref_lse, f"logsumexp {shape}", (1e-5, 1e-5))
    rtol, atol = TOL[out.dtype]
    assert_close(out, ref, f"log-softmax {shape}", (rtol, atol + 1e-4))
    assert schedulers(fd, [x]) == ["looped"]


@pytest.mark.parametrize(
    "shape", [(1, 100003), (37, 100003), (4, 262144)], ids=lambda s: f"{s[0]}x{s[1]}"
)
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_layer_norm_of_long_rows(
    rng: np.random.Generator, dtype: DataType, shape: tuple[int, int]
) -> None:
    """Welford states merged across tiles and threads (Chan's formula), rows of mean 1000 and
    std 1. x - mean carries the f32 rounding of the mean: two ulp of 1000, scaled by w / std."""
    fd = layer_norm(dtype)
    x = round_to_float(1000.0 + rng.standard_normal(shape), numpy_dtype(dtype.element_type))
    w = _rows(rng, (shape[1],), dtype, 1.0)
    y, mean = fd.execute([x, w])
    ref_y, ref_mean = fd.reference([x, w], compute_dtype=np.float64)
    x64 = x.astype(np.float64)
    inv = 1.0 / np.sqrt(x64.var(axis=1) + 1e-5)
    mean_error = 2 * float(np.spacing(np.float32(1000.0)))
    rtol, atol = TOL[y.dtype]
    atol += mean_error * float(np.abs(w.astype(np.float64)).max() * inv.max())
    assert_close(y, ref_y, f"layer norm {shape}", (rtol, atol))
    assert_close(mean, ref_mean, f"mean {shape}", (0.0, mean_error))
    assert schedulers(fd, [x, w]) == ["looped"]


def test_views(rng: np.random.Generator, torch: Any) -> None:
    """A row-sliced input (row stride 70005: scalar loads) is looped; a transposed one, whose
    rows are not its fastest dim, is not."""
    n, h = 33, 70000
    fd = softmax(DataType.Float)
    wide = _rows(rng, (n, h + 5), DataType.Float)
    x = torch_of(torch, wide)[:, :h]
    (out,) = fd.execute([x])
    (ref,) = fd.reference([np.ascontiguousarray(wide[:, :h])], compute_dtype=np.float64)
    assert_close(numpy_of(torch, out), ref, "softmax of a row slice", TOL[np.dtype(np.float32)])
    assert schedulers(fd, [x]) == ["looped"]

    host = _rows(rng, (n, 40000), DataType.Float)
    xt = torch_of(torch, np.ascontiguousarray(host.T)).t()
    (out,) = fd.execute([xt])
    (ref,) = fd.reference([host], compute_dtype=np.float64)
    assert_close(
        numpy_of(torch, out), ref, "softmax of a transposed input", TOL[np.dtype(np.float32)]
    )
    assert "looped" not in schedulers(fd, [xt])
    assert math.isfinite(float(numpy_of(torch, out).sum()))


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_online_normalizer_at_the_edges(rng: np.random.Generator, dtype: DataType) -> None:
    """Softmax's max and sum of exp(x - max) in one pass (the sum rescaled as the max grows),
    on rows the reference treats specially: all -inf (NaN), -inf beside finite values (0
    there), one +inf (NaN), a NaN (NaN), a rising max (each tile's values above the last's),
    huge values (no overflow: the sum stays relative to the max)."""
    n, h = 8, 70001
    x = _rows(rng, (n, h), dtype)
    x[0] = -np.inf
    x[1, ::3] = -np.inf
    x[2, 5000] = np.inf
    x[3, 100] = np.nan
    x[4] = np.linspace(-50.0, 50.0, h)
    x[5] = 80.0 + x[5]  # exp(x) overflows f32
    x[6, : h // 2] = -np.inf
    fd = log_softmax(dtype)
    lse, out = fd.execute([x])
    ref_lse, ref = fd.reference([x], compute_dtype=np.float64)
    assert_close(lse, ref_lse, "logsumexp at the edges", (1e-5, 1e-5))
    rtol, atol = TOL[out.dtype]
    assert_close(out, ref, "log-softmax at the edges", (rtol, atol + 1e-4))
    assert np.isnan(lse[[0, 2, 3]]).all() and np.isfinite(lse[[1, 4, 5, 6, 7]]).all()
    (sm,) = softmax(dtype).execute([x])
    (ref_sm,) = softmax(dtype).reference([x], compute_dtype=np.float64)
    assert_close(sm, ref_sm, "softmax at the edges", TOL[sm.dtype])


def test_softmax_over_the_last_of_four_dims(rng: np.random.Generator) -> None:
    """Attention's shape, [batch, heads, queries, keys], keys too long for registers."""
    fd = attention_softmax()
    xs = _rows(rng, (2, 3, 5, 40001), DataType.Float)
    (out,) = fd.execute([xs])
    (ref,) = fd.reference([xs], compute_dtype=np.float64)
    assert_close(out, ref, "softmax over the last of four dims", TOL[out.dtype])
    assert schedulers(fd, [xs]) == ["looped"]
