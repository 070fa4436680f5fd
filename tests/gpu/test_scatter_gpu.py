"""`fd.ops.scatter` on the GPU against the reference (bit-exact: scatter moves values).

Covered: f32, f16, bf16, i32 and Bool inputs; one index per row (one pointwise kernel) and
several (a reduction over the candidates); dims 0, 1 and -1; odd extents (1, 3, 127, 4097) and
an empty other dim; negative indices, indices outside [-n, n) (they write nothing) and repeated
ones (the largest value wins); a tensor `src` and a scalar input; a transposed torch input,
scattered at a static one index per row with the gather that feeds it and the product that
reads it.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from fuser import DataType, FusionDefinition

pytestmark = pytest.mark.gpu

NUMPY = {
    DataType.Float: np.float32,
    DataType.Half: np.float16,
    DataType.BFloat16: ml_dtypes.bfloat16,
    DataType.Int32: np.int32,
    DataType.Bool: np.bool_,
}


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: DataType) -> np.ndarray:
    """Values of `dtype`, never all zeros (rounded once from float64)."""
    if dtype == DataType.Bool:
        return rng.random(shape) < 0.5
    if dtype == DataType.Int32:
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    return (rng.standard_normal(shape) * 3 + 0.5).astype(NUMPY[dtype])


@functools.cache
def scatter_fusion(dtype: DataType, dim: int, scalar: bool) -> FusionDefinition:
    with FusionDefinition(f"scatter_{dtype.name}_{dim}_{scalar}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        i = fd.define_tensor([-1, -1], DataType.Int)
        src = fd.define_scalar(dtype) if scalar else fd.define_tensor([-1, -1], dtype)
        fd.add_output(fd.ops.scatter(x, i, src, dim))
    return fd


CASES = [((3, 127), 1, 1), ((127, 3), 0, 1), ((4097, 5), -1, 3), ((5, 4097), 0, 2)]
CASES += [((1, 1), 1, 1), ((3, 1), 1, 4), ((0, 9), 1, 2)]


@pytest.mark.parametrize("scalar", [False, True], ids=["tensor_src", "scalar_src"])
@pytest.mark.parametrize("dtype", list(NUMPY), ids=lambda d: d.name)
@pytest.mark.parametrize(("shape", "dim", "k"), CASES, ids=str)
def test_scatter_equals_the_reference(
    rng: np.random.Generator,
    shape: tuple[int, int],
    dim: int,
    k: int,
    dtype: DataType,
    scalar: bool,
) -> None:
    fd = scatter_fusion(dtype, dim, scalar)
    d = dim % 2
    n = shape[d]
    index_shape = tuple(k if j == d else e for j, e in enumerate(shape))
    x = values(rng, shape, dtype)
    index = rng.integers(-n - 3, n + 3, index_shape)  # negative, outside, repeated
    if scalar:
        src: Any = True if dtype == DataType.Bool else (7 if dtype == DataType.Int32 else -2.5)
    else:
        src = values(rng, index_shape, dtype)
    (out,) = fd.execute([x, index, src])
    (expected,) = fd.reference([x, index, src])
    assert out.dtype == expected.dtype and out.shape == shape
    np.testing.assert_array_equal(out, expected)
    if x.size:  # one kernel (the index's dim is dynamic: a reduction over its candidates)
        assert [k.scheduler for k in fd.compile([x, index, src]).kernels] == ["reduction"]


def test_a_transposed_torch_input_and_a_fused_reader(rng: np.random.Generator, torch: Any) -> None:
    """A one-hot-like update: x (a transposed view) scattered at a target per row, then scaled
    (one kernel reads x strided, compares, writes)."""
    with FusionDefinition("scatter_fused") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        t = fd.define_tensor([-1, 1], DataType.Int)
        y = fd.ops.scatter(x, t, fd.ops.take_along_axis(fd.ops.neg(x), t, 1), 1)
        fd.add_output(fd.ops.mul(y, 2.0))
    base = torch.from_numpy(rng.standard_normal((1000, 33)).astype(np.float32)).cuda()
    xt = base.t()  # [33, 1000], strided
    # (take_along_axis clamps a negative index where scatter counts it from the end: targets
    # in range, so both mean one element)
    target = torch.from_numpy(rng.integers(0, 1000, (33, 1))).cuda()
    (out,) = fd.execute([xt, target])
    (expected,) = fd.reference([xt.cpu().numpy(), target.cpu().numpy()])
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    x64 = xt.double().cpu().numpy()
    rows = np.arange(33)
    x64[rows, target.cpu().numpy()[:, 0]] *= -1
    np.testing.assert_array_equal(out.cpu().numpy(), (2 * x64).astype(np.float32))
