"""The analysis of a fusion with reductions (types only) that the reduction and persistent
schedulers share.

**Structure (types only).** A fusion the two templates take has one or more reductions (`sum`,
`max`, `min`, `welford`, `var_mean`) of the same input rank and axes: their inputs span the
*space*, the reduction input's shape. Every other op is pointwise. Each value is needed under
`DimMap`s onto the space (see `iteration_space`): a reduction's input under the identity map, a
reduction's result under its *natural map* (the kept dims), outputs of the reduced shape under the
natural map of a reduction, outputs of the full shape under the identity map. The phases of a
kernel follow: stage 0 (the reductions whose inputs need no reduction result), stage 1 (those
that need a stage 0 result, e.g. softmax's sum after its max), ..., the epilogue on reduced
values, and the full-shape outputs. A fusion has *persistent buffers* when a later stage or a
full-shape output uses per-element values together with a reduction result: then every row must
stay on chip until its reductions are done (the persistent scheduler); otherwise one streaming
pass reads each element once (the reduction scheduler).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    MappingError,
    Needs,
    body_ops,
    expand,
    identity_map,
    operand_maps,
)
from fuser.transforms.schedulers.kernel_builder import op_label, value_name
from fuser.transforms.schedulers.scalar_lowering import is_pointwise

REDUCTION_OPS = (fu.ReductionOp, fu.WelfordOp, fu.VarMeanOp)
INT32_MAX = 2**31 - 1

Key = tuple[SSAValue, DimMap]
"""A value under a map: what `compute_element` keys its scalars by."""


def reduction_axes(op: Operation) -> tuple[int, ...]:
    assert isinstance(op, (*REDUCTION_OPS, fu.PartialSumOp))
    return tuple(op.axes.get_values())


def reduction_input(op: Operation) -> SSAValue:
    assert isinstance(op, (*REDUCTION_OPS, fu.PartialSumOp))
    return op.input


def natural_map(op: Operation, result: SSAValue, rank: int) -> DimMap:
    """How a reduction's result is indexed from the space: its dims are the kept dims (with
    `keepdim`, reduced dims stay as extent 1 and map to index 0; a row split's partial sums
    keep the reduced dim as the split index, which the kernel adds: index 0 here)."""
    axes = reduction_axes(op)
    keepdim = isinstance(op, fu.PartialSumOp) or getattr(op, "keepdim", None) is not None
    dims: list[int | None] = (
        [None if d in axes else d for d in range(rank)]
        if keepdim
        else [d for d in range(rank) if d not in axes]
    )
    t = cast(TensorType, result.type)
    return tuple(None if e == 1 else d for e, d in zip(t.get_shape(), dims, strict=True))


def reduced_map(t: Attribute, rank: int, axes: Sequence[int]) -> DimMap | None:
    """The map of an output of type `t` if it has the reduced shape (with or without the
    reduced dims kept as 1), else None."""
    if not isinstance(t, TensorType):
        return None
    shape = t.get_shape()
    kept = [d for d in range(rank) if d not in axes]
    if len(shape) == len(kept):
        return tuple(None if e == 1 else d for e, d in zip(shape, kept, strict=True))
    if len(shape) == rank and all(shape[d] == 1 for d in axes):
        return tuple(None if e == 1 or d in axes else d for d, e in enumerate(shape))
    return None


def _merge(into: Needs, more: Needs) -> None:
    for value, maps in more.items():
        known = into.setdefault(value, [])
        known.extend(m for m in maps if m not in known)


def has_dims(m: DimMap, dims: Sequence[int]) -> bool:
    return any(d in dims for d in m if d is not None)


# --------------------------------------------------------------------------------------------
# Structure: what the fusion computes, from its types
# --------------------------------------------------------------------------------------------


class Structure:
    """The reductions of a fusion, their stages, and the maps each phase needs values under."""

    def __init__(self, fusion: fu.FusionOp, partials: bool = False) -> None:
        self.fusion = fusion
        ops = body_ops(fusion)
        self.pointwise: list[Operation] = [op for op in ops if is_pointwise(op)]
        self.reductions: list[Operation] = [op for op in ops if isinstance(op, REDUCTION_OPS)]
        self.partials: list[fu.PartialSumOp] = [op for op in ops if isinstance(op, fu.PartialSumOp)]
        """Partial sums over the rows of the space (axis 0 of a 2-D space), taken with
        `partials` only: their inputs are needed per element after the last stage, and each
        is stored as an output of its own (`partial_outputs`)."""
        self.row_splits = 1
        """Blocks each row is split across: the reductions are partial sums over the reduced
        (fastest) dim, each block summing one chunk of a row (`split-reductions` writes them
        for a few long rows); 1 otherwise."""
        self.error: str | None = None
        self.persistent_reason: str | None = None
        for op in ops:
            if isinstance(op, fu.SegmentSetOp):
                self.error = f"{op_label(op)} marks a kernel boundary"
                return
            if not (
                is_pointwise(op) or isinstance(op, (fu.DimOp, fu.PartialSumOp, *REDUCTION_OPS))
            ):
                self.error = f"{op_label(op)} is not a pointwise op or a reduction"
                return
        if self.partials and not partials:
            self.error = self._row_split_error()
            if self.error is not None:
                return
            self.row_splits = self.partials[0].split_count
            self.reductions, self.partials = list(self.partials), []
        if not self.reductions and not self.partials:
            self.error = "the fusion has no reduction"
            return
        if partials and not self.partials:
            self.error = "no 'fusion.partial_sum' over rows (the persistent scheduler's form)"
            return
        first = self.reductions[0] if self.reductions else self.partials[0]
        in_type = cast(TensorType, reduction_input(first).type)
        self.rank = in_type.get_num_dims()
        self.axes = reduction_axes(first) if self.reductions else (1,)
        self.kept_axes = tuple(d for d in range(self.rank) if d not in self.axes)
        if self.partials and (error := self._partials_error(in_type)) is not None:
            self.error = error
            return
        for op in self.reductions[1:]:
            t = cast(TensorType, reduction_input(op).type)
            if reduction_axes(op) != self.axes or not fu.shapes_compatible(
                t.get_shape(), in_type.get_shape()
            ):
                self.error = (
                    f"{op_label(op)} reduces {fu.format_shape(t.get_shape())} over "
                    f"{list(reduction_axes(op))}, but {op_label(first)} reduces "
                    f"{fu.format_shape(in_type.get_shape())} over {list(self.axes)}: one kernel "
                    "takes reductions of one shape over the same axes"
                )
                return
        try:
            self._analyze()
        except MappingError as e:
            self.error = str(e)

    @property
    def space_value(self) -> SSAValue:
        """A value of the space's shape: the first reduction's input (or partial sum's)."""
        return reduction_input(self.reductions[0] if self.reductions else self.partials[0])

    def _row_split_error(self) -> str | None:
        """Why the partial sums of a fusion are not a row split, or None: partial sums (and no
        other reduction) over the last dim of inputs of one shape, into the same number of
        chunks, each a fusion output used by nothing else (the kernel stores chunk s of row r
        at [r, s]: no epilogue reads it)."""
        first = self.partials[0]
        shape = cast(TensorType, first.input.type).get_shape()
        if self.reductions:
            return (
                f"{op_label(first)} is a partial sum beside {op_label(self.reductions[0])}: a row "
                "split's kernel takes partial sums only"
            )
        outputs = set(self.fusion.output_op.values)
        for op in self.partials:
            t = cast(TensorType, op.input.type)
            if op.axis != t.get_num_dims() - 1:
                return (
                    f"{op_label(op)} sums chunks of dim {op.axis}, not the last: the inner-outer "
                    "scheduler takes partial sums over rows"
                )
            if not fu.shapes_compatible(t.get_shape(), shape):
                return (
                    f"{op_label(op)} sums a {fu.format_shape(t.get_shape())} tensor, "
                    f"{op_label(first)} a {fu.format_shape(shape)} one"
                )
            if op.split_count != first.split_count:
                return (
                    f"{op_label(op)} has {op.split_count} chunks a row, {op_label(first)} "
                    f"{first.split_count}: one kernel splits its rows one way"
                )
            if (error := _outputs_only_error(op, outputs)) is not None:
                return error
        return None

    def _partials_error(self, in_type: TensorType) -> str | None:
        """Why the partial sums do not fit the inner-outer form, or None: a 2-D space whose
        reductions (if any) reduce dim 1, partial sums over dim 0 of it, each a fusion output
        used by nothing else."""
        if self.rank != 2 or self.axes != (1,):
            first = self.reductions[0] if self.reductions else self.partials[0]
            return (
                f"{op_label(first)} reduces dims {list(self.axes)} of a rank-{self.rank} tensor: "
                "partial sums over rows go with reductions over dim 1 of a 2-D tensor"
            )
        outputs = set(self.fusion.output_op.values)
        for op in self.partials:
            shape = cast(TensorType, op.input.type).get_shape()
            if op.axis != 0:
                return f"{op_label(op)} sums chunks of dim {op.axis}: only rows (dim 0) are taken"
            if not fu.shapes_compatible(shape, in_type.get_shape()):
                return (
                    f"{op_label(op)} sums a {fu.format_shape(shape)} tensor, the reductions a "
                    f"{fu.format_shape(in_type.get_shape())} one"
                )
            if (error := _outputs_only_error(op, outputs)) is not None:
                return error
        return None

    def _analyze(self) -> None:
        fusion, rank = self.fusion, self.rank
        self.result_maps: dict[SSAValue, DimMap] = {}
        self.owner: dict[SSAValue, Operation] = {}
        for op in self.reductions:
            for r in op.results:
                self.result_maps[r] = natural_map(op, r, rank)
                self.owner[r] = op
        self.input_maps: dict[Operation, DimMap] = {
            op: identity_map(cast(TensorType, reduction_input(op).type)) for op in self.reductions
        }
        # Stages: a reduction is one stage after the latest reduction its input needs.
        stage_of: dict[Operation, int] = {}
        self.reduction_needs: dict[Operation, Needs] = {}
        for op in self.reductions:
            needs = expand(self.pointwise, {reduction_input(op): [self.input_maps[op]]})
            self.reduction_needs[op] = needs
            deps = [self.owner[v] for v in needs if v in self.owner]
            stage_of[op] = 1 + max((stage_of[d] for d in deps), default=-1)
            if deps and self.persistent_reason is None:
                self.persistent_reason = (
                    f"{op_label(op)} needs the result of {op_label(deps[0])}: the row must "
                    "stay on chip between the two reductions"
                )
        count = 1 + max(stage_of.values(), default=-1)
        self.stages: list[list[Operation]] = [
            [op for op in self.reductions if stage_of[op] == s] for s in range(count)
        ]
        self.stage_needs: list[Needs] = []
        for stage in self.stages:
            merged: Needs = {}
            for op in stage:
                _merge(merged, self.reduction_needs[op])
            self.stage_needs.append(merged)
        # Outputs: of the reduced shape (the epilogue) or of the full shape.
        self.reduced_outputs: list[tuple[int, DimMap]] = []
        self.full_outputs: list[tuple[int, DimMap]] = []
        self.partial_outputs: list[tuple[int, fu.PartialSumOp]] = []
        partial_of = {v: op for op in self.partials for v in partial_aliases(op) or ()}
        # a row split's partial sums, and their copies, are stored at their kept point
        split_of = {
            v: op
            for op in self.reductions
            if isinstance(op, fu.PartialSumOp)
            for v in partial_aliases(op) or ()
        }
        for i, value in enumerate(fusion.output_op.values):
            if value in partial_of:
                self.partial_outputs.append((i, partial_of[value]))
                continue
            t = cast(TensorType, value.type)
            m = (
                self.result_maps.get(value)
                or (natural_map(split_of[value], value, rank) if value in split_of else None)
                or reduced_map(t, rank, self.axes)
            )
            if m is not None:
                self.reduced_outputs.append((i, m))
            elif t.get_num_dims() == rank:
                self.full_outputs.append((i, identity_map(t)))
            else:
                raise MappingError(
                    f"output #{i} ({fu.format_shape(t.get_shape())}) has neither the reduced "
                    f"nor the full shape of the reduction of rank {rank} over {list(self.axes)}"
                )
        outputs = fusion.output_op.values
        self.reduced_needs = expand(
            self.pointwise, {outputs[i]: [m] for i, m in self.reduced_outputs}
        )
        full_roots: Needs = {outputs[i]: [m] for i, m in self.full_outputs}
        for key in self.partial_keys():
            full_roots.setdefault(key[0], []).append(key[1])
        self.full_needs = expand(self.pointwise, full_roots)
        for value, maps in self.reduced_needs.items():
            if any(has_dims(m, self.axes) for m in maps):
                raise MappingError(
                    f"{value_name(value)} is needed per element by an output of the reduced shape"
                )
        for needs in (*self.stage_needs, self.reduced_needs, self.full_needs):
            for value, maps in needs.items():
                if value in self.result_maps and any(m != self.result_maps[value] for m in maps):
                    raise MappingError(
                        f"{value_name(value)}, a reduction result, is used in a way that does not "
                        "index it by the kept dims"
                    )
        if self.persistent_reason is None:
            for i, _ in self.full_outputs:
                used = [v for v in self.full_needs if v in self.owner]
                if used:
                    self.persistent_reason = (
                        f"output #{i} uses {op_label(self.owner[used[0]])} with per-element "
                        "values: the row must stay on chip until the reduction is done"
                    )
                    break

    def partial_keys(self) -> list[Key]:
        """The per-element values the partial sums add up (their inputs, identity map)."""
        return [(op.input, identity_map(cast(TensorType, op.input.type))) for op in self.partials]

    # --- phases ---------------------------------------------------------------------------

    @property
    def phases(self) -> list[Needs]:
        """The per-element phases in order: each stage, then the full-shape outputs."""
        return [*self.stage_needs, self.full_needs]

    def all_needs(self) -> Needs:
        merged: Needs = {}
        for needs in (*self.phases, self.reduced_needs):
            _merge(merged, needs)
        return merged

    def reads(self) -> list[tuple[int, DimMap]]:
        """Each tensor input read, as (input index, map), inputs in order."""
        needs = self.all_needs()
        return [
            (i, m)
            for i, arg in enumerate(self.fusion.inputs)
            if isinstance(arg.type, TensorType)
            for m in needs.get(arg, [])
        ]

    def first_phase(self, key: Key) -> int | None:
        """The first per-element phase that needs `key` (None for the epilogue only)."""
        for p, needs in enumerate(self.phases):
            if key[1] in needs.get(key[0], []):
                return p
        return None

    def slot_registers(self, sums: bool = True) -> int:
        """32-bit registers per row element that stay live from the phase that computes them
        into a later phase that uses them (at least 1): the persistent buffers per element,
        and the partial sums' accumulators unless `sums` is false (they are kept in shared
        memory); once per structure and `sums` under an open analysis cache (it depends on the
        types only)."""
        return memoized("slot_registers", (self, sums), lambda: self._slot_registers(sums))

    def _slot_registers(self, sums: bool) -> int:
        defined: dict[Key, int] = {}
        last_use: dict[Key, int] = {}
        roots: list[list[Key]] = [
            [(reduction_input(op), self.input_maps[op]) for op in stage] for stage in self.stages
        ]
        outputs = self.fusion.output_op.values
        roots.append([(outputs[o], m) for o, m in self.full_outputs] + self.partial_keys())
        for p, needs in enumerate(self.phases):
            used: list[Key] = list(roots[p])
            for op in self.pointwise:
                for result in op.results:
                    for m in needs.get(result, []):
                        if (result, m) in defined:
                            continue
                        defined[result, m] = p
                        used.extend(
                            (o, om)
                            for o, om in zip(op.operands, operand_maps(op, m), strict=True)
                            if om is not None
                        )
            for value, maps in needs.items():
                for m in maps:
                    defined.setdefault((value, m), p)  # inputs: loaded in their first phase
            for key in used:
                last_use[key] = max(last_use.get(key, p), p)
        worst = 0.0
        for boundary in range(len(self.phases) - 1):
            live = sum(
                kernel.byte_size(fu.element_type(v.type)) / 4
                for (v, m), p in defined.items()
                if has_dims(m, self.axes) and p <= boundary < last_use.get((v, m), p)
            )
            worst = max(worst, live)
        # a partial sum's accumulators are live from the first row to the last
        if sums:
            worst += sum(
                kernel.byte_size(fu.element_type(op.result.type)) / 4 for op in self.partials
            )
        return max(1, math.ceil(worst))


def whole_rows_error(structure: Structure) -> str | None:
    """Why a template that walks each row whole in one block (persistent, looped) does not take
    `structure`, before its shapes: the structure's error, or a row split (partial sums over
    runs of each row: the reduction scheduler's), or None."""
    if structure.error is not None:
        return structure.error
    if structure.row_splits > 1:
        return (
            "its partial sums split rows across blocks: the reduction scheduler takes them "
            "(a block per run of a row, nothing kept on chip)"
        )
    return None


def _outputs_only_error(op: fu.PartialSumOp, outputs: set[SSAValue]) -> str | None:
    """Why `op` is not used by the fusion's outputs only (directly or through copies), or
    None."""
    aliases = partial_aliases(op)
    if aliases is None or not any(v in outputs for v in aliases):
        return (
            f"{op_label(op)} must be used by the fusion's outputs only (directly or through copies)"
        )
    return None


def partial_aliases(op: fu.PartialSumOp) -> list[SSAValue] | None:
    """The partial sum's result and its copies (`set`: a segment's trailing `segment_set`
    becomes one), when every use is a copy or an output; None otherwise."""
    found: list[SSAValue] = []
    todo: list[SSAValue] = [op.result]
    while todo:
        value = todo.pop()
        found.append(value)
        for use in value.uses:
            if isinstance(use.operation, fu.SetOp):
                todo.append(use.operation.result)
            elif not isinstance(use.operation, fu.OutputOp):
                return None
    return found


def structure_of(fusion: fu.FusionOp, partials: bool = False) -> Structure:
    """`Structure(fusion, partials)`, built once per fusion under an open analysis cache."""
    return memoized("structure", (fusion, partials), lambda: Structure(fusion, partials))


def full_output_keys(structure: Structure) -> list[tuple[int, Key]]:
    outputs = structure.fusion.output_op.values
    return [(o, (outputs[o], m)) for o, m in structure.full_outputs]


def row_level(needs: Needs, axes: Sequence[int]) -> Needs:
    """The part of `needs` that does not vary along the reduced dims."""
    result: Needs = {}
    for value, maps in needs.items():
        kept = [m for m in maps if not has_dims(m, axes)]
        if kept:
            result[value] = kept
    return result


def element_level(needs: Needs, axes: Sequence[int]) -> Needs:
    """The part of `needs` that varies along the reduced dims."""
    result: Needs = {}
    for value, maps in needs.items():
        varying = [m for m in maps if has_dims(m, axes)]
        if varying:
            result[value] = varying
    return result
