"""Tests of the segmenter (`fuser.transforms.segment`): a segmented fusion computes what the
original computes (the numpy reference on fresh random inputs), every segment is accepted by
the scheduler it names, segments come in topological order and never span a `segment_set`, and
the merge predicate, the log, the extents and the pass options behave as documented.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from ir_helpers import context, parse
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, OpResult
from xdsl.passes import PassPipeline

from fuser.dialects import fusion as fu
from fuser.runtime.reference import evaluate
from fuser.transforms import get_all_passes
from fuser.transforms import segment as seg
from fuser.transforms.schedule import fusion_info
from fuser.transforms.schedulers import get_scheduler
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.segment import (
    GroupView,
    SegmentationError,
    SegmentedFusion,
    SegmentOptionError,
    segment_as_fusion,
    segment_calls,
    segment_fusion,
)
from fuser.transforms.segment_rules import MERGE_RULES

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMPY = {"f32": np.dtype(np.float32), "bf16": BF16, "f64": np.dtype(np.float64)}


def info_for(fusion: fu.FusionOp, shapes: Sequence[tuple[int, ...]]) -> FusionInfo:
    return fusion_info(fusion, list(shapes), DeviceInfo())


def random_inputs(
    fusion: fu.FusionOp, shapes: Sequence[tuple[int, ...]], rng: np.random.Generator
) -> list[object]:
    """Random inputs (never all zeros) of the given shapes; scalars are numbers in [0.5, 2]."""
    it = iter(shapes)
    values: list[object] = []
    for arg in fusion.inputs:
        t = arg.type
        if isinstance(t, TensorType):
            data = rng.standard_normal(next(it)) + 0.25
            values.append(data.astype(NUMPY[str(t.element_type)]))
        else:
            values.append(float(rng.uniform(0.5, 2.0)))
    return values


def check_segmented(
    result: SegmentedFusion,
    original: fu.FusionOp,
    shapes: Sequence[tuple[int, ...]],
    rng: np.random.Generator,
    segment_set_names: Sequence[str] = (),
) -> None:
    """Equal outputs on fresh inputs, topological order, no index arguments, no segment_set
    spanned, and (without a predicate) every segment accepted by the scheduler it names."""
    fusion = result.fusion
    body = [op for op in fusion.body.block.ops if not isinstance(op, fu.OutputOp)]
    assert all(isinstance(op, fu.SegmentOp) for op in body)
    assert list(result.segments) == body
    seen: set[Operation] = set()
    for segment in result.segments:
        for arg in segment.args:
            assert isinstance(arg, BlockArgument) or (
                isinstance(arg, OpResult) and arg.op in seen
            ), "segments are not in topological order"
            assert not isinstance(arg.type, IndexType)
        for r in segment.outputs:
            assert isinstance(r.type, TensorType)
        seen.add(segment)
        for op in segment.body.block.ops:
            assert not isinstance(op, fu.SegmentSetOp)
            if op.results and op.results[0].name_hint in segment_set_names:
                assert all(isinstance(u.operation, fu.YieldOp) for u in op.results[0].uses), (
                    f"segment spans segment_set %{op.results[0].name_hint}"
                )
    if not result.custom_merge:
        info = info_for(fusion, shapes)
        for call in segment_calls(fusion, info):
            name = call.segment.scheduler.data
            verdict = get_scheduler(name).accepts(call.fusion, call.info)
            assert verdict, f"{name} rejects its segment: {verdict.reason}"
    else:
        assert all(s.scheduler.data == "" for s in result.segments)
    for _ in range(2):
        inputs = random_inputs(original, shapes, rng)
        expected = evaluate(original, inputs)
        got = evaluate(fusion, inputs)
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_array_equal(g, e)


def run_case(
    text: str,
    shapes: Sequence[tuple[int, ...]],
    *,
    should_merge: Callable[[GroupView, GroupView], bool] | None = None,
    seed: int = 0,
) -> SegmentedFusion:
    _, original = parse(text)
    _, fusion = parse(text)
    info = info_for(fusion, shapes)
    names = [
        op.result.name_hint or "" for op in fusion.body.block.ops if isinstance(op, fu.SegmentSetOp)
    ]
    result = segment_fusion(fusion, info, should_merge=should_merge)
    check_segmented(result, original, shapes, np.random.default_rng(seed), names)
    return result


# --------------------------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
LAYER_NORM = (ROOT / "examples" / "layer_norm.mlir").read_text()

LIT = ROOT / "lit_tests" / "transforms" / "segment"
SUM_BROADCAST = (LIT / "sum_broadcast.mlir").read_text()
SEGMENT_SETS = (LIT / "segment_set.mlir").read_text()
TWO_REDUCTIONS = (LIT / "two_reductions.mlir").read_text()
FIVE = (LIT / "five_segments.mlir").read_text()
MERGE_RULES_CASE = (LIT / "merge_rules.mlir").read_text()


def op_names(segment: fu.SegmentOp) -> list[str]:
    return [op.name.removeprefix("fusion.") for op in segment.body.block.ops][:-1]


@pytest.mark.parametrize("shape", [(1, 1), (3, 127), (127, 3), (64, 1024)])
def test_layer_norm_is_one_persistent_segment(shape: tuple[int, int]) -> None:
    result = run_case(LAYER_NORM, [shape, shape[1:], shape[1:]])
    assert result.schedulers == ("persistent",)
    assert result.log[1] == "whole fusion: accepted by persistent"
    (segment,) = result.segments
    # the fusion's outputs first, in their order
    assert [r.name_hint for r in segment.outputs] == ["y", "mean", "invstd"]


@pytest.mark.parametrize("shape", [(3, 127), (127, 5), (1, 1)])
def test_sum_broadcast_is_one_normalization_segment(shape: tuple[int, int]) -> None:
    result = run_case(SUM_BROADCAST, [shape, shape])
    assert result.schedulers == ("persistent",)


def test_sum_broadcast_splits_when_rows_do_not_fit() -> None:
    """A row of 70000 f32 does not fit in registers: a reduction, then a pointwise segment whose
    broadcast extent comes from %z (the extent %x's dim names)."""
    shape = (3, 70000)
    result = run_case(SUM_BROADCAST, [shape, shape])
    assert result.schedulers == ("reduction", "pointwise")
    reduction, pointwise = result.segments
    assert op_names(reduction) == ["sum"]
    assert op_names(pointwise) == ["dim", "broadcast_in_dim", "div"]
    dim = next(iter(pointwise.body.block.ops))
    assert isinstance(dim, fu.DimOp) and dim.input is pointwise.body.block.args[0]
    assert [a.name_hint for a in pointwise.args] == ["z", "s"]


def test_segment_sets_force_exactly_their_segments() -> None:
    result = run_case(SEGMENT_SETS, [(5, 7), (5, 7)])
    assert result.schedulers == ("pointwise",) * 3
    assert [op_names(s) for s in result.segments] == [
        ["add", "exp", "set"],
        ["mul", "tanh", "set"],
        ["neg"],
    ]
    assert "whole fusion: not tried: it holds segment_set %s1" in result.log


def test_a_reduction_feeding_a_reduction_over_the_other_axis_is_two_segments() -> None:
    result = run_case(TWO_REDUCTIONS, [(127, 33)])
    assert result.schedulers == ("reduction", "reduction")
    assert [op_names(s) for s in result.segments] == [
        ["cast", "max"],
        ["dim", "cast", "broadcast_in_dim", "sub", "sum"],
    ]


def test_refusing_every_merge_gives_one_segment_per_op() -> None:
    result = run_case(LAYER_NORM, [(3, 127), (127,), (127,)], should_merge=MERGE_RULES["none"])
    _, fusion = parse(LAYER_NORM)
    # casts of inputs are forwarded; constants and dims are cloned: each other op is a segment
    compute = [
        op
        for op in fusion.body.block.ops
        if any(isinstance(r.type, TensorType) for r in op.results)
        and not (isinstance(op, fu.CastOp) and isinstance(op.input, BlockArgument))
    ]
    assert len(result.segments) == len(compute) == 12
    assert result.schedulers == ("",) * 12
    assert "whole fusion: not tried: a should_merge predicate is set" in result.log


@pytest.mark.parametrize("shape", [(3, 3000), (127, 1), (1, 127)])
def test_five_segments(shape: tuple[int, int]) -> None:
    result = run_case(FIVE, [shape, shape[1:]])
    assert len(result.segments) == 5
    if shape[0] > 1:  # with one row, the column max is a (trivial) persistent kernel
        assert result.schedulers == (
            "reduction",
            "persistent",
            "pointwise",
            "reduction",
            "reduction",
        )


@pytest.mark.parametrize(("rule", "count"), [("none", 5), ("standalone-host-ops", 4)])
def test_merge_rules_case(rule: str, count: int) -> None:
    result = run_case(MERGE_RULES_CASE, [(3, 127)], should_merge=MERGE_RULES[rule])
    assert len(result.segments) == count
    # with the schedulers instead, softmax-like normalization is one persistent segment
    assert run_case(MERGE_RULES_CASE, [(3, 127)]).schedulers == ("persistent",)


def test_standalone_host_ops_rule() -> None:
    """No segment holds a binary op, reduction or matmul together with another op (casts of
    inputs are recomputed in their consumers, constants and dims cloned)."""
    result = run_case(
        LAYER_NORM, [(3, 5), (5,), (5,)], should_merge=MERGE_RULES["standalone-host-ops"]
    )
    heavy_types = (fu.BinaryOp, fu.ReductionOp, fu.VarMeanOp, fu.MatmulOp, fu.SetOp)
    for segment in result.segments:
        ops = [
            op
            for op in segment.body.block.ops
            if not isinstance(op, fu.YieldOp | fu.DimOp | fu.ConstantOp)
            and not (isinstance(op, fu.CastOp) and isinstance(op.input, BlockArgument))
        ]
        if any(isinstance(op, heavy_types) for op in ops):
            assert len(ops) == 1, op_names(segment)
    # rsqrt and the broadcast of its result merged
    assert ["dim", "rsqrt", "broadcast_in_dim"] in [op_names(s) for s in result.segments]


# --------------------------------------------------------------------------------------------
# Random fusions
# --------------------------------------------------------------------------------------------

FULL, VEC = "tensor<?x?xf32>", "tensor<?xf32>"


def random_fusion(r: random.Random) -> tuple[str, list[str]]:
    """A random fusion over [N, D] tensors: pointwise ops, row and column reductions and
    broadcasts back, casts, scalars, segment_sets and dead ops. Returns the text and the kind
    of each tensor input ("full", "col", "bf16")."""
    args = ["%x0: tensor<?x?xf32>"]
    kinds = ["full"]
    lines = ["%n = fusion.dim %x0[0] : tensor<?x?xf32>", "%d = fusion.dim %x0[1] : tensor<?x?xf32>"]
    full = ["%x0"]
    rows: list[str] = []
    cols: list[str] = []
    if r.random() < 0.5:
        args.append("%x1: tensor<?x?xf32>")
        kinds.append("full")
        full.append("%x1")
    if r.random() < 0.5:
        args.append("%h: tensor<?x?xbf16>")
        kinds.append("bf16")
        lines.append("%hf = fusion.cast %h : tensor<?x?xbf16> -> tensor<?x?xf32>")
        full.append("%hf")
        if r.random() < 0.5:
            lines.append("%hn = fusion.neg %hf : tensor<?x?xf32>")
            full.append("%hn")
    if r.random() < 0.5:
        args.append("%v: tensor<?xf32>")
        kinds.append("col")
        cols.append("%v")
    scalar = "%c"
    if r.random() < 0.5:
        args.append("%s: f32")
        scalar = "%s"
    lines.append("%c = fusion.constant 5.000000e-01 : f32")
    counter = 0

    def fresh() -> str:
        nonlocal counter
        counter += 1
        return f"%v{counter}"

    for _ in range(r.randint(3, 12)):
        choice = r.random()
        v = fresh()
        if choice < 0.2:
            op = r.choice(["tanh", "neg", "abs", "sigmoid", "sin", "relu"])
            lines.append(f"{v} = fusion.{op} {r.choice(full)} : {FULL}")
            full.append(v)
        elif choice < 0.4:
            op = r.choice(["add", "sub", "mul", "maximum"])
            lines.append(f"{v} = fusion.{op} {r.choice(full)}, {r.choice(full)} : {FULL}")
            full.append(v)
        elif choice < 0.47:
            lines.append(f"{v} = fusion.mul {r.choice(full)}, {scalar} : ({FULL}, f32) -> {FULL}")
            full.append(v)
        elif choice < 0.62:
            op = r.choice(["sum", "max", "min"])
            axis = r.choice([0, 1])
            lines.append(f"{v} = fusion.{op} {r.choice(full)} [{axis}] : {FULL} -> {VEC}")
            (rows if axis == 1 else cols).append(v)
        elif choice < 0.77 and (rows or cols):
            if rows and (not cols or r.random() < 0.5):
                src, dims, size = r.choice(rows), 0, "%d"
            else:
                src, dims, size = r.choice(cols), 1, "%n"
            lines.append(
                f"{v} = fusion.broadcast_in_dim {src} [{dims}] sizes({size}) : {VEC} -> {FULL}"
            )
            full.append(v)
        elif choice < 0.83 and (rows or cols):
            pool = rows if rows and (not cols or r.random() < 0.5) else cols
            lines.append(f"{v} = fusion.add {r.choice(pool)}, %c : ({VEC}, f32) -> {VEC}")
            pool.append(v)
        elif choice < 0.92:
            lines.append(f"{v} = fusion.segment_set {r.choice(full)} : {FULL}")
            full.append(v)
        else:
            b = fresh()
            lines.append(f"{b} = fusion.cast {r.choice(full)} : {FULL} -> tensor<?x?xbf16>")
            lines.append(f"{v} = fusion.cast {b} : tensor<?x?xbf16> -> {FULL}")
            full.append(v)
    last = lines[-1].split(" = ")[0]
    values = {v: FULL for v in full} | {v: VEC for v in rows + cols}
    values.pop("%hf", None)
    values.pop("%hn", None)
    outputs = [last] if last in values else []
    for v in r.sample(sorted(values), min(len(values), r.randint(1, 2))):
        if v not in outputs:
            outputs.append(v)
    types = ", ".join(values[v] for v in outputs)
    body = "\n  ".join([*lines, f"fusion.output {', '.join(outputs)} : {types}"])
    text = f"fusion.fusion @random({', '.join(args)}) -> ({types}) {{\n  {body}\n}}\n"
    return text, kinds


SHAPES = [(1, 1), (3, 5), (127, 3), (5, 127), (2, 40000), (33, 65)]


def _shapes_for(kinds: Sequence[str], n: int, d: int) -> list[tuple[int, ...]]:
    return [(d,) if k == "col" else (n, d) for k in kinds]


@pytest.mark.parametrize("seed", range(40))
def test_random_fusions(seed: int) -> None:
    r = random.Random(seed)
    text, kinds = random_fusion(r)
    n, d = r.choice(SHAPES)
    try:
        run_case(text, _shapes_for(kinds, n, d), seed=seed)
    except Exception as e:
        raise AssertionError(f"seed {seed}, shape {(n, d)}:\n{text}") from e


@pytest.mark.parametrize("seed", range(20))
def test_random_fusions_with_a_random_predicate(seed: int) -> None:
    """Arbitrary merge decisions still give an acyclic, correct segmentation."""
    r = random.Random(1000 + seed)
    text, kinds = random_fusion(r)
    n, d = r.choice(SHAPES)
    coin = random.Random(seed)
    try:
        run_case(
            text,
            _shapes_for(kinds, n, d),
            should_merge=lambda a, b: coin.random() < 0.7,
            seed=seed,
        )
    except Exception as e:
        raise AssertionError(f"seed {seed}, shape {(n, d)}:\n{text}") from e


# --------------------------------------------------------------------------------------------
# The predicate, the log, extents, segment_as_fusion, segment_calls
# --------------------------------------------------------------------------------------------


class _NoScheduler:
    """Stands in for every scheduler: asking it is an error."""

    name = "forbidden"

    def accepts(self, fusion: fu.FusionOp, info: FusionInfo) -> None:
        raise AssertionError("a scheduler was queried although should_merge is set")


def test_should_merge_replaces_every_scheduler_query(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seg, "SCHEDULERS", (_NoScheduler(),))
    calls: list[tuple[GroupView, GroupView]] = []

    def only_pointwise(a: GroupView, b: GroupView) -> bool:
        calls.append((a, b))
        return not any(isinstance(op, fu.ReductionOp | fu.SegmentSetOp) for op in (*a.ops, *b.ops))

    result = run_case(SUM_BROADCAST, [(3, 5), (3, 5)], should_merge=only_pointwise)
    assert result.custom_merge
    assert result.schedulers == ("", "")
    assert [op_names(s) for s in result.segments] == [["sum"], ["dim", "broadcast_in_dim", "div"]]
    assert calls, "the predicate was never called"
    for a, b in calls:
        for view in (a, b):
            assert isinstance(view.ops, tuple) and isinstance(view.inputs, tuple)
            assert view.ops and all(
                isinstance(op, fu.SumOp | fu.BroadcastInDimOp | fu.DivOp) for op in view.ops
            )
            assert all(r.op in view.ops for r in view.outputs if isinstance(r, OpResult))
    # the first candidate is the broadcast and the division (the larger intermediate)
    a, b = calls[0]
    assert [op.name for op in a.ops] == ["fusion.broadcast_in_dim"]
    assert [op.name for op in b.ops] == ["fusion.div"]
    assert [v.name_hint for v in a.inputs] == ["x", "s"]  # %x for the extent of dim 1 only
    assert [v.name_hint for v in a.outputs] == ["sb"]
    assert [v.name_hint for v in b.inputs] == ["z", "sb"]
    assert [v.name_hint for v in b.outputs] == ["y"]
    # the sum's group reads %x, makes %s
    sums = [v for pair in calls for v in pair if isinstance(v.ops[0], fu.SumOp)]
    assert sums and [v.name_hint for v in sums[0].inputs] == ["x"]
    assert [v.name_hint for v in sums[0].outputs] == ["s"]


def _only(names: set[str]) -> Callable[[GroupView, GroupView], bool]:
    """A predicate that merges exactly the two ops called `names`."""
    return lambda a, b: {op.name.removeprefix("fusion.") for op in (*a.ops, *b.ops)} == names


def test_the_final_merge_takes_pairs_whose_levels_differ_by_more_than_one() -> None:
    text = """
fusion.fusion @f(%x: tensor<?xf32>, %y: tensor<?xf32>) -> (tensor<?xf32>) {
  %a = fusion.add %x, %x : tensor<?xf32>
  %b = fusion.neg %a : tensor<?xf32>
  %p = fusion.mul %y, %y : tensor<?xf32>
  %c = fusion.sub %b, %p : tensor<?xf32>
  fusion.output %c : tensor<?xf32>
}
"""
    result = run_case(text, [(7,), (7,)], should_merge=_only({"mul", "sub"}))
    assert [op_names(s) for s in result.segments] == [["add"], ["neg"], ["mul", "sub"]]
    assert not any(line.startswith("merge g2{mul %p}") for line in result.log)
    assert "final merge g2{mul %p} + g3{sub %c}: accepted by should_merge" in result.log


def test_a_merge_that_would_make_a_cycle_is_refused() -> None:
    text = """
fusion.fusion @f(%x: tensor<?xf32>) -> (tensor<?xf32>) {
  %a = fusion.add %x, %x : tensor<?xf32>
  %b = fusion.neg %a : tensor<?xf32>
  %c = fusion.mul %a, %b : tensor<?xf32>
  fusion.output %c : tensor<?xf32>
}
"""
    calls: list[set[str]] = []
    merge_ends = _only({"add", "mul"})

    def predicate(a: GroupView, b: GroupView) -> bool:
        calls.append({op.name for op in (*a.ops, *b.ops)})
        return merge_ends(a, b)

    result = run_case(text, [(7,)], should_merge=predicate)
    assert len(result.segments) == 3
    assert "final merge g0{add %a} + g2{mul %c}: refused: cycle through g1{neg %b}" in result.log
    assert {"fusion.add", "fusion.mul"} not in calls  # refused before asking


def test_a_segment_takes_a_fusion_input_for_an_extent_only() -> None:
    """With every merge refused, the broadcast of the sum has no tensor input of extent D: it
    takes %x, reads only its extent, and the pointwise scheduler accepts it as it is."""
    _, fusion = parse(SUM_BROADCAST)
    result = segment_fusion(fusion, None, should_merge=MERGE_RULES["none"])
    broadcast = result.segments[1]
    assert op_names(broadcast) == ["dim", "broadcast_in_dim"]
    assert [a.name_hint for a in broadcast.args] == ["x", "s"]
    calls = segment_calls(fusion, info_for(fusion, [(3, 127), (3, 127)]))
    assert [c.output_shapes for c in calls] == [((3,),), ((3, 127),), ((3, 127),)]
    assert calls[1].info.inputs == (TensorMeta.contiguous((3, 127)), TensorMeta.contiguous((3,)))
    for call, name in zip(calls, ["reduction", "pointwise", "pointwise"], strict=True):
        assert get_scheduler(name).accepts(call.fusion, call.info)
    assert calls[1].fusion.sym_name.data == "sum_div_s1"


def test_segment_as_fusion() -> None:
    _, fusion = parse(SEGMENT_SETS)
    segment_fusion(fusion, info_for(fusion, [(2, 3), (2, 3)]))
    second = [op for op in fusion.body.block.ops if isinstance(op, fu.SegmentOp)][1]
    standalone = segment_as_fusion(second, "second")
    assert standalone.sym_name.data == "second"
    assert [str(t) for t in standalone.function_type.inputs.data] == [FULL, FULL]
    assert [v.name_hint for v in standalone.output_op.values] == ["t", "s2"]
    assert isinstance(standalone.output_op.values[1].owner, fu.SetOp)
    assert standalone.parent is None and second.parent is not None  # a copy
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    x, s1 = args
    t = np.tanh(s1 * x)
    got = evaluate(standalone, args)
    np.testing.assert_array_equal(got[0], t)
    np.testing.assert_array_equal(got[1], t)


def test_segment_as_fusion_rejects_index_arguments() -> None:
    _, fusion = parse((ROOT / "lit_tests" / "dialects" / "fusion" / "segment.mlir").read_text())
    segments = [op for op in fusion.body.block.ops if isinstance(op, fu.SegmentOp)]
    assert segment_as_fusion(segments[0], "a").verify() is None
    with pytest.raises(SegmentationError, match="input #3 of the segment has type index"):
        segment_as_fusion(segments[1], "b")


def test_log_names_each_candidate_and_every_rejection() -> None:
    _, fusion = parse(SUM_BROADCAST)
    log: list[str] = []
    result = segment_fusion(fusion, info_for(fusion, [(3, 70000), (3, 70000)]), log=log)
    assert tuple(log) == result.log
    assert log[0] == "segmenter: fusion @sum_div"
    whole = log[1]
    assert whole.startswith(
        "whole fusion: rejected: transpose: not a pointwise fusion (the pointwise scheduler says "
        "why); pointwise: 'fusion.sum' (%s) is a reduction"
    )
    assert "; reduction: it has persistent buffers" in whole
    assert "; persistent: row of 70000 f32 elements does not fit in registers" in whole
    assert log[2] == "initial groups: g0{sum %s} g1{broadcast_in_dim %sb} g2{div %y}"
    assert log[3] == "merge g1{broadcast_in_dim %sb} + g2{div %y}: accepted by pointwise"
    assert log[4].startswith("merge g0{sum %s} + g3{broadcast_in_dim %sb, div %y}: rejected: ")
    assert (
        log[-1] == 'segments: "reduction" g0{sum %s}, "pointwise" g3{broadcast_in_dim %sb, div %y}'
    )


def test_forwarded_chains_are_recomputed_in_each_consumer() -> None:
    text = """
fusion.fusion @f(%x: tensor<?x?xbf16>) -> (tensor<?xf32>, tensor<?xf32>) {
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %a = fusion.abs %xf : tensor<?x?xf32>
  %r = fusion.sum %a [1] : tensor<?x?xf32> -> tensor<?xf32>
  %c = fusion.sum %a [0] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %r, %c : tensor<?xf32>, tensor<?xf32>
}
"""
    result = run_case(text, [(5, 7)], should_merge=MERGE_RULES["none"])
    assert [op_names(s) for s in result.segments] == [
        ["cast", "abs", "sum"],
        ["cast", "abs", "sum"],
    ]
    assert "forwarded (recomputed in each consumer segment): cast %xf, abs %a" in result.log


def test_chains_stop_at_segment_sets_outputs_and_second_uses() -> None:
    text = """
fusion.fusion @f(%x: tensor<?x?xbf16>, %y: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %a = fusion.neg %xf : tensor<?x?xf32>
  %s = fusion.segment_set %a : tensor<?x?xf32>
  %e = fusion.exp %y : tensor<?x?xf32>
  %m = fusion.mul %s, %e : tensor<?x?xf32>
  %t = fusion.tanh %y : tensor<?x?xf32>
  %u = fusion.abs %t : tensor<?x?xf32>
  %v = fusion.sin %t : tensor<?x?xf32>
  %w = fusion.add %u, %v : tensor<?x?xf32>
  %ws = fusion.segment_set %w : tensor<?x?xf32>
  fusion.output %m, %e, %ws : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
"""
    result = run_case(text, [(3, 4), (3, 4)])
    # %a feeds a segment_set, %e is an output, %t has two uses: only %xf and %t are forwarded
    assert "forwarded (recomputed in each consumer segment): cast %xf, tanh %t" in result.log
    assert [op_names(s) for s in result.segments] == [
        ["cast", "neg", "set"],
        ["exp", "mul"],
        ["tanh", "abs", "sin", "add", "set"],
    ]


def test_dead_ops_are_erased() -> None:
    text = """
fusion.fusion @f(%x: tensor<?xf32>) -> (tensor<?xf32>) {
  %dead = fusion.exp %x : tensor<?xf32>
  %dead2 = fusion.sum %dead [0] : tensor<?xf32> -> tensor<f32>
  %y = fusion.neg %x : tensor<?xf32>
  %z = fusion.abs %y : tensor<?xf32>
  fusion.output %z : tensor<?xf32>
}
"""
    result = run_case(text, [(9,)])
    assert result.schedulers == ("pointwise",)
    assert op_names(result.segments[0]) == ["neg", "abs"]


def test_an_output_that_is_an_input_needs_no_segment() -> None:
    text = """
fusion.fusion @f(%x: tensor<?xf32>) -> (tensor<?xf32>) {
  fusion.output %x : tensor<?xf32>
}
"""
    result = run_case(text, [(4,)])
    assert result.segments == ()
    assert result.log[-1] == "segments: none"


def test_an_op_no_scheduler_accepts_is_an_error() -> None:
    # a batched matmul of more batches than a grid's z dimension holds (65535)
    text = """
fusion.fusion @mm(%a: tensor<?x?x?xf32>, %b: tensor<?x?x?xf32>) -> (tensor<?x?x?xf32>) {
  %m = fusion.matmul %a, %b : tensor<?x?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?x?xf32>
  %r = fusion.relu %m : tensor<?x?x?xf32>
  fusion.output %r : tensor<?x?x?xf32>
}
"""
    _, fusion = parse(text)
    shapes = [(70000, 4, 8), (70000, 8, 3)]
    with pytest.raises(SegmentationError, match=r"no scheduler accepts segment g0\{matmul %m\}"):
        segment_fusion(fusion, info_for(fusion, shapes))
    # a predicate still segments it
    result = run_case(text, shapes, should_merge=MERGE_RULES["standalone-host-ops"])
    assert [op_names(s) for s in result.segments] == [["matmul"], ["relu"]]


def test_segmenting_twice_is_an_error() -> None:
    _, fusion = parse(SUM_BROADCAST)
    info = info_for(fusion, [(3, 5), (3, 5)])
    segment_fusion(fusion, info)
    with pytest.raises(SegmentationError, match="already segmented"):
        segment_fusion(fusion, info)
    with pytest.raises(ValueError, match="needs a FusionInfo"):
        segment_fusion(parse(SUM_BROADCAST)[1], None)


# --------------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------------


def run_pass(text: str, spec: str) -> ModuleOp:
    module, _ = parse(text)
    passes = {name: factory for name, factory in get_all_passes().items()}
    PassPipeline.parse_spec(passes, spec).apply(context(), module)
    return module


def test_pass_segments_every_fusion_and_skips_segmented_ones() -> None:
    module = run_pass(SUM_BROADCAST + LAYER_NORM, "fuser-segment{merge=none}")
    fusions = [op for op in module.walk() if isinstance(op, fu.FusionOp)]
    counts = [sum(isinstance(op, fu.SegmentOp) for op in f.body.block.ops) for f in fusions]
    assert counts == [3, 12]
    again = run_pass(str(module), "fuser-segment{merge=none}")
    assert str(again) == str(module)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "fuser-segment{merge=never}",
            "unknown merge rule 'never': expected one of none, standalone-host-ops",
        ),
        ('fuser-segment{shapes="3x5"}', "shapes gives 1 shape(s), but fusion @sum_div has 2"),
        ('fuser-segment{shapes="3xq,3x5"}', "bad shape '3xq'"),
        ("fuser-segment", "input #0 (%x) of fusion @sum_div has dynamic dims"),
        ('fuser-segment{arch=hopper shapes="3x5,3x5"}', "bad arch 'hopper'"),
        ('fuser-segment{sm_count=0 shapes="3x5,3x5"}', "sm_count must be at least 1, got 0"),
        ('fuser-segment{merge=none shapes="3x5"}', "shapes gives 1 shape(s)"),
    ],
)
def test_pass_option_errors(spec: str, message: str) -> None:
    with pytest.raises(SegmentOptionError) as e:
        run_pass(SUM_BROADCAST, spec)
    assert str(e.value).startswith("fuser-segment: ")
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_pass_with_a_merge_rule_reports_recorded_shapes_that_do_not_fit() -> None:
    """A merge rule segments without shapes, but a record on the fusion that does not fit its
    inputs is an option error (it was an AttributeError on the missing info)."""
    header = "(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?x?xf32>) {"
    assert header in SUM_BROADCAST
    text = SUM_BROADCAST.replace(
        header, header.replace(" {", ' attributes {fuser.shapes = "3x5"} {'), 1
    )
    with pytest.raises(SegmentOptionError) as e:
        run_pass(text, "fuser-segment{merge=none}")
    assert str(e.value).startswith("fuser-segment: ")
    assert "shapes gives 1 shape(s), but fusion @sum_div has 2" in str(e.value)


def test_an_extent_comes_from_a_view_of_an_input_not_a_result() -> None:
    """The fuzzer's program 779966: a Welford translated before segmenting needs the extent of
    log(x[-4095:4094]), which a take reads at an index. The extent is taken from the slice (a
    view of the input, no kernel), so the log's result is not made an output of the kernel
    that holds the take (which could not write it: the take reads it at an index)."""
    from fuser import DataType, FusionDefinition

    with FusionDefinition("fuzz", welford="always") as fd:
        x = fd.define_tensor([-1, -1], DataType.Double)
        i = fd.define_tensor([-1], DataType.Int)
        v = fd.ops.slice(fd.ops.log(x), [-4095, 0], [4094, 2**63 - 1], [1, 1])
        b = fd.ops.broadcast_in_dim(v, shape=[v.size(0), 1, v.size(1)], broadcast_dims=[0, 2])
        fd.add_output(fd.ops.index_select(b, i, dim=-1))
        fd.add_output(fd.ops.welford(v, dims=[0])[2])
    a, index = np.full((3, 2), 2.0), np.array([0, -1], np.int64)
    kernels = [k.scheduler for k in fd.compile([a, index], arch="sm_90").kernels]
    assert "pointwise" in kernels
    taken, n = fd.reference([a, index])
    np.testing.assert_allclose(taken, np.full((3, 1, 2), np.log(2.0)))
    np.testing.assert_array_equal(n, [3, 3])
