"""`fd.ops.topk` and `fd.ops.argsort` on the GPU: against the reference exactly (values and
indices: the order is total, ties by index), in f32, f16, bf16, f64, i32 and i64; rows of 1,
3, 127, 4097 and 32768 elements, k of 0, 1, 50 and the whole row; many ties (the selection by
index), NaN, infinities and signed zeros; along another dim (a permute each way); against
torch.topk's values and torch.argsort(stable=True); a prologue and an epilogue in the kernel.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import numpy_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

TYPES = [
    DataType.Float,
    DataType.Half,
    DataType.BFloat16,
    DataType.Double,
    DataType.Int32,
    DataType.Int,
]


def _topk(dtype: DataType, k: int, dim: int, largest: bool, rank: int = 2) -> FusionDefinition:
    with FusionDefinition(f"topk_{dtype.name}_{k}_{dim}_{largest}") as fd:
        x = fd.define_tensor([-1] * rank, dtype)
        values, indices = fd.ops.topk(x, k, dim, largest)
        fd.add_output(values)
        fd.add_output(indices)
    return fd


def _argsort(dtype: DataType, dim: int, descending: bool) -> FusionDefinition:
    with FusionDefinition(f"argsort_{dtype.name}_{dim}_{descending}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        fd.add_output(fd.ops.argsort(x, dim, descending))
    return fd


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: DataType) -> np.ndarray:
    np_dtype = numpy_dtype(dtype.element_type)
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        x = rng.integers(-1000, 1000, shape).astype(np_dtype)
        if x.size > 4:
            x.flat[:2] = [info.min, info.max]
        return x
    return round_to_float(rng.standard_normal(shape) * 10, np_dtype)


def _same(out: list[np.ndarray], ref: list[np.ndarray], what: str) -> None:
    for got, want in zip(out, ref, strict=True):
        assert got.shape == want.shape, (what, got.shape, want.shape)
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=what)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize(
    ("n", "k"), [(1, 1), (3, 0), (3, 3), (127, 5), (4097, 50), (4097, 4097), (32768, 50)]
)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_the_reference(dtype: DataType, n: int, k: int, largest: bool) -> None:
    rng = np.random.default_rng(n * 7 + k)
    x = _values(rng, (5, n), dtype)
    fd = _topk(dtype, k, -1, largest)
    out = fd.execute([x])
    _same(out, fd.reference([x]), f"topk {dtype.name} n={n} k={k}")
    assert schedulers(fd, [x]) == ["sort"]


def test_ties_go_by_index() -> None:
    """Rows of three distinct values: the k-th value has many equals, and the lowest indices
    of them are taken (the selection over indices); the values agree with torch.topk's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (64, 4097)).astype(np.float32)
    for k in (1, 50, 1500, 4000):
        for largest in (True, False):
            fd = _topk(DataType.Float, k, -1, largest)
            out = fd.execute([x])
            _same(out, fd.reference([x]), f"ties k={k}")
            want = torch.topk(torch_of(torch, x), k, -1, largest).values
            np.testing.assert_array_equal(out[0], numpy_of(torch, want))


def test_nan_inf_and_zeros() -> None:
    """NaN above +inf; in topk -0.0 below +0.0 (by the sign of their bits, as torch's radix
    selection), in argsort equal (as torch.argsort): torch's values and order."""
    torch = pytest.importorskip("torch")
    x = np.array(
        [
            [1.0, np.nan, -np.inf, 0.0, -0.0, np.inf, 2.0, np.nan],
            [-0.0, 0.0, -0.0, 0.0, 5.0, -5.0, np.nan, 1.0],
        ],
        np.float32,
    )
    for k in (1, 3, 8):
        for largest in (True, False):
            fd = _topk(DataType.Float, k, -1, largest)
            out = fd.execute([x])
            _same(out, fd.reference([x]), f"specials k={k} largest={largest}")
            want = torch.topk(torch_of(torch, x), k, -1, largest).values
            np.testing.assert_array_equal(out[0], numpy_of(torch, want))
    fd = _argsort(DataType.Float, -1, False)
    (order,) = fd.execute([x])
    np.testing.assert_array_equal(order, fd.reference([x])[0])
    np.testing.assert_array_equal(order[0], [2, 3, 4, 0, 6, 5, 1, 7])  # the zeros as equal
    want = torch.argsort(torch_of(torch, x), dim=-1, stable=True)
    np.testing.assert_array_equal(order, numpy_of(torch, want))


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("n", [1, 3, 127, 4097, 16384])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_matches_the_reference_and_torch(dtype: DataType, n: int, descending: bool) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    x = _values(rng, (3, n), dtype)
    fd = _argsort(dtype, -1, descending)
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x])
    np.testing.assert_array_equal(out, ref)
    want = torch.argsort(torch_of(torch, x), dim=-1, descending=descending, stable=True)
    np.testing.assert_array_equal(out, numpy_of(torch, want))


def test_along_another_dim() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 7, 3)).astype(np.float32)
    fd = _topk(DataType.Float, 10, 0, True, rank=3)
    _same(fd.execute([x]), fd.reference([x]), "topk dim 0")
    fd = _argsort(DataType.Float, 0, True)
    y = x[:, :, 0].copy()
    _same(fd.execute([y]), fd.reference([y]), "argsort dim 0")


def test_prologue_and_epilogue_in_the_kernel() -> None:
    """topk of `x * w` (w broadcast along rows), its values scaled by a per-row factor: one
    kernel."""
    rng = np.random.default_rng(4)
    with FusionDefinition("topk_fused") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        w = fd.define_tensor([-1], DataType.BFloat16)
        s = fd.define_tensor([-1, 1], DataType.Float)
        values, indices = fd.ops.topk(fd.ops.mul(x, w), 20, -1)
        fd.add_output(fd.ops.mul(values, s))
        fd.add_output(indices)
    bf16 = numpy_dtype(DataType.BFloat16.element_type)
    inputs = [
        round_to_float(rng.standard_normal((33, 5000)), bf16),
        round_to_float(rng.standard_normal(5000), bf16),
        rng.standard_normal((33, 1)).astype(np.float32),
    ]
    out = fd.execute(inputs)
    _same(out, fd.reference(inputs), "fused topk")
    assert schedulers(fd, inputs) == ["sort"]
