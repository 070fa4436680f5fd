"""Tests of the numpy reference interpreter (`fuser.runtime.reference`) and `fuser.runtime.dtypes`.

Expected values are computed independently of the reference where it matters: element by element
with Python's `math` in float64, and float conversions with exact rational rounding
(`round_exact`), so a wrong formula, constant or rounding in the oracle fails here.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, IndexType
from xdsl.parser import Parser

from fuser.dialects.fusion import BF16, F16, F32, F64, I1, I32, I64, Fusion, FusionOp
from fuser.errors import InputError, VerificationError
from fuser.runtime.dtypes import element_type_of, numpy_dtype, round_to_float
from fuser.runtime.reference import FusionFunctions, evaluate

DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i32", "i64")
SIZES = ((1,), (3,), (127,))


def parse_fusion(text: str) -> FusionOp:
    """The one `fusion.fusion` of `text`."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Fusion)
    ops = list(Parser(ctx, text).parse_module().ops)
    assert len(ops) == 1 and isinstance(ops[0], FusionOp)
    return ops[0]


def tensor(shape: Sequence[int | str], el: str) -> str:
    """`tensor<?x3xf32>` from `["?", 3]`."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + el + ">"


def dyn(rank: int, el: str) -> str:
    return tensor(["?"] * rank, el)


def single_op_fusion(
    inputs: Sequence[str], body: str, result_types: Sequence[str], results: Sequence[str]
) -> FusionOp:
    """`fusion.fusion @f(%a: T0, %b: T1, ...)` with `body` and `fusion.output results`."""
    args = ", ".join(f"%{chr(ord('a') + i)}: {t}" for i, t in enumerate(inputs))
    outs = ", ".join(result_types)
    return parse_fusion(
        f"fusion.fusion @f({args}) -> ({outs}) {{\n{body}\n"
        f"  fusion.output {', '.join(results)} : {outs}\n}}"
    )


def random_values(rng: np.random.Generator, shape: Sequence[int], el: str) -> np.ndarray:
    """Fresh values of `el`: normal floats, full-range integers, coin-flip booleans."""
    if el == "i1":
        return rng.random(shape) < 0.5
    if el in INTS:
        info = np.iinfo(DTYPES[el])
        return rng.integers(info.min, info.max, shape, dtype=DTYPES[el], endpoint=True)
    return rng.normal(0.0, 2.0, shape).astype(DTYPES[el])


def per_element(fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """`fn` applied to Python numbers element by element (independent of numpy's kernels)."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    flat = [np.broadcast_to(a, shape).ravel().tolist() for a in arrays]
    return np.array([fn(*xs) for xs in zip(*flat, strict=True)], dtype=object).reshape(shape)


def as_float64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


# Exact round-to-nearest-even into a float format: (precision incl. hidden bit, emin, emax).
FORMATS = {
    "f16": (11, -14, 15),
    "bf16": (8, -126, 127),
    "f32": (24, -126, 127),
    "f64": (53, -1022, 1023),
}


def round_exact(v: float | int | bool, el: str) -> float:
    """`v` rounded once, to nearest even, into float format `el`, computed with fractions."""
    if isinstance(v, float) and not math.isfinite(v):
        return v
    x = Fraction(v)
    if x == 0:
        return float(v)
    p, emin, emax = FORMATS[el]
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    r = round(a / quantum) * quantum  # Fraction rounds half to even
    if r >= Fraction(2) ** (emax + 1):
        return math.copysign(math.inf, x)
    return math.copysign(float(r), x)


def wrap(v: int, el: str) -> int:
    bits = 32 if el == "i32" else 64
    return (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("el", list(DTYPES))
def test_numpy_dtype_round_trip(el: str) -> None:
    t = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64, "i32": I32, "i64": I64, "i1": I1}[el]
    assert numpy_dtype(t) == DTYPES[el]
    assert element_type_of(DTYPES[el]) == t
    assert element_type_of(DTYPES[el].type) == t


def test_dtypes_reject_others() -> None:
    with pytest.raises(ValueError, match="int8"):
        element_type_of(np.int8)
    with pytest.raises(ValueError, match="complex"):
        element_type_of(np.complex64)
    with pytest.raises(ValueError):
        element_type_of("not a dtype")
    with pytest.raises(ValueError, match="index"):
        numpy_dtype(IndexType())


@pytest.mark.parametrize("el", ["f16", "bf16", "f32"])
def test_round_to_float_rounds_once(el: str, rng: np.random.Generator) -> None:
    p = FORMATS[el][0]
    # Values of the target format, nudged to exact ties and just beside them, plus random ones.
    base = rng.normal(0, 4, 60).astype(DTYPES[el]).astype(np.float64)
    ulp = np.abs(base) * 2.0 ** (1 - p)
    tie = base + ulp / 2
    values = np.concatenate(
        [tie, tie + ulp * 2.0**-20, tie - ulp * 2.0**-20, rng.normal(0, 1e3, 60), [1e10, -1e-30]]
    )
    got = round_to_float(values, DTYPES[el])
    assert got.dtype == DTYPES[el]
    np.testing.assert_array_equal(as_float64(got), [round_exact(v, el) for v in values.tolist()])


def test_round_to_float_float64_to_bf16_is_not_double_rounded() -> None:
    x = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 1 + 2**-8, 1 + 3 * 2**-8])
    got = as_float64(round_to_float(x, ml_dtypes.bfloat16))
    np.testing.assert_array_equal(got, [1 + 2**-7, -(1 + 2**-7), 1.0, 1 + 2**-6])
    assert round_to_float(np.float64(1 + 2**-8 + 2**-30), ml_dtypes.bfloat16).shape == ()
    with pytest.raises(ValueError):
        round_to_float(np.arange(3), np.float32)


# --------------------------------------------------------------------------------------------
# Pointwise ops
# --------------------------------------------------------------------------------------------

UNARY = {
    "neg": lambda v: -v,
    "abs": abs,
    "relu": lambda v: max(v, 0.0),
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "rsqrt": lambda v: 1 / math.sqrt(v),
    "reciprocal": lambda v: 1 / v,
    "sin": math.sin,
    "cos": math.cos,
    "tanh": math.tanh,
    "sigmoid": lambda v: 1 / (1 + math.exp(-v)),
    "erf": math.erf,
    "silu": lambda v: v / (1 + math.exp(-v)),
    "gelu %a none": lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
    "gelu %a tanh": lambda v: (
        0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))
    ),
}
POSITIVE_DOMAIN = ("log", "sqrt", "rsqrt", "reciprocal")
TOLERANCE = {"f32": {"rtol": 2e-6, "atol": 1e-6}, "f64": {"rtol": 1e-13, "atol": 1e-15}}


@pytest.mark.parametrize("el", ["f32", "f64"])
@pytest.mark.parametrize("op", list(UNARY))
def test_float_unary(op: str, el: str, rng: np.random.Generator) -> None:
    t = dyn(2, el)
    syntax = f"fusion.{op}" if "%a" in op else f"fusion.{op} %a"
    f = single_op_fusion([t], f"  %y = {syntax} : {t}", [t], ["%y"])
    for shape in ((1, 1), (3, 127), (127, 3)):
        if op in POSITIVE_DOMAIN:
            x = rng.uniform(0.05, 8.0, shape).astype(DTYPES[el])
        else:
            x = rng.normal(0.0, 2.0, shape).astype(DTYPES[el])
        (y,) = evaluate(f, [x])
        assert y.dtype == DTYPES[el] and y.shape == shape
        expected = per_element(UNARY[op], x.astype(np.float64)).astype(np.float64)
        np.testing.assert_allclose(y, expected, **TOLERANCE[el])


@pytest.mark.parametrize("el", INTS)
@pytest.mark.parametrize("op", ["neg", "abs", "relu"])
def test_int_unary(op: str, el: str, rng: np.random.Generator) -> None:
    t = dyn(1, el)
    f = single_op_fusion([t], f"  %y = fusion.{op} %a : {t}", [t], ["%y"])
    for (n,) in SIZES:
        x = rng.integers(-(10**9), 10**9, n, dtype=DTYPES[el])
        (y,) = evaluate(f, [x])
        assert y.dtype == DTYPES[el]
        np.testing.assert_array_equal(y, per_element(lambda v: int(UNARY[op](v)), x))


FLOAT_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": math.pow,
    "maximum": max,
    "minimum": min,
}


@pytest.mark.parametrize("form", ["tensor-tensor", "tensor-scalar", "scalar-tensor"])
@pytest.mark.parametrize("el", ["f32", "f64"])
@pytest.mark.parametrize("op", list(FLOAT_BINARY))
def test_float_binary(op: str, el: str, form: str, rng: np.random.Generator) -> None:
    t = dyn(1, el)
    lhs_t, rhs_t = (el if side == "scalar" else t for side in form.split("-"))
    body = f"  %y = fusion.{op} %a, %b : ({lhs_t}, {rhs_t}) -> {t}"
    f = single_op_fusion([lhs_t, rhs_t], body, [t], ["%y"])
    for (n,) in SIZES:
        a = rng.uniform(0.5, 3.0, n) if op == "pow" else rng.normal(0.0, 3.0, n)
        b = rng.normal(0.0, 3.0, n)
        a, b = a.astype(DTYPES[el]), b.astype(DTYPES[el])
        args: list[object] = [a, b]
        if form == "tensor-scalar":
            args[1] = float(b[0])
        elif form == "scalar-tensor":
            args[0] = float(a[0])
        (y,) = evaluate(f, args)
        assert y.dtype == DTYPES[el] and y.shape == (n,)
        wide = [np.asarray(v, dtype=np.float64) for v in args]
        expected = per_element(FLOAT_BINARY[op], *wide).astype(np.float64)
        np.testing.assert_allclose(y, expected, **TOLERANCE[el])


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


INT_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": c_div,
    "maximum": max,
    "minimum": min,
}


@pytest.mark.parametrize("el", INTS)
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_int_binary_wraps_and_truncates(op: str, el: str, rng: np.random.Generator) -> None:
    t = dyn(1, el)
    f = single_op_fusion([t, t], f"  %y = fusion.{op} %a, %b : {t}", [t], ["%y"])
    for (n,) in SIZES:
        a = random_values(rng, (n,), el)
        b = random_values(rng, (n,), el)
        if op == "div":
            b = rng.integers(1, 1000, n, dtype=DTYPES[el]) * rng.choice([-1, 1], n).astype(b.dtype)
        (y,) = evaluate(f, [a, b])
        assert y.dtype == DTYPES[el]
        expected = per_element(lambda x, z: wrap(INT_BINARY[op](x, z), el), a, b)
        np.testing.assert_array_equal(y, expected.astype(DTYPES[el]))


def test_int_div_truncates_toward_zero() -> None:
    t = dyn(1, "i32")
    f = single_op_fusion([t, t], f"  %y = fusion.div %a, %b : {t}", [t], ["%y"])
    a = np.array([7, -7, 7, -7, 6, -6, 0, 1, -1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 5, 7, 7], dtype=np.int32)
    (y,) = evaluate(f, [a, b])
    np.testing.assert_array_equal(y, [3, -3, -3, 3, 2, -2, 0, 0, 0])


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan(op: str) -> None:
    t = dyn(1, "f32")
    f = single_op_fusion([t, t], f"  %y = fusion.{op} %a, %b : {t}", [t], ["%y"])
    a = np.array([np.nan, 1.0, np.nan, -2.0], dtype=np.float32)
    b = np.array([3.0, np.nan, np.nan, 5.0], dtype=np.float32)
    (y,) = evaluate(f, [a, b])
    expected = [np.nan, np.nan, np.nan, 5.0 if op == "maximum" else -2.0]
    np.testing.assert_array_equal(y, np.array(expected, dtype=np.float32))


COMPARE = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


@pytest.mark.parametrize("el", ["f32", "f64", "i32", "i64", "i1"])
@pytest.mark.parametrize("op", list(COMPARE))
def test_comparisons(op: str, el: str, rng: np.random.Generator) -> None:
    t, r = dyn(1, el), dyn(1, "i1")
    f = single_op_fusion([t, t], f"  %y = fusion.{op} %a, %b : ({t}, {t}) -> {r}", [r], ["%y"])
    for (n,) in SIZES:
        # Few distinct values, so that ties occur.
        a, b = (rng.integers(-2, 3, n).astype(DTYPES[el]) for _ in range(2))
        if el in ("f32", "f64") and n > 1:
            a[0] = np.nan
        (y,) = evaluate(f, [a, b])
        assert y.dtype == np.bool_
        np.testing.assert_array_equal(y, per_element(COMPARE[op], a, b).astype(bool))


@pytest.mark.parametrize("el", list(DTYPES))
def test_where(el: str, rng: np.random.Generator) -> None:
    c, t = dyn(1, "i1"), dyn(1, el)
    body = (
        f"  %y = fusion.where %a, %b, %c : ({c}, {t}, {t}) -> {t}\n"
        f"  %z = fusion.where %a, %b, %d : ({c}, {t}, {el}) -> {t}"
    )
    f = single_op_fusion([c, t, t, el], body, [t, t], ["%y", "%z"])
    for (n,) in SIZES:
        cond = rng.random(n) < 0.5
        a, b = random_values(rng, (n,), el), random_values(rng, (n,), el)
        s = random_values(rng, (1,), el)[0]
        scalar = bool(s) if el == "i1" else (int(s) if el in INTS else float(s))
        y, z = evaluate(f, [cond, a, b, scalar])
        assert y.dtype == z.dtype == DTYPES[el]
        np.testing.assert_array_equal(
            y, [x if k else w for k, x, w in zip(cond, a, b, strict=True)]
        )
        np.testing.assert_array_equal(z, [x if k else s for k, x in zip(cond, a, strict=True)])


def test_scalar_arithmetic_and_constants() -> None:
    out = tensor([2], "f32")
    body = """
  %c = fusion.constant 1.000000e-01 : f32
  %s = fusion.mul %a, %c : f32
  %t = fusion.add %s, %a : f32
  %y = fusion.broadcast_in_dim %t [] : f32 -> tensor<2xf32>
  %k = fusion.constant -7 : i32
  %q = fusion.div %k, %b : i32
  %qi = fusion.broadcast_in_dim %q [] : i32 -> tensor<2xi32>
  %true = fusion.constant true
  %h = fusion.constant 1.000000e-01 : bf16
  %hb = fusion.broadcast_in_dim %h [] : bf16 -> tensor<2xbf16>
  %g = fusion.where %true, %h, %h : (i1, bf16, bf16) -> bf16
  %gb = fusion.broadcast_in_dim %g [] : bf16 -> tensor<2xbf16>
"""
    types = [out, tensor([2], "i32"), tensor([2], "bf16"), tensor([2], "bf16")]
    f = single_op_fusion(["f32", "i32"], body, types, ["%y", "%qi", "%hb", "%gb"])
    y, q, h, g = evaluate(f, [3.0, 2])
    expected = np.float32(np.float32(3.0) * np.float32(0.1)) + np.float32(3.0)
    np.testing.assert_array_equal(y, np.full(2, expected, np.float32))
    np.testing.assert_array_equal(q, [-3, -3])
    assert float(h[0]) == round_exact(0.1, "bf16") == float(g[1])
    # In compute mode the f32 constant is still the f32 value 0.1f, held in float64.
    y64, _, _, _ = evaluate(f, [3.0, 2], compute_dtype=np.float64)
    assert y64.dtype == np.float64
    assert y64[0] == 3.0 * float(np.float32(0.1)) + 3.0


# --------------------------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------------------------


def cast_sources(rng: np.random.Generator, el: str) -> np.ndarray:
    """Values of `el` over its whole range: overflow, underflow, NaN, inf and halves for floats."""
    if el not in FLOATS:
        return random_values(rng, (127,), el)
    random = rng.normal(0, 1, 100) * 10.0 ** rng.uniform(-9, 21, 100)
    special = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.0**31, -(2.0**31), 2.0**63, np.nan, np.inf]
    values = np.concatenate([random, special, [-np.inf], rng.normal(0, 100, 15)])
    with np.errstate(over="ignore"):
        return values.astype(DTYPES[el])


def expected_cast(v: float | int | bool, dst: str, src: str) -> float | int | bool:
    """`v` (of type `src`) cast to `dst` as torch on CUDA does it (NaN to an integer: 0 from
    f32/f16/bf16 to i32, the most negative integer otherwise, as measured on an H200)."""
    if dst == "i1":
        return v != 0
    if dst in INTS:
        bits = 32 if dst == "i32" else 64
        if isinstance(v, float):
            if math.isnan(v):
                return 0 if dst == "i32" and src != "f64" else -(2 ** (bits - 1))
            if math.isinf(v):
                return 2 ** (bits - 1) - 1 if v > 0 else -(2 ** (bits - 1))
            return min(max(math.trunc(v), -(2 ** (bits - 1))), 2 ** (bits - 1) - 1)
        return wrap(int(v), dst)
    return round_exact(v, dst)


@pytest.mark.parametrize("dst", list(DTYPES))
@pytest.mark.parametrize("src", list(DTYPES))
def test_cast_every_pair(src: str, dst: str, rng: np.random.Generator) -> None:
    t_in, t_out = dyn(1, src), dyn(1, dst)
    f = single_op_fusion([t_in], f"  %y = fusion.cast %a : {t_in} -> {t_out}", [t_out], ["%y"])
    x = cast_sources(rng, src)
    (y,) = evaluate(f, [x])
    assert y.dtype == DTYPES[dst]
    py = [float(v) for v in x] if src in FLOATS else x.tolist()
    expected = [expected_cast(v, dst, src) for v in py]
    if dst in FLOATS:
        np.testing.assert_array_equal(as_float64(y), np.array(expected, dtype=np.float64))
    else:
        assert y.tolist() == expected


def test_cast_rounding_and_truncation_examples() -> None:
    ti, tb, ti32 = dyn(1, "f32"), dyn(1, "bf16"), dyn(1, "i32")
    body = (
        f"  %r = fusion.cast %a : {ti} -> {tb}\n  %i = fusion.cast %a : {ti} -> {ti32}\n"
        f"  %h = fusion.cast %b : {dyn(1, 'f64')} -> {tb}"
    )
    f = single_op_fusion([ti, dyn(1, "f64")], body, [tb, ti32, tb], ["%r", "%i", "%h"])
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 2.7, -2.7, 1e10, np.nan], np.float32)
    x64 = np.array([1 + 2**-8 + 2**-30])
    b, i, h = evaluate(f, [x, x64])
    np.testing.assert_array_equal(as_float64(b[:3]), [1.0, 1 + 2**-6, -1.0])
    np.testing.assert_array_equal(i[3:], [2, -2, 2**31 - 1, 0])
    assert float(h[0]) == 1 + 2**-7


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_half_round_trip_through_f32(half: str, rng: np.random.Generator) -> None:
    th, tf = dyn(2, half), dyn(2, "f32")
    body = f"""
  %xf = fusion.cast %a : {th} -> {tf}
  %yf = fusion.mul %xf, %xf : {tf}
  %y = fusion.cast %yf : {tf} -> {th}
  %back = fusion.cast %y : {th} -> {tf}"""
    f = single_op_fusion([th], body, [th, tf], ["%y", "%back"])
    for shape in ((1, 1), (3, 127)):
        x = rng.normal(0, 3, shape).astype(DTYPES[half])
        y, back = evaluate(f, [x])
        assert y.dtype == DTYPES[half] and back.dtype == np.float32
        squares = x.astype(np.float32) * x.astype(np.float32)  # exact: 2 * 11 bits < 24
        expected = [round_exact(v, half) for v in squares.astype(np.float64).ravel().tolist()]
        np.testing.assert_array_equal(as_float64(y).ravel(), expected)
        np.testing.assert_array_equal(back, y.astype(np.float32))


# --------------------------------------------------------------------------------------------
# Copies and broadcasts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["set", "segment_set"])
@pytest.mark.parametrize("el", list(DTYPES))
def test_copies(op: str, el: str, rng: np.random.Generator) -> None:
    t = dyn(2, el)
    f = single_op_fusion([t], f"  %y = fusion.{op} %a : {t}", [t, t], ["%y", "%a"])
    x = random_values(rng, (3, 127), el)
    kept = x.copy()
    y, a = evaluate(f, [x])
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(a, x)
    assert not np.shares_memory(y, x) and not np.shares_memory(a, x)
    y[...] = y[::-1] if el == "i1" else 0
    np.testing.assert_array_equal(x, kept)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_broadcast_new_axis(axis: int, rng: np.random.Generator) -> None:
    dims = [d for d in range(3) if d != axis]
    body = (
        f"  %n = fusion.dim %b[0] : {dyn(1, 'f32')}\n"
        f"  %y = fusion.broadcast_in_dim %a {dims} sizes(%n) : {dyn(2, 'f32')} -> {dyn(3, 'f32')}"
    )
    f = single_op_fusion([dyn(2, "f32"), dyn(1, "f32")], body, [dyn(3, "f32")], ["%y"])
    for shape, n in (((3, 127), 5), ((1, 1), 1), ((127, 3), 1)):
        x = rng.normal(size=shape).astype(np.float32)
        (y,) = evaluate(f, [x, np.zeros(n, np.float32)])
        out_shape = list(shape)
        out_shape.insert(axis, n)
        assert y.shape == tuple(out_shape)
        for k in range(n):
            np.testing.assert_array_equal(np.take(y, k, axis=axis), x)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_broadcast_expands_size_one_dim(axis: int, rng: np.random.Generator) -> None:
    t_in = tensor(["1" if d == axis else "?" for d in range(3)], "f64")
    body = (
        f"  %n = fusion.dim %b[0] : {dyn(1, 'f64')}\n"
        f"  %y = fusion.broadcast_in_dim %a [0, 1, 2] sizes(%n) : {t_in} -> {dyn(3, 'f64')}"
    )
    f = single_op_fusion([t_in, dyn(1, "f64")], body, [dyn(3, "f64")], ["%y"])
    shape = [3, 127, 5]
    shape[axis] = 1
    x = rng.normal(size=shape)
    for n in (1, 3, 127):
        (y,) = evaluate(f, [x, np.ones(n)])
        target = list(shape)
        target[axis] = n
        np.testing.assert_array_equal(y, np.broadcast_to(x, target))


def test_broadcast_static_and_scalar(rng: np.random.Generator) -> None:
    body = f"""
  %y = fusion.broadcast_in_dim %a [1] : tensor<3xf32> -> tensor<4x3xf32>
  %n = fusion.dim %c[0] : {dyn(1, "f32")}
  %s = fusion.broadcast_in_dim %b [] sizes(%n) : f32 -> {dyn(1, "f32")}
  %z = fusion.broadcast_in_dim %c [0] : {dyn(1, "f32")} -> {tensor(["?", 3], "f32")}"""
    types = ["tensor<4x3xf32>", dyn(1, "f32"), tensor(["?", 3], "f32")]
    f = single_op_fusion(["tensor<3xf32>", "f32", dyn(1, "f32")], body, types, ["%y", "%s", "%z"])
    x = rng.normal(size=3).astype(np.float32)
    c = rng.normal(size=127).astype(np.float32)
    y, s, z = evaluate(f, [x, 2.5, c])
    np.testing.assert_array_equal(y, np.stack([x] * 4))
    np.testing.assert_array_equal(s, np.full(127, 2.5, np.float32))
    np.testing.assert_array_equal(z, np.broadcast_to(c[:, None], (127, 3)))


# --------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------

AXES = [axes for k in (1, 2, 3) for axes in combinations(range(3), k)]
SHAPES_3D = ((3, 5, 127), (1, 3, 1))


def reduced_type(axes: Sequence[int], keepdim: bool, el: str) -> str:
    if keepdim:
        return tensor(["1" if d in axes else "?" for d in range(3)], el)
    return dyn(3 - len(axes), el)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reductions(op: str, axes: tuple[int, ...], keepdim: bool, rng: np.random.Generator):
    for el in ("f32", "i32"):
        r = reduced_type(axes, keepdim, el)
        kd = " keepdim" if keepdim else ""
        body = f"  %y = fusion.{op} %a {list(axes)}{kd} : {dyn(3, el)} -> {r}"
        f = single_op_fusion([dyn(3, el)], body, [r], ["%y"])
        for shape in SHAPES_3D:
            if el == "f32":
                x = rng.normal(0, 2, shape).astype(np.float32)
            else:
                x = rng.integers(-(10**6), 10**6, shape, dtype=np.int32)
            (y,) = evaluate(f, [x])
            assert y.dtype == DTYPES[el]
            fn = {"sum": np.sum, "max": np.max, "min": np.min}[op]
            expected = fn(x.astype(np.float64), axis=axes, keepdims=keepdim)
            assert y.shape == expected.shape
            if op == "sum" and el == "f32":
                scale = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=keepdim)
                assert np.all(np.abs(y - expected) <= 1e-6 * scale + 1e-30)
            else:
                np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("axes", AXES)
def test_prod(axes: tuple[int, ...], rng: np.random.Generator) -> None:
    """A float product in f32 (float64 in compute mode), an integer one wrapping in its type
    (odd factors: never 0), 1 over an empty dim."""
    for el in ("f32", "i32"):
        r = reduced_type(axes, False, el)
        body = f"  %y = fusion.prod %a {list(axes)} : {dyn(3, el)} -> {r}"
        f = single_op_fusion([dyn(3, el)], body, [r], ["%y"])
        for shape in [*SHAPES_3D, (3, 0, 2)]:
            if el == "f32":
                x = np.exp(rng.normal(0, 0.01, shape)).astype(np.float32)
                (y,) = evaluate(f, [x], compute_dtype=np.float64)
                expected = np.prod(x.astype(np.float64), axis=axes)
                np.testing.assert_allclose(y, expected, rtol=1e-12)
                (y32,) = evaluate(f, [x])
                np.testing.assert_allclose(y32, expected, rtol=1e-4)
                assert y32.dtype == np.float32
            else:
                x = rng.choice(np.array([-3, -1, 1, 3, 5], np.int32), shape)
                (y,) = evaluate(f, [x])
                big = np.prod(x.astype(object), axis=axes)  # exact, then wrapped to 32 bits
                wrap = np.vectorize(lambda v: (v + 2**31) % 2**32 - 2**31, otypes=[np.int64])
                np.testing.assert_array_equal(y, wrap(big).astype(np.int32))
                assert y.dtype == np.int32
            if 0 in shape and any(shape[a] == 0 for a in axes):
                assert (y == 1).all()


def test_sum_in_compute_mode_accumulates_in_float64(rng: np.random.Generator) -> None:
    body = f"  %y = fusion.sum %a [0, 2] : {dyn(3, 'f32')} -> {dyn(1, 'f32')}"
    f = single_op_fusion([dyn(3, "f32")], body, [dyn(1, "f32")], ["%y"])
    x = (rng.normal(0, 1, (127, 3, 127)) * 1e4).astype(np.float32)
    (y,) = evaluate(f, [x], compute_dtype=np.float64)
    (y32,) = evaluate(f, [x])
    expected = np.sum(x.astype(np.float64), axis=(0, 2))
    assert y.dtype == np.float64 and y32.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-12)
    assert np.max(np.abs(y32 - expected)) > 0  # float32 accumulation does round


def test_reductions_propagate_nan_and_reduce_empty_to_identity() -> None:
    body = (
        f"  %mx = fusion.max %a [1] : {dyn(2, 'f32')} -> {dyn(1, 'f32')}\n"
        f"  %mn = fusion.min %a [1] : {dyn(2, 'f32')} -> {dyn(1, 'f32')}\n"
        f"  %s = fusion.sum %a [1] : {dyn(2, 'f32')} -> {dyn(1, 'f32')}"
    )
    f = single_op_fusion([dyn(2, "f32")], body, [dyn(1, "f32")] * 3, ["%mx", "%mn", "%s"])
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -6.0]], np.float32)
    mx, mn, s = evaluate(f, [x])
    np.testing.assert_array_equal(mx, [np.nan, 5.0])
    np.testing.assert_array_equal(mn, [np.nan, -6.0])
    np.testing.assert_array_equal(s, [np.nan, 3.0])
    mx, mn, s = evaluate(f, [np.zeros((3, 0), np.float32)])
    np.testing.assert_array_equal(mx, [-np.inf] * 3)
    np.testing.assert_array_equal(mn, [np.inf] * 3)
    np.testing.assert_array_equal(s, [0.0] * 3)


def moments64(x: np.ndarray, axes: Sequence[int], keepdim: bool) -> tuple[Any, Any, int]:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=tuple(axes), keepdims=True)
    var_sum = ((x64 - mean) ** 2).sum(axis=tuple(axes), keepdims=keepdim)
    n = math.prod(x.shape[a] for a in axes)
    return (mean if keepdim else np.squeeze(mean, axis=tuple(axes))), var_sum, n


@pytest.mark.parametrize("axes", AXES)
def test_welford_large_mean(axes: tuple[int, ...], rng: np.random.Generator) -> None:
    r = reduced_type(axes, False, "f32")
    ri = reduced_type(axes, False, "i64")
    body = f"  %m, %v, %n = fusion.welford %a {list(axes)} : {dyn(3, 'f32')} -> {r}, {r}, {ri}"
    f = single_op_fusion([dyn(3, "f32")], body, [r, r, ri], ["%m", "%v", "%n"])
    for shape in SHAPES_3D:
        x = rng.normal(1e4, 1.0, shape).astype(np.float32)
        mean, var_sum, count = evaluate(f, [x])
        e_mean, e_var_sum, n = moments64(x, axes, False)
        assert mean.dtype == var_sum.dtype == np.float32 and count.dtype == np.int64
        np.testing.assert_allclose(mean, e_mean, rtol=1e-6)
        # Rounding the mean to f32 (|error| <~ ulp(1e4) = 1e-3) biases var_sum by N * error**2.
        np.testing.assert_allclose(var_sum, e_var_sum, rtol=1e-4, atol=n * 1e-5)
        np.testing.assert_array_equal(count, np.full(e_mean.shape, n))
        mean, var_sum, count = evaluate(f, [x], compute_dtype=np.float64)
        np.testing.assert_allclose(mean, e_mean, rtol=1e-13)
        np.testing.assert_allclose(var_sum, e_var_sum, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axes", AXES)
def test_var_mean_large_mean(axes, keepdim: bool, correction: int, rng: np.random.Generator):
    for el in ("f32", "f64"):
        r = reduced_type(axes, keepdim, el)
        kd = " keepdim" if keepdim else ""
        body = (
            f"  %v, %m = fusion.var_mean %a {list(axes)} correction({correction}){kd} : "
            f"{dyn(3, el)} -> {r}, {r}"
        )
        f = single_op_fusion([dyn(3, el)], body, [r, r], ["%v", "%m"])
        x = rng.normal(1e4, 1.0, (3, 5, 127)).astype(DTYPES[el])
        var, mean = evaluate(f, [x])
        e_mean, e_var_sum, n = moments64(x, axes, keepdim)
        e_var = e_var_sum / max(n - correction, 0) if n > correction else e_var_sum / 0
        assert var.dtype == mean.dtype == DTYPES[el]
        np.testing.assert_allclose(mean, e_mean, rtol=1e-6 if el == "f32" else 1e-14)
        if el == "f32":  # see test_welford_large_mean for the absolute term
            np.testing.assert_allclose(
                var, e_var, rtol=1e-4, atol=n * 1e-5 / max(n - correction, 1)
            )
        else:
            np.testing.assert_allclose(var, e_var, rtol=1e-10)


def test_var_mean_correction_beyond_count() -> None:
    t = dyn(2, "f32")
    body = (
        f"  %v, %m = fusion.var_mean %a [1] correction(4) : {t} -> {dyn(1, 'f32')}, {dyn(1, 'f32')}"
    )
    f = single_op_fusion([t], body, [dyn(1, "f32")] * 2, ["%v", "%m"])
    var, mean = evaluate(f, [np.array([[1.0, 2.0, 6.0], [2.0, 2.0, 2.0]], np.float32)])
    np.testing.assert_array_equal(var, [np.inf, np.nan])
    np.testing.assert_array_equal(mean, [3.0, 2.0])


# --------------------------------------------------------------------------------------------
# Matmul
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("el", FLOATS)
def test_matmul(el: str, rng: np.random.Generator) -> None:
    body = (
        f"  %y = fusion.matmul %a, %b : {dyn(2, el)}, {dyn(2, el)} -> {dyn(2, el)}\n"
        f"  %z = fusion.matmul %c, %d : {tensor([2, '?', '?'], el)}, {dyn(3, el)} -> {dyn(3, el)}"
    )
    types = [dyn(2, el), dyn(2, el), tensor([2, "?", "?"], el), dyn(3, el)]
    f = single_op_fusion(types, body, [dyn(2, el), dyn(3, el)], ["%y", "%z"])
    for m, k, n in ((3, 127, 5), (1, 1, 1), (127, 3, 1)):
        a, b = (rng.normal(size=s).astype(DTYPES[el]) for s in ((m, k), (k, n)))
        c, d = (rng.normal(size=s).astype(DTYPES[el]) for s in ((2, m, k), (2, k, n)))
        y, z = evaluate(f, [a, b, c, d])
        assert y.dtype == z.dtype == DTYPES[el] and y.shape == (m, n) and z.shape == (2, m, n)
        a64, b64, c64, d64 = (as_float64(v) for v in (a, b, c, d))
        exact = [a64 @ b64, c64 @ d64]
        # Rounding the result (half an ulp) plus accumulating k products in float32/float64.
        rel = {"f16": 2.0**-11, "bf16": 2.0**-8, "f32": 2.0**-24, "f64": 2.0**-53}[el]
        acc = k * (2.0**-53 if el == "f64" else 2.0**-24)
        scales = [np.abs(a64) @ np.abs(b64), np.abs(c64) @ np.abs(d64)]
        for got, want, scale in zip((y, z), exact, scales, strict=True):
            bound = 2 * (rel * np.abs(want) + acc * scale) + 2.0**-24
            assert np.all(np.abs(as_float64(got) - want) <= bound)
        if el in ("f16", "bf16"):  # accumulated in float32, rounded once
            f32 = a.astype(np.float32) @ b.astype(np.float32)
            np.testing.assert_array_equal(y, f32.astype(DTYPES[el]))
            y64, _ = evaluate(f, [a, b, c, d], compute_dtype=np.float64)
            np.testing.assert_array_equal(y64, round_to_float(exact[0], DTYPES[el]))


def test_half_matmul_accumulates_in_float32() -> None:
    t = dyn(2, "f16")
    f = single_op_fusion([t, t], f"  %y = fusion.matmul %a, %b : {t}, {t} -> {t}", [t], ["%y"])
    # The exact dot product, 1 + 2**-11 + 2**-24, rounds up to 1 + 2**-10 in f16; float32 drops
    # the 2**-25 terms, leaving the tie 1 + 2**-11, which rounds to even: 1.
    a = np.array([[1, 2**-11, 2**-12, 2**-12]], np.float16)
    b = np.array([[1], [1], [2**-13], [2**-13]], np.float16)
    assert float(evaluate(f, [a, b])[0][0, 0]) == 1.0
    assert float(evaluate(f, [a, b], compute_dtype=np.float64)[0][0, 0]) == 1 + 2**-10


@pytest.mark.parametrize(("el", "splits", "k"), [("bf16", 4, 37), ("f32", 3, 2), ("f64", 1, 5)])
def test_split_k_partials_sum_to_the_matmul(
    el: str, splits: int, k: int, rng: np.random.Generator
) -> None:
    acc = "f64" if el == "f64" else "f32"
    a_t, b_t = tensor([2, 3, k], el), tensor([2, k, 5], el)
    p_t = tensor([splits, 2, 3, 5], acc)
    f = single_op_fusion(
        [a_t, b_t],
        f"  %p = fusion.matmul %a, %b splits({splits}) : {a_t}, {b_t} -> {p_t}",
        [p_t],
        ["%p"],
    )
    a, b = random_values(rng, [2, 3, k], el), random_values(rng, [2, k, 5], el)
    (partial,) = evaluate(f, [a, b])
    assert partial.shape == (splits, 2, 3, 5) and partial.dtype == DTYPES[acc]
    chunk = -(-k // splits)
    for j in range(splits):  # each slice is the product over its own K chunk
        want = (
            as_float64(a)[..., j * chunk : (j + 1) * chunk]
            @ as_float64(b)[..., j * chunk : (j + 1) * chunk, :]
        )
        np.testing.assert_allclose(partial[j], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(partial.sum(0), as_float64(a) @ as_float64(b), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("el", "axis", "n", "splits"),
    [("f32", 0, 4097, 8), ("f32", 1, 127, 4), ("f64", 0, 3, 5), ("i32", 1, 1, 2), ("f32", 0, 0, 3)],
)
def test_partial_sum_chunks_sum_to_the_sum(
    el: str, axis: int, n: int, splits: int, rng: np.random.Generator
) -> None:
    """Chunk g of `partial_sum` sums rows [g c, (g + 1) c) of its axis, c = ceil(n / splits)
    (chunks past n are empty: 0), and the chunks sum to the plain sum; n = 3 with 5 splits has
    empty chunks, n = 0 all empty."""
    shape = [n, 5] if axis == 0 else [6, n]
    out_shape = [splits, 5] if axis == 0 else [6, splits]
    x_t, p_t = tensor(["?", "?"], el), tensor(out_shape, el)
    f = single_op_fusion(
        [x_t],
        f"  %p = fusion.partial_sum %a [{axis}] splits({splits}) : {x_t} -> {p_t}",
        [p_t],
        ["%p"],
    )
    x = random_values(rng, shape, el)
    (partial,) = evaluate(f, [x])
    assert partial.shape == tuple(out_shape) and partial.dtype == DTYPES[el]
    chunk = -(-n // splits) if n else 0
    wide = x.astype(np.float64)
    for g in range(splits):
        rows = np.arange(g * chunk, min((g + 1) * chunk, n), dtype=np.int64)
        want = np.take(wide, rows, axis=axis).sum(axis=axis)
        np.testing.assert_allclose(np.take(partial, g, axis=axis), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(partial.sum(axis), wide.sum(axis), rtol=1e-5, atol=1e-3)


# --------------------------------------------------------------------------------------------
# Compute mode, dynamic dims, coverage
# --------------------------------------------------------------------------------------------


def test_compute_mode_holds_f32_in_float64(rng: np.random.Generator) -> None:
    tf, th = dyn(1, "f32"), dyn(1, "f16")
    body = f"""
  %e = fusion.exp %a : {tf}
  %h = fusion.cast %e : {tf} -> {th}
  %back = fusion.cast %h : {th} -> {tf}
  %d = fusion.cast %a : {tf} -> {dyn(1, "f64")}"""
    f = single_op_fusion([tf], body, [tf, tf, th, dyn(1, "f64")], ["%e", "%back", "%h", "%d"])
    x = rng.normal(0, 2, 127).astype(np.float32)
    e, back, h, d = evaluate(f, [x], compute_dtype=np.float64)
    assert (e.dtype, back.dtype, h.dtype, d.dtype) == (
        np.float64,
        np.float64,
        np.float16,
        np.float64,
    )
    np.testing.assert_array_equal(e, np.exp(x.astype(np.float64)))
    np.testing.assert_array_equal(h, np.exp(x.astype(np.float64)).astype(np.float16))
    np.testing.assert_array_equal(back, h.astype(np.float64))
    e32, _, _, _ = evaluate(f, [x], compute_dtype=np.float32)
    assert e32.dtype == np.float32
    for wrong in (np.float16, "x", object()):
        with pytest.raises(InputError, match="compute_dtype"):
            evaluate(f, [x], compute_dtype=wrong)


def test_layer_norm_example(rng: np.random.Generator) -> None:
    with open("examples/layer_norm.mlir") as file:
        f = parse_fusion(file.read())
    for n, d in ((1, 1), (3, 127), (127, 3)):
        x = rng.normal(3, 2, (n, d)).astype(ml_dtypes.bfloat16)
        w, b = (rng.normal(size=d).astype(ml_dtypes.bfloat16) for _ in range(2))
        y, mean, invstd = evaluate(f, [x, w, b])
        assert (y.dtype, mean.dtype, invstd.dtype) == (DTYPES["bf16"], np.float32, np.float32)
        x64 = x.astype(np.float64)
        mu, var = x64.mean(1), x64.var(1)
        expected = (x64 - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * as_float64(w) + as_float64(
            b
        )
        np.testing.assert_allclose(mean, mu, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(invstd, 1 / np.sqrt(var + 1e-5), rtol=1e-4)
        np.testing.assert_allclose(as_float64(y), expected, rtol=2**-7, atol=2**-6)


def test_dim_gives_run_time_extents(rng: np.random.Generator) -> None:
    body = f"""
  %n0 = fusion.dim %a[0] : {dyn(2, "i64")}
  %n1 = fusion.dim %a[1] : {dyn(2, "i64")}
  %y = fusion.broadcast_in_dim %b [] sizes(%n1, %n0) : i64 -> {dyn(2, "i64")}"""
    f = single_op_fusion([dyn(2, "i64"), "i64"], body, [dyn(2, "i64")], ["%y"])
    for shape in ((1, 3), (127, 1), (3, 127)):
        (y,) = evaluate(f, [random_values(rng, shape, "i64"), 2**40])
        np.testing.assert_array_equal(y, np.full(shape[::-1], 2**40))


def test_every_op_has_an_implementation() -> None:
    implemented = {op for op, _ in FusionFunctions._impls()}
    assert implemented == set(Fusion.operations) - {FusionOp}


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.fixture
def two_inputs() -> FusionOp:
    body = f"  %y = fusion.add %x, %w : {tensor(['?', 4], 'f32')}"
    return parse_fusion(
        f"fusion.fusion @g(%x: {tensor(['?', 4], 'f32')}, %w: {tensor(['?', 4], 'f32')}, "
        f"%s: f32, %k: i32, %p: i1) -> ({tensor(['?', 4], 'f32')}) {{\n{body}\n"
        f"  fusion.output %y : {tensor(['?', 4], 'f32')}\n}}"
    )


def good_inputs(rng: np.random.Generator) -> list[object]:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    return [x, x + 1, 1.5, 7, True]


@pytest.mark.parametrize(
    ("index", "value", "message"),
    [
        (
            1,
            np.ones((3, 4), np.float64),
            r"input #1 \(%w\): expected dtype float32 \(f32\), got float64",
        ),
        (1, np.ones(4, np.float32), r"input #1 \(%w\): expected rank 2, got rank 1"),
        (
            0,
            np.ones((3, 5), np.float32),
            r"input #0 \(%x\): expected extent 4 in dim 1 .*got shape \(3, 5\)",
        ),
        (0, [[1.0] * 4] * 3, r"input #0 \(%x\): expected a numpy array of dtype float32.*got list"),
        (
            2,
            np.ones(1, np.float32),
            r"input #2 \(%s\): expected a number for scalar f32, got ndarray",
        ),
        (2, True, r"input #2 \(%s\): expected a number for scalar f32, got bool"),
        (3, 2.5, r"input #3 \(%k\): expected an integer for scalar i32, got float"),
        (3, 2**31, r"input #3 \(%k\): 2147483648 is out of range for scalar i32"),
        (4, 1, r"input #4 \(%p\): expected a bool for scalar i1, got int"),
    ],
)
def test_input_errors(two_inputs: FusionOp, index: int, value: object, message: str, rng) -> None:
    inputs = good_inputs(rng)
    evaluate(two_inputs, inputs)  # the good inputs are accepted
    inputs[index] = value
    with pytest.raises(InputError, match=message):
        evaluate(two_inputs, inputs)


def test_input_count_error(two_inputs: FusionOp, rng: np.random.Generator) -> None:
    with pytest.raises(InputError, match=r"@g takes 5 input\(s\) \(%x, %w, %s, %k, %p\), got 4"):
        evaluate(two_inputs, good_inputs(rng)[:4])


def test_run_time_shape_mismatch_names_the_op(two_inputs: FusionOp, rng) -> None:
    inputs = good_inputs(rng)
    inputs[1] = np.ones((5, 4), np.float32)
    with pytest.raises(InputError, match=r"'fusion.add' defining %y: .*\(3, 4\), \(5, 4\)"):
        evaluate(two_inputs, inputs)


def test_static_result_dim_mismatch_names_the_op(rng: np.random.Generator) -> None:
    t = dyn(1, "f32")
    f = single_op_fusion(
        [t], f"  %0 = fusion.add %a, %a : ({t}, {t}) -> tensor<3xf32>", ["tensor<3xf32>"], ["%0"]
    )
    evaluate(f, [np.ones(3, np.float32)])
    with pytest.raises(InputError, match=r"'fusion.add' \(op #0 of its block\): .*needs extent 3"):
        evaluate(f, [np.ones(4, np.float32)])


def test_broadcast_mismatch_names_the_op() -> None:
    t = dyn(1, "f32")
    f = single_op_fusion(
        [t],
        f"  %y = fusion.broadcast_in_dim %a [1] : {t} -> tensor<2x4xf32>",
        ["tensor<2x4xf32>"],
        ["%y"],
    )
    np.testing.assert_array_equal(evaluate(f, [np.ones(1, np.float32)])[0], np.ones((2, 4)))
    with pytest.raises(InputError, match=r"'fusion.broadcast_in_dim' defining %y: operand dim 0"):
        evaluate(f, [np.ones(3, np.float32)])


def test_matmul_mismatch_names_the_op() -> None:
    t = dyn(2, "f32")
    f = single_op_fusion([t, t], f"  %y = fusion.matmul %a, %b : {t}, {t} -> {t}", [t], ["%y"])
    with pytest.raises(InputError, match=r"'fusion.matmul' defining %y: run-time shapes \(2, 3\)"):
        evaluate(f, [np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)])


def test_invalid_fusion_is_a_verification_error() -> None:
    t = dyn(1, "f16")
    f = single_op_fusion([t], f"  %y = fusion.exp %a : {t}", [t], ["%y"])
    with pytest.raises(VerificationError, match="storage types"):
        evaluate(f, [np.ones(2, np.float16)])


def test_segmented_fusion_matches_the_unsegmented_one(rng: np.random.Generator) -> None:
    """A segmented fusion evaluates each segment's region; the result is the fusion's."""
    text = (Path(__file__).parent.parent / "lit_tests/dialects/fusion/segment.mlir").read_text()
    segmented = parse_fusion(text)
    x = random_values(rng, (3, 127), "f32") + 4.0
    (y,) = evaluate(segmented, [x, 2.5])
    np.testing.assert_allclose(y, x / x.sum(axis=0) * np.float32(2.5), rtol=1e-6)
