"""The persistent kernels' slot loops and the kernel comments.

A persistent kernel holds each thread's row elements (its *slots*) in local arrays that loops
marked `unroll` index: the IR holds each computation once whatever the number of slots, nvcc
unrolls the loops fully and keeps the arrays in registers. `kernel.comment` ops are built only
where a kernel is printed: by `fuser-opt` (the default), not by the runtime compiler unless
`FUSER_DUMP` shows kernel IR or CUDA. These tests pin the op counts, the loops, the absence of
local memory in the compiled kernels, and where comments appear.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import UnitAttr, VectorType

from fuser import DataType, FusionDefinition, dump
from fuser.codegen.cuda import emit_cuda
from fuser.dialects import kernel
from fuser.runtime.compiled_kernel import nvrtc_compile
from fuser.transforms.schedule import fusion_info, schedule_fusion
from fuser.transforms.schedulers.info import DeviceInfo
from fuser.transforms.schedulers.kernel_builder import kernel_comments

EPS = 1e-5


def layer_norm() -> FusionDefinition:
    with FusionDefinition("layer_norm") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        xf = fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
        invstd = fd.ops.rsqrt(fd.ops.add(var, EPS))
        shape = x.shape()
        mb = fd.ops.broadcast_in_dim(mean, shape=shape, broadcast_dims=[0])
        ib = fd.ops.broadcast_in_dim(invstd, shape=shape, broadcast_dims=[0])
        wb = fd.ops.broadcast_in_dim(
            fd.ops.cast(w, DataType.Float), shape=shape, broadcast_dims=[1]
        )
        bb = fd.ops.broadcast_in_dim(
            fd.ops.cast(b, DataType.Float), shape=shape, broadcast_dims=[1]
        )
        y = fd.ops.add(fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, mb), ib), wb), bb)
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    return fd


def softmax() -> FusionDefinition:
    with FusionDefinition("softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        m = fd.ops.max(x, dims=[1], keepdim=False)
        e = fd.ops.exp(
            fd.ops.sub(x, fd.ops.broadcast_in_dim(m, shape=x.shape(), broadcast_dims=[0]))
        )
        s = fd.ops.sum(e, dims=[1], keepdim=False)
        fd.add_output(
            fd.ops.div(e, fd.ops.broadcast_in_dim(s, shape=x.shape(), broadcast_dims=[0]))
        )
    return fd


CASES: list[tuple[str, Callable[[], FusionDefinition], list[tuple[int, ...]]]] = [
    ("layer_norm_4096", layer_norm, [(16384, 4096), (4096,), (4096,)]),
    ("layer_norm_1024", layer_norm, [(16384, 1024), (1024,), (1024,)]),
    ("softmax_8192", softmax, [(8192, 8192)]),
]


def _kernel(
    define: Callable[[], FusionDefinition], shapes: list[tuple[int, ...]], comments: bool
) -> kernel.FuncOp:
    fusion = define().fusion
    scheduled = schedule_fusion(
        fusion, fusion_info(fusion, shapes, DeviceInfo(arch="sm_90")), comments=comments
    )
    assert scheduled.scheduler.name == "persistent"
    return scheduled.func


@pytest.mark.parametrize(("name", "define", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_slot_code_is_built_once_not_per_slot(
    name: str, define: Callable[[], FusionDefinition], shapes: list[tuple[int, ...]]
) -> None:
    """The kernel IR does not grow with the slots a thread holds (32 here): about 200 ops,
    where unrolling in Python built 850 to 1250 (and 400 comments more)."""
    func = _kernel(define, shapes, comments=False)
    ops = Counter(op.name for op in func.walk())
    assert sum(ops.values()) < 260, ops.most_common(8)
    assert ops["kernel.comment"] == 0
    # every loop over the slots is marked for full unrolling, with constant bounds
    loops = [op for op in func.walk() if isinstance(op, scf.ForOp)]
    assert loops
    for loop in loops:
        assert isinstance(loop.attributes.get("unroll"), UnitAttr)
        assert all(isinstance(v.owner, arith.ConstantOp) for v in (loop.lb, loop.ub))


def test_op_count_does_not_depend_on_the_row_length() -> None:
    short = _kernel(layer_norm, CASES[1][2], comments=False)
    long = _kernel(layer_norm, CASES[0][2], comments=False)
    assert abs(len(list(short.walk())) - len(list(long.walk()))) <= 8


@pytest.mark.parametrize(("name", "define", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_register_arrays_stay_in_registers(
    name: str, define: Callable[[], FusionDefinition], shapes: list[tuple[int, ...]]
) -> None:
    """Every loop of the CUDA is `#pragma unroll`, and ptxas finds nothing for local memory:
    no stack frame, no spills (a loop nvcc did not unroll would index the arrays at run time
    and put them in local memory)."""
    func = _kernel(define, shapes, comments=False)
    source = emit_cuda(func)
    body = source[source.index('extern "C"') :]
    lines = body.splitlines()
    loops = [k for k, line in enumerate(lines) if line.strip().startswith("for (")]
    assert len(loops) >= 6
    assert all(lines[k - 1].strip() == "#pragma unroll" for k in loops)
    assert "__float2bfloat16_rn(0.0f)" not in body  # zero fills need no conversion
    _, log = nvrtc_compile(source, func.sym_name.data, "sm_90", ["-Xptxas", "-v"])
    assert re.search(r"\b0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", log), log


def test_vector_accesses_stay_16_bytes() -> None:
    func = _kernel(layer_norm, CASES[0][2], comments=False)
    widths = [
        op.result.type.get_shape()[0]
        for op in func.walk()
        if isinstance(op, kernel.LoadOp) and isinstance(op.result.type, VectorType)
    ]
    stores = [
        op
        for op in func.walk()
        if isinstance(op, kernel.StoreOp) and isinstance(op.value.type, VectorType)
    ]
    assert widths == [8, 8, 8]  # x, w and b: one 16-byte load per chunk, in a loop of 4
    assert len(stores) == 1


def test_comments_follow_the_option() -> None:
    with_comments = _kernel(layer_norm, CASES[0][2], comments=True)
    texts = [op.text.data for op in with_comments.walk() if isinstance(op, kernel.CommentOp)]
    assert "reduce fusion.var_mean" in " ".join(texts)
    assert "// fusion.cast" in emit_cuda(with_comments)
    with kernel_comments(False):  # None: the caller's setting
        fusion = layer_norm().fusion
        info = fusion_info(fusion, CASES[0][2], DeviceInfo(arch="sm_90"))
        quiet = schedule_fusion(fusion, info).func
    assert not any(isinstance(op, kernel.CommentOp) for op in quiet.walk())


def _inputs() -> list[np.ndarray]:
    bf16 = ml_dtypes.bfloat16
    return [np.ones((64, 1024), bf16), np.ones(1024, bf16), np.ones(1024, bf16)]


def test_runtime_compiler_builds_no_comments() -> None:
    compiled = layer_norm().compile(_inputs(), arch="sm_90")
    (summary,) = compiled.kernels
    assert summary.scheduler == "persistent"
    body = summary.source[summary.source.index('extern "C"') :]
    assert "//" not in body


@pytest.mark.parametrize("stage", ["kernel_ir", "cuda"])
def test_a_dump_of_kernels_brings_comments_back(
    stage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        dump.configure(stage)
        compiled = layer_norm().compile(_inputs(), arch="sm_90")
    finally:
        dump.configure("")
    err = capsys.readouterr().err
    assert f"===== FUSER_DUMP {stage}:" in err
    assert "fusion.var_mean" in err
    assert "// fusion.cast" in compiled.kernels[0].source


def test_other_dumps_do_not_bring_comments() -> None:
    try:
        dump.configure("launch_params")
        compiled = layer_norm().compile(_inputs(), arch="sm_90")
    finally:
        dump.configure("")
    source = compiled.kernels[0].source
    assert "//" not in source[source.index('extern "C"') :]
