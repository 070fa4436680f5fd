"""`reshape` on the GPU, against the float64 reference.

Kernels never index through a reshape: it is a view between segments (`host.reshape`), moved to
the inputs through pointwise chains (`fuser-hoist-views`), or a copy where no strides give
it. The tests check the values and, where it says so, the kernels. Covered:
- the heads split of a transformer, [b, t, h*d] -> [b, t, h, d] then permuted, f32, f16 and
  bf16, odd sizes (t = 0, 1, 3, 127, 4097): one kernel reading the input through the view;
- the heads merge, permute then reshape into an output: one kernel writes the output in place;
- a reshape of a pointwise chain of inputs before a row sum: one kernel (hoisted);
- a reshape of a reduction's result added to another input: two kernels, values only;
- a transposed (non-contiguous) input: copied first; then the same fusion on contiguous and
  transposed inputs in turn (the program of the contiguous one is not reused for the other);
- a column slice of a wider tensor (strided but viewable) split into heads;
- an inferred extent (-1) on dynamic inputs, a reshaped input returned as an output (a view),
  and a count that does not fit (an InputError before launch);
- run-time extents of the operand kept at their dims (`reshape(x, [x.size(0), x.size(1), h,
  -1])`), one definition over many batches and sequences, contiguous and transposed.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import (
    DTYPES,
    check_against_reference,
    numpy_of,
    random_of,
    schedulers,
    torch_of,
)

from fuser import DataType, FusionDefinition
from fuser.errors import InputError

pytestmark = pytest.mark.gpu


def heads_split(dtype: DataType, b: int, t: int, h: int, d: int) -> FusionDefinition:
    """[b, t, h*d] -> [b, t, h, d] -> [b, h, t, d], scaled, in f32."""
    with FusionDefinition(f"heads_split_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1, h * d], dtype)
        q = fd.ops.permute(fd.ops.reshape(x, [b, t, h, d]), [0, 2, 1, 3])
        fd.add_output(fd.ops.mul(fd.ops.cast(q, DataType.Float), 0.125))
    return fd


@pytest.mark.parametrize("t", [0, 1, 3, 127, 4097])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_heads_split_reads_the_input_through_a_view(
    rng: np.random.Generator, torch: Any, dtype: DataType, t: int
) -> None:
    b, h, d = 2, 3, 64
    fd = heads_split(dtype, b, t, h, d)
    x = random_of(rng, (b, t, h * d), dtype)
    check_against_reference(fd, torch, [torch_of(torch, x)], [x])
    if t:
        assert len(schedulers(fd, [x])) == 1


def test_heads_merge_writes_the_output_in_its_shape(rng: np.random.Generator, torch: Any) -> None:
    """permute then reshape into an output: the permuting kernel writes the output itself."""
    b, h, t, d = 2, 12, 129, 64
    with FusionDefinition("heads_merge") as fd:
        x = fd.define_tensor([b, h, t, d], DataType.BFloat16)
        merged = fd.ops.reshape(fd.ops.permute(x, [0, 2, 1, 3]), [b, t, h * d])
        fd.add_output(merged)
    x = random_of(rng, (b, h, t, d), DataType.BFloat16)
    check_against_reference(fd, torch, [torch_of(torch, x)], [x])
    assert len(schedulers(fd, [x])) == 1
    (out,) = fd.execute([torch_of(torch, x)])
    assert tuple(out.shape) == (b, t, h * d) and out.is_contiguous()


def test_a_reshaped_pointwise_chain_is_one_kernel(rng: np.random.Generator, torch: Any) -> None:
    """sum(reshape(gelu(a + c)), -1): the reshape moves to a and c, one kernel reads both."""
    with FusionDefinition("chain") as fd:
        a = fd.define_tensor([-1, -1], DataType.Float)
        c = fd.define_tensor([-1, -1], DataType.Float)
        g = fd.ops.reshape(fd.ops.gelu(fd.ops.add(a, c)), [-1, 3, 7])
        fd.add_output(fd.ops.sum(g, [2]))
        fd.add_output(g)
    x, y = random_of(rng, (127, 21), DataType.Float), random_of(rng, (127, 21), DataType.Float)
    check_against_reference(fd, torch, [torch_of(torch, x), torch_of(torch, y)], [x, y])
    assert len(schedulers(fd, [x, y])) == 1


def test_a_reshaped_reduction_feeds_another_kernel(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("reduced") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.define_tensor([-1, -1], DataType.Float)
        s = fd.ops.reshape(fd.ops.sum(x, [1]), [-1, 5])
        fd.add_output(fd.ops.add(s, y))
    x, y = random_of(rng, (35, 4097), DataType.Float), random_of(rng, (7, 5), DataType.Float)
    check_against_reference(fd, torch, [torch_of(torch, x), torch_of(torch, y)], [x, y])


def flatten() -> FusionDefinition:
    with FusionDefinition("flatten") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.neg(fd.ops.reshape(x, [-1])))
    return fd


def test_a_transposed_input_is_copied_first(rng: np.random.Generator, torch: Any) -> None:
    """x^T cannot be viewed flat: a copy kernel, then the negation; a contiguous x afterwards
    takes a program without the copy, and the transposed one its own again."""
    fd = flatten()
    a = random_of(rng, (129, 33), DataType.Float)
    transposed = torch_of(torch, a).t()
    contiguous = torch_of(torch, a.T.copy())
    for view in (transposed, contiguous, transposed):
        (out,) = fd.execute([view])
        np.testing.assert_array_equal(numpy_of(torch, out), -a.T.reshape(-1))
    assert len(schedulers(fd, [transposed])) == 2
    assert len(schedulers(fd, [contiguous])) == 1


def test_a_column_slice_is_viewed_in_place(rng: np.random.Generator, torch: Any) -> None:
    """The first 768 columns of a [n, 2304] tensor (a qkv projection's q) split into heads: a
    strided view, no copy."""
    n, h, d = 37, 12, 64
    wide = random_of(rng, (n, 3 * h * d), DataType.BFloat16)
    q = torch_of(torch, wide)[:, : h * d]
    with FusionDefinition("q_heads") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.cast(fd.ops.reshape(x, [n, h, d]), DataType.Float))
    check_against_reference(fd, torch, [q], [wide[:, : h * d]])
    assert len(schedulers(fd, [q])) == 1


@pytest.mark.parametrize("rows", [0, 1, 3, 4097])
def test_an_inferred_extent_on_dynamic_inputs(
    rng: np.random.Generator, torch: Any, rows: int
) -> None:
    with FusionDefinition("inferred") as fd:
        x = fd.define_tensor([-1, -1], DataType.Half)
        r = fd.ops.reshape(x, [-1, 4])
        fd.add_output(fd.ops.add(r, r))
        fd.add_output(r)  # an input's view as an output: returned as a view of it
    x = random_of(rng, (rows, 12), DataType.Half)
    view = torch_of(torch, x)
    check_against_reference(fd, torch, [view], [x])
    if rows:  # the output is a view of the input (as nvFuser aliases it)
        assert fd.execute([view])[1].data_ptr() == view.data_ptr()


def test_a_count_that_does_not_fit_is_an_input_error(torch: Any) -> None:
    with FusionDefinition("misfit") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.neg(fd.ops.reshape(x, [-1, 4])))
    with pytest.raises(InputError, match=r"cannot reshape \[3, 5\] \(15 elements\)"):
        fd.execute([torch.ones(3, 5, device="cuda")])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_run_time_extents_kept_over_many_shapes(
    rng: np.random.Generator, torch: Any, dtype: DataType
) -> None:
    """`reshape(x, [x.size(0), x.size(1), h, -1])` and back through `z.size(0), z.size(1)`:
    one definition for every batch and sequence (0, 1, 3, 127, 4097 tokens), contiguous and
    transposed inputs (copied first), against the reference; the split heads come back as a
    view of a contiguous input, as with static extents."""
    h, d = 3, 64
    with FusionDefinition(f"kept_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1, h * d], dtype)
        heads = fd.ops.reshape(x, [x.size(0), x.size(1), h, -1])
        z = fd.ops.mul(fd.ops.cast(heads, DataType.Float), 0.125)
        fd.add_output(fd.ops.permute(heads, [0, 2, 1, 3]))
        fd.add_output(fd.ops.reshape(z, [z.size(0), z.size(1), -1]))
    for b, t in [(2, 0), (1, 1), (2, 3), (3, 127), (1, 4097)]:
        a = random_of(rng, (b, t, h * d), dtype)
        view = torch_of(torch, a)
        check_against_reference(fd, torch, [view], [a])
        split, merged = fd.execute([view])
        assert tuple(split.shape) == (b, h, t, d) and tuple(merged.shape) == (b, t, h * d)
        if t > 1:
            assert split.data_ptr() == view.data_ptr()  # a view of the caller's tensor
        transposed = torch_of(torch, np.ascontiguousarray(a.transpose(1, 0, 2))).transpose(0, 1)
        check_against_reference(fd, torch, [transposed], [a])
