"""Random fusion programs for the differential fuzzer: generated, built, printed.

A `Program` is a plain description of a fusion: its inputs (dtype, run-time shape, declared
shape, memory layout; a scalar's value), a list of `Op` records, each one `fd.ops` call with its
arguments, and the outputs. The same description is

- built into a `FusionDefinition` (`build`),
- evaluated by the independent oracle (`fuser.fuzz.oracle`),
- turned into input arrays in its layouts (`make_inputs`: numpy views, or torch views on the
  GPU), and
- printed as a standalone Python script (`to_script`) that reproduces a failure.

`generate(seed)` draws a program over every op of the frontend and every dtype an op allows,
with scalar inputs and constants, dims from size classes (0, 1, small odd, 2^k +- 1, rows longer
than one block's registers) and input layouts (contiguous, transposed, broadcast with stride 0,
sliced with a step, misaligned by one element). What it never draws, and why, is listed in
`AVOIDED`: each entry is either a frontend refusal (a user error, not a fuzz target) or a
difference between float32 and float64 evaluation that is not a bug (a value growing past the
float32 range, a float->int cast of a rounded value).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import ml_dtypes
import numpy as np

from fuser import DataType, FusionDefinition
from fuser.dialects.views import END, slice_range
from fuser.errors import DefinitionError

# --------------------------------------------------------------------------------------------
# Dtypes

DTYPES: dict[str, DataType] = {
    "f16": DataType.Half,
    "bf16": DataType.BFloat16,
    "f32": DataType.Float,
    "f64": DataType.Double,
    "i32": DataType.Int32,
    "i64": DataType.Int,
    "bool": DataType.Bool,
}
NUMPY_DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i32", "i64")
LAYOUTS = ("contiguous", "transposed", "broadcast", "sliced", "misaligned")

AVOIDED: dict[str, str] = {
    "frac of integers, bitwise ops of floats, gcd and shifts of bools, nextafter of f16/bf16 or "
    "integers, lerp/addcmul/clamp/threshold of integers": "the frontend refuses it",
    "bool operand of neg/abs/relu, sub/div/pow of two bools": "the frontend refuses it",
    "welford/var_mean of f16/bf16 or integer tensors": "the frontend refuses it (cast first)",
    "matmul of integer/bool or mixed dtypes, or of ranks < 2": "the frontend refuses it",
    "reductions of 0-dim tensors": "the frontend refuses it",
    "pad of a dim whose declared extent is dynamic, widths leaving an extent below 0, or a "
    "non-integral number padding an integer tensor": "the frontend refuses it",
    "cat along a dim whose declared extent is dynamic, of 0-dim tensors, of tensors of other "
    "ranks or other extents off the cat dim, or with manual_padding=True": (
        "the frontend refuses it"
    ),
    "integer pow with a base above 9 or exponents other than inputs or constants 0..3": (
        "an overflowing integer pow saturates in fuser (f64, then cvt.rzi) but wraps in torch"
    ),
    "a batched matmul of 65536 or more batch entries (times the split-K factor, up to 4)": (
        "a fuser limitation: no scheduler accepts it (the batch goes on gridDim.z, at most 65535)"
    ),
    "a dynamic dim of run-time extent 1 broadcast against a larger one": (
        "a run-time InputError by design (only static 1s broadcast)"
    ),
    "broadcast_in_dim to an extent other than a dynamic operand dim's own": (
        "fuser drops such an extent without a check (a bug, reported)"
    ),
    "values whose bound passes 1e18": "float32 overflows on the GPU where float64 does not",
    "float->int/bool casts of inexactly computed values": "a rounding step flips the integer",
}
"""What the generator never draws, and why (reported by the fuzzer's `--help`)."""

# --------------------------------------------------------------------------------------------
# The description


Number = bool | int | float


@dataclass(frozen=True)
class Input:
    """One fusion input: a tensor (`shape` is its run-time shape) or a scalar (`shape` None)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None
    declared: tuple[int, ...] | None = None  # -1: a dynamic dim
    layout: str = "contiguous"
    broadcast_dims: tuple[int, ...] = ()  # the stride-0 dims of a "broadcast" layout
    value: Number | None = None  # a scalar input's value
    index: bool = False  # an index (of a take, gather or scatter): its integers may be 0


@dataclass(frozen=True)
class Op:
    """One `fd.ops` call (or `fd.define_scalar` for `constant`): positional `args` are value
    names (str) or Python numbers; `kwargs` are literal, except `dtype` (a DTYPES key) and
    `shape` entries `(name, axis)`, the extent `name.size(axis)`. Two calls are laid out
    differently (`_call_parts`): `cat`'s args are its operands, passed as one list, and `pad`'s
    are its operand and its value (if any), with the `pad_widths` kwarg passed between them."""

    op: str
    args: tuple[str | Number, ...]
    results: tuple[str, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def kw(self) -> dict[str, Any]:
        return dict(self.kwargs)


@dataclass(frozen=True)
class Program:
    """A random fusion: inputs, ops in definition order, outputs; `data_seed` and `specials`
    (NaN, +-inf, +-0 among float inputs) decide the input values."""

    inputs: tuple[Input, ...]
    ops: tuple[Op, ...]
    outputs: tuple[str, ...]
    data_seed: int = 0
    specials: bool = False
    output_orders: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Outputs returned in a stride order (`add_output(t, stride_order=)`), by name; one whose
    rank no longer fits its order (a shrunk program) is added row-major."""

    def order_of(self, name: str, rank: int) -> tuple[int, ...] | None:
        """The stride order output `name` of rank `rank` is added with, if any."""
        order = dict(self.output_orders).get(name)
        return order if order is not None and len(order) == rank else None

    def describe(self) -> str:
        """One line: the ops and the input shapes."""
        ins = ", ".join(
            f"{i.name}:{i.dtype}" + ("" if i.shape is None else f"{list(i.shape)}/{i.layout}")
            for i in self.inputs
        )
        return f"{len(self.ops)} ops [{' '.join(o.op for o in self.ops)}] on {ins}"


# --------------------------------------------------------------------------------------------
# Op kinds: the frontend's names, grouped by how they are built and evaluated

ROUNDING = ("ceil", "floor", "round", "trunc", "sign")
UNARY_INT_OK = ("neg", "abs", "relu", *ROUNDING)
MATH_FUNCTIONS = (
    *("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "erfc"),
    *("erfinv", "erfcinv", "exp2", "expm1", "log10", "log1p", "log2", "lgamma"),
)
#: unary ops whose integer/bool operands compute in f32
UNARY_FLOAT = (
    *("exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh"),
    *("sigmoid", "erf", "silu", "gelu"),
    *MATH_FUNCTIONS,
)
#: tests of any operand, a bool result
UNARY_TESTS = ("isfinite", "isinf", "isnan", "isneginf", "isposinf", "signbit", "logical_not")
#: unary ops of one category: `frac` of floats, `bitwise_not` of integers and bools
UNARY_OF_ONE_KIND = ("frac", "bitwise_not")
MATH_BINARY = ("atan2", "fmod", "remainder", "nextafter")
BINARY = ("add", "sub", "mul", "div", "truediv", "pow", "maximum", "minimum", *MATH_BINARY)
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
#: binary ops of integers (`bitwise_*` of bools too), and of anything to a bool
INTEGER_BINARY = ("gcd", "bitwise_left_shift", "bitwise_right_shift", "logical_right_shift")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
LOGICAL = ("logical_and", "logical_or")
#: ops made of others, rounded once
COMPOSITES = ("lerp", "addcmul", "clamp", "threshold")
#: random numbers of a shape (another tensor's extents or ints) under a seed and an offset
RANDOM = ("uniform", "normal")
#: the triangles of the last two dims
TRIANGLES = ("triu", "tril")
REDUCTIONS = ("sum", "max", "min", "prod")
#: inclusive scans along one dim
SCANS = ("cumsum", "cumprod", "cummax", "cummin")
#: orders along one dim
SORTS = ("topk", "argsort")
#: the longest row fuser's sort kernel orders whole (`argsort`, and the most a `topk` takes),
#: and the longest it selects from (`topk`)
SORTED_ROW, TOPK_ROW = 16384, 32768
ALL_OPS = (
    *UNARY_INT_OK,
    *UNARY_FLOAT,
    *UNARY_TESTS,
    *UNARY_OF_ONE_KIND,
    *BINARY,
    *COMPARE,
    *INTEGER_BINARY,
    *BITWISE,
    *LOGICAL,
    *COMPOSITES,
    *RANDOM,
    *TRIANGLES,
    "where",
    "cast",
    "broadcast_in_dim",
    "permute",
    "squeeze",
    "reshape",
    "slice",
    "pad",
    "cat",
    "take_along_axis",
    "scatter",
    "index_select",
    "select",
    "embedding_fwd",
    "full",
    "iota",
    "set",
    "segment_set",
    *REDUCTIONS,
    *SCANS,
    *SORTS,
    "welford",
    "var_mean",
    "matmul",
    "constant",
)

# --------------------------------------------------------------------------------------------
# Building a FusionDefinition


class _Extent:
    def __init__(self, name: str, axis: int):
        self.name, self.axis = name, axis


class _Ref:
    """A value passed by keyword (an iota's run-time `start`)."""

    def __init__(self, name: str):
        self.name = name


def _call_parts(op: Op) -> tuple[str, list[Any], dict[str, Any]]:
    """The call an op record stands for: the callee's name under `fd.`, args, kwargs (value
    names as str, extents as `_Extent`, dtypes as DataType)."""
    kwargs = op.kw
    if "dtype" in kwargs and kwargs["dtype"] is not None:
        kwargs["dtype"] = DTYPES[kwargs["dtype"]]
    for key in ("shape", "new_shape"):
        if key in kwargs:
            kwargs[key] = [e if isinstance(e, int) else _Extent(*e) for e in kwargs[key]]
    if "length" in kwargs and not isinstance(kwargs["length"], int):
        kwargs["length"] = _Extent(*kwargs["length"])
    if op.op == "constant":
        return "define_scalar", list(op.args), kwargs
    if op.op == "pad":  # fd.ops.pad(arg, pad_widths, value): the widths go between
        return "ops.pad", [op.args[0], kwargs.pop("pad_widths"), *op.args[1:]], kwargs
    if op.op == "cat":  # fd.ops.cat(tensors, dim): the operands as one list
        return "ops.cat", [list(op.args)], kwargs
    if op.op == "iota" and op.args:  # a run-time start: the one operand
        return "ops.iota", [], {**kwargs, "start": _Ref(str(op.args[0]))}
    return f"ops.{op.op}", list(op.args), kwargs


def build(
    program: Program, name: str = "fuzz", handles: dict[str, Any] | None = None
) -> FusionDefinition:
    """The program as a finished FusionDefinition (its `with` block run); `handles`, if given,
    receives each value's Tensor or Scalar handle by name."""
    env: dict[str, Any] = {} if handles is None else handles

    def resolve(x: Any) -> Any:
        if isinstance(x, str):
            return env[x]
        if isinstance(x, _Extent):
            return env[x.name].size(x.axis)
        if isinstance(x, _Ref):
            return env[x.name]
        if isinstance(x, list):
            return [resolve(e) for e in x]
        return x

    with FusionDefinition(name) as fd:
        for inp in program.inputs:
            if inp.shape is None:
                env[inp.name] = fd.define_scalar(dtype=DTYPES[inp.dtype])
            else:
                assert inp.declared is not None
                env[inp.name] = fd.define_tensor(list(inp.declared), DTYPES[inp.dtype])
        for op in program.ops:
            callee, args, kwargs = _call_parts(op)
            fn: Any = fd
            for part in callee.split("."):
                fn = getattr(fn, part)
            kw = {
                k: resolve(v) if isinstance(v, list | _Extent | _Ref) else v
                for k, v in kwargs.items()
            }
            result = fn(*[resolve(a) for a in args], **kw)
            results = result if isinstance(result, tuple) else (result,)
            for r_name, r in zip(op.results, results, strict=True):
                env[r_name] = r
        for out in program.outputs:
            order = program.order_of(out, env[out].ndim)
            if order is None:
                fd.add_output(env[out])
            else:
                fd.add_output(env[out], stride_order=list(order))
    return fd


# --------------------------------------------------------------------------------------------
# Inputs in their layouts


def _random_values(
    rng: np.random.Generator, dtype: str, shape: tuple[int, ...], specials: bool, index: bool
) -> np.ndarray:
    """Values of an input: normal floats (a few NaN, +-inf, +-0 with `specials`), integers in
    [-9, 9] without 0 (they may divide) or, for an `index`, with it, random bools."""
    if dtype in FLOATS:
        data = np.asarray(rng.standard_normal(shape) * rng.choice([0.5, 1.0, 2.0]))
        if specials and data.size:
            picks = rng.random(shape) < 0.05
            data[picks] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], size=int(picks.sum()))
        return data.astype(NUMPY_DTYPES[dtype])
    if dtype in INTS and index:
        return rng.integers(-9, 10, shape).astype(NUMPY_DTYPES[dtype])
    if dtype in INTS:
        data = rng.integers(1, 10, shape) * rng.choice([-1, 1], shape)
        return data.astype(NUMPY_DTYPES[dtype])
    return rng.random(shape) < 0.5


def base_shape(inp: Input) -> tuple[int, ...]:
    """The shape of the buffer an input is a view of, for its layout."""
    assert inp.shape is not None
    shape = inp.shape
    if inp.layout == "transposed":
        return tuple(reversed(shape))
    if inp.layout == "broadcast":
        return tuple(1 if d in inp.broadcast_dims else e for d, e in enumerate(shape))
    if inp.layout == "sliced":
        return (*shape[:-1], 2 * shape[-1] + 1)
    if inp.layout == "misaligned":
        return (math.prod(shape) + 1,)
    return shape


def view_of(inp: Input, base: Any) -> Any:
    """The input's view of `base` (a numpy array or a torch tensor of `base_shape(inp)`)."""
    assert inp.shape is not None
    if inp.layout == "transposed":
        order = tuple(reversed(range(len(inp.shape))))
        return base.transpose(order) if isinstance(base, np.ndarray) else base.permute(order)
    if inp.layout == "broadcast":
        if isinstance(base, np.ndarray):
            return np.broadcast_to(base, inp.shape)
        return base.expand(*inp.shape)
    if inp.layout == "sliced":
        return base[..., 1::2]
    if inp.layout == "misaligned":
        return base[1:].reshape(inp.shape)
    return base


def input_buffers(program: Program) -> list[np.ndarray | Number]:
    """The values behind each input: a contiguous numpy buffer of `base_shape` (a Python
    number for a scalar), drawn from the program's `data_seed`."""
    rng = np.random.default_rng(program.data_seed)
    out: list[np.ndarray | Number] = []
    for inp in program.inputs:
        if inp.shape is None:
            assert inp.value is not None
            out.append(inp.value)
        else:
            data = _random_values(rng, inp.dtype, base_shape(inp), program.specials, inp.index)
            out.append(np.asarray(data, NUMPY_DTYPES[inp.dtype]))
    return out


def make_inputs(program: Program) -> list[Any]:
    """The inputs as numpy arrays in their layouts (views of fresh buffers) and numbers."""
    return [
        view_of(inp, buf) if inp.shape is not None else buf
        for inp, buf in zip(program.inputs, input_buffers(program), strict=True)
    ]


# --------------------------------------------------------------------------------------------
# The generator


SIZE_CLASSES: dict[str, tuple[tuple[int, ...], float]] = {
    "zero": ((0,), 0.04),
    "one": ((1,), 0.14),
    "odd": ((3, 5, 7), 0.38),
    "pow2": ((127, 129, 1023, 1025, 4095, 4097), 0.3),
    "long": ((20011, 32769), 0.14),
}
BUDGET = {"small": 60_000, "large": 4_000_000}
LONG_LARGE = (65537, 100003)
FLOAT_CONSTANTS = (0.5, 2.0, -1.5, 0.1, 3.0, -0.25, 1e-3, 0.0, 1.0)
INT_CONSTANTS = (1, 2, 3, -2, 7, 0)
MAG_LIMIT = 1e18
_EXACT_INTS = {"f16": 2.0**11, "bf16": 2.0**8, "f32": 2.0**24, "f64": 2.0**53}
_WIDER_FLOATS = {"f16": ("f32", "f64"), "bf16": ("f32", "f64"), "f32": ("f64",), "f64": ()}


def _lossless(src: str, dst: str, mag: float) -> bool:
    """Whether a cast from `src` to `dst` keeps every value of magnitude up to `mag` as it is
    (no rounding, truncation or wrapping)."""
    if src == dst or src == "bool":
        return True
    if src in INTS:
        return dst == "bool" or (mag < 2.0**31 if dst in INTS else mag <= _EXACT_INTS[dst])
    return dst in _WIDER_FLOATS[src]


def _batch_extent(a: int, b: int) -> int:
    """A batch dim of a matmul's result from its operands' declared extents (-1: dynamic), as
    torch broadcasts them: a static 1 takes the other's, a dynamic one a static other."""
    if a == 1 or a == -1:
        return b if b != 1 else a
    return a


def _representable(x: Number, dtype: str) -> bool:
    """Whether the Python number `x` is a value of `dtype` as it is (0.1 is not, in floats)."""
    if dtype == "bool":
        return isinstance(x, bool)
    if dtype in INTS:
        return float(x).is_integer()
    with np.errstate(all="ignore"):
        return bool(np.asarray(x, np.float64).astype(NUMPY_DTYPES[dtype]) == x)


@dataclass
class _Value:
    """What the generator knows of a value: dtype, run-time shape (None: a scalar), a bound on
    its finite magnitudes, whether it was computed exactly (no rounding of a real result), and
    whether it is never 0 (may divide integers)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None
    declared: tuple[int, ...] | None
    mag: float
    exact: bool = True
    nonzero: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    def static_one(self, axis: int) -> bool:
        return self.declared is not None and self.declared[axis] == 1


def _aligned(values: Sequence[_Value]) -> list[list[tuple[int, int]]]:
    """Per result dim (shapes aligned at their last dims): each tensor's (extent, declared)."""
    tensors = [v for v in values if v.shape is not None and v.declared is not None]
    rank = max((len(v.shape or ()) for v in tensors), default=0)
    dims: list[list[tuple[int, int]]] = []
    for d in range(rank):
        dims.append([])
        for v in tensors:
            assert v.shape is not None and v.declared is not None
            a = len(v.shape) - rank + d
            if a >= 0:
                dims[-1].append((v.shape[a], v.declared[a]))
    return dims


def broadcasts(values: Sequence[_Value]) -> bool:
    """Whether the frontend's implicit broadcast accepts these operands and the run succeeds:
    in each dim, every extent that is not a static 1 is the same."""
    return all(len({e for e, s in dim if s != 1}) <= 1 for dim in _aligned(values))


def broadcast(
    values: Sequence[_Value],
) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """The run-time and declared shape of a pointwise op's result (None: all scalars): a static
    extent other than 1 wins, else a dynamic one, else 1."""
    if not any(v.is_tensor for v in values):
        return None, None
    shape, declared = [], []
    for dim in _aligned(values):
        carried = [(e, s) for e, s in dim if s != 1]
        shape.append(carried[0][0] if carried else 1)
        fixed = [s for _, s in carried if s != -1]
        declared.append(fixed[0] if fixed else (-1 if carried else 1))
    return tuple(shape), tuple(declared)


def _combined_magnitude(kind: str, mag: float, n: int) -> float:
    """The largest magnitude a `kind` ("sum", "prod", "max", "min") of n values of magnitude
    `mag` reaches."""
    if kind == "sum":
        return mag * max(n, 1)
    if kind == "prod":  # n factors of at most max(mag, 1)
        base = max(mag, 1.0)
        return math.inf if n * math.log(base) > math.log(MAG_LIMIT) else base**n
    return mag


def _fits(kind: str, out: str, mag: float) -> bool:
    """Whether a `kind` of magnitude `mag` in dtype `out` is one the fuzzer draws: a float
    within MAG_LIMIT, a product of integers that does not wrap (the GPU tests check wrapping,
    not the fuzzer)."""
    if out in FLOATS:
        return mag <= MAG_LIMIT
    return kind != "prod" or mag <= np.iinfo(NUMPY_DTYPES[out]).max


@dataclass
class _Generator:
    rng: random.Random
    sizes: str
    inputs: list[Input] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    values: list[_Value] = field(default_factory=list)
    counter: int = 0

    # ---- values ---------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick_dim(self, room: int) -> int:
        classes = list(SIZE_CLASSES.values())
        for _ in range(20):
            (choices, _) = self.rng.choices(classes, weights=[w for _, w in classes])[0]
            if self.sizes == "large" and choices == SIZE_CLASSES["long"][0]:
                choices = choices + LONG_LARGE
            e = self.rng.choice(choices)
            if e <= max(room, 1):
                return e
        return 1

    def pick_shape(self, rank: int | None = None) -> tuple[int, ...]:
        if rank is None:
            rank = self.rng.choices([0, 1, 2, 3], weights=[0.05, 0.3, 0.45, 0.2])[0]
        budget = BUDGET[self.sizes]
        dims: list[int] = []
        for _ in range(rank):
            room = budget // max(1, math.prod(e for e in dims if e))
            dims.append(self.pick_dim(room))
        self.rng.shuffle(dims)
        return tuple(dims)

    def new_input(
        self,
        dtype: str,
        shape: tuple[int, ...] | None,
        declared: Sequence[int] | None = None,
        index: bool = False,
    ) -> _Value:
        """A new input (a scalar where `shape` is None); an `index` takes integers that may
        be 0 (position 0 reached directly, not only from the end)."""
        name = self.fresh("x")
        if shape is None:
            value: Number
            if dtype in FLOATS:
                value = float(np.float16(self.rng.gauss(0, 1.5)))
            elif dtype in INTS:
                values = [-5, -3, -1, 0, 1, 2, 4] if index else [-5, -3, -1, 1, 2, 4]
                value = self.rng.choice(values)
            else:
                value = self.rng.random() < 0.5
            self.inputs.append(Input(name, dtype, None, value=value, index=index))
            v = _Value(name, dtype, None, None, abs(float(value)), True, value != 0)
        else:
            if declared is None:
                declared = tuple(e if self.rng.random() < 0.25 else -1 for e in shape)
            declared = tuple(declared)
            layouts = ["contiguous", "misaligned", "sliced"] if shape else ["contiguous"]
            if len(shape) >= 2:
                layouts.append("transposed")
            ones = [d for d, e in enumerate(shape) if e > 1]
            if ones:
                layouts.append("broadcast")
            layout = self.rng.choice(layouts) if self.rng.random() < 0.6 else "contiguous"
            bdims: tuple[int, ...] = ()
            if layout == "broadcast":
                bdims = tuple(sorted(self.rng.sample(ones, self.rng.randint(1, len(ones)))))
            self.inputs.append(Input(name, dtype, shape, declared, layout, bdims, index=index))
            mag = 20.0 if dtype in FLOATS else (9.0 if dtype in INTS else 1.0)
            v = _Value(name, dtype, shape, declared, mag, True, dtype in INTS and not index)
        self.values.append(v)
        return v

    def add_op(
        self,
        op: str,
        args: Sequence[str | Number],
        results: Sequence[tuple[str, tuple[int, ...] | None, tuple[int, ...] | None]],
        mag: float,
        exact: bool,
        nonzero: bool = False,
        **kwargs: Any,
    ) -> list[_Value]:
        """Appends an op; `results` holds (dtype, shape, declared) of each result."""
        names = [self.fresh("v") for _ in results]
        self.ops.append(Op(op, tuple(args), tuple(names), tuple(kwargs.items())))
        made = [
            _Value(n, d, s, dec, mag, exact, nonzero)
            for n, (d, s, dec) in zip(names, results, strict=True)
        ]
        self.values.extend(made)
        return made

    def pick(self, pred: Callable[[_Value], bool]) -> _Value | None:
        """A value satisfying `pred`, later ones likelier (so ops chain into deep programs)."""
        candidates = [v for v in self.values if pred(v)]
        if not candidates:
            return None
        return self.rng.choices(candidates, weights=range(1, len(candidates) + 1))[0]

    def tensor_or_new(self, pred: Callable[[_Value], bool], dtype: str | None = None) -> _Value:
        """A tensor of the pool satisfying `pred` (usually), or a new input like one."""
        v = self.pick(lambda v: v.is_tensor and pred(v))
        if v is None or self.rng.random() < 0.2:
            base = self.pick(lambda v: v.is_tensor)
            shape = base.shape if base is not None else self.pick_shape()
            v = self.new_input(dtype or self.rng.choice(list(DTYPES)), shape)
            if not pred(v):
                fits = [d for d in DTYPES if pred(replace(v, dtype=d))]
                v = self.cast_to(v, self.rng.choice(fits))
        return v

    def cast_to(self, v: _Value, dtype: str) -> _Value:
        (r,) = self.add_op(
            "cast", [v.name], [(dtype, v.shape, v.declared)], v.mag, v.exact, dtype=dtype
        )
        return r

    def partner(self, v: _Value) -> str | Number:
        """A second operand for a pointwise op with `v`: a tensor of its shape or one that
        broadcasts with it (nvFuser's implicit broadcast: static 1s, fewer leading dims), a
        scalar, or a Python number."""
        r = self.rng.random()
        if r < 0.15:
            kind = self.rng.choice(["f", "i", "b"])
            if kind == "f":
                return self.rng.choice(FLOAT_CONSTANTS)
            if kind == "i":
                return self.rng.choice(INT_CONSTANTS)
            return self.rng.random() < 0.5
        if r < 0.3:
            s = self.pick(lambda u: not u.is_tensor)
            if s is None or self.rng.random() < 0.5:
                s = self.new_input(self.rng.choice(["f32", "f64", "i32", "i64", "bool"]), None)
            return s.name
        if v.shape is None:
            return self.tensor_or_new(lambda u: True).name
        if v.shape and self.rng.random() < 0.2:
            shape, declared = list(v.shape), [-1] * len(v.shape)
            for d in self.rng.sample(range(len(shape)), self.rng.randint(0, len(shape))):
                shape[d], declared[d] = 1, 1
            drop = self.rng.randint(0, len(shape) - 1)
            u = self.new_input(self.rng.choice(list(DTYPES)), tuple(shape[drop:]), declared[drop:])
            return u.name
        budget = BUDGET[self.sizes]
        same = self.pick(
            lambda u: (
                u is not v
                and u.is_tensor
                and broadcasts([u, v])
                and math.prod(broadcast([u, v])[0] or ()) <= budget
            )
        )
        if same is None or self.rng.random() < 0.3:
            same = self.new_input(self.rng.choice(list(DTYPES)), v.shape)
        return same.name

    def value(self, x: str | Number) -> _Value:
        if isinstance(x, str):
            return next(v for v in self.values if v.name == x)
        dtype = "bool" if isinstance(x, bool) else ("i64" if isinstance(x, int) else "f32")
        return _Value("", dtype, None, None, abs(float(x)), True, x != 0)

    # ---- one op of each kind --------------------------------------------------------------

    def gen_unary(self, op: str) -> bool:
        if op in UNARY_INT_OK:
            x = self.pick(lambda v: v.dtype != "bool") or self.tensor_or_new(
                lambda v: v.dtype != "bool"
            )
            out = x.dtype
            mag, exact = x.mag + (op in ("ceil", "floor", "round")), x.exact
        elif op in UNARY_TESTS:
            x = self.pick(lambda v: True) or self.tensor_or_new(lambda v: True)
            out, mag, exact = "bool", 1.0, True
        elif op in UNARY_OF_ONE_KIND:
            kind = FLOATS if op == "frac" else (*INTS, "bool")
            x = self.pick(lambda v: v.dtype in kind) or self.tensor_or_new(
                lambda v: v.dtype in kind
            )
            out, mag, exact = x.dtype, max(x.mag + 1.0, 1.0), x.exact
        else:
            x = self.pick(lambda v: True) or self.tensor_or_new(lambda v: True)
            out = x.dtype if x.dtype in FLOATS else "f32"
            growth = math.exp(min(x.mag, 100.0))
            grow = {"exp": growth, "cosh": growth, "sinh": growth, "expm1": growth}
            grow |= {"exp2": growth, "reciprocal": 1e6, "rsqrt": 1e3, "tan": 1e7}
            grow |= {"lgamma": (x.mag + 2.0) * math.log(x.mag + 2.0) + 1e2}
            grow |= {"erfinv": 10.0, "erfcinv": 10.0, "atanh": 10.0}
            mag = max(grow.get(op, x.mag + 1.0), 1.0)
            exact = False
        if mag > MAG_LIMIT:
            return False
        kwargs: dict[str, Any] = {}
        if op == "gelu":
            kwargs["approximate"] = self.rng.choice(["none", "tanh"])
        self.add_op(op, [x.name], [(out, x.shape, x.declared)], mag, exact, **kwargs)
        return True

    def promoted(self, operands: Sequence[str | Number]) -> str:
        """torch's result type over tensors, then scalars, then numbers (by category)."""
        vals = [(self.value(x), x) for x in operands]
        levels = [
            [v.dtype for v, x in vals if isinstance(x, str) and v.is_tensor and v.shape],
            # a 0-d tensor ranks with the scalars, as in torch
            [v.dtype for v, x in vals if isinstance(x, str) and not (v.is_tensor and v.shape)],
            [v.dtype for v, x in vals if not isinstance(x, str)],
        ]
        from fuser.fuzz.oracle import result_type  # (the oracle imports this module)

        return result_type(levels)

    def gen_binary(self, op: str) -> bool:
        x = self.pick(lambda v: True)
        if x is None:
            return False
        y = self.partner(x)
        args: list[str | Number] = [x.name, y]
        if self.rng.random() < 0.5:
            args.reverse()
        a, b = (self.value(z) for z in args)
        promoted = self.promoted(args)
        shape, declared = broadcast([a, b])
        if op in COMPARE or op in LOGICAL:
            self.add_op(op, args, [("bool", shape, declared)], 1.0, True)
            return True
        if op == "nextafter" and promoted not in ("f32", "f64"):
            return False
        integral = promoted in INTS or promoted == "bool"
        if promoted == "bool" and op not in ("add", "mul", "maximum", "minimum", "truediv"):
            return False
        if op == "pow" and integral:
            if isinstance(args[1], str) and not (b.dtype in INTS and b.nonzero and b.mag <= 9):
                return False
            if not isinstance(args[1], str):
                args[1] = self.rng.choice([0, 1, 2, 3])
            if a.mag > 9:
                return False
        out = "f32" if op in ("truediv", "atan2") and promoted not in FLOATS else promoted
        mag = {
            "atan2": 4.0,
            "fmod": max(a.mag, b.mag),
            "remainder": a.mag + b.mag,
            "nextafter": max(a.mag, 1.0) * 1.01,
            "add": a.mag + b.mag,
            "sub": a.mag + b.mag,
            "mul": a.mag * b.mag,
            "div": 1e6 * a.mag,
            "truediv": 1e6 * a.mag,
            "pow": math.exp(min(700.0, min(b.mag, 40.0) * math.log(max(a.mag, 1.0)))) * 1e6,
            "maximum": max(a.mag, b.mag),
            "minimum": max(a.mag, b.mag),
        }[op]
        if out in FLOATS and mag > MAG_LIMIT:
            return False
        exact = a.exact and b.exact and op in ("add", "sub", "mul", "maximum", "minimum")
        exact = exact or (integral and op not in ("truediv", "atan2") and a.exact and b.exact)
        self.add_op(op, args, [(out, shape, declared)], max(mag, 1.0), exact)
        return True

    def gen_integer_binary(self, op: str) -> bool:
        """An integer op (`bitwise_*` of bools too) on an integer tensor and a partner of its
        kind: a tensor, a scalar input or a number (a shift count in [-2, 70))."""
        kinds = (*INTS, "bool") if op in BITWISE else INTS
        x = self.pick(lambda v: v.dtype in kinds) or self.tensor_or_new(lambda v: v.dtype in kinds)
        r = self.rng.random()
        if r < 0.25:
            if x.dtype == "bool":
                y: str | Number = self.rng.random() < 0.5
            else:
                y = self.rng.randrange(-2, 70) if "shift" in op else self.rng.choice(INT_CONSTANTS)
        elif r < 0.4:
            y = self.new_input(x.dtype if x.dtype == "bool" else self.rng.choice(INTS), None).name
        else:
            u = self.pick(lambda u: u.dtype in kinds and u.is_tensor and broadcasts([u, x]))
            if u is None or self.rng.random() < 0.3:
                dtype = x.dtype if x.dtype == "bool" else self.rng.choice(INTS)
                u = self.new_input(dtype, x.shape if x.shape is not None else self.pick_shape())
            y = u.name
        args: list[str | Number] = [x.name, y]
        if self.rng.random() < 0.5 and op in (*BITWISE, "gcd"):
            args.reverse()
        a, b = (self.value(z) for z in args)
        promoted = self.promoted(args)
        if promoted not in kinds or not broadcasts([a, b]):
            return False
        shape, declared = broadcast([a, b])
        mag = 2.0**63 if "left" in op else max(a.mag, b.mag) * 2.0
        self.add_op(op, args, [(promoted, shape, declared)], mag, a.exact and b.exact)
        return True

    def gen_composite(self, op: str) -> bool:
        """lerp, addcmul, clamp or threshold of a float tensor and partners of its shape."""
        x = self.pick(lambda v: v.is_tensor and v.dtype in FLOATS)
        if x is None:
            return False
        others = [self.partner(x) for _ in range(2)]
        kw: dict[str, Any] = {}
        if op == "clamp":
            lo, hi = sorted(self.rng.sample(FLOAT_CONSTANTS, 2))
            args: list[str | Number] = [x.name]
            kw = {"min": lo} if self.rng.random() < 0.3 else {"min": lo, "max": hi}
            if self.rng.random() < 0.2:
                kw = {"max": hi}
        elif op == "addcmul":
            args = [x.name, *others, self.rng.choice(FLOAT_CONSTANTS)]
        elif op == "threshold":
            args = [x.name, self.rng.choice(FLOAT_CONSTANTS), self.rng.choice(FLOAT_CONSTANTS)]
        else:
            args = [x.name, *others]
        values = [self.value(z) for z in args if isinstance(z, str)]
        if not broadcasts(values):
            return False
        if op == "lerp" and any(v.dtype not in FLOATS for v in values):
            return False  # (torch's lerp takes floating-point tensors only)
        promoted = self.promoted([*args, *kw.values()])
        if promoted not in FLOATS:
            return False
        shape, declared = broadcast(values)
        mags = [v.mag for v in values] + [abs(float(z)) for z in args if not isinstance(z, str)]
        mag = 3.0 * max(mags) ** (2 if op == "addcmul" else 1) + 1.0
        if mag > MAG_LIMIT:
            return False
        self.add_op(op, args, [(promoted, shape, declared)], mag, False, **kw)
        return True

    def gen_random(self, op: str) -> bool:
        """Uniform numbers in [a, b) or normal ones (mean a, deviation b) of a float dtype,
        shaped like another tensor (by its extents or by ints), under a random seed and
        offset."""
        like = self.shape_like()
        if like is None:
            return False
        t, shape, declared = like
        dtype = self.rng.choice(FLOATS)
        a, b = self.rng.choice([(0.0, 1.0), (-2.0, 3.0), (0.5, 0.25)])
        if op == "uniform":
            a, b = min(a, b), max(a, b)  # (minval <= maxval)
        mag = max(abs(a), abs(b)) if op == "uniform" else abs(a) + 7 * abs(b)
        self.add_op(
            op,
            [a, b],
            [(dtype, t.shape, tuple(declared))],
            mag,
            False,
            shape=shape,
            rng_seed=self.rng.randrange(2**40),
            rng_offset=self.rng.randrange(2**20),
            dtype=dtype,
        )
        return True

    def gen_triangle(self, op: str) -> bool:
        """triu or tril of a tensor of rank 2 or more, a diagonal in [-2, 2]."""
        x = self.pick(lambda v: v.is_tensor and v.shape is not None and len(v.shape) >= 2)
        if x is None:
            return False
        assert x.shape is not None
        diagonal = self.rng.randint(-2, 2)
        self.add_op(op, [x.name, diagonal], [(x.dtype, x.shape, x.declared)], x.mag, x.exact)
        return True

    def gen_where(self) -> bool:
        x = self.pick(lambda v: v.is_tensor)
        if x is None:
            return False
        other = self.partner(x)
        args = [x.name, other] if self.rng.random() < 0.5 else [other, x.name]
        a, b = (self.value(z) for z in args)
        shape, declared = broadcast([a, b])
        assert shape is not None and declared is not None
        cond = self.pick(
            lambda v: v.dtype == "bool" and (not v.is_tensor or broadcast([v, a, b])[0] == shape)
        )
        if cond is None or self.rng.random() < 0.3:
            cond = self.new_input("bool", shape, declared)
        shape, declared = broadcast([cond, a, b])
        out = self.promoted(args)
        self.add_op(
            "where",
            [cond.name, *args],
            [(out, shape, declared)],
            max(a.mag, b.mag),
            a.exact and b.exact,
        )
        return True

    def gen_cast(self) -> bool:
        x = self.pick(lambda v: True)
        if x is None:
            return False
        targets = list(DTYPES)
        if x.dtype in FLOATS and not x.exact:
            targets = list(FLOATS)
        dtype = self.rng.choice(targets)
        mag = x.mag
        if dtype in INTS and x.dtype in FLOATS and mag > 1e9:
            mag = 2.0**63
        self.add_op("cast", [x.name], [(dtype, x.shape, x.declared)], mag, x.exact, dtype=dtype)
        return True

    def gen_copy(self, op: str) -> bool:
        x = self.pick(lambda v: v.is_tensor)
        if x is None:
            return False
        self.add_op(op, [x.name], [(x.dtype, x.shape, x.declared)], x.mag, x.exact)
        return True

    def gen_broadcast(self) -> bool:
        src = self.pick(lambda v: v.is_tensor or self.rng.random() < 0.3)  # a Scalar as rank 0
        if src is None:
            return False
        src_shape, src_declared = src.shape or (), src.declared or ()
        r = len(src_shape)
        targets = [
            v for v in self.values if v.is_tensor and v.shape is not None and len(v.shape) >= r
        ]
        self.rng.shuffle(targets)
        for t in targets:
            assert t.shape is not None
            maps = [
                dims
                for dims in itertools.combinations(range(len(t.shape)), r)
                if all(src_shape[i] == t.shape[d] or src.static_one(i) for i, d in enumerate(dims))
            ]
            if maps and (len(t.shape) > r or any(src.static_one(i) for i in range(r))):
                dims = self.rng.choice(maps)
                shape = [(t.name, d) for d in range(len(t.shape))]
                declared = tuple(
                    -1 if t.declared is None else t.declared[d] for d in range(len(t.shape))
                )
                self.add_op(
                    "broadcast_in_dim",
                    [src.name],
                    [(src.dtype, t.shape, declared)],
                    src.mag,
                    src.exact,
                    shape=shape,
                    broadcast_dims=list(dims),
                )
                return True
        # a new static dim
        if r >= 3:
            return False
        pos = self.rng.randint(0, r)
        extent = self.pick_dim(BUDGET[self.sizes] // max(1, math.prod(src_shape)))
        shape_entries: list[Any] = [(src.name, d) for d in range(r)]
        shape_entries.insert(pos, extent)
        out_shape = (*src_shape[:pos], extent, *src_shape[pos:])
        out_declared = (*src_declared[:pos], extent, *src_declared[pos:])
        dims = [d if d < pos else d + 1 for d in range(r)]
        self.add_op(
            "broadcast_in_dim",
            [src.name],
            [(src.dtype, out_shape, out_declared)],
            src.mag,
            src.exact,
            shape=shape_entries,
            broadcast_dims=dims,
        )
        return True

    def gen_permute(self) -> bool:
        x = self.pick(lambda v: v.is_tensor and len(v.shape or ()) >= 2)
        if x is None:
            return False
        assert x.shape is not None and x.declared is not None
        dims = list(range(len(x.shape)))
        while dims == sorted(dims):
            self.rng.shuffle(dims)
        shape = tuple(x.shape[d] for d in dims)
        declared = tuple(x.declared[d] for d in dims)
        self.add_op("permute", [x.name], [(x.dtype, shape, declared)], x.mag, x.exact, dims=dims)
        return True

    def gen_squeeze(self) -> bool:
        x = self.pick(lambda v: v.is_tensor and any(map(v.static_one, range(len(v.shape or ())))))
        if x is None:
            return False
        assert x.shape is not None and x.declared is not None
        ones = [d for d in range(len(x.shape)) if x.static_one(d)]
        dims = sorted(self.rng.sample(ones, self.rng.randint(1, len(ones))))
        shape = tuple(e for d, e in enumerate(x.shape) if d not in dims)
        declared = tuple(e for d, e in enumerate(x.declared) if d not in dims)
        self.add_op("squeeze", [x.name], [(x.dtype, shape, declared)], x.mag, x.exact, dims=dims)
        return True

    def gen_slice(self) -> bool:
        """Bounds per dim as torch reads them: in range, negative, past either end, or whole;
        steps of 1 to 3."""
        x = self.pick(lambda v: v.is_tensor and len(v.shape or ()) >= 1)
        if x is None:
            return False
        assert x.shape is not None and x.declared is not None
        starts, stops, steps, shape, declared = [], [], [], [], []
        for n, dec in zip(x.shape, x.declared, strict=True):
            if self.rng.random() < 0.4:
                a, b, c = 0, END, 1
            else:
                a = self.rng.choice([0, 1, n // 2, -1, -n, -n - 2, n + 1])
                b = self.rng.choice([END, n, n - 1, n // 2 + 1, -1, -n // 2, n + 3, 0])
                c = self.rng.choice([1, 1, 2, 3])
            starts.append(a)
            stops.append(b)
            steps.append(c)
            count = slice_range(a, b, c, n)[1]
            shape.append(count)
            declared.append(-1 if dec == -1 else count)
        self.add_op(
            "slice",
            [x.name],
            [(x.dtype, tuple(shape), tuple(declared))],
            x.mag,
            x.exact,
            x.nonzero,
            start_indices=starts,
            end_indices=stops,
            strides=steps,
        )
        return True

    def static_input(self, rank: int) -> _Value:
        """A new tensor input of static declared extents (a pad or a cat needs some), shaped
        like a tensor of the pool or freshly."""
        base = self.pick(lambda v: v.is_tensor and len(v.shape or ()) == rank)
        shape = base.shape if base is not None and self.rng.random() < 0.5 else None
        shape = shape or self.pick_shape(rank)
        return self.new_input(self.rng.choice(list(DTYPES)), shape, shape)

    def pad_value(self, x: _Value) -> tuple[str | Number | None, float, bool, bool]:
        """A pad's value for `x` (None: the default 0), of a kind `x`'s dtype takes (a
        non-integral number for an integer tensor is refused; a float Scalar only when exactly
        computed, see AVOIDED), with its magnitude and whether it stays exact and nonzero as a
        value of `x`'s dtype."""
        r = self.rng.random()
        if r < 0.25:
            return None, 0.0, True, False
        if r < 0.7:
            value: Number
            if x.dtype in FLOATS:
                pool: tuple[Number, ...] = (*FLOAT_CONSTANTS, *INT_CONSTANTS, -math.inf)
                value = self.rng.choice(pool)
            elif x.dtype in INTS:
                value = self.rng.choice(INT_CONSTANTS)
            else:
                value = self.rng.random() < 0.5
            mag = abs(float(value)) if math.isfinite(value) else 0.0
            return value, mag, _representable(value, x.dtype), value != 0
        s = self.pick(
            lambda v: not v.is_tensor and (v.exact or v.dtype not in FLOATS or x.dtype in FLOATS)
        )
        if s is None or self.rng.random() < 0.4:
            s = self.new_input(self.rng.choice(["f32", "f64", "i32", "i64", "bool"]), None)
        lossless = _lossless(s.dtype, x.dtype, s.mag)
        return s.name, s.mag, s.exact and lossless, s.nonzero and lossless

    def gen_pad(self) -> bool:
        """(before, after) widths from the innermost dim outwards (torch's `F.pad` order), for
        some or all dims: positive, zero or negative (down to an empty dim, or one of only the
        value where the other width adds back what one removes), on static dims only; the value
        a number, a Scalar or the default 0."""
        x = self.pick(lambda v: v.is_tensor and any(d != -1 for d in v.declared or ()))
        if x is None or self.rng.random() < 0.25:
            x = self.static_input(self.rng.choice([1, 2, 2, 3]))
        assert x.shape is not None and x.declared is not None
        rank = len(x.shape)
        static = [d for d in range(rank) if x.declared[d] != -1]
        if not static:
            return False
        pairs = self.rng.randint(rank - max(static), rank)  # the innermost `pairs` dims
        low, high = [0] * rank, [0] * rank
        for d in range(rank - pairs, rank):
            n = x.shape[d]
            if x.declared[d] == -1 or self.rng.random() < 0.2:
                continue
            low[d] = self.rng.choice([0, 0, 1, 1, 2, 3, -1, -1, -(n // 2), -n])
            high[d] = self.rng.choice([0, 0, 1, 1, 2, 5, -1, -1, -(n // 2), -n])
            if n + low[d] + high[d] < 0:  # an extent of 0 to 2, all or mostly the value
                high[d] = -n - low[d] + self.rng.choice([0, 1, 2])
        if not any(low) and not any(high):
            d = max(static)
            low[d], high[d] = self.rng.choice([(1, 0), (0, 1), (2, 3)])
        shape = tuple(n + a + b for n, a, b in zip(x.shape, low, high, strict=True))
        if math.prod(shape) > BUDGET[self.sizes]:
            return False
        declared = tuple(
            n if a == b == 0 else e for n, a, b, e in zip(x.declared, low, high, shape, strict=True)
        )
        widths = [w for d in reversed(range(rank - pairs, rank)) for w in (low[d], high[d])]
        value, mag, exact, nonzero = self.pad_value(x)
        self.add_op(
            "pad",
            [x.name] if value is None else [x.name, value],
            [(x.dtype, shape, declared)],
            max(x.mag, mag),
            x.exact and exact,
            x.nonzero and nonzero,
            pad_widths=widths,
        )
        return True

    def gen_cat(self) -> bool:
        """2 to 4 tensors along a dim static in each (a negative `dim` half the time): the
        first from the pool, the others of the pool, new inputs of mixed extents along the dim
        (0 and 1 included, mostly of the first's dtype: others promote), or an operand again."""
        x = self.pick(lambda v: v.is_tensor and any(d != -1 for d in v.declared or ()))
        if x is None or self.rng.random() < 0.25:
            x = self.static_input(self.rng.choice([1, 2, 2, 3]))
        assert x.shape is not None and x.declared is not None
        shape, rank = x.shape, len(x.shape)
        static = [d for d in range(rank) if x.declared[d] != -1]
        if not static:
            return False
        d = self.rng.choice(static)

        def fits(v: _Value) -> bool:
            return (
                v.shape is not None
                and v.declared is not None
                and len(v.shape) == rank
                and v.declared[d] != -1
                and all(e == shape[j] for j, e in enumerate(v.shape) if j != d)
            )

        operands = [x]
        for _ in range(self.rng.randint(1, 3)):
            r = self.rng.random()
            u = self.rng.choice(operands) if r < 0.2 else None
            if u is None and r < 0.5:
                u = self.pick(lambda v: v not in operands and fits(v))
            if u is None:
                extent = self.rng.choice([0, 1, 1, 2, 3, 5, 7, 129, shape[d]])
                new = tuple(extent if j == d else e for j, e in enumerate(shape))
                declared = tuple(
                    e if j == d or self.rng.random() < 0.25 else -1 for j, e in enumerate(new)
                )
                dtype = x.dtype if self.rng.random() < 0.7 else self.rng.choice(list(DTYPES))
                u = self.new_input(dtype, new, declared)
            operands.append(u)
        total = sum((u.shape or ())[d] for u in operands)
        out_shape = tuple(total if j == d else e for j, e in enumerate(shape))
        if math.prod(out_shape) > BUDGET[self.sizes]:
            return False
        out_declared = tuple(
            total
            if j == d
            else next((u.declared[j] for u in operands if u.declared and u.declared[j] != -1), -1)
            for j in range(rank)
        )
        names = [u.name for u in operands]
        out = self.promoted(names)
        self.add_op(
            "cat",
            names,
            [(out, out_shape, out_declared)],
            max(u.mag for u in operands),
            all(u.exact and _lossless(u.dtype, out, u.mag) for u in operands),
            all(u.nonzero for u in operands),
            dim=d - rank if self.rng.random() < 0.5 else d,
        )
        return True

    def _index_along(
        self,
    ) -> tuple[_Value, int, _Value, tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
        """A tensor, a dim of it with elements, and a new index input along that dim: its
        extent 1, 2 or 3 there (static or not), the tensor's elsewhere; then the tensor's
        declared shape and the index's run-time and declared shapes."""
        x = self.pick(lambda v: v.is_tensor and any(e > 0 for e in v.shape or ()))
        if x is None:
            return None
        assert x.shape is not None and x.declared is not None
        d = self.rng.choice([j for j, e in enumerate(x.shape) if e > 0])
        k = self.rng.choice([1, 1, 2, 3])
        shape = tuple(k if j == d else e for j, e in enumerate(x.shape))
        declared = tuple(
            (k if self.rng.random() < 0.5 else -1) if j == d else e
            for j, e in enumerate(x.declared)
        )
        index = self.new_input(self.rng.choice(INTS), shape, declared, index=True)
        return x, d, index, x.declared, shape, declared

    def gen_take_along_axis(self) -> bool:
        """k of a tensor's elements along a dim, at a new index input (values in [-9, 9], 0
        included: many count from the end or are clamped)."""
        picked = self._index_along()
        if picked is None:
            return False
        x, d, index, x_declared, shape, declared = picked
        result = tuple(
            b if j == d or b != -1 else a
            for j, (a, b) in enumerate(zip(x_declared, declared, strict=True))
        )
        self.add_op(
            "take_along_axis",
            [x.name, index.name],
            [(x.dtype, shape, result)],
            x.mag,
            x.exact,
            x.nonzero,
            dim=d,
        )
        return True

    def gen_scatter(self) -> bool:
        """A tensor with values written along a dim at a new index input (values in [-9, 9]:
        many count from the end or write nothing, some repeat): from a new tensor input of the
        index's shape, a new scalar input or a Python number."""
        picked = self._index_along()
        if picked is None:
            return False
        x, d, index, x_declared, shape, declared = picked
        pick = self.rng.random()
        src: str | Number
        if pick < 0.5:
            value = self.new_input(x.dtype, shape, declared)
            src, mag, exact = value.name, value.mag, value.exact
        elif pick < 0.75:
            value = self.new_input(x.dtype, None)
            src, mag, exact = value.name, value.mag, value.exact
        else:
            if x.dtype in FLOATS:
                src = self.rng.choice(FLOAT_CONSTANTS)
            elif x.dtype in INTS:
                src = self.rng.choice(INT_CONSTANTS)
            else:
                src = self.rng.random() < 0.5
            mag, exact = abs(float(src)), _representable(src, x.dtype)
        self.add_op(
            "scatter",
            [x.name, index.name, src],
            [(x.dtype, x.shape, x_declared)],
            max(x.mag, mag),
            x.exact and exact,
            False,
            dim=d,
        )
        return True

    def _take_source(self) -> tuple[_Value, int] | None:
        """A tensor and a dim of it with elements to take."""
        x = self.pick(lambda v: v.is_tensor and any(e > 0 for e in v.shape or ()))
        if x is None:
            return None
        assert x.shape is not None
        return x, self.rng.choice([j for j, e in enumerate(x.shape) if e > 0])

    def gen_index_select(self) -> bool:
        """A tensor's entries along a dim at a new 1-D index input (values in [-9, 9]: negative
        ones count from the end, others are clamped)."""
        picked = self._take_source()
        if picked is None:
            return False
        x, d = picked
        assert x.shape is not None and x.declared is not None
        k = self.rng.choice(
            [1, 2, 5, self.pick_dim(BUDGET[self.sizes] // max(1, math.prod(x.shape)))]
        )
        index = self.new_input(self.rng.choice(INTS), (k,), index=True)
        assert index.declared is not None
        self.add_op(
            "index_select",
            [x.name, index.name],
            [
                (
                    x.dtype,
                    (*x.shape[:d], k, *x.shape[d + 1 :]),
                    (*x.declared[:d], index.declared[0], *x.declared[d + 1 :]),
                )
            ],
            x.mag,
            x.exact,
            x.nonzero,
            dim=d - len(x.shape) if self.rng.random() < 0.3 else d,
        )
        return True

    def gen_select(self) -> bool:
        """A tensor at one position along a dim, which goes: an int within the dim, or a new
        scalar input (negative, or past the end: clamped)."""
        picked = self._take_source()
        if picked is None:
            return False
        x, d = picked
        assert x.shape is not None and x.declared is not None
        position: str | int
        if self.rng.random() < 0.5:
            position = self.rng.randrange(-x.shape[d], x.shape[d])
        else:
            position = self.new_input(self.rng.choice(INTS), None, index=True).name
        self.add_op(
            "select",
            [x.name, position],
            [(x.dtype, (*x.shape[:d], *x.shape[d + 1 :]), (*x.declared[:d], *x.declared[d + 1 :]))],
            x.mag,
            x.exact,
            x.nonzero,
            dim=d,
        )
        return True

    def gen_embedding_fwd(self) -> bool:
        """The rows of a 2-D float tensor at a new index input of rank 1 or 2."""
        w = self.pick(
            lambda v: v.dtype in FLOATS and len(v.shape or ()) == 2 and (v.shape or (0,))[0] > 0
        )
        if w is None:
            return False
        assert w.shape is not None and w.declared is not None
        room = BUDGET[self.sizes] // max(1, w.shape[1])
        shape: list[int] = []
        for _ in range(self.rng.randint(1, 2)):
            shape.append(self.pick_dim(room // max(1, math.prod(shape))))
        ids = self.new_input(self.rng.choice(INTS), tuple(shape), index=True)
        assert ids.shape is not None and ids.declared is not None
        self.add_op(
            "embedding_fwd",
            [ids.name, w.name],
            [(w.dtype, (*ids.shape, w.shape[1]), (*ids.declared, w.declared[1]))],
            w.mag,
            w.exact,
            w.nonzero,
        )
        return True

    def gen_reshape(self) -> bool:
        """Merges two adjacent dims, splits one, or flattens; one entry may be -1 (inferred),
        and dynamic dims before the change may be the operand's run-time extents (kept)."""
        x = self.pick(lambda v: v.is_tensor and len(v.shape or ()) >= 1)
        if x is None:
            return False
        assert x.shape is not None and x.declared is not None
        shape = list(x.shape)
        how = self.rng.choice(["merge", "split", "flatten"] if len(shape) >= 2 else ["split"])
        i = 0
        if how == "merge":
            i = self.rng.randrange(len(shape) - 1)
            new = [*shape[:i], shape[i] * shape[i + 1], *shape[i + 2 :]]
        elif how == "split":
            i = self.rng.randrange(len(shape))
            divisors = [d for d in range(1, shape[i] + 1) if shape[i] % d == 0] or [1, 2]
            f = self.rng.choice(divisors)  # (an extent 0 splits into f and 0)
            new = [*shape[:i], f, shape[i] // f, *shape[i + 1 :]]
        else:
            new = [math.prod(shape)]
        entries: list[Any] = list(new)
        kept = [d for d in range(i) if x.declared[d] == -1 and self.rng.random() < 0.5]
        for d in kept:
            entries[d] = (x.name, d)
        if 0 not in new and self.rng.random() < 0.5:
            entries[self.rng.choice([d for d in range(len(new)) if d not in kept])] = -1
        static = all(e != -1 for e in x.declared)
        declared = (
            tuple(new) if static else tuple(-1 if isinstance(e, tuple) else e for e in entries)
        )
        self.add_op(
            "reshape",
            [x.name],
            [(x.dtype, tuple(new), declared)],
            x.mag,
            x.exact,
            new_shape=entries,
        )
        return True

    def reduce_dims(self, x: _Value) -> tuple[list[int], bool] | None:
        assert x.shape is not None
        if not x.shape:
            return None
        r = len(x.shape)
        dims = sorted(self.rng.sample(range(r), self.rng.randint(1, r)))
        return dims, self.rng.random() < 0.5

    @staticmethod
    def reduced(
        x: _Value, dims: Sequence[int], keep: bool
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        assert x.shape is not None and x.declared is not None
        shape, declared = [], []
        for d, (e, s) in enumerate(zip(x.shape, x.declared, strict=True)):
            if d in dims:
                if keep:
                    shape.append(1)
                    declared.append(1)
            else:
                shape.append(e)
                declared.append(s)
        return tuple(shape), tuple(declared)

    def gen_reduction(self, op: str) -> bool:
        x = self.pick(lambda v: v.is_tensor and bool(v.shape))
        if x is None:
            return False
        rd = self.reduce_dims(x)
        assert rd is not None and x.shape is not None
        dims, keep = rd
        n = math.prod(x.shape[d] for d in dims)
        dtype = None
        if x.dtype in FLOATS and self.rng.random() < 0.2:
            dtype = self.rng.choice(FLOATS)
        promoted = op in ("sum", "prod") and x.dtype in ("bool", *INTS)
        out = dtype or ("i64" if promoted else x.dtype)
        mag = _combined_magnitude(op, x.mag, n)
        if not _fits(op, out, mag):
            return False
        exact = x.exact and (op not in ("sum", "prod") or out not in FLOATS)
        shape, declared = self.reduced(x, dims, keep)
        kwargs: dict[str, Any] = {"dims": dims, "keepdim": keep}
        if dtype is not None:
            kwargs["dtype"] = dtype
        self.add_op(op, [x.name], [(out, shape, declared)], max(mag, 1.0), exact, **kwargs)
        return True

    def gen_scan(self, op: str) -> bool:
        """A scan along a random dim of a tensor of rank 1 or more; a sum or product of floats
        sometimes with a `dtype` (the input cast first)."""
        x = self.pick(lambda v: v.is_tensor and bool(v.shape))
        if x is None:
            return False
        assert x.shape is not None
        dim = self.rng.randrange(-len(x.shape), len(x.shape))
        n = x.shape[dim]
        counted = op in ("cumsum", "cumprod")
        dtype = None
        if counted and x.dtype in FLOATS and self.rng.random() < 0.2:
            dtype = self.rng.choice(FLOATS)
        out = dtype or ("i64" if counted and x.dtype in ("bool", *INTS) else x.dtype)
        kind = {"cumsum": "sum", "cumprod": "prod"}.get(op, op)
        mag = _combined_magnitude(kind, x.mag, n)
        if not _fits(kind, out, mag):
            return False
        exact = x.exact and (not counted or out not in FLOATS)
        kwargs: dict[str, Any] = {"dim": dim}
        if dtype is not None:
            kwargs["dtype"] = dtype
        self.add_op(op, [x.name], [(out, x.shape, x.declared)], max(mag, 1.0), exact, **kwargs)
        return True

    def gen_sort(self, op: str) -> bool:
        """`topk` (k from 0 to the extent, largest or smallest) or `argsort` (ascending or
        descending) along a random dim of an exact tensor: values the GPU holds as the oracle
        does, so that the order is the same (`topk` of numbers only, as torch's)."""
        x = self.pick(
            lambda v: (
                v.is_tensor and bool(v.shape) and v.exact and (op != "topk" or v.dtype != "bool")
            )
        )
        if x is None:
            return False
        assert x.shape is not None and x.declared is not None
        dim = self.rng.randrange(-len(x.shape), len(x.shape))
        n = x.shape[dim]
        if n > (SORTED_ROW if op == "argsort" else TOPK_ROW):
            return False  # longer rows are refused by name (the GPU tests check it)
        if op == "argsort":
            descending = self.rng.random() < 0.5
            results = [("i64", x.shape, x.declared)]
            self.add_op(op, [x.name], results, max(n, 1), True, dim=dim, descending=descending)
            return True
        k = self.rng.randint(0, min(n, SORTED_ROW))  # (a wider sort than that is refused)
        d = dim % len(x.shape)
        shape = (*x.shape[:d], k, *x.shape[d + 1 :])
        declared = (*x.declared[:d], k, *x.declared[d + 1 :])
        largest = self.rng.random() < 0.7
        results = [(x.dtype, shape, declared), ("i64", shape, declared)]
        self.add_op(op, [x.name, k], results, max(x.mag, n, 1), True, dim=dim, largest=largest)
        return True

    def statistics_input(self) -> _Value | None:
        x = self.pick(lambda v: v.is_tensor and bool(v.shape) and v.dtype in ("f32", "f64"))
        if x is None:
            y = self.pick(lambda v: v.is_tensor and bool(v.shape))
            if y is None:
                return None
            x = self.cast_to(y, self.rng.choice(["f32", "f64"]))
        return x

    def gen_welford(self) -> bool:
        x = self.statistics_input()
        if x is None:
            return False
        assert x.shape is not None
        dims, _ = self.reduce_dims(x) or ([0], False)
        shape, declared = self.reduced(x, dims, False)
        self.add_op(
            "welford",
            [x.name],
            [(x.dtype, shape, declared), (x.dtype, shape, declared), ("i64", shape, declared)],
            x.mag * x.mag * max(1, math.prod(x.shape)),
            False,
            dims=dims,
        )
        return True

    def gen_var_mean(self) -> bool:
        x = self.statistics_input()
        if x is None:
            return False
        dims, keep = self.reduce_dims(x) or ([0], False)
        shape, declared = self.reduced(x, dims, keep)
        self.add_op(
            "var_mean",
            [x.name],
            [(x.dtype, shape, declared), (x.dtype, shape, declared)],
            x.mag * x.mag * 4,
            False,
            dims=dims,
            correction=self.rng.choice([0, 1, 1, 2]),
            keepdim=keep,
        )
        return True

    def gen_matmul(self) -> bool:
        dims = (0, 1, 2, 3, 5, 7, 8, 16, 17, 31, 64, 127, 129)
        weights = (0.03, 0.12, 0.05, 0.08, 0.08, 0.08, 0.08, 0.1, 0.1, 0.08, 0.08, 0.06, 0.06)
        limit = 2_000_000 if self.sizes == "small" else 64_000_000
        a = self.pick(
            lambda v: (
                v.is_tensor
                and v.dtype in FLOATS
                and v.shape is not None
                and len(v.shape) in (2, 3)
                and math.prod(v.shape) <= 40_000
                and math.prod(v.shape[:-2]) * 4 < 65536  # see AVOIDED
                and v.mag < 1e6
            )
        )
        if a is None or self.rng.random() < 0.5:
            batch = (self.rng.choice([1, 2, 3]),) if self.rng.random() < 0.3 else ()
            m, k = self.rng.choices(dims, weights, k=2)
            a = self.new_input(self.rng.choice(FLOATS), (*batch, m, k))
        assert a.shape is not None and a.declared is not None
        *batch_dims, m, k = a.shape
        n = self.rng.choices(dims, weights)[0]
        if math.prod(a.shape) * n > limit:
            return False
        b = self.new_input(a.dtype, (*batch_dims, k, n))
        shape = (*batch_dims, m, n)
        assert b.declared is not None
        batch = [_batch_extent(x, y) for x, y in zip(a.declared[:-2], b.declared[:-2], strict=True)]
        declared = (*batch, a.declared[-2], b.declared[-1])
        mag = a.mag * b.mag * max(k, 1)
        self.add_op("matmul", [a.name, b.name], [(a.dtype, shape, declared)], mag, False)
        return True

    def shape_like(self) -> tuple[_Value, list[Any], tuple[int, ...]] | None:
        """A tensor of the pool, a shape argument like its shape (its extents, `(name, axis)`,
        or its ints) and the declared shape that gives (None: no tensor yet)."""
        t = self.pick(lambda v: v.is_tensor and v.shape is not None)
        if t is None:
            return None
        assert t.shape is not None and t.declared is not None
        by_extents = self.rng.random() < 0.5
        shape = [(t.name, d) if by_extents else e for d, e in enumerate(t.shape)]
        return t, shape, tuple(t.declared if by_extents else t.shape)

    def gen_full(self) -> bool:
        """A tensor shaped like another one (by its extents or by ints) filled with a
        constant of any dtype."""
        like = self.shape_like()
        if like is None:
            return False
        t, shape, declared = like
        dtype, value = self.constant()
        self.add_op(
            "full",
            [],
            [(dtype, t.shape, tuple(declared))],
            abs(float(value)),
            True,
            value != 0,
            shape=shape,
            fill_value=value,
            dtype=dtype,
        )
        return True

    def gen_iota(self) -> bool:
        """`start + i * step` along a dim of another tensor (by its extent or by its int), in
        an integer or float dtype."""
        t = self.pick(lambda v: v.is_tensor and bool(v.shape))
        if t is None:
            return False
        assert t.shape is not None and t.declared is not None
        d = self.rng.randrange(len(t.shape))
        by_extent = self.rng.random() < 0.5
        length = t.shape[d]
        dtype = self.rng.choice([*FLOATS, *INTS])
        pool = FLOAT_CONSTANTS if dtype in FLOATS else INT_CONSTANTS
        start, step = self.rng.choice(pool), self.rng.choice(pool)
        declared = t.declared[d] if by_extent else length
        length_kw = (t.name, d) if by_extent else length
        if self.rng.random() < 0.25:  # a start known only at run time: computed where read
            first = self.new_input(
                self.rng.choice(["f32", "f64"] if dtype in FLOATS else INTS), None
            )
            self.add_op(
                "iota",
                [first.name],
                [(dtype, (length,), (declared,))],
                first.mag + abs(step) * max(length - 1, 0),
                dtype in INTS,  # a float one rounds twice (i * step, + start)
                False,
                length=length_kw,
                step=step,
                dtype=dtype,
            )
            return True
        self.add_op(
            "iota",
            [],
            [(dtype, (length,), (declared,))],
            abs(start) + abs(step) * max(length - 1, 0),
            True,
            start != 0 and start * step >= 0,  # no element crosses 0
            length=length_kw,
            start=start,
            step=step,
            dtype=dtype,
        )
        return True

    def constant(self) -> tuple[str, Number]:
        """A dtype and a constant of it."""
        dtype = self.rng.choice(list(DTYPES))
        if dtype in FLOATS:
            return dtype, self.rng.choice(FLOAT_CONSTANTS)
        if dtype in INTS:
            return dtype, self.rng.choice(INT_CONSTANTS)
        return dtype, self.rng.random() < 0.5

    def gen_constant(self) -> bool:
        dtype, value = self.constant()
        self.add_op(
            "constant",
            [value],
            [(dtype, None, None)],
            abs(float(value)),
            True,
            value != 0,
            dtype=dtype,
        )
        return True

    def step(self, op: str) -> bool:
        if op in (*UNARY_INT_OK, *UNARY_FLOAT, *UNARY_TESTS, *UNARY_OF_ONE_KIND):
            return self.gen_unary(op)
        if op in BINARY or op in COMPARE or op in LOGICAL:
            return self.gen_binary(op)
        if op in INTEGER_BINARY or op in BITWISE:
            return self.gen_integer_binary(op)
        if op in COMPOSITES:
            return self.gen_composite(op)
        if op in RANDOM:
            return self.gen_random(op)
        if op in TRIANGLES:
            return self.gen_triangle(op)
        if op in REDUCTIONS:
            return self.gen_reduction(op)
        if op in SCANS:
            return self.gen_scan(op)
        if op in SORTS:
            return self.gen_sort(op)
        if op in ("set", "segment_set"):
            return self.gen_copy(op)
        special: dict[str, Callable[[], bool]] = {
            "where": self.gen_where,
            "cast": self.gen_cast,
            "broadcast_in_dim": self.gen_broadcast,
            "permute": self.gen_permute,
            "squeeze": self.gen_squeeze,
            "reshape": self.gen_reshape,
            "full": self.gen_full,
            "iota": self.gen_iota,
            "slice": self.gen_slice,
            "pad": self.gen_pad,
            "cat": self.gen_cat,
            "take_along_axis": self.gen_take_along_axis,
            "scatter": self.gen_scatter,
            "index_select": self.gen_index_select,
            "select": self.gen_select,
            "embedding_fwd": self.gen_embedding_fwd,
            "welford": self.gen_welford,
            "var_mean": self.gen_var_mean,
            "matmul": self.gen_matmul,
            "constant": self.gen_constant,
        }
        return special[op]()


OP_WEIGHTS: dict[str, float] = (
    {op: 1.0 for op in ALL_OPS}
    | {op: 0.15 for op in (*MATH_FUNCTIONS, *ROUNDING, *UNARY_TESTS, *UNARY_OF_ONE_KIND)}
    | {op: 0.3 for op in (*MATH_BINARY, *INTEGER_BINARY, *BITWISE, *LOGICAL, *COMPOSITES)}
    | {op: 0.4 for op in (*RANDOM, *TRIANGLES, *SCANS, *SORTS)}
    | {
        "cast": 2.0,
        "pad": 2.0,
        "cat": 2.0,
        "broadcast_in_dim": 2.0,
        "sum": 1.5,
        "matmul": 0.8,
        "constant": 0.5,
        "segment_set": 0.5,
    }
)
"""How often each op is drawn (every op of `ALL_OPS` has a weight)."""


def generate(seed: int, sizes: str = "small") -> Program:
    """A random program (deterministic in `seed`); `sizes` "small" keeps the CPU run fast,
    "large" allows inputs of millions of elements."""
    rng = random.Random(seed)
    gen = _Generator(rng, sizes)
    ops, weights = list(OP_WEIGHTS), list(OP_WEIGHTS.values())
    if rng.random() < 0.1:
        gen.gen_matmul()
    else:
        gen.new_input(rng.choice(list(DTYPES)), gen.pick_shape())
    target = rng.randint(1, 12)
    tries = 0
    while len(gen.ops) < target and tries < 60:
        tries += 1
        gen.step(rng.choices(ops, weights)[0])
    results = [v for v in gen.values if v.is_tensor and not v.name.startswith("x")]
    if not results:
        gen.gen_copy("set")
        results = [v for v in gen.values if v.is_tensor and not v.name.startswith("x")]
    outputs = {results[-1].name}
    for v in rng.sample(results, min(len(results), rng.randint(0, 2))):
        outputs.add(v.name)
    ordered = tuple(v.name for v in results if v.name in outputs)
    data_seed, specials = rng.randrange(2**31), rng.random() < 0.15
    # stride orders from their own stream, so each seed's program is otherwise as it was
    layout_rng = random.Random(seed ^ 0x5EED)
    orders = []
    for v in results:
        rank = 0 if v.shape is None else len(v.shape)
        if v.name in outputs and rank >= 2 and layout_rng.random() < 0.3:
            order = list(range(rank))
            layout_rng.shuffle(order)
            orders.append((v.name, tuple(order)))
    return Program(
        tuple(gen.inputs),
        tuple(gen.ops),
        ordered,
        data_seed=data_seed,
        specials=specials,
        output_orders=tuple(orders),
    )


# --------------------------------------------------------------------------------------------
# Printing


def _literal(x: Any) -> str:
    if isinstance(x, _Extent):
        return f"{x.name}.size({x.axis})"
    if isinstance(x, _Ref):
        return x.name
    if isinstance(x, DataType):
        return f"DataType.{x.name}"
    if isinstance(x, list):
        return "[" + ", ".join(_literal(e) for e in x) + "]"
    if isinstance(x, str):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return f"float('{x}')"
    return repr(x)


def definition_lines(program: Program) -> list[str]:
    """The `with FusionDefinition() as fd:` block that `build` runs, as Python source."""
    lines = ['with FusionDefinition("fuzz") as fd:']
    for inp in program.inputs:
        dt = f"DataType.{DTYPES[inp.dtype].name}"
        if inp.shape is None:
            lines.append(f"    {inp.name} = fd.define_scalar(dtype={dt})")
        else:
            lines.append(f"    {inp.name} = fd.define_tensor({list(inp.declared or ())}, {dt})")
    for op in program.ops:
        callee, args, kwargs = _call_parts(op)
        parts = [_literal(a) for a in args]  # a str here names a value
        parts += [
            f"{k}={_literal(v) if not isinstance(v, str) else repr(v)}" for k, v in kwargs.items()
        ]
        lhs = ", ".join(op.results)
        lines.append(f"    {lhs} = fd.{callee}({', '.join(parts)})")
    handles: dict[str, Any] = {}
    if program.output_orders:
        try:
            build(program, handles=handles)  # the outputs' ranks (`order_of`)
        except DefinitionError:
            handles.clear()  # a program the frontend refuses: its outputs printed plainly
    for out in program.outputs:
        order = program.order_of(out, handles[out].ndim) if out in handles else None
        given = "" if order is None else f", stride_order={list(order)}"
        lines.append(f"    fd.add_output({out}{given})")
    return lines


def to_script(program: Program, stage: str, message: str, gpu: bool = False) -> str:
    """A standalone Python script that rebuilds the program, shows its inputs and reruns the
    fuzzer's check of it (`fuser.fuzz.differential.check_program`)."""
    lines = [
        f"# fuzz reproducer: {stage}: {message}",
        "import numpy as np",
        "",
        "from fuser import DataType, FusionDefinition",
        "from fuser.fuzz.differential import check_program",
        "from fuser.fuzz.programs import Input, Op, Program, make_inputs",
        "",
        f"PROGRAM = {program!r}",
        "",
        *definition_lines(program),
        "",
        "inputs = make_inputs(PROGRAM)  # numpy views in the program's layouts",
        "for name, x in zip([i.name for i in PROGRAM.inputs], inputs):",
        "    print(name, repr(x) if np.size(x) <= 64 else np.shape(x))",
        "print(fd.reference(inputs, compute_dtype=np.float64))",
        f"print(check_program(PROGRAM, gpu={gpu}))",
    ]
    return "\n".join(lines) + "\n"
