"""The transpose scheduler on the GPU: pointwise fusions reading a transposed input, against the
float64 reference.

Covered: gelu(x.t() + b) in f32, f16 and bf16 at odd sizes (33, 127, 1000, 4097; tiles cut by
both edges), 2-byte elements moved in pairs (even extents) and one at a time (a view one element
off alignment), a batched transpose (a permuted 3-D view, the batch on blockIdx.z), a transposed
input beside a row-major one, a transposed view with gaps (every other column of a wider
tensor), and the shapes it leaves to the pointwise kernel (a transposed dim shorter than a tile,
zero-size).

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import (
    DTYPES,
    check_against_reference,
    random_of,
    schedulers,
    torch_of,
)

from fuser import DataType, FusionDefinition
from fuser.transforms.schedulers.transpose import TransposeParams

pytestmark = pytest.mark.gpu


def gelu_bias(dtype: DataType, rank: int = 2) -> FusionDefinition:
    with FusionDefinition(f"gelu_bias_{dtype.name}_{rank}d") as fd:
        x = fd.define_tensor([-1] * rank, dtype)
        b = fd.define_tensor([-1], dtype)
        bb = fd.ops.broadcast_in_dim(b, shape=x.shape(), broadcast_dims=[rank - 1])
        s = fd.ops.add(fd.ops.cast(x, DataType.Float), fd.ops.cast(bb, DataType.Float))
        fd.add_output(fd.ops.cast(fd.ops.gelu(s, approximate="tanh"), dtype))
    return fd


@pytest.mark.parametrize(
    "shape", [(33, 127), (127, 4097), (4097, 33), (1000, 1000)], ids=lambda s: f"{s[0]}x{s[1]}"
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_gelu_of_a_transposed_input(
    rng: np.random.Generator, torch: Any, dtype: DataType, shape: tuple[int, int]
) -> None:
    """x is [n, h] logically, stored as its transpose [h, n]."""
    n, h = shape
    fd = gelu_bias(dtype)
    stored = random_of(rng, (h, n), dtype)
    b = random_of(rng, (h,), dtype)
    views = [torch_of(torch, stored).t(), torch_of(torch, b)]
    check_against_reference(fd, torch, views, [np.ascontiguousarray(stored.T), b])
    assert schedulers(fd, views) == ["transpose"]


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_batched_transpose(rng: np.random.Generator, torch: Any, dtype: DataType) -> None:
    """A [5, 130, 67] view of a [5, 67, 130] tensor: the batch goes to blockIdx.z."""
    fd = gelu_bias(dtype, 3)
    stored = random_of(rng, (5, 67, 130), dtype)
    b = random_of(rng, (67,), dtype)
    views = [torch_of(torch, stored).permute(0, 2, 1), torch_of(torch, b)]
    check_against_reference(fd, torch, views, [np.ascontiguousarray(stored.transpose(0, 2, 1)), b])
    assert schedulers(fd, views) == ["transpose"]


def test_transposed_plus_row_major(rng: np.random.Generator, torch: Any) -> None:
    """x.t() + y: x through the tile, y read in place; the output row-major."""
    with FusionDefinition("add_t") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.mul(fd.ops.add(x, y), y))
    xs, ys = (
        random_of(rng, (300, 1025), DataType.Float),
        random_of(rng, (1025, 300), DataType.Float),
    )
    views = [torch_of(torch, xs).t(), torch_of(torch, ys)]
    check_against_reference(fd, torch, views, [np.ascontiguousarray(xs.T), ys])
    assert schedulers(fd, views) == ["transpose"]


def test_transposed_view_with_gaps(rng: np.random.Generator, torch: Any) -> None:
    """Every other row of a [2h, n] tensor, transposed: strides (1, 2n)."""
    fd = gelu_bias(DataType.Float)
    n, h = 515, 129
    wide = random_of(rng, (2 * h, n), DataType.Float)
    b = random_of(rng, (h,), DataType.Float)
    views = [torch_of(torch, wide)[::2].t(), torch_of(torch, b)]
    check_against_reference(fd, torch, views, [np.ascontiguousarray(wide[::2].T), b])
    assert schedulers(fd, views) == ["transpose"]


@pytest.mark.parametrize("shape", [(8, 4097), (4097, 8), (0, 64)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_short_transposed_dims_stay_pointwise(
    rng: np.random.Generator, torch: Any, shape: tuple[int, int]
) -> None:
    n, h = shape
    fd = gelu_bias(DataType.Float)
    stored = random_of(rng, (h, n), DataType.Float)
    b = random_of(rng, (h,), DataType.Float)
    views = [torch_of(torch, stored).t(), torch_of(torch, b)]
    check_against_reference(fd, torch, views, [np.ascontiguousarray(stored.T), b])
    assert schedulers(fd, views) == ["pointwise"]


@pytest.mark.parametrize("dtype", [DataType.Half, DataType.BFloat16], ids=lambda d: d.name)
def test_pairs_and_a_misaligned_view(rng: np.random.Generator, torch: Any, dtype: DataType) -> None:
    """Even extents and strides: threads move pairs; the same view one element into its
    storage (2-byte aligned): one element at a time. Both against the reference."""
    fd = gelu_bias(dtype)
    n, h = 130, 4098
    stored = random_of(rng, (h, n + 2), dtype)
    b = random_of(rng, (h,), dtype)
    base = torch_of(torch, stored)
    for lo, width in ((0, 2), (1, 1)):
        views = [base[:, lo : lo + n].t(), torch_of(torch, b)]
        check_against_reference(
            fd, torch, views, [np.ascontiguousarray(stored[:, lo : lo + n].T), b]
        )
        (kernel,) = fd.compile(views).kernels
        assert isinstance(kernel.heuristics, TransposeParams)
        assert kernel.scheduler == "transpose" and kernel.heuristics.width == width
