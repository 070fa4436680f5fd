"""How each value of a fusion is indexed from a point of the kernel's iteration space.

A kernel walks an iteration space (the shape of a reference output). A `DimMap` says, for each
dim of a tensor value, which iteration dim indexes it, or None where the index is always 0: a
dim of static extent 1, or a dim that `broadcast_in_dim` expands. The maps are traced backwards
from the outputs through pointwise ops (operands are indexed like their result),
`broadcast_in_dim` (operand dim i is indexed like result dim `dims[i]`) and the ops that renumber
dims (`permute`, `squeeze`: operand dim `source_dims[i]` is indexed like result dim i, a squeezed
dim with 0) and the resize ops (`pad`, `cat`: an operand placed at offset o along a dim is indexed
there by the result's index less o, a `Shifted` entry that also bounds it by the operand's extent)
and the indexing ops (`take`, `take_along_axis`: the input's taken dim is indexed by the value
of the index there, an `Indexed` entry).
A value may be needed under several maps (an input broadcast two ways, or read whole and shifted);
it is then read, or computed, once per map.

Everything here depends on types only, never on run-time extents, so `emit` derives the same
accesses as the heuristics that validated them against concrete shapes. A dynamic dim that is 1
at run time but mapped to a larger iteration dim is handled by the kernel reading it with stride
0 (`KernelBuilder.broadcast_stride`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import IndexType, TensorType
from xdsl.ir import Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.transforms.schedulers.scalar_lowering import is_pointwise


@dataclass(frozen=True)
class Shifted:
    """A dim indexed by iteration dim `dim` (None: index 0) less `offset`, that exists only
    where that index lies in [0, `extent`): an operand of a resize op (`fusion.pad`,
    `fusion.cat`), or what it is computed from. A kernel reads an input under such a dim with
    a predicate, and the resize op selects where its operand exists."""

    dim: int | None
    offset: int
    extent: int


@dataclass(frozen=True)
class Indexed:
    """A dim indexed by the value of `index` (a `fusion.take`'s or `fusion.take_along_axis`'s
    index: a tensor, or a scalar) at the point, read under map `index_map`, clamped into the
    dim: the operand of an indexing op, or what it is computed from. A kernel computes the index
    before it loads such an input."""

    index: SSAValue
    index_map: DimMap


MapEntry = int | Shifted | Indexed | None
"""How one dim of a value is indexed: by an iteration dim, shifted, by an index value, or at
index 0 (None)."""

DimMap = tuple[MapEntry, ...]
"""For each dim of a tensor value, how a point of the iteration space indexes it."""


def entry_dim(entry: MapEntry) -> int | None:
    """The iteration dim an entry follows (None: none; an `Indexed` entry follows its index's
    value, see `indexed_dims`)."""
    if isinstance(entry, Indexed):
        return None
    return entry.dim if isinstance(entry, Shifted) else entry


def map_dims(m: DimMap) -> list[int]:
    """The iteration dims that `m` follows, in its dims' order."""
    return [d for d in (entry_dim(e) for e in m) if d is not None]


def unshifted(m: DimMap) -> tuple[int | None, ...]:
    """`m`, for a scheduler that takes no resize op or take (so every entry is a dim or
    None)."""
    assert not shifted(m) and not indexed(m), f"a map {m} outside the pointwise scheduler"
    return cast(tuple[int | None, ...], m)


def shifted(m: DimMap) -> bool:
    """Whether `m` reads a resize op's operand (some entry is `Shifted`)."""
    return any(isinstance(e, Shifted) for e in m)


def indexed(m: DimMap) -> bool:
    """Whether `m` reads a take's operand (some entry is `Indexed`)."""
    return any(isinstance(e, Indexed) for e in m)


def indexed_dims(m: DimMap) -> list[int]:
    """The iteration dims the index values of `m`'s `Indexed` entries follow (and those their
    indices follow, for an index read at an index)."""
    return [
        d
        for e in m
        if isinstance(e, Indexed)
        for d in (*map_dims(e.index_map), *indexed_dims(e.index_map))
    ]


def _shift(entry: MapEntry, offset: int, extent: int) -> Shifted:
    """`entry` moved by `offset`, for an operand of `extent` along it."""
    if isinstance(entry, Indexed):
        raise MappingError(
            "a pad or cat along a dim that a take indexes: the pad or cat is a kernel of its own"
        )
    if isinstance(entry, Shifted):
        return Shifted(entry.dim, entry.offset + offset, extent)
    return Shifted(entry, offset, extent)


Needs = dict[SSAValue, list[DimMap]]
"""The maps under which each value is needed, in a deterministic order."""


class MappingError(ValueError):
    """A fusion whose values cannot all be indexed from one iteration space (names the value)."""


def identity_map(t: TensorType) -> DimMap:
    """The map of a value with the iteration space's own shape (static 1 dims -> index 0)."""
    return tuple(None if e == 1 else d for d, e in enumerate(t.get_shape()))


def operand_maps(op: Operation, result_map: DimMap) -> list[DimMap | None]:
    """The map of each operand of `op` whose result is needed under `result_map` (None for
    `index` operands). Works for pointwise ops, `broadcast_in_dim`, `permute`, `squeeze`, `pad`,
    `cat`, `take` and `take_along_axis`."""
    maps: list[DimMap | None] = []
    for i, operand in enumerate(op.operands):
        t = operand.type
        if isinstance(t, IndexType):
            maps.append(None)
        elif not isinstance(t, TensorType):
            maps.append(())
        elif isinstance(op, fu.BroadcastInDimOp):
            assert i == 0
            shape = t.get_shape()
            maps.append(
                tuple(None if shape[j] == 1 else result_map[d] for j, d in enumerate(op.dims))
            )
        elif isinstance(op, fu.RenumberOp):
            by_operand_dim = dict(zip(op.source_dims, result_map, strict=True))
            shape = t.get_shape()
            maps.append(
                tuple(None if e == 1 else by_operand_dim.get(j) for j, e in enumerate(shape))
            )
        elif isinstance(op, fu.ResizeOp):
            placed, offsets = op.placements()[i]  # tensor operands come first
            assert placed is operand
            maps.append(_placed_map(t.get_shape(), offsets, result_map))
        elif isinstance(op, fu.TakeOp):
            maps.append(_taken_maps(op, result_map)[i])
        elif isinstance(op, fu.TakeAlongAxisOp):
            maps.append(_taken_along_maps(op, result_map)[i])
        elif is_pointwise(op):
            shape = t.get_shape()
            maps.append(
                tuple(None if e == 1 else m for e, m in zip(shape, result_map, strict=True))
            )
        else:
            raise MappingError(f"'{op.name}' is not pointwise: its operands have no dim map")
    return maps


def _placed_map(shape: Sequence[int], offsets: Mapping[int, int], result_map: DimMap) -> DimMap:
    """The map of a resize op's operand of `shape`, placed at `offsets`: a placed dim shifted
    (even of extent 1: it exists at one index only), another as the result's."""
    return tuple(
        _shift(result_map[d], offsets[d], e) if d in offsets else None if e == 1 else result_map[d]
        for d, e in enumerate(shape)
    )


def _taken_maps(op: fu.TakeOp, result_map: DimMap) -> tuple[DimMap, DimMap]:
    """The maps of a take's input and (tensor) index, for its result's `result_map`: the index
    is indexed as the result's dims it gives, the input by the index's value along the taken
    dim (`Indexed`) and as the result elsewhere (a dim of extent 1 at index 0)."""
    d, r = op.axis, op.index_rank
    index_shape = fu.shape_of(op.index.type) or ()
    index_map = tuple(
        None if e == 1 else m for e, m in zip(index_shape, result_map[d : d + r], strict=True)
    )
    shape = fu.shape_of(op.input.type) or ()
    around = (*result_map[:d], Indexed(op.index, index_map), *result_map[d + r :])
    return tuple(None if e == 1 else m for e, m in zip(shape, around, strict=True)), index_map


def _taken_along_maps(op: fu.TakeAlongAxisOp, result_map: DimMap) -> tuple[DimMap, DimMap]:
    """The maps of a `take_along_axis`'s input and index, for its result's `result_map`: the
    index is indexed as the result (they share a shape), the input by the index's value along
    the taken dim (`Indexed`) and as the result elsewhere (a dim of extent 1 at index 0)."""
    index_shape = fu.shape_of(op.index.type) or ()
    index_map = tuple(None if e == 1 else m for e, m in zip(index_shape, result_map, strict=True))
    shape = fu.shape_of(op.input.type) or ()
    d = op.axis
    around = (*result_map[:d], Indexed(op.index, index_map), *result_map[d + 1 :])
    return tuple(None if e == 1 else m for e, m in zip(shape, around, strict=True)), index_map


def expand(ops: Sequence[Operation], roots: Mapping[SSAValue, Sequence[DimMap]]) -> Needs:
    """Every value that the `roots` (values with the maps they are needed under) depend on
    through `ops` (in block order), with the maps it is needed under."""
    needs: Needs = {}

    def add(value: SSAValue, m: DimMap) -> None:
        maps = needs.setdefault(value, [])
        if m not in maps:
            maps.append(m)

    for value, maps in roots.items():
        for m in maps:
            add(value, m)
    for op in reversed(ops):
        for result in op.results:
            for m in needs.get(result, []):
                for operand, om in zip(op.operands, operand_maps(op, m), strict=True):
                    if om is not None:
                        add(operand, om)
    return needs


def _infer_forward(value: SSAValue, needs: Needs) -> DimMap | None:
    """A map of `value` from the maps of what it is computed from, or None if it has none."""
    if not isinstance(value.type, TensorType):
        return ()
    if needs.get(value):
        return needs[value][0]
    op = value.owner
    if not isinstance(op, Operation) or not is_pointwise(op):
        return None
    if isinstance(op, fu.BroadcastInDimOp):
        source = _infer_forward(op.input, needs)
        if source is None:
            return None
        result: list[MapEntry] = []
        for d, extent in enumerate(value.type.get_shape()):
            m = source[op.dims.index(d)] if d in op.dims else None
            if m is None and extent != 1:
                return None  # a dim that the operand does not index: unknown
            result.append(m)
        return tuple(result)
    if isinstance(op, fu.RenumberOp):
        source = _infer_forward(op.input, needs)
        return None if source is None else op.result_extents(source)
    for operand in op.operands:
        if isinstance(operand.type, TensorType):
            m = _infer_forward(operand, needs)
            if m is not None:
                return m
    return None


@dataclass(frozen=True)
class Space:
    """The iteration space of a kernel: the outputs' maps and every value's needed maps."""

    rank: int
    output_maps: tuple[DimMap, ...]
    needs: Needs

    def reads(self, fusion: fu.FusionOp) -> list[tuple[int, DimMap]]:
        """Each tensor input read, as (input index, map), inputs in order."""
        return [
            (i, m)
            for i, arg in enumerate(fusion.inputs)
            if isinstance(arg.type, TensorType)
            for m in self.needs.get(arg, [])
        ]


def body_ops(fusion: fu.FusionOp) -> list[Operation]:
    """The ops of a fusion, without its `fusion.output`."""
    return [op for op in fusion.body.block.ops if not isinstance(op, fu.OutputOp)]


def iteration_space(fusion: fu.FusionOp, reference: int) -> Space:
    """Maps every value the outputs need onto the shape of output #`reference`.

    Outputs are placed in order: one the earlier outputs already need keeps that map, one of
    the reference's rank and (statically compatible) shape walks the whole space, others are
    mapped from their operands' maps. Raises MappingError for an output that has no map.
    """
    ops = body_ops(fusion)
    outputs = list(fusion.output_op.values)
    ref_type = outputs[reference].type
    assert isinstance(ref_type, TensorType)
    rank = ref_type.get_num_dims()
    roots: dict[SSAValue, list[DimMap]] = {}
    maps: list[DimMap | None] = [None] * len(outputs)
    maps[reference] = identity_map(ref_type)
    order = [reference, *(i for i in range(len(outputs)) if i != reference)]
    for i in order:
        value = outputs[i]
        t = value.type
        assert isinstance(t, TensorType)
        m = maps[i]
        if m is None:
            needs = expand(ops, roots)
            if needs.get(value):
                m = needs[value][0]
            elif t.get_num_dims() == rank and fu.shapes_compatible(
                t.get_shape(), ref_type.get_shape()
            ):
                m = identity_map(t)
            else:
                m = _infer_forward(value, needs)
        if m is None:
            raise MappingError(
                f"output #{i} ({fu.format_shape(t.get_shape())}) cannot be indexed from the "
                f"iteration space {fu.format_shape(ref_type.get_shape())} of output "
                f"#{reference}: no broadcast relates them"
            )
        maps[i] = m
        roots.setdefault(value, []).append(m)
    final = tuple(m for m in maps if m is not None)
    return Space(rank, final, expand(ops, roots))
