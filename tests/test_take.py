"""`index_select`, `select` and `embedding_fwd` on the CPU: one dialect op, `fusion.take`
(numpy's `take`, a negative index counting from the end, others clamped). Checked here: the
reference against numpy, torch's `max_norm` renormalization, the kernels the takes make (one
pointwise kernel loading at the index, vectorized along a row, element by element along a taken
innermost dim; a second kernel after a reduction), and the messages. The GPU results are in
tests/gpu/test_take_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from definitions import embedding, taken_through_computations

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError, InputError

F32 = DataType.Float


def taken(a: np.ndarray, index: Any, axis: int) -> np.ndarray:
    """numpy's take at `index` as fuser reads it: negative counts from the end, then clamped."""
    n = a.shape[axis]
    at = np.asarray(index, np.int64)
    return np.take(a, np.clip(np.where(at < 0, at + n, at), 0, n - 1), axis=axis)


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.bool_], ids=str
)
def test_the_reference_takes_what_numpy_takes(rng: np.random.Generator, dtype: Any) -> None:
    """Indices in range, negative (from the end) and past either end (clamped)."""
    dt = {
        np.float32: F32,
        np.float16: DataType.Half,
        ml_dtypes.bfloat16: DataType.BFloat16,
        np.int32: DataType.Int32,
        np.bool_: DataType.Bool,
    }[dtype]
    with FusionDefinition("takes") as fd:
        x = fd.define_tensor([-1, -1, -1], dt)
        i = fd.define_tensor([-1], DataType.Int32)
        s = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.index_select(x, i, -1))
        fd.add_output(fd.ops.select(x, s, 1))
        fd.add_output(fd.ops.select(x, -2, 0))
    a = (rng.standard_normal((3, 7, 5)) * 4).astype(dtype)
    index = np.array([0, 4, -1, -5, 5, -6, 40, -40, 2], np.int32)
    for position in (3, -7, 9, -9):
        got = fd.reference([a, index, position])
        expected = [taken(a, index, 2), taken(a, position, 1), a[1]]
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g, e)


def test_embedding_rows_of_any_index_shape(rng: np.random.Generator) -> None:
    w = rng.standard_normal((11, 6)).astype(np.float32)
    ids = rng.integers(-15, 15, (4, 3, 2))
    fd = embedding(F32, ids_rank=3)
    (got,) = fd.reference([ids, w])
    assert got.shape == (4, 3, 2, 6)
    np.testing.assert_array_equal(got, taken(w, ids, 0))
    in_range = ids % 11
    np.testing.assert_array_equal(fd.reference([in_range, w])[0], w[in_range])


@pytest.mark.parametrize("norm_type", [None, 1.0, 3.0, float("inf"), 0.0])
def test_max_norm_scales_rows_as_torch_renormalizes(
    rng: np.random.Generator, norm_type: float | None
) -> None:
    """A row whose p-norm exceeds max_norm is scaled by max_norm / (norm + 1e-7), others kept:
    torch's `embedding_renorm_`. A second kernel computes the norms."""
    w = (rng.standard_normal((20, 9)) * rng.uniform(0.1, 2.0, (20, 1))).astype(np.float32)
    w[3, 4] = 0.0  # a zero (p = 0 counts the others)
    ids = rng.integers(0, 20, (7,))
    rows = w[ids].astype(np.float64)
    p = 2.0 if norm_type is None else norm_type
    norms = np.linalg.norm(rows, ord=p, axis=1, keepdims=True) if p else (rows != 0).sum(1)[:, None]
    limit = float(np.median(norms))  # some rows above, some not
    fd = embedding(F32, ids_rank=1, max_norm=limit, norm_type=norm_type)
    (got,) = fd.reference([ids, w])
    expected = np.where(norms > limit, rows * (limit / (norms + 1e-7)), rows)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    kernels = fd.compile([ids, w], arch="sm_90").kernels
    assert [k.scheduler for k in kernels] == ["pointwise", "persistent"]


def _params(fd: FusionDefinition, inputs: list[Any]) -> Any:
    (k,) = fd.compile(inputs, arch="sm_90").kernels
    assert k.scheduler == "pointwise"
    return k.heuristics


def test_an_embedding_is_one_pointwise_kernel_loading_rows_as_vectors(
    rng: np.random.Generator,
) -> None:
    fd = embedding(DataType.BFloat16)
    w = rng.standard_normal((1000, 256)).astype(ml_dtypes.bfloat16)
    ids = rng.integers(0, 1000, (4, 33))
    assert _params(fd, [ids, w]).vector_width == 8
    (got,) = fd.reference([ids, w])
    np.testing.assert_array_equal(got, w[ids])


def test_a_take_along_the_innermost_dim_loads_element_by_element(
    rng: np.random.Generator,
) -> None:
    with FusionDefinition("inner") as fd:
        x = fd.define_tensor([-1, -1], F32)
        i = fd.define_tensor([-1], DataType.Int)
        fd.add_output(fd.ops.index_select(x, i, 1))
    a = rng.standard_normal((8, 64)).astype(np.float32)
    assert _params(fd, [a, rng.integers(0, 64, (32,))]).vector_width == 1


def test_takes_fuse_with_what_they_read_and_what_reads_them(rng: np.random.Generator) -> None:
    fd = taken_through_computations(F32)
    w = rng.standard_normal((10, 16)).astype(np.float32)
    i = rng.integers(-12, 12, (6,)).astype(np.int32)
    j = rng.integers(-8, 8, (6,))
    rows, picked = fd.reference([w, i, j, -3])
    expected = taken(np.exp(w.astype(np.float64)), i + 1, 0) + taken(w, taken(i, j, 0), 0)
    np.testing.assert_allclose(rows, np.pad(expected, [(0, 0), (2, 1)]), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(picked, w[7])
    # one kernel for the padded rows, one for the selected row (no broadcast relates them)
    assert len(fd.compile([w, i, j, -3], arch="sm_90").kernels) == 2


def test_a_take_of_a_reduction_and_a_reduction_of_a_take_are_two_kernels(
    rng: np.random.Generator,
) -> None:
    with FusionDefinition("reduced") as fd:
        x = fd.define_tensor([-1, -1], F32)
        i = fd.define_tensor([-1], DataType.Int)
        fd.add_output(fd.ops.sum(fd.ops.index_select(x, i, 0), [1]))
        fd.add_output(fd.ops.index_select(fd.ops.sum(x, [1]), i, 0))
    a = rng.standard_normal((9, 300)).astype(np.float32)
    i = rng.integers(0, 9, (5,))
    got = fd.reference([a, i])
    np.testing.assert_allclose(got[0], a[i].sum(1), rtol=1e-5)
    np.testing.assert_allclose(got[1], a.sum(1)[i], rtol=1e-5)
    assert len(fd.compile([a, i], arch="sm_90").kernels) >= 2


def test_taking_from_an_empty_dim_is_an_input_error() -> None:
    fd = embedding(F32, ids_rank=1)
    ids, empty = np.zeros((3,), np.int64), np.zeros((0, 4), np.float32)
    message = r"'fusion.take'.*cannot take \[3\] indices from dim 0 of extent 0"
    with pytest.raises(InputError, match=message):
        fd.reference([ids, empty])
    with pytest.raises(InputError, match=message):
        fd.compile([ids, empty], arch="sm_90")
    (got,) = fd.reference([np.zeros((0,), np.int64), empty])  # no indices: nothing to read
    assert got.shape == (0, 4)


Bad = Callable[[FusionDefinition, Any, Any], Any]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x, i: fd.ops.index_select(x, x, 0), "'index' must be an Int or Int32"),
        (
            lambda fd, x, i: fd.ops.index_select(x, fd.define_tensor([2, 2], DataType.Int), 0),
            "'index' has rank 2; it must be 1-D",
        ),
        (lambda fd, x, i: fd.ops.index_select(x, i, 2), "'dim' has dim 2, out of range"),
        (lambda fd, x, i: fd.ops.select(x, 6, 1), "index 6 is out of range for dim 1 of extent 6"),
        (lambda fd, x, i: fd.ops.select(x, -5, 0), "index -5 is out of range for dim 0"),
        (lambda fd, x, i: fd.ops.select(x, i, 0), "'index' must be a Scalar or an int"),
        (lambda fd, x, i: fd.ops.select(x, 1.5, 0), "'index' must be an int, got 1.5"),
        (
            lambda fd, x, i: fd.ops.select(x, fd.define_scalar(DataType.Double), 0),
            "'index' must be an Int or Int32 Scalar, got DataType.Double",
        ),
        (lambda fd, x, i: fd.ops.embedding_fwd(x, x), "'input' must be an Int or Int32"),
        (lambda fd, x, i: fd.ops.embedding_fwd(i, i), "'weight' has rank 1; it must be 2-D"),
        (
            lambda fd, x, i: fd.ops.embedding_fwd(i, fd.define_tensor([4, 6], DataType.Int)),
            "'weight' must be a floating-point tensor",
        ),
        (
            lambda fd, x, i: fd.ops.embedding_fwd(i, x, padding_idx=4),
            "padding_idx 4 must be within num_embeddings (4)",
        ),
        (
            lambda fd, x, i: fd.ops.embedding_fwd(i, x, None, 1.0, -1.0),
            "'norm_type' is -1.0; a p-norm needs p >= 0",
        ),
        (
            lambda fd, x, i: fd.ops.embedding_fwd(i, x, sparse=1),
            "'sparse' must be a bool, a Bool Scalar or None, got 1",
        ),
        (
            lambda fd, x, i: fd.ops.embedding_fwd(i, x, max_norm=x),
            "'max_norm' must be a number or a Scalar",
        ),
    ],
)
def test_take_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([4, 6], F32)
        i = fd.define_tensor([3], DataType.Int)
        call(fd, x, i)
    assert "fd.ops." in str(e.value) and message in str(e.value)


def test_the_embedding_options_torch_uses_for_gradients_are_accepted(
    rng: np.random.Generator,
) -> None:
    """padding_idx, scale_grad_by_freq and sparse change only the backward: the forward's rows
    are the same (the padding row is read as it is, as torch reads it)."""
    with FusionDefinition("options") as fd:
        ids = fd.define_tensor([-1], DataType.Int)
        w = fd.define_tensor([5, -1], F32)
        t = fd.define_scalar(True, DataType.Bool)
        fd.add_output(
            fd.ops.embedding_fwd(ids, w, fd.define_scalar(-1, DataType.Int), None, 2.0, t, False)
        )
    a = rng.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([4, 0, 4, 2])
    np.testing.assert_array_equal(fd.reference([ids, a])[0], a[ids])
