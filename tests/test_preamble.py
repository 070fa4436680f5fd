"""Which support headers a generated kernel includes (`fuser.codegen.preamble`): only those whose
helpers its code uses, and CUDA's f16/bf16 headers only where it uses those types. No NVRTC."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.parser import Parser

from fuser import DataType, FusionDefinition
from fuser.codegen.cuda import emit_cuda
from fuser.codegen.preamble import HEADERS, INCLUDE_DIR, includes, wgmma64_header
from fuser.compiler import FusionCompiler
from fuser.dialects import get_all_dialects, kernel
from fuser.transforms.schedule import schedule_fusion

ROOT = Path(__file__).resolve().parent.parent
MATMUL = '#include "fuser/mm_'
BF16_H = "#include <cuda_bf16.h>"
FP16_H = "#include <cuda_fp16.h>"


def _context() -> Context:
    ctx = Context()
    for name, factory in (xdsl_dialects() | get_all_dialects()).items():
        ctx.register_dialect(name, factory)
    return ctx


def kernel_source(fd: FusionDefinition, inputs: list[np.ndarray], arch: str = "sm_90") -> str:
    """The CUDA source the compiler would hand NVRTC for the fusion's single kernel."""
    info = FusionCompiler(fd.fusion).info_for(inputs, arch=arch)
    return emit_cuda(schedule_fusion(fd.fusion, info, "k").func)


def add(dt: DataType) -> FusionDefinition:
    with FusionDefinition("add") as fd:
        a = fd.define_tensor([-1], dt)
        b = fd.define_tensor([-1], dt)
        fd.add_output(fd.ops.add(a, b))
    return fd


def row_sum(dt: DataType) -> FusionDefinition:
    with FusionDefinition("row_sum") as fd:
        x = fd.define_tensor([-1, -1], dt)
        fd.add_output(fd.ops.sum(x, [1]))
    return fd


def matmul(dt: DataType) -> FusionDefinition:
    with FusionDefinition("mm") as fd:
        a = fd.define_tensor([-1, -1], dt)
        b = fd.define_tensor([-1, -1], dt)
        fd.add_output(fd.ops.matmul(a, b))
    return fd


def prefix(source: str) -> list[str]:
    """The `#include` lines the source starts with (then a blank line, then the kernels)."""
    head, blank, _ = source.partition("\n\n")
    assert blank and all(line.startswith("#include ") for line in head.splitlines()), head
    return head.splitlines()


def test_a_pointwise_f32_kernel_includes_only_the_core_header() -> None:
    source = kernel_source(add(DataType.Float), [np.ones(4096, np.float32)] * 2)
    assert prefix(source) == ['#include "fuser/core.cuh"']
    assert MATMUL not in source and BF16_H not in source and FP16_H not in source


@pytest.mark.parametrize(
    ("dt", "array", "wanted", "unwanted"),
    [
        (DataType.BFloat16, ml_dtypes.bfloat16, BF16_H, FP16_H),
        (DataType.Half, np.float16, FP16_H, BF16_H),
    ],
)
def test_a_half_kernel_includes_its_cuda_header_only(
    dt: DataType, array: type, wanted: str, unwanted: str
) -> None:
    source = kernel_source(add(dt), [np.ones(4096, array)] * 2)
    assert wanted in prefix(source) and unwanted not in source and MATMUL not in source


def test_a_reduction_includes_the_reductions_not_welford_or_matmul() -> None:
    source = kernel_source(row_sum(DataType.Float), [np.ones((64, 4096), np.float32)])
    lines = prefix(source)
    assert '#include "fuser/reduce.cuh"' in lines and "fuser::block_reduce" in source
    assert not any("welford" in line or "mm_" in line or "<cuda" in line for line in lines)


def test_welford_includes_its_header() -> None:
    text = (ROOT / "lit_tests/dialects/kernel/reductions.mlir").read_text()
    module = Parser(_context(), text.replace("// -----", "")).parse_module()
    (welford,) = [
        f for f in module.walk() if isinstance(f, kernel.FuncOp) and "welford" in f.sym_name.data
    ]
    source = emit_cuda(welford)
    assert "fuser::block_welford" in source or "fuser::warp_welford" in source
    assert '#include "fuser/welford.cuh"' in prefix(source) and MATMUL not in source


@pytest.mark.parametrize(
    ("dt", "array", "arch", "tile"),
    [
        (DataType.BFloat16, ml_dtypes.bfloat16, "sm_90", "mm_wgmma"),
        (DataType.Half, np.float16, "sm_80", "mm_mma"),
        (DataType.Float, np.float32, "sm_90", "mm_simt"),
    ],
)
def test_a_matmul_includes_its_tile_only(dt: DataType, array: type, arch: str, tile: str) -> None:
    source = kernel_source(matmul(dt), [np.ones((512, 512), array)] * 2, arch)
    tiles = [line for line in prefix(source) if MATMUL in line]
    assert tiles == [f'#include "fuser/{tile}.cuh"']


def test_includes_are_sorted_and_ignore_comments() -> None:
    code = "// fuser::mm::Mma<...> and __nv_bfloat16 in a comment\nfloat x = fuser::maximum(a, b);"
    assert includes(code) == ['#include "fuser/core.cuh"', '#include "fuser/math.cuh"']
    code = "__half h = __float2half_rn(fuser::pow(x, y)); auto r = fuser::block_reduce<>(h);"
    found = includes(code)
    assert found == sorted(found) and FP16_H in found and '#include "fuser/reduce.cuh"' in found


def test_every_header_in_the_table_exists_and_no_other() -> None:
    ours = {h.include.strip('"') for h in HEADERS if h.include.startswith('"')}
    files = {f"fuser/{p.name}" for p in (INCLUDE_DIR / "fuser").glob("*.cuh")}
    assert ours <= files
    assert files - ours == {"fuser/mm_base.cuh", "fuser/mm_wgmma64.cuh"}  # included by others


def test_the_generated_wgmma_header_is_current() -> None:
    path = INCLUDE_DIR / "fuser" / "mm_wgmma64.cuh"
    assert path.read_text() == wgmma64_header(), (
        "regenerate it: python -c 'from fuser.codegen.preamble import INCLUDE_DIR, "
        'wgmma64_header; (INCLUDE_DIR / "fuser/mm_wgmma64.cuh").write_text(wgmma64_header())\''
    )
