"""Stream parallelism without a GPU: `fd.parallelize` and `fusion.stream_axis`, the slicing of a
stream-parallel fusion, the segmenter's rules for stream-parallel ops, the `lower-stream-parallel`
pass, and whole programs run by the host evaluator over a fake device whose kernels are the
reference interpreter on the slices, so results are checked as numbers and the order of stream
switches, synchronizations and launches is checked from the device's log.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from ir_helpers import context, parse
from test_host_evaluator import FRONTEND, FakeDevice, ReferenceKernel
from xdsl.parser import Parser

from fuser import DataType, DefinitionError, FusionDefinition, ParallelType
from fuser.dialects import fusion as fu
from fuser.dialects import host
from fuser.runtime import signature
from fuser.runtime.host_evaluator import HostEvaluator
from fuser.runtime.reference import evaluate
from fuser.runtime.signature import tensor_part
from fuser.transforms.lower_stream_parallel import StreamLoweringError, lower_stream_parallel
from fuser.transforms.lower_to_host import HostLowering, lower_fusion
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.segment import segment_calls, segment_fusion
from fuser.transforms.segment_rules import never_merge
from fuser.transforms.stream_slicing import STREAM_LOOP, StreamSliceError, slice_fusion

CALLER = 0x5
"""The stream the fake calls run on (the caller's stream)."""

# --------------------------------------------------------------------------------------------
# IR helpers


def parse_fusion(text: str) -> fu.FusionOp:
    return parse(text)[1]


SINGLE = """
fusion.fusion @single(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.set %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t1 : tensor<?x?xf32>
}
"""

SCAN = """
fusion.fusion @scan(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.exp %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %t2 = fusion.cumsum %t1 along 1 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t2 : tensor<?x?xf32>
}
"""

SORT = """
fusion.fusion @sort(%t0: tensor<?x?xf32>) -> tensor<?x3xi64> {
  %t1 = fusion.exp %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %t2, %t3 = fusion.topk %t1 along 1 k(3) largest {fusion.stream_axis = 0 : i64}
    : tensor<?x?xf32> -> tensor<?x3xf32>, tensor<?x3xi64>
  fusion.output %t3 : tensor<?x3xi64>
}
"""

TWO = """
fusion.fusion @two(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.exp %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %t2 = fusion.neg %t1 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t2 : tensor<?x?xf32>
}
"""

THREE = """
fusion.fusion @three(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.exp %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %t2 = fusion.neg %t1 : tensor<?x?xf32>
  %t3 = fusion.sin %t2 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t3 : tensor<?x?xf32>
}
"""

EXP_SUM = """
fusion.fusion @exp_sum(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32>
  %s = fusion.sum %e [2] {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32> -> tensor<?x?xf32>
  fusion.output %s : tensor<?x?xf32>
}
"""

BIAS = """
fusion.fusion @bias(%x: tensor<?x?x?xf32>, %b: tensor<?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %n0 = fusion.dim %x[0] : tensor<?x?x?xf32>
  %n1 = fusion.dim %x[1] : tensor<?x?x?xf32>
  %bb = fusion.broadcast_in_dim %b [2] sizes(%n0, %n1) {fusion.stream_axis = 0 : i64}
      : tensor<?xf32> -> tensor<?x?x?xf32>
  %y = fusion.add %x, %bb {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32>
  %e = fusion.exp %y {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32>
  %s = fusion.sum %e [2] {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32> -> tensor<?x?xf32>
  fusion.output %s, %e : tensor<?x?xf32>, tensor<?x?x?xf32>
}
"""

# The sum reduces the stream axis of its operand: its axis 0 is %e's axis 1, so the two ops do
# not share a loop (two loops over different extents, %e stored whole between them).
CROSSED = """
fusion.fusion @crossed(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %s = fusion.sum %e [0] {fusion.stream_axis = 0 : i64} : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}
"""


def info_of(inputs: Sequence[Any]) -> FusionInfo:
    """The FusionInfo of numpy inputs (scalars are None)."""
    metas: list[TensorMeta | None] = []
    for x in inputs:
        if isinstance(x, np.ndarray):
            strides = tuple(s // x.itemsize for s in x.strides)
            metas.append(TensorMeta(x.shape, strides, signature.alignment_of(x.ctypes.data)))
        else:
            metas.append(None)
    return FusionInfo(tuple(metas))


def lower(
    fusion: fu.FusionOp, inputs: Sequence[Any], *, merge: bool = True, streams: int = 4
) -> HostLowering:
    """Segment (the schedulers' merge, or none), lower to host and lower the stream loops."""
    segmented = fusion.clone()
    info = info_of(inputs)
    segment_fusion(segmented, info, should_merge=None if merge else never_merge)
    lowering = lower_fusion(segmented, info)
    lower_stream_parallel(lowering.program, streams)
    return lowering


# --------------------------------------------------------------------------------------------
# Running a program on the fake device of test_host_evaluator.py, kernels that run the
# reference on slices


def run_on_fake_device(
    lowering: HostLowering, inputs: Sequence[np.ndarray], streams: int
) -> tuple[list[np.ndarray], list[tuple[Any, ...]]]:
    """Runs the lowered program with reference kernels; returns its outputs and the log."""
    device = FakeDevice()
    kernels = {s.kernel_name: ReferenceKernel(s.fusion, device) for s in lowering.segments}
    evaluator = HostEvaluator(lowering.program, kernels, backend=device, num_streams=streams)
    key: tuple[int, ...] = ()
    for x in inputs:
        strides = tuple(s // x.itemsize for s in x.strides)
        key += tensor_part(x.shape, strides, signature.dtype_code(x.dtype), x.ctypes.data)
    spec = evaluator.specialize((*key, 0))
    ptrs = [x.ctypes.data for x in inputs]
    outputs = spec.execute(inputs, ptrs, (), CALLER, FRONTEND)
    return outputs, device.log


def expected_log(plan: Sequence[tuple[str, int, int]], streams: int) -> list[tuple[Any, ...]]:
    """The synchronizations and launches a program should issue, in order. `plan` lists
    ("loop", extent, launches per iteration) and ("plain", 0, launches) steps."""
    pool = [0x100 * (i + 1) for i in range(streams)]
    log: list[tuple[Any, ...]] = []
    for kind, extent, launches in plan:
        if kind == "plain":
            log += [("launch", CALLER)] * launches
            continue
        for i in range(extent):
            log.append(("sync", pool[i % streams], CALLER))
            log += [("launch", pool[i % streams])] * launches
        log += [("sync", CALLER, pool[j]) for j in range(min(extent, streams))]
    return log


def stream_events(log: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [("launch", e[3]) if e[0] == "launch" else e for e in log if e[0] in ("launch", "sync")]


# --------------------------------------------------------------------------------------------
# The dialect and the frontend


def test_parallelize_marks_the_producing_op() -> None:
    with FusionDefinition("marked") as fd:
        x = fd.define_tensor([-1, -1, -1], DataType.Float)
        e = fd.ops.exp(x)
        fd.parallelize(e, axis=0, ptype=ParallelType.Stream)
        s = fd.ops.sum(e, [2])
        fd.parallelize(s, -2, ParallelType.Stream)  # negative axes count from the end
        t = fd.ops.neg(s)
        fd.parallelize(t, 1, ParallelType.Stream)
        fd.parallelize(t, 1, ParallelType.Serial)  # removes the mark again
        fd.add_output(s)
        fd.add_output(t)
    text = fd.fusion_ir()
    assert "fusion.exp %t0 {fusion.stream_axis = 0 : i64}" in text
    assert "fusion.sum %t1 [2] {fusion.stream_axis = 0 : i64}" in text
    assert "fusion.neg %t2 : tensor<?x?xf32>" in text
    reparsed = parse_fusion(text)  # fuser-opt reads it back, and it verifies
    assert [fu.stream_axis(op) for op in reparsed.body.block.ops][:3] == [0, 0, None]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda fd, x: fd.parallelize(x, 0, ParallelType.Stream),
            "fd.parallelize: argument 't' is the fusion input %t0; parallelize a tensor that an "
            "op produces",
        ),
        (
            lambda fd, x: fd.parallelize(fd.ops.exp(x), 2, ParallelType.Stream),
            "fd.parallelize: argument 'axis' has dim 2, out of range for rank 2",
        ),
        (
            lambda fd, x: fd.parallelize(fd.ops.exp(x), True, ParallelType.Stream),
            "fd.parallelize: argument 'axis' must be an int, got True",
        ),
        (
            lambda fd, x: fd.parallelize(fd.ops.exp(x), 0, "stream"),
            "fd.parallelize: argument 'ptype' must be a ParallelType, got 'stream'",
        ),
        (
            lambda fd, x: fd.parallelize(fd.ops.sum(x, [1], keepdim=True), 1, ParallelType.Stream),
            "fd.parallelize: argument 'axis' cannot be stream-parallel for %t1: 'fusion.sum' "
            "fusion.stream_axis 1 is a reduced dim",
        ),
        (
            lambda fd, x: fd.parallelize(fd.ops.sum(x, [0, 1]), 0, ParallelType.Stream),
            "fd.parallelize: argument 'axis' has dim 0, out of range for rank 0",
        ),
        (
            lambda fd, x: fd.parallelize(fd.define_scalar(), 0, ParallelType.Stream),
            "fd.parallelize: argument 't' must be a Tensor, got a Scalar",
        ),
        (
            lambda fd, x: fd.parallelize(x, 0),
            "fd.parallelize takes (t, axis, ptype), got 2 arguments",
        ),
    ],
)
def test_parallelize_errors(build: Callable[[Any, Any], None], message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        build(fd, x)
    assert str(e.value).startswith(message), str(e.value)


def test_streams_of_a_definition_must_be_positive() -> None:
    with pytest.raises(DefinitionError, match="argument 'streams' must be an int >= 1, got 0"):
        FusionDefinition(streams=0)


def test_the_verifier_reports_the_op_carrying_the_axis() -> None:
    text = """
        fusion.fusion @f(%x: tensor<?x?x?xf32>, %y: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
          %z = fusion.matmul %x, %y {fusion.stream_axis = 2 : i64}
              : tensor<?x?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?x?xf32>
          fusion.output %z : tensor<?x?x?xf32>
        }
        """
    module = Parser(context(), text).parse_module()  # unverified: the test verifies it
    with pytest.raises(fu.StreamAxisError) as e:
        module.verify()
    assert isinstance(e.value.op, fu.MatmulOp)
    assert str(e.value) == (
        "'fusion.matmul' fusion.stream_axis 2 is N: a stream axis of a matmul must be a batch "
        "dim (one of the first 1)"
    )
    # a batch dim is fine: both operands are sliced along it
    op = e.value.op
    assert fu.stream_operand_axes(op, 0) == (0, 0)


# --------------------------------------------------------------------------------------------
# Slicing a stream-parallel fusion


def test_slice_of_a_fusion_with_a_broadcast_and_a_reduction() -> None:
    slicing = slice_fusion(parse_fusion(BIAS))
    assert slicing is not None
    assert slicing.input_axes == (0, None)  # the bias is read whole by every slice
    assert slicing.output_axes == (0, 0)
    sliced = slicing.sliced
    ops = {op.name: op for op in sliced.body.block.ops}
    bb = ops["fusion.broadcast_in_dim"]
    assert isinstance(bb, fu.BroadcastInDimOp)
    assert bb.dims == (1,) and len(bb.sizes) == 1  # the stream dim and its size are gone
    assert str(bb.result.type) == "tensor<?x?xf32>"
    assert isinstance(ops["fusion.sum"], fu.SumOp)
    assert tuple(ops["fusion.sum"].axes.get_values()) == (1,)
    assert not any(fu.STREAM_AXIS in op.attributes for op in sliced.body.block.ops)
    assert [str(a.type) for a in sliced.inputs] == ["tensor<?x?xf32>", "tensor<?xf32>"]
    # one slice's metadata: a [5, 7, 3] input's slices start 84 bytes apart (4-byte aligned)
    info = FusionInfo((TensorMeta((5, 7, 3), (21, 3, 1)), TensorMeta((3,), (1,))))
    sliced_info = slicing.slice_info(info)
    assert sliced_info.inputs[0] == TensorMeta((7, 3), (3, 1), 4)
    assert sliced_info.inputs[1] == info.inputs[1]
    assert slicing.slice_shapes([(5, 7), (5, 7, 3)]) == ((7,), (7, 3))


def test_slice_of_a_fusion_without_stream_parallel_ops_is_none() -> None:
    fusion = parse_fusion(SINGLE.replace(" {fusion.stream_axis = 0 : i64}", ""))
    assert slice_fusion(fusion) is None


def test_an_unmarked_op_takes_the_axis_its_users_slice_it_along() -> None:
    fusion = parse_fusion(
        """
        fusion.fusion @chain(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
          %c = fusion.relu %x : tensor<?x?xf32>
          %e = fusion.exp %c {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
          fusion.output %e : tensor<?x?xf32>
        }
        """
    )
    slicing = slice_fusion(fusion)
    assert slicing is not None and slicing.input_axes == (0,)
    relu = next(op for op in slicing.sliced.body.block.ops if isinstance(op, fu.ReluOp))
    assert str(relu.result.type) == "tensor<?xf32>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            """
            fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) {
              %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
              %s = fusion.sum %e [0] {fusion.stream_axis = 0 : i64}
                  : tensor<?x?xf32> -> tensor<?xf32>
              fusion.output %e, %s : tensor<?x?xf32>, tensor<?xf32>
            }
            """,
            "@f: 'fusion.exp' %e is stream-parallel along axis 0, but a user slices it along "
            "axis 1",
        ),
        (
            """
            fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
              %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
              %n = fusion.neg %e : tensor<?x?xf32>
              fusion.output %e, %n : tensor<?x?xf32>, tensor<?x?xf32>
            }
            """,
            "@f: 'fusion.exp' %e is stream-parallel along axis 0, but a user reads it whole",
        ),
        (
            """
            fusion.fusion @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
              %e = fusion.exp %x {fusion.stream_axis = 1 : i64} : tensor<?x?xf32>
              fusion.output %e : tensor<?x?xf32>
            }
            """,
            "@f: output #0 (%e) is stream-parallel along axis 1, not its outermost",
        ),
        (
            """
            fusion.fusion @f(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>)
                -> (tensor<?x?xf32>, tensor<?x?xf32>) {
              %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
              %n = fusion.neg %y {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
              fusion.output %e, %n : tensor<?x?xf32>, tensor<?x?xf32>
            }
            """,
            "@f: the stream axes of %e, %n are not related by the ops between them",
        ),
        (
            """
            fusion.fusion @f(%x: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
              %n = fusion.dim %x[0] : tensor<?x?xf32>
              %bb = fusion.broadcast_in_dim %b [1] sizes(%n) {fusion.stream_axis = 1 : i64}
                  : tensor<?xf32> -> tensor<?x?xf32>
              %y = fusion.add %x, %bb {fusion.stream_axis = 1 : i64} : tensor<?x?xf32>
              %t = fusion.set %y {fusion.stream_axis = 1 : i64} : tensor<?x?xf32>
              fusion.output %t : tensor<?x?xf32>
            }
            """,
            "@f: output #0 (%t) is stream-parallel along axis 1, not its outermost",
        ),
    ],
)
def test_slicing_refuses(text: str, message: str) -> None:
    with pytest.raises(StreamSliceError) as e:
        slice_fusion(parse_fusion(text))
    assert str(e.value).startswith(message), str(e.value)


def test_a_slice_cannot_read_the_extent_of_the_stream_axis() -> None:
    # %bb's new dim 1 has the extent of %x's stream axis, which one slice of %x does not carry
    fusion = parse_fusion(
        """
        fusion.fusion @f(%x: tensor<?x?xf32>, %c: tensor<?xf32>) -> tensor<?x?xf32> {
          %n = fusion.dim %x[0] : tensor<?x?xf32>
          %bb = fusion.broadcast_in_dim %c [0] sizes(%n) {fusion.stream_axis = 0 : i64}
              : tensor<?xf32> -> tensor<?x?xf32>
          %y = fusion.add %x, %bb {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
          fusion.output %y : tensor<?x?xf32>
        }
        """
    )
    with pytest.raises(StreamSliceError) as e:
        slice_fusion(fusion)
    assert str(e.value) == (
        "@f: 'fusion.broadcast_in_dim' %bb reads the extent of the stream axis (%n), which one "
        "slice does not have"
    )


# --------------------------------------------------------------------------------------------
# Segmentation


def test_stream_parallel_ops_merge_only_with_stream_parallel_ops(
    rng: np.random.Generator,
) -> None:
    x = rng.standard_normal((5, 33), np.float32)
    three = parse_fusion(THREE)
    log: list[str] = []
    segmented = segment_fusion(three.clone(), info_of([x]), log=log)
    assert len(segmented.segments) == 3
    assert any(
        "whole fusion: not tried: it mixes stream-parallel and other ops" in line for line in log
    )
    assert any("refused: it mixes stream-parallel and other ops" in line for line in log)
    two = segment_fusion(parse_fusion(TWO).clone(), info_of([x]))
    assert two.schedulers == ("pointwise",)  # the whole fusion, one slice at a time
    (call,) = segment_calls(two.fusion, info_of([x]))
    assert call.stream is not None and call.output_shapes == ((33,),)
    assert call.info.inputs[0] == TensorMeta((33,), (1,), 4)  # slices 132 bytes apart


def test_stream_axes_that_do_not_map_split_segments(rng: np.random.Generator) -> None:
    x = rng.standard_normal((6, 10), np.float32)
    log: list[str] = []
    segmented = segment_fusion(parse_fusion(CROSSED).clone(), info_of([x]), log=log)
    assert len(segmented.segments) == 2
    assert any("but a user slices it along axis 1" in line for line in log), log


def test_a_stream_parallel_op_is_not_forwarded(rng: np.random.Generator) -> None:
    x = rng.standard_normal((5, 33), np.float32)
    segmented = segment_fusion(parse_fusion(TWO).clone(), info_of([x]), should_merge=never_merge)
    assert len(segmented.segments) == 2  # the exp of an input is a segment of its own


# --------------------------------------------------------------------------------------------
# The pass


def test_the_pass_merges_loops_and_removes_the_marks(rng: np.random.Generator) -> None:
    x = rng.standard_normal((5, 33), np.float32)
    lowering = lower(parse_fusion(TWO), [x], merge=False, streams=3)
    program = lowering.program
    loops = [op for op in program.body.block.ops if isinstance(op, host.ForOp)]
    assert len(loops) == 2  # the work loop and the join
    assert not any(STREAM_LOOP in op.attributes for op in program.walk())
    launches = [op for op in loops[0].body.block.ops if isinstance(op, host.LaunchOp)]
    assert len(launches) == 2
    assert lower_stream_parallel(program, 3) == 0  # nothing left to lower


def test_streams_must_be_positive(rng: np.random.Generator) -> None:
    x = rng.standard_normal((5, 33), np.float32)
    segmented = parse_fusion(SINGLE).clone()
    segment_fusion(segmented, info_of([x]))
    program = lower_fusion(segmented, info_of([x])).program
    with pytest.raises(StreamLoweringError, match="streams must be at least 1, got 0"):
        lower_stream_parallel(program, 0)


# --------------------------------------------------------------------------------------------
# Whole programs on the fake device


def _inputs(rng: np.random.Generator, text: str, s: int) -> list[np.ndarray]:
    if text in (EXP_SUM, BIAS):
        x = rng.standard_normal((s, 7, 33), np.float32)
        return [x] if text is EXP_SUM else [x, rng.standard_normal(33, np.float32)]
    return [rng.standard_normal((s, 33), np.float32)]


CASES = [
    # (fusion, schedulers' merge, plan of (kind, extent or 0, launches))
    ("single", SINGLE, True, lambda s: [("loop", s, 1)]),
    ("two", TWO, False, lambda s: [("loop", s, 2)]),
    ("two merged", TWO, True, lambda s: [("loop", s, 1)]),
    ("three", THREE, False, lambda s: [("loop", s, 1), ("plain", 0, 1), ("loop", s, 1)]),
    ("three merged", THREE, True, lambda s: [("loop", s, 1), ("plain", 0, 1), ("loop", s, 1)]),
    ("exp sum", EXP_SUM, False, lambda s: [("loop", s, 2)]),
    ("bias", BIAS, True, lambda s: [("loop", s, 1)]),
    ("scan", SCAN, True, lambda s: [("loop", s, 1)]),  # rows of each slice scanned
    ("sort", SORT, True, lambda s: [("loop", s, 1)]),  # and ordered
]


@pytest.mark.parametrize("streams", [1, 3, 4])
@pytest.mark.parametrize(("label", "text", "merge", "plan"), CASES, ids=[c[0] for c in CASES])
def test_programs_run_slice_by_slice_on_streams(
    rng: np.random.Generator,
    label: str,
    text: str,
    merge: bool,
    plan: Callable[[int], list[tuple[str, int, int]]],
    streams: int,
) -> None:
    s = int(rng.integers(2, 7))
    fusion = parse_fusion(text)
    inputs = _inputs(rng, text, s)
    lowering = lower(fusion, inputs, merge=merge, streams=streams)
    outputs, log = run_on_fake_device(lowering, inputs, streams)
    for got, want in zip(outputs, evaluate(fusion, inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert stream_events(log) == expected_log(plan(s), streams)
    frees = [e for e in log if e[0] == "free"]
    assert all(e[2] == CALLER for e in frees)
    last_sync = max(i for i, e in enumerate(log) if e[0] == "sync")
    if label in ("two", "exp sum"):  # the intermediate is freed after the join
        assert len(frees) == 1 and log.index(frees[0]) > last_sync


def test_a_strided_input_is_sliced_with_its_strides(rng: np.random.Generator) -> None:
    x = rng.standard_normal((33, 5), np.float32).T  # [5, 33], column-major: slices are strided
    fusion = parse_fusion(TWO)
    lowering = lower(fusion, [x], merge=True, streams=2)
    (seg,) = lowering.segments
    assert seg.info.inputs[0] == TensorMeta((33,), (5,), 4)
    outputs, log = run_on_fake_device(lowering, [x], 2)
    np.testing.assert_allclose(outputs[0], evaluate(fusion, [x])[0], rtol=1e-6)
    assert stream_events(log) == expected_log([("loop", 5, 1)], 2)


def test_loops_over_different_extents_stay_apart(rng: np.random.Generator) -> None:
    x = rng.standard_normal((6, 10), np.float32)
    fusion = parse_fusion(CROSSED)
    lowering = lower(fusion, [x], streams=4)
    outputs, log = run_on_fake_device(lowering, [x], 4)
    np.testing.assert_allclose(outputs[0], evaluate(fusion, [x])[0], rtol=1e-5)
    assert stream_events(log) == expected_log([("loop", 6, 1), ("loop", 10, 1)], 4)


def test_compile_without_a_gpu_lists_the_slice_kernels(rng: np.random.Generator) -> None:
    with FusionDefinition("exp_sum", streams=2) as fd:
        x = fd.define_tensor([-1, -1, -1])
        e = fd.ops.exp(x)
        fd.parallelize(e, 0, ParallelType.Stream)
        s = fd.ops.sum(e, [2])
        fd.parallelize(s, 0, ParallelType.Stream)
        fd.add_output(s)
    compiled = fd.compile([rng.standard_normal((4, 9, 130), np.float32)], arch="sm_90")
    (kernel,) = compiled.kernels
    assert kernel.scheduler == "reduction"
    assert "Tensor<float, 2> t0" in kernel.source  # the kernel of one [9, 130] slice
    text = fd.host_ir()
    assert re.search(r"%slot = arith.remui %i, %c2(_\d+)? : index", text), text
    assert "host.synchronize %caller" in text and "host.synchronize %joined" in text
