"""The CUDA emitter: prints each `kernel.func` as an `extern "C" __global__` CUDA C++ function.

Modelled on xDSL's WGSL printer (`xdsl.backend.wgsl.wgsl_printer`): a `BasePrinter` with one
`singledispatchmethod` case per op, whose fallback raises `CudaEmissionError` naming the op. The
output is meant to be read: one statement per op, indented by nesting, values named after their
SSA name hints (`%acc` -> `acc`), `kernel.comment` as `//` lines naming the fusion op the code
comes from. Constants are the exception to "one statement per op": they are printed as literals
where they are used (`ty * 32`, `acc + 1.0f`), with the exact value of their type.
`kernel.matmul_mainloop` and `kernel.matmul_frag` call the matmul tile (`fuser::mm::Mma<...>`,
`Wgmma<...>` or `Simt<...>`) that their `#kernel.matmul` config names. The support code lives in
headers (`include/fuser/*.cuh`); a kernel includes those it uses (`fuser.codegen.preamble`).

Types: `!kernel.tensor<T, N>` is core.cuh's `Tensor<T, N>`, `vector<NxT>` is `Vec<T, N>`, and
f16, bf16, f32, f64, i32, i64, i1 are `__half`, `__nv_bfloat16`, `float`, `double`, `int`,
`long long`, `bool`. Arithmetic on f16/bf16 values goes through float (exactly what the half
operators do), math functions use the float (`expf`) or double (`exp`) CUDA functions.

`CudaTarget` is the `cuda` target of `fuser-opt` (`-t cuda`, `-t 'cuda{preamble=false}'`);
`emit_cuda` is the same for Python callers such as the runtime.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import singledispatchmethod
from io import StringIO
from typing import IO

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    UnitAttr,
    VectorType,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.base_printer import BasePrinter
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from fuser.codegen.preamble import includes
from fuser.dialects import kernel, libm
from fuser.dialects.fusion import BF16, F16, F32, F64, I1, I32, I64


class CudaEmissionError(DiagnosticException):
    """The IR holds something the CUDA emitter cannot print (an op, or a type for an op)."""


class UnsupportedTypeError(CudaEmissionError):
    """A type has no CUDA spelling; the printer adds the op it met it in."""


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------

_SCALAR_TYPES: dict[Attribute, str] = {
    F16: "__half",
    BF16: "__nv_bfloat16",
    F32: "float",
    F64: "double",
    I32: "int",
    I64: "long long",
    I1: "bool",
    IndexType(): "long long",
}
_HALF_TYPES = (F16, BF16)
_FLOAT_TYPES = (F16, BF16, F32, F64)
_INT_TYPES = (I32, I64, I1, IndexType())
_UNSIGNED = {I32: "unsigned", I64: "unsigned long long", IndexType(): "unsigned long long"}


def c_type(t: Attribute) -> str:
    """The CUDA C++ spelling of a kernel-level type."""
    if t in _SCALAR_TYPES:
        return _SCALAR_TYPES[t]
    if isinstance(t, kernel.TensorParamType):
        return f"Tensor<{c_type(t.element_type)}, {t.rank.data}>"
    if isinstance(t, VectorType) and len(t.get_shape()) == 1:
        return f"Vec<{c_type(t.element_type)}, {t.get_shape()[0]}>"
    raise UnsupportedTypeError(f"type {t} has no CUDA equivalent in a kernel")


def _half_to_float(expr: str, t: Attribute) -> str:
    return f"__half2float({expr})" if t == F16 else f"__bfloat162float({expr})"


def _float_to_half(expr: str, t: Attribute) -> str:
    return f"__float2half_rn({expr})" if t == F16 else f"__float2bfloat16_rn({expr})"


# --------------------------------------------------------------------------------------------
# Literals
# --------------------------------------------------------------------------------------------


def _parenthesize_negative(text: str) -> str:
    return f"({text})" if text.startswith("-") else text


def float_literal(value: float, t: Attribute) -> str:
    """An exact CUDA literal of `value` as type `t`: the shortest decimal that reads back as the
    same f32 or f64 (numpy's and Python's repr), infinities and NaN as bit patterns, f16/bf16 as
    the conversion of an exact f32 literal (xDSL's FloatAttr holds values already rounded to
    their type; f16 is rounded again here, so any float gives the nearest f16)."""
    if t == F64:
        if math.isnan(value):
            return "__longlong_as_double(0x7ff8000000000000LL)"
        if math.isinf(value):
            text = "__longlong_as_double(0x7ff0000000000000LL)"
            return f"(-{text})" if value < 0 else text
        return _parenthesize_negative(repr(float(value)))
    if t not in _FLOAT_TYPES:
        raise CudaEmissionError(f"type {t} is not a floating-point type")
    with np.errstate(over="ignore"):
        v32 = np.float32(np.float16(value) if t == F16 else value)
    if np.isnan(v32):
        text = "__int_as_float(0x7fffffff)"
    elif np.isinf(v32):
        text = "-__int_as_float(0x7f800000)" if v32 < 0 else "__int_as_float(0x7f800000)"
    else:
        text = f"{v32!s}f"
    return _float_to_half(text, t) if t in _HALF_TYPES else _parenthesize_negative(text)


def int_literal(value: int, t: Attribute) -> str:
    """An exact CUDA literal of `value` as type `t` (wrapped to its width)."""
    if t == I1:
        return "true" if value & 1 else "false"
    bits = 32 if t == I32 else 64
    value &= (1 << bits) - 1
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    suffix = "" if bits == 32 else "LL"
    if value == -(1 << (bits - 1)):  # the literal of -MIN is out of range: spell MIN as -MAX - 1
        return f"(-{(1 << (bits - 1)) - 1}{suffix} - 1)"
    return _parenthesize_negative(f"{value}{suffix}")


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------

_CPP_KEYWORD_TEXT = """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern
false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public register reinterpret_cast requires restrict return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename typeof union unsigned using virtual void volatile wchar_t
while xor xor_eq
"""
_CPP_KEYWORDS = frozenset(_CPP_KEYWORD_TEXT.split())

_UNARY_MATH: dict[type[Operation], str] = {
    mathd.AbsFOp: "fabs",
    mathd.AcosOp: "acos",
    mathd.AcoshOp: "acosh",
    mathd.AsinOp: "asin",
    mathd.AsinhOp: "asinh",
    mathd.AtanOp: "atan",
    mathd.AtanhOp: "atanh",
    mathd.CbrtOp: "cbrt",
    mathd.CeilOp: "ceil",
    mathd.CosOp: "cos",
    mathd.CoshOp: "cosh",
    mathd.ErfOp: "erf",
    mathd.ExpOp: "exp",
    mathd.Exp2Op: "exp2",
    mathd.ExpM1Op: "expm1",
    mathd.FloorOp: "floor",
    mathd.LogOp: "log",
    mathd.Log10Op: "log10",
    mathd.Log1pOp: "log1p",
    mathd.Log2Op: "log2",
    mathd.RoundOp: "round",  # halves away from zero, like C's round
    mathd.RoundEvenOp: "rint",  # halves to even (the default rounding mode)
    mathd.RsqrtOp: "rsqrt",
    mathd.SinOp: "sin",
    mathd.SinhOp: "sinh",
    mathd.SqrtOp: "sqrt",
    mathd.TanOp: "tan",
    mathd.TanhOp: "tanh",
    mathd.TruncOp: "trunc",
}
_BINARY_MATH: dict[type[Operation], str] = {
    mathd.Atan2Op: "atan2",
    mathd.CopySignOp: "copysign",
    mathd.PowFOp: "pow",
}
_LIBM_FLOAT: dict[type[Operation], str] = {  # CUDA's double function; + `f` for float
    libm.ErfcOp: "erfc",
    libm.ErfinvOp: "erfinv",
    libm.ErfcinvOp: "erfcinv",
    libm.LgammaOp: "lgamma",
    libm.FmodOp: "fmod",
    libm.NextafterOp: "nextafter",
}
_INT_MATH: dict[type[Operation], tuple[str, str]] = {  # (i32 function, i64 function)
    mathd.AbsIOp: ("abs", "llabs"),
    mathd.CountLeadingZerosOp: ("__clz", "__clzll"),
    mathd.CtPopOp: ("__popc", "__popcll"),
}

# Every identifier the printed kernel bodies refer to: a value must not shadow one.
_REFERENCED_TEXT = """
threadIdx blockIdx blockDim gridDim warpSize Tensor Vec fuser fmaxf fminf fmax fmin fmaf fma powf
pow abs llabs NULL INFINITY NAN assert printf max min
"""
_REFERENCED = frozenset(
    _REFERENCED_TEXT.split()
    + [f for f in _UNARY_MATH.values()]
    + [f + "f" for f in _UNARY_MATH.values()]
    + [f for f in _BINARY_MATH.values()]
    + [f + "f" for f in _BINARY_MATH.values()]
    + [f for f in _LIBM_FLOAT.values()]
    + [f + "f" for f in _LIBM_FLOAT.values()]
)


def identifier(hint: str) -> str | None:
    """A C++ identifier made of an SSA name hint, or None when nothing usable is left.

    Characters other than letters, digits and `_` become `_`; runs of `_` and leading `_` go (C++
    reserves `__` and `_X`); names of keywords, of what the kernel refers to, and macro-like
    `CUDA...` names get a trailing `_`.
    """
    name = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", hint)).lstrip("_")
    if not name:
        return None
    if name[0].isdigit():
        name = "v" + name
    if name in _CPP_KEYWORDS or name in _REFERENCED or name.startswith("CUDA"):
        name += "_"
    return name


# --------------------------------------------------------------------------------------------
# Operator tables
# --------------------------------------------------------------------------------------------

_FLOAT_BINARY: dict[type[Operation], str] = {
    arith.AddfOp: "{a} + {b}",
    arith.SubfOp: "{a} - {b}",
    arith.MulfOp: "{a} * {b}",
    arith.DivfOp: "{a} / {b}",
    arith.MaximumfOp: "fuser::maximum({a}, {b})",  # NaN-propagating
    arith.MinimumfOp: "fuser::minimum({a}, {b})",
    arith.MaxnumfOp: "fmax{f}({a}, {b})",  # NaN-ignoring, like IEEE maxNum
    arith.MinnumfOp: "fmin{f}({a}, {b})",
}

_INT_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "{a} + {b}",
    arith.SubiOp: "{a} - {b}",
    arith.MuliOp: "{a} * {b}",
    arith.DivSIOp: "{a} / {b}",
    arith.RemSIOp: "{a} % {b}",
    arith.DivUIOp: "({t})(({u}){a} / ({u}){b})",
    arith.RemUIOp: "({t})(({u}){a} % ({u}){b})",
    arith.FloorDivSIOp: "{a} / {b} - ({a} % {b} != 0 && ({a} < 0) != ({b} < 0))",
    arith.CeilDivSIOp: "{a} / {b} + ({a} % {b} != 0 && ({a} < 0) == ({b} < 0))",
    arith.CeilDivUIOp: "({t})(({u}){a} / ({u}){b} + (({u}){a} % ({u}){b} != 0))",
    arith.MaxSIOp: "{a} > {b} ? {a} : {b}",
    arith.MinSIOp: "{a} < {b} ? {a} : {b}",
    arith.MaxUIOp: "({u}){a} > ({u}){b} ? {a} : {b}",
    arith.MinUIOp: "({u}){a} < ({u}){b} ? {a} : {b}",
    arith.AndIOp: "{a} & {b}",
    arith.OrIOp: "{a} | {b}",
    arith.XOrIOp: "{a} ^ {b}",
    arith.ShLIOp: "({t})(({u}){a} << {b})",
    arith.ShRSIOp: "{a} >> {b}",
    arith.ShRUIOp: "({t})(({u}){a} >> {b})",
}

# i1 is `bool`: +, -, * wrap modulo 2; the bitwise operators work as they are.
_BOOL_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "{a} != {b}",
    arith.SubiOp: "{a} != {b}",
    arith.MuliOp: "{a} && {b}",
    arith.AndIOp: "{a} && {b}",
    arith.OrIOp: "{a} || {b}",
    arith.XOrIOp: "{a} != {b}",
}

# arith.cmpf predicates by number. C's < <= > >= == are ordered (false on NaN) and != is
# unordered (true on NaN); the other unordered predicates negate an ordered comparison.
_CMPF = (
    "false",
    "{a} == {b}",
    "{a} > {b}",
    "{a} >= {b}",
    "{a} < {b}",
    "{a} <= {b}",
    "{a} < {b} || {a} > {b}",
    "{a} == {a} && {b} == {b}",
    "!({a} < {b} || {a} > {b})",
    "!({a} <= {b})",
    "!({a} < {b})",
    "!({a} >= {b})",
    "!({a} > {b})",
    "{a} != {b}",
    "{a} != {a} || {b} != {b}",
    "true",
)

# arith.cmpi predicates by number: eq ne slt sle sgt sge ult ule ugt uge.
_CMPI = (
    "{a} == {b}",
    "{a} != {b}",
    "{a} < {b}",
    "{a} <= {b}",
    "{a} > {b}",
    "{a} >= {b}",
    "({u}){a} < ({u}){b}",
    "({u}){a} <= ({u}){b}",
    "({u}){a} > ({u}){b}",
    "({u}){a} >= ({u}){b}",
)

_REDUCE_FUNCTORS = {
    kernel.ReduceKind.SUM: "fuser::Sum()",
    kernel.ReduceKind.MAX: "fuser::Max()",
    kernel.ReduceKind.MIN: "fuser::Min()",
    kernel.ReduceKind.PROD: "fuser::Prod()",
}

# Conversions from an integer type to f16/bf16, signed and unsigned.
_INT_TO_HALF = {
    (I32, F16, True): "__int2half_rn",
    (I64, F16, True): "__ll2half_rn",
    (I32, F16, False): "__uint2half_rn",
    (I64, F16, False): "__ull2half_rn",
    (I32, BF16, True): "__int2bfloat16_rn",
    (I64, BF16, True): "__ll2bfloat16_rn",
    (I32, BF16, False): "__uint2bfloat16_rn",
    (I64, BF16, False): "__ull2bfloat16_rn",
}
_HALF_TO_INT = {  # truncating, like C's float-to-integer conversion
    (F16, I32, True): "__half2int_rz",
    (F16, I64, True): "__half2ll_rz",
    (F16, I32, False): "__half2uint_rz",
    (F16, I64, False): "__half2ull_rz",
    (BF16, I32, True): "__bfloat162int_rz",
    (BF16, I64, True): "__bfloat162ll_rz",
    (BF16, I32, False): "__bfloat162uint_rz",
    (BF16, I64, False): "__bfloat162ull_rz",
}


def _zero(t: Attribute) -> str:
    """The value of type `t` with all bits clear (+0.0, 0, false), as a C++ expression that
    needs no conversion."""
    if t == F16:
        return "__ushort_as_half((unsigned short)0)"
    if t == BF16:
        return "__ushort_as_bfloat16((unsigned short)0)"
    if t == I1:
        return "false"
    return f"({c_type(t)})0"


def _approximate(op: Operation) -> bool:
    """Whether a float op carries the `afn` (approximate functions) fast-math flag."""
    flags = op.properties.get("fastmath")
    return isinstance(flags, arith.FastMathFlagsAttr) and FastMathFlag.APPROX_FUNC in flags.data


def _constant_value(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


# --------------------------------------------------------------------------------------------
# The printer
# --------------------------------------------------------------------------------------------


@dataclass(eq=False, repr=False)
class CudaPrinter(BasePrinter):
    """Prints `kernel.func` ops as CUDA C++, one statement per op.

    `_exprs` maps each SSA value already printed to its C++ expression: a variable name, or the
    literal of a constant. Names are unique within a kernel (so nested scopes never shadow).
    """

    _exprs: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str], init=False)
    _used: set[str] = field(default_factory=set[str], init=False)
    _counters: dict[str, int] = field(default_factory=dict[str, int], init=False)
    _max_threads: int = field(default=kernel.MAX_THREADS_PER_BLOCK, init=False)
    _kernel: str = field(default="", init=False)
    _block_reductions: int = field(default=0, init=False)
    _dynamic: list[kernel.ArrayType] = field(default_factory=list[kernel.ArrayType], init=False)
    """The kernel's `dynamic` arrays printed so far, in order (their offsets follow)."""

    # ---- names and expressions --------------------------------------------------------------

    def _unique(self, base: str) -> str:
        name, k = base, 0
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def _fresh(self, prefix: str) -> str:
        if prefix[-1].isdigit():  # exp2 -> exp2_0, not exp20
            prefix += "_"
        while True:  # exp2, log2, log10 are functions a kernel may call: skipped
            k = self._counters.get(prefix, 0)
            self._counters[prefix] = k + 1
            name = f"{prefix}{k}"
            if name not in self._used and identifier(name) == name:
                return self._unique(name)

    def _name(self, value: SSAValue, *hints: str | None, prefix: str = "v") -> str:
        """Names `value` after the first usable hint (its own name hint first), else a fresh
        `<prefix><n>`."""
        for hint in (value.name_hint, *hints):
            base = identifier(hint) if hint is not None else None
            if base is not None:
                name = self._unique(base)
                break
        else:
            name = self._fresh(prefix)
        self._exprs[value] = name
        return name

    def expr(self, value: SSAValue) -> str:
        """The C++ expression of an already printed value."""
        return self._exprs[value]

    def _line(self, text: str) -> None:
        self.print_string("\n" + text)

    def _define(self, value: SSAValue, expr: str, prefix: str) -> None:
        """`T name = expr;` for the result of an op."""
        name = self._name(value, prefix=prefix)
        self._line(f"{c_type(value.type)} {name} = {expr};")

    def _define_result(self, op: Operation, expr: str) -> None:
        self._define(op.results[0], expr, prefix=op.name.split(".")[-1])

    def _check_yield(self, op: scf.YieldOp, results: int) -> None:
        """xDSL 0.74's scf verifiers let a branch of an `scf.if` with results end in an empty
        yield (the implicit terminator): its result would be left unassigned."""
        if len(op.operands) != results:
            parent = op.parent_op()
            raise self._error(
                op,
                f"it yields {len(op.operands)} values for the {results} results of its "
                f"'{parent.name if parent else '?'}'",
            )

    def _error(self, op: Operation, why: str) -> CudaEmissionError:
        where = f" in kernel.func @{self._kernel}" if self._kernel else ""
        return CudaEmissionError(f"cannot emit '{op.name}'{where} as CUDA: {why}")

    def _scalar(self, op: Operation, t: Attribute, allowed: Sequence[Attribute]) -> Attribute:
        if t not in allowed:
            raise self._error(op, f"type {t} is not supported here")
        return t

    # ---- kernels ----------------------------------------------------------------------------

    def print_kernel(self, func: kernel.FuncOp) -> None:
        """Prints one kernel (the names of an earlier kernel are forgotten)."""
        self._exprs.clear()
        self._used.clear()
        self._counters.clear()
        self._block_reductions = 0
        self._dynamic.clear()
        name = self._kernel = func.sym_name.data
        if identifier(name) != name:
            raise self._error(func, f"@{name} is not a valid C++ name for a kernel")
        params: list[str] = []
        for i, arg in enumerate(func.args):
            if isinstance(arg.type, VectorType):
                raise self._error(func, f"parameter #{i} has type {arg.type}")
            try:
                params.append(f"{c_type(arg.type)} {self._name(arg, f'arg{i}')}")
            except UnsupportedTypeError as e:
                raise self._error(func, f"parameter #{i}: {e}") from None
        bounds = ""
        if func.max_threads is not None:
            self._max_threads = func.max_threads.value.data
            bounds = f"__launch_bounds__({self._max_threads}) "
        else:
            self._max_threads = kernel.MAX_THREADS_PER_BLOCK
        self.print_string(f'extern "C" __global__ void {bounds}{name}({", ".join(params)}) {{')
        with self.indented():
            self._print_block(func.body.block)
        self.print_string("\n}\n")

    def _print_block(self, block: Block) -> None:
        for op in block.ops:
            try:
                self.print_op(op)
            except UnsupportedTypeError as e:
                raise self._error(op, str(e)) from None

    @singledispatchmethod
    def print_op(self, op: Operation) -> None:
        raise self._error(op, "the emitter does not support this operation")

    @print_op.register
    def _(self, op: kernel.ReturnOp) -> None:
        pass  # the end of the function body

    @print_op.register
    def _(self, op: kernel.CommentOp) -> None:
        self._line(f"// {op.text.data}")

    # ---- thread geometry and tensor parameters ----------------------------------------------

    @print_op.register
    def _(self, op: kernel.ThreadIdOp | kernel.BlockIdOp | kernel.BlockDimOp | kernel.GridDimOp):
        builtin = {
            kernel.ThreadIdOp: "threadIdx",
            kernel.BlockIdOp: "blockIdx",
            kernel.BlockDimOp: "blockDim",
            kernel.GridDimOp: "gridDim",
        }[type(op)]
        t = c_type(op.result.type)
        self._define_result(op, f"({t}){builtin}.{op.dimension.data.value}")

    @print_op.register
    def _(self, op: kernel.TransposedOp):
        self._define_result(op, f"fuser::transposed({self.expr(op.tensor)})")

    @print_op.register
    def _(self, op: kernel.SizeOp | kernel.StrideOp):
        member = "size" if isinstance(op, kernel.SizeOp) else "stride"
        self._define_result(op, f"{self.expr(op.tensor)}.{member}[{op.axis.value.data}]")

    @staticmethod
    def _vector_ref(t: Attribute, address: str, const: bool) -> str:
        """`*reinterpret_cast<const Vec<T, N>*>(&address)` for a vector type."""
        return f"*reinterpret_cast<{'const ' if const else ''}{c_type(t)}*>(&{address})"

    def _access(self, container: str, index: SSAValue, t: Attribute, const: bool) -> str:
        address = f"{container}[{self.expr(index)}]"
        return self._vector_ref(t, address, const) if isinstance(t, VectorType) else address

    @print_op.register
    def _(self, op: kernel.LoadOp):
        t = op.result.type
        self._define_result(op, self._access(f"{self.expr(op.tensor)}.data", op.offset, t, True))

    @print_op.register
    def _(self, op: kernel.SelectLoadOp):
        t = op.result.type
        a = f"&{self.expr(op.tensor_true)}.data[{self.expr(op.offset_true)}]"
        b = f"&{self.expr(op.tensor_false)}.data[{self.expr(op.offset_false)}]"
        address = f"{self.expr(op.condition)} ? {a} : {b}"
        if isinstance(t, VectorType):
            self._define_result(op, f"*reinterpret_cast<const {c_type(t)}*>({address})")
        else:
            self._define_result(op, f"*({address})")

    @print_op.register
    def _(self, op: kernel.StoreOp):
        target = self._access(f"{self.expr(op.tensor)}.data", op.offset, op.value.type, False)
        self._line(f"{target} = {self.expr(op.value)};")

    # ---- arrays and cooperation -------------------------------------------------------------

    @print_op.register
    def _(self, op: kernel.AllocOp):
        t = op.result.type
        assert isinstance(t, kernel.ArrayType)
        space = t.memory_space.data
        name = self._name(
            op.result, prefix="local" if space == kernel.MemorySpace.LOCAL else "shared"
        )
        element = c_type(t.element_type)
        if space == kernel.MemorySpace.DYNAMIC:
            if not self._dynamic:
                align = f"__align__({kernel.SHARED_ALIGNMENT})"
                self._line(f"extern __shared__ {align} unsigned char {_DYNAMIC_SHARED}[];")
            offset = kernel.dynamic_shared_bytes([*self._dynamic, t]) - t.size_in_bytes
            self._dynamic.append(t)
            self._line(
                f"{element}* {name} = reinterpret_cast<{element}*>({_DYNAMIC_SHARED} + {offset});"
            )
            return
        prefix = "__shared__ " if space == kernel.MemorySpace.SHARED else ""
        self._line(f"{prefix}alignas(16) {element} {name}[{t.size.data}];")
        if op.zeroed is not None:
            # a store of all-zero bits per element, in a loop that unrolls: the elements stay
            # separate registers, and no conversion (an f16/bf16 literal's is inline asm)
            i = self._unique("z")
            self._line("#pragma unroll")
            self._line(f"for (int {i} = 0; {i} < {t.size.data}; ++{i}) {{")
            with self.indented():
                self._line(f"{name}[{i}] = {_zero(t.element_type)};")
            self._line("}")

    @print_op.register
    def _(self, op: kernel.ArrayLoadOp):
        self._define_result(op, self._access(self.expr(op.array), op.index, op.result.type, True))

    @print_op.register
    def _(self, op: kernel.ArrayStoreOp):
        target = self._access(self.expr(op.array), op.index, op.value.type, False)
        self._line(f"{target} = {self.expr(op.value)};")

    @print_op.register
    def _(self, op: kernel.BarrierOp):
        self._line("__syncthreads();")

    @print_op.register
    def _(self, op: kernel.CopyAsyncOp):
        t = op.array.type
        assert isinstance(t, kernel.ArrayType)
        size = op.elements.value.data * kernel.byte_size(t.element_type)
        target = f"&{self.expr(op.array)}[{self.expr(op.index)}]"
        source = f"&{self.expr(op.tensor)}.data[{self.expr(op.offset)}]"
        self._line(f"fuser::copy_async<{size}>({target}, {source}, {self.expr(op.valid)});")

    @print_op.register
    def _(self, op: kernel.CopyAsyncCommitOp):
        self._line("fuser::copy_async_commit();")

    @print_op.register
    def _(self, op: kernel.CopyAsyncWaitOp):
        self._line(f"fuser::copy_async_wait<{op.pending.value.data}>();")

    def _along(self, op: Operation, along: kernel.DimensionAttr) -> str:
        """The template arguments of a block reduction: dim, block size and scratch slot."""
        return f"fuser::{along.data.value.upper()}, {self._max_threads}, {self._slot(op)}"

    def _slot(self, op: Operation) -> int:
        """The scratch slot of a block reduction: 0, 1, 0, ... in program order, -1 in a loop
        (see `block_reduce` in reduce.cuh)."""
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, kernel.FuncOp):
            if isinstance(parent, scf.ForOp):
                return -1
            parent = parent.parent_op()
        slot = self._block_reductions % 2
        self._block_reductions += 1
        return slot

    @print_op.register
    def _(self, op: kernel.WarpReduceOp):
        functor = _REDUCE_FUNCTORS[op.kind.data]
        self._define_result(op, f"fuser::warp_reduce({self.expr(op.value)}, {functor})")

    @print_op.register
    def _(self, op: kernel.BlockReduceOp):
        functor = _REDUCE_FUNCTORS[op.kind.data]
        call = f"fuser::block_reduce<{self._along(op, op.along)}>({self.expr(op.value)}, {functor})"
        self._define_result(op, call)

    @print_op.register
    def _(self, op: kernel.BlockScanOp):
        functor = _REDUCE_FUNCTORS[op.kind.data]
        slot = self._slot(op)
        call = f"fuser::block_scan<{self._max_threads}, {slot}>({self.expr(op.value)}, {functor})"
        self._bind(op.results, ("before", "total"), call)

    @print_op.register
    def _(self, op: kernel.BlockTopkOp):
        t, out = op.values.type, op.out_values.type
        assert isinstance(t, kernel.ArrayType) and isinstance(out, kernel.ArrayType)
        flags = ", ".join(
            "true" if p is not None else "false" for p in (op.descending, op.equal_zeros)
        )
        args = ", ".join(self.expr(v) for v in op.operands)
        self._line(f"fuser::block_topk<{t.size.data}, {out.size.data}, {flags}>({args});")

    def _bind(self, results: Sequence[SSAValue], prefixes: Sequence[str], call: str) -> None:
        """`auto [a, b, ...] = call;` (a structured binding of a struct's fields)."""
        names = [self._name(r, prefix=p) for r, p in zip(results, prefixes, strict=True)]
        self._line(f"auto [{', '.join(names)}] = {call};")

    @print_op.register
    def _(self, op: kernel.WarpWelfordOp | kernel.BlockWelfordOp):
        args = ", ".join(self.expr(v) for v in (op.avg, op.m2, op.count))
        if isinstance(op, kernel.BlockWelfordOp):
            call = f"fuser::block_welford<{self._along(op, op.along)}>({args})"
        else:
            call = f"fuser::warp_welford({args})"
        self._bind(op.results, ("avg", "m2", "count"), call)

    @print_op.register
    def _(self, op: kernel.GridReduceOp):
        functor = _REDUCE_FUNCTORS[op.kind.data]
        value, work, sem = (self.expr(v) for v in (op.value, op.work, op.semaphore))
        along = f"fuser::{op.along.data.value.upper()}"
        call = f"fuser::grid_reduce({value}, {functor}, {work}, {sem}, {along})"
        self._bind(op.results, ("grid_reduce", "last"), call)

    # ---- matmul tiles -----------------------------------------------------------------------

    @staticmethod
    def _matmul_tile(config: kernel.MatmulConfigAttr) -> str:
        """The C++ matmul tile a `#kernel.matmul` config names."""
        bm, bn, bk = config.tile
        loads = (f"fuser::mm::{x.data.upper()}" for x in (config.load_a, config.load_b))
        t = c_type(config.element_type)
        if config.engine.data == kernel.MatmulEngine.SIMT:
            return f"fuser::mm::Simt<{t}, {bm}, {bn}, {bk}, {', '.join(loads)}>"
        wm, wn = config.warps
        stages = config.stages.data
        if config.engine.data == kernel.MatmulEngine.WGMMA:
            return f"fuser::mm::Wgmma<{t}, {bm}, {bn}, {bk}, {stages}, {', '.join(loads)}>"
        return f"fuser::mm::Mma<{t}, {bm}, {bn}, {bk}, {wm}, {wn}, {stages}, {', '.join(loads)}>"

    @print_op.register
    def _(self, op: kernel.MatmulMainloopOp):
        args = ", ".join(self.expr(v) for v in op.operands)
        self._line(f"{self._matmul_tile(op.config)}::mainloop({args});")

    @print_op.register
    def _(self, op: kernel.MatmulFragOp):
        tile, i = self._matmul_tile(op.config), self.expr(op.index)
        t = c_type(op.row.type)
        self._line(f"{t} {self._name(op.row, prefix='frag_row')} = {tile}::frag_row({i});")
        self._line(f"{t} {self._name(op.col, prefix='frag_col')} = {tile}::frag_col({i});")

    # ---- arith ------------------------------------------------------------------------------

    @print_op.register
    def _(self, op: arith.ConstantOp):
        t = op.result.type
        value = op.value
        if isinstance(value, FloatAttr) and t in _FLOAT_TYPES:
            self._exprs[op.result] = float_literal(value.value.data, t)
        elif isinstance(value, IntegerAttr) and t in _INT_TYPES:
            self._exprs[op.result] = int_literal(value.value.data, I64 if t == IndexType() else t)
        else:
            raise self._error(op, f"constants of type {t} are not supported")

    def _float_operands(
        self, op: Operation, operands: Sequence[SSAValue]
    ) -> tuple[list[str], Attribute]:
        """The operands' expressions in their compute type: f16/bf16 are widened to float."""
        t = self._scalar(op, operands[0].type, _FLOAT_TYPES)
        exprs = [self.expr(v) for v in operands]
        if t in _HALF_TYPES:
            return [_half_to_float(e, t) for e in exprs], F32
        return exprs, t

    def _define_float(self, op: Operation, build: Callable[[list[str], str], str]) -> None:
        """Defines a float result `build(operands, suffix)` computed in float or double, where
        `suffix` is the `f` of float math functions; f16/bf16 results are rounded back."""
        exprs, compute = self._float_operands(op, op.operands)
        expr = build(exprs, "f" if compute == F32 else "")
        t = op.results[0].type
        self._define_result(op, _float_to_half(expr, t) if t in _HALF_TYPES else expr)

    @print_op.register
    def _(
        self,
        op: arith.AddfOp
        | arith.SubfOp
        | arith.MulfOp
        | arith.DivfOp
        | arith.MaximumfOp
        | arith.MinimumfOp
        | arith.MaxnumfOp
        | arith.MinnumfOp,
    ):
        pattern = _FLOAT_BINARY[type(op)]
        if isinstance(op, arith.DivfOp) and _approximate(op) and op.lhs.type != F64:
            pattern = "__fdividef({a}, {b})"  # 2 ulp; 0 for divisors beyond 2**126
        self._define_float(op, lambda x, f: pattern.format(a=x[0], b=x[1], f=f))

    @print_op.register
    def _(self, op: arith.NegfOp):
        self._define_float(op, lambda x, f: f"-{x[0]}")

    @print_op.register
    def _(
        self,
        op: arith.AddiOp
        | arith.SubiOp
        | arith.MuliOp
        | arith.DivSIOp
        | arith.RemSIOp
        | arith.DivUIOp
        | arith.RemUIOp
        | arith.FloorDivSIOp
        | arith.CeilDivSIOp
        | arith.CeilDivUIOp
        | arith.MaxSIOp
        | arith.MinSIOp
        | arith.MaxUIOp
        | arith.MinUIOp
        | arith.AndIOp
        | arith.OrIOp
        | arith.XOrIOp
        | arith.ShLIOp
        | arith.ShRSIOp
        | arith.ShRUIOp,
    ):
        t = self._scalar(op, op.result.type, _INT_TYPES)
        a, b = self.expr(op.lhs), self.expr(op.rhs)
        if t == I1:
            if type(op) not in _BOOL_BINARY:
                raise self._error(op, "i1 operands are not supported")
            self._define_result(op, _BOOL_BINARY[type(op)].format(a=a, b=b))
            return
        pattern = _INT_BINARY[type(op)]
        self._define_result(op, pattern.format(a=a, b=b, t=c_type(t), u=_UNSIGNED[t]))

    @print_op.register
    def _(self, op: arith.CmpfOp):
        (a, b), _ = self._float_operands(op, (op.lhs, op.rhs))
        self._define_result(op, _CMPF[op.predicate.value.data].format(a=a, b=b))

    @print_op.register
    def _(self, op: arith.CmpiOp):
        t = self._scalar(op, op.lhs.type, _INT_TYPES)
        predicate = op.predicate.value.data
        a, b = self.expr(op.lhs), self.expr(op.rhs)
        if t == I1 and 2 <= predicate <= 5:  # signed, true is -1: the order of bool reversed
            a, b = b, a
        u = _UNSIGNED.get(t, "unsigned")
        self._define_result(op, _CMPI[predicate].format(a=a, b=b, u=u))

    @print_op.register
    def _(self, op: arith.SelectOp):
        self._scalar(op, op.result.type, tuple(_SCALAR_TYPES))
        cond, a, b = (self.expr(v) for v in (op.cond, op.lhs, op.rhs))
        self._define_result(op, f"{cond} ? {a} : {b}")

    def _float_to_float(self, op: Operation, expr: str, src: Attribute, dst: Attribute) -> str:
        self._scalar(op, src, _FLOAT_TYPES)
        self._scalar(op, dst, _FLOAT_TYPES)
        if src == dst:
            return expr
        if src in _HALF_TYPES:  # exact in float
            expr, src = _half_to_float(expr, src), F32
            if dst == F32:
                return expr
        if dst in _HALF_TYPES:  # one rounding, straight from the source type
            if src == F64:
                return f"__double2half({expr})" if dst == F16 else f"__double2bfloat16({expr})"
            return _float_to_half(expr, dst)
        return f"({c_type(dst)}){expr}"

    @print_op.register
    def _(self, op: arith.ExtFOp | arith.TruncFOp):
        expr = self._float_to_float(op, self.expr(op.input), op.input.type, op.result.type)
        self._define_result(op, expr)

    @print_op.register
    def _(self, op: arith.SIToFPOp | arith.UIToFPOp):
        src, dst = op.input.type, op.result.type
        self._scalar(op, src, (I32, I64, I1))
        self._scalar(op, dst, _FLOAT_TYPES)
        signed = isinstance(op, arith.SIToFPOp)
        x = self.expr(op.input)
        if src == I1:  # signed i1 true is -1
            one = float_literal(-1.0 if signed else 1.0, dst)
            expr = f"{x} ? {one} : {float_literal(0.0, dst)}"
        elif dst in _HALF_TYPES:
            expr = f"{_INT_TO_HALF[src, dst, signed]}({x})"
        else:
            expr = f"({c_type(dst)}){x}" if signed else f"({c_type(dst)})({_UNSIGNED[src]}){x}"
        self._define_result(op, expr)

    @print_op.register
    def _(self, op: arith.FPToSIOp | arith.FPToUIOp):
        src, dst = op.input.type, op.result.type
        self._scalar(op, src, _FLOAT_TYPES)
        self._scalar(op, dst, (I32, I64))
        signed = isinstance(op, arith.FPToSIOp)
        x = self.expr(op.input)
        if src in _HALF_TYPES:
            expr = f"{_HALF_TO_INT[src, dst, signed]}({x})"
            expr = expr if signed else f"({c_type(dst)}){expr}"
        else:
            expr = f"({c_type(dst)}){x}" if signed else f"({c_type(dst)})({_UNSIGNED[dst]}){x}"
        # a plain C cast, as torch's CUDA kernels convert: NaN gives 0 from f32 to i32 and the
        # most negative integer otherwise (runtime/reference.py's `_float_to_int` says so too)
        self._define_result(op, expr)

    @print_op.register
    def _(self, op: arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp | arith.IndexCastOp):
        src = self._scalar(op, op.input.type, _INT_TYPES)
        dst = self._scalar(op, op.result.type, _INT_TYPES)
        x, t = self.expr(op.input), c_type(dst)
        if src == I1:  # sign-extending true gives -1
            minus_one = int_literal(-1, I64 if dst == IndexType() else dst)
            expr = f"{x} ? {minus_one} : 0" if isinstance(op, arith.ExtSIOp) else f"({t}){x}"
        elif dst == I1:
            expr = f"({x} & 1) != 0"
        elif isinstance(op, arith.ExtUIOp):
            expr = f"({t})({_UNSIGNED[src]}){x}"
        else:
            expr = f"({t}){x}"
        self._define_result(op, expr)

    # ---- math -------------------------------------------------------------------------------

    @print_op.register
    def _(
        self,
        op: mathd.AbsFOp
        | mathd.AcosOp
        | mathd.AcoshOp
        | mathd.AsinOp
        | mathd.AsinhOp
        | mathd.AtanOp
        | mathd.AtanhOp
        | mathd.CbrtOp
        | mathd.CeilOp
        | mathd.CosOp
        | mathd.CoshOp
        | mathd.ErfOp
        | mathd.ExpOp
        | mathd.Exp2Op
        | mathd.ExpM1Op
        | mathd.FloorOp
        | mathd.LogOp
        | mathd.Log10Op
        | mathd.Log1pOp
        | mathd.Log2Op
        | mathd.RoundOp
        | mathd.RoundEvenOp
        | mathd.RsqrtOp
        | mathd.SinOp
        | mathd.SinhOp
        | mathd.SqrtOp
        | mathd.TanOp
        | mathd.TanhOp
        | mathd.TruncOp
        | mathd.Atan2Op
        | mathd.CopySignOp
        | mathd.PowFOp
        | mathd.FmaOp,
    ):
        if isinstance(op, mathd.PowFOp):  # exact integer powers, see math.cuh
            self._define_float(op, lambda x, f: f"fuser::pow({', '.join(x)})")
            return
        function = _UNARY_MATH.get(type(op)) or _BINARY_MATH.get(type(op)) or "fma"
        self._define_float(op, lambda x, f: f"{function}{f}({', '.join(x)})")

    @print_op.register
    def _(self, op: mathd.FPowIOp):
        (x,), compute = self._float_operands(op, (op.lhs,))
        n = self.expr(op.rhs)
        f = "f" if compute == F32 else ""
        expr = f"pow{f}({x}, ({c_type(compute)}){n})"
        t = op.result.type
        self._define_result(op, _float_to_half(expr, t) if t in _HALF_TYPES else expr)

    @print_op.register
    def _(self, op: mathd.AbsIOp | mathd.CountLeadingZerosOp | mathd.CtPopOp):
        t = self._scalar(op, op.result.type, (I32, I64))
        function = _INT_MATH[type(op)][0 if t == I32 else 1]
        self._define_result(op, f"({c_type(t)}){function}({self.expr(op.operand)})")

    @print_op.register
    def _(
        self,
        op: libm.ErfcOp
        | libm.ErfinvOp
        | libm.ErfcinvOp
        | libm.LgammaOp
        | libm.FmodOp
        | libm.NextafterOp,
    ):
        function = _LIBM_FLOAT[type(op)]
        self._define_float(op, lambda x, f: f"{function}{f}({', '.join(x)})")

    @print_op.register
    def _(self, op: kernel.RandomOp):
        t = self._scalar(op, op.result.type, (F32, F64))
        normal = op.distribution.data == kernel.Distribution.NORMAL
        function = f"fuser::rand{'n' if normal else ''}_f{32 if t == F32 else 64}"
        operands = (op.seed, op.offset, op.subsequence, op.component)
        self._define_result(op, f"{function}({', '.join(self.expr(v) for v in operands)})")

    @print_op.register
    def _(self, op: libm.GcdOp):
        self._scalar(op, op.result.type, (I32, I64))
        self._define_result(op, f"fuser::gcd({self.expr(op.lhs)}, {self.expr(op.rhs)})")

    # ---- scf --------------------------------------------------------------------------------

    @print_op.register
    def _(self, op: scf.ForOp):
        block = op.body.block
        iv, carried = block.args[0], block.args[1:]
        # loop-carried values: one variable each, declared before the loop with the initial
        # value, read by the body (its block argument) and assigned by scf.yield
        for result, arg, init in zip(op.res, carried, op.iter_args, strict=True):
            self._scalar(op, result.type, tuple(_SCALAR_TYPES))
            name = self._name(result, arg.name_hint, prefix="acc")
            self._exprs[arg] = name
            self._line(f"{c_type(result.type)} {name} = {self.expr(init)};")
        bounds = (op.lb, op.ub, op.step)
        if isinstance(op.attributes.get("unroll"), UnitAttr) and all(
            _constant_value(v) is not None for v in bounds
        ):
            self._line("#pragma unroll")
        t = self._scalar(op, iv.type, _INT_TYPES)
        i = self._name(iv, "i")
        lb, ub, step = (self.expr(v) for v in bounds)
        increment = f"++{i}" if _constant_value(op.step) == 1 else f"{i} += {step}"
        self._line(f"for ({c_type(t)} {i} = {lb}; {i} < {ub}; {increment}) {{")
        with self.indented():
            self._print_block(block)
        self._line("}")

    @print_op.register
    def _(self, op: scf.IfOp):
        if op.output and not op.false_region.blocks:
            raise self._error(op, f"it has {len(op.output)} results and no else branch")
        for region in (op.true_region, op.false_region):
            for block in region.blocks:
                if isinstance(block.last_op, scf.YieldOp):
                    self._check_yield(block.last_op, len(op.output))
        for result in op.output:  # declared here, assigned by each branch's scf.yield
            self._scalar(op, result.type, tuple(_SCALAR_TYPES))
            self._line(f"{c_type(result.type)} {self._name(result, prefix='r')};")
        self._line(f"if ({self.expr(op.cond)}) {{")
        with self.indented():
            self._print_block(op.true_region.block)
        else_block = op.false_region.blocks.first
        if else_block is not None and not (
            isinstance(else_block.first_op, scf.YieldOp) and not else_block.first_op.operands
        ):
            self._line("} else {")
            with self.indented():
                self._print_block(else_block)
        self._line("}")

    @print_op.register
    def _(self, op: scf.YieldOp):
        parent = op.parent_op()
        if isinstance(parent, scf.ForOp):
            targets = [self.expr(r) for r in parent.res]
        elif isinstance(parent, scf.IfOp):
            targets = [self.expr(r) for r in parent.output]
        else:
            raise self._error(op, f"it ends a '{parent.name if parent else '?'}'")
        self._check_yield(op, len(targets))
        pairs = [
            (target, self.expr(v), v.type)
            for target, v in zip(targets, op.operands, strict=True)
            if self.expr(v) != target
        ]
        # a parallel assignment: a source that an earlier assignment overwrites (a swap of two
        # loop-carried values) is copied first
        copies: dict[str, str] = {}
        for k, (_, source, t) in enumerate(pairs):
            if source not in copies and any(target == source for target, _, _ in pairs[:k]):
                copies[source] = self._unique(f"{source}_old")
                self._line(f"{c_type(t)} {copies[source]} = {source};")
        for target, source, _ in pairs:
            self._line(f"{target} = {copies.get(source, source)};")


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


_DYNAMIC_SHARED = "fuser_dynamic_shared"
"""The kernel's dynamic shared memory, which its `dynamic` arrays point into."""


def _kernels(root: Operation) -> list[kernel.FuncOp]:
    return [op for op in root.walk() if isinstance(op, kernel.FuncOp)]


def emit_cuda(module_or_func: ModuleOp | kernel.FuncOp, *, preamble: bool = True) -> str:
    """CUDA C++ source of every `kernel.func` in `module_or_func` (or of that one kernel), after
    the `#include`s of the support headers the kernels use (`fuser.codegen.preamble.includes`)
    unless `preamble=False`. Raises CudaEmissionError naming an unsupported op."""
    out = StringIO()
    printer = CudaPrinter(out)
    for i, func in enumerate(_kernels(module_or_func)):
        if i:
            printer.print_string("\n", indent=0)
        printer.print_kernel(func)
    body = out.getvalue()
    return "\n".join(includes(body)) + "\n\n" + body if preamble else body


@dataclass(frozen=True)
class CudaTarget(Target):
    """`fuser-opt -t cuda`: prints every `kernel.func` of the module as CUDA C++ (other ops are
    skipped). `-t 'cuda{preamble=false}'` leaves out the `#include`s of the support headers."""

    name = "cuda"

    preamble: bool = True

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if not any(isinstance(op, kernel.FuncOp) for op in module.walk()):
            raise CudaEmissionError(
                "-t cuda prints kernel.func ops and the module has none: schedule its fusions "
                "first (-p fuser-schedule or -p fuser-lower-host)"
            )
        output.write(emit_cuda(module, preamble=self.preamble))  # nothing printed on an error
