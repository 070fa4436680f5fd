"""`take_along_axis` and `gather` on the GPU, against the reference: a cross-entropy forward
(logsumexp minus the target's logit: the pick loaded at the index, then the logsumexp) in f32 and
bf16 over vocabulary-wide and odd rows; k indices per row in f16 with negative (from the end) and
out-of-range ones (clamped, so no kernel reads outside the input: compute-sanitizer runs these);
a transposed input; Int32 indices through `gather`.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import check_against_reference, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition

pytestmark = pytest.mark.gpu


def cross_entropy(dtype: DataType) -> FusionDefinition:
    with FusionDefinition(f"ce_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        t = fd.define_tensor([-1, 1], DataType.Int)
        xf = fd.ops.cast(x, DataType.Float)
        m = fd.ops.max(xf, [1])
        shifted = fd.ops.sub(xf, fd.ops.broadcast_in_dim(m, [x.size(0), x.size(1)], [0]))
        lse = fd.ops.add(fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1])), m)
        picked = fd.ops.squeeze(fd.ops.cast(fd.ops.take_along_axis(x, t, 1), DataType.Float), [1])
        fd.add_output(fd.ops.sub(lse, picked))
    return fd


@pytest.mark.parametrize(("rows", "vocab"), [(1, 50257), (3, 50257), (127, 50257), (4097, 127)])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_a_cross_entropy_forward(
    rng: np.random.Generator, torch: Any, dtype: DataType, rows: int, vocab: int
) -> None:
    fd = cross_entropy(dtype)
    x = random_of(rng, (rows, vocab), dtype)
    t = rng.integers(0, vocab, (rows, 1)).astype(np.int64)
    check_against_reference(fd, torch, [torch_of(torch, x), torch_of(torch, t)], [x, t])
    # the target pick loaded at its index, then the logsumexp reading each row once
    assert schedulers(fd, [x, t]) == ["pointwise", "looped" if vocab > 50000 else "persistent"]


@pytest.mark.parametrize("k", [1, 3])
def test_k_indices_per_row_from_the_end_and_clamped(
    rng: np.random.Generator, torch: Any, k: int
) -> None:
    with FusionDefinition(f"take_{k}") as fd:
        x = fd.define_tensor([-1, -1, -1], DataType.Half)
        i = fd.define_tensor([-1, -1, -1], DataType.Int)
        fd.add_output(fd.ops.take_along_axis(x, i, 1))
    x = random_of(rng, (5, 127, 33), DataType.Half)
    index = rng.integers(-200, 150, (5, k, 33)).astype(np.int64)  # many out of range
    check_against_reference(fd, torch, [torch_of(torch, x), torch_of(torch, index)], [x, index])
    (got,) = fd.execute([torch_of(torch, x), torch_of(torch, index)])
    expected = np.take_along_axis(x, np.clip(np.where(index < 0, index + 127, index), 0, 126), 1)
    np.testing.assert_array_equal(got.cpu().numpy(), expected)


def test_a_transposed_input(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("take_t") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        i = fd.define_tensor([-1, 2], DataType.Int)
        fd.add_output(fd.ops.take_along_axis(x, i, 1))
    a = random_of(rng, (300, 4097), DataType.Float)
    view = torch_of(torch, np.ascontiguousarray(a.T)).t()  # [300, 4097], column-major
    index = rng.integers(0, 4097, (300, 2)).astype(np.int64)
    check_against_reference(fd, torch, [view, torch_of(torch, index)], [a, index])


def test_gather_with_int32_indices(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("gather") as fd:
        x = fd.define_tensor([64, 9], DataType.BFloat16)
        i = fd.define_tensor([17, 4], DataType.Int32)
        fd.add_output(fd.ops.gather(x, i, 1))
    a = random_of(rng, (64, 9), DataType.BFloat16)
    index = rng.integers(0, 9, (17, 4)).astype(np.int32)
    check_against_reference(fd, torch, [torch_of(torch, a), torch_of(torch, index)], [a, index])
