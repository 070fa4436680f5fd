"""`split-reductions` and the `inner_outer` scheduler on the CPU: the factor the planner picks,
the rewrite, the kernels a norm backward compiles to (for sm_90, no GPU), the fallback when the
split form has no scheduler, and what each scheduler says of a `partial_sum` it does not take.
The GPU results are in tests/gpu/test_norm_backward_gpu.py.
"""

from __future__ import annotations

from typing import Any, cast

import ml_dtypes
import numpy as np
import pytest
from ir_helpers import parse

from fuser import DataType, FusionDefinition
from fuser.dialects import fusion as fu
from fuser.transforms.schedulers import get_scheduler, inner_outer
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.persistent import PersistentParams
from fuser.transforms.schedulers.reduction_parts import vector_pieces
from fuser.transforms.split_reductions import (
    apply_split_reductions,
    column_sums,
    plan_split_reductions,
)

BF16 = ml_dtypes.bfloat16


def rms_backward() -> FusionDefinition:
    with FusionDefinition("rms_bwd") as fd:
        dy, x = (
            fd.define_tensor([-1, -1], DataType.BFloat16),
            fd.define_tensor([-1, -1], DataType.BFloat16),
        )
        rstd = fd.define_tensor([-1], DataType.Float)
        w = fd.define_tensor([-1], DataType.BFloat16)
        shape = x.shape()
        rb = fd.ops.broadcast_in_dim(rstd, shape, [0])
        dyf = fd.ops.cast(dy, DataType.Float)
        xhat = fd.ops.mul(fd.ops.cast(x, DataType.Float), rb)
        dxhat = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(fd.ops.cast(w, DataType.Float), shape, [1]))
        c = fd.ops.sum(fd.ops.mul(dxhat, xhat), [1])
        t = fd.ops.mul(xhat, fd.ops.broadcast_in_dim(c, shape, [0]))
        fd.add_output(fd.ops.cast(fd.ops.mul(rb, fd.ops.sub(dxhat, t)), DataType.BFloat16))
        fd.add_output(fd.ops.cast(fd.ops.sum(fd.ops.mul(dyf, xhat), [0]), DataType.BFloat16))
        fd.add_output(fd.ops.cast(fd.ops.sum(dyf, [0]), DataType.BFloat16))
    return fd


def inputs(n: int, h: int) -> list[np.ndarray]:
    return [np.ones((n, h), BF16), np.ones((n, h), BF16), np.ones(n, np.float32), np.ones(h, BF16)]


def info(n: int, h: int, transposed_x: bool = False) -> FusionInfo:
    x = TensorMeta((n, h), (1, n)) if transposed_x else TensorMeta.contiguous((n, h))
    metas = [
        TensorMeta.contiguous((n, h)),
        x,
        TensorMeta.contiguous((n,)),
        TensorMeta.contiguous((h,)),
    ]
    return FusionInfo(tuple(metas), DeviceInfo(sm_count=132))


@pytest.mark.parametrize(
    ("n", "transposed", "factor"),
    [(16384, False, 264), (1000, False, 125), (15, False, 1), (16384, True, 1)],
)
def test_the_factor(n: int, transposed: bool, factor: int) -> None:
    """min(k x SMs, rows / 8), k = 2 chunks per SM for rows of 4096 bf16 (blocks of about 256
    threads); fewer than 2 chunks, or rows that are not the inputs' fastest
    dim, are not split. Both column sums (dw and db) get the factor."""
    fusion = rms_backward().fusion
    log: list[str] = []
    assert plan_split_reductions(fusion, info(n, 4096, transposed), log=log) == (factor, factor)
    assert len(log) == 2 and all(line.startswith("split-reductions: ") for line in log)


def test_the_rewrite() -> None:
    fusion = rms_backward().fusion.clone()
    assert apply_split_reductions(fusion, (264, 1)) == 1
    ops = list(fusion.body.block.ops)
    (partial,) = [op for op in ops if isinstance(op, fu.PartialSumOp)]
    assert partial.split_count == 264 and partial.axis == 0
    (staged,) = [u.operation for u in partial.result.uses]
    assert isinstance(staged, fu.SegmentSetOp)
    (total,) = [u.operation for u in staged.result.uses]
    assert isinstance(total, fu.SumOp) and total.reduction_axes == (0,)
    fusion.verify()
    assert len(column_sums(fusion)) == 1  # db, left alone


@pytest.mark.parametrize(("shape", "factor"), [((1048576, 64), 1056), ((16384, 16384), 1)])
def test_a_column_sum_alone_is_split_where_its_rows_are_narrow(
    shape: tuple[int, int], factor: int
) -> None:
    """Without row sums, a column sum is split only where the reduction scheduler could not
    fill the GPU (fewer than 8 x SMs vectors a row): 64 columns of f32 take 8 chunks per SM;
    16384 columns fill it as they are."""
    with FusionDefinition("colsum") as fd:
        fd.add_output(fd.ops.sum(fd.define_tensor([-1, -1]), [0]))
    assert len(column_sums(fd.fusion)) == 1
    i = FusionInfo((TensorMeta.contiguous(shape),), DeviceInfo(sm_count=132))
    assert plan_split_reductions(fd.fusion, i) == (factor,)
    kernels = fd.compile([np.ones(shape, np.float32)], arch="sm_90").kernels
    expected = ["inner_outer", "reduction"] if factor > 1 else ["reduction"]
    assert [k.scheduler for k in kernels] == expected


def test_norm_backward_compiles_to_one_inner_outer_kernel() -> None:
    """dx, and the partial sums of dw and db (the db group merged in as a sibling reading dy),
    in one kernel of 264 blocks; then one sum of the chunks per weight gradient (two kernels:
    one kernel summing both took 6 us more on an H100, RESULTS run 28)."""
    compiled = rms_backward().compile(inputs(16384, 4096), arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["inner_outer", "reduction", "reduction"]
    assert "grid=(264, 1, 1)" in str(compiled)


def test_a_row_too_long_for_registers_is_not_split() -> None:
    """The split form's segment has no scheduler (the row does not fit): the pipeline segments
    the fusion as it was."""
    compiled = rms_backward().compile(inputs(64, 200_000), arch="sm_90")
    assert "inner_outer" not in [k.scheduler for k in compiled.kernels]


def _inner_outer(n: int, h: int, arch: str = "sm_90") -> tuple[PersistentParams, Any]:
    """The heuristics and launch of RMS norm backward's inner-outer kernel."""
    kernel = rms_backward().compile(inputs(n, h), arch=arch).kernels[0]
    assert kernel.scheduler == "inner_outer"
    return cast(PersistentParams, kernel.heuristics), kernel


@pytest.mark.parametrize(
    ("h", "arch", "shared_sums", "prefetch", "shared_bytes"),
    [
        # 128 threads x 32 slots: dw's and db's f32 sums 2 x 16 KiB; two buffers of dy and of
        # x, 2 x 16 KiB
        (4096, "sm_90", True, True, 2 * 16384 + 2 * 16384),
        (4096, "sm_75", True, False, 2 * 16384),  # no cp.async before sm_80
        (4097, "sm_90", True, False, None),  # odd rows: no vectors to copy
        # 768 threads x 32 slots: 2 x 96 KiB of sums; 2 x 96 KiB of buffers would not fit
        (24576, "sm_90", True, False, 2 * 98304),
    ],
)
def test_the_inner_outer_kernel_holds_its_sums_and_next_row_in_shared_memory(
    h: int, arch: str, shared_sums: bool, prefetch: bool, shared_bytes: int | None
) -> None:
    """The accumulators live in dynamic shared memory where they fit, and the next row's reads
    are copied there (`cp.async`, two buffers) where those fit too, on sm_80 and later; the
    launch gives the kernel's dynamic arrays' bytes."""
    p, kernel = _inner_outer(4096, h, arch)
    assert (p.shared_sums, p.prefetch) == (shared_sums, prefetch)
    if shared_bytes is not None:
        assert kernel.launch.shared_bytes == shared_bytes
    assert ("fuser::copy_async" in kernel.source) == prefetch
    assert ("fuser_dynamic_shared" in kernel.source) == shared_sums


def test_without_shared_sums_the_sums_stay_in_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inner_outer, "SHARED_SUMS", False)
    p, kernel = _inner_outer(4096, 4096)
    assert (p.shared_sums, p.prefetch, kernel.launch.shared_bytes) == (False, False, 0)
    assert "float t" in kernel.source and "_sums[16];" in kernel.source


def test_f32_partial_sums_of_bf16_rows_are_stored_as_vectors() -> None:
    """A chunk of 8 bf16 slots gives 8 f32 partial sums: two 16-byte vector stores (one store
    per element wrote each 32-byte sector 8 times: 49% of the kernel's sectors)."""
    _, kernel = _inner_outer(4096, 4096)
    assert kernel.source.count("*reinterpret_cast<Vec<float, 4>*>(&t") >= 2
    assert vector_pieces(8, fu.F32) == [(0, 4), (4, 4)]
    assert vector_pieces(8, fu.BF16) == [(0, 8)]
    assert vector_pieces(2, fu.F64) == [(0, 2)]


PARTIAL = """
fusion.fusion @f(%x: tensor<?x?xf32>) -> ({out}) {{
  %p = fusion.partial_sum %x [{axis}] splits(4) : tensor<?x?xf32> -> {ptype}
  {more}
  fusion.output {outs} : {out}
}}
"""


def _verdicts(text: str, shape: tuple[int, int]) -> dict[str, str]:
    _, fusion = parse(text)
    i = FusionInfo((TensorMeta.contiguous(shape),))
    names = ("reduction", "persistent", "inner_outer")
    return {n: get_scheduler(n).accepts(fusion, i).reason for n in names}


def test_who_takes_a_partial_sum() -> None:
    taken = _verdicts(
        PARTIAL.format(axis=0, ptype="tensor<4x?xf32>", more="", outs="%p", out="tensor<4x?xf32>"),
        (100, 64),
    )
    assert taken["inner_outer"] == ""
    assert "is a partial sum over rows: the inner-outer scheduler takes it" in taken["reduction"]
    assert "is a partial sum over rows: the inner-outer scheduler takes it" in taken["persistent"]

    used = _verdicts(
        PARTIAL.format(
            axis=0,
            ptype="tensor<4x?xf32>",
            more="%q = fusion.neg %p : tensor<4x?xf32>",
            outs="%q",
            out="tensor<4x?xf32>",
        ),
        (100, 64),
    )
    assert "must be used by the fusion's outputs only" in used["inner_outer"]

    columns = _verdicts(
        PARTIAL.format(axis=1, ptype="tensor<?x4xf32>", more="", outs="%p", out="tensor<?x4xf32>"),
        (100, 64),
    )
    assert "only rows (dim 0) are taken" in columns["inner_outer"]
