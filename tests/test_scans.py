"""Scans (`cumsum`, `cumprod`, `cummax`, `cummin`) on the CPU: torch's semantics in the
reference and the frontend, the scan scheduler's choices and refusals, and both templates run
on the kernel simulator (rows with one thread each, so `kernel.block_scan` is the identity;
the GPU tests run the cooperative scans).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_schedulers import parse_fusion, simulate_exactly

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError
from fuser.transforms.schedulers import propose
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.scan import ScanParams, ScanScheduler

# --------------------------------------------------------------------------------------------
# Semantics: the reference and the frontend's types
# --------------------------------------------------------------------------------------------


def _one(op: str, io: DataType, rank: int = 1, dim: int = -1, **kw: Any) -> FusionDefinition:
    with FusionDefinition(f"{op}_{io.name}") as fd:
        x = fd.define_tensor([-1] * rank, io)
        fd.add_output(getattr(fd.ops, op)(x, dim, **kw))
    return fd


NAN = math.nan


@pytest.mark.parametrize(
    ("op", "dtype", "values", "expected"),
    [
        # torch.cummax/cummin: a NaN is carried to the end of the row
        ("cummax", DataType.Float, [1, NAN, 3, 0], [1, NAN, NAN, NAN]),
        ("cummin", DataType.Float, [1, -2, NAN, -5], [1, -2, NAN, NAN]),
        ("cummax", DataType.Float, [-math.inf, -1, 2, 1], [-math.inf, -1, 2, 2]),
        # inf - inf in a running sum is NaN from there on
        ("cumsum", DataType.Float, [math.inf, 1, -math.inf, 2], [math.inf, math.inf, NAN, NAN]),
        ("cumprod", DataType.Float, [2, -0.5, 0, 3], [2, -1, -0.0, -0.0]),
        # integers count in Int (torch's), which wraps
        ("cumsum", DataType.Int32, [2**31 - 1, 1, 1], [2**31 - 1, 2**31, 2**31 + 1]),
        ("cumprod", DataType.Int32, [65536, 65536, 3], [65536, 2**32, 3 * 2**32]),
        ("cumsum", DataType.Int, [2**63 - 1, 1], [2**63 - 1, -(2**63)]),
        # a sum starts from +0.0 (torch's CUDA scan, measured): a leading -0.0 is +0.0; a
        # product keeps it
        ("cumsum", DataType.Float, [-0.0, -0.0, 1, -1], [0.0, 0.0, 1, 0]),
        ("cumprod", DataType.Float, [-0.0, 2, -1], [-0.0, -0.0, 0.0]),
        ("cummin", DataType.Int, [5, 7, -3, 9], [5, 5, -3, -3]),
        # a Bool sum counts in Int; a Bool maximum is a running "any"
        ("cumsum", DataType.Bool, [True, False, True], [1, 1, 2]),
        ("cummax", DataType.Bool, [False, True, False], [False, True, True]),
    ],
)
def test_the_reference_follows_torch(
    op: str, dtype: DataType, values: list[Any], expected: list[Any]
) -> None:
    fd = _one(op, dtype)
    np_dtype = {
        DataType.Float: np.float32,
        DataType.Int32: np.int32,
        DataType.Int: np.int64,
        DataType.Bool: np.bool_,
    }[dtype]
    (out,) = fd.reference([np.array(values, np_dtype)])
    want = np.array(expected)
    counted = op in ("cumsum", "cumprod") and dtype in (DataType.Bool, DataType.Int32)
    assert out.dtype == (np.int64 if counted else np_dtype)
    np.testing.assert_array_equal(out, want.astype(out.dtype))
    if out.dtype.kind == "f":  # the sign of a zero too (a NaN's is the platform's)
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(out[number]), np.signbit(want[number]))


def test_half_scans_add_in_f32_and_round_once() -> None:
    """bf16 in, bf16 out: the running sum is kept in f32 (torch.compile's choice; eager rounds
    every step), so a long row of small values does not stall at a bf16 step."""
    fd = _one("cumsum", DataType.BFloat16)
    x = np.full(4096, 0.01, ml_dtypes.bfloat16)
    (out,) = fd.reference([x])
    assert out.dtype == ml_dtypes.bfloat16
    exact = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), exact, rtol=2**-8)
    assert "fusion.cumsum %" in str(fd.fusion) and "tensor<?xf32>" in str(fd.fusion)


def test_a_dtype_casts_the_input_first() -> None:
    """torch's `cumsum(x, dim, dtype=)`: the input is cast, then summed in that dtype (here
    without the wrap an Int32 sum would make)."""
    fd = _one("cumsum", DataType.Int32, dtype=DataType.Float)
    (out,) = fd.reference([np.array([2**31 - 1, 2**31 - 1], np.int32)])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2.0**31, 2.0**32])


def test_scans_along_every_dim_and_of_empty_dims() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, (3, 0, 5)).astype(np.float32)
    y = rng.integers(-9, 9, (2, 3, 4)).astype(np.float32)
    for dim in range(-3, 3):
        fd = _one("cumsum", DataType.Float, 3, dim)
        np.testing.assert_array_equal(fd.reference([x])[0], np.cumsum(x, dim))
        np.testing.assert_array_equal(fd.reference([y])[0], np.cumsum(y, dim))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x, s: fd.ops.cumsum(s, 0), "fd.ops.cumsum: argument 'arg' is a 0-dim tensor"),
        (lambda fd, x, s: fd.ops.cumsum(x, 2), "fd.ops.cumsum: argument 'dim' has dim 2, out of"),
        (lambda fd, x, s: fd.ops.cummax(x, [0]), "fd.ops.cummax: argument 'dim' must be an int"),
        (lambda fd, x, s: fd.ops.cummin(x, True), "fd.ops.cummin: argument 'dim' must be an int"),
        (lambda fd, x, s: fd.ops.cumprod(x, 0, dtype="f"), "fd.ops.cumprod: argument 'dtype'"),
    ],
)
def test_bad_calls_are_refused_by_name(call: Callable[..., Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=message), FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        s = fd.define_tensor([], DataType.Float)
        call(fd, x, s)


def test_python_definition_repeats_the_calls() -> None:
    with FusionDefinition("scans") as fd:
        x = fd.define_tensor([-1, -1], DataType.Half)
        fd.add_output(fd.ops.cumsum(x, 1, dtype=DataType.Float))
        fd.add_output(fd.ops.cummin(x, -2))
    text = fd.python_definition()
    assert "fd.ops.cumsum(T0, 1, dtype=DataType.Float)" in text
    assert "fd.ops.cummin(T0, -2)" in text
    scope: dict[str, Any] = {}
    exec(text, scope)
    assert str(scope["fd"].fusion) == str(fd.fusion)


# --------------------------------------------------------------------------------------------
# The scheduler's choices
# --------------------------------------------------------------------------------------------


def _params(fd: FusionDefinition, metas: Sequence[TensorMeta]) -> ScanParams:
    info = FusionInfo(tuple(metas), DeviceInfo())
    scheduler, params = propose(fd.fusion, info)
    assert isinstance(scheduler, ScanScheduler) and isinstance(params, ScanParams)
    return params


@pytest.mark.parametrize(
    ("shape", "block", "width", "unroll"),
    [
        ((8192, 4096), (32, 8, 1), 4, 4),  # many rows: a warp each, no barrier
        ((256, 131072), (1024, 1, 1), 4, 4),  # few long rows: a block each
        ((64, 4096), (256, 1, 1), 4, 4),  # as many threads as a row's vectors need
        ((4097, 5), (2, 128, 1), 1, 4),  # short rows: lanes of one warp each
    ],
)
def test_threads_per_row_fill_the_gpu(
    shape: tuple[int, int], block: tuple[int, int, int], width: int, unroll: int
) -> None:
    p = _params(_one("cumsum", DataType.Float, 2), [TensorMeta.contiguous(shape)])
    assert p.along_rows and p.block == block
    assert (p.vector_width, p.unroll) == (width, unroll)


def test_vectors_need_aligned_contiguous_rows() -> None:
    fd = _one("cumsum", DataType.Float, 2)
    strided = TensorMeta((64, 4096), (8192, 2))
    misaligned = TensorMeta((64, 4096), (4096, 1), alignment=4)
    odd_rows = TensorMeta((64, 4096), (4099, 1))
    for meta in (strided, misaligned, odd_rows):
        assert _params(fd, [meta]).vector_width == 1
    half = _one("cumsum", DataType.BFloat16, 2)
    assert _params(half, [TensorMeta.contiguous((64, 4096))]).vector_width == 8


def test_other_dims_take_the_column_template() -> None:
    p = _params(_one("cummax", DataType.Float, 3, 1), [TensorMeta.contiguous((4, 300, 7))])
    assert not p.along_rows and p.block == (128, 1, 1)


def test_one_scan_a_kernel_and_reductions_apart() -> None:
    """Two scans, or a scan beside a reduction, are segments of their own; a scan's pointwise
    prologue and epilogue stay in its kernel."""
    with FusionDefinition("scan_mix") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        m = fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), x.shape(), [0])
        fd.add_output(fd.ops.cumsum(fd.ops.exp(fd.ops.sub(x, m)), 1))
        fd.add_output(fd.ops.mul(fd.ops.cummax(x, 0), 2.0))
    compiled = fd.compile([np.ones((64, 300), np.float32)], arch="sm_90")
    assert sorted(k.scheduler for k in compiled.kernels) == ["reduction", "scan", "scan"]
    scheduler = ScanScheduler()
    info = FusionInfo((TensorMeta.contiguous((64, 300)),))
    assert "2 scans: a scan kernel computes one" in scheduler.accepts(fd.fusion, info).reason


def test_a_broadcast_scan_result_is_refused() -> None:
    fusion = parse_fusion(
        """fusion.fusion @f(%x: tensor<?x1xf32>, %y: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %s = fusion.cumsum %x along 0 : tensor<?x1xf32>
  %n = fusion.dim %y[1] : tensor<?x?xf32>
  %b = fusion.broadcast_in_dim %s [0, 1] sizes(%n) : tensor<?x1xf32> -> tensor<?x?xf32>
  %z = fusion.add %b, %y : tensor<?x?xf32>
  fusion.output %z : tensor<?x?xf32>
}"""
    )
    info = FusionInfo((TensorMeta.contiguous((8, 1)), TensorMeta.contiguous((8, 5))))
    reason = ScanScheduler().accepts(fusion, info).reason
    assert (
        reason
        == "output #0 has shape [8, 5], not the scan's [8, 1]: a scan kernel writes that shape"
    )


# --------------------------------------------------------------------------------------------
# Both templates on the kernel simulator
# --------------------------------------------------------------------------------------------


def simulate(text: str, inputs: Sequence[np.ndarray], **overrides: Any) -> ScanParams:
    """`simulate_exactly` with the scan scheduler."""
    params = simulate_exactly(text, inputs, ScanScheduler, **overrides)
    assert isinstance(params, ScanParams)
    return params


ROWS = """fusion.fusion @rows(%x: tensor<?x?xf32>, %b: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %bb = fusion.broadcast_in_dim %b [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %a = fusion.abs %x : tensor<?x?xf32>
  %s = fusion.KIND %a along 1 : tensor<?x?xf32>
  %y = fusion.sub %s, %bb : tensor<?x?xf32>
  fusion.output %y, %a : tensor<?x?xf32>, tensor<?x?xf32>
}"""


KINDS = ("cumsum", "cummax", "cummin", "cumprod")
ROW_CASES = [
    *((kind, cols, 1, unroll) for kind in KINDS for cols in (0, 1, 3, 127) for unroll in (1, 4)),
    *((kind, cols, 4, 2) for kind in KINDS for cols in (0, 4, 128)),
    ("cumsum", 4097, 1, 4),  # many tiles carried
    ("cummin", 4096, 4, 2),
]


@pytest.mark.parametrize(("kind", "cols", "width", "unroll"), ROW_CASES)
def test_rows_on_the_simulator(kind: str, cols: int, width: int, unroll: int) -> None:
    """Tiles carried along rows, vectors and unrolled loads, a prologue (`abs`) whose value is
    also an output, an epilogue reading a bias broadcast along rows; one thread a row."""
    rng = np.random.default_rng(cols)
    low, high = (1, 3) if kind == "cumprod" else (-9, 10)
    x = rng.integers(low, high, (3, cols)).astype(np.float32)
    if kind == "cumprod":
        x[:, 20:] = 1  # products of at most 20 factors below 3 stay exact in f32
    b = rng.integers(-9, 10, cols).astype(np.float32)
    simulate(
        ROWS.replace("KIND", kind),
        [x, b],
        block=(1, 4, 1),
        vector_width=width,
        unroll=unroll,
    )


def test_strided_rows_on_the_simulator() -> None:
    """Rows of a transposed view: every access through its strides."""
    rng = np.random.default_rng(1)
    x = rng.integers(-9, 10, (33, 5)).astype(np.float32).T
    b = rng.integers(-9, 10, 33).astype(np.float32)
    p = simulate(ROWS.replace("KIND", "cumsum"), [x, b], block=(1, 2, 1))
    assert p.vector_width == 1


COLUMNS = """fusion.fusion @columns(%x: tensor<?x?x?xi32>) -> (tensor<?x?x?xi32>) {
  %s = fusion.KIND %x along 1 : tensor<?x?x?xi32>
  fusion.output %s : tensor<?x?x?xi32>
}"""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(2, 0, 3), (2, 1, 3), (3, 13, 5), (1, 127, 2)])
def test_columns_on_the_simulator(kind: str, shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-5, 6, shape).astype(np.int32)
    p = simulate(COLUMNS.replace("KIND", kind), [x])
    assert not p.along_rows
