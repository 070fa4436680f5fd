"""`take_along_axis` and `gather` on the CPU: the frontend's IR and messages, the reference
(numpy's `take_along_axis` at indices counted from the end and clamped as the kernels do), and
the kernels they make (a cross-entropy's target pick loaded at the index, its logsumexp reading
each row once). The GPU results are in tests/gpu/test_take_along_axis_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.special

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError, InputError

F32 = DataType.Float


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.bool_])
def test_the_reference_takes_what_numpy_takes(
    rng: np.random.Generator, k: int, dtype: type
) -> None:
    """Indices in range, in [-n, 0) (from the end) and out of range (clamped); -0.0, inf and
    NaN picked as they are."""
    dt = {
        np.float32: F32,
        np.int32: DataType.Int32,
        np.float16: DataType.Half,
        np.bool_: DataType.Bool,
    }[dtype]
    with FusionDefinition("take") as fd:
        x = fd.define_tensor([-1, -1, -1], dt)
        i = fd.define_tensor([-1, -1, -1], DataType.Int)
        fd.add_output(fd.ops.take_along_axis(x, i, -2))
    a = (rng.standard_normal((3, 7, 5)) * 4).astype(dtype)
    if a.dtype.kind == "f":
        a[0, :3, 0] = [-0.0, np.inf, np.nan]
    index = rng.integers(-10, 10, (3, k, 5))
    index[0, :, 0] = [0, 1, 2][:k]  # the -0.0, inf and NaN picked (one of them for k = 1)
    at = np.clip(np.where(index < 0, index + 7, index), 0, 6)
    expected = np.take_along_axis(a, at, axis=1)
    (got,) = fd.reference([a, index])
    np.testing.assert_array_equal(got, expected)
    assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_gather_reads_the_leading_part_of_its_input(rng: np.random.Generator) -> None:
    with FusionDefinition("gather") as fd:
        x = fd.define_tensor([6, 9], F32)
        i = fd.define_tensor([4, 3], DataType.Int32)
        fd.add_output(fd.ops.gather(x, i, 1))
    assert "fusion.slice %t0 [:4, :] : tensor<6x9xf32> -> tensor<4x9xf32>" in fd.fusion_ir()
    a = rng.standard_normal((6, 9)).astype(np.float32)
    index = rng.integers(0, 9, (4, 3)).astype(np.int32)
    np.testing.assert_array_equal(fd.reference([a, index])[0], np.take_along_axis(a[:4], index, 1))


Bad = Callable[[FusionDefinition, Any, Any], Any]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x, i: fd.ops.take_along_axis(x, x, 1), "'index' must be an Int or Int32"),
        (
            lambda fd, x, i: fd.ops.take_along_axis(x, fd.ops.sum(i, [1]), 1),
            "'index' has rank 1; it needs arg's rank 2",
        ),
        (lambda fd, x, i: fd.ops.take_along_axis(x, i, 2), "'dim' has dim 2, out of range"),
        (
            lambda fd, x, i: fd.ops.take_along_axis(x, fd.define_tensor([3, 1], DataType.Int), 1),
            "'index' has extent 3 on dim 0; it needs exactly arg's 4 there",
        ),
        (
            lambda fd, x, i: fd.ops.gather(x, fd.define_tensor([5, 1], DataType.Int), 1),
            "'index' has extent 5 on dim 0; it needs at most arg's 4 there",
        ),
        (
            lambda fd, x, i: fd.ops.take_along_axis(fd.define_tensor([4, 0], F32), i, 1),
            "'arg' has extent 0 on dim 1; there is nothing to take",
        ),
    ],
)
def test_take_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([4, 6], F32)
        i = fd.define_tensor([4, 1], DataType.Int)
        call(fd, x, i)
    assert "fd.ops." in str(e.value) and message in str(e.value)


def cross_entropy() -> FusionDefinition:
    """logsumexp(x) - x[target] per row, as Thunder's cross-entropy forward has it."""
    with FusionDefinition("ce") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        t = fd.define_tensor([-1, 1], DataType.Int)
        xf = fd.ops.cast(x, F32)
        m = fd.ops.max(xf, [1])
        shifted = fd.ops.sub(xf, fd.ops.broadcast_in_dim(m, [x.size(0), x.size(1)], [0]))
        lse = fd.ops.add(fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1])), m)
        picked = fd.ops.squeeze(fd.ops.cast(fd.ops.take_along_axis(x, t, 1), F32), [1])
        fd.add_output(fd.ops.sub(lse, picked))
    return fd


def test_a_cross_entropy_picks_at_the_index(rng: np.random.Generator) -> None:
    """The target pick is a pointwise kernel loading one element per row at the index; the
    logsumexp kernel reads it once per row."""
    fd = cross_entropy()
    import ml_dtypes

    a = rng.standard_normal((7, 300)).astype(ml_dtypes.bfloat16)
    t = rng.integers(0, 300, (7, 1))
    (loss,) = fd.reference([a, t])
    af = a.astype(np.float64)
    expected = scipy.special.logsumexp(af, 1) - af[np.arange(7), t[:, 0]]
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    pick, lse = fd.compile([a, t], arch="sm_90").kernels
    assert (pick.scheduler, lse.scheduler) == ("pointwise", "persistent")
    assert pick.source.count(".data[") == 3  # the index, x at it, the store


def test_a_wide_cross_entropy_reads_its_row_once(rng: np.random.Generator) -> None:
    """At a 50257-wide vocabulary the looped kernel takes the max and the sum of exp(x - max)
    in one pass over the row (the sum online beside its max)."""
    import ml_dtypes

    fd = cross_entropy()
    a = rng.standard_normal((3, 50257)).astype(ml_dtypes.bfloat16)
    t = rng.integers(0, 50257, (3, 1))
    pick, lse = fd.compile([a, t], arch="sm_90").kernels
    assert (pick.scheduler, lse.scheduler) == ("pointwise", "looped")
    assert lse.source.count("for (int col") == 1  # one pass over the row
    assert lse.source.count("block_reduce<") == 2  # the max and the online sum


def test_run_time_extents_that_differ_are_an_input_error() -> None:
    with FusionDefinition("mismatch") as fd:
        x = fd.define_tensor([-1, -1], F32)
        t = fd.define_tensor([-1, 1], DataType.Int)
        fd.add_output(fd.ops.take_along_axis(x, t, 1))
    a, t = np.ones((3, 4), np.float32), np.zeros((2, 1), np.int64)
    message = r"'fusion.take_along_axis'.*cannot take \[2, 1\] indices from \[3, 4\]: dim 0"
    with pytest.raises(InputError, match=message):
        fd.reference([a, t])
    with pytest.raises(InputError, match=message):
        fd.compile([a, t], arch="sm_90")
    # nothing to take from, even for no indices (the kernels need an element to clamp to)
    empty, none = np.ones((0, 0), np.float32), np.zeros((0, 1), np.int64)
    for run in (lambda: fd.reference([empty, none]), lambda: fd.compile([empty, none], "sm_90")):
        with pytest.raises(InputError, match="cannot take from dim 1 of extent 0"):
            run()
