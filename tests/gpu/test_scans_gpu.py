"""Scans on the GPU: `fd.ops.cumsum`, `cumprod`, `cummax`, `cummin` against the float64
reference, along rows (the row template: a warp to a block per row, tiles carried) and along
other dims (the column template), in f32, f16, bf16 and integers; extents 0, 1, 3, 127 and
4097, rows long enough for 1024 threads, many short rows; inputs broadcast into the scan's
prologue and epilogue, transposed and strided views; NaN and inf as torch's scans treat them;
a scan after a reduction (two kernels).

A sum's rounding grows along the row: its tolerance is a few f32 units of the running sum of
magnitudes (`_scan_bound`), plus one unit of a half output.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import assert_close, numpy_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

SCANS = ["cumsum", "cumprod", "cummax", "cummin"]
FLOATS = [DataType.Float, DataType.Half, DataType.BFloat16]
HALF_UNIT = {np.dtype(np.float16): 2.0**-10, BFLOAT16: 2.0**-7}


def _scan_fusion(op: str, dtype: DataType, rank: int, dim: int) -> FusionDefinition:
    with FusionDefinition(f"{op}_{dtype.name}_{rank}_{dim}") as fd:
        x = fd.define_tensor([-1] * rank, dtype)
        fd.add_output(getattr(fd.ops, op)(x, dim))
    return fd


def _values(rng: np.random.Generator, op: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Fresh inputs: near 1 for a product (so that rows neither vanish nor overflow), normal
    otherwise; never all zeros."""
    base = 1 + 0.01 * rng.standard_normal(shape) if op == "cumprod" else rng.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return round_to_float(base, np.dtype(dtype))


def _scan_bound(
    x: np.ndarray, ref: np.ndarray, axis: int, op: str, out_dtype: np.dtype
) -> np.ndarray:
    """How far a GPU scan may be from the float64 reference: for a sum or product, f32 units of
    the running magnitude (the order of additions is the kernel's); one unit of a half output."""
    mag = np.abs(x.astype(np.float64))
    if op == "cumsum":
        running = np.cumsum(mag, axis=axis)
    elif op == "cumprod":
        running = np.abs(ref.astype(np.float64)) * np.arange(1, x.shape[axis] + 1).reshape(
            [-1 if d == axis % x.ndim else 1 for d in range(x.ndim)]
        )
    else:
        running = np.zeros(x.shape)
    bound = 8 * 2.0**-24 * running
    unit = HALF_UNIT.get(out_dtype)
    if unit is not None:
        bound = bound + unit * np.abs(ref.astype(np.float64))
    return bound


def _check_scan(out: np.ndarray, ref: np.ndarray, x: np.ndarray, axis: int, op: str) -> None:
    assert out.shape == ref.shape, (out.shape, ref.shape)
    if out.dtype.kind in "biu":
        np.testing.assert_array_equal(out, ref)
        return
    a, e = out.astype(np.float64), ref.astype(np.float64)
    bound = _scan_bound(x, ref, axis, op, out.dtype) + 1e-6 * np.abs(e)
    with np.errstate(invalid="ignore"):
        bad = ~((np.abs(a - e) <= bound) | (np.isnan(a) & np.isnan(e)) | (a == e))
    if bad.any():
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise AssertionError(
            f"{op}: {int(bad.sum())} of {out.size} differ; first at {i}: got {out[i]!r}, "
            f"expected {ref[i]!r} (bound {bound[i]:.3g})"
        )


SHAPES = [(0, 5), (5, 0), (1, 1), (3, 127), (127, 3), (5, 4097), (4097, 3), (2, 3, 5)]


@pytest.mark.parametrize("op", SCANS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_scans_match_the_reference(op: str, dtype: DataType, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(abs(hash((op, dtype.name, shape))) % 2**32)
    x = _values(rng, op, shape, numpy_dtype(dtype.element_type))
    for dim in range(-len(shape), len(shape)):
        fd = _scan_fusion(op, dtype, len(shape), dim)
        (out,) = fd.execute([x])
        (ref,) = fd.reference([x], np.float64)
        _check_scan(out, ref, x, dim, op)
        if x.size:
            assert schedulers(fd, [x]) == ["scan"]


@pytest.mark.parametrize("shape", [(3, 131075), (40, 131072), (4099, 257), (8192, 64)])
@pytest.mark.parametrize("op", ["cumsum", "cummax"])
def test_long_and_many_rows(shape: tuple[int, int], op: str) -> None:
    """Rows that take 1024 threads (many tiles carried), rows a warp walks, rows shorter than a
    warp (several rows a warp)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    fd = _scan_fusion(op, DataType.Float, 2, -1)
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x], np.float64)
    _check_scan(out, ref, x, -1, op)


@pytest.mark.parametrize(
    ("op", "dtype", "out_dtype"),
    [
        ("cumsum", DataType.Int32, DataType.Int),
        ("cumsum", DataType.Int, DataType.Int),
        ("cumprod", DataType.Int32, DataType.Int),
        ("cummax", DataType.Int32, DataType.Int32),
        ("cummin", DataType.Int, DataType.Int),
        ("cumsum", DataType.Bool, DataType.Int),
        ("cummax", DataType.Bool, DataType.Bool),
    ],
)
def test_integer_scans(op: str, dtype: DataType, out_dtype: DataType) -> None:
    """Integers exactly: a sum or product of Int32 or Bool counts in Int (torch's), which
    wraps as the reference's does."""
    rng = np.random.default_rng(11)
    for shape in [(3, 127), (130, 4097)]:
        if dtype == DataType.Bool:
            x = rng.random(shape) < 0.3
        else:
            x = rng.integers(-5, 6, shape).astype(numpy_dtype(dtype.element_type))
        fd = _scan_fusion(op, dtype, 2, 1)
        (out,) = fd.execute([x])
        (ref,) = fd.reference([x], np.float64)
        assert out.dtype == numpy_dtype(out_dtype.element_type)
        np.testing.assert_array_equal(out, ref)


def test_views_and_broadcasts() -> None:
    """A transposed input (rows strided), a sliced one (every other column: scalar loads), a
    bias broadcast along rows before the scan and a scale broadcast along columns after it."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    with FusionDefinition("scan_views") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        b = fd.define_tensor([-1], DataType.Float)
        s = fd.define_tensor([-1, 1], DataType.Float)
        y = fd.ops.cumsum(fd.ops.add(x, fd.ops.broadcast_in_dim(b, x.shape(), [1])), 1)
        fd.add_output(fd.ops.mul(y, s))
        fd.add_output(fd.ops.cummin(x, 0))
    base = rng.standard_normal((300, 514)).astype(np.float32)
    for view in (lambda t: t.t()[:, :300], lambda t: t[:, ::2], lambda t: t[1:, 1:]):
        xt = view(torch_of(torch, base))
        n0, n1 = xt.shape
        bias = rng.standard_normal(n1).astype(np.float32)
        scale = rng.standard_normal((n0, 1)).astype(np.float32)
        inputs = [xt, torch_of(torch, bias), torch_of(torch, scale)]
        outs = [numpy_of(torch, o) for o in fd.execute(inputs)]
        host = numpy_of(torch, xt)
        refs = fd.reference([host, bias, scale], np.float64)
        _check_scan(outs[0], refs[0], (host + bias) * np.abs(scale), 1, "cumsum")
        _check_scan(outs[1], refs[1], host, 0, "cummin")


def test_nan_inf_and_zeros_as_torch() -> None:
    """torch's cummax/cummin carry a NaN to the end of the row; inf and -inf sum to NaN; a sum
    starts from +0.0, a product keeps a leading -0.0 (the sign of each zero compared)."""
    torch = pytest.importorskip("torch")
    x = np.array(
        [
            [1, np.nan, 3, 0, 5],
            [np.inf, -np.inf, 1, 2, 3],
            [-1, -2, np.nan, -np.inf, 7],
            [-0.0, -0.0, 2, -2, 1],
        ],
        np.float32,
    )
    xt = torch_of(torch, x)
    expected = {
        "cummax": torch.cummax(xt, 1).values,
        "cummin": torch.cummin(xt, 1).values,
        "cumsum": torch.cumsum(xt, 1),
        "cumprod": torch.cumprod(xt, 1),
    }
    for op, want in expected.items():
        (out,) = _scan_fusion(op, DataType.Float, 2, 1).execute([xt])
        got, expected = numpy_of(torch, out), numpy_of(torch, want)
        np.testing.assert_array_equal(got, expected, err_msg=op)
        if op in ("cumsum", "cumprod"):
            number = ~np.isnan(expected)
            np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(expected[number]))


def test_against_torch_in_bf16() -> None:
    """bf16 cumsum computes in f32 and rounds each result once: within one bf16 unit of
    torch.compile's (which also accumulates in f32) and of the float64 reference."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = round_to_float(rng.standard_normal((64, 4096)), BFLOAT16)
    xt = torch_of(torch, x)
    (out,) = _scan_fusion("cumsum", DataType.BFloat16, 2, 1).execute([xt])
    want = torch.cumsum(xt.float(), 1).to(torch.bfloat16)
    assert_close(numpy_of(torch, out), numpy_of(torch, want), "cumsum bf16", (2**-7, 1e-2))


def test_scan_after_a_reduction() -> None:
    """`cumsum(x - max(x, 1))`: the max is a kernel of its own, the scan reads it broadcast."""
    rng = np.random.default_rng(9)
    with FusionDefinition("scan_after_max") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        m = fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), x.shape(), [0])
        fd.add_output(fd.ops.cumsum(fd.ops.exp(fd.ops.sub(x, m)), 1))
    x = rng.standard_normal((257, 1000)).astype(np.float32)
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x], np.float64)
    _check_scan(out, ref, np.exp(x - x.max(1, keepdims=True)), 1, "cumsum")
    assert "scan" in schedulers(fd, [x])
