"""The CUDA emitter: what it prints, that NVRTC compiles it, and (on a GPU) what it computes.

Without a GPU: every kernel of the CUDA target's and the kernel dialect's lit files, a kernel
built in Python for each element type, and each helper header alone compile with NVRTC; the
exact literals, names, float and integer comparison predicates are checked by evaluating what
the emitter prints. Tests marked `gpu` run emitted kernels (block reductions over odd block
shapes, Welford combines, grid reductions, NaN handling) and compare them with numpy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, VectorType
from xdsl.ir import Attribute, SSAValue
from xdsl.parser import Parser
from xdsl.utils.arg_spec import parse_spec

from fuser.codegen import get_all_targets
from fuser.codegen.cuda import (
    CudaEmissionError,
    CudaTarget,
    emit_cuda,
    float_literal,
    identifier,
    int_literal,
)
from fuser.codegen.preamble import HEADERS, INCLUDE_DIR
from fuser.dialects import get_all_dialects, kernel
from fuser.dialects.fusion import BF16, F16, F32, F64, I1, I32, I64
from fuser.runtime import driver
from fuser.runtime.compiled_kernel import nvrtc_compile

ROOT = Path(__file__).resolve().parent.parent
LIT_DIRS = (ROOT / "lit_tests/targets/cuda", ROOT / "lit_tests/dialects/kernel")
LIT_FILES = sorted(path for folder in LIT_DIRS for path in folder.glob("*.mlir"))
ARCHS = ("sm_80", "sm_90")


def _context() -> Context:
    ctx = Context()
    for name, factory in (xdsl_dialects() | get_all_dialects()).items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(_context(), text).parse_module()
    module.verify()
    return module


def _expects_failure(path: Path) -> bool:
    """Whether a lit file holds IR that must not verify or emit (its RUN lines say so)."""
    runs = [line for line in path.read_text().splitlines() if "RUN:" in line]
    return any("not fuser-opt" in r or "diagnostics" in r for r in runs)


def _lit_kernels() -> list[tuple[str, str]]:
    """(file name, kernel name) of every kernel.func in the lit files that should emit."""
    found = []
    for path in LIT_FILES:
        if _expects_failure(path):
            continue
        for chunk in path.read_text().split("// -----"):
            for op in parse(chunk).walk():
                if isinstance(op, kernel.FuncOp):
                    found.append((path.name, op.sym_name.data))
    return found


def _lit_kernel(file_name: str, name: str) -> kernel.FuncOp:
    path = next(p for p in LIT_FILES if p.name == file_name)
    for chunk in path.read_text().split("// -----"):
        for op in parse(chunk).walk():
            if isinstance(op, kernel.FuncOp) and op.sym_name.data == name:
                return op
    raise KeyError(name)


def compile_source(source: str, name: str, arch: str = "sm_80") -> bytes:
    """NVRTC's cubin of `source`, which must compile without a warning."""
    cubin, log = nvrtc_compile(source, name, arch)
    assert cubin[:4] == b"\x7fELF"
    assert "warning" not in log, log
    return cubin


# ---- NVRTC: every lit kernel, every element type, every header ------------------------------


LIT_KERNELS = _lit_kernels()


def test_the_lit_files_hold_the_kernels_this_file_compiles() -> None:
    failing = {p.name for p in LIT_FILES if _expects_failure(p)}
    assert {"errors.mlir", "invalid.mlir"} <= failing
    names = {name for _, name in LIT_KERNELS}
    assert {"silu_add", "softmax", "layer_norm", "fib", "clamp_sum", "row_sum"} <= names
    assert {"all_reductions", "row_welford", "relu_vec4", "exp_scale"} <= names


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("file_name", "name"), LIT_KERNELS, ids=[k for _, k in LIT_KERNELS])
def test_lit_kernel_compiles(file_name: str, name: str, arch: str) -> None:
    source = emit_cuda(_lit_kernel(file_name, name))
    cubin = compile_source(source, name, arch)
    assert name.encode() in cubin


def test_a_module_of_several_kernels_is_one_compilable_source() -> None:
    path = ROOT / "lit_tests/dialects/kernel/reductions.mlir"
    module = parse(path.read_text().replace("// -----", ""))
    source = emit_cuda(module)
    assert source.count('#include "fuser/core.cuh"') == 1  # one include list for all
    names = ["row_sum", "all_reductions", "row_welford"]
    kernels = re.finditer(r"__global__ void (?:__launch\S+ )?(\w+)\(", source)
    assert [m.group(1) for m in kernels] == names
    cubin = compile_source(source, "row_sum")
    assert all(n.encode() in cubin for n in names)


def test_core_header_holds_the_runtime_struct() -> None:
    """`core.cuh` is the one definition of the struct `pack_tensor_param` fills: data pointer,
    sizes, strides (test_compiled_kernel checks its offsets with NVRTC)."""
    text = (INCLUDE_DIR / "fuser" / "core.cuh").read_text()
    fields = r"struct Tensor \{\s*T\* data;\s*long long size\[N\];\s*long long stride\[N\];\s*\};"
    assert re.search(fields, text)
    assert re.search(r"struct Tensor<T, 0> \{\s*T\* data;\s*\};", text)


@pytest.mark.parametrize("header", [h.include for h in HEADERS])
def test_every_header_compiles_on_its_own(header: str) -> None:
    """Each header includes what it needs (a kernel includes only the headers it names)."""
    source = f'#include {header}\nextern "C" __global__ void nothing() {{}}\n'
    compile_source(source, "nothing", "sm_90")


def test_every_preamble_helper_instantiates_for_every_reduce_type() -> None:
    body = []
    for i, t in enumerate(("float", "double", "int", "long long")):
        body.append(f"{t} v{i} = ({t})threadIdx.x;")
        for op in ("Sum", "Max", "Min"):
            body.append(f"v{i} = fuser::warp_reduce(v{i}, fuser::{op}());")
            for slot in (0, 1, -1):
                body.append(
                    f"v{i} = fuser::block_reduce<fuser::X, 96, {slot}>(v{i}, fuser::{op}());"
                )
            body.append(f"v{i} = fuser::block_reduce<fuser::Y, 96, -1>(v{i}, fuser::{op}());")
        body.append(f"auto g{i} = fuser::grid_reduce(v{i}, fuser::Max(), w{i}, sem, fuser::Y);")
        body.append(f"w{i}.data[0] = g{i}.value;")
    for t in ("float", "double"):
        body.append(
            f"auto [a{t[0]}, m{t[0]}, n{t[0]}] = fuser::warp_welford(({t})1, ({t})0, ({t})1);"
        )
        body.append(
            f"auto b{t[0]} = fuser::block_welford<fuser::Y, 96, 0>(a{t[0]}, m{t[0]}, n{t[0]});"
        )
    params = ", ".join(
        f"Tensor<{t}, 1> w{i}" for i, t in enumerate(("float", "double", "int", "long long"))
    )
    source = (
        '#include "fuser/welford.cuh"\n'
        + f'extern "C" __global__ void helpers({params}, Tensor<int, 1> sem) {{\n  '
        + "\n  ".join(body)
        + "\n}\n"
    )
    compile_source(source, "helpers")


def typed_kernel(t: Attribute) -> kernel.FuncOp:
    """A kernel moving and computing on element type `t`: scalar and vector loads and stores,
    local and shared arrays, a widening to the compute type (f16/bf16 -> f32, i1 -> i32), math,
    a reduction, conversions to and from other types, and a narrowing back to `t`."""
    width = min(8, 16 // kernel.byte_size(t))
    tensor = kernel.TensorParamType(t, 1)
    func = kernel.FuncOp(f"typed_{t}", [tensor, tensor, t], max_threads=256)
    x, y, s = func.args
    x.name_hint, y.name_hint, s.name_hint = "x", "y", "s"
    local_type = kernel.ArrayType(width, t, kernel.MemorySpace.LOCAL)
    shared_type = kernel.ArrayType(256 * width, t, kernel.MemorySpace.SHARED)
    with ImplicitBuilder(func.body.block):
        tid = kernel.ThreadIdOp(kernel.Dimension.X, I64).result
        bid = kernel.BlockIdOp(kernel.Dimension.X, I64).result
        bdim = kernel.BlockDimOp(kernel.Dimension.X, I64).result
        i = arith.AddiOp(arith.MuliOp(bid, bdim), tid).result
        c0 = arith.ConstantOp(IntegerAttr(0, I32)).result
        off = arith.MuliOp(i, arith.ConstantOp(IntegerAttr(width, I64))).result
        vec = kernel.LoadOp(x, off, VectorType(t, [width])).result
        local = kernel.AllocOp(local_type).result
        shared = kernel.AllocOp(shared_type).result
        kernel.ArrayStoreOp(vec, local, c0)
        v = kernel.ArrayLoadOp(local, c0).result
        kernel.StoreOp(vec, y, off)
        out: SSAValue
        if t in (F16, BF16, F32, F64):
            w = arith.ExtFOp(v, F32).result if t in (F16, BF16) else v
            sw = arith.ExtFOp(s, F32).result if t in (F16, BF16) else s
            e = mathd.ExpOp(w)
            m = arith.MaximumfOp(e, sw)
            p = arith.MulfOp(m, arith.ConstantOp(FloatAttr(0.5, w.type)))
            r = arith.SelectOp(arith.CmpfOp(p, sw, "ugt"), p, sw)
            f = mathd.FmaOp(r, r, mathd.TanhOp(sw))
            red = kernel.BlockReduceOp(kernel.ReduceKind.SUM, f.result).result
            avg = kernel.WarpWelfordOp(red, red, red).result_avg
            back = arith.SIToFPOp(arith.FPToSIOp(v, I64), t)  # straight from t and back
            narrow = arith.TruncFOp(avg, t).result if t in (F16, BF16) else avg
            out = arith.AddfOp(narrow, back).result
        elif t in (I32, I64):
            a = arith.AddiOp(v, s)
            m = arith.MaxSIOp(arith.MuliOp(a, v), s)
            d = arith.DivSIOp(m, arith.ConstantOp(IntegerAttr(3, t)))
            r = arith.SelectOp(arith.CmpiOp(d, s, "ult"), d, a)
            red = kernel.WarpReduceOp(kernel.ReduceKind.MAX, r.result).result
            h = arith.FPToSIOp(arith.SIToFPOp(red, F16), t)
            bf = arith.FPToSIOp(arith.SIToFPOp(red, BF16), t)
            out = arith.AddiOp(mathd.AbsIOp(h), bf).result
        else:  # i1
            w = arith.ExtUIOp(v, I32).result
            red = kernel.BlockReduceOp(kernel.ReduceKind.MIN, w, kernel.Dimension.Y).result
            nz = arith.CmpiOp(red, c0, "ne")
            half = arith.ConstantOp(FloatAttr(0.5, F32))
            pos = arith.CmpfOp(arith.UIToFPOp(v, F32), half, "oge")
            out = arith.XOrIOp(arith.AndIOp(nz, pos), s).result
        kernel.ArrayStoreOp(out, shared, c0)
        kernel.BarrierOp()
        kernel.StoreOp(kernel.ArrayLoadOp(shared, c0).result, y, i)
        kernel.ReturnOp()
    func.verify()
    return func


ELEMENT_TYPES = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64, "i32": I32, "i64": I64, "i1": I1}
C_TYPES = {
    "f16": "__half",
    "bf16": "__nv_bfloat16",
    "f32": "float",
    "f64": "double",
    "i32": "int",
    "i64": "long long",
    "i1": "bool",
}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("type_name", list(ELEMENT_TYPES))
def test_each_element_type_compiles(type_name: str, arch: str) -> None:
    func = typed_kernel(ELEMENT_TYPES[type_name])
    source = emit_cuda(func)
    c = C_TYPES[type_name]
    width = min(8, 16 // kernel.byte_size(ELEMENT_TYPES[type_name]))
    assert f"(Tensor<{c}, 1> x, Tensor<{c}, 1> y, {c} s)" in source
    assert f"Vec<{c}, {width}> load" in source
    assert f"__shared__ alignas(16) {c} shared0[{256 * width}];" in source
    compile_source(source, func.sym_name.data, arch)


# ---- what is printed, checked without a compiler ---------------------------------------------


def _c_float(text: str) -> float:
    """The value of a literal printed by float_literal (f32 or f64, no conversions)."""
    if text.startswith("("):
        text = text[1:-1]
    specials = {
        "__int_as_float(0x7f800000)": math.inf,
        "-__int_as_float(0x7f800000)": -math.inf,
        "__longlong_as_double(0x7ff0000000000000LL)": math.inf,
        "-__longlong_as_double(0x7ff0000000000000LL)": -math.inf,
        "__int_as_float(0x7fffffff)": math.nan,
        "__longlong_as_double(0x7ff8000000000000LL)": math.nan,
    }
    if text in specials:
        return specials[text]
    assert re.fullmatch(r"-?\d+(\.\d+)?(e[+-]\d+)?f?", text), text
    return float(text.rstrip("f"))


def test_float_literals_are_exact(rng: np.random.Generator) -> None:
    bits = rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32)
    values32 = bits.view(np.float32)
    for v in values32:
        text = float_literal(float(v), F32)
        assert text.rstrip(")").endswith("f") or "__int_as_float" in text
        back = np.float32(_c_float(text))
        assert (np.isnan(v) and np.isnan(back)) or back.view(np.uint32) == v.view(np.uint32)
    values64 = rng.integers(0, 2**64, 2000, dtype=np.uint64).view(np.float64)
    for v in [*values64, 5e-324, -0.0, 1e308, math.inf, -math.inf]:
        back = np.float64(_c_float(float_literal(float(v), F64)))
        assert (np.isnan(v) and np.isnan(back)) or back.view(np.uint64) == np.float64(v).view(
            np.uint64
        )


def test_half_literals_convert_an_exact_float() -> None:
    assert float_literal(1.5, F16) == "__float2half_rn(1.5f)"
    assert float_literal(-0.0999755859375, F16) == "__float2half_rn(-0.099975586f)"
    assert np.float32(0.099975586) == np.float32(np.float16(0.1))
    assert float_literal(-2.0, BF16) == "__float2bfloat16_rn(-2.0f)"
    assert float_literal(-math.inf, BF16) == "__float2bfloat16_rn(-__int_as_float(0x7f800000))"


def test_integer_literals(rng: np.random.Generator) -> None:
    assert int_literal(-(2**31), I32) == "(-2147483647 - 1)"
    assert int_literal(2**31, I32) == "(-2147483647 - 1)"  # wrapped to 32 bits
    assert int_literal(-(2**63), I64) == "(-9223372036854775807LL - 1)"
    assert int_literal(-1, I1) == "true"
    assert int_literal(0, I1) == "false"
    for v in rng.integers(-(2**31) + 1, 2**31, 50):
        assert eval(int_literal(int(v), I32)) == v
    for v in rng.integers(-(2**63) + 1, 2**63, 50, dtype=np.int64):
        assert eval(int_literal(int(v), I64).replace("LL", "")) == v


@pytest.mark.parametrize(
    ("hint", "name"),
    [
        ("acc", "acc"),
        ("int", "int_"),
        ("exp", "exp_"),
        ("expf", "expf_"),
        ("threadIdx", "threadIdx_"),
        ("fuser", "fuser_"),
        ("CUDART_INF_F", "CUDART_INF_F_"),
        ("a.b-c$d", "a_b_c_d"),
        ("__x__y", "x_y"),
        ("_0", "v0"),
        ("_", None),
    ],
)
def test_identifiers(hint: str, name: str | None) -> None:
    assert identifier(hint) == name


def _kernel_text(body: str, params: str = "%a: f32, %b: f32") -> str:
    return f"kernel.func @k({params}) {{\n{body}\n  kernel.return\n}}\n"


def _statements(module_text: str) -> dict[str, str]:
    """name -> expression of each `T name = expr;` line the emitter prints for the kernel."""
    source = emit_cuda(parse(module_text), preamble=False)
    found = {}
    for m in re.finditer(r"^\s+[\w ]+? (\w+) = (.*);$", source, re.MULTILINE):
        found[m.group(1)] = m.group(2)
    return found


def _python(expr: str) -> str:
    """A C boolean expression of names and comparisons as Python."""
    expr = expr.replace("||", " or ").replace("&&", " and ").replace("!(", " not (")
    expr = re.sub(r"\(unsigned long long\)(\w+)", r"(\1 % 2**64)", expr)
    expr = re.sub(r"\(unsigned\)(\w+)", r"(\1 % 2**32)", expr)
    return expr.replace("true", "True").replace("false", "False")


CMPF = {
    "false": lambda a, b: False,
    "oeq": lambda a, b: a == b,
    "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b,
    "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b,
    "one": lambda a, b: not (math.isnan(a) or math.isnan(b)) and a != b,
    "ord": lambda a, b: not (math.isnan(a) or math.isnan(b)),
    "ueq": lambda a, b: math.isnan(a) or math.isnan(b) or a == b,
    "ugt": lambda a, b: math.isnan(a) or math.isnan(b) or a > b,
    "uge": lambda a, b: math.isnan(a) or math.isnan(b) or a >= b,
    "ult": lambda a, b: math.isnan(a) or math.isnan(b) or a < b,
    "ule": lambda a, b: math.isnan(a) or math.isnan(b) or a <= b,
    "une": lambda a, b: math.isnan(a) or math.isnan(b) or a != b,
    "uno": lambda a, b: math.isnan(a) or math.isnan(b),
    "true": lambda a, b: True,
}


def test_cmpf_predicates_are_nan_correct(rng: np.random.Generator) -> None:
    body = "\n".join(f"  %{p}_ = arith.cmpf {p}, %a, %b : f32" for p in CMPF)
    exprs = _statements(_kernel_text(body))
    special = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0]
    values = [*special, *rng.standard_normal(4).round(1)]
    for p, reference in CMPF.items():
        code = _python(exprs[f"{p}_"])
        for a in values:
            for b in values:
                assert eval(code, {"a": a, "b": b}) == reference(a, b), (p, a, b, code)


CMPI = {
    "eq": lambda a, b, bits: a == b,
    "ne": lambda a, b, bits: a != b,
    "slt": lambda a, b, bits: a < b,
    "sle": lambda a, b, bits: a <= b,
    "sgt": lambda a, b, bits: a > b,
    "sge": lambda a, b, bits: a >= b,
    "ult": lambda a, b, bits: a % 2**bits < b % 2**bits,
    "ule": lambda a, b, bits: a % 2**bits <= b % 2**bits,
    "ugt": lambda a, b, bits: a % 2**bits > b % 2**bits,
    "uge": lambda a, b, bits: a % 2**bits >= b % 2**bits,
}


@pytest.mark.parametrize("type_name", ["i1", "i32", "i64"])
def test_cmpi_predicates_signed_and_unsigned(type_name: str, rng: np.random.Generator) -> None:
    body = "\n".join(f"  %{p}_ = arith.cmpi {p}, %a, %b : {type_name}" for p in CMPI)
    exprs = _statements(_kernel_text(body, f"%a: {type_name}, %b: {type_name}"))
    if type_name == "i1":  # as a signed number, i1 true is -1
        pairs = [(a, b) for a in (0, -1) for b in (0, -1)]
        env = lambda a, b: {"a": bool(a), "b": bool(b)}  # noqa: E731
        bits = 1
    else:
        bits = 32 if type_name == "i32" else 64
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        values = [lo, -1, 0, 1, hi, *rng.integers(lo, hi, 3, dtype=np.int64).tolist()]
        pairs = [(a, b) for a in values for b in values]
        env = lambda a, b: {"a": a, "b": b}  # noqa: E731
    for p, reference in CMPI.items():
        code = _python(exprs[f"{p}_"])
        for a, b in pairs:
            got = eval(code, env(a, b))
            # a bool cast to unsigned is 0 or 1, which `% 2**k` leaves alone
            assert bool(got) == reference(a, b, bits), (p, a, b, code)


def test_unsupported_ops_and_types_name_the_op() -> None:
    with pytest.raises(CudaEmissionError, match=r"'arith.bitcast' in kernel.func @k as CUDA"):
        emit_cuda(parse(_kernel_text("  %i = arith.bitcast %a : f32 to i32")))
    body = """
  %i = arith.constant 0 : i32
  %v = kernel.load %t[%i] : !kernel.tensor<f32, 1>, i32 -> vector<4xf32>
  %s = arith.addf %v, %v : vector<4xf32>"""
    text = _kernel_text(body, "%t: !kernel.tensor<f32, 1>")
    with pytest.raises(CudaEmissionError, match=r"'arith.addf'.*type vector<4xf32> is not"):
        emit_cuda(parse(text))


def test_yield_copies_only_what_an_earlier_assignment_overwrites() -> None:
    # (x, y, z) <- (y, z, x): y and z are read before being assigned; x is overwritten first
    body = """
  %c0 = arith.constant 0 : i32
  %c9 = arith.constant 9 : i32
  %c1 = arith.constant 1 : i32
  %p, %q, %r = scf.for %i = %c0 to %c9 step %c1 iter_args(%x = %a, %y = %b, %z = %a)
      -> (f32, f32, f32) : i32 {
    scf.yield %y, %z, %x : f32, f32, f32
  }"""
    source = emit_cuda(parse(_kernel_text(body)), preamble=False)
    assert "    float p_old = p;\n    p = q;\n    q = r;\n    r = p_old;\n" in source


def test_target_is_registered_with_a_preamble_option() -> None:
    assert get_all_targets()["cuda"]() is CudaTarget
    module = parse(_kernel_text("  %s = arith.addf %a, %b : f32"))
    bare = CudaTarget.from_spec(parse_spec("cuda{preamble=false}"))
    assert bare == CudaTarget(preamble=False)
    out = StringIO()
    bare.emit(_context(), module, out)
    assert out.getvalue() == (
        'extern "C" __global__ void k(float a, float b) {\n  float s = a + b;\n}\n'
    )
    out = StringIO()
    CudaTarget.from_spec(parse_spec("cuda")).emit(_context(), module, out)
    assert out.getvalue() == '#include "fuser/core.cuh"\n\n' + bare_text(module)


def bare_text(module: ModuleOp) -> str:
    return emit_cuda(module, preamble=False)


def test_names_are_unique_per_kernel_and_restart_for_the_next() -> None:
    body = """
  %c = arith.cmpf olt, %a, %b : f32
  scf.if %c {
    %s = arith.addf %a, %b : f32
    %0 = arith.mulf %s, %s : f32
  }
  scf.if %c {
    %s = arith.subf %a, %b : f32
  }
  %s_1 = arith.divf %a, %b : f32
  %1 = arith.mulf %s_1, %s_1 : f32"""
    text = _kernel_text(body)
    text += text.replace("@k", "@k2")
    source = emit_cuda(parse(text), preamble=False)
    first, second = source.split("\n\n")
    assert "    float s = a + b;\n    float mulf0 = s * s;\n" in first
    assert "    float s_1 = a - b;\n" in first  # a second `%s`, in another region
    # xDSL reads `%s_1` as the hint `s`: the third `s`
    assert "  float s_2 = a / b;\n  float mulf1 = s_2 * s_2;\n" in first
    assert second.replace("void k2(", "void k(") == first + "\n"  # names start afresh


def test_fresh_names_never_shadow_a_function_the_kernel_calls() -> None:
    """The GPU fuzzer's find: the third unnamed `math.exp` was named `exp2`, and a later
    `math.exp2` then called the variable (NVRTC: "expression preceding parentheses of apparent
    call must have (pointer-to-) function type")."""
    exps = "\n".join(f"  %{i} = math.exp %a : f64" for i in range(4))
    body = f"{exps}\n  %4 = math.exp2 %b : f64\n  %5 = math.log %a : f64\n  %6 = math.log2 %5 : f64"
    source = bare_text(parse(_kernel_text(body, "%a: f64, %b: f64")))
    names = [m.group(1) for m in re.finditer(r"double (\w+) = ", source)]
    assert names == ["exp0", "exp1", "exp3", "exp4", "exp2_0", "log0", "log2_0"]
    assert "double exp2_0 = exp2(b);" in source
    compile_source(emit_cuda(parse(_kernel_text(body, "%a: f64, %b: f64"))), "k")


# ---- on a GPU --------------------------------------------------------------------------------

gpu = pytest.mark.skipif(not driver.gpu_available(), reason="no CUDA device")


def _launch(
    module_text: str, name: str, grid: Sequence[int], block: Sequence[int], args: Sequence[object]
) -> None:
    from fuser.runtime.arrays import DeviceArray
    from fuser.runtime.compiled_kernel import RtcKernel, pack_tensor_param

    packed = [
        pack_tensor_param(a.ptr, a.shape, a.element_strides) if isinstance(a, DeviceArray) else a
        for a in args
    ]
    RtcKernel(emit_cuda(parse(module_text)), name).launch(grid, block, packed)


BLOCK_REDUCE = """
kernel.func @block_reductions(%x: !kernel.tensor<i32, 1>, %sums: !kernel.tensor<i32, 1>,
    %f: !kernel.tensor<f32, 1>, %maxes: !kernel.tensor<f32, 1>, %mins: !kernel.tensor<f32, 1>)
    attributes {max_threads = 1024 : i64} {
  %tx = kernel.thread_id x : i32
  %ty = kernel.thread_id y : i32
  %tz = kernel.thread_id z : i32
  %bx = kernel.block_dim x : i32
  %by = kernel.block_dim y : i32
  %zy = arith.muli %by, %tz : i32
  %yz = arith.addi %ty, %zy : i32
  %row = arith.muli %bx, %yz : i32
  %t = arith.addi %tx, %row : i32
  %v = kernel.load %x[%t] : !kernel.tensor<i32, 1>, i32 -> i32
  %s = kernel.block_reduce sum %v along ALONG : i32
  kernel.store %s, %sums[%t] : i32, !kernel.tensor<i32, 1>, i32
  %w = kernel.load %f[%t] : !kernel.tensor<f32, 1>, i32 -> f32
  %m = kernel.block_reduce max %w along ALONG : f32
  kernel.store %m, %maxes[%t] : f32, !kernel.tensor<f32, 1>, i32
  %n = kernel.block_reduce min %w along ALONG : f32
  kernel.store %n, %mins[%t] : f32, !kernel.tensor<f32, 1>, i32
  kernel.return
}
"""

BLOCK_SHAPES = [
    (32, 4, 1),
    (64, 2, 2),
    (1024, 1, 1),
    (48, 3, 1),
    (8, 5, 1),
    (1, 7, 1),
    (7, 3, 2),
    (3, 300, 1),
    (100, 1, 1),
    (16, 2, 3),
    (8, 32, 1),
    (1, 64, 1),
    (2, 48, 1),
    (4, 8, 1),
]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("along", ["x", "y"])
@pytest.mark.parametrize("shape", BLOCK_SHAPES, ids=[f"{a}x{b}x{c}" for a, b, c in BLOCK_SHAPES])
def test_block_reduce_on_any_block_shape(
    shape: tuple[int, int, int], along: str, rng: np.random.Generator
) -> None:
    from fuser.runtime.arrays import DeviceArray

    bx, by, bz = shape
    n = bx * by * bz
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    f = rng.standard_normal(n).astype(np.float32)
    f[rng.integers(0, n)] = np.nan  # one group gets NaN for both max and min
    arrays = [DeviceArray.from_numpy(a) for a in (x, np.zeros_like(x), f, f, f)]
    _launch(BLOCK_REDUCE.replace("ALONG", along), "block_reductions", (1,), shape, arrays)
    axis = 2 if along == "x" else 1  # (z, y, x) layout of the linear thread index
    grid = lambda a: a.reshape(bz, by, bx)  # noqa: E731
    expected_sum = np.broadcast_to(grid(x).sum(axis, keepdims=True), (bz, by, bx))
    np.testing.assert_array_equal(grid(arrays[1].numpy()), expected_sum)
    for k, reduce in ((3, np.max), (4, np.min)):  # numpy's max/min propagate NaN, like torch
        expected = np.broadcast_to(reduce(grid(f), axis, keepdims=True), (bz, by, bx))
        np.testing.assert_array_equal(grid(arrays[k].numpy()), expected)


BLOCK_WELFORD = """
kernel.func @welford(%x: !kernel.tensor<f64, 1>, %keep: !kernel.tensor<i1, 1>,
    %out: !kernel.tensor<f64, 2>) attributes {max_threads = 1024 : i64} {
  %tx = kernel.thread_id x : i32
  %ty = kernel.thread_id y : i32
  %bx = kernel.block_dim x : i32
  %row = arith.muli %bx, %ty : i32
  %t = arith.addi %tx, %row : i32
  %v = kernel.load %x[%t] : !kernel.tensor<f64, 1>, i32 -> f64
  %k = kernel.load %keep[%t] : !kernel.tensor<i1, 1>, i32 -> i1
  %zero = arith.constant 0.000000e+00 : f64
  %one = arith.constant 1.000000e+00 : f64
  %avg = arith.select %k, %v, %zero : f64
  %n = arith.select %k, %one, %zero : f64
  %a, %m2, %c = kernel.block_welford %avg, %zero, %n along ALONG : f64
  %i1 = arith.constant 1 : i32
  %i2 = arith.constant 2 : i32
  %s0 = kernel.stride %out[0] : !kernel.tensor<f64, 2>
  %s0i = arith.trunci %s0 : i64 to i32
  %o0 = arith.muli %t, %s0i : i32
  %o1 = arith.addi %o0, %i1 : i32
  %o2 = arith.addi %o0, %i2 : i32
  kernel.store %a, %out[%o0] : f64, !kernel.tensor<f64, 2>, i32
  kernel.store %m2, %out[%o1] : f64, !kernel.tensor<f64, 2>, i32
  kernel.store %c, %out[%o2] : f64, !kernel.tensor<f64, 2>, i32
  kernel.return
}
"""


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("along", ["x", "y"])
@pytest.mark.parametrize("shape", [(128, 3), (37, 5), (4, 127), (1, 3), (96, 1)])
def test_block_welford_matches_numpy_mean_and_m2(
    shape: tuple[int, int], along: str, rng: np.random.Generator
) -> None:
    from fuser.runtime.arrays import DeviceArray

    bx, by = shape
    n = bx * by
    x = rng.standard_normal(n) * 3 + 1
    keep = rng.random(n) < 0.7
    if along == "x":
        keep[:bx] = False  # a group without data: count 0, mean 0, M2 0
    arrays = [DeviceArray.from_numpy(a) for a in (x, keep, np.zeros((n, 3)))]
    _launch(BLOCK_WELFORD.replace("ALONG", along), "welford", (1,), (bx, by, 1), arrays)
    got = arrays[2].numpy().reshape(by, bx, 3)
    xs, ks = x.reshape(by, bx), keep.reshape(by, bx)
    if along == "y":
        got, xs, ks = got.transpose(1, 0, 2), xs.T, ks.T
    for g in range(xs.shape[0]):
        vals = xs[g][ks[g]]
        mean = vals.mean() if len(vals) else 0.0
        m2 = ((vals - mean) ** 2).sum() if len(vals) else 0.0
        expected = np.broadcast_to([mean, m2, len(vals)], got[g].shape)
        np.testing.assert_allclose(got[g], expected, rtol=1e-12, atol=1e-12)
        # every thread of the group has the same bits
        np.testing.assert_array_equal(got[g], np.broadcast_to(got[g][0], got[g].shape))


GRID_REDUCE = """
kernel.func @grid_sum(%x: !kernel.tensor<i64, 1>, %work: !kernel.tensor<i64, 1>,
    %sem: !kernel.tensor<i32, 1>, %out: !kernel.tensor<i64, 1>, %lasts: !kernel.tensor<i32, 1>)
    attributes {max_threads = 128 : i64} {
  %bx = kernel.block_id x : i64
  %by = kernel.block_id y : i64
  %gx = kernel.grid_dim x : i64
  %r = arith.muli %gx, %by : i64
  %b = arith.addi %bx, %r : i64
  %v = kernel.load %x[%b] : !kernel.tensor<i64, 1>, i64 -> i64
  %s, %last = kernel.grid_reduce sum %v, %work, %sem along x
      : i64, !kernel.tensor<i64, 1>, !kernel.tensor<i32, 1>
  %tid = kernel.thread_id x : i32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %tid, %c0 : i32
  %both = arith.andi %first, %last : i1
  scf.if %both {
    kernel.store %s, %out[%by] : i64, !kernel.tensor<i64, 1>, i64
    %one = arith.constant 1 : i32
    kernel.store %one, %lasts[%by] : i32, !kernel.tensor<i32, 1>, i64
  }
  kernel.return
}
"""


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("grid", [(1, 1), (3, 2), (127, 3), (1000, 1)])
def test_grid_reduce_sums_each_row_of_blocks_and_resets_its_semaphore(
    grid: tuple[int, int], rng: np.random.Generator
) -> None:
    from fuser.runtime.arrays import DeviceArray

    gx, gy = grid
    sem = DeviceArray.zeros(gy, np.int32)
    for _ in range(2):  # the second launch reuses the semaphore the first one reset
        x = rng.integers(-(2**40), 2**40, gx * gy, dtype=np.int64)
        out, lasts = DeviceArray.zeros(gy, np.int64), DeviceArray.zeros(gy, np.int32)
        args = [DeviceArray.from_numpy(x), DeviceArray.zeros(gx * gy, np.int64), sem, out, lasts]
        _launch(GRID_REDUCE, "grid_sum", grid, (96,), args)
        np.testing.assert_array_equal(out.numpy(), x.reshape(gy, gx).sum(1))
        np.testing.assert_array_equal(lasts.numpy(), np.ones(gy, np.int32))
        np.testing.assert_array_equal(sem.numpy(), np.zeros(gy, np.int32))


POINTWISE_FLOATS = """
kernel.func @floats(%a: !kernel.tensor<f32, 1>, %b: !kernel.tensor<f32, 1>,
    %out: !kernel.tensor<f32, 2>, %flags: !kernel.tensor<i1, 2>)
    attributes {max_threads = 128 : i64} {
  %t = kernel.thread_id x : i64
  %n = kernel.size %a[0] : !kernel.tensor<f32, 1>
  %in = arith.cmpi slt, %t, %n : i64
  scf.if %in {
    %x = kernel.load %a[%t] : !kernel.tensor<f32, 1>, i64 -> f32
    %y = kernel.load %b[%t] : !kernel.tensor<f32, 1>, i64 -> f32
    %max = arith.maximumf %x, %y : f32
    %min = arith.minimumf %x, %y : f32
    %h = arith.truncf %x : f32 to f16
    %hb = arith.truncf %y : f32 to bf16
    %h2 = arith.extf %h : f16 to f32
    %hb2 = arith.extf %hb : bf16 to f32
    %n1 = arith.addi %n, %t : i64
    %n2 = arith.addi %n1, %n : i64
    %n3 = arith.addi %n2, %n : i64
    kernel.store %max, %out[%t] : f32, !kernel.tensor<f32, 2>, i64
    kernel.store %min, %out[%n1] : f32, !kernel.tensor<f32, 2>, i64
    kernel.store %h2, %out[%n2] : f32, !kernel.tensor<f32, 2>, i64
    kernel.store %hb2, %out[%n3] : f32, !kernel.tensor<f32, 2>, i64
PREDICATES
  }
  kernel.return
}
"""


def floats_kernel(n: int) -> str:
    """POINTWISE_FLOATS storing every cmpf predicate of (a[t], b[t]) at flags[k, t]."""
    lines = []
    for k, p in enumerate(CMPF):
        lines.append(f"    %p{k} = arith.cmpf {p}, %x, %y : f32")
        lines.append(f"    %k{k} = arith.constant {k * n} : i64")
        lines.append(f"    %o{k} = arith.addi %k{k}, %t : i64")
        lines.append(f"    kernel.store %p{k}, %flags[%o{k}] : i1, !kernel.tensor<i1, 2>, i64")
    return POINTWISE_FLOATS.replace("PREDICATES", "\n".join(lines))


GPU_KERNELS = {
    "block_reductions-x": BLOCK_REDUCE.replace("ALONG", "x"),
    "block_reductions-y": BLOCK_REDUCE.replace("ALONG", "y"),
    "welford-x": BLOCK_WELFORD.replace("ALONG", "x"),
    "welford-y": BLOCK_WELFORD.replace("ALONG", "y"),
    "grid_sum": GRID_REDUCE,
    "floats": floats_kernel(99),
}


@pytest.mark.parametrize("key", list(GPU_KERNELS))
def test_the_gpu_tests_kernels_compile(key: str) -> None:
    name = key.split("-")[0]
    compile_source(emit_cuda(parse(GPU_KERNELS[key])), name, "sm_80")


@gpu
@pytest.mark.gpu
def test_nan_propagation_comparisons_and_half_rounding(rng: np.random.Generator) -> None:
    import ml_dtypes

    from fuser.runtime.arrays import DeviceArray

    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 65520.0], np.float32)
    a = np.concatenate([np.repeat(special, len(special)), rng.standard_normal(50)])
    b = np.concatenate([np.tile(special, len(special)), rng.standard_normal(50)])
    a, b = a.astype(np.float32), b.astype(np.float32)
    n = len(a)
    text = floats_kernel(n)
    out, flags = DeviceArray.zeros((4, n), np.float32), DeviceArray.zeros((len(CMPF), n), np.bool_)
    args = [DeviceArray.from_numpy(a), DeviceArray.from_numpy(b), out, flags]
    _launch(text, "floats", (1,), (128,), args)
    got = out.numpy()
    with np.errstate(over="ignore"):  # 65520 rounds to f16 infinity
        half = a.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got[0], np.maximum(a, b))  # NaN-propagating, like torch
    np.testing.assert_array_equal(got[1], np.minimum(a, b))
    np.testing.assert_array_equal(got[2], half)
    np.testing.assert_array_equal(got[3], b.astype(ml_dtypes.bfloat16).astype(np.float32))
    pairs = list(zip(a.tolist(), b.tolist(), strict=True))
    expected = np.array([[CMPF[p](x, y) for x, y in pairs] for p in CMPF])
    np.testing.assert_array_equal(flags.numpy(), expected)
