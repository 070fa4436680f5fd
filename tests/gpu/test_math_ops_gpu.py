"""The math of nvFuser's op set beyond the basics on the GPU: against the float64 reference and
against torch on the same device.

Covered: every float function (acos ... lgamma, frac) on f32/f16/bf16 over its domain and
around it (NaN where the reference has NaN); rounding, sign and the tests (isfinite ...
signbit) on floats with NaN, +-inf, signed zeros and halves mixed in, and on i32/i64; the
binary functions on floats and integers (zero divisors, the integer limits, shift counts past
the width), `bitwise_*` on Bool; `lerp`, `addcmul`, `clamp`, `threshold`, `triu`, `tril`;
sizes 0, 1, 3, 127 and 4097; a transposed (non-contiguous) input and operands broadcast along
each axis. The kernel of each case must be the pointwise scheduler's. `test_*_match_torch`
compare fuser's outputs with torch's own op on the same CUDA tensors: exactly for rounding,
tests, integers and bitwise ops, within the math library's few units otherwise.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gpu_helpers import F32, TOL, assert_close, numpy_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

SIZES = [0, 1, 3, 127, 4097]
FLOATS = [DataType.Float, DataType.Half, DataType.BFloat16]
INTS = [DataType.Int32, DataType.Int]
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.5, -2.5]

Domain = Callable[[np.random.Generator, int], np.ndarray]


def uniform(lo: float, hi: float) -> Domain:
    return lambda rng, n: rng.uniform(lo, hi, n)


DOMAINS: dict[str, Domain] = {
    "acos": uniform(-1.1, 1.1),
    "asin": uniform(-1.1, 1.1),
    "atanh": uniform(-1.1, 1.1),
    "erfinv": uniform(-1.1, 1.1),
    "acosh": uniform(0.8, 6.0),
    "erfcinv": uniform(-0.1, 2.1),
    "log10": uniform(-0.5, 40.0),
    "log2": uniform(-0.5, 40.0),
    "log1p": uniform(-1.2, 40.0),
    "lgamma": uniform(-4.9, 12.0),
    "cosh": uniform(-8.0, 8.0),
    "sinh": uniform(-8.0, 8.0),
    "exp2": uniform(-20.0, 20.0),
    "expm1": uniform(-6.0, 6.0),
    "erfc": uniform(-4.0, 6.0),
}
"""Where each function's inputs are drawn (over its domain and a little outside it); others
take `3 * normal`, with halves among them (ties of the rounding ops)."""

FLOAT_FUNCTIONS = [
    *("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "erfc"),
    *("erfinv", "erfcinv", "exp2", "expm1", "log10", "log1p", "log2", "lgamma"),
]
EXACT_UNARY = ["frac", "ceil", "floor", "round", "trunc", "sign"]
TESTS = ["isfinite", "isinf", "isnan", "isneginf", "isposinf", "signbit", "logical_not"]
LIBRARY_TOL = {F32: (1e-4, 1e-4)}
"""f32 against the float64 reference for CUDA's math functions (a few ulps, more near zeros of
the result, such as lgamma's at 1 and 2)."""


def values(rng: np.random.Generator, op: str, n: int, dtype: DataType) -> np.ndarray:
    """`n` inputs of `op` in `dtype`, specials mixed into arrays of 16 or more."""
    draw = DOMAINS.get(op)
    if draw is not None:
        raw = draw(rng, n)
    else:
        grid = rng.integers(-8, 9, n) / 2
        raw = np.where(rng.random(n) < 0.4, grid, 3.0 * rng.standard_normal(n))
    if n >= 16:
        raw[rng.choice(n, len(SPECIALS), replace=False)] = SPECIALS
    return round_to_float(raw, numpy_dtype(dtype.element_type))


def ints(rng: np.random.Generator, n: int, dtype: DataType, lo: int, hi: int) -> np.ndarray:
    a = rng.integers(lo, hi, n).astype(numpy_dtype(dtype.element_type))
    if n >= 8:
        info = np.iinfo(a.dtype)
        a[rng.choice(n, 4, replace=False)] = [0, -1, info.min, info.max]
    return a


@functools.cache
def unary_fusion(op: str, dtype: DataType) -> FusionDefinition:
    with FusionDefinition(f"{op}_{dtype.name}") as fd:
        fd.add_output(getattr(fd.ops, op)(fd.define_tensor([-1], dtype)))
    return fd


def run(fd: FusionDefinition, inputs: list[np.ndarray], tol: Any = None) -> list[np.ndarray]:
    """`fd` on the GPU against the float64 reference; the pointwise scheduler must take it."""
    outs = fd.execute(inputs)
    if any(a.size for a in inputs):
        assert schedulers(fd, inputs) == ["pointwise"]
    refs = fd.reference(inputs, compute_dtype=np.float64)
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        assert_close(out, ref, f"{fd.name} output {i}", (tol or {}).get(out.dtype))
    return outs


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_FUNCTIONS + EXACT_UNARY + TESTS)
def test_unary_on_floats(op: str, dtype: DataType, n: int, rng: np.random.Generator) -> None:
    x = values(rng, op, n, dtype)
    run(unary_fusion(op, dtype), [x], LIBRARY_TOL if op in FLOAT_FUNCTIONS else None)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", [*EXACT_UNARY[1:], "bitwise_not", *TESTS, "exp2", "lgamma"])
def test_unary_on_integers(op: str, dtype: DataType, rng: np.random.Generator) -> None:
    x = ints(rng, 4097, dtype, -1000, 1000)
    if op in ("exp2", "lgamma"):  # integers compute in Float
        x = ints(rng, 4097, dtype, -30, 30)
    run(unary_fusion(op, dtype), [x], LIBRARY_TOL)


@functools.cache
def binary_fusion(op: str, dtype: DataType, shapes: tuple[tuple[int, ...], ...]) -> Any:
    with FusionDefinition(f"{op}_{dtype.name}_{len(shapes[0])}d") as fd:
        a, b = (fd.define_tensor(list(s), dtype) for s in shapes)
        fd.add_output(getattr(fd.ops, op)(a, b))
    return fd


FLOAT_BINARY = ["atan2", "fmod", "remainder", "logical_and", "logical_or"]
INT_BINARY = [
    *("fmod", "remainder", "gcd", "bitwise_and", "bitwise_or", "bitwise_xor"),
    *("bitwise_left_shift", "bitwise_right_shift", "logical_right_shift", "logical_and"),
]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_BINARY)
def test_binary_on_floats(op: str, dtype: DataType, n: int, rng: np.random.Generator) -> None:
    a = values(rng, op, n, dtype)
    b = values(rng, op, n, dtype)
    if op in ("fmod", "remainder") and n:
        b[rng.random(n) < 0.1] = 0.0
    run(binary_fusion(op, dtype, ((-1,), (-1,))), [a, b], LIBRARY_TOL)


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double])
def test_nextafter(dtype: DataType, rng: np.random.Generator) -> None:
    a = values(rng, "nextafter", 4097, dtype)
    b = values(rng, "nextafter", 4097, dtype)
    b[:100] = a[:100]  # equal: lhs itself
    (out,) = run(binary_fusion("nextafter", dtype, ((-1,), (-1,))), [a, b], {})
    steps = np.nextafter(a, b)  # exactly one unit, in the declared type
    np.testing.assert_array_equal(out, steps)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", INT_BINARY)
def test_binary_on_integers(op: str, dtype: DataType, rng: np.random.Generator) -> None:
    shift = "shift" in op
    a = ints(rng, 4097, dtype, -100_000, 100_000)
    b = ints(rng, 4097, dtype, -3, 70) if shift else ints(rng, 4097, dtype, -50, 50)
    run(binary_fusion(op, dtype, ((-1,), (-1,))), [a, b])


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and"])
def test_bitwise_on_bools(op: str, rng: np.random.Generator) -> None:
    a, b = rng.random(127) < 0.5, rng.random(127) < 0.5
    run(binary_fusion(op, DataType.Bool, ((-1,), (-1,))), [a, b])


@pytest.mark.parametrize("op", ["atan2", "remainder", "gcd", "bitwise_right_shift"])
def test_operands_broadcast_on_each_axis(op: str, rng: np.random.Generator) -> None:
    """[n, 1] against [1, m] (implicit broadcast of static 1s), both ways round."""
    dtype = DataType.Float if op in ("atan2", "remainder") else DataType.Int32
    for shapes in (((-1, 1), (1, -1)), ((1, -1), (-1, 1))):
        fd = binary_fusion(op, dtype, shapes)
        dims = [(127 if s == -1 else 1 for s in shape) for shape in shapes]
        sized = [tuple(d) for d in dims]
        if dtype == DataType.Float:
            inputs = [values(rng, op, int(np.prod(s)), dtype).reshape(s) for s in sized]
        else:
            inputs = [ints(rng, int(np.prod(s)), dtype, -40, 40).reshape(s) for s in sized]
        (out,) = run(fd, inputs, LIBRARY_TOL)
        assert out.shape == (127, 127)


def test_a_transposed_input(rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.lerp(x, fd.ops.round(x), 0.25))
        fd.add_output(fd.ops.signbit(x))
    base = values(rng, "round", 127 * 33, DataType.BFloat16).reshape(127, 33)
    view = torch_of(torch, base).t()  # [33, 127], strides (1, 33)
    outs = [numpy_of(torch, o) for o in fd.execute([view])]
    refs = fd.reference([np.ascontiguousarray(base.T)], compute_dtype=np.float64)
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        assert_close(out, ref, f"output {i}")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_composites(dtype: DataType, n: int, rng: np.random.Generator) -> None:
    with FusionDefinition(f"composites_{dtype.name}") as fd:
        x, y, w = (fd.define_tensor([-1], dtype) for _ in range(3))
        fd.add_output(fd.ops.lerp(x, y, w))
        fd.add_output(fd.ops.lerp(x, y, 0.75))
        fd.add_output(fd.ops.addcmul(x, y, w, 0.5))
        fd.add_output(fd.ops.clamp(x, -1.0, 1.5))
        fd.add_output(fd.ops.clamp(x, max=fd.define_scalar(0.25, DataType.Float)))
        fd.add_output(fd.ops.threshold(x, 0.5, -7.0))
    inputs = [values(rng, "lerp", n, dtype) for _ in range(3)]
    run(fd, inputs, {F32: (1e-5, 1e-5)})


# --------------------------------------------------------------------------------------------
# Against torch on the same tensors


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_FUNCTIONS + EXACT_UNARY + TESTS)
def test_unary_on_floats_match_torch(op: str, dtype: DataType, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    if op == "erfcinv":
        pytest.skip("torch has no erfcinv (nvFuser's own op); the reference test covers it")
    x = torch_of(torch, values(rng, op, 4097, dtype))
    (ours,) = unary_fusion(op, dtype).execute([x])
    theirs = getattr(torch, op)(x)
    exact = op not in FLOAT_FUNCTIONS
    tol = TOL[BFLOAT16] if dtype == DataType.BFloat16 else (1e-3, 1e-4)
    got, want = numpy_of(torch, ours), numpy_of(torch, theirs)
    assert_close(got, want, f"{op} vs torch", None if exact else tol)


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS])
@pytest.mark.parametrize(
    "op", [*FLOAT_BINARY, "gcd", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
)
def test_binary_match_torch(op: str, dtype: DataType, rng: np.random.Generator) -> None:
    """torch on CUDA decides the edges: zero divisors, signs of remainders, shifts past the
    width, the integer limits (torch has no `logical_right_shift`: the reference covers it)."""
    torch = pytest.importorskip("torch")
    is_int = dtype in INTS
    if is_int == (op in ("atan2",)) or (not is_int and op not in FLOAT_BINARY):
        pytest.skip(f"torch's {op} takes no {dtype.name}")
    if is_int:
        a = ints(rng, 4097, dtype, -100_000, 100_000)
        b = ints(rng, 4097, dtype, -3, 70) if "shift" in op else ints(rng, 4097, dtype, -50, 50)
    else:
        a, b = values(rng, op, 4097, dtype), values(rng, op, 4097, dtype)
        b[rng.random(4097) < 0.1] = 0.0
    ta, tb = torch_of(torch, a), torch_of(torch, b)
    (ours,) = binary_fusion(op, dtype, ((-1,), (-1,))).execute([ta, tb])
    theirs = getattr(torch, op)(ta, tb)
    tol = TOL[BFLOAT16] if dtype == DataType.BFloat16 else (1e-3, 1e-4)
    exact = is_int or op != "atan2"
    assert_close(
        numpy_of(torch, ours), numpy_of(torch, theirs), f"{op} vs torch", None if exact else tol
    )


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 127), (2, 129, 127)])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16, DataType.Int32])
def test_triu_and_tril(shape: tuple[int, ...], dtype: DataType, rng: np.random.Generator) -> None:
    with FusionDefinition(f"triangles_{len(shape)}_{dtype.name}") as fd:
        x = fd.define_tensor([-1] * len(shape), dtype)
        fd.add_output(fd.ops.triu(x, 1))
        fd.add_output(fd.ops.tril(x, -2))
    if dtype == DataType.Int32:
        data = ints(rng, int(np.prod(shape)), dtype, -50, 50).reshape(shape)
    else:
        data = values(rng, "triu", int(np.prod(shape)), dtype).reshape(shape)
    upper, lower = run(fd, [data])
    wide = np.int64 if dtype == DataType.Int32 else np.float64  # (NaN equals NaN in float64)
    np.testing.assert_array_equal(upper.astype(wide), np.triu(data, 1).astype(wide))
    np.testing.assert_array_equal(lower.astype(wide), np.tril(data, -2).astype(wide))
