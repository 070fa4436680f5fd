"""`split-reductions` and the `inner_outer` scheduler on the CPU: the factor the planner picks,
the rewrite, the kernels a norm backward compiles to (for sm_90, no GPU), the fallback when the
split form has no scheduler, and what each scheduler says of a `partial_sum` it does not take.
The GPU results are in tests/gpu/test_norm_backward_gpu.py.
"""

from __future__ import annotations

import re
from typing import Any, cast

import ml_dtypes
import numpy as np
import pytest
from definitions import row_sum, softmax
from ir_helpers import parse

from fuser import DataType, FusionDefinition, dump
from fuser.dialects import fusion as fu
from fuser.transforms.schedulers import get_scheduler, inner_outer
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.persistent import PersistentParams
from fuser.transforms.schedulers.reduction_parts import vector_pieces
from fuser.transforms.split_reductions import (
    apply_split_reductions,
    plan_split_reductions,
    split_candidates,
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
    dim, are not split. Both column sums (dw and db) get the factor; the row sum beside them is
    no candidate (a row split takes fusions whose reductions are all row sums)."""
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
    assert len(split_candidates(fusion)) == 1  # db, left alone


@pytest.mark.parametrize(("shape", "factor"), [((1048576, 64), 1056), ((16384, 16384), 1)])
def test_a_column_sum_alone_is_split_where_its_rows_are_narrow(
    shape: tuple[int, int], factor: int
) -> None:
    """Without row sums, a column sum is split only where the reduction scheduler could not
    fill the GPU (fewer than 8 x SMs vectors a row): 64 columns of f32 take 8 chunks per SM;
    16384 columns fill it as they are."""
    with FusionDefinition("colsum") as fd:
        fd.add_output(fd.ops.sum(fd.define_tensor([-1, -1]), [0]))
    assert len(split_candidates(fd.fusion)) == 1
    i = FusionInfo((TensorMeta.contiguous(shape),), DeviceInfo(sm_count=132))
    assert plan_split_reductions(fd.fusion, i) == (factor,)
    kernels = fd.compile([np.ones(shape, np.float32)], arch="sm_90").kernels
    expected = ["inner_outer", "reduction"] if factor > 1 else ["reduction"]
    assert [k.scheduler for k in kernels] == expected


def test_norm_backward_compiles_to_one_inner_outer_kernel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """dx, and the partial sums of dw and db (the db group merged in as a sibling reading dy),
    in one kernel of 264 blocks; then one kernel that sums the chunks of both weight gradients
    (the finish merge: 1.5-2.5 us faster than a kernel each on an H100, RESULTS run 30)."""
    try:
        dump.configure("segmenter_log")
        compiled = rms_backward().compile(inputs(16384, 4096), arch="sm_90")
    finally:
        dump.configure("")
    assert [k.scheduler for k in compiled.kernels] == ["inner_outer", "reduction"]
    assert "grid=(264, 1, 1)" in str(compiled)
    log = capsys.readouterr().err
    assert re.search(r"finish merge g\d+\{sum %\w+, cast %\w+\} \+ g\d+\{sum", log), log


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
        (4096, "sm_90a", True, True, 2 * 16384 + 2 * 16384),  # (the suffix parsed, not int())
        (4096, "sm_75", True, False, 2 * 16384),  # no cp.async before sm_80
        # odd rows: no vectors to copy; 832 threads x 5 slots of dw's and db's f32 sums
        (4097, "sm_90", True, False, 2 * 832 * 5 * 4),
        # 768 threads x 32 slots: 2 x 96 KiB of sums; 2 x 96 KiB of buffers would not fit
        (24576, "sm_90", True, False, 2 * 98304),
    ],
)
def test_the_inner_outer_kernel_holds_its_sums_and_next_row_in_shared_memory(
    h: int, arch: str, shared_sums: bool, prefetch: bool, shared_bytes: int
) -> None:
    """The accumulators live in dynamic shared memory where they fit, and the next row's reads
    are copied there (`cp.async`, two buffers) where those fit too, on sm_80 and later; the
    launch gives the kernel's dynamic arrays' bytes."""
    p, kernel = _inner_outer(4096, h, arch)
    assert (p.shared_sums, p.prefetch) == (shared_sums, prefetch)
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


def _negated(axis: int, shape: str) -> dict[str, str]:
    """The verdicts on a partial sum over `axis` (result `tensor<{shape}xf32>`) that an
    epilogue negates before the output."""
    t = f"tensor<{shape}xf32>"
    more = f"%q = fusion.neg %p : {t}"
    return _verdicts(PARTIAL.format(axis=axis, ptype=t, more=more, outs="%q", out=t), (100, 64))


def test_who_takes_a_partial_sum() -> None:
    taken = _verdicts(
        PARTIAL.format(axis=0, ptype="tensor<4x?xf32>", more="", outs="%p", out="tensor<4x?xf32>"),
        (100, 64),
    )
    assert taken["inner_outer"] == ""
    over_rows = "sums chunks of dim 0, not the last: the inner-outer scheduler takes partial sums"
    assert over_rows in taken["reduction"]
    assert over_rows in taken["persistent"]

    assert "must be used by the fusion's outputs only" in _negated(0, "4x?")["inner_outer"]

    columns = _verdicts(
        PARTIAL.format(axis=1, ptype="tensor<?x4xf32>", more="", outs="%p", out="tensor<?x4xf32>"),
        (100, 64),
    )
    assert "only rows (dim 0) are taken" in columns["inner_outer"]
    # chunks of each row: a row split, the reduction scheduler's alone
    assert columns["reduction"] == ""
    assert "split rows across blocks: the reduction scheduler takes them" in columns["persistent"]

    assert "must be used by the fusion's outputs only" in _negated(1, "?x4")["reduction"]


# --------------------------------------------------------------------------------------------
# A few long rows: runs of each row, a block each (the reduction scheduler's row split)


@pytest.mark.parametrize(
    ("shape", "factor", "why"),
    [
        ((16, 4194304), 16, "splits(16) a row, runs of 262144"),
        ((4194304,), 132, "splits(132) a row, runs of 31776"),
        ((127, 131072), 2, "splits(2) a row, runs of 65536"),
        ((132, 1048576), 1, "132 row(s) give the GPU enough blocks: not split"),
        ((16, 16000), 1, "rows of 16000 are too short to split: not split"),
        ((0, 1048576), 1, "no rows: not split"),
    ],
)
def test_the_row_split_factor(shape: tuple[int, ...], factor: int, why: str) -> None:
    """ceil(132 SMs / rows) runs a row, at most a run per 64 KiB of the row, moved up to runs
    of whole vectors (9 runs of [16, 4194304] f32 would be 466033.8 long: 16 of 262144)."""
    fd = row_sum(DataType.Float, len(shape))
    log: list[str] = []
    i = FusionInfo((TensorMeta.contiguous(shape),), DeviceInfo(sm_count=132))
    assert plan_split_reductions(fd.fusion, i, log=log) == (factor,)
    assert log == [f"split-reductions: %t1 {'x'.join(map(str, shape))}: {why}"]


def test_a_row_split_keeps_runs_of_whole_vectors() -> None:
    """bf16 rows of 100000 on 132 SMs (3 runs of 64 KiB a row): 3 runs would be 33334 long;
    4 runs of 25000, the first factor up from 3 whose runs are whole 16-byte vectors (8 bf16)."""
    fd = row_sum(DataType.BFloat16)
    i = FusionInfo((TensorMeta.contiguous((16, 100000)),), DeviceInfo(sm_count=132))
    assert plan_split_reductions(fd.fusion, i) == (4,)


def test_what_a_row_split_leaves_whole() -> None:
    """Rows that are not the input's fastest dim, and a fusion with other reductions (softmax:
    a max and a sum) or with the sum's result used per element, keep their rows whole."""
    fd = row_sum(DataType.Float)
    transposed = FusionInfo((TensorMeta((16, 4194304), (1, 16)),), DeviceInfo(sm_count=132))
    log: list[str] = []
    assert plan_split_reductions(fd.fusion, transposed, log=log) == (1,)
    assert log[0].endswith("an input's rows are not its fastest dim: not split")
    sm = softmax(DataType.Float)
    i = FusionInfo((TensorMeta.contiguous((16, 4194304)),), DeviceInfo(sm_count=132))
    assert split_candidates(sm.fusion) == []  # (types only: a new shape plans nothing)
    assert plan_split_reductions(sm.fusion, i) == ()
    with FusionDefinition("normalized") as nz:
        x = nz.define_tensor([-1, -1])
        nz.add_output(nz.ops.div(x, nz.ops.broadcast_in_dim(nz.ops.sum(x, [1]), x.shape(), [0])))
    log = []
    assert plan_split_reductions(nz.fusion, i, log=log) == (1,)
    assert log[0].endswith("one streaming kernel does not take the fusion: not split")


def test_a_row_split_sums_what_the_whole_rows_sum(rng: np.random.Generator) -> None:
    """The reference of the split fusion (partial sums of runs, then their sum) matches the
    sum of the unsplit one, runs that do not divide the row included."""
    from fuser.runtime.reference import evaluate

    fusion = row_sum(DataType.Float).fusion.clone()
    assert apply_split_reductions(fusion, (7,)) == 1
    (partial,) = [op for op in fusion.body.walk() if isinstance(op, fu.PartialSumOp)]
    assert partial.axis == 1 and partial.split_count == 7
    fusion.verify()
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    (out,) = evaluate(fusion, [x], compute_dtype=np.float64)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-12)


def test_a_row_split_compiles_to_two_reductions() -> None:
    fd = row_sum(DataType.Float)
    compiled = fd.compile([np.ones((16, 4194304), np.float32)], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["reduction", "reduction"]
    assert "grid=(16, 16, 1) block=(1024, 1, 1)" in compiled.summary()
