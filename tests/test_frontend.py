"""The Python API: FusionDefinition -> fusion-dialect IR, type promotion, user errors, and
numpy results of composite fusions through `fd.reference`."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import scipy.special
from ir_helpers import NUMERIC_UNARY
from ir_helpers import UNARY as IR_UNARY
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fuser.cli import FuserOptMain
from fuser.dialects.fusion import (
    BF16,
    F16,
    F32,
    F64,
    I1,
    I32,
    I64,
    BroadcastInDimOp,
    ConstantOp,
    DimOp,
    Fusion,
    FusionOp,
    GeluOp,
    VarMeanOp,
)
from fuser.dtypes import DataType, ParallelType, promote_types, result_type
from fuser.errors import CompilationError, DefinitionError, InputError, VerificationError
from fuser.frontend import Extent, FusionDefinition, Scalar, Tensor

ROOT = Path(__file__).resolve().parent.parent
BF16_NP = np.dtype(ml_dtypes.bfloat16)

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Fusion)
    return Parser(ctx, text).parse_module()


def printed(op: Operation) -> str:
    out = StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def body(fd: FusionDefinition) -> list[Operation]:
    return list(fd.fusion.body.block.ops)


def names(fd: FusionDefinition) -> list[str]:
    return [op.name for op in body(fd)]


def assert_roundtrips(fd: FusionDefinition) -> None:
    """fusion_ir() parses back, verifies, and prints identically."""
    ir = fd.fusion_ir()
    module = parse(ir)
    module.verify()
    assert printed(module) + "\n" == ir


def define(build: Callable[[FusionDefinition], object], name: str = "fusion") -> FusionDefinition:
    """A finished FusionDefinition whose outputs are what `build` returns."""
    with FusionDefinition(name) as fd:
        outs = build(fd)
        for t in outs if isinstance(outs, tuple | list) else (outs,):
            fd.add_output(t)
    assert_roundtrips(fd)
    return fd


def out_types(fd: FusionDefinition) -> list[str]:
    return [str(t) for t in fd.fusion.function_type.outputs.data]


def rand(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: object = np.float32
) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def error(fn: Callable[[], object], *needles: str) -> str:
    """Runs `fn`, expecting a DefinitionError whose message holds each needle."""
    with pytest.raises(DefinitionError) as info:
        fn()
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


UNARY = [*IR_UNARY, "gelu"]
ARITH = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]

# --------------------------------------------------------------------------------------------
# DataType and promotion rules
# --------------------------------------------------------------------------------------------


def test_datatype_maps_to_dialect_element_types() -> None:
    expected = {
        DataType.Float: F32,
        DataType.Double: F64,
        DataType.Half: F16,
        DataType.BFloat16: BF16,
        DataType.Int: I64,
        DataType.Int32: I32,
        DataType.Bool: I1,
    }
    assert {d for d in DataType if d.supported} == set(expected)
    for dtype, el in expected.items():
        assert dtype.element_type == el
        assert DataType.from_element_type(el) is dtype
    assert {p.name for p in ParallelType} == {"Serial", "Stream", "mesh_x"}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (DataType.Half, DataType.Half, DataType.Half),
        (DataType.Half, DataType.Float, DataType.Float),
        (DataType.Half, DataType.BFloat16, DataType.Float),
        (DataType.BFloat16, DataType.Double, DataType.Double),
        (DataType.Float, DataType.Double, DataType.Double),
        (DataType.Int32, DataType.Int, DataType.Int),
        (DataType.Int, DataType.Half, DataType.Half),
        (DataType.Bool, DataType.Int32, DataType.Int32),
        (DataType.Bool, DataType.Float, DataType.Float),
    ],
)
def test_promote_types(a: DataType, b: DataType, expected: DataType) -> None:
    assert promote_types(a, b) is expected
    assert promote_types(b, a) is expected


def test_result_type_priorities() -> None:
    f, d, h, i, i32, b = (
        DataType.Float,
        DataType.Double,
        DataType.Half,
        DataType.Int,
        DataType.Int32,
        DataType.Bool,
    )
    assert result_type([h], [], [f]) is h  # f16 tensor + 2.0
    assert result_type([i32], [], [f]) is f  # i32 tensor + 2.5 -> default float
    assert result_type([i32], [], [i]) is i32  # i32 tensor + 1
    assert result_type([b], [], [i]) is i  # bool tensor + 1
    assert result_type([f], [d], []) is f  # f32 tensor + f64 scalar
    assert result_type([i32], [d], []) is d  # i32 tensor + f64 scalar
    assert result_type([], [d], [f]) is d  # f64 scalar + 2.0
    assert result_type([], [i], [f]) is f  # i64 scalar + 2.0


# --------------------------------------------------------------------------------------------
# IR of each op
# --------------------------------------------------------------------------------------------


def test_inputs_names_and_handles() -> None:
    with FusionDefinition("handles") as fd:
        x = fd.define_tensor(shape=[-1, 3, 1], dtype=DataType.Half)
        s = fd.define_scalar()
        y = fd.define_tensor([5])
        fd.add_output(fd.ops.set(x))
    assert isinstance(x, Tensor) and isinstance(s, Scalar)
    assert (x.name, s.name, y.name) == ("t0", "s0", "t1")
    assert x.static_shape == (-1, 3, 1) and x.ndim == 3 and x.dtype is DataType.Half
    assert y.dtype is DataType.Float and s.dtype is DataType.Double
    assert [str(a.type) for a in fd.fusion.body.block.args] == [
        "tensor<?x3x1xf16>",
        "f64",
        "tensor<5xf32>",
    ]
    assert fd.inputs == [x, s, y]
    assert "fusion.fusion @handles(%t0: tensor<?x3x1xf16>, %s0: f64, %t1: tensor<5xf32>)" in (
        fd.fusion_ir()
    )
    assert_roundtrips(fd)
    assert isinstance(fd.module, ModuleOp) and fd.module.body.block.first_op is fd.fusion


def test_contiguity_and_stride_order_are_accepted() -> None:
    def build(fd: FusionDefinition) -> Tensor:
        x = fd.define_tensor(
            [-1, -1], contiguity=[True, None], dtype=DataType.Float, stride_order=[0, 1]
        )
        return fd.ops.exp(x)

    assert names(define(build)) == ["fusion.exp", "fusion.output"]


def test_define_scalar_constants() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        a = fd.define_scalar(2)
        b = fd.define_scalar(2.5)
        c = fd.define_scalar(0.5, dtype=DataType.Float)
        d = fd.define_scalar(True)
        fd.add_output(x)
    consts = [op for op in body(fd) if isinstance(op, ConstantOp)]
    assert [str(op.result.type) for op in consts] == ["i64", "f64", "f32", "i1"]
    assert [s.dtype for s in (a, b, c, d)] == [
        DataType.Int,
        DataType.Double,
        DataType.Float,
        DataType.Bool,
    ]
    assert len(fd.inputs) == 1
    assert_roundtrips(fd)


@pytest.mark.parametrize("op", [op for op in UNARY if op != "frac"])  # (frac: floats only)
def test_unary_op_ir(op: str) -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1, 3], DataType.Float)
        h = fd.define_tensor([-1, 3], DataType.BFloat16)
        i = fd.define_tensor([-1, 3], DataType.Int32)
        f = getattr(fd.ops, op)
        return f(x), f(h), f(i)

    fd = define(build)
    ops = names(fd)
    # f32: the op itself; bf16: computed in f32 and cast back.
    assert ops[:4] == [f"fusion.{op}", "fusion.cast", f"fusion.{op}", "fusion.cast"]
    if op in NUMERIC_UNARY:  # integers compute as they are
        assert ops[4:] == [f"fusion.{op}", "fusion.output"]
        assert out_types(fd) == ["tensor<?x3xf32>", "tensor<?x3xbf16>", "tensor<?x3xi32>"]
    else:  # float-only ops compute integers in Float
        assert ops[4:] == ["fusion.cast", f"fusion.{op}", "fusion.output"]
        assert out_types(fd) == ["tensor<?x3xf32>", "tensor<?x3xbf16>", "tensor<?x3xf32>"]


def test_gelu_approximation_and_unary_on_scalars() -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1])
        s = fd.define_scalar(dtype=DataType.Float)
        y = fd.ops.gelu(x, approximate="tanh")
        z = fd.ops.gelu(x)
        e = fd.ops.exp(s)  # a scalar op, broadcast into the tensor below
        return fd.ops.add(y, e), z

    fd = define(build)
    gelus = [op for op in body(fd) if isinstance(op, GeluOp)]
    assert [g.approximate.data.value for g in gelus] == ["tanh", "none"]
    assert "fusion.gelu %t0 tanh : tensor<?xf32>" in fd.fusion_ir()
    assert "fusion.exp %s0 : f32" in fd.fusion_ir()


@pytest.mark.parametrize("op", ARITH + COMPARE)
def test_binary_op_ir(op: str) -> None:
    def build(fd: FusionDefinition) -> object:
        x = fd.define_tensor([-1, 3], DataType.Float)
        y = fd.define_tensor([-1, 3], DataType.Float)
        return getattr(fd.ops, op)(x, y)

    fd = define(build)
    assert names(fd) == [f"fusion.{op}", "fusion.output"]
    el = "i1" if op in COMPARE else "f32"
    assert out_types(fd) == [f"tensor<?x3x{el}>"]


@pytest.mark.parametrize(
    ("lhs", "rhs", "op", "expected_ops", "out"),
    [
        # half math runs in f32 and is cast back
        (DataType.Half, DataType.Half, "add", ["cast", "cast", "add", "cast"], "f16"),
        (DataType.BFloat16, 2.0, "mul", ["cast", "constant", "mul", "cast"], "bf16"),
        (DataType.Half, DataType.Float, "sub", ["cast", "sub"], "f32"),
        (DataType.Half, DataType.BFloat16, "add", ["cast", "cast", "add"], "f32"),
        (DataType.Float, DataType.Double, "add", ["cast", "add"], "f64"),
        (DataType.Int32, DataType.Float, "mul", ["cast", "mul"], "f32"),
        (DataType.Int, 2.5, "add", ["cast", "constant", "add"], "f32"),
        (DataType.Int32, 1, "add", ["constant", "add"], "i32"),
        (DataType.Int32, DataType.Int, "maximum", ["cast", "maximum"], "i64"),
        (DataType.Bool, 1, "add", ["cast", "constant", "add"], "i64"),
        # bool + bool is `or`, computed on {0, 1} in i32
        (DataType.Bool, DataType.Bool, "add", ["cast", "cast", "add", "cast"], "i1"),
        (DataType.Half, DataType.Half, "lt", ["cast", "cast", "lt"], "i1"),
        (DataType.Int32, 0.5, "ge", ["cast", "constant", "ge"], "i1"),
        (DataType.Bool, DataType.Bool, "eq", ["eq"], "i1"),
        # integer pow computes in f64 and keeps the integer type
        (DataType.Int32, 2, "pow", ["cast", "constant", "pow", "cast"], "i32"),
        (DataType.Int32, DataType.Int32, "div", ["div"], "i32"),
        (DataType.Int32, DataType.Int32, "truediv", ["cast", "cast", "div"], "f32"),
        (DataType.Half, DataType.Half, "truediv", ["cast", "cast", "div", "cast"], "f16"),
        # a float Scalar of higher precision does not promote a Float tensor
        ("f64 scalar", DataType.Float, "add", ["cast", "add"], "f32"),
        ("f64 scalar", DataType.Int32, "mul", ["cast", "mul"], "f64"),
    ],
)
def test_promotion(lhs: object, rhs: object, op: str, expected_ops: list[str], out: str) -> None:
    def operand(fd: FusionDefinition, spec: object) -> object:
        if isinstance(spec, DataType):
            return fd.define_tensor([-1, 7], spec)
        if spec == "f64 scalar":
            return fd.define_scalar(dtype=DataType.Double)
        return spec

    def build(fd: FusionDefinition) -> object:
        return getattr(fd.ops, op)(operand(fd, lhs), operand(fd, rhs))

    fd = define(build)
    assert names(fd) == [f"fusion.{n}" for n in expected_ops] + ["fusion.output"]
    assert out_types(fd) == [f"tensor<?x7x{out}>"]
    # each op's operands share one element type: the frontend inserted every cast
    for o in body(fd):
        if o.name in ("fusion.add", "fusion.mul", "fusion.sub", "fusion.div", "fusion.pow"):
            assert len({str(getattr(v.type, "element_type", v.type)) for v in o.operands}) == 1


def test_each_value_is_cast_once() -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1], DataType.BFloat16)
        return x * x + fd.ops.exp(x), fd.ops.cast(x, DataType.Float)

    fd = define(build)
    assert names(fd) == [
        "fusion.cast",
        "fusion.mul",
        "fusion.cast",
        "fusion.exp",  # the f32 cast of x is shared by mul, exp and the explicit cast
        "fusion.cast",
        "fusion.cast",
        "fusion.cast",
        "fusion.add",
        "fusion.cast",
        "fusion.output",
    ]
    casts = [op for op in body(fd) if op.name == "fusion.cast"]
    assert sum(op.operands[0] is fd.inputs[0]._value for op in casts) == 1
    assert fd.outputs[1]._value is casts[0].results[0]


def test_scalar_only_ops_produce_scalars() -> None:
    def build(fd: FusionDefinition) -> object:
        x = fd.define_tensor([-1])
        s = fd.define_scalar(dtype=DataType.Int)
        half = s / 2  # i64 scalar / int -> Float scalar
        assert isinstance(half, Scalar) and half.dtype is DataType.Float
        return x * half

    fd = define(build)
    assert "fusion.div %" in fd.fusion_ir()
    assert out_types(fd) == ["tensor<?xf32>"]


def test_python_operators() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        y = fd.define_tensor([-1, 4])
        results = {
            "add": [x + y, x + 1, 1 + x],
            "sub": [x - y, 2 - x],
            "mul": [x * 2.0, 2.0 * x],
            "div": [x / y, 1 / x],
            "pow": [x**2, 2**x],
            "neg": [-x],
            "abs": [abs(x)],
            "lt": [x < y, x < 1],
            "gt": [x > y, 1 < x],  # noqa: SIM300 (the reflected operator is the point)
            "le": [x <= 0],
            "ge": [x >= 0],
            "eq": [x == y, x == 0],
            "ne": [x != y, 1.5 != x],  # noqa: SIM300 (the reflected operator is the point)
        }
        for ts in results.values():
            for t in ts:
                fd.add_output(t)
    ops = [op for op in body(fd) if op.name not in ("fusion.constant", "fusion.output")]
    assert [op.name for op in ops] == [f"fusion.{k}" for k, ts in results.items() for _ in ts]
    # reflected operators keep the operand order
    sub = next(
        op for op in ops if op.name == "fusion.sub" and isinstance(op.operands[0].owner, ConstantOp)
    )
    assert sub.operands[1] is x._value
    assert_roundtrips(fd)


def test_equality_operators_build_ops_and_handles_hash_by_identity() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        y = fd.define_tensor([-1, 4])
        s = fd.define_scalar()
        equal, different, scalar_equal = x == y, x != 1, s == 2.0
        assert isinstance(equal, Tensor) and equal.dtype is DataType.Bool
        assert isinstance(different, Tensor) and isinstance(scalar_equal, Scalar)
        assert (x == None) is False and (x != "x") is True  # noqa: E711 (not operands: Python's rule)
        handles = {x: "x", y: "y", s: "s"}  # identity hash: lookups never call ==
        assert handles[x] == "x" and handles[y] == "y" and len({x, y, x}) == 2
        fd.add_output(equal)
        fd.add_output(different)
    assert [op.name for op in body(fd) if op.name in ("fusion.eq", "fusion.ne")] == [
        "fusion.eq",
        "fusion.ne",
        "fusion.eq",
    ]


def test_where_cast_set_segment_set() -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1, 5], DataType.Half)
        y = fd.define_tensor([-1, 5], DataType.Float)
        c = x > 0
        w1 = fd.ops.where(c, x, x)  # half branches move data: no f32 round trip
        w2 = fd.ops.where(c, x, y)  # promoted to f32
        w3 = fd.ops.where(c, 1.0, 0.0)  # numbers fill a tensor of cond's shape
        same = fd.ops.cast(y, DataType.Float)  # same dtype: a set
        seg = fd.ops.segment_set(fd.ops.set(x))
        return w1, w2, w3, same, seg, fd.ops.cast(x, DataType.Int32)

    fd = define(build)
    assert names(fd) == [
        "fusion.cast",
        "fusion.constant",
        "fusion.gt",
        "fusion.where",
        "fusion.where",  # reuses the f32 cast of x made for `x > 0`
        "fusion.constant",
        "fusion.constant",
        "fusion.where",
        "fusion.set",
        "fusion.set",
        "fusion.segment_set",
        "fusion.cast",
        "fusion.output",
    ]
    assert out_types(fd) == [
        "tensor<?x5xf16>",
        "tensor<?x5xf32>",
        "tensor<?x5xf32>",
        "tensor<?x5xf32>",
        "tensor<?x5xf16>",
        "tensor<?x5xi32>",
    ]


def test_broadcast_in_dim_extents() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        v = fd.define_tensor([-1])
        one = fd.define_tensor([1, 6])
        s = fd.define_scalar(dtype=DataType.Float)
        a = fd.ops.broadcast_in_dim(v, x.shape(), [0])  # new dim 1 needs x.size(1)
        b = fd.ops.broadcast_in_dim(v, [x.size(0), -1], [1])  # -1 carried from v
        c = fd.ops.broadcast_in_dim(v, [-1, 3, x.size(1)], [0])
        d = fd.ops.broadcast_in_dim(one, [x.size(0), 6], [0, 1])  # 1 -> dynamic
        e = fd.ops.broadcast_in_dim(s, [4, x.size(-1)], [])
        f = fd.ops.broadcast_in_dim(v, [-1, 1], [-2])
        for t in (a, b, c, d, e, f):
            fd.add_output(t)
    assert isinstance(x.size(0), Extent) and x.size(-1).axis == 1 and x.size(1).static is None
    assert one.size(1).static == 6
    bcasts = [op for op in body(fd) if isinstance(op, BroadcastInDimOp)]
    assert [list(op.dims) for op in bcasts] == [[0], [1], [0], [0, 1], [], [0]]
    assert [len(op.sizes) for op in bcasts] == [1, 1, 1, 1, 1, 0]
    assert [op.sized_dims() for op in bcasts] == [[1], [0], [2], [0], [1], []]
    assert out_types(fd) == [
        "tensor<?x?xf32>",
        "tensor<?x?xf32>",
        "tensor<?x3x?xf32>",
        "tensor<?x6xf32>",
        "tensor<4x?xf32>",
        "tensor<?x1xf32>",
    ]
    # one fusion.dim per (tensor, axis), however often the extent is used
    assert names(fd).count("fusion.dim") == 2
    assert "%t0_size1 = fusion.dim %t0[1] : tensor<?x?xf32>" in fd.fusion_ir()
    assert_roundtrips(fd)


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_reduction_ir(op: str) -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1, 5, -1], DataType.Float)
        h = fd.define_tensor([-1, 5], DataType.BFloat16)
        f = getattr(fd.ops, op)
        return (
            f(x, dims=[0, -1]),
            f(x, 1, keepdim=True),
            f(h, [1]),  # f32 accumulation, cast back
            f(h, [1], dtype=DataType.Float),  # f32 result: no cast back
            f(x, [2], dtype=DataType.Double),
        )

    fd = define(build)
    assert names(fd) == [
        f"fusion.{op}",
        f"fusion.{op}",
        "fusion.cast",
        f"fusion.{op}",
        "fusion.cast",
        f"fusion.{op}",  # reuses the f32 cast of h
        "fusion.cast",
        f"fusion.{op}",
        "fusion.output",
    ]
    assert out_types(fd) == [
        "tensor<5xf32>",
        "tensor<?x1x?xf32>",
        "tensor<?xbf16>",
        "tensor<?xf32>",
        "tensor<?x5xf64>",
    ]
    assert f"fusion.{op} %t0 [0, 2] : tensor<?x5x?xf32> -> tensor<5xf32>" in fd.fusion_ir()
    assert "[1] keepdim" in fd.fusion_ir()


def test_sum_of_bool_is_int() -> None:
    fd = define(lambda fd: fd.ops.sum(fd.define_tensor([-1, 3], DataType.Bool), [1]))
    assert names(fd) == ["fusion.cast", "fusion.sum", "fusion.output"]
    assert out_types(fd) == ["tensor<?xi64>"]


def test_welford_var_mean_matmul_ir() -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1, 9, -1], DataType.Double)
        avg, var_sum, n = fd.ops.welford(x, [1, 2])
        var, mean = fd.ops.var_mean(x, -1, correction=0, keepdim=True)
        a = fd.define_tensor([-1, 4, 8], DataType.BFloat16)
        b = fd.define_tensor([-1, 8, 3], DataType.BFloat16)
        return avg, var_sum, n, var, mean, fd.ops.matmul(a, b)

    fd = define(build)
    assert names(fd) == ["fusion.welford", "fusion.var_mean", "fusion.matmul", "fusion.output"]
    assert out_types(fd) == [
        "tensor<?xf64>",
        "tensor<?xf64>",
        "tensor<?xi64>",
        "tensor<?x9x1xf64>",
        "tensor<?x9x1xf64>",
        "tensor<?x4x3xbf16>",
    ]
    vm = next(op for op in body(fd) if isinstance(op, VarMeanOp))
    assert vm.correction.value.data == 0 and vm.keepdim is not None


def test_layer_norm_ir_matches_the_mlir_example_and_fuser_opt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fd = load_example().define_layer_norm()
    expected = parse((ROOT / "examples" / "layer_norm.mlir").read_text())
    expected_fusion = expected.body.block.first_op
    assert isinstance(expected_fusion, FusionOp)
    assert fd.fusion.function_type == expected_fusion.function_type
    assert fd.fusion.sym_name == expected_fusion.sym_name
    # the same ops, up to where the `fusion.dim` extents are placed
    expected_ops = [op.name for op in expected_fusion.body.block.ops if op.name != "fusion.dim"]
    assert [n for n in names(fd) if n != "fusion.dim"] == expected_ops
    # fuser-opt parses fusion_ir() and prints it back unchanged
    path = tmp_path / "layer_norm.mlir"
    path.write_text(fd.fusion_ir())
    capsys.readouterr()
    FuserOptMain(args=[str(path)]).run()
    assert capsys.readouterr().out.rstrip("\n") == fd.fusion_ir().rstrip("\n")


# --------------------------------------------------------------------------------------------
# User errors
# --------------------------------------------------------------------------------------------


def test_wrong_arity_and_keywords() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        error(lambda: fd.ops.add(x, x, x), "fd.ops.add takes (lhs, rhs), got 3 arguments")
        error(lambda: fd.ops.exp(), "fd.ops.exp takes (x), got 0 arguments")
        error(
            lambda: fd.ops.sum(x, [0], keepdims=True),
            "fd.ops.sum got an unexpected keyword argument 'keepdims'",
            "(t, dims=None, keepdim=False, dtype=None)",
        )
        error(lambda: fd.ops.mul(x, lhs=x), "fd.ops.mul got multiple values for argument 'lhs'")
        error(
            lambda: fd.define_tensor([-1], DataType.Float, True),
            "fd.define_tensor: argument 'dtype' must be a DataType, got True",
        )
        error(
            lambda: fd.define_tensor([-1], None, DataType.Float, False, None, 1),
            "fd.define_tensor takes (shape=None, contiguity=None, dtype=None, is_cpu=False, "
            "stride_order=None, *, sizes=None, strides=None, static_sizes=False), got 6 arguments",
        )
        fd.add_output(x)


@pytest.mark.parametrize(
    ("call", "needles"),
    [
        (lambda fd, x: fd.ops.sum(x, [2]), ("fd.ops.sum", "'dims'", "dim 2", "rank 2")),
        (lambda fd, x: fd.ops.max(x, [-3]), ("fd.ops.max", "'dims'", "dim -3", "rank 2")),
        (lambda fd, x: fd.ops.min(x, [1, -1]), ("fd.ops.min", "'dims'", "twice")),
        (lambda fd, x: fd.ops.sum(x, []), ("fd.ops.sum", "'dims'", "empty")),
        (lambda fd, x: fd.ops.sum(x, "0"), ("fd.ops.sum", "'dims'")),
        (lambda fd, x: fd.ops.sum(x, [0.5]), ("fd.ops.sum", "'dims'")),
        (lambda fd, x: fd.ops.sum(x, 0, keepdim=1), ("fd.ops.sum", "'keepdim'")),
        (lambda fd, x: fd.ops.sum(x, 0, dtype="f32"), ("fd.ops.sum", "'dtype'")),
        (lambda fd, x: fd.ops.var_mean(x, [5]), ("fd.ops.var_mean", "'dims'", "dim 5")),
        (lambda fd, x: fd.ops.var_mean(x, [1], correction=-1), ("var_mean", "'correction'")),
        (lambda fd, x: fd.ops.welford(x, [0, 0]), ("fd.ops.welford", "'dims'", "twice")),
        (lambda fd, x: fd.ops.cast(x, "bf16"), ("fd.ops.cast", "'dtype'")),
        (lambda fd, x: fd.ops.exp("x"), ("fd.ops.exp", "'x'", "got str")),
        (lambda fd, x: fd.ops.exp(2.0), ("fd.ops.exp", "'x'")),
        (lambda fd, x: fd.ops.add(1, 2), ("fd.ops.add", "two Python numbers")),
        (lambda fd, x: fd.ops.sum(fd.define_scalar(), [0]), ("fd.ops.sum", "'t'", "Scalar")),
        (lambda fd, x: fd.ops.add(x, x.size(0)), ("fd.ops.add", "'rhs'", "Extent")),
        (lambda fd, x: fd.ops.gelu(x, approximate="fast"), ("fd.ops.gelu", "'approximate'")),
        (lambda fd, x: fd.ops.where(x, x, x), ("fd.ops.where", "'cond'", "Bool")),
        (lambda fd, x: fd.ops.sub(x > 0, x < 0), ("fd.ops.sub", "Bool")),
        (lambda fd, x: fd.ops.neg(x > 0), ("fd.ops.neg", "Bool")),
        (lambda fd, x: fd.ops.add(fd.ops.cast(x, DataType.Int32), 2**40), ("'rhs'", "Int32")),
        (lambda fd, x: x.size(2), ("Tensor.size", "'dim'", "rank 2")),
        (lambda fd, x: bool(x > 0), ("truth value", "fd.ops.where")),
        (lambda fd, x: bool(x == x), ("truth value", "fd.ops.eq", "`is`")),
        (lambda fd, x: x in [fd.define_tensor([-1, 4])], ("truth value",)),
    ],
)
def test_argument_errors(call: Callable[..., object], needles: tuple[str, ...]) -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        error(lambda: call(fd, x), *needles)
        fd.add_output(x)


def test_statistics_reject_half_and_integer_inputs() -> None:
    with FusionDefinition() as fd:
        h = fd.define_tensor([-1, 4], DataType.BFloat16)
        i = fd.define_tensor([-1, 4], DataType.Int)
        error(lambda: fd.ops.var_mean(h, [1]), "fd.ops.var_mean", "'t'", "upcast to float first")
        error(lambda: fd.ops.welford(h, [1]), "fd.ops.welford", "upcast to float first")
        error(lambda: fd.ops.var_mean(i, [1]), "fd.ops.var_mean", "'t'", "Float or Double")
        fd.add_output(h)


def test_pointwise_shape_mismatch() -> None:
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 4])
        b = fd.define_tensor([-1, 5])
        c = fd.define_tensor([3])
        d = fd.define_tensor([3, -1])
        error(lambda: a + b, "fd.ops.add", "'rhs'", "[?, 5]", "'lhs'", "[?, 4]", "dim 1")
        error(lambda: fd.ops.mul(a, c), "fd.ops.mul", "'rhs' has shape [3]", "[?, 4]", "dim 1")
        error(lambda: fd.ops.where(a > 0, a, b), "fd.ops.where", "'b'", "dim 1")
        # dynamic dims are compatible with static ones; the result keeps the static extents
        e = fd.ops.add(a, d)
        assert e.static_shape == (3, 4)
        fd.add_output(e)


# nvFuser's implicit broadcast: (declared shapes, concrete shapes, build) per case. A static 1
# expands to the other operand's extent; a tensor of lower rank gains leading dims.
BROADCAST_CASES = {
    "nvfuser_readme": (
        [[-1, 1, -1], [-1, -1, -1]],
        [(3, 1, 127), (3, 5, 127)],
        lambda fd, x, y: x + y,
    ),
    "minus_keepdim_max": (
        [[-1, -1, -1]],
        [(3, 5, 127)],
        lambda fd, x: x - fd.ops.max(x, [1], True),
    ),
    "lower_rank": ([[-1], [-1, -1]], [(127,), (3, 127)], lambda fd, x, y: x * y),
    "lower_rank_static_one": ([[1, -1], [-1]], [(1, 127), (127,)], lambda fd, x, y: y - x),
    "static_one_static_extent": ([[1, 5], [3, 5]], [(1, 5), (3, 5)], lambda fd, x, y: x / y),
    "size_zero": ([[-1, 1], [-1, -1]], [(0, 1), (0, 3)], lambda fd, x, y: x + y),
    "expand_to_zero": ([[3, 1], [3, -1]], [(3, 1), (3, 0)], lambda fd, x, y: x + y),
    "size_one_runtime": ([[-1, -1], [1, -1]], [(1, 1), (1, 1)], lambda fd, x, y: x + y),
    "where_three_ways": (
        [[-1, 1], [1, -1], [-1]],
        [(127, 1), (1, 3), (3,)],
        lambda fd, x, y, z: fd.ops.where(x > 0, y, z),
    ),
    "scalar_and_number": ([[-1, 1], [-1]], [(3, 1), (5,)], lambda fd, x, y: x * 2.0 + y),
    "rank_zero": ([[], [-1, 3]], [(), (127, 3)], lambda fd, x, y: x - y),
}
NUMPY_BROADCAST = {
    "nvfuser_readme": lambda x, y: x + y,
    "minus_keepdim_max": lambda x: x - x.max(1, keepdims=True),
    "lower_rank": lambda x, y: x * y,
    "lower_rank_static_one": lambda x, y: y - x,
    "static_one_static_extent": lambda x, y: x / y,
    "size_zero": lambda x, y: x + y,
    "expand_to_zero": lambda x, y: x + y,
    "size_one_runtime": lambda x, y: x + y,
    "where_three_ways": lambda x, y, z: np.where(x > 0, y, z),
    "scalar_and_number": lambda x, y: x * 2.0 + y,
    "rank_zero": lambda x, y: x - y,
}


@pytest.mark.parametrize("dtype", [DataType.Half, DataType.BFloat16, DataType.Float])
@pytest.mark.parametrize("case", sorted(BROADCAST_CASES))
def test_implicit_broadcast_matches_numpy(case: str, dtype: DataType) -> None:
    declared, concrete, build = BROADCAST_CASES[case]
    np_dtype = {DataType.Half: np.float16, DataType.BFloat16: ml_dtypes.bfloat16}.get(
        dtype, np.float32
    )
    fd = define(lambda fd: build(fd, *(fd.define_tensor(s, dtype) for s in declared)))
    assert "fusion.broadcast_in_dim" in names(fd)
    rng = np.random.default_rng()
    inputs = [np.asarray(rng.standard_normal(s)).astype(np_dtype) for s in concrete]
    (out,) = fd.reference(inputs, compute_dtype=np.float64)
    expected = NUMPY_BROADCAST[case](*(x.astype(np.float64) for x in inputs))
    assert out.shape == expected.shape
    tolerance = {np.float16: 2e-3, ml_dtypes.bfloat16: 1e-2}.get(np_dtype, 1e-6)
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tolerance, atol=tolerance)


def test_implicit_broadcast_reads_extents_from_inputs() -> None:
    fd = define(lambda fd: fd.define_tensor([-1, 1]) + fd.define_tensor([-1, -1]))
    bcast = next(op for op in body(fd) if isinstance(op, BroadcastInDimOp))
    (size,) = bcast.operands[1:]
    assert isinstance(size.owner, DimOp) and size.owner.operands[0] is fd.inputs[1]._value
    assert str(bcast.results[0].type) == "tensor<?x?xf32>"


def test_broadcast_in_dim_errors() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        v = fd.define_tensor([-1])
        five = fd.define_tensor([5])
        bcast = fd.ops.broadcast_in_dim
        error(
            lambda: bcast(v, [-1, -1], [0]), "broadcast_in_dim", "'shape' entry 1 is -1", "size(i)"
        )
        error(lambda: bcast(five, [4, 3], [0]), "broadcast_in_dim", "'shape' entry 0 is 4")
        error(lambda: bcast(v, [-1, -1], [0, 1]), "broadcast_in_dim", "'broadcast_dims'", "1 dims")
        error(lambda: bcast(x, [-1, -1], [1, 0]), "broadcast_in_dim", "strictly increasing")
        error(lambda: bcast(x, [-1, -1], [0, 2]), "broadcast_in_dim", "'broadcast_dims'", "dim 2")
        error(lambda: bcast(v, [-1, "n"], [0]), "broadcast_in_dim", "'shape' entry 1")
        error(lambda: bcast(v, [-1, -2], [0]), "broadcast_in_dim", "'shape' entry 1 is -2")
        error(lambda: bcast(x, [-1], [0]), "broadcast_in_dim", "'broadcast_dims'")
        error(lambda: bcast(v, 3, [0]), "broadcast_in_dim", "'shape'")
        fd.add_output(x)


def test_matmul_errors() -> None:
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 8], DataType.Half)
        b = fd.define_tensor([8, -1], DataType.Float)
        c = fd.define_tensor([-1, 8], DataType.Int32)
        d = fd.define_tensor([7, -1], DataType.Half)
        e = fd.define_tensor([-1], DataType.Half)
        error(lambda: fd.ops.matmul(a, b), "fd.ops.matmul", "'a' (Half)", "'b' (Float)")
        error(lambda: fd.ops.matmul(c, c), "fd.ops.matmul", "'a' is Int32")
        error(lambda: fd.ops.matmul(a, d), "fd.ops.matmul", "contraction")
        f = fd.define_tensor([1, 1, 1, 1, 8], DataType.Half)
        error(lambda: fd.ops.matmul(f, e), "fd.ops.matmul", "rank 1 to 4", "[1, 1, 1, 1, 8]")
        fd.add_output(a)


def test_foreign_values() -> None:
    with FusionDefinition() as other:
        y = other.define_tensor([-1, 4])
        other.add_output(y)
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        error(lambda: fd.ops.add(x, y), "fd.ops.add", "'rhs'", "another FusionDefinition")
        error(lambda: fd.add_output(y), "fd.add_output", "'t'", "another FusionDefinition")
        v = fd.define_tensor([-1])
        error(
            lambda: fd.ops.broadcast_in_dim(v, [-1, y.size(1)], [0]),
            "broadcast_in_dim",
            "another FusionDefinition",
        )
        fd.add_output(x)


def test_definition_lifecycle_errors() -> None:
    fd = FusionDefinition()
    error(lambda: fd.define_tensor([-1]), "fd.define_tensor", "before its `with` block")
    error(lambda: fd.fusion_ir(), "fusion_ir()", "after the")
    with fd:
        x = fd.define_tensor([-1])
        error(lambda: fd.fusion, "fd.fusion")
        fd.add_output(x)
    error(lambda: fd.ops.exp(x), "fd.ops.exp", "after its `with` block")
    error(lambda: x + 1, "fd.ops.add", "after its `with` block")

    def reenter() -> None:
        with fd:
            pass

    error(reenter, "already defined")

    empty = FusionDefinition("empty")
    with pytest.raises(DefinitionError, match="'empty' has no outputs"), empty:
        empty.define_tensor([-1])
    error(lambda: empty.reference([]), "reference()")

    def scalar_output() -> None:
        with FusionDefinition() as f:
            f.add_output(f.define_scalar())

    error(scalar_output, "fd.add_output", "Scalar", "tensors")
    error(lambda: FusionDefinition(""), "'name'")


def test_define_tensor_errors() -> None:
    with FusionDefinition() as fd:
        error(lambda: fd.define_tensor([-2]), "fd.define_tensor", "'shape'", "-2")
        error(lambda: fd.define_tensor(4), "fd.define_tensor", "'shape'")
        error(lambda: fd.define_tensor([2.0]), "fd.define_tensor", "'shape'")
        error(lambda: fd.define_tensor([-1], dtype="float"), "fd.define_tensor", "'dtype'")
        error(lambda: fd.define_tensor([-1], contiguity=[True, True]), "'contiguity'", "rank 1")
        error(lambda: fd.define_scalar("a"), "fd.define_scalar", "'value'")
        error(lambda: fd.define_scalar(1.5, dtype=DataType.Int), "'value'", "not an integer")
        fd.add_output(fd.define_tensor([-1]))


def test_an_exception_inside_with_leaves_no_fusion() -> None:
    fd = FusionDefinition()
    with pytest.raises(ZeroDivisionError), fd:
        fd.add_output(fd.define_tensor([-1]))
        _ = 1 / 0
    error(lambda: fd.fusion_ir(), "fusion_ir()")
    error(lambda: fd.define_tensor([-1]), "after its `with` block failed")


def test_verifier_failure_becomes_verification_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: FusionOp) -> None:
        raise VerifyException("'fusion.fusion' injected failure")

    monkeypatch.setattr(FusionOp, "verify_", broken)
    with pytest.raises(VerificationError, match="injected failure"), FusionDefinition() as fd:
        fd.add_output(fd.define_tensor([-1]))


# --------------------------------------------------------------------------------------------
# Numerics through fd.reference
# --------------------------------------------------------------------------------------------


def require_public_package() -> object:
    """The `fuser` package as users import it (`from fuser import FusionDefinition`)."""
    import fuser

    if getattr(fuser, "__file__", None) is None:
        pytest.fail(
            "`import fuser` found a namespace package, not fuser/__init__.py: the editable "
            "install predates fuser/__init__.py; reinstall it (pip install -e . --no-deps)"
        )
    return fuser


def test_public_api_exports() -> None:
    fuser = require_public_package()
    for name in ("FusionDefinition", "DataType", "ParallelType", "Tensor", "Scalar", "Extent"):
        assert getattr(fuser, name) is globals()[name], name
    for name in ("DefinitionError", "VerificationError", "InputError", "FuserError"):
        assert name in fuser.__all__


def load_example() -> object:
    require_public_package()
    spec = importlib.util.spec_from_file_location(
        "layer_norm_example", ROOT / "examples" / "layer_norm.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
@pytest.mark.parametrize("shape", [(3, 127), (1, 1), (127, 3)])
def test_softmax_reference(
    rng: np.random.Generator, dtype: DataType, shape: tuple[int, int]
) -> None:
    def build(fd: FusionDefinition) -> object:
        x = fd.define_tensor([-1, -1], dtype)
        xf = fd.ops.cast(x, DataType.Float)
        m = fd.ops.broadcast_in_dim(fd.ops.max(xf, 1), x.shape(), [0])
        e = fd.ops.exp(xf - m)
        s = fd.ops.broadcast_in_dim(fd.ops.sum(e, [-1]), x.shape(), [0])
        return fd.ops.cast(e / s, dtype)

    fd = define(build)
    np_dtype = np.float32 if dtype is DataType.Float else BF16_NP
    x = (rand(rng, shape) * 3).astype(np_dtype)
    (y,) = fd.reference([x])
    assert y.dtype == np_dtype
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    rtol = 1e-5 if dtype is DataType.Float else 2.0**-7
    assert_close(y, want, rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_bias_reference(rng: np.random.Generator, approximate: str) -> None:
    def build(fd: FusionDefinition) -> object:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        bias = fd.define_tensor([-1], DataType.BFloat16)
        b = fd.ops.broadcast_in_dim(bias, x.shape(), [1])
        return fd.ops.gelu(x + b, approximate=approximate)

    fd = define(build)
    assert out_types(fd) == ["tensor<?x?xbf16>"]
    x = rand(rng, (33, 127), BF16_NP)
    bias = rand(rng, (127,), BF16_NP)
    (y,) = fd.reference([x, bias])
    assert y.dtype == BF16_NP
    # x + b is rounded to bf16 (half math is cast back), then gelu runs in f32
    v = (x.astype(np.float64) + bias.astype(np.float64)).astype(BF16_NP).astype(np.float64)
    if approximate == "none":
        want = 0.5 * v * (1 + scipy.special.erf(v / math.sqrt(2)))
    else:
        want = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))
    assert_close(y, want, rtol=2.0**-7, atol=1e-6)


def test_rms_norm_reference(rng: np.random.Generator) -> None:
    def build(fd: FusionDefinition) -> object:
        x = fd.define_tensor([-1, -1], DataType.Half)
        w = fd.define_tensor([-1], DataType.Half)
        eps = fd.define_scalar(dtype=DataType.Double)
        xf = fd.ops.cast(x, DataType.Float)
        ms = fd.ops.sum(xf * xf, [1], keepdim=True) / fd.define_scalar(x_cols)
        inv = fd.ops.rsqrt(ms + eps)
        shape = x.shape()
        y = xf * fd.ops.broadcast_in_dim(inv, shape, [0, 1])
        return fd.ops.cast(y * fd.ops.broadcast_in_dim(w, shape, [1]), DataType.Half), inv

    x_cols = 127
    fd = define(build)
    assert out_types(fd) == ["tensor<?x?xf16>", "tensor<?x1xf32>"]
    x = rand(rng, (9, x_cols), np.float16)
    w = rand(rng, (x_cols,), np.float16)
    y, inv = fd.reference([x, w, 1e-6])
    x64 = x.astype(np.float64)
    want_inv = 1 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + 1e-6)
    assert_close(inv, want_inv, rtol=1e-5, atol=0)
    assert_close(y, x64 * want_inv * w.astype(np.float64), rtol=2.0**-10, atol=1e-4)


def test_layer_norm_reference(rng: np.random.Generator) -> None:
    example = load_example()
    fd = example.define_layer_norm()
    x = (rand(rng, (127, 3)) * 4 - 1).astype(BF16_NP)
    w, b = rand(rng, (3,), BF16_NP), rand(rng, (3,), BF16_NP)
    y, mean, invstd = fd.reference([x, w, b])
    want_y, want_mean, want_invstd = example.numpy_layer_norm(x, w, b)
    assert y.dtype == BF16_NP and mean.dtype == np.float32
    assert_close(mean, want_mean, rtol=1e-5, atol=1e-6)
    assert_close(invstd, want_invstd, rtol=1e-4, atol=1e-6)
    assert_close(y, want_y, rtol=2.0**-7, atol=1e-3)
    # compute_dtype: the f64 oracle
    _, mean64, _ = fd.reference([x, w, b], compute_dtype=DataType.Double)
    assert mean64.dtype == np.float64
    assert_close(mean64, want_mean, rtol=1e-12, atol=1e-12)


def test_layer_norm_example_runs_and_fails_on_wrong_results(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load_example()
    assert example.main() == 0
    assert "PASS: layer_norm 127x1000" in capsys.readouterr().out
    right = example.numpy_layer_norm

    def wrong(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        y, mean, invstd = right(x, w, b)
        return y * 1.05, mean, invstd

    monkeypatch.setattr(example, "numpy_layer_norm", wrong)
    assert example.main() == 1
    assert "FAIL: y[" in capsys.readouterr().out


def test_integer_promotion_reference(rng: np.random.Generator) -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        a = fd.define_tensor([-1], DataType.Int32)
        b = fd.define_tensor([-1], DataType.Int32)
        c = fd.define_tensor([-1], DataType.Bool)
        return a**2, a / b, fd.ops.div(a, b), c + 1, fd.ops.where(c, a, 0.5), fd.ops.maximum(c, c)

    fd = define(build)
    n = 127
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    c = rng.random(n) < 0.5
    sq, quot, idiv, cplus, sel, cmax = fd.reference([a, b, c])
    np.testing.assert_array_equal(sq, a.astype(np.int64) ** 2)
    assert sq.dtype == np.int32
    assert quot.dtype == np.float32
    np.testing.assert_allclose(quot, a / b, rtol=1e-6)
    np.testing.assert_array_equal(idiv, np.trunc(a / b).astype(np.int32))
    assert cplus.dtype == np.int64
    np.testing.assert_array_equal(cplus, c.astype(np.int64) + 1)
    assert sel.dtype == np.float32
    np.testing.assert_array_equal(sel, np.where(c, a.astype(np.float32), np.float32(0.5)))
    assert cmax.dtype == np.bool_
    np.testing.assert_array_equal(cmax, c)


def test_reference_reports_bad_inputs(rng: np.random.Generator) -> None:
    fd = define(lambda fd: fd.ops.exp(fd.define_tensor([-1, 3])))
    with pytest.raises(InputError):
        fd.reference([rand(rng, (5, 4))])
    with pytest.raises(InputError):
        fd.reference([])
    x = rand(rng, (5, 3))
    (y,) = fd.reference([x])
    assert_close(y, np.exp(x.astype(np.float64)), rtol=1e-6, atol=0)


def test_broadcast_extents_reference(rng: np.random.Generator) -> None:
    def build(fd: FusionDefinition) -> tuple[object, ...]:
        x = fd.define_tensor([-1, -1])
        one = fd.define_tensor([1, -1])
        s = fd.define_scalar(dtype=DataType.Float)
        row = fd.ops.broadcast_in_dim(one, x.shape(), [0, 1])
        fill = fd.ops.broadcast_in_dim(s, x.shape(), [])
        return x + row * fill, fd.ops.sum(x, [0], keepdim=True) - one

    fd = define(build)
    x, one = rand(rng, (7, 3)), rand(rng, (1, 3))
    y, z = fd.reference([x, one, 2.5])
    assert_close(y, x.astype(np.float64) + one * 2.5, rtol=1e-6, atol=1e-6)
    assert_close(z, x.astype(np.float64).sum(0, keepdims=True) - one, rtol=1e-5, atol=1e-5)


def test_output_types_follow_the_signature() -> None:
    fd = define(lambda fd: fd.ops.relu(fd.define_tensor([2, -1], DataType.Int)))
    t = fd.fusion.function_type.outputs.data[0]
    assert isinstance(t, TensorType) and str(t) == "tensor<2x?xi64>"


def test_threads_meeting_on_first_use_share_one_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads whose first calls meet get the definition's one compiler (a second one would
    compile again and keep its own cache counts)."""
    import fuser.compiler

    made: list[object] = []
    real = fuser.compiler.FusionCompiler

    class Slow(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            time.sleep(0.05)  # both threads are past the first check by now
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(fuser.compiler, "FusionCompiler", Slow)
    fd = define(lambda fd: fd.ops.exp(fd.define_tensor([-1])))
    barrier = threading.Barrier(2)
    got: list[object] = []

    def first_use() -> None:
        barrier.wait()
        got.append(fd._fusion_compiler())

    threads = [threading.Thread(target=first_use) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and got == [made[0], made[0]]


def _one_input_fusion() -> FusionDefinition:
    return define(lambda fd: fd.define_tensor([-1]) + 1)


@pytest.mark.parametrize(
    ("call", "error_type", "needles"),
    [
        (lambda fd, x: fd.reference(None), InputError, ("inputs must be a sequence", "None")),
        (lambda fd, x: fd.reference(x), InputError, ("sequence", "ndarray", "[x]")),
        (lambda fd, x: fd.reference("x"), InputError, ("sequence", "str")),
        (lambda fd, x: fd.reference([x, x]), InputError, ("takes 1 input", "got 2")),
        (lambda fd, x: fd.reference([x], compute_dtype="x"), InputError, ("compute_dtype",)),
        (lambda fd, x: fd.execute(None), InputError, ("inputs must be a sequence", "None")),
        (lambda fd, x: fd.execute(x), InputError, ("sequence", "ndarray")),
        (lambda fd, x: fd.execute([1, 2, 3]), InputError, ("takes 1 input", "got 3")),
        (lambda fd, x: fd.execute([]), InputError, ("takes 1 input", "got 0")),
        (lambda fd, x: fd.execute([None]), InputError, ("input #0", "expected a tensor")),
        (lambda fd, x: fd.compile(None, arch=90), InputError, ("inputs must be a sequence",)),
        (lambda fd, x: fd.compile([x], arch=9.0), CompilationError, ("'arch'", "'sm_90'", "9.0")),
        (lambda fd, x: fd.compile([x], arch="90"), CompilationError, ("'arch'", "'90'")),
        (lambda fd, x: fd.compile([x], arch="sm_1"), CompilationError, ("'arch'", "sm_1")),
        (lambda fd, x: fd.compile([x], arch=999), CompilationError, ("'arch'", "sm_999")),
    ],
)
def test_call_argument_errors_name_the_argument(
    call: Callable[..., object], error_type: type[Exception], needles: tuple[str, ...]
) -> None:
    fd = _one_input_fusion()
    with pytest.raises(error_type) as info:
        call(fd, np.ones(3, np.float32))
    for needle in needles:
        assert needle in str(info.value)


def test_compile_takes_an_int_arch() -> None:
    compiled = _one_input_fusion().compile([np.ones(3, np.float32)], arch=90)
    assert compiled.arch == "sm_90"


def test_defining_a_fusion_imports_no_compiler() -> None:
    """`import fuser` and a definition need the dialects only: the compiler, cuda-python and
    numpy (half a second to import) wait for the first compile (issue 13's import target)."""
    probe = (
        "import sys\n"
        "from fuser import DataType, FusionDefinition\n"
        "with FusionDefinition('f', streams=2, welford='never') as fd:\n"
        "    fd.add_output(fd.ops.exp(fd.define_tensor([-1], DataType.Float)))\n"
        "heavy = ('fuser.compiler', 'cuda.bindings', 'numpy', 'fuser.transforms.schedulers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_import_fuser_alone_loads_no_frontend() -> None:
    """`import fuser` loads the errors only (a few ms, issue 13's target is 150); the public
    names load their modules on first use, and an unknown one is an AttributeError."""
    probe = (
        "import sys\n"
        "import fuser\n"
        "print(sorted(m for m in ('xdsl', 'fuser.frontend', 'fuser.dtypes') if m in sys.modules))\n"
        "print(fuser.DataType.Float, 'FusionDefinition' in dir(fuser))\n"
        "print(hasattr(fuser, 'Nope'))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["[]", "DataType.Float True", "False"], out.stdout


@pytest.mark.parametrize("name", ["sum(-1)", "a__b", "_x_", "((", "rms norm (bf16)"])
def test_any_fusion_name_gives_valid_kernel_names(name: str) -> None:
    """A definition's name may be any text: its kernels' names keep its letters and digits
    with single underscores (C++ reserves `__`), and NVRTC compiles them."""
    with FusionDefinition(name) as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.sum(x, [0]))
    for shape in ((64, 64), (262144, 16)):  # one kernel; a split column sum's two
        compiled = fd.compile([np.zeros(shape, np.float32)], arch="sm_90")
        for k in compiled.kernels:
            assert k.name.startswith("fuser_") and "__" not in k.name and not k.name.endswith("_")
