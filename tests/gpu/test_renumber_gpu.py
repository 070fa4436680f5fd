"""`permute`, `squeeze`, `broadcast` and `expand` on the GPU, against the float64 reference.

Kernels index their inputs through the ops that renumber dims, so none of these copies: the
tests check the values, and where it says so, which scheduler read through the op. Covered:
- gelu(x^T + b) with x permuted in the fusion (the transpose scheduler where both dims are a
  tile long), f32, f16 and bf16, odd sizes (0, 1, 3, 127, 4097), and a non-contiguous x (every
  other column of a wider tensor; values only);
- a heads permute [b, s, h, d] -> [b, h, s, d] of a squeezed [b, s, 1, h, d] input, in and out
  of bf16 (the pointwise scheduler);
- a permute of a permuted torch view (the two cancel: the pointwise scheduler);
- sums over either dim and a softmax over a permuted input (values only);
- `broadcast` and `expand` of a vector against a non-square matrix, along each axis;
- a permute feeding an output directly and one feeding a matmul (a transpose kernel writes the
  permuted tensor, which the matmul kernel reads), and a permute of a matmul result.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gpu_helpers import (
    DTYPES,
    assert_close,
    check_against_reference,
    numpy_of,
    random_of,
    schedulers,
    torch_of,
)

from fuser import DataType, FusionDefinition

pytestmark = pytest.mark.gpu


def gelu_of_permuted(dtype: DataType) -> FusionDefinition:
    """gelu(x^T + b): x [h, n] permuted to [n, h] in the fusion, b [h] along the rows."""
    with FusionDefinition(f"gelu_of_permuted_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        b = fd.define_tensor([-1], dtype)
        xt = fd.ops.permute(x, [1, 0])
        bb = fd.ops.broadcast_in_dim(b, shape=xt.shape(), broadcast_dims=[1])
        s = fd.ops.add(fd.ops.cast(xt, DataType.Float), fd.ops.cast(bb, DataType.Float))
        fd.add_output(fd.ops.cast(fd.ops.gelu(s, approximate="tanh"), dtype))
    return fd


@pytest.mark.parametrize(
    "shape",
    [(0, 5), (1, 1), (3, 127), (127, 4097), (4097, 33), (1000, 1000)],
    ids=lambda s: f"{s[0]}x{s[1]}",
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_gelu_of_a_permuted_input(
    rng: np.random.Generator, torch: Any, dtype: DataType, shape: tuple[int, int]
) -> None:
    h, n = shape
    fd = gelu_of_permuted(dtype)
    x, b = random_of(rng, (h, n), dtype), random_of(rng, (h,), dtype)
    check_against_reference(fd, torch, [torch_of(torch, x), torch_of(torch, b)], [x, b])
    if h >= 32 and n >= 32:
        assert schedulers(fd, [x, b]) == ["transpose"]


def test_gelu_of_a_permuted_non_contiguous_input(rng: np.random.Generator, torch: Any) -> None:
    """x is every other column of a wider tensor: strides (2 n, 2)."""
    fd = gelu_of_permuted(DataType.Float)
    wide = random_of(rng, (300, 2 * 257), DataType.Float)
    b = random_of(rng, (300,), DataType.Float)
    view = torch_of(torch, wide)[:, ::2]
    check_against_reference(fd, torch, [view, torch_of(torch, b)], [wide[:, ::2].copy(), b])


def heads(dtype: DataType) -> FusionDefinition:
    """relu of [b, s, 1, h, d] squeezed and permuted to [b, h, s, d]."""
    with FusionDefinition(f"heads_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1, 1, -1, -1], dtype)
        p = fd.ops.permute(fd.ops.squeeze(x, [2]), [0, 2, 1, 3])
        fd.add_output(fd.ops.cast(fd.ops.relu(fd.ops.cast(p, DataType.Float)), dtype))
    return fd


@pytest.mark.parametrize("shape", [(2, 127, 3, 64), (1, 5, 16, 3), (3, 0, 2, 8)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_heads_permute_of_a_squeezed_input(
    rng: np.random.Generator, torch: Any, dtype: DataType, shape: tuple[int, int, int, int]
) -> None:
    b, s, h, d = shape
    x = random_of(rng, (b, s, 1, h, d), dtype)
    fd = heads(dtype)
    check_against_reference(fd, torch, [torch_of(torch, x)], [x])
    if x.size:
        assert schedulers(fd, [x]) == ["pointwise"]


def test_permute_of_a_permuted_view_reads_row_major(rng: np.random.Generator, torch: Any) -> None:
    """A torch view x.t() permuted back in the fusion: the kernel reads x in its own order."""
    with FusionDefinition("undo") as fd:
        t = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.neg(fd.ops.permute(t, [1, 0])))
    x = random_of(rng, (129, 4097), DataType.Float)
    view = torch_of(torch, x).t()
    check_against_reference(fd, torch, [view], [np.ascontiguousarray(x.T)])
    assert schedulers(fd, [view]) == ["pointwise"]


@pytest.mark.parametrize("dims", [[0], [1]], ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (3, 127), (4097, 33), (64, 8192)], ids=str)
def test_sum_of_a_permuted_input(
    rng: np.random.Generator, torch: Any, shape: tuple[int, int], dims: list[int]
) -> None:
    """One dim of x^T summed (all of them would hide a permute the kernel ignored)."""
    with FusionDefinition(f"sum_t_{dims[0]}") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.permute(x, [1, 0]), dims))
    a = random_of(rng, shape, DataType.Float)
    check_against_reference(fd, torch, [torch_of(torch, a)], [a])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(3, 127), (1024, 1000), (33, 4097)], ids=str)
def test_softmax_of_a_permuted_input(
    rng: np.random.Generator, torch: Any, dtype: DataType, shape: tuple[int, int]
) -> None:
    with FusionDefinition(f"softmax_t_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        xt = fd.ops.cast(fd.ops.permute(x, [1, 0]), DataType.Float)
        m = fd.ops.max(xt, [1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(xt, fd.ops.expand(m, xt.shape())))
        s = fd.ops.sum(e, [1], keepdim=True)
        fd.add_output(fd.ops.cast(fd.ops.div(e, fd.ops.expand(s, xt.shape())), dtype))
    a = random_of(rng, shape, dtype)
    check_against_reference(fd, torch, [torch_of(torch, a)], [a])


Build = Callable[[FusionDefinition, Any, Any], Any]


@pytest.mark.parametrize(
    ("build", "axis"),
    [
        (lambda fd, m, v: fd.ops.expand(fd.ops.broadcast(v, [True, False]), m.shape()), 1),
        (lambda fd, m, v: fd.ops.expand(fd.ops.broadcast(v, [False, True]), m.shape()), 0),
        (lambda fd, m, v: fd.ops.broadcast_in_dim(v, m.shape(), [0]), 0),
    ],
    ids=["along_rows", "along_columns", "broadcast_in_dim"],
)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (127, 4097), (4097, 33)], ids=str)
def test_broadcast_and_expand_of_a_vector(
    rng: np.random.Generator, torch: Any, build: Build, axis: int, shape: tuple[int, int]
) -> None:
    """m * v with v (the length of m's dim `axis`) broadcast along the other dim."""
    with FusionDefinition("bcast") as fd:
        m = fd.define_tensor([-1, -1], DataType.BFloat16)
        v = fd.define_tensor([-1], DataType.BFloat16)
        s = fd.ops.mul(fd.ops.cast(m, DataType.Float), fd.ops.cast(build(fd, m, v), DataType.Float))
        fd.add_output(fd.ops.cast(s, DataType.BFloat16))
    bf16 = DataType.BFloat16
    a, b = random_of(rng, shape, bf16), random_of(rng, shape[axis:][:1], bf16)
    check_against_reference(fd, torch, [torch_of(torch, a), torch_of(torch, b)], [a, b])


def test_a_permute_as_an_output_and_into_a_matmul(rng: np.random.Generator, torch: Any) -> None:
    """A permuted input returned as it is (written contiguous, in the permuted shape), and
    the same permute as a matmul operand (materialized first: the matmul kernel reads its
    operands as they are in memory)."""
    with FusionDefinition("perm_out") as fd:
        a = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        bt = fd.ops.permute(b, [1, 0])
        fd.add_output(bt)
        fd.add_output(fd.ops.matmul(a, bt))
    bf16 = DataType.BFloat16
    x, y = random_of(rng, (64, 128), bf16), random_of(rng, (96, 128), bf16)
    views = [torch_of(torch, x), torch_of(torch, y)]
    outs = fd.execute(views)
    refs = fd.reference([x, y], compute_dtype=np.float64)
    np.testing.assert_array_equal(numpy_of(torch, outs[0]), np.ascontiguousarray(y.T))
    assert_close(numpy_of(torch, outs[1]), refs[1], "matmul", (2e-2, 2e-2))
    assert schedulers(fd, views) == ["transpose", "matmul"]


@pytest.mark.parametrize("shape", [(2, 1, 2), (64, 32, 48), (127, 64, 129)], ids=str)
def test_a_permute_of_a_matmul_result(
    rng: np.random.Generator, torch: Any, shape: tuple[int, int, int]
) -> None:
    """The matmul kernel writes the product as it is; a kernel of its own transposes it (the
    differential fuzzer's find: [2, 1] x [1, 2] came out untransposed)."""
    m, k, n = shape
    with FusionDefinition("mm_t") as fd:
        a = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.permute(fd.ops.matmul(a, b), [1, 0]))
    x, y = random_of(rng, (m, k), DataType.BFloat16), random_of(rng, (k, n), DataType.BFloat16)
    (out,) = fd.execute([torch_of(torch, x), torch_of(torch, y)])
    (ref,) = fd.reference([x, y], compute_dtype=np.float64)
    assert_close(numpy_of(torch, out), ref, "matmul^T", (2e-2, 2e-2))
