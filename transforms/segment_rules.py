"""Named merge rules for the segmenter: predicates that replace the scheduler check.

`segment_fusion(..., should_merge=...)` and `fuser-segment{merge=<name>}` let a predicate decide
which neighbouring groups merge instead of asking the schedulers, as nvFuser's
`custom_should_merge_groups` does (its multi-GPU host IR lowering uses one). A predicate gets two
`GroupView`s and returns whether their union may be one segment; the segmenter still refuses
merges that would span a `segment_set` or make the group graph cyclic. With a predicate set, no
scheduler is queried, segments name the scheduler `""`, and the Welford translation is off.

`MERGE_RULES` maps the names `fuser-segment{merge=...}` accepts to predicates:

- `none`: refuse every merge, so each op is a segment of its own.
- `standalone-host-ops`: never merge a group that holds an op nvFuser's host IR lowering runs as a
  standalone host op (`shouldMergeSegmentedGroups` in `csrc/host_ir/lower.cpp`): a matmul, a
  reduction (`sum`, `max`, `min`, `welford`, `var_mean`), a binary op (arithmetic and
  comparisons) or a plain `set`. Other ops (unary ops, casts, broadcasts, `where`) merge freely.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from fuser.dialects import fusion as fu


@dataclass(frozen=True)
class GroupView:
    """A group of ops as a merge predicate sees it (read-only: do not modify the ops).

    `ops` are the group's ops in block order (ops of the fusion being segmented; constants,
    `fusion.dim` and forwarded unary chains, which every segment recomputes, are not listed),
    `inputs` the values its segment would take (fusion inputs, including one read only for an
    extent, scalar inputs, and other groups' results), `outputs` its results that ops of other
    groups or the fusion's outputs use.
    """

    ops: tuple[Operation, ...]
    inputs: tuple[SSAValue, ...]
    outputs: tuple[SSAValue, ...]


MergePredicate = Callable[[GroupView, GroupView], bool]
"""Whether two neighbouring groups may merge into one segment."""

STANDALONE_HOST_OPS: tuple[type[Operation], ...] = (
    fu.MatmulOp,
    fu.ReductionOp,
    fu.WelfordOp,
    fu.VarMeanOp,
    fu.PartialSumOp,
    fu.BinaryOp,
    fu.SetOp,
)
"""Ops nvFuser's host lowering keeps as segments of their own (our names for them)."""


def never_merge(a: GroupView, b: GroupView) -> bool:
    """Refuses every merge: one segment per op."""
    return False


def standalone_host_ops(a: GroupView, b: GroupView) -> bool:
    """Merges two groups unless one of them holds a standalone host op."""
    return not any(isinstance(op, STANDALONE_HOST_OPS) for op in (*a.ops, *b.ops))


MERGE_RULES: dict[str, MergePredicate] = {
    "none": never_merge,
    "standalone-host-ops": standalone_host_ops,
}
"""The merge rules `fuser-segment{merge=...}` knows, by name."""


def merge_rule(name: str, where: str, error: type[Exception]) -> MergePredicate | None:
    """The predicate of a pass's `merge` option (None for ""); `error` naming `where` (the pass)
    and the known rules for an unknown name."""
    if not name:
        return None
    if name not in MERGE_RULES:
        known = ", ".join(sorted(MERGE_RULES))
        raise error(f"{where}: unknown merge rule {name!r}: expected one of {known}")
    return MERGE_RULES[name]
