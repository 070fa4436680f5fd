"""`iota` on the GPU, against the reference: an iota alone (no tensor input) in every numeric
dtype and at odd and zero lengths, a causal-masked softmax (one kernel reading two iotas) in
f32, f16 and bf16 on contiguous and transposed inputs, a one-hot pick over a vocabulary-wide
row, an iota with a start and step given at run time, and an iota output that is fresh memory
on every call.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import check_against_reference, numpy_of, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

LENGTHS = [0, 1, 3, 127, 4097]
NUMERIC = [DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32]


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("dtype", [*NUMERIC, DataType.Int], ids=lambda d: d.name)
def test_an_iota_alone(torch: Any, dtype: DataType, length: int) -> None:
    start, step = (-3, 2) if dtype.is_integral else (-1.5, 0.37)
    with FusionDefinition(f"iota_{dtype.name}") as fd:
        fd.add_output(fd.ops.iota(length, start, step, dtype))
    target = numpy_dtype(dtype.element_type)
    if dtype.is_integral:  # start + i * step, written out here (not the runtime's iota_array)
        expected = (start + np.arange(length, dtype=np.int64) * step).astype(target)
    else:
        expected = round_to_float(start + np.arange(length, dtype=np.float64) * step, target)
    for _ in range(2):  # the second call reads the constant the first one uploaded
        (out,) = fd.execute([])
        np.testing.assert_array_equal(numpy_of(torch, out), expected)


def causal_softmax(dtype: DataType) -> FusionDefinition:
    with FusionDefinition(f"causal_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        rows, cols = x.size(0), x.size(1)
        i = fd.ops.broadcast_in_dim(fd.ops.iota(rows), [rows, cols], [0])
        j = fd.ops.broadcast_in_dim(fd.ops.iota(cols), [rows, cols], [1])
        y = fd.ops.where(fd.ops.ge(i, j), fd.ops.cast(x, DataType.Float), float("-inf"))
        m = fd.ops.broadcast_in_dim(fd.ops.max(y, [1]), [rows, cols], [0])
        e = fd.ops.exp(fd.ops.sub(y, m))
        s = fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), [rows, cols], [0])
        fd.add_output(fd.ops.cast(fd.ops.div(e, s), dtype))
    return fd


@pytest.mark.parametrize("t", [1, 3, 127, 4097])
@pytest.mark.parametrize(
    "dtype", [DataType.Float, DataType.Half, DataType.BFloat16], ids=lambda d: d.name
)
def test_a_causal_softmax_is_one_kernel(
    rng: np.random.Generator, torch: Any, dtype: DataType, t: int
) -> None:
    fd = causal_softmax(dtype)
    a = random_of(rng, (t, t), dtype)
    check_against_reference(fd, torch, [torch_of(torch, a)], [a])
    assert len(schedulers(fd, [a])) == 1
    got = numpy_of(torch, fd.execute([torch_of(torch, a)])[0]).astype(np.float64)
    assert np.all(np.triu(got, 1) == 0)  # masked exactly


def test_a_causal_softmax_of_a_transposed_input(rng: np.random.Generator, torch: Any) -> None:
    fd = causal_softmax(DataType.Float)
    a = random_of(rng, (127, 300), DataType.Float)
    view = torch_of(torch, a).t()  # [300, 127], column-major
    check_against_reference(fd, torch, [view], [np.ascontiguousarray(a.T)])


@pytest.mark.parametrize("rows", [1, 3, 127])
def test_a_one_hot_pick_over_a_vocabulary(rng: np.random.Generator, torch: Any, rows: int) -> None:
    """sum(where(iota(V) == target, logits, 0)): the logit of each row's target, one kernel;
    then another vocabulary size through the same definition (a new iota)."""
    with FusionDefinition("pick") as fd:
        target = fd.define_tensor([-1], DataType.Int)
        logits = fd.define_tensor([-1, -1], DataType.BFloat16)
        n, v = logits.size(0), logits.size(1)
        hot = fd.ops.eq(
            fd.ops.broadcast_in_dim(fd.ops.iota(v), [n, v], [1]),
            fd.ops.broadcast_in_dim(target, [n, v], [0]),
        )
        fd.add_output(fd.ops.sum(fd.ops.where(hot, fd.ops.cast(logits, DataType.Float), 0.0), [1]))
    for vocab in (50257, 4097):
        x = random_of(rng, (rows, vocab), DataType.BFloat16)
        t = rng.integers(0, vocab, rows).astype(np.int64)
        (got,) = fd.execute([torch_of(torch, t), torch_of(torch, x)])
        picked = x[np.arange(rows), t].astype(np.float32)
        np.testing.assert_array_equal(numpy_of(torch, got), picked)
        assert len(schedulers(fd, [t, x])) == 1


def test_run_time_start_and_step(rng: np.random.Generator, torch: Any) -> None:
    """`iota` with a start and step given at run time (scalar inputs), two calls with other
    values on the same kernels, against the reference."""
    with FusionDefinition("iota_run_time") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        s = fd.define_scalar(DataType.Float)
        k = fd.define_scalar(DataType.Int)
        rows = fd.ops.broadcast_in_dim(fd.ops.iota(x.size(0), k, 3, DataType.Int), x.shape(), [0])
        cols = fd.ops.iota(x.size(1), s, s, DataType.Float)
        cols = fd.ops.broadcast_in_dim(cols, x.shape(), [1])
        fd.add_output(fd.ops.where(fd.ops.gt(rows, 100), fd.ops.mul(x, cols), x))
    host = random_of(rng, (127, 4097), DataType.BFloat16)
    x = torch_of(torch, host)
    for start, step in ((-7, 0.5), (40, -0.125)):
        (out,) = fd.execute([x, step, start])
        (expected,) = fd.reference([host, step, start])
        np.testing.assert_allclose(
            numpy_of(torch, out).astype(np.float32), expected.astype(np.float32), rtol=1e-2
        )


def test_an_iota_output_is_fresh_memory(torch: Any) -> None:
    """An output iota is a copy of the program's constant: writing to one call's output
    changes neither the constant nor the next call's output."""
    with FusionDefinition("fresh") as fd:
        x = fd.define_tensor([-1], DataType.Float)
        fd.add_output(fd.ops.iota(x.size(0), 0, 1, DataType.Int32))
    x = torch.ones(8, device="cuda")
    (first,) = fd.execute([x])
    first.fill_(-1)
    (second,) = fd.execute([x])
    np.testing.assert_array_equal(numpy_of(torch, second), np.arange(8, dtype=np.int32))
    assert first.data_ptr() != second.data_ptr()
