"""Tests of the matmul scheduler without a GPU: what it accepts and why it rejects, its heuristics
(tiles, operand loads for each layout, index width), the `#kernel.matmul` config and its ops,
NVRTC compilation of its kernels for sm_80 and sm_90, and its kernels' epilogue logic.

The epilogue, the tile order, batch and split offsets and the predicates are kernel IR, run here
by the reduction tests' `KernelSim` (tests/test_reduction_schedulers.py) extended with a model of
the two matmul ops: `kernel.matmul_mainloop` fills each thread's accumulators with the products
the C++ tile computes for the elements `kernel.matmul_frag` places them at (the mapping of the
preamble's `Mma`/`Simt`, restated in `frag`). The C++ mainloop itself runs only on a GPU
(tests/gpu/test_matmul_gpu.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from test_reduction_schedulers import (
    DTYPES,
    Buffer,
    KernelSim,
    _buffer,
    fusion_info,
    parse_fusion,
    random_input,
)
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.utils.exceptions import VerifyException

from fuser import DataType, FusionDefinition
from fuser.codegen.cuda import emit_cuda
from fuser.dialects import kernel
from fuser.dialects.fusion import BF16, F16, F32, F64, FusionOp
from fuser.runtime.compiled_kernel import nvrtc_compile
from fuser.runtime.reference import evaluate
from fuser.transforms.schedulers import SCHEDULERS, propose
from fuser.transforms.schedulers.base import SchedulingError
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.matmul import MatmulParams, MatmulScheduler, choose_load
from fuser.transforms.schedulers.matmul_tiles import matmul_tile
from fuser.transforms.schedulers.shapes import value_shapes

MATMUL = MatmulScheduler()
NAMES = {F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}


# --------------------------------------------------------------------------------------------
# Fusions
# --------------------------------------------------------------------------------------------


def linear(el: str, act: str = "gelu", rank: int = 2, out: str | None = None) -> str:
    """`act(a @ b + bias)` in f32, stored as `out` (default: the operand type); batched for
    rank 3 (the bias broadcast along the batch and M dims)."""
    out = out or el
    dims = "x".join(["?"] * rank)
    t, tf, to = (f"tensor<{dims}x{x}>" for x in (el, "f32", out))
    sizes = ", ".join(f"%d{i}" for i in range(rank - 1))
    dim_ops = "\n".join(f"  %d{i} = fusion.dim %a[{i}] : {t}" for i in range(rank - 1))

    def to_type(name: str, value: str, src: str, dst: str, shape: str) -> str:
        if src == dst:
            return f"  %{name} = fusion.set %{value} : tensor<{shape}x{src}>"
        return f"  %{name} = fusion.cast %{value} : tensor<{shape}x{src}> -> tensor<{shape}x{dst}>"

    activation = {"gelu": "fusion.gelu %s tanh", "relu": "fusion.relu %s"}[act]
    return f"""
fusion.fusion @linear(%a: {t}, %b: {t}, %bias: tensor<?x{el}>) -> ({to}) {{
{dim_ops}
  %c = fusion.matmul %a, %b : {t}, {t} -> {t}
{to_type("cf", "c", el, "f32", dims)}
{to_type("bf", "bias", el, "f32", "?")}
  %bb = fusion.broadcast_in_dim %bf [{rank - 1}] sizes({sizes}) : tensor<?xf32> -> {tf}
  %s = fusion.add %cf, %bb : {tf}
  %y = {activation} : {tf}
{to_type("o", "y", "f32", out, dims)}
  fusion.output %o : {to}
}}
"""


def plain(el: str, rank: int = 2) -> str:
    dims = "x".join(["?"] * rank)
    t = f"tensor<{dims}x{el}>"
    return f"""
fusion.fusion @mm(%a: {t}, %b: {t}) -> ({t}) {{
  %c = fusion.matmul %a, %b : {t}, {t} -> {t}
  fusion.output %c : {t}
}}
"""


def partial(el: str, splits: int, rank: int = 2) -> str:
    dims = "x".join(["?"] * rank)
    t = f"tensor<{dims}x{el}>"
    acc = "f64" if el == "f64" else "f32"
    p = f"tensor<{splits}x{dims}x{acc}>"
    return f"""
fusion.fusion @part(%a: {t}, %b: {t}) -> ({p}) {{
  %p = fusion.matmul %a, %b splits({splits}) : {t}, {t} -> {p}
  fusion.output %p : {p}
}}
"""


def info(fusion: FusionOp, *metas: TensorMeta | None, device: DeviceInfo | None = None):
    return FusionInfo(tuple(metas), device or DeviceInfo())


def contiguous(*shape: int, alignment: int = 16) -> TensorMeta:
    return TensorMeta.contiguous(shape, alignment)


def transposed(*shape: int) -> TensorMeta:
    """The last two dims swapped in memory (`x.mT` of a contiguous tensor)."""
    batch = TensorMeta.contiguous(shape).strides[:-2]
    return TensorMeta(tuple(shape), (*batch, 1, shape[-2]), 16)


# --------------------------------------------------------------------------------------------
# What it accepts
# --------------------------------------------------------------------------------------------


def test_accepts_a_linear_layer_and_proposes_matmul() -> None:
    f = parse_fusion(linear("bf16"))
    i = info(f, contiguous(1000, 4096), contiguous(4096, 1000), contiguous(1000))
    assert MATMUL.accepts(f, i)
    scheduler, params = propose(f, i)
    assert scheduler.name == "matmul" and isinstance(params, MatmulParams)
    assert [s.name for s in SCHEDULERS][-1] == "matmul"


@pytest.mark.parametrize("splits", [None, 3])
def test_accepts_batched_and_split_k_partials(splits: int | None) -> None:
    f = parse_fusion(plain("f16", 3) if splits is None else partial("f16", splits, 3))
    i = info(f, contiguous(5, 17, 33), contiguous(5, 33, 9))
    assert MATMUL.accepts(f, i)
    launch = MATMUL.launch_config(f, MATMUL.heuristics(f, i), i)
    assert launch.grid == (1, 1, 5 * (splits or 1))


REJECTED = [
    (
        "no matmul",
        """fusion.fusion @f(%a: tensor<?xf32>) -> (tensor<?xf32>) {
  %b = fusion.neg %a : tensor<?xf32>
  fusion.output %b : tensor<?xf32>
}""",
        "no 'fusion.matmul'",
    ),
    (
        "two matmuls",
        """fusion.fusion @f(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>)
    -> (tensor<?x?xbf16>, tensor<?x?xbf16>) {
  %c = fusion.matmul %a, %b : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  %d = fusion.matmul %a, %b : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  fusion.output %c, %d : tensor<?x?xbf16>, tensor<?x?xbf16>
}""",
        "2 matmuls ('fusion.matmul' (%d) is the second): one kernel takes one",
    ),
    (
        "reduction epilogue",
        """fusion.fusion @f(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %c = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %s = fusion.sum %c [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}""",
        "'fusion.sum' (%s) is not a pointwise op: only a pointwise epilogue can follow a matmul",
    ),
    (
        "prologue",
        """fusion.fusion @f(%a: tensor<?x?xf32>, %b: tensor<?x?xbf16>) -> (tensor<?x?xbf16>) {
  %h = fusion.cast %a : tensor<?x?xf32> -> tensor<?x?xbf16>
  %c = fusion.matmul %h, %b : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  fusion.output %c : tensor<?x?xbf16>
}""",
        "'fusion.matmul' (%c) lhs is computed in the fusion (by 'fusion.cast' (%h)): the "
        "operands of a matmul must be fusion inputs",
    ),
    (
        "output of another shape",
        """fusion.fusion @f(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %v: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) {
  %c = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %w = fusion.neg %v : tensor<?xf32>
  fusion.output %c, %w : tensor<?x?xf32>, tensor<?xf32>
}""",
        "output #1 has type tensor<?xf32>; every output must have the matmul's shape [?, ?]",
    ),
    (
        "segment_set",
        """fusion.fusion @f(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %c = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %d = fusion.segment_set %c : tensor<?x?xf32>
  fusion.output %d : tensor<?x?xf32>
}""",
        "'fusion.segment_set' (%d) marks a kernel boundary",
    ),
]


@pytest.mark.parametrize(
    ("text", "reason"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_rejects_with_a_reason(text: str, reason: str) -> None:
    f = parse_fusion(text)
    metas = [
        TensorMeta.contiguous([4] * a.type.get_num_dims())
        if isinstance(a.type, TensorType)
        else None
        for a in f.inputs
    ]
    verdict = MATMUL.accepts(f, FusionInfo(tuple(metas)))
    assert not verdict and reason in verdict.reason, verdict.reason


def test_rejects_shapes_that_do_not_fit() -> None:
    f = parse_fusion(linear("bf16"))
    wrong_bias = info(f, contiguous(8, 16), contiguous(16, 24), contiguous(7))
    verdict = MATMUL.accepts(f, wrong_bias)
    assert not verdict and "'fusion.add' operands have shapes [8, 24], [8, 7]" in verdict.reason
    g = parse_fusion(plain("bf16", 3))
    many = info(g, contiguous(70000, 2, 2), contiguous(70000, 2, 2))
    verdict = MATMUL.accepts(g, many)
    assert not verdict and "70000 leading (split and batch) indices" in verdict.reason
    tiny_smem = DeviceInfo(max_shared_memory_per_block=24 * 1024)
    metas = (contiguous(1, 64, 64), contiguous(1, 64, 64))
    verdict = MATMUL.accepts(g, info(g, *metas, device=tiny_smem))
    # wgmma's fewest stages, three of 16 KiB, and the tile's 1 KiB of alignment
    assert not verdict and "50176 bytes of shared memory" in verdict.reason
    # fewer stages where a block's shared memory is smaller: 3 of 16 KiB (and the alignment) in
    # 64 KiB for wgmma, 3 in 48 KiB for mma.sync
    small = DeviceInfo(max_shared_memory_per_block=64 * 1024)
    assert MATMUL.heuristics(g, info(g, *metas, device=small)).stages == 3
    small_80 = DeviceInfo(arch="sm_80", max_shared_memory_per_block=48 * 1024)
    assert MATMUL.heuristics(g, info(g, *metas, device=small_80)).stages == 3


def test_no_scheduler_error_names_the_matmul_reason() -> None:
    f = parse_fusion(REJECTED[2][1])
    with pytest.raises(SchedulingError, match=r"matmul: 'fusion.sum' \(%s\) is not a pointwise"):
        propose(f, FusionInfo((contiguous(4, 4), contiguous(4, 4))))


# --------------------------------------------------------------------------------------------
# Heuristics
# --------------------------------------------------------------------------------------------


def params(text: str, *metas: TensorMeta) -> MatmulParams:
    f = parse_fusion(text)
    return MATMUL.heuristics(f, info(f, *metas))


SM_80 = DeviceInfo(arch="sm_80", max_shared_memory_per_block=163 * 1024)


def test_tiles_follow_matmul_tile() -> None:
    big = params(plain("bf16"), contiguous(4096, 4096), contiguous(4096, 4096))
    assert (big.engine, big.tile, big.warps, big.stages, big.block) == (
        "wgmma",
        (128, 256, 64),
        (8, 1),
        4,
        (256, 1, 1),
    )
    assert big.shared_bytes == 4 * (128 + 256) * 64 * 2 + 1024
    f = parse_fusion(plain("bf16"))
    ampere = MATMUL.heuristics(f, info(f, *[contiguous(4096, 4096)] * 2, device=SM_80))
    assert (ampere.engine, ampere.tile, ampere.warps, ampere.stages) == (
        "mma",
        (128, 256, 32),
        (2, 4),
        5,
    )
    assert ampere.shared_bytes == 5 * (128 + 256) * 32 * 2
    small_smem = DeviceInfo(arch="sm_80", max_shared_memory_per_block=100 * 1024)
    clamped = MATMUL.heuristics(f, info(f, *[contiguous(4096, 4096)] * 2, device=small_smem))
    assert (clamped.stages, clamped.shared_bytes) == (4, 4 * (128 + 256) * 32 * 2)
    # a long K on a small output: 64 x 128 tiles (split-K's partials); a short one: 64 x 64
    skinny = params(plain("bf16"), contiguous(256, 65536), contiguous(65536, 256))
    assert (skinny.tile, skinny.warps, skinny.block) == ((64, 128, 64), (4, 1), (128, 1, 1))
    assert matmul_tile(256, 256, 65536, BF16).count(256, 256) == 8
    short = params(plain("bf16"), contiguous(256, 4096), contiguous(4096, 256))
    assert short.tile == (64, 64, 64) and short.block == (128, 1, 1)
    narrow = params(plain("bf16"), contiguous(128, 32768), contiguous(32768, 128))
    assert narrow.tile == (64, 64, 64)
    f32 = params(plain("f32"), contiguous(4096, 512), contiguous(512, 4096))
    assert (f32.engine, f32.tile, f32.warps, f32.stages) == ("simt", (128, 128, 8), (8, 1), 2)
    f64 = params(plain("f64"), contiguous(17, 5), contiguous(5, 9))
    assert (f64.engine, f64.tile, f64.load_a, f64.load_b) == (
        "simt",
        (64, 64, 8),
        "k_elements",
        "mn_elements",
    )


LAYOUTS = [
    # (A meta, B meta, load_a, load_b)
    (contiguous(128, 64), contiguous(64, 96), "k_async", "mn_async"),
    (transposed(128, 64), transposed(64, 96), "mn_async", "k_async"),
    (contiguous(128, 17), contiguous(17, 96), "k_elements", "mn_async"),  # K = 17: odd rows
    (
        contiguous(128, 64, alignment=4),
        contiguous(64, 96, alignment=8),
        "k_elements",
        "mn_elements",
    ),
    (TensorMeta((128, 64), (128, 2), 16), contiguous(64, 96), "k_elements", "mn_async"),
    (contiguous(1, 64), contiguous(64, 1), "k_async", "k_async"),  # M = N = 1
]


@pytest.mark.parametrize(("a", "b", "load_a", "load_b"), LAYOUTS)
def test_operand_loads_follow_the_layout(
    a: TensorMeta, b: TensorMeta, load_a: str, load_b: str
) -> None:
    p = params(plain("bf16"), a, b)
    assert (p.load_a, p.load_b) == (load_a, load_b)


def test_split_chunks_that_break_alignment_load_elements() -> None:
    a, b = contiguous(64, 1024), contiguous(1024, 64)
    assert params(partial("bf16", 4), a, b).load_a == "k_async"  # chunks of 256
    assert params(partial("bf16", 3), a, b).load_a == "k_elements"  # chunks of 342
    assert params(partial("bf16", 3), a, b).load_b == "mn_async"
    load = choose_load(a, -2, -1, 2, 250, kernel.MatmulEngine.MMA)
    assert load == kernel.MatmulLoad.K_ELEMENTS
    assert choose_load(a, -2, -1, 2, 256, kernel.MatmulEngine.MMA) == kernel.MatmulLoad.K_ASYNC
    # B's chunks move along its rows: any chunk keeps them aligned
    assert choose_load(b, -1, -2, 2, 250, kernel.MatmulEngine.MMA) == kernel.MatmulLoad.MN_ASYNC


def test_broadcast_operands_load_elements() -> None:
    """A dim broadcast with stride 0 is not contiguous: 16-byte copies along it would read
    memory past the one element it repeats (the GPU fuzzer's find: B expanded from [1, 1])."""
    mma = kernel.MatmulEngine.MMA
    everywhere = TensorMeta((8, 2), (0, 0), 16)
    assert choose_load(everywhere, -1, -2, 2, None, mma) == kernel.MatmulLoad.K_ELEMENTS
    rows_repeat = TensorMeta((64, 64), (0, 1), 16)  # one [64] vector repeated along dim 0
    # as B, each k row is that vector: copies along N stay inside it
    assert choose_load(rows_repeat, -1, -2, 2, None, mma) == kernel.MatmulLoad.MN_ASYNC
    # as A, each M row is that vector: copies along K stay inside it
    assert choose_load(rows_repeat, -2, -1, 2, None, mma) == kernel.MatmulLoad.K_ASYNC
    columns_repeat = TensorMeta((64, 64), (1, 0), 16)  # as A: K broadcast, M contiguous
    assert choose_load(columns_repeat, -2, -1, 2, None, mma) == kernel.MatmulLoad.MN_ASYNC
    assert choose_load(columns_repeat, -1, -2, 2, None, mma) == kernel.MatmulLoad.K_ASYNC
    extent_one = TensorMeta((64, 1), (1, 1), 16)  # an extent-1 K has no stride to speak of
    assert choose_load(extent_one, -2, -1, 2, None, mma) == kernel.MatmulLoad.MN_ASYNC


def test_batch_strides_and_index_width() -> None:
    odd_batch = TensorMeta((3, 64, 64), (4100, 64, 1), 16)
    p = params(plain("bf16", 3), odd_batch, contiguous(3, 64, 64))
    assert p.load_a == "k_elements" and p.index_bits == 32 and p.pair_stores
    huge = params(plain("bf16"), contiguous(65536, 64), contiguous(64, 65537))
    assert huge.index_bits == 64 and not huge.pair_stores


# --------------------------------------------------------------------------------------------
# The config attribute and the ops
# --------------------------------------------------------------------------------------------


def test_config_verifies_its_tile() -> None:
    ok = kernel.MatmulConfigAttr(
        kernel.MatmulEngine.MMA, BF16, (64, 64, 32), (2, 2), 4, *[kernel.MatmulLoad.K_ASYNC] * 2
    )
    ok.verify()
    assert (ok.threads, ok.acc_size, ok.shared_bytes()) == (128, 32, 4 * 128 * 32 * 2)
    bad = [
        (
            (kernel.MatmulEngine.MMA, F32, (64, 64, 32), (2, 2), 4),
            "mma tiles take f16, bf16 operands, not f32",
        ),
        ((kernel.MatmulEngine.MMA, F16, (64, 64, 16), (2, 2), 4), "at least 32"),
        ((kernel.MatmulEngine.MMA, F16, (48, 64, 32), (2, 2), 4), "multiples of 16 per warp"),
        ((kernel.MatmulEngine.SIMT, F64, (64, 64, 8), (2, 2), 2), "warps 8x1 and stages 2"),
    ]
    for args, message in bad:
        loads = [kernel.MatmulLoad.K_ELEMENTS] * 2
        with pytest.raises(VerifyException, match=message):
            kernel.MatmulConfigAttr(*args, *loads).verify()


# --------------------------------------------------------------------------------------------
# NVRTC: every element type and form compiles for sm_80 and sm_90
# --------------------------------------------------------------------------------------------

COMPILE_CASES = [
    (
        "bf16_linear",
        linear("bf16"),
        [contiguous(1000, 4096), contiguous(4096, 1000), contiguous(1000)],
    ),
    (
        "f16_linear_relu_f32",
        linear("f16", "relu", out="f32"),
        [contiguous(17, 64), contiguous(64, 33), contiguous(33)],
    ),
    (
        "bf16_batched_transposed",
        linear("bf16", rank=3),
        [transposed(3, 100, 64), transposed(3, 64, 50), contiguous(50)],
    ),
    ("f16_big", plain("f16"), [contiguous(4096, 4096), transposed(4096, 4096)]),
    ("bf16_elements", plain("bf16"), [contiguous(33, 17), contiguous(17, 9)]),
    ("bf16_splits", partial("bf16", 4), [contiguous(256, 4096), contiguous(4096, 256)]),
    ("bf16_wide_splits", partial("bf16", 32), [contiguous(256, 65536), contiguous(65536, 256)]),
    ("bf16_medium", plain("bf16"), [contiguous(1152, 512), contiguous(512, 1024)]),
    ("f32_linear", linear("f32"), [contiguous(300, 200), contiguous(200, 100), contiguous(100)]),
    ("f32_batched_splits", partial("f32", 2, 3), [contiguous(2, 33, 65), transposed(2, 65, 31)]),
    ("f64_plain", plain("f64"), [contiguous(17, 5), contiguous(5, 9)]),
]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_matmul_kernel_compiles(arch: str) -> None:
    funcs = []
    tiles = set()
    for name, text, metas in COMPILE_CASES:
        f = parse_fusion(text)
        i = info(f, *metas, device=DeviceInfo(arch=arch))
        p = MATMUL.heuristics(f, i)
        tiles.add(p.tile[:2])
        func = MATMUL.emit(f, p, name)
        func.verify()
        funcs.append(func)
    source = emit_cuda(ModuleOp(funcs))
    cubin, log = nvrtc_compile(source, COMPILE_CASES[0][0], arch, ["-Xptxas=-warn-spills"])
    assert cubin and "warning" not in log.lower(), log
    assert "::mainloop(acc" in source and '#include "fuser/mm_' in source  # the tiles
    # Hopper's tensor-core tiles are wgmma's (sm_90a), an A100's mma.sync's
    tensor_core = "fuser::mm::Wgmma<" if arch == "sm_90" else "fuser::mm::Mma<"
    assert tensor_core in source
    assert {(128, 256), (128, 128), (64, 128), (64, 64)} <= tiles, tiles


# --------------------------------------------------------------------------------------------
# The kernels' logic on the CPU
# --------------------------------------------------------------------------------------------


def frag(config: kernel.MatmulConfigAttr, tid: int, i: int) -> tuple[int, int]:
    """Where accumulator `i` of thread `tid` lies in the tile: the preamble's frag_row/col."""
    if config.engine.data == kernel.MatmulEngine.SIMT:
        pairs = config.tile_n.data // 32
        return tid // 16 + 16 * (i // (2 * pairs)), 2 * (tid % 16) + 32 * ((i // 2) % pairs) + i % 2
    lane, warp = tid % 32, tid // 32
    wm, wn = config.warps
    tm, tn = config.tile_m.data // wm, config.tile_n.data // wn
    ni = tn // 8
    row = (warp // wn) * tm + (i // (4 * ni)) * 16 + lane // 4 + ((i % 4) // 2) * 8
    col = (warp % wn) * tn + ((i // 4) % ni) * 8 + (lane % 4) * 2 + i % 2
    return row, col


def _matrix(buf: Buffer, offset: int, rows: int, cols: int) -> np.ndarray:
    """The last two dims of an operand buffer at a batch offset, in float64."""
    s_r, s_c = buf.strides[-2], buf.strides[-1]
    index = offset + np.arange(rows)[:, None] * s_r + np.arange(cols)[None, :] * s_c
    return buf.data[index].astype(np.float64) if rows and cols else np.zeros((rows, cols))


class MatmulSim(KernelSim):
    """`KernelSim` with the matmul ops (see the module docstring)."""

    def _step(self, op: Any, env: dict, ctx: dict) -> None:
        tid = ctx["thread"][0]
        if isinstance(op, kernel.MatmulFragOp):
            row, col = frag(op.config, tid, int(env[op.index]))
            env[op.row], env[op.col] = (DTYPES[op.index.type].type(x) for x in (row, col))
            return
        if not isinstance(op, kernel.MatmulMainloopOp):
            super()._step(op, env, ctx)
            return
        a, b = env[op.lhs], env[op.rhs]
        m0, n0, k0, k1 = (int(env[v]) for v in (op.row, op.col, op.k_begin, op.k_end))
        m, k, n = a.sizes[-2], a.sizes[-1], b.sizes[-1]
        assert 0 <= k0 <= k1 <= k
        lhs = _matrix(a, int(env[op.lhs_offset]), m, k)[:, k0:k1]
        rhs = _matrix(b, int(env[op.rhs_offset]), k, n)[k0:k1, :]
        acc = env[op.acc]
        t = DTYPES[op.acc.type.element_type]
        for i in range(len(acc)):
            r, c = frag(op.config, tid, i)
            inside = m0 + r < m and n0 + c < n
            acc[i] = t.type(lhs[m0 + r] @ rhs[:, n0 + c]) if inside else t.type(0)


def simulate(fusion: FusionOp, inputs: Sequence[np.ndarray], p: MatmulParams) -> list[np.ndarray]:
    """Runs the kernel of `p` in MatmulSim; checks every output element is written once."""
    i = fusion_info(fusion, inputs)
    assert MATMUL.accepts(fusion, i)
    func = MATMUL.emit(fusion, p, "k")
    func.verify()
    launch = MATMUL.launch_config(fusion, p, i)
    env = value_shapes(fusion, [x.shape for x in inputs])
    outputs = []
    for value in fusion.output_op.values:
        shape = env[value]
        dtype = DTYPES[value.type.element_type]
        size = math.prod(shape)
        strides = TensorMeta.contiguous(shape).strides
        outputs.append(
            Buffer(np.full(size, np.nan, dtype), tuple(shape), strides, np.zeros(size, np.int64))
        )
    MatmulSim(func).launch(launch.grid, launch.block, [*map(_buffer, inputs), *outputs])
    for k, buf in enumerate(outputs):
        assert (buf.writes == 1).all(), (
            f"output #{k}: written {buf.writes.min()}..{buf.writes.max()} times"
        )
    return [b.data.reshape(b.sizes) for b in outputs]


def tiny(
    p: MatmulParams, tile: tuple[int, int, int], warps: tuple[int, int], engine: str
) -> MatmulParams:
    """`p` on `engine` with a small tile, so that the simulation runs few threads over several
    blocks."""
    config = kernel.MatmulConfigAttr(
        kernel.MatmulEngine(engine),
        F32 if engine == "simt" else BF16,
        tile,
        warps,
        p.stages,
        kernel.MatmulLoad(p.load_a),
        kernel.MatmulLoad(p.load_b),
    )
    config.verify()
    return dataclasses.replace(
        p, engine=engine, tile=tile, warps=warps, block=(config.threads, 1, 1)
    )


def reference(fusion: FusionOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The outputs in float64: the reference interpreter's compute mode, or for a split-K
    partial (which that mode does not hold in float64 yet) each chunk's product."""
    matmul = next(op for op in fusion.body.block.ops if op.name == "fusion.matmul")
    splits = matmul.split_count
    if splits is None:
        return [np.asarray(x) for x in evaluate(fusion, inputs, compute_dtype=np.float64)]
    a, b = (x.astype(np.float64) for x in inputs)
    chunk = -(-a.shape[-1] // splits)
    return [
        np.stack(
            [
                a[..., j * chunk : (j + 1) * chunk] @ b[..., j * chunk : (j + 1) * chunk, :]
                for j in range(splits)
            ]
        )
    ]


SIM_CASES = [
    # (name, fusion, input shapes, element, perms, tile, warps, engine)
    (
        "bf16_linear_gelu",
        linear("bf16"),
        [(19, 21), (21, 29), (29,)],
        BF16,
        None,
        (16, 16, 32),
        (1, 1),
        "mma",
    ),
    (
        "f16_batched_transposed_relu",
        linear("f16", "relu", rank=3, out="f32"),
        [(2, 19, 7), (2, 7, 21), (21,)],
        F16,
        [(0, 2, 1), (0, 2, 1), None],
        (16, 16, 32),
        (1, 1),
        "mma",
    ),
    (
        "bf16_partial_batched",
        partial("bf16", 3, 3),
        [(2, 9, 41), (2, 41, 17)],
        BF16,
        None,
        (16, 16, 32),
        (1, 1),
        "mma",
    ),
    # wgmma: a warpgroup per 64 rows, its fragments in mma.sync's order per 16-row warp slice
    (
        "bf16_linear_gelu_wgmma",
        linear("bf16"),
        [(67, 21), (21, 131), (131,)],
        BF16,
        None,
        (64, 64, 64),
        (4, 1),
        "wgmma",
    ),
    (
        "f16_batched_transposed_relu_wgmma",
        linear("f16", "relu", rank=3, out="f32"),
        [(2, 70, 7), (2, 7, 65), (65,)],
        F16,
        [(0, 2, 1), (0, 2, 1), None],
        (64, 64, 64),
        (4, 1),
        "wgmma",
    ),
    (
        "f32_linear_odd_n",
        linear("f32"),
        [(17, 9), (9, 35), (35,)],
        F32,
        None,
        (16, 32, 16),
        kernel.SIMT_WARPS,
        "simt",
    ),
    (
        "f64_partial",
        partial("f64", 2),
        [(5, 7), (7, 33)],
        F64,
        [(1, 0), None],
        (16, 32, 16),
        kernel.SIMT_WARPS,
        "simt",
    ),
]


@pytest.mark.parametrize(
    ("text", "shapes", "el", "perms", "tile", "warps", "engine"),
    [c[1:] for c in SIM_CASES],
    ids=[c[0] for c in SIM_CASES],
)
def test_kernel_logic_matches_the_reference(
    rng: np.random.Generator,
    text: str,
    shapes: list[tuple[int, ...]],
    el: Any,
    perms: list[Any] | None,
    tile: tuple[int, int, int],
    warps: tuple[int, int],
    engine: str,
) -> None:
    fusion = parse_fusion(text)
    perms = perms or [None] * len(shapes)
    inputs = [random_input(rng, s, el, p) for s, p in zip(shapes, perms, strict=True)]
    p = tiny(MATMUL.heuristics(fusion, fusion_info(fusion, inputs)), tile, warps, engine)
    outputs = simulate(fusion, inputs, p)
    expected = reference(fusion, inputs)
    for out, ref in zip(outputs, expected, strict=True):
        ref = np.asarray(ref).astype(np.float64)
        # 16-bit operands: the product is rounded to f16/bf16 before the epilogue, whatever the
        # output type; the reference keeps float64 throughout
        tol = 2e-2 if el in (F16, BF16) else 1e-5
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol)


def test_a_cast_before_the_matmul_is_a_kernel_of_its_own() -> None:
    """The segmenter does not forward a cast into the matmul's segment (the matmul kernel reads
    its operands as they are in memory): `matmul(cast(a), b)` is a pointwise kernel, then the
    matmul."""
    from fuser import DataType, FusionDefinition

    with FusionDefinition("cast_matmul") as fd:
        a = fd.define_tensor([-1, -1], DataType.Float)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.matmul(fd.ops.cast(a, DataType.BFloat16), b))
    inputs = [np.ones((256, 512), np.float32), np.ones((512, 4096), DTYPES[BF16])]
    compiled = fd.compile(inputs, arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["pointwise", "matmul"]


# --------------------------------------------------------------------------------------------
# fd.ops.linear and fd.ops.matmul of ranks 1-4


def test_a_linear_is_one_matmul_kernel_reading_its_weight_transposed(
    rng: np.random.Generator,
) -> None:
    """`linear(a, w, bias)`: `w` [N, K] read as [K, N] by `kernel.transposed` (no copy), the bias
    added in the epilogue; a batched `a` read as one matrix (a view of its rows)."""
    import ml_dtypes
    from definitions import linear_layer

    for a_shape in ([127, 64], [3, 41, 64]):
        fd = linear_layer(DataType.BFloat16, a_shape, 33)
        a = rng.standard_normal(a_shape).astype(ml_dtypes.bfloat16)
        w = rng.standard_normal((33, 64)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal(33).astype(ml_dtypes.bfloat16)
        (got,) = fd.reference([a, w, b], compute_dtype=np.float64)
        expected = a.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64)
        assert got.shape == (*a_shape[:-1], 33)
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2e-2, atol=0.3)
        (k,) = fd.compile([a, w, b], arch="sm_90").kernels
        assert k.scheduler == "matmul" and "fuser::transposed(" in k.source


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "kernels"),
    [
        ([7], [7], 1),
        ([5, 7], [7], 1),
        ([7], [7, 3], 1),
        ([2, 5, 7], [7, 3], 1),  # a's rows one matrix (static)
        ([5, 7], [2, 7, 3], 2),  # a broadcast over the batch: copied
        ([2, 1, 5, 7], [4, 7, 3], 3),  # both broadcast to [2, 4]
        ([3, 2, 5, 7], [3, 2, 7, 3], 1),
        ([-1, -1, 7], [7, 3], 2),  # two dynamic leading dims: b broadcast, copied
    ],
)
def test_matmul_of_ranks_one_to_four_broadcasts_as_torch(
    rng: np.random.Generator, a_shape: list[int], b_shape: list[int], kernels: int
) -> None:
    from definitions import matmul_of_ranks

    fd = matmul_of_ranks(a_shape, b_shape)
    a = rng.standard_normal([2 if e == -1 else e for e in a_shape]).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    (got,) = fd.reference([a, b], compute_dtype=np.float64)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert len(fd.compile([a, b], arch="sm_90").kernels) == kernels


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda fd, x: fd.ops.matmul(fd.define_tensor([2, 2, 2, 2, 3], DataType.Float), x),
            "takes operands of rank 1 to 4: 'a' has shape [2, 2, 2, 2, 3], 'b' has shape [3, 4]",
        ),
        (
            lambda fd, x: fd.ops.matmul(
                fd.define_tensor([2, 5, 3], DataType.Float),
                fd.define_tensor([4, 3, 4], DataType.Float),
            ),
            "batch dims do not broadcast: 'a' has shape [2, 5, 3], 'b' has shape [4, 3, 4]",
        ),
        (
            lambda fd, x: fd.ops.matmul(fd.define_tensor([5, 2], DataType.Float), x),
            "contraction dims differ: 'a' has shape [5, 2], 'b' has shape [3, 4]",
        ),
        (
            lambda fd, x: fd.ops.linear(fd.define_tensor([5, 3], DataType.Float), x),
            "in_features differ: 'a' has shape [5, 3], 'w' has shape [3, 4]",
        ),
        (
            lambda fd, x: fd.ops.linear(x, fd.define_tensor([2, 2, 4], DataType.Float)),
            "argument 'w' must be [out_features, in_features] or [in_features]",
        ),
        (lambda fd, x: fd.ops.linear(x, x, True), "argument 'bias' must be a tensor or a number"),
        (
            lambda fd, x: fd.ops.linear(x, fd.define_tensor([2, 4], DataType.Float), x),
            "argument 'bias' has shape [3, 4]; it needs [N]",
        ),
    ],
)
def test_matmul_and_linear_mistakes_name_both_shapes(call: Any, message: str) -> None:
    from fuser.errors import DefinitionError

    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        call(fd, fd.define_tensor([3, 4], DataType.Float))
    assert message in str(e.value)


def test_linear_of_a_vector_weight_a_unit_bias_and_empty_extents(rng: np.random.Generator) -> None:
    """torch's corners: `w` [K] (a @ w), a bias of shape [1] (broadcast), and a 0 extent
    (the folded reshape cannot say it: the batched matmul takes it)."""
    with FusionDefinition("corners") as fd:
        a = fd.define_tensor([-1, 3, 4], DataType.Float)
        v = fd.define_tensor([4], DataType.Float)
        one = fd.define_tensor([1], DataType.Float)
        empty = fd.define_tensor([0, 4], DataType.Float)
        fd.add_output(fd.ops.linear(a, v, one))
        fd.add_output(fd.ops.linear(a, empty))
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    b = rng.standard_normal(1).astype(np.float32)
    got, none = fd.reference([x, w, b, np.zeros((0, 4), np.float32)], compute_dtype=np.float64)
    np.testing.assert_allclose(got, x.astype(np.float64) @ w + b[0], rtol=1e-6)
    assert none.shape == (2, 3, 0)
