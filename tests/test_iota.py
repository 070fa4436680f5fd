"""`iota` on the CPU: the frontend's IR and messages, the reference (torch's `arange`, rounded
once), and what the segmenter and the host lowering make of an iota (a constant of the program
between segments, read by the kernels; copied where the fusion returns it). The evaluator's
upload is tested in tests/test_host_evaluator.py, the GPU results in
tests/gpu/test_iota_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from fuser import DataType, FusionDefinition
from fuser.dialects.common import op_text
from fuser.errors import DefinitionError
from fuser.runtime.dtypes import iota_array
from fuser.transforms.pipeline import Compilation, run_pipeline
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta

F32 = DataType.Float


def test_iota_in_the_ir_and_the_reference() -> None:
    with FusionDefinition("iotas") as fd:
        x = fd.define_tensor([-1, 4], F32)
        fd.add_output(fd.ops.iota(6))
        fd.add_output(fd.ops.iota(x.size(0), 0.5, -0.25, DataType.BFloat16))
        fd.add_output(fd.ops.iota(fd.define_scalar(3), fd.define_scalar(-7), 5, DataType.Int32))
        fd.add_output(fd.ops.iota(x.size(1), start=2.0, dtype=DataType.Float))
    ir = fd.fusion_ir()
    assert "fusion.iota start 0 step 1 : tensor<6xi64>" in ir
    assert "fusion.iota(%t0_size0) start 5.000000e-01 step -2.500000e-01 : tensor<?xbf16>" in ir
    assert "fusion.iota start -7 step 5 : tensor<3xi32>" in ir
    assert "fusion.iota start 2.000000e+00 step 1.000000e+00 : tensor<4xf32>" in ir  # static
    ints, halves, small, floats = fd.reference([np.ones((5, 4), np.float32)])
    np.testing.assert_array_equal(ints, np.arange(6))
    assert ints.dtype == np.int64 and small.dtype == np.int32
    np.testing.assert_array_equal(halves, (0.5 - 0.25 * np.arange(5)).astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(small, [-7, -2, 3])
    np.testing.assert_array_equal(floats, [2.0, 3.0, 4.0, 5.0])


def test_iota_values_round_once_and_wrap() -> None:
    """A float iota is start + i * step in f64, rounded once (bf16 through float32 would round
    1 + 2**-8 + 2**-30 twice); an integer one wraps as int64 arithmetic cast to int32 does."""
    step = 2.0**-8 + 2.0**-30
    got = iota_array(2, 1.0, step, ml_dtypes.bfloat16)
    assert float(got[1]) == 1.0 + 2.0**-7
    wrapped = iota_array(3, 2**31 - 1, 1, np.int32)
    np.testing.assert_array_equal(wrapped, [2**31 - 1, -(2**31), -(2**31) + 1])
    assert iota_array(0, 1.0, 1.0, np.float32).shape == (0,)


Bad = Callable[[FusionDefinition, Any], Any]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.iota(2.5), "argument 'length' must be an int, a constant Scalar"),
        (lambda fd, x: fd.ops.iota(-1), "argument 'length' is -1; it must be at least 0"),
        (
            lambda fd, x: fd.ops.iota(fd.define_scalar(DataType.Int)),
            "argument 'length' must be an int",
        ),
        (
            lambda fd, x: fd.ops.iota(4, fd.define_scalar(DataType.Double), 1),
            "argument 'start' is a Double Scalar; an iota of Int takes integers",
        ),
        (
            lambda fd, x: fd.ops.iota(4, 0, fd.define_scalar(DataType.Bool), F32),
            "argument 'step' is a Bool; it needs a number",
        ),
        (
            lambda fd, x: fd.ops.iota(4, fd.define_scalar(DataType.Int), x, F32),
            "argument 'step' must be a Scalar or a Python number, got a Tensor",
        ),
        (lambda fd, x: fd.ops.iota(4, 0.5), "'start' is 0.5; an iota of DataType.Int takes int"),
        (lambda fd, x: fd.ops.iota(4, 0, float("inf"), F32), "argument 'step' is inf; it must"),
        (lambda fd, x: fd.ops.iota(4, dtype=DataType.Bool), "argument 'dtype' must be an integer"),
        (lambda fd, x: fd.ops.iota(4, dtype=DataType.ComplexFloat), "argument 'dtype'"),
        (lambda fd, x: fd.ops.iota(4, True), "argument 'start' must be a Python number"),
    ],
)
def test_iota_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([4, 6], F32)
        call(fd, x)
    assert "fd.ops.iota" in str(e.value) and message in str(e.value)


def test_run_time_start_and_step(rng: np.random.Generator) -> None:
    """A start or step known only at run time (a scalar input, a computed Scalar): `start +
    iota * step` computed where it is read (f32 for Float, wrapping Int for Int32), no host
    constant of those values."""
    with FusionDefinition("iota_run_time") as fd:
        x = fd.define_tensor([-1], F32)
        s = fd.define_scalar(DataType.Float)
        k = fd.define_scalar(DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.iota(x.size(0), s, 0.25, F32), x))
        fd.add_output(fd.ops.iota(7, k, -3, DataType.Int32))
        fd.add_output(fd.ops.iota(5, fd.ops.mul(k, 2), k))  # a computed start
    xs = rng.standard_normal(6).astype(np.float32)
    a, b, c = fd.reference([xs, -1.5, 2**31 + 3])
    np.testing.assert_allclose(a, -1.5 + np.arange(6) * 0.25 + xs, rtol=1e-6)
    np.testing.assert_array_equal(b, ((2**31 + 3) + np.arange(7) * -3).astype(np.int32))
    np.testing.assert_array_equal(c, 2 * (2**31 + 3) + np.arange(5) * (2**31 + 3))
    assert b.dtype == np.int32 and c.dtype == np.int64
    assert "fusion.mul" in fd.fusion_ir()
    fd.compile([xs, -1.5, 3], arch="sm_90")


def _lowered(fd: FusionDefinition, metas: list[TensorMeta]) -> tuple[list[str], str]:
    c = Compilation(fd.fusion.clone(), FusionInfo(tuple(metas), DeviceInfo()))
    lowering = run_pipeline(c)
    return [s.scheduler.name for s in lowering.segments], op_text(lowering.program)


def causal_softmax() -> FusionDefinition:
    """softmax(where(i >= j, x, -inf)) over rows, the mask from two iotas (nanoGPT's causal
    attention as Thunder hands it over)."""
    with FusionDefinition("causal") as fd:
        x = fd.define_tensor([-1, -1], F32)
        rows, cols = x.size(0), x.size(1)
        i = fd.ops.broadcast_in_dim(fd.ops.iota(rows), [rows, cols], [0])
        j = fd.ops.broadcast_in_dim(fd.ops.iota(cols), [rows, cols], [1])
        y = fd.ops.where(fd.ops.ge(i, j), x, float("-inf"))
        m = fd.ops.broadcast_in_dim(fd.ops.max(y, [1]), [rows, cols], [0])
        e = fd.ops.exp(fd.ops.sub(y, m))
        fd.add_output(fd.ops.div(e, fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), [rows, cols], [0])))
    return fd


def test_a_causal_mask_is_one_kernel_reading_two_iotas(rng: np.random.Generator) -> None:
    fd = causal_softmax()
    kernels, program = _lowered(fd, [TensorMeta.contiguous((127, 127))])
    assert kernels == ["persistent"]
    assert program.count("host.iota(") == 2 and program.count("host.launch") == 1
    a = rng.standard_normal((5, 5)).astype(np.float32)
    (p,) = fd.reference([a])
    expected = np.where(np.tril(np.ones((5, 5), bool)), np.exp(a - a.max(1, keepdims=True)), 0)
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(p, expected, rtol=1e-6)
    assert np.all(np.triu(p, 1) == 0)
    assert [k.scheduler for k in fd.compile([a], arch="sm_90").kernels] == ["persistent"]


def test_a_returned_iota_is_copied_and_a_read_one_is_not() -> None:
    """The program's iota is a constant every call shares: an output is a copy of it; a
    kernel that reads it (a one-hot row of a cross-entropy) takes the constant itself."""
    with FusionDefinition("onehot") as fd:
        target = fd.define_tensor([-1], DataType.Int)
        logits = fd.define_tensor([-1, -1], F32)
        n, v = logits.size(0), logits.size(1)
        classes = fd.ops.iota(v)
        hot = fd.ops.eq(
            fd.ops.broadcast_in_dim(classes, [n, v], [1]),
            fd.ops.broadcast_in_dim(target, [n, v], [0]),
        )
        fd.add_output(fd.ops.sum(fd.ops.where(hot, logits, 0.0), [1]))
        fd.add_output(classes)
    metas = [TensorMeta.contiguous((8,)), TensorMeta.contiguous((8, 50257))]
    kernels, program = _lowered(fd, metas)
    assert kernels == ["reduction", "pointwise"]
    assert "host.iota(%t1_d1) start 0 step 1 : tensor<?xi64>" in program
    assert "outs(%t2_copy : tensor<?xi64>)" in program and "host.deallocate" not in program
    t = np.array([3, 0, 7], np.int64)
    x = np.arange(30, dtype=np.float32).reshape(3, 10)
    picked, classes = fd.reference([t, x])
    np.testing.assert_array_equal(picked, x[np.arange(3), t])
    np.testing.assert_array_equal(classes, np.arange(10))


def test_a_fusion_of_iotas_alone_runs_without_inputs() -> None:
    with FusionDefinition("alone") as fd:
        fd.add_output(fd.ops.mul(fd.ops.iota(5, 1.0, 0.5, F32), 2.0))
    kernels, program = _lowered(fd, [])
    assert kernels == ["pointwise"] and "host.iota start 1.000000e+00 step 5.000000e-01" in program
    np.testing.assert_array_equal(fd.reference([])[0], [2.0, 3.0, 4.0, 5.0, 6.0])


def test_an_iota_as_long_as_a_result_is_made_after_it() -> None:
    """iota(y.size(0)) where only a view of a reduction's result has that extent: the kernel
    reading the iota runs after the reduction (the program sizes the iota from its result's
    extent), and no union puts the two in one kernel. (Where a view of an input has the
    extent, the iota takes it from that view, and the reduction is not needed for it.)"""
    with FusionDefinition("late") as fd:
        x = fd.define_tensor([-1, -1], F32)
        y = fd.ops.slice(fd.ops.sum(fd.ops.exp(x), [1]), [1], [x.size(0)])
        fd.add_output(fd.ops.mul(fd.ops.iota(y.size(0), 0, 1, F32), 2.0))
    kernels, program = _lowered(fd, [TensorMeta.contiguous((6, 5))])
    assert kernels == ["reduction", "pointwise"]
    assert program.index("host.launch @") < program.index("host.iota(")
    a = np.ones((6, 5), np.float32)
    np.testing.assert_array_equal(fd.reference([a])[0], 2.0 * np.arange(5))
