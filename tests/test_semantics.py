"""The edge semantics where the GPU and the reference could disagree, each decided by torch on
CUDA and pinned here on the CPU: the reference's values, the device's scalar lowering of the
same op (evaluated on numpy by `test_schedulers.run_scalar_ops`), and NVRTC compiling the device
code. `tests/gpu/test_ops_gpu.py::test_torch_semantics_at_the_edges` checks the GPU itself.

- `var_mean` of a row holding +-inf: var NaN, mean +-inf (NaN with both signs).
- A float cast to i32/i64: truncation, saturation to the range (PTX `cvt.rzi`, which torch's
  `static_cast` compiles to); NaN gives what torch on an H200 gave: 0 from f32/f16/bf16 to
  i32, the most negative integer from f32/f16/bf16 to i64 and from f64 to either; float -> bool
  is `x != 0` (NaN is true).
- `pow`: C's pow for floats (x ** 0 is 1 even for NaN; a negative base keeps its sign for an
  integral power and gives NaN for a fractional one); for integers a negative constant exponent
  is an error (torch: "Integers to negative integer powers are not allowed"), and a negative
  run-time exponent gives 1 for base 1, +-1 for base -1, 0 otherwise (torch on CUDA).
- Integer `div` truncates toward zero; a division by zero gives -1 (torch on CUDA).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_schedulers import run_scalar_ops
from xdsl.builder import ImplicitBuilder
from xdsl.ir import Block

from fuser import DataType, FusionDefinition
from fuser.dialects import fusion as fu
from fuser.errors import DefinitionError
from fuser.transforms.schedulers.scalar_lowering import lower_pointwise

FLOAT_DTYPES = {
    DataType.Half: np.float16,
    DataType.BFloat16: ml_dtypes.bfloat16,
    DataType.Float: np.float32,
    DataType.Double: np.float64,
}
INT_DTYPES = {DataType.Int32: np.int32, DataType.Int: np.int64}


def device_values(fd: FusionDefinition, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs of `fd` computed op by op with the device's scalar lowering (`arith`/`math`
    on numpy arrays): what a kernel computes for each element. Pointwise fusions only."""
    values: dict[object, np.ndarray] = dict(zip(fd.fusion.body.block.args, inputs, strict=True))
    for op in fd.fusion.body.block.ops:
        if isinstance(op, fu.OutputOp):
            return [values[v] for v in op.operands]
        operands = [o for o in op.operands if not isinstance(o.type, fu.IndexType)]
        block = Block(arg_types=[fu.element_type(o.type) for o in operands])
        with ImplicitBuilder(block):
            result = lower_pointwise(op, block.args)
        env = dict(zip(block.args, (values[o] for o in operands), strict=True))
        run_scalar_ops(list(block.ops), env)
        values[op.results[0]] = np.asarray(env[result])
    raise AssertionError("a fusion ends in fusion.output")


def assert_same(got: np.ndarray, expected: object) -> None:
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected), strict=False)


# --------------------------------------------------------------------------------------------
# var_mean over infinities


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double])
@pytest.mark.parametrize("width", [1, 3, 127])
def test_var_mean_of_rows_with_infinities(
    dtype: DataType, width: int, rng: np.random.Generator
) -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype)
        var, mean = fd.ops.var_mean(x, [1], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    rows = rng.standard_normal((4, width)).astype(FLOAT_DTYPES[dtype])
    at = rng.integers(0, width, 2)
    rows[0, at[0]] = np.inf
    rows[1, at[0]] = -np.inf
    if width > 1:
        rows[2, at[0]], rows[2, (at[0] + 1) % width] = np.inf, -np.inf
    else:
        rows[2, 0] = np.nan
    var_out, mean_out = fd.reference([rows])
    assert np.isnan(var_out[:3]).all()
    assert_same(mean_out[:3], [np.inf, -np.inf, np.nan])
    np.testing.assert_allclose(var_out[3], rows[3].var(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean_out[3], rows[3].mean(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Casts of NaN, infinities and out-of-range values to integers and bool

SPECIAL = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e19, -1e19, 2.9, -2.9, -0.0]


@pytest.mark.parametrize("source", list(FLOAT_DTYPES))
@pytest.mark.parametrize("target", [*INT_DTYPES, DataType.Bool])
def test_float_to_int_and_bool_casts_saturate(source: DataType, target: DataType) -> None:
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.cast(fd.define_tensor([-1], source), target))
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL, np.float64).astype(FLOAT_DTYPES[source])
    wide = [float(v) for v in x.astype(np.float64)]  # the values in the source type (f16: inf)
    if target is DataType.Bool:
        expected = np.array([v != 0 for v in wide])  # NaN is true, as in torch
    else:
        info = np.iinfo(INT_DTYPES[target])
        bound = 2.0 ** (info.bits - 1)
        nan = 0 if source is not DataType.Double and target is DataType.Int32 else info.min
        expected = np.array(
            [
                nan if v != v else info.max if v >= bound else info.min if v < -bound else int(v)
                for v in wide
            ],
            INT_DTYPES[target],
        )
    (reference,) = fd.reference([x])
    assert_same(reference, expected)
    (device,) = device_values(fd, [x])
    assert_same(device, expected)


# --------------------------------------------------------------------------------------------
# pow


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double])
def test_float_pow_with_negative_bases_and_zero_exponents(dtype: DataType) -> None:
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.pow(fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)))
    cases = [  # base, exponent, torch's result
        (-2.0, 3.0, -8.0),
        (-2.0, 2.0, 4.0),
        (-3.0, -1.0, -1 / 3),
        (-2.0, 0.5, np.nan),
        (-8.0, 1 / 3, np.nan),
        (np.nan, 0.0, 1.0),
        (0.0, 0.0, 1.0),
        (-np.inf, 0.0, 1.0),
        (-np.inf, 3.0, -np.inf),
        (-0.0, -1.0, -np.inf),
        (1.0, np.nan, 1.0),
        (-1.0, np.inf, 1.0),
    ]
    np_dtype = FLOAT_DTYPES[dtype]
    base, exponent, expected = (
        np.array(c, np.float64).astype(np_dtype) for c in zip(*cases, strict=True)
    )
    (reference,) = fd.reference([base, exponent])
    np.testing.assert_allclose(reference, expected, rtol=1e-6)
    (device,) = device_values(fd, [base, exponent])
    np.testing.assert_allclose(device, expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", list(INT_DTYPES))
def test_integer_pow_with_negative_exponents(dtype: DataType, rng: np.random.Generator) -> None:
    with FusionDefinition() as fd:
        x, y = fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)
        fd.add_output(x**y)
        fd.add_output(fd.ops.pow(x, 3))
    bases = np.array([1, 1, -1, -1, -1, 0, 0, 2, -2, 7, 0, -3, 5], INT_DTYPES[dtype])
    exponents = np.array([-1, -6, -1, -2, -3, -1, -4, -1, -1, -2, 0, 3, 0], INT_DTYPES[dtype])
    # torch on CUDA: 1 for base 1, +-1 for base -1, 0 otherwise; x ** 0 == 1
    power = [1, 1, -1, 1, -1, 0, 0, 0, 0, 0, 1, -27, 1]
    order = rng.permutation(len(bases))
    inputs = [bases[order], exponents[order]]
    for values in (fd.reference(inputs), device_values(fd, inputs)):
        assert_same(values[0], np.array(power)[order])
        assert_same(values[1], bases[order].astype(np.int64) ** 3)


def test_integer_pow_of_a_negative_constant_is_an_error() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], DataType.Int32)
        with pytest.raises(DefinitionError, match=r"fd.ops.pow: argument 'rhs' \(-1\)"):
            fd.ops.pow(x, -1)
        with pytest.raises(DefinitionError, match="negative integer powers"):
            _ = x ** fd.define_scalar(-2)
        fd.add_output(fd.ops.pow(x, -1.0))  # a float exponent computes in Float
    assert fd.outputs[0].dtype is DataType.Float


# --------------------------------------------------------------------------------------------
# Integer division


@pytest.mark.parametrize("dtype", list(INT_DTYPES))
def test_integer_division_truncates_and_gives_torchs_value_for_zero(dtype: DataType) -> None:
    """By zero, as torch on an H200: -1 for i32; for i64 4294967295 where the dividend lies in
    [0, 2**32), else -1."""
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.div(fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)))
        fd.add_output(fd.ops.div(fd.define_tensor([-1], dtype), 0))
    np_dtype = INT_DTYPES[dtype]
    big = 5_000_000_000 if dtype is DataType.Int else 2**31 - 1
    a = np.array([7, -7, 7, -7, 0, 5, -5, 0, big, -big], np_dtype)
    b = np.array([2, 2, -2, -2, 3, 0, 0, 0, 0, 0], np_dtype)
    small = 0xFFFFFFFF if dtype is DataType.Int else -1  # i64 dividends in [0, 2**32)
    by_zero = [small if 0 <= v <= 0xFFFFFFFF else -1 for v in a.tolist()]
    expected = [3, -3, -3, 3, 0, by_zero[5], -1, by_zero[7], by_zero[8], -1]
    with np.errstate(all="raise"):  # the reference must not warn either
        reference = fd.reference([a, b, a])
    for values in (reference, device_values(fd, [a, b, a])):
        assert_same(values[0], expected)
        assert_same(values[1], by_zero)


def test_the_edge_cases_compile_with_nvrtc() -> None:
    """The device code of every case above, compiled for sm_90 (no GPU needed)."""
    with FusionDefinition() as fd:
        i32, i64 = fd.define_tensor([-1], DataType.Int32), fd.define_tensor([-1], DataType.Int)
        f64, h = fd.define_tensor([-1], DataType.Double), fd.define_tensor([-1], DataType.Half)
        b16 = fd.define_tensor([-1], DataType.BFloat16)
        fd.add_output(fd.ops.div(i32, i32))
        fd.add_output(fd.ops.div(i64, i64))
        fd.add_output(i32**i32)
        fd.add_output(fd.ops.cast(f64, DataType.Int32))
        fd.add_output(fd.ops.cast(h, DataType.Int))
        fd.add_output(fd.ops.cast(b16, DataType.Int32))
        fd.add_output(fd.ops.cast(b16, DataType.Bool))
        fd.add_output(fd.ops.pow(f64, f64))
    inputs = [np.ones(5, t) for t in (np.int32, np.int64, np.float64, np.float16)]
    inputs.append(np.ones(5, ml_dtypes.bfloat16))
    compiled = fd.compile(inputs, arch="sm_90")
    assert compiled.kernels and "fuser::pow" in fd.last_cuda_code()
