"""Every fusion-dialect op through the frontend on the GPU, checked against the float64 numpy
reference (`fd.reference(..., compute_dtype=np.float64)`).

Covered: each unary op on f32/f16/bf16 (with NaN, +-inf and signed zeros mixed into the data);
each binary op and comparison in its tensor-tensor, tensor-number, number-tensor,
tensor-scalar-input, scalar-input-tensor and scalar-scalar forms, and across f16 x bf16
promotion; `where`; `cast` between every pair of f16/bf16/f32/f64/i32/i64/bool, with
truncation, saturation, wrap-around and NaN; `set`; `segment_set` (no scheduler accepts it yet:
the clear error is checked); `broadcast_in_dim` onto every subset of the axes of a 4-D tensor,
from rank 0 and from a scalar; integer ops (`div` truncating toward zero, `maximum`/`minimum`,
`pow` through f64) on i32/i64; Bool arithmetic; NaN propagation of `maximum`/`minimum`; sizes
1, 3, 127, 1000, 4097 and 65537; non-contiguous torch inputs; the edge semantics decided by torch
on CUDA (`var_mean` of rows holding infinities, float -> int casts of NaN, inf and out-of-range
values, `pow` of negative bases and exponents, integer division by zero) against the reference
and against torch itself. `test_execute_gpu.py` covers the kinds of inputs (numpy, torch, cupy,
DeviceArray), the signature cache and streams.

Fusions are built once per module (`functools.cache`), so every size of a case reuses the
compiled kernels. Tolerances are by output dtype (`TOL`), looser for f32 transcendental ops;
NaN must sit where the reference has it, integers and bools must be equal. Each run also checks
that the pointwise scheduler took the fusion.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from gpu_helpers import F32, assert_close, numpy_of, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

SIZES = [1, 3, 127, 1000, 4097, 65537]
FLOATS = [DataType.Float, DataType.Half, DataType.BFloat16]
ALL_DTYPES = [*FLOATS, DataType.Double, DataType.Int32, DataType.Int, DataType.Bool]

TRANSCENDENTAL = {F32: (1e-4, 1e-5)}
"""The f32 tolerance of ops computed with CUDA's math library (exp, erf, pow, ...)."""


def np_dtype(dtype: DataType) -> np.dtype:
    return numpy_dtype(dtype.element_type)


# --------------------------------------------------------------------------------------------
# Data and checks


def floats(rng: np.random.Generator, n: int, dtype: np.dtype, scale: float = 2.0) -> np.ndarray:
    """Normal values (std `scale`), rounded once to `dtype`."""
    return round_to_float(scale * rng.standard_normal(n), dtype)


def tie_prone(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    """Half multiples of 0.5 in [-3, 3] (so two inputs are often equal), half normal values."""
    grid = rng.integers(-6, 7, n) / 2
    mixed = np.where(rng.random(n) < 0.5, grid, 2.0 * rng.standard_normal(n))
    return round_to_float(mixed, dtype)


def positive(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    """Log-uniform values in [e**-4, e**3]."""
    return round_to_float(np.exp(rng.uniform(-4.0, 3.0, n)), dtype)


def away_from_zero(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    """Magnitudes in [0.5, 4], random signs: divisors."""
    signs = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return round_to_float(signs * rng.uniform(0.5, 4.0, n), dtype)


def sprinkle(rng: np.random.Generator, a: np.ndarray, values: Sequence[float]) -> np.ndarray:
    """`a` with `values` written at random distinct positions (arrays of 16 or more only, so
    that the rest of the data still probes precision)."""
    if a.size < 16:
        return a
    out = a.copy()
    at = rng.choice(a.size, len(values), replace=False)
    out.flat[at] = np.asarray(values, dtype=np.float64).astype(a.dtype)
    return out


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]


def check(
    fd: FusionDefinition,
    inputs: Sequence[Any],
    labels: Sequence[str],
    tol: dict[np.dtype, tuple[float, float]] | None = None,
    outputs: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Runs `fd` on numpy `inputs` (unless `outputs` are given) and checks every output's dtype
    and values against the float64 reference; `labels` name the outputs in messages. Every
    fusion here is pointwise: a run also checks that the pointwise scheduler took it."""
    if outputs is None:
        outputs = fd.execute(list(inputs))
        assert scheduler_names(fd, inputs) == ["pointwise"]
    expected = fd.reference(list(inputs), compute_dtype=np.float64)
    assert len(outputs) == len(expected) == len(labels)
    for i, (out, ref, t) in enumerate(zip(outputs, expected, fd.outputs, strict=True)):
        what = f"output #{i} {labels[i]}"
        assert out.dtype == np_dtype(t.dtype), f"{what}: dtype {out.dtype}, declared {t.dtype}"
        dtype_tol = (tol or {}).get(out.dtype)
        assert_close(out, ref, what, dtype_tol)
    return list(outputs)


def scheduler_names(fd: FusionDefinition, inputs: Sequence[Any]) -> list[str]:
    """The schedulers of the kernels `fd` runs for `inputs` (compiled already: a cache hit)."""
    return [k.scheduler for k in fd.compile(list(inputs)).kernels]


# --------------------------------------------------------------------------------------------
# Unary ops

# name -> (fd.ops call, input domain, uses CUDA's math library)
UNARY: dict[str, tuple[Callable[[Any, Any], Any], str, bool]] = {
    "neg": (lambda fd, x: fd.ops.neg(x), "any", False),
    "abs": (lambda fd, x: fd.ops.abs(x), "any", False),
    "relu": (lambda fd, x: fd.ops.relu(x), "any", False),
    "exp": (lambda fd, x: fd.ops.exp(x), "any", True),
    "log": (lambda fd, x: fd.ops.log(x), "positive", True),
    "sqrt": (lambda fd, x: fd.ops.sqrt(x), "positive", True),
    "rsqrt": (lambda fd, x: fd.ops.rsqrt(x), "positive", True),
    "reciprocal": (lambda fd, x: fd.ops.reciprocal(x), "any", False),
    "sin": (lambda fd, x: fd.ops.sin(x), "any", True),
    "cos": (lambda fd, x: fd.ops.cos(x), "any", True),
    "tanh": (lambda fd, x: fd.ops.tanh(x), "any", True),
    "sigmoid": (lambda fd, x: fd.ops.sigmoid(x), "any", True),
    "erf": (lambda fd, x: fd.ops.erf(x), "any", True),
    "silu": (lambda fd, x: fd.ops.silu(x), "any", True),
    "gelu_none": (lambda fd, x: fd.ops.gelu(x, approximate="none"), "any", True),
    "gelu_tanh": (lambda fd, x: fd.ops.gelu(x, approximate="tanh"), "any", True),
}


@functools.cache
def unary_fusion(name: str) -> FusionDefinition:
    """`name` applied to an f32, an f16 and a bf16 input (half math in f32, cast back)."""
    op = UNARY[name][0]
    with FusionDefinition(f"unary_{name}") as fd:
        for dtype in FLOATS:
            fd.add_output(op(fd, fd.define_tensor([-1], dtype)))
    return fd


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(rng: np.random.Generator, name: str, n: int) -> None:
    _, domain, transcendental = UNARY[name]
    fd = unary_fusion(name)
    inputs = []
    for dtype in FLOATS:
        if domain == "positive":  # a negative value and the specials check NaN and inf too
            x = sprinkle(rng, positive(rng, n, np_dtype(dtype)), [*SPECIALS, -1.5])
        else:
            x = sprinkle(rng, floats(rng, n, np_dtype(dtype), 3.0), SPECIALS)
        inputs.append(x)
    check(
        fd,
        inputs,
        [f"{name}({d.name})" for d in FLOATS],
        TRANSCENDENTAL if transcendental else None,
    )


# --------------------------------------------------------------------------------------------
# Binary ops and comparisons

BINARY = ["add", "sub", "mul", "div", "truediv", "pow", "maximum", "minimum"]
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]
CONSTANT = {"pow": 1.5, "div": 0.75, "truediv": -1.25}
"""The Python number of the tensor-number forms (0.5 for the others: on the tie grid)."""


@functools.cache
def binary_fusion(name: str) -> tuple[FusionDefinition, tuple[str, ...]]:
    """Every form of binary op `name` for each float dtype: tensor-tensor, tensor-number,
    number-tensor, tensor-scalar, scalar-tensor (scalar inputs are f64, which promote to the
    tensor's type), scalar-scalar broadcast to a tensor, and f16 x bf16 (promotes to f32)."""
    c = CONSTANT.get(name, 0.5)
    labels: list[str] = []
    with FusionDefinition(f"binary_{name}") as fd:
        op = getattr(fd.ops, name)
        pairs = [(fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)) for dtype in FLOATS]
        s, s2 = fd.define_scalar(), fd.define_scalar()
        for dtype, (x, y) in zip(FLOATS, pairs, strict=True):
            forms = {
                "x, y": op(x, y),
                f"x, {c}": op(x, c),
                f"{c}, y": op(c, y),
                "x, s": op(x, s),
                "s, y": op(s, y),
            }
            for form, value in forms.items():
                fd.add_output(value)
                labels.append(f"{name}({form}) {dtype.name}")
        fd.add_output(fd.ops.broadcast_in_dim(op(s, s2), pairs[0][0].shape(), []))
        labels.append(f"{name}(s, s2) broadcast")
        fd.add_output(op(pairs[1][0], pairs[2][1]))
        labels.append(f"{name}(x Half, y BFloat16)")
    return fd, tuple(labels)


def binary_inputs(rng: np.random.Generator, name: str, n: int) -> list[Any]:
    tensors: list[np.ndarray] = []
    for dtype in FLOATS:
        d = np_dtype(dtype)
        if name == "pow":  # positive bases, small exponents
            x, y = positive(rng, n, d), round_to_float(rng.uniform(-2.0, 2.0, n), d)
        elif name in ("div", "truediv"):
            x, y = floats(rng, n, d), away_from_zero(rng, n, d)
        else:
            x, y = tie_prone(rng, n, d), tie_prone(rng, n, d)
        tensors += [sprinkle(rng, x, [np.nan, np.inf, -np.inf]), y]
    if name == "pow":
        s, s2 = float(rng.uniform(0.5, 2.0)), float(rng.uniform(-2.0, 2.0))
    elif name in ("div", "truediv"):
        s, s2 = float(rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0)), 0.75
    else:  # on the tie grid (and exact in every float type)
        s, s2 = float(rng.integers(-6, 7) / 2), float(rng.integers(-6, 7) / 2)
    return [*tensors, s, s2]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", BINARY + COMPARISONS)
def test_binary(rng: np.random.Generator, name: str, n: int) -> None:
    fd, labels = binary_fusion(name)
    check(fd, binary_inputs(rng, name, n), labels, TRANSCENDENTAL if name == "pow" else None)


# --------------------------------------------------------------------------------------------
# Integer and Bool ops


@functools.cache
def integer_fusion() -> tuple[FusionDefinition, tuple[str, ...]]:
    """Integer arithmetic on i32 and i64 in every form; `pow` computes in f64 and truncates."""
    labels: list[str] = []
    with FusionDefinition("integer_ops") as fd:
        tensors = {}
        for dtype in (DataType.Int32, DataType.Int):
            tensors[dtype] = [fd.define_tensor([-1], dtype) for _ in range(4)]  # x, y, base, exp
        s = fd.define_scalar(dtype=DataType.Int)

        def out(label: str, value: Any) -> None:
            fd.add_output(value)
            labels.append(label)

        ops = fd.ops
        for dtype, (x, y, b, e) in tensors.items():
            t = dtype.name
            out(f"add {t}", ops.add(x, y))
            out(f"sub {t}", ops.sub(x, y))
            out(f"mul {t}", ops.mul(x, y))
            out(f"div {t}", ops.div(x, y))
            out(f"div(x, 7) {t}", ops.div(x, 7))
            out(f"div(-100, y) {t}", ops.div(-100, y))
            out(f"div(x, s) {t}", ops.div(x, s))
            out(f"truediv {t} -> Float", ops.truediv(x, y))
            out(f"maximum {t}", ops.maximum(x, y))
            out(f"minimum {t}", ops.minimum(x, y))
            out(f"maximum(x, 0) {t}", ops.maximum(x, 0))
            out(f"minimum(s, y) {t}", ops.minimum(s, y))
            out(f"neg {t}", ops.neg(x))
            out(f"abs {t}", ops.abs(x))
            out(f"relu {t}", ops.relu(x))
            out(f"pow {t}", ops.pow(b, e))
            out(f"pow(b, 2) {t}", ops.pow(b, 2))
            out(f"add(x, s) {t}", ops.add(x, s))
            out(f"mul(x, 2.5) {t} -> Float", ops.mul(x, 2.5))
            # |x / scale| <= 30: exp stays inside f32 (the oracle holds f32 in f64: no inf)
            scale = 1000 if dtype == DataType.Int32 else 10**8
            out(f"exp(div(x, {scale})) {t} -> Float", ops.exp(ops.div(x, scale)))
            out(f"sqrt {t} -> Float", ops.sqrt(ops.abs(y)))
            for name in COMPARISONS:
                out(f"{name} {t}", getattr(ops, name)(x, y))
            out(f"lt(x, s) {t}", ops.lt(x, s))
            out(f"where(x > y, x, y) {t}", ops.where(ops.gt(x, y), x, y))
        x32, y32 = tensors[DataType.Int32][:2]
        x64 = tensors[DataType.Int][0]
        out("add(Int32, Int) -> Int", ops.add(x32, x64))
        out("div(Int, Int32) -> Int", ops.div(x64, y32))
    return fd, tuple(labels)


@pytest.mark.parametrize("n", SIZES)
def test_integer_ops(rng: np.random.Generator, n: int) -> None:
    fd, labels = integer_fusion()
    inputs: list[Any] = []
    for dtype, high in ((np.int32, 30_000), (np.int64, 3_000_000_000)):
        x = rng.integers(-high, high, n).astype(dtype)
        # small divisors of both signs, and x itself in places (ties for the comparisons); a zero
        # divisor is -1 on both sides (see `fd.ops.div`)
        y = (rng.integers(1, 50, n) * rng.choice([-1, 1], n)).astype(dtype)
        y = np.where(rng.random(n) < 0.3, x, y).astype(dtype)
        base = rng.integers(-6, 7, n).astype(dtype)
        exponent = rng.integers(0, 5, n).astype(dtype)
        inputs += [x, y, base, exponent]
    inputs.append(int(rng.integers(1, 20)) * int(rng.choice([-1, 1])))
    check(fd, inputs, labels, TRANSCENDENTAL)


@functools.cache
def bool_fusion() -> tuple[FusionDefinition, tuple[str, ...]]:
    """Bool operands: add/mul/maximum/minimum compute in i32 and cast back (or, and), and the
    comparisons; Bool with a number promotes (True + 1 is Int)."""
    labels: list[str] = []
    with FusionDefinition("bool_ops") as fd:
        a, b = fd.define_tensor([-1], DataType.Bool), fd.define_tensor([-1], DataType.Bool)
        p = fd.define_scalar(dtype=DataType.Bool)
        values = {
            "add": fd.ops.add(a, b),
            "mul": fd.ops.mul(a, b),
            "maximum": fd.ops.maximum(a, b),
            "minimum": fd.ops.minimum(a, p),
            "add(a, 1) -> Int": fd.ops.add(a, 1),
            "mul(a, 2.5) -> Float": fd.ops.mul(a, 2.5),
            "where(a, b, p)": fd.ops.where(a, b, p),
            **{name: getattr(fd.ops, name)(a, b) for name in COMPARISONS},
        }
        for label, value in values.items():
            fd.add_output(value)
            labels.append(label)
    return fd, tuple(labels)


@pytest.mark.parametrize("n", [1, 3, 127, 4097])
def test_bool_ops(rng: np.random.Generator, n: int) -> None:
    fd, labels = bool_fusion()
    check(fd, [rng.random(n) < 0.5, rng.random(n) < 0.5, bool(rng.random() < 0.5)], labels)


# --------------------------------------------------------------------------------------------
# NaN propagation of maximum/minimum


@functools.cache
def nan_fusion() -> tuple[FusionDefinition, tuple[str, ...]]:
    labels: list[str] = []
    with FusionDefinition("nan_max_min") as fd:
        s = fd.define_scalar()
        for dtype in FLOATS:
            x, y = fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)
            for name in ("maximum", "minimum"):
                op = getattr(fd.ops, name)
                for form, value in (
                    ("x, y", op(x, y)),
                    ("y, x", op(y, x)),
                    ("x, nan", op(x, float("nan"))),
                    ("s, y", op(s, y)),
                    ("relu(x)", fd.ops.relu(x)),
                ):
                    fd.add_output(value)
                    labels.append(f"{name}({form}) {dtype.name}")
    return fd, tuple(labels)


@pytest.mark.parametrize("n", [5, 127, 4097])
@pytest.mark.parametrize("scalar", [float("nan"), 0.25])
def test_maximum_minimum_propagate_nan(rng: np.random.Generator, n: int, scalar: float) -> None:
    """NaN in either operand (or both, or the scalar) gives NaN, as torch.maximum does."""
    fd, labels = nan_fusion()
    inputs: list[Any] = []
    for dtype in FLOATS:
        d = np_dtype(dtype)
        x, y = floats(rng, n, d), floats(rng, n, d)
        x[rng.random(n) < 0.3] = np.nan
        y[rng.random(n) < 0.3] = np.nan
        x[0], x[1], y[2], x[3], y[3], y[-1] = np.inf, np.nan, np.nan, np.nan, np.nan, -np.inf
        inputs += [x, y]
    outputs = check(fd, [scalar, *inputs], labels)
    assert all(np.isnan(o.astype(np.float64)).any() for o in outputs)


# --------------------------------------------------------------------------------------------
# where


@functools.cache
def where_fusion() -> tuple[FusionDefinition, tuple[str, ...]]:
    """`where` with tensor and scalar branches of every float dtype, i32 and Bool, and with
    only the condition a tensor (a scalar input and a number: the result is f64)."""
    labels: list[str] = []
    with FusionDefinition("where") as fd:
        s = fd.define_scalar()

        def out(label: str, value: Any) -> None:
            fd.add_output(value)
            labels.append(label)

        for dtype in [*FLOATS, DataType.Int32]:
            x, y = fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)
            c = fd.ops.gt(x, y)
            t = dtype.name
            out(f"where(x > y, x, y) {t}", fd.ops.where(c, x, y))
            out(f"where(c, x, 2) {t}", fd.ops.where(c, x, 2))
            out(f"where(c, -1, y) {t}", fd.ops.where(c, -1, y))
            out(f"where(c, s, x) {t}", fd.ops.where(c, s, x))
            out(f"where(c, s, 2) {t} -> Double", fd.ops.where(c, s, 2))
        p, q = fd.define_tensor([-1], DataType.Bool), fd.define_tensor([-1], DataType.Bool)
        c = fd.define_tensor([-1], DataType.Bool)
        out("where(c, p, q) Bool", fd.ops.where(c, p, q))
        out("where(c, p, True) Bool", fd.ops.where(c, p, True))
        out("where(c, 1.5, q) Bool -> Float", fd.ops.where(c, 1.5, q))
    return fd, tuple(labels)


@pytest.mark.parametrize("n", SIZES)
def test_where(rng: np.random.Generator, n: int) -> None:
    fd, labels = where_fusion()
    inputs: list[Any] = [float(rng.integers(-6, 7) / 2)]
    for dtype in FLOATS:
        d = np_dtype(dtype)
        inputs += [tie_prone(rng, n, d), sprinkle(rng, tie_prone(rng, n, d), [np.nan])]
    inputs += [rng.integers(-5, 6, n).astype(np.int32), rng.integers(-5, 6, n).astype(np.int32)]
    inputs += [rng.random(n) < 0.5 for _ in range(3)]
    check(fd, inputs, labels)


# --------------------------------------------------------------------------------------------
# cast, set, segment_set


@functools.cache
def cast_fusion(source: DataType) -> FusionDefinition:
    """A `source` input cast to every dtype (to itself: a `set`)."""
    with FusionDefinition(f"cast_from_{source.name}") as fd:
        x = fd.define_tensor([-1], source)
        for target in ALL_DTYPES:
            fd.add_output(fd.ops.cast(x, target))
    return fd


def cast_input(rng: np.random.Generator, source: DataType, n: int) -> np.ndarray:
    """Values that probe every conversion: fractions (truncation toward zero), halves,
    signed zeros, NaN and infinities, values past the i32/i64 range (saturation), i64 values
    past the i32 range (wrap-around), zeros (the Bool casts)."""
    d = np_dtype(source)
    if source == DataType.Bool:
        return rng.random(n) < 0.5
    if d.kind == "i":
        x = rng.integers(-3000, 3000, n).astype(d)
        x[rng.random(n) < 0.1] = 0
        extremes = [np.iinfo(d).min, np.iinfo(d).max, -1, 1]
        if d == np.int64:
            extremes += [2**33 + 5, -(2**40) - 3, 2**31]
        if n >= 16:
            x[rng.choice(n, len(extremes), replace=False)] = extremes
        return x
    values = 50.0 * rng.standard_normal(n)
    halves = rng.random(n) < 0.2
    values[halves] = rng.choice([0.5, -0.5, 1.5, -2.5, 2.5, 1e-3], int(halves.sum()))
    specials: list[float] = [*SPECIALS, 0.5, -0.5, -2.5, 65504.0]
    if source != DataType.Half:  # past the integer ranges (f16 stops at 65504)
        specials += [3e9, -3e9, 1e19, -1e19]
    return sprinkle(rng, round_to_float(values, d), specials)


@pytest.mark.parametrize("n", [1, 127, 4097])
@pytest.mark.parametrize("source", ALL_DTYPES, ids=lambda d: d.name)
def test_cast_between_every_pair(rng: np.random.Generator, source: DataType, n: int) -> None:
    fd = cast_fusion(source)
    check(fd, [cast_input(rng, source, n)], [f"cast {source.name} -> {t.name}" for t in ALL_DTYPES])


@functools.cache
def set_fusion() -> FusionDefinition:
    """`fd.ops.set` of a tensor of every dtype, 2-D."""
    with FusionDefinition("set_every_dtype") as fd:
        for dtype in ALL_DTYPES:
            fd.add_output(fd.ops.set(fd.define_tensor([-1, -1], dtype)))
    return fd


@pytest.mark.parametrize("shape", [(1, 1), (3, 127), (129, 33)])
def test_set(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    fd = set_fusion()
    n = shape[0] * shape[1]
    inputs = [cast_input(rng, dtype, n).reshape(shape) for dtype in ALL_DTYPES]
    outputs = check(fd, inputs, [f"set {d.name}" for d in ALL_DTYPES])
    for x, out in zip(inputs, outputs, strict=True):  # bit-exact copies, NaN payloads included
        assert out.tobytes() == x.tobytes()


def test_segment_set_splits_the_fusion_into_two_kernels(rng: np.random.Generator) -> None:
    """A segment_set forces a kernel boundary: two segments, the result of one fusion."""
    with FusionDefinition("segmented") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.add(fd.ops.segment_set(fd.ops.exp(x)), x))
    x = floats(rng, 127 * 3, F32).reshape(127, 3)
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x], compute_dtype=np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert len(fd.last_segments()) == 2


# --------------------------------------------------------------------------------------------
# broadcast_in_dim

SUBSETS = [s for r in (1, 2, 3) for s in itertools.combinations(range(4), r)]
"""Every non-empty proper subset of the axes of a 4-D tensor."""


@functools.cache
def broadcast_fusion() -> tuple[FusionDefinition, tuple[str, ...]]:
    """x + t broadcast onto each subset of x's axes; a rank-0 tensor and a scalar broadcast to
    all of x; a bf16 tensor broadcast as bf16 (data movement only); a Bool mask broadcast into
    a `where`; an i64 tensor broadcast and added to x (promotes to f32)."""
    labels: list[str] = []
    with FusionDefinition("broadcast_every_axis") as fd:
        x = fd.define_tensor([-1, -1, -1, -1])
        shape = x.shape()
        for dims in SUBSETS:
            t = fd.define_tensor([-1] * len(dims))
            fd.add_output(fd.ops.add(x, fd.ops.broadcast_in_dim(t, shape, list(dims))))
            labels.append(f"x + t broadcast on {list(dims)}")
        r0, s = fd.define_tensor([]), fd.define_scalar()
        fd.add_output(fd.ops.mul(x, fd.ops.broadcast_in_dim(r0, shape, [])))
        labels.append("x * rank-0 tensor")
        fd.add_output(fd.ops.sub(fd.ops.broadcast_in_dim(s, shape, []), x))
        labels.append("scalar broadcast - x")
        h = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.broadcast_in_dim(h, shape, [1, 3]))
        labels.append("bf16 broadcast on [1, 3]")
        m = fd.define_tensor([-1, -1], DataType.Bool)
        fd.add_output(fd.ops.where(fd.ops.broadcast_in_dim(m, shape, [0, 2]), x, 0.0))
        labels.append("where(Bool mask broadcast on [0, 2], x, 0)")
        i = fd.define_tensor([-1], DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(i, shape, [2]), x))
        labels.append("Int broadcast on [2] + x")
    return fd, tuple(labels)


@pytest.mark.parametrize(
    "shape", [(3, 5, 7, 2), (1, 127, 1, 9), (2, 1, 4097, 1), (4, 3, 2, 129), (1, 1, 1, 1)]
)
def test_broadcast_in_dim_on_every_axis(
    rng: np.random.Generator, shape: tuple[int, int, int, int]
) -> None:
    fd, labels = broadcast_fusion()
    size = int(np.prod(shape))
    inputs: list[Any] = [floats(rng, size, F32).reshape(shape)]
    for dims in SUBSETS:
        sub = tuple(shape[d] for d in dims)
        inputs.append(floats(rng, int(np.prod(sub)), F32).reshape(sub))
    inputs += [floats(rng, 1, F32).reshape(()), float(rng.standard_normal())]
    inputs.append(floats(rng, shape[1] * shape[3], BFLOAT16).reshape(shape[1], shape[3]))
    inputs.append(rng.random((shape[0], shape[2])) < 0.5)
    inputs.append(rng.integers(-1000, 1000, shape[2]).astype(np.int64))
    check(fd, inputs, labels)


# --------------------------------------------------------------------------------------------
# Non-contiguous torch inputs


@functools.cache
def strided_fusion(dtype: DataType) -> tuple[FusionDefinition, tuple[str, ...]]:
    labels = ("sub", "maximum", "sigmoid(x)", "lt", "where(x < y, x, 1)", "set(y)")
    with FusionDefinition(f"strided_{dtype.name}") as fd:
        x, y = fd.define_tensor([-1, -1], dtype), fd.define_tensor([-1, -1], dtype)
        fd.add_output(fd.ops.sub(x, y))
        fd.add_output(fd.ops.maximum(x, y))
        fd.add_output(fd.ops.sigmoid(x))
        lt = fd.ops.lt(x, y)
        fd.add_output(lt)
        fd.add_output(fd.ops.where(lt, x, 1))
        fd.add_output(fd.ops.set(y))
    return fd, labels


@pytest.mark.parametrize("shape", [(127, 33), (4097, 3), (1, 5)])
@pytest.mark.parametrize(
    "dtype", [DataType.Half, DataType.BFloat16, DataType.Int32], ids=lambda d: d.name
)
def test_non_contiguous_torch_inputs(
    rng: np.random.Generator, torch: Any, dtype: DataType, shape: tuple[int, int]
) -> None:
    """x a transposed view (staged through the transpose scheduler's tiles where both of its
    dims are 32 long or more), y every other column of a wider tensor, read in place."""
    fd, labels = strided_fusion(dtype)
    rows, cols = shape
    d = np_dtype(dtype)
    if dtype == DataType.Int32:
        xs, ys = rng.integers(-5, 6, (cols, rows)), rng.integers(-5, 6, (rows, 2 * cols))
        xs, ys = xs.astype(d), ys.astype(d)
    else:
        xs = tie_prone(rng, rows * cols, d).reshape(cols, rows)
        ys = tie_prone(rng, rows * 2 * cols, d).reshape(rows, 2 * cols)
    x = torch_of(torch, xs).t()
    y = torch_of(torch, ys)[:, ::2]
    assert x.stride() == (1, rows) and y.stride() == (2 * cols, 2)
    outs = fd.execute([x, y])
    assert all(isinstance(o, torch.Tensor) and o.is_cuda for o in outs)
    # x's transposed dims both 32 long or more: tiles through shared memory
    expected = "transpose" if min(shape) >= 32 else "pointwise"
    assert scheduler_names(fd, [x, y]) == [expected]
    host = [np.ascontiguousarray(xs.T), np.ascontiguousarray(ys[:, ::2])]
    check(fd, host, labels, TRANSCENDENTAL, outputs=[numpy_of(torch, o) for o in outs])


# --------------------------------------------------------------------------------------------
# Edge semantics decided by torch on CUDA (tests/test_semantics.py pins the reference and the
# scalar lowering on the CPU)


@pytest.mark.parametrize("width", [1, 3, 127, 1000, 4097, 65537])
def test_var_mean_of_rows_with_infinities(rng: np.random.Generator, width: int) -> None:
    """var NaN, mean +-inf (NaN for both signs) on every scheduler the row width picks."""
    with FusionDefinition(f"var_mean_inf_{width}") as fd:
        var, mean = fd.ops.var_mean(fd.define_tensor([-1, -1]), [1], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    rows = floats(rng, 5 * width, F32).reshape(5, width)
    at = rng.integers(0, width, 5)
    rows[0, at[0]] = np.inf
    rows[1, at[1]] = -np.inf
    rows[2, at[2]] = np.inf
    rows[2, (at[2] + width // 2) % width] = -np.inf if width > 1 else np.inf
    rows[3, :] = np.inf
    var_out, mean_out = fd.execute([rows])
    expected_var, expected_mean = fd.reference([rows], compute_dtype=np.float64)
    assert np.isnan(var_out[:4]).all() and not np.isnan(var_out[4])
    assert_close(var_out, expected_var, "var", TRANSCENDENTAL[F32])
    assert_close(mean_out, expected_mean, "mean", TRANSCENDENTAL[F32])


@pytest.mark.parametrize("shape", [(1, 1), (3, 127), (127, 4097)])
def test_var_alone(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    """`fd.ops.var` (no dims, and over the rows with keepdim) against the float64 reference: a
    Welford kernel whose mean is not written."""
    with FusionDefinition(f"var_{shape[1]}") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.var(x))
        fd.add_output(fd.ops.var(x, [1], 0, True))
    a = floats(rng, shape[0] * shape[1], F32).reshape(shape)
    got, refs = fd.execute([a]), fd.reference([a], compute_dtype=np.float64)
    for out, ref, what in zip(got, refs, ("all", "rows"), strict=True):
        assert_close(out, ref, what, TRANSCENDENTAL[F32])


@functools.cache
def edge_fusion() -> tuple[FusionDefinition, tuple[str, ...]]:
    labels = ("f32 -> i32", "f32 -> i64", "f64 -> i32", "bf16 -> i64", "f32 -> bool")
    labels += ("pow f32", "pow i32", "div i32", "div i64")
    with FusionDefinition("edge_semantics") as fd:
        f, d = fd.define_tensor([-1]), fd.define_tensor([-1], DataType.Double)
        h = fd.define_tensor([-1], DataType.BFloat16)
        base, exponent = fd.define_tensor([-1]), fd.define_tensor([-1])
        ia, ib = fd.define_tensor([-1], DataType.Int32), fd.define_tensor([-1], DataType.Int32)
        la, lb = fd.define_tensor([-1], DataType.Int), fd.define_tensor([-1], DataType.Int)
        fd.add_output(fd.ops.cast(f, DataType.Int32))
        fd.add_output(fd.ops.cast(f, DataType.Int))
        fd.add_output(fd.ops.cast(d, DataType.Int32))
        fd.add_output(fd.ops.cast(h, DataType.Int))
        fd.add_output(fd.ops.cast(f, DataType.Bool))
        fd.add_output(fd.ops.pow(base, exponent))
        fd.add_output(fd.ops.pow(ia, ib))
        fd.add_output(fd.ops.div(ia, ib))
        fd.add_output(fd.ops.div(la, lb))
    return fd, labels


def edge_inputs(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Special values (NaN, +-inf, beyond the integer ranges, negative bases, zero and negative
    exponents, zero divisors) at random places among ordinary ones."""
    specials = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e19, -1e19, 2.5, -2.5, -0.0]
    f = sprinkle(rng, floats(rng, n, F32, scale=1e9), specials)
    d = sprinkle(rng, floats(rng, n, np.dtype(np.float64), scale=1e9), specials)
    h = sprinkle(rng, floats(rng, n, np.dtype(BFLOAT16), scale=1e9), specials)
    base = sprinkle(rng, np.round(floats(rng, n, F32)), [-2.0, -2.0, np.nan, -np.inf, 0.0])
    exponent = sprinkle(rng, rng.integers(-3, 4, n).astype(F32), [3.0, 2.0, 0.0, 0.0, 0.5])
    ia = rng.integers(-3, 4, n).astype(np.int32)
    ib = rng.integers(-3, 4, n).astype(np.int32)
    la = rng.integers(-(2**40), 2**40, n)
    lb = np.where(rng.random(n) < 0.2, 0, rng.integers(-1000, 1000, n))
    return [f, d, h, base, exponent, ia, ib, la, lb]


@pytest.mark.parametrize("n", SIZES)
def test_edge_semantics_match_the_reference(rng: np.random.Generator, n: int) -> None:
    fd, labels = edge_fusion()
    check(fd, edge_inputs(rng, n), labels, TRANSCENDENTAL)


def test_edge_semantics_match_torch(rng: np.random.Generator, torch: Any) -> None:
    """The choices above are torch's on CUDA: the same inputs through torch's own kernels."""
    fd, labels = edge_fusion()
    inputs = edge_inputs(rng, 4097)
    f, d, h, base, exponent, ia, ib, la, lb = (torch_of(torch, x) for x in inputs)
    expected = [
        f.to(torch.int32),
        f.to(torch.int64),
        d.to(torch.int32),
        h.to(torch.int64),
        f.to(torch.bool),
        torch.pow(base, exponent),
        torch.pow(ia, ib),
        torch.div(ia, ib, rounding_mode="trunc"),
        torch.div(la, lb, rounding_mode="trunc"),
    ]
    outputs = fd.execute(inputs)
    for label, out, want in zip(labels, outputs, expected, strict=True):
        assert_close(out, numpy_of(torch, want), f"{label} against torch", TRANSCENDENTAL[F32])
