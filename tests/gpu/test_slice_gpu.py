"""`slice` on the GPU, against the float64 reference.

Kernels never index through a slice: it is a view between segments (`host.slice`: strides times
steps, the pointer at the first element), moved to the inputs through pointwise chains and
permutes (`fuser-hoist-views`). Covered:
- the halves a rotary embedding rotates, of a permuted input times another, in f32, f16 and
  bf16, at t = 0, 1, 3, 127, 4097: one kernel reading three views;
- q, k and v split from a fused projection [b, t, 3*h*d], reshaped into heads and permuted, each
  an output: views of the input, no kernel (as nvFuser returns them);
- a slice of a reduction's result with a step and negative bounds, read by a second kernel;
- slices of a transposed (non-contiguous) input, with steps;
- f16 slices that start 2 bytes into a row (no vector loads for them) beside aligned ones;
- an empty slice.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import DTYPES, check_against_reference, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.dialects.views import END

pytestmark = pytest.mark.gpu


def halves(dtype: DataType) -> FusionDefinition:
    """q = permute(x) into heads; (q * c)[..., :32] - q[..., 32:] and q[..., :32] * 2, in f32."""
    with FusionDefinition(f"halves_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1, 4, 64], dtype)  # [b, t, h, d]
        c = fd.define_tensor([-1, 4, -1, 64], dtype)  # [b, h, t, d]
        q = fd.ops.cast(fd.ops.permute(x, [0, 2, 1, 3]), DataType.Float)
        ends = [q.size(0), 4, q.size(2)]
        lo = fd.ops.slice(fd.ops.mul(q, fd.ops.cast(c, DataType.Float)), [0, 0, 0, 0], [*ends, 32])
        hi = fd.ops.slice(q, [0, 0, 0, 32], [*ends, 64])
        fd.add_output(fd.ops.cast(fd.ops.sub(lo, hi), dtype))
        fd.add_output(fd.ops.mul(fd.ops.slice(q, [0, 0, 0, 0], [*ends, 32]), 2.0))
    return fd


@pytest.mark.parametrize("t", [0, 1, 3, 127, 4097])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_the_halves_of_a_rotary_embedding_are_one_kernel(
    rng: np.random.Generator, torch: Any, dtype: DataType, t: int
) -> None:
    fd = halves(dtype)
    x = random_of(rng, (2, t, 4, 64), dtype)
    c = random_of(rng, (2, 4, t, 64), dtype)
    check_against_reference(fd, torch, [torch_of(torch, x), torch_of(torch, c)], [x, c])
    if t:
        assert len(schedulers(fd, [x, c])) == 1


@pytest.mark.parametrize("t", [1, 127])
def test_q_k_v_split_from_a_fused_projection(rng: np.random.Generator, torch: Any, t: int) -> None:
    b, h, d = 2, 3, 32
    with FusionDefinition("qkv") as fd:
        x = fd.define_tensor([b, -1, 3 * h * d], DataType.BFloat16)
        for k in range(3):
            part = fd.ops.slice(x, [0, 0, k * h * d], [b, x.size(1), (k + 1) * h * d])
            heads = fd.ops.permute(fd.ops.reshape(part, [b, t, h, d]), [0, 2, 1, 3])
            fd.add_output(heads)
    a = random_of(rng, (b, t, 3 * h * d), DataType.BFloat16)
    x = torch_of(torch, a)
    check_against_reference(fd, torch, [x], [a])
    assert schedulers(fd, [a]) == []
    q, k, _ = fd.execute([x])
    assert q.data_ptr() == x.data_ptr() and k.data_ptr() == x[:, :, h * d :].data_ptr()


@pytest.mark.parametrize("rows", [1, 3, 127, 4097])
def test_a_slice_of_row_sums(rng: np.random.Generator, torch: Any, rows: int) -> None:
    with FusionDefinition("sums") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.define_tensor([-1], DataType.Float)
        s = fd.ops.slice(fd.ops.sum(x, [1]), [-(rows // 2) - 1], [END], [2])
        fd.add_output(fd.ops.add(fd.ops.exp(fd.ops.mul(s, 0.01)), y))
    a = random_of(rng, (rows, 300), DataType.Float)
    n = len(range(rows)[-(rows // 2) - 1 :: 2])
    v = random_of(rng, (n,), DataType.Float)
    check_against_reference(fd, torch, [torch_of(torch, a), torch_of(torch, v)], [a, v])
    assert schedulers(fd, [a, v]) == ["reduction", "pointwise"]


def test_slices_of_a_transposed_input(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("transposed") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.neg(fd.ops.slice(x, [1, -50], [-1, END], [3, 2])))
        fd.add_output(fd.ops.exp(fd.ops.slice(x, [0, 0], [x.size(0), 7])))
    a = random_of(rng, (4097, 127), DataType.Float)
    view = torch_of(torch, np.ascontiguousarray(a.T)).t()  # [4097, 127], column-major
    check_against_reference(fd, torch, [view], [a])


@pytest.mark.parametrize("cols", [9, 72, 4097])
def test_slices_that_start_inside_a_vector(rng: np.random.Generator, torch: Any, cols: int) -> None:
    """x[:, 1:] of an f16 input starts 2 bytes into each row: the kernel reads it without
    vector loads (compute-sanitizer reports a misaligned one); x[:, 8:] stays aligned."""
    with FusionDefinition("shifted") as fd:
        x = fd.define_tensor([-1, -1], DataType.Half)
        one = fd.ops.slice(x, [0, 1], [x.size(0), x.size(1)])
        eight = fd.ops.slice(x, [0, 8], [x.size(0), x.size(1)])
        fd.add_output(fd.ops.mul(one, 3.0))
        fd.add_output(fd.ops.neg(eight))
    a = random_of(rng, (33, cols), DataType.Half)
    check_against_reference(fd, torch, [torch_of(torch, a)], [a])


def test_an_empty_slice(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("empty") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.exp(fd.ops.slice(x, [5, 0], [2, x.size(1)])))
    a = random_of(rng, (7, 33), DataType.Float)
    (out,) = fd.execute([torch_of(torch, a)])
    assert tuple(out.shape) == (0, 33)
