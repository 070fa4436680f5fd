"""Lowering segmented fusions to the host dialect (`fuser.transforms.lower_to_host`).

The structure of each program (an allocation per segment result, launches in topological
order with the kernel's parameters, a deallocation right after an intermediate's last use, the
outputs returned, extents from `host.dim`) is checked on the issue's segmentation cases; then
each program is *run* on the CPU by the host evaluator over fake device memory, every kernel
replaced by the numpy reference interpreter on its segment's standalone fusion, and compared
with the reference of the whole fusion: for the shapes it was lowered for and for other shapes
(its allocations are shape-generic). Freed memory is poisoned, so a deallocation before a last
use shows up as NaNs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ir_helpers import context, parse
from test_host_evaluator import FakeDevice, ReferenceKernel, call_of, one_device
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import PassPipeline

from fuser.dialects import fusion as fu
from fuser.dialects import host, kernel
from fuser.runtime.dtypes import numpy_dtype
from fuser.runtime.host_evaluator import HostEvaluator
from fuser.runtime.reference import evaluate
from fuser.transforms import get_all_passes
from fuser.transforms.lower_to_host import (
    HostLowering,
    format_shapes,
    lower_fusion,
    lower_to_host,
)
from fuser.transforms.plan_memory import plan_memory
from fuser.transforms.schedule import ScheduleOptionError, fusion_info
from fuser.transforms.schedulers.base import SchedulingError
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo
from fuser.transforms.segment import segment_fusion
from fuser.transforms.segment_rules import MERGE_RULES

ROOT = Path(__file__).resolve().parent.parent
LIT = ROOT / "lit_tests" / "transforms" / "lower_to_host"
LAYER_NORM = (ROOT / "examples" / "layer_norm.mlir").read_text()
SUM_BROADCAST = (LIT / "sum_broadcast.mlir").read_text()
SEGMENT_SETS = (LIT / "segment_set.mlir").read_text()
TWO_REDUCTIONS = (LIT / "two_reductions.mlir").read_text()
FIVE = (LIT / "five_segments.mlir").read_text()
SOFTMAX = (LIT / "merge_none.mlir").read_text()

pytestmark = pytest.mark.usefixtures(one_device.__name__)  # device 0 is current


def run_pass(text: str, spec: str) -> ModuleOp:
    module, _ = parse(text)
    PassPipeline.parse_spec(get_all_passes(), spec).apply(context(), module)
    module.verify()
    return module


def random_inputs(
    fusion: fu.FusionOp, shapes: Sequence[tuple[int, ...]], rng: np.random.Generator
) -> list[Any]:
    """Fresh random inputs (never all zeros) of the given shapes; scalars in [0.5, 2]."""
    it = iter(shapes)
    values: list[Any] = []
    for arg in fusion.inputs:
        t = arg.type
        if isinstance(t, TensorType):
            data = rng.standard_normal(next(it)) + 0.25
            values.append(data.astype(numpy_dtype(t.element_type)))
        else:
            values.append(float(rng.uniform(0.5, 2.0)))
    return values


# --------------------------------------------------------------------------------------------
# Running a lowered program on the CPU


def run_lowered(
    lowering: HostLowering, inputs: Sequence[Any]
) -> tuple[list[np.ndarray], FakeDevice]:
    device = FakeDevice()
    kernels = {s.kernel_name: ReferenceKernel(s.fusion, device) for s in lowering.segments}
    evaluator = HostEvaluator(lowering.program, kernels, backend=device)
    outputs = evaluator.run(call_of(evaluator, inputs))
    assert not device.buffers, "the program leaked device memory"
    return outputs, device


def check_against_reference(
    original: fu.FusionOp, lowering: HostLowering, shapes: Sequence[tuple[int, ...]], seed: int
) -> FakeDevice:
    inputs = random_inputs(original, shapes, np.random.default_rng(seed))
    expected = evaluate(original, inputs)
    got, device = run_lowered(lowering, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)
    return device


def segmented(
    text: str, shapes: Sequence[tuple[int, ...]], rule: str | None = None
) -> tuple[fu.FusionOp, fu.FusionOp, FusionInfo]:
    """(original, segmented, info) for a fusion text and input shapes."""
    _, original = parse(text)
    _, fusion = parse(text)
    info = fusion_info(fusion, list(shapes), DeviceInfo())
    segment_fusion(fusion, info, should_merge=MERGE_RULES[rule] if rule else None)
    return original, fusion, info


def program_ops(lowering: HostLowering) -> list[Operation]:
    return list(lowering.program.body.block.ops)


def check_structure(lowering: HostLowering, fusion: fu.FusionOp) -> None:
    """Launches in segment order with the kernels' parameters, one allocation per segment
    result before its launch, a deallocation of each intermediate right after its last use,
    the fusion's outputs returned, and a module that verifies."""
    module = ModuleOp([lowering.program.clone(), *(k.clone() for k in lowering.kernels)])
    module.verify()
    ops = program_ops(lowering)
    launches = [op for op in ops if isinstance(op, host.LaunchOp)]
    assert [op.kernel.root_reference.data for op in launches] == [
        s.kernel_name for s in lowering.segments
    ]
    for launch, seg in zip(launches, lowering.segments, strict=True):
        types = [v.type for v in launch.params]
        params = seg.func.function_type.inputs.data
        assert len(types) == len(params)
        for t, p in zip(types, params, strict=True):
            if isinstance(t, TensorType):
                assert p == kernel.TensorParamType(t.element_type, t.get_num_dims())
            else:
                assert p == t
        assert launch.block_dims == seg.launch.block
        assert launch.smem.value.data == seg.launch.shared_bytes
        for out in launch.outs:
            alloc = out.owner
            assert isinstance(alloc, host.AllocateOp)
            assert ops.index(alloc) < ops.index(launch)
    ret = ops[-1]
    assert isinstance(ret, host.ReturnOp)
    returned = set(ret.values)
    allocs = [op for op in ops if isinstance(op, host.AllocateOp)]
    segments = [op for op in fusion.body.block.ops if isinstance(op, fu.SegmentOp)]
    assert len(allocs) == sum(len(s.outputs) for s in segments) or not segments
    for alloc in allocs:
        frees = [
            u.operation for u in alloc.result.uses if isinstance(u.operation, host.DeallocateOp)
        ]
        if alloc.result in returned:
            assert not frees
            continue
        (free,) = frees
        readers = [
            ops.index(u.operation)
            for u in alloc.result.uses
            if isinstance(u.operation, host.LaunchOp)
        ]
        # right after the launch that reads it last (other deallocations may sit between)
        last = max(readers)
        assert ops.index(free) > last
        assert all(isinstance(op, host.DeallocateOp) for op in ops[last + 1 : ops.index(free)])


# --------------------------------------------------------------------------------------------
# The cases


@pytest.mark.parametrize("shape", [(1, 1), (3, 127), (64, 1024)])
def test_layer_norm_one_launch(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    shapes = [shape, shape[1:], shape[1:]]
    original, fusion, info = segmented(LAYER_NORM, shapes)
    lowering = lower_fusion(fusion, info)
    check_structure(lowering, fusion)
    ops = program_ops(lowering)
    assert [s.scheduler.name for s in lowering.segments] == ["persistent"]
    assert sum(isinstance(op, host.AllocateOp) for op in ops) == 3  # y, mean, invstd
    assert not any(isinstance(op, host.DeallocateOp) for op in ops)
    assert lowering.program.attributes["fuser.shapes"].data == format_shapes(info)  # type: ignore[attr-defined]
    check_against_reference(original, lowering, shapes, int(rng.integers(1 << 30)))


@pytest.mark.parametrize(
    ("shape", "schedulers"),
    [((3, 127), ["persistent"]), ((3, 70000), ["reduction", "pointwise"])],
)
def test_sum_broadcast(
    rng: np.random.Generator, shape: tuple[int, int], schedulers: list[str]
) -> None:
    original, fusion, info = segmented(SUM_BROADCAST, [shape, shape])
    lowering = lower_fusion(fusion, info)
    check_structure(lowering, fusion)
    assert [s.scheduler.name for s in lowering.segments] == schedulers
    plan_memory(lowering.program)
    device = check_against_reference(original, lowering, [shape, shape], int(rng.integers(1 << 30)))
    if len(schedulers) == 2:
        # the row sums live in a workspace for the call; freed once the division has run
        assert [e[0] for e in device.log] == ["alloc", "launch", "launch", "free"]
        assert device.log[0][1] == 256  # 3 f32 values, one aligned buffer


def test_segment_sets(rng: np.random.Generator) -> None:
    shapes = [(5, 33), (5, 33)]
    original, fusion, info = segmented(SEGMENT_SETS, shapes)
    lowering = lower_fusion(fusion, info)
    check_structure(lowering, fusion)
    # (constants left out; each launch's grid is its kernel's, computed per call: host.grid)
    names = [type(op).__name__ for op in program_ops(lowering) if not isinstance(op, ConstantOp)]
    assert names == [
        "DimOp",
        "DimOp",
        "AllocateOp",  # %s1
        "GridOp",
        "LaunchOp",
        "AllocateOp",  # %t (an output)
        "AllocateOp",  # %s2
        "GridOp",
        "LaunchOp",
        "DeallocateOp",  # %s1
        "AllocateOp",  # %n
        "GridOp",
        "LaunchOp",
        "DeallocateOp",  # %s2
        "ReturnOp",
    ]
    check_against_reference(original, lowering, shapes, int(rng.integers(1 << 30)))


def test_two_reductions(rng: np.random.Generator) -> None:
    shapes = [(9, 31)]
    original, fusion, info = segmented(TWO_REDUCTIONS, shapes)
    lowering = lower_fusion(fusion, info)
    check_structure(lowering, fusion)
    assert [s.scheduler.name for s in lowering.segments] == ["reduction", "reduction"]
    text = str(lowering.program)
    assert "%m = host.allocate(%x_d0) : tensor<?xf32>" in text  # rows of x
    assert "%s = host.allocate(%x_d1) : tensor<?xf32>" in text  # columns of x
    check_against_reference(original, lowering, shapes, int(rng.integers(1 << 30)))


@pytest.mark.parametrize("rule", ["none", "standalone-host-ops"])
def test_merge_rules(rng: np.random.Generator, rule: str) -> None:
    shapes = [(4, 7), (7,), (7,)]
    original, fusion, info = segmented(LAYER_NORM, shapes, rule)
    lowering = lower_fusion(fusion, info)
    check_structure(lowering, fusion)
    segments = [op for op in fusion.body.block.ops if isinstance(op, fu.SegmentOp)]
    assert len(lowering.segments) == len(segments) > 5
    assert all(s.label == "" for s in lowering.segments)
    # segments that name no scheduler get the first that accepts them, named in the kernel
    for s in lowering.segments:
        assert s.kernel_name == f"layer_norm_s{s.index}_{s.scheduler.name}"
    check_against_reference(original, lowering, shapes, int(rng.integers(1 << 30)))


@pytest.mark.parametrize("shape", [(3, 3000), (127, 1)])
def test_five_segments(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    shapes = [shape, shape[1:]]
    original, fusion, info = segmented(FIVE, shapes)
    lowering = lower_fusion(fusion, info, kernel_prefix="fuser_five_p0")
    check_structure(lowering, fusion)
    assert len(lowering.segments) == 5
    assert lowering.segments[0].kernel_name.startswith("fuser_five_p0_s0_")
    check_against_reference(original, lowering, shapes, int(rng.integers(1 << 30)))


@pytest.mark.parametrize(
    ("text", "lowered", "others"),
    [
        (SEGMENT_SETS, [(5, 33), (5, 33)], [[(1, 1), (1, 1)], [(7, 3), (7, 3)]]),
        (TWO_REDUCTIONS, [(9, 31)], [[(1, 64)], [(31, 2)]]),
        (SUM_BROADCAST, [(3, 70000), (3, 70000)], [[(2, 5), (2, 5)], [(6, 1), (6, 1)]]),
    ],
)
def test_programs_run_other_shapes(
    rng: np.random.Generator,
    text: str,
    lowered: list[tuple[int, ...]],
    others: list[list[tuple[int, ...]]],
) -> None:
    """Allocations follow the input shapes: one program serves every signature its kernels
    do (the reference kernels here serve any)."""
    original, fusion, info = segmented(text, lowered)
    lowering = lower_fusion(fusion, info)
    for shapes in others:
        check_against_reference(original, lowering, shapes, int(rng.integers(1 << 30)))


def test_extents_come_from_the_inputs_that_carry_them() -> None:
    """The output of `z / broadcast(sum(x))` is allocated with z's extents; the row sums with
    x's first."""
    _, fusion, info = segmented(SUM_BROADCAST, [(3, 70000), (3, 70000)])
    text = str(lower_fusion(fusion, info).program)
    assert "%s = host.allocate(%x_d0) : tensor<?xf32>" in text
    assert "%y = host.allocate(%z_d0, %z_d1) : tensor<?x?xf32>" in text
    assert "host.dim %x[1]" not in text  # not needed by any allocation


def test_static_extents_need_no_dims(rng: np.random.Generator) -> None:
    text = """
fusion.fusion @s(%x: tensor<4x?xf32>) -> (tensor<4xf32>, tensor<4x?xf32>) {
  %m = fusion.sum %x [1] : tensor<4x?xf32> -> tensor<4xf32>
  %e = fusion.exp %x : tensor<4x?xf32>
  %s = fusion.segment_set %e : tensor<4x?xf32>
  %n = fusion.neg %s : tensor<4x?xf32>
  fusion.output %m, %n : tensor<4xf32>, tensor<4x?xf32>
}
"""
    original, fusion, info = segmented(text, [(4, 9)])
    lowering = lower_fusion(fusion, info)
    printed = str(lowering.program)
    assert "host.allocate() : tensor<4xf32>" in printed
    assert "host.dim %x[0]" not in printed and "host.dim %x[1]" in printed
    check_against_reference(original, lowering, [(4, 9)], int(rng.integers(1 << 30)))
    check_against_reference(original, lowering, [(4, 2)], int(rng.integers(1 << 30)))


def test_an_unsegmented_fusion_is_one_launch(rng: np.random.Generator) -> None:
    _, fusion = parse(LAYER_NORM)
    shapes = [(6, 10), (10,), (10,)]
    info = fusion_info(fusion, shapes, DeviceInfo())
    program, kernels = lower_to_host(fusion, info)
    assert [k.sym_name.data for k in kernels] == ["layer_norm_s0_persistent"]
    assert sum(isinstance(op, host.LaunchOp) for op in program.body.block.ops) == 1
    module, _ = parse(LAYER_NORM)
    again, _ = lower_to_host(module, info)  # a module with one fusion
    assert str(again) == str(program)


def test_outputs_that_are_inputs(rng: np.random.Generator) -> None:
    text = """
fusion.fusion @f(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %e = fusion.exp %x : tensor<?xf32>
  fusion.output %x, %e : tensor<?xf32>, tensor<?xf32>
}
"""
    original, fusion, info = segmented(text, [(7,)])
    lowering = lower_fusion(fusion, info)
    assert "host.return %x, %e" in str(lowering.program)
    inputs = random_inputs(original, [(7,)], rng)
    (same, e), _ = run_lowered(lowering, inputs)
    assert same is inputs[0]
    np.testing.assert_array_equal(e, evaluate(original, inputs)[1])
    only = """
fusion.fusion @g(%x: tensor<?xf32>) -> (tensor<?xf32>) {
  fusion.output %x : tensor<?xf32>
}
"""
    _, fusion, info = segmented(only, [(3,)])
    lowering = lower_fusion(fusion, info)
    assert lowering.segments == ()
    assert [type(op).__name__ for op in program_ops(lowering)] == ["ReturnOp"]


def test_a_segment_its_scheduler_rejects() -> None:
    text = """
fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %y = fusion.segment "reduction" (%x) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  ^bb0(%x0: tensor<?x?xf32>):
    %e = fusion.exp %x0 : tensor<?x?xf32>
    fusion.yield %e : tensor<?x?xf32>
  }
  fusion.output %y : tensor<?x?xf32>
}
"""
    _, fusion = parse(text)
    info = fusion_info(fusion, [(3, 4)], DeviceInfo())
    with pytest.raises(SchedulingError, match=r"segment @f_s0 names scheduler 'reduction', which"):
        lower_fusion(fusion, info)


def test_a_hand_written_segmentation_is_honoured(rng: np.random.Generator) -> None:
    """A segment naming a scheduler that accepts it keeps it, even where an earlier one in
    priority order would accept it too."""
    text = """
fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %y = fusion.segment "persistent" (%x) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
  ^bb0(%x0: tensor<?x?xf32>):
    %s = fusion.sum %x0 [1] : tensor<?x?xf32> -> tensor<?xf32>
    fusion.yield %s : tensor<?xf32>
  }
  fusion.output %y : tensor<?xf32>
}
"""
    _, fusion = parse(text)
    info = fusion_info(fusion, [(3, 64)], DeviceInfo())
    lowering = lower_fusion(fusion, info)
    (seg,) = lowering.segments
    assert seg.scheduler.name == "persistent" and seg.kernel_name == "f_s0_persistent"
    assert seg.func.attributes["fuser.scheduler"].data == "persistent"  # type: ignore[attr-defined]
    check_against_reference(fusion, lowering, [(3, 64)], int(rng.integers(1 << 30)))


# --------------------------------------------------------------------------------------------
# The pass


def test_pass_replaces_each_fusion_by_its_program_and_kernels() -> None:
    module = run_pass(
        SEGMENT_SETS,
        'fuser-segment{shapes="8x16,8x16"},fuser-lower-host{shapes="8x16,8x16"}',
    )
    ops = list(module.body.block.ops)
    assert isinstance(ops[0], host.ProgramOp) and ops[0].sym_name.data == "forced"
    assert [op.sym_name.data for op in ops[1:]] == [f"forced_s{k}_pointwise" for k in range(3)]
    assert all(isinstance(op, kernel.FuncOp) for op in ops[1:])
    assert not any(isinstance(op, fu.FusionOp) for op in module.walk())


def test_pass_reads_the_shapes_attribute() -> None:
    text = SUM_BROADCAST.replace(
        "-> (tensor<?x?xf32>) {",
        '-> (tensor<?x?xf32>) attributes {fuser.shapes = "3x70000,3x70000"} {',
    )
    module = run_pass(text, 'fuser-segment{shapes="3x70000,3x70000"},fuser-lower-host')
    names = [op.sym_name.data for op in module.body.block.ops]  # type: ignore[attr-defined]
    assert names == ["sum_div", "sum_div_s0_reduction", "sum_div_s1_pointwise"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ('fuser-lower-host{shapes="8x16"}', r"fuser-lower-host: shapes gives 1 shape\(s\)"),
        ('fuser-lower-host{shapes="8xa,8x16"}', r"fuser-lower-host: bad shape '8xa'"),
        (
            "fuser-lower-host",
            r"fuser-lower-host: input #0 \(%x\) of fusion @forced has dynamic dims",
        ),
    ],
)
def test_pass_option_errors(spec: str, message: str) -> None:
    with pytest.raises(ScheduleOptionError, match=message):
        run_pass(SEGMENT_SETS, spec)


def test_lower_to_host_needs_one_fusion() -> None:
    module, _ = parse(SEGMENT_SETS + LAYER_NORM)
    info = FusionInfo((None,))
    with pytest.raises(ValueError, match="the module holds 2 fusions, not one"):
        lower_to_host(module, info)


def test_examples_layer_norm_pipeline() -> None:
    text = (ROOT / "examples" / "layer_norm.mlir").read_text()
    shapes = '"4096x1024,1024,1024"'
    module = run_pass(text, f"fuser-segment{{shapes={shapes}}},fuser-lower-host{{shapes={shapes}}}")
    program = next(op for op in module.walk() if isinstance(op, host.ProgramOp))
    assert program.attributes["fuser.shapes"].data == "4096x1024,1024,1024"  # type: ignore[attr-defined]
