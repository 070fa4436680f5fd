"""`topk` and `argsort` on the CPU: the order the reference gives (torch's at NaN and signed
zeros, ties by index), the frontend's types and refusals, the sort scheduler's choices and
refusals, and its kernel on the simulator with one thread a row (`kernel.block_topk` of one
thread; the GPU tests run the cooperative selection).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_schedulers import simulate_exactly

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError, FuserError
from fuser.transforms.schedulers import propose
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.sort import SortParams, SortScheduler

NAN, INF = math.nan, math.inf


def _topk(io: DataType, k: int, dim: int = -1, largest: bool = True, rank: int = 1) -> Any:
    with FusionDefinition(f"topk_{io.name}") as fd:
        x = fd.define_tensor([-1] * rank, io)
        values, indices = fd.ops.topk(x, k, dim, largest)
        fd.add_output(values)
        fd.add_output(indices)
    return fd


def _argsort(io: DataType, dim: int = -1, descending: bool = False, rank: int = 1) -> Any:
    with FusionDefinition(f"argsort_{io.name}") as fd:
        x = fd.define_tensor([-1] * rank, io)
        fd.add_output(fd.ops.argsort(x, dim, descending))
    return fd


# --------------------------------------------------------------------------------------------
# The order
# --------------------------------------------------------------------------------------------


def test_nan_is_the_largest_and_minus_zero_below_zero_in_topk() -> None:
    """torch.topk's radix order: NaN above +inf, -0.0 below +0.0; equal values by index."""
    x = np.array([1.0, NAN, -INF, 0.0, -0.0, INF, 1.0, NAN], np.float32)
    values, indices = _topk(DataType.Float, 8).reference([x])
    np.testing.assert_array_equal(indices, [1, 7, 5, 0, 6, 3, 4, 2])
    np.testing.assert_array_equal(np.signbit(values[5:7]), [False, True])
    # argsort compares values, as torch.sort: -0.0 and +0.0 are equal, in index order
    (order,) = _argsort(DataType.Float).reference([x])
    np.testing.assert_array_equal(order, [2, 3, 4, 0, 6, 5, 1, 7])
    (down,) = _argsort(DataType.Float, descending=True).reference([x])
    np.testing.assert_array_equal(down, [1, 7, 5, 0, 6, 3, 4, 2])


def test_the_smallest_and_ties_by_index() -> None:
    x = np.array([3, 1, 2, 1, 3, 1], np.int32)
    values, indices = _topk(DataType.Int32, 4, largest=False).reference([x])
    np.testing.assert_array_equal(values, [1, 1, 1, 2])
    np.testing.assert_array_equal(indices, [1, 3, 5, 2])
    values, indices = _topk(DataType.Int32, 3).reference([x])
    np.testing.assert_array_equal(indices, [0, 4, 2])


def test_integer_extremes_and_k_of_zero() -> None:
    x = np.array([0, -(2**63), 2**63 - 1, -1], np.int64)
    values, indices = _topk(DataType.Int, 4).reference([x])
    np.testing.assert_array_equal(values, [2**63 - 1, 0, -1, -(2**63)])
    values, indices = _topk(DataType.Int, 0).reference([x])
    assert values.shape == (0,) and indices.dtype == np.int64


def test_half_values_come_back_in_their_dtype() -> None:
    x = np.array([0.5, -2.0, 3.0], ml_dtypes.bfloat16)
    values, indices = _topk(DataType.BFloat16, 2).reference([x])
    assert values.dtype == ml_dtypes.bfloat16 and indices.dtype == np.int64
    np.testing.assert_array_equal(values.astype(np.float32), [3.0, 0.5])


def test_along_another_dim_through_permutes() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4, 5)).astype(np.float32)
    fd = _topk(DataType.Float, 3, 0, rank=3)
    values, indices = fd.reference([x])
    want = np.argsort(-x, axis=0, kind="stable")[:3]
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want, 0))
    assert "fusion.permute" in str(fd.fusion)
    (order,) = _argsort(DataType.Float, 1, rank=3).reference([x])
    np.testing.assert_array_equal(order, np.argsort(x, axis=1, kind="stable"))


def test_python_definition_repeats_the_calls() -> None:
    with FusionDefinition("sorts") as fd:
        x = fd.define_tensor([-1, -1], DataType.Half)
        values, _ = fd.ops.topk(x, 5, 0, largest=False)
        fd.add_output(values)
        fd.add_output(fd.ops.argsort(x, descending=True))
    text = fd.python_definition()
    assert "fd.ops.topk(T0, 5, 0, largest=False)" in text
    assert "fd.ops.argsort(T0, descending=True)" in text
    scope: dict[str, Any] = {}
    exec(text, scope)
    assert str(scope["fd"].fusion) == str(fd.fusion)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x, b: fd.ops.topk(x, 9), "fd.ops.topk: argument 'k' (9) is more than"),
        (lambda fd, x, b: fd.ops.topk(x, -1), "fd.ops.topk: argument 'k' is -1"),
        (lambda fd, x, b: fd.ops.topk(x, 1.5), "fd.ops.topk: argument 'k' must be an int"),
        (lambda fd, x, b: fd.ops.topk(b, 1), "fd.ops.topk: argument 'arg' is Bool"),
        (lambda fd, x, b: fd.ops.topk(x, 1, 2), "fd.ops.topk: argument 'dim' has dim 2"),
        (lambda fd, x, b: fd.ops.argsort(x, [0]), "fd.ops.argsort: argument 'dim' must be an"),
        (lambda fd, x, b: fd.ops.argsort(x, 0, 1), "fd.ops.argsort: argument 'descending'"),
    ],
)
def test_bad_calls_are_refused_by_name(call: Callable[..., Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=re.escape(message)), FusionDefinition() as fd:
        x = fd.define_tensor([-1, 8], DataType.Float)
        b = fd.define_tensor([-1], DataType.Bool)
        call(fd, x, b)


def test_k_over_a_dynamic_extent_is_refused_at_run_time() -> None:
    fd = _topk(DataType.Float, 5)
    with pytest.raises(FuserError, match="k \\(5\\) is more than the extent 3 of dim 0"):
        fd.compile([np.ones(3, np.float32)], arch="sm_90")


# --------------------------------------------------------------------------------------------
# The scheduler
# --------------------------------------------------------------------------------------------


def _params(fd: Any, metas: Sequence[TensorMeta]) -> SortParams:
    scheduler, params = propose(fd.fusion, FusionInfo(tuple(metas), DeviceInfo()))
    assert isinstance(scheduler, SortScheduler) and isinstance(params, SortParams)
    return params


@pytest.mark.parametrize(
    ("n", "k", "block", "elements", "width"),
    [
        (32768, 50, (1024, 1, 1), 32, 64),
        (4096, 50, (256, 1, 1), 16, 64),
        (100, 7, (32, 1, 1), 4, 8),
        (5, 5, (32, 1, 1), 1, 8),
    ],
)
def test_a_block_holds_a_row(
    n: int, k: int, block: tuple[int, int, int], elements: int, width: int
) -> None:
    p = _params(_topk(DataType.Float, k, rank=2), [TensorMeta.contiguous((64, n))])
    assert (p.block, p.elements, p.width) == (block, elements, width)


def test_argsort_sorts_the_whole_row_in_shared_memory() -> None:
    p = _params(_argsort(DataType.Float, rank=2), [TensorMeta.contiguous((8, 3000))])
    assert p.width == 4096 and p.block == (256, 1, 1)


@pytest.mark.parametrize(
    ("fd", "shape", "reason"),
    [
        (
            _topk(DataType.Float, 50, rank=2),
            (4, 40000),
            "rows of 40000 elements are longer than the 32768 a sort kernel holds",
        ),
        (
            _argsort(DataType.Double, rank=2),
            (4, 20000),
            "a sort 32768 wide (the row, or k, rounded up to a power of two) takes 395264 bytes",
        ),
    ],
)
def test_rows_it_cannot_hold_are_refused(fd: Any, shape: tuple[int, int], reason: str) -> None:
    info = FusionInfo((TensorMeta.contiguous(shape),))
    assert reason in SortScheduler().accepts(fd.fusion, info).reason
    with pytest.raises(FuserError, match="no scheduler accepts"):
        fd.compile(
            [np.ones(shape, np.float32 if "topk" in fd.fusion.sym_name.data else np.float64)],
            arch="sm_90",
        )


def test_two_sorts_are_two_kernels() -> None:
    with FusionDefinition("two_sorts") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        values, _ = fd.ops.topk(fd.ops.exp(x), 3)
        fd.add_output(fd.ops.mul(values, 2.0))
        fd.add_output(fd.ops.argsort(x))
    compiled = fd.compile([np.ones((16, 300), np.float32)], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["sort", "sort"]


# --------------------------------------------------------------------------------------------
# The kernel on the simulator
# --------------------------------------------------------------------------------------------


def simulate(text: str, inputs: Sequence[np.ndarray], **overrides: Any) -> SortParams:
    """`simulate_exactly` with the sort scheduler."""
    params = simulate_exactly(text, inputs, SortScheduler, **overrides)
    assert isinstance(params, SortParams)
    return params


TOPK = """fusion.fusion @topk(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %s: tensor<?x1xf32>)
    -> (tensor<?x3xf32>, tensor<?x3xi64>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %wb = fusion.broadcast_in_dim %w [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %p = fusion.mul %x, %wb : tensor<?x?xf32>
  %v, %i = fusion.topk %p along 1 k(3) largest : tensor<?x?xf32> -> tensor<?x3xf32>, tensor<?x3xi64>
  %sb = fusion.broadcast_in_dim %s [0, 1] : tensor<?x1xf32> -> tensor<?x3xf32>
  %y = fusion.add %v, %sb : tensor<?x3xf32>
  fusion.output %y, %i : tensor<?x3xf32>, tensor<?x3xi64>
}"""


@pytest.mark.parametrize("n", [3, 4, 127])
def test_topk_on_the_simulator(n: int) -> None:
    """A prologue reading a weight broadcast along rows, the values shifted by a per-row
    input broadcast along the k results; a strided input too."""
    rng = np.random.default_rng(n)
    x = rng.integers(-20, 20, (5, n)).astype(np.float32)
    w = rng.integers(1, 4, n).astype(np.float32)
    s = rng.integers(-9, 9, (5, 1)).astype(np.float32)
    simulate(TOPK, [x, w, s], block=(1, 1, 1), elements=n)
    strided = rng.integers(-20, 20, (n, 5)).astype(np.float32).T
    simulate(TOPK, [strided, w, s], block=(1, 1, 1), elements=n)


ARGSORT = """fusion.fusion @argsort(%x: tensor<?x?xi32>) -> (tensor<?x?xi64>) {
  %i = fusion.argsort %x along 1 descending : tensor<?x?xi32> -> tensor<?x?xi64>
  fusion.output %i : tensor<?x?xi64>
}"""


@pytest.mark.parametrize("n", [0, 1, 33])
def test_argsort_on_the_simulator(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(-3, 3, (4, n)).astype(np.int32)
    simulate(ARGSORT, [x], block=(1, 1, 1), elements=max(n, 1))
