"""`fuser-shard{rank=r}`: a sharded fusion becomes one device's program.

A sharded fusion (`fusion.input_shardings`, `fusion.sharding`; see `ShardingAttr`) is written on
global tensors; each device of its mesh runs one process (nvFuser's multidevice model). This
pass makes the program of rank `r`, as nvFuser's `DecomposeReshardings` and `HostIrLower` do:

1. **Placement** (`plan_sharding`, the same on every rank). Every tensor gets the sharding it is
   computed with, from its operands, op by op (nvFuser's sharding propagation):
   - pointwise ops keep their operands' split axis; a replicated operand of a split op is
     *sliced locally* (each device takes its block; no communication);
   - `broadcast_in_dim`, `permute` and `squeeze` carry the axis to the dim it becomes; a new dim
     of a broadcast whose extent is a split axis's `fusion.dim` is split alike (extents in a
     sharded fusion are the device's own);
   - a reduction (`sum`, `prod`, `max`, `min`) over the split axis computes a *partial* result
     on each device;
   - a matmul carries a split batch dim, M (of `lhs`) or N (of `rhs`); a K split in both
     operands (or in one, the other sliced) gives a partial sum;
   - everything else takes replicated operands only, and computes replicated results.
   A *resharding* is where a tensor must be placed otherwise than it is computed: the sharding
   asked for by `fusion.sharding` on its op (on a `fusion.set`, nvFuser's resharding `set`),
   or replicated for a partial result that asks for nothing. Each becomes a communication:
   - partial -> replicated: `allreduce`; partial -> split along `b`: `reduce_scatter`;
   - split along `a` -> replicated: `allgather`; replicated -> split: a local slice;
   - replicated on one device -> replicated on a mesh holding it: `broadcast`;
   - onto a disjoint mesh of the same size, split alike: `send`/`recv` between the devices of
     the same position;
   anything else (split along another axis, meshes that overlap otherwise, a tensor of
   dynamic shape sent to devices that must allocate it first) is a ShardingError naming the op.
2. **The rank's program** (`shard_for_rank`). The ops that rank `r` takes part in (its meshes
   hold `r`) are cut into *stages* by their communication depth: stage k holds the ops that come
   after k rounds of communication. Each stage is an ordinary `fusion.fusion` (`@f_r0_s0`, ...)
   on the device's local tensors (split extents divided by the mesh size), which the ordinary
   pipeline segments, schedules and compiles. Pointwise, broadcast and renumbering ops of inputs
   and communicated values are recomputed in the stage that reads them rather than written by
   an earlier one (outputs are written once), and scalars (constants, extents, scalar math) in
   every stage that reads them. A `host.program @f` runs them
   (`host.run_fusion`) and issues the communications between them (`host.allreduce`, ...,
   `host.wait` before the first use of a result). The allreduces of one round on one mesh and
   of one kind are one `host.allreduce` (one NCCL group): layer norm's two sums take one round.

A rank outside an output's mesh returns an empty tensor (`tensor<0xT>`) in its place; an input
outside its mesh is not read. The pass leaves a fusion without shardings as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from fuser.dialects import fusion as fu
from fuser.dialects import host
from fuser.errors import ShardingError
from fuser.transforms.schedulers.kernel_builder import op_label

__all__ = ["ShardPass", "ShardingPlan", "plan_sharding", "rank_parts", "shard_for_rank"]

REDUCTION_KINDS: dict[type[Operation], str] = {
    fu.SumOp: "sum",
    fu.ProdOp: "prod",
    fu.MaxOp: "max",
    fu.MinOp: "min",
}
"""The reductions whose partial results over a split axis combine by a collective of that kind."""


RECOMPUTED = (*fu.ELEMENTWISE_OPS, fu.BroadcastInDimOp, fu.RenumberOp)
"""The ops a stage recomputes from inputs rather than read from an earlier stage."""


class ShardPassError(ShardingError, DiagnosticException):
    """A ShardingError that `fuser-opt` reports as a one-line error."""


def _label(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a value"


def _fail(op: Operation, message: str) -> ShardPassError:
    return ShardPassError(f"{op_label(op)}: {message}")


# --------------------------------------------------------------------------------------------
# Placement: how each tensor is computed and where it must be
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Computed:
    """How an op's results are computed: on `sharding`'s mesh, split as it says, and for a
    reduction over the split axis `partial` (the kind still to combine across the mesh)."""

    sharding: fu.ShardingAttr
    partial: str | None = None


@dataclass(frozen=True)
class Communication:
    """The resharding of one value: from how it is computed to where it must be.

    `kind` is `allreduce`, `reduce_scatter`, `allgather`, `broadcast`, `sendrecv` or `slice`
    (a local slice, no communication)."""

    kind: str
    source: Computed
    target: fu.ShardingAttr

    @property
    def moves_data(self) -> bool:
        """Whether devices exchange data (every kind but a local slice): users then read a
        value the program receives, one round later."""
        return self.kind != "slice"

    @property
    def mesh(self) -> tuple[int, ...]:
        """The ranks taking part: the mesh of a collective, the sender's then the receivers'."""
        src, dst = self.source.sharding.devices, self.target.devices
        return src if src == dst else (*src, *(d for d in dst if d not in src))


@dataclass
class ShardingPlan:
    """The placement of a sharded fusion, the same on every rank (see the module docstring)."""

    fusion: fu.FusionOp
    computed: dict[SSAValue, Computed] = field(default_factory=dict)
    """Every tensor value's placement as its op computes it (inputs: as given)."""
    placed: dict[SSAValue, fu.ShardingAttr] = field(default_factory=dict)
    """Every tensor value's sharding after its resharding, which its users read."""
    reshard: dict[SSAValue, Communication] = field(default_factory=dict)
    """The values whose users read them otherwise than they are computed."""
    operand_slices: dict[Operation, dict[int, int]] = field(default_factory=dict)
    """For an op computed split: its replicated operands (by index) and the axis each device
    slices its block of locally."""
    extent_split: dict[SSAValue, fu.ShardingAttr] = field(default_factory=dict)
    """`fusion.dim`s of a split axis: the device's own extent, on that tensor's mesh."""

    def local_type(self, t: Attribute, sharding: fu.ShardingAttr) -> Attribute:
        """The type a device holds of a tensor of global type `t` placed by `sharding`."""
        axis = sharding.split_axis
        if not isinstance(t, TensorType) or axis is None:
            return t
        shape = list(t.get_shape())
        if shape[axis] >= 0:
            shape[axis] //= len(sharding.devices)
        return TensorType(t.element_type, shape)


def _default_mesh(fusion: fu.FusionOp) -> tuple[int, ...]:
    given = fu.input_shardings(fusion)
    if given:
        return given[0].devices
    for op in fusion.body.walk():
        if (s := fu.sharding(op)) is not None:
            return s.devices
    raise AssertionError("a sharded fusion names a mesh")


def plan_sharding(fusion: fu.FusionOp) -> ShardingPlan:
    """Places every tensor of the sharded `fusion` (raises ShardingError naming the op)."""
    plan = ShardingPlan(fusion)
    mesh = _default_mesh(fusion)
    given = fu.input_shardings(fusion) or tuple(fu.ShardingAttr(mesh) for _ in fusion.inputs)
    for arg, s in zip(fusion.inputs, given, strict=True):
        if isinstance(arg.type, TensorType):
            plan.computed[arg] = Computed(s)
            plan.placed[arg] = s
    for op in fusion.body.block.ops:
        if isinstance(op, fu.OutputOp):
            continue
        if isinstance(op, fu.DimOp):
            s = plan.placed[op.input]
            if s.split_axis == op.axis.value.data:
                plan.extent_split[op.result] = s
            continue
        tensors = [r for r in op.results if isinstance(r.type, TensorType)]
        if not tensors:
            _check_scalar_op(plan, op)
            continue
        computed = _computed(plan, op, mesh)
        asked = fu.sharding(op)
        for r in tensors:
            plan.computed[r] = computed
            target = asked or computed.sharding
            plan.placed[r] = target
            if computed.partial is not None or target != computed.sharding:
                kind = _kind(op, computed, target)
                t = r.type
                assert isinstance(t, TensorType)
                if kind in ("broadcast", "sendrecv") and any(e < 0 for e in t.get_shape()):
                    raise _fail(
                        op,
                        f"moves {_label(r)} of type {t} to devices that do not hold it "
                        f"({kind}): a receiving device allocates it before it arrives, so its "
                        "shape must be static",
                    )
                plan.reshard[r] = Communication(kind, computed, target)
    return plan


def _check_scalar_op(plan: ShardingPlan, op: Operation) -> None:
    for v in op.operands:
        if v in plan.extent_split:
            raise _fail(
                op,
                f"reads {_label(v)}, the extent of a split axis, which is each device's own: "
                "a split extent may only size a dim split alike (broadcast_in_dim's sizes)",
            )


def _kind(op: Operation, computed: Computed, target: fu.ShardingAttr) -> str:
    src = computed.sharding
    what = f"computed as {src}{' (partial)' if computed.partial else ''}, placed as {target}"
    if src.devices == target.devices:
        if computed.partial is not None:
            return "allreduce" if target.split_axis is None else "reduce_scatter"
        if src.split_axis is not None and target.split_axis is None:
            return "allgather"
        if src.split_axis is None:
            return "slice"
        raise _fail(
            op,
            f"{what}: moving the split from axis {src.split_axis} to axis {target.split_axis} "
            "(an all-to-all) is not supported; gather it first (a replicated fusion.set)",
        )
    if computed.partial is not None:
        raise _fail(op, f"{what}: a partial result is combined on its own mesh; place it there")
    if (
        src.split_axis is None
        and target.split_axis is None
        and len(src.devices) == 1
        and src.devices[0] in target.devices
    ):
        return "broadcast"
    if (
        src.split_axis == target.split_axis
        and len(src.devices) == len(target.devices)
        and not set(src.devices) & set(target.devices)
    ):
        return "sendrecv"
    raise _fail(
        op,
        f"{what}: fuser-shard moves a tensor between meshes by a broadcast from one device to a "
        "mesh holding it, or by send/recv to a disjoint mesh of the same size split alike",
    )


def _computed(plan: ShardingPlan, op: Operation, default_mesh: tuple[int, ...]) -> Computed:
    """How `op` computes its results, from its operands' placements; records the replicated
    operands it slices."""
    tensors = [(i, v) for i, v in enumerate(op.operands) if isinstance(v.type, TensorType)]
    meshes = {plan.placed[v].devices for _, v in tensors}
    meshes |= {  # an extent is read from its tensor, on that tensor's mesh
        plan.placed[v.owner.input].devices for v in op.operands if isinstance(v.owner, fu.DimOp)
    }
    if isinstance(op, fu.SetOp):  # nvFuser's resharding set: a copy, then its placement
        return Computed(plan.placed[op.input])
    if len(meshes) > 1:
        listed = " and ".join(f"[{', '.join(map(str, m))}]" for m in sorted(meshes))
        raise _fail(
            op,
            f"its operands live on meshes {listed}: move them onto one with a fusion.set that "
            "gives the sharding (fd.ops.set, then set_device_mesh)",
        )
    mesh = meshes.pop() if meshes else (s.devices if (s := fu.sharding(op)) else default_mesh)
    base = fu.ShardingAttr(mesh)
    axes = {i: plan.placed[v].split_axis for i, v in tensors}
    sized = [(v, d) for v, d in _sized_dims(op) if v in plan.extent_split]
    if all(a is None for a in axes.values()) and not sized:
        return Computed(base)
    if isinstance(op, fu.ELEMENTWISE_OPS):
        split = {a for a in axes.values() if a is not None}
        if len(split) > 1:
            raise _fail(op, f"its operands are split along different axes {sorted(split)}")
        axis = split.pop()
        _slice_replicated(plan, op, axes, {i: axis for i in axes})
        return Computed(base.with_axis(axis))
    if isinstance(op, fu.BroadcastInDimOp):
        result_axes: set[int] = set()
        carried = axes.get(0)  # (a broadcast of a scalar has no tensor operand)
        if carried is not None:
            result_axes.add(op.dims[carried])
        for v, d in sized:
            if plan.extent_split[v].devices != mesh:
                raise _fail(op, f"its size {_label(v)} is split over another mesh")
            result_axes.add(d)
        if len(result_axes) > 1:
            raise _fail(op, f"its result would be split along two axes {sorted(result_axes)}")
        return Computed(base.with_axis(result_axes.pop()))
    if isinstance(op, fu.RenumberOp):
        axis = axes[0]
        assert axis is not None
        if axis not in op.source_dims:
            raise _fail(op, f"drops axis {axis}, which its operand is split along")
        return Computed(base.with_axis(op.source_dims.index(axis)))
    if type(op) in REDUCTION_KINDS:
        assert isinstance(op, fu.ReductionOp)
        axis = axes[0]
        assert axis is not None
        reduced = op.reduction_axes
        if axis in reduced:
            return Computed(base, REDUCTION_KINDS[type(op)])
        if op.keepdim is not None:
            return Computed(base.with_axis(axis))
        return Computed(base.with_axis(axis - sum(1 for a in reduced if a < axis)))
    if isinstance(op, fu.MatmulOp) and op.split_count is None:
        return _matmul(plan, op, base, axes)
    split = ", ".join(f"operand #{i} along axis {a}" for i, a in axes.items() if a is not None)
    raise _fail(
        op,
        f"has a split operand ({split or 'a split extent'}): fuser-shard splits pointwise ops, "
        "broadcast_in_dim, permute, squeeze, sum/prod/max/min and matmul; gather the operand "
        "first (a fusion.set with a replicated sharding)",
    )


def _sized_dims(op: Operation) -> list[tuple[SSAValue, int]]:
    if isinstance(op, fu.BroadcastInDimOp | fu.RandomOp):
        return list(zip(op.sizes, op.sized_dims(), strict=True))
    return [(v, -1) for v in op.operands if not isinstance(v.type, TensorType)]


def _slice_replicated(
    plan: ShardingPlan, op: Operation, axes: dict[int, int | None], wanted: dict[int, int]
) -> None:
    """Records the replicated operands of `op` that each device slices along `wanted[i]`."""
    slices = {i: wanted[i] for i, a in axes.items() if a is None and i in wanted}
    for i, axis in slices.items():
        t = op.operands[i].type
        assert isinstance(t, TensorType)
        if t.get_shape()[axis] < 0:
            raise _fail(
                op,
                f"operand #{i} ({_label(op.operands[i])}) is replicated with a dynamic extent "
                f"along axis {axis}, which the other operands split: each device would slice "
                "its block at an offset known only at run time; give it the same sharding",
            )
    if slices:
        plan.operand_slices[op] = slices


def _matmul(
    plan: ShardingPlan, op: fu.MatmulOp, base: fu.ShardingAttr, axes: dict[int, int | None]
) -> Computed:
    rank = len(fu.shape_of(op.result.type) or ())
    lhs, rhs = axes[0], axes[1]
    m, k_lhs, k_rhs, n = rank - 2, rank - 1, rank - 2, rank - 1
    if lhs == k_lhs or rhs == k_rhs:  # K split: each device a partial sum
        if (lhs not in (None, k_lhs)) or (rhs not in (None, k_rhs)):
            raise _fail(op, "splits K and another dim: one split axis per matmul")
        _slice_replicated(plan, op, axes, {0: k_lhs, 1: k_rhs})
        return Computed(base, "sum")
    if lhs is not None and rhs is not None and lhs != rhs:
        raise _fail(
            op,
            f"its operands are split along lhs axis {lhs} and rhs axis {rhs}: a matmul's result "
            "can be split along one batch dim, M or N",
        )
    if (lhs is not None and lhs < m) or (rhs is not None and rhs < m):  # a batch dim
        axis = lhs if lhs is not None else rhs
        assert axis is not None
        _slice_replicated(plan, op, axes, {0: axis, 1: axis})
        return Computed(base.with_axis(axis))
    return Computed(base.with_axis(m if lhs is not None else n))


# --------------------------------------------------------------------------------------------
# One rank's program
# --------------------------------------------------------------------------------------------

_Key = tuple[SSAValue, bool]
"""A global value as a device holds it: (value, True) after its resharding, (value, False) as
computed (the same when it has none)."""


@dataclass
class _Stage:
    """One local fusion being built: the ops after `index` rounds of communication."""

    index: int
    block: Block = field(default_factory=Block)
    values: dict[_Key, SSAValue] = field(default_factory=dict)
    imports: list[_Key] = field(default_factory=list)
    defined: list[_Key] = field(default_factory=list)


@dataclass
class _Comm:
    """One communication of the rank's program (`source` None on a receiving rank)."""

    round: int
    communication: Communication
    value: SSAValue
    source: _Key | None


class _RankBuilder:
    """Builds rank `rank`'s stages and program for a plan."""

    def __init__(self, plan: ShardingPlan, rank: int):
        self.plan = plan
        self.rank = rank
        self.fusion = plan.fusion
        self.level: dict[_Key, int] = {}
        self.stages: dict[int, _Stage] = {}
        self.comms: list[_Comm] = []
        self.cheap: dict[_Key, bool] = {}
        self.outputs = set(self.fusion.output_op.values)
        self.aliases: dict[_Key, _Key] = {}
        """A resharding `fusion.set`'s result as computed: its operand, which it only names."""

    # ---- what this rank holds -------------------------------------------------------

    def holds(self, s: fu.ShardingAttr) -> bool:
        return self.rank in s.devices

    def local_type(self, v: SSAValue, placed: bool) -> Attribute:
        p = self.plan
        s = p.placed[v] if placed else p.computed[v].sharding
        return p.local_type(v.type, s)

    def key(self, v: SSAValue) -> _Key:
        """The form a user of `v` reads: after its resharding."""
        return (v, True)

    # ---- levels ---------------------------------------------------------------------

    def level_of(self, key: _Key) -> int:
        if key in self.level:
            return self.level[key]
        v = key[0]
        owner = v.owner
        if isinstance(owner, Block | fu.ConstantOp):
            return 0
        assert isinstance(owner, Operation)
        return max((self.level_of(self.key(o)) for o in owner.operands), default=0)

    def plan_levels(self) -> None:
        p = self.plan
        for arg in self.fusion.inputs:
            self.level[(arg, True)] = self.level[(arg, False)] = 0
        for op in self.fusion.body.block.ops:
            tensors = [r for r in op.results if isinstance(r.type, TensorType)]
            if not tensors or isinstance(op, fu.OutputOp):
                continue
            computed = p.computed[tensors[0]]
            level = max((self.level_of(self.key(o)) for o in op.operands), default=0)
            for r in tensors:
                self.level[(r, False)] = level
                comm = p.reshard.get(r)
                if comm is None or not comm.moves_data:
                    self.level[(r, True)] = level
                    continue
                self.level[(r, True)] = level + 1
                src = (r, False) if self.holds(computed.sharding) else None
                if self.holds(comm.target) or src is not None:
                    self.comms.append(_Comm(level, comm, r, src))

    # ---- stages ---------------------------------------------------------------------

    def stage(self, index: int) -> _Stage:
        if index not in self.stages:
            self.stages[index] = _Stage(index)
        return self.stages[index]

    def value_in(self, stage: _Stage, key: _Key) -> SSAValue:
        """`key`'s value inside `stage`: defined there, a scalar recomputed there, or imported
        as an input of the stage."""
        if key in stage.values:
            return stage.values[key]
        v, placed = key
        owner = v.owner
        if isinstance(owner, Operation) and not any(
            isinstance(r.type, TensorType) for r in owner.results
        ):  # constants, extents, scalar arithmetic: recomputed in each stage that reads them
            operands = [self.value_in(stage, self.key(o)) for o in owner.operands]
            new = owner.clone()
            for i, o in enumerate(operands):
                new.operands[i] = o
            stage.block.add_op(new)
            for old, r in zip(owner.results, new.results, strict=True):
                stage.values[(old, key[1])] = r
                r.name_hint = old.name_hint
            return stage.values[key]
        if isinstance(owner, Operation) and self.recomputable(key):
            self.compute_in(stage, owner)
            return stage.values[key]
        arg_type = self.local_type(v, placed) if isinstance(v.type, TensorType) else v.type
        arg = stage.block.insert_arg(arg_type, len(stage.block.args))
        arg.name_hint = v.name_hint
        stage.values[key] = arg
        stage.imports.append(key)
        return arg

    def build_stages(self) -> None:
        p = self.plan
        for op in self.fusion.body.block.ops:
            tensors = [r for r in op.results if isinstance(r.type, TensorType)]
            if not tensors or isinstance(op, fu.OutputOp):
                continue
            if not self.holds(p.computed[tensors[0]].sharding):
                continue
            if isinstance(op, fu.SetOp) and self.is_communicated(self.key(tensors[0])):
                # a resharding set moves no data on the device: its operand is the source
                self.aliases[(tensors[0], False)] = self.key(op.input)
                continue
            self.compute_in(self.stage(self.level[(tensors[0], False)]), op)

    def compute_in(self, stage: _Stage, op: Operation) -> None:
        """Clones `op` into `stage` (its results as computed, then as placed where a local
        slice places them)."""
        tensors = [r for r in op.results if isinstance(r.type, TensorType)]
        self.clone_into(stage, op, tensors)
        for r in tensors:
            comm = self.plan.reshard.get(r)
            if comm is not None and not comm.moves_data:
                sliced = self.local_slice(stage, stage.values[(r, False)], comm.target, op)
                stage.values[(r, True)] = sliced
                stage.defined.append((r, True))
            elif comm is None:
                stage.values[(r, True)] = stage.values[(r, False)]
                stage.defined.append((r, True))

    def recomputable(self, key: _Key) -> bool:
        """Whether a later stage recomputes `key` rather than reading it from the stage that
        computed it: a pointwise, broadcast or renumbering op of inputs and communication
        results (nvFuser forwards such chains of inputs); a stage then never writes a copy or
        a cast of an input for the next one to read."""
        if key in self.cheap:
            return self.cheap[key]
        v = key[0]
        if v in self.outputs:  # an output is written once, by the stage that computes it
            self.cheap[key] = False
            return False
        owner = v.owner
        ok = (
            isinstance(owner, RECOMPUTED)
            and not self.is_communicated(key)
            and (v, False) not in self.aliases
            and all(
                not isinstance(o.type, TensorType)
                or isinstance(o.owner, Block)
                or self.is_communicated(self.key(o))
                or self.recomputable(self.key(o))
                for o in owner.operands
            )
        )
        self.cheap[key] = ok
        return ok

    def is_communicated(self, key: _Key) -> bool:
        """Whether `key` is a value the program receives (not one a stage computes)."""
        comm = self.plan.reshard.get(key[0])
        return key[1] and comm is not None and comm.moves_data

    def resolve(self, key: _Key) -> _Key:
        return self.aliases.get(key, key)

    def clone_into(self, stage: _Stage, op: Operation, tensors: Sequence[SSAValue]) -> None:
        p = self.plan
        operands: list[SSAValue] = []
        slices = p.operand_slices.get(op, {})
        for i, o in enumerate(op.operands):
            v = self.value_in(stage, self.key(o))
            if i in slices:
                target = p.computed[tensors[0]].sharding.with_axis(slices[i])
                v = self.local_slice(stage, v, target, op)
            operands.append(v)
        attributes = {k: a for k, a in op.attributes.items() if k != fu.SHARDING}
        new = type(op).create(
            operands=operands,
            result_types=[self.local_type(r, False) for r in op.results],
            properties=dict(op.properties),
            attributes=attributes,
        )
        stage.block.add_op(new)
        for old, r in zip(op.results, new.results, strict=True):
            r.name_hint = old.name_hint
            stage.values[(old, False)] = r
            stage.defined.append((old, False))

    def local_slice(
        self, stage: _Stage, v: SSAValue, s: fu.ShardingAttr, op: Operation
    ) -> SSAValue:
        """Device `rank`'s block of the replicated (whole) `v` along `s`'s axis."""
        axis = s.split_axis
        t = v.type
        assert axis is not None and isinstance(t, TensorType)
        shape = t.get_shape()
        if shape[axis] < 0:
            raise _fail(
                op,
                f"slices {_label(v)} along axis {axis} of dynamic extent: each device's offset "
                "is known only at run time; give it the sharding instead",
            )
        n = shape[axis] // len(s.devices)
        i = s.devices.index(self.rank)
        owner = v.owner
        if (
            isinstance(owner, fu.BroadcastInDimOp)
            and owner.parent is stage.block
            and _broadcast_along(owner, axis)
        ):  # made at the device's extent rather than made whole and sliced
            local = list(shape)
            local[axis] = n
            new = fu.BroadcastInDimOp.create(
                operands=list(owner.operands),
                result_types=[TensorType(t.element_type, local)],
                properties=dict(owner.properties),
            )
            stage.block.insert_op_after(new, owner)
            new.results[0].name_hint = f"{v.name_hint or 'v'}_block"
            return new.results[0]
        starts = [0] * len(shape)
        stops = [fu.END] * len(shape)
        steps = [1] * len(shape)
        starts[axis], stops[axis] = i * n, (i + 1) * n
        sliced = fu.SliceOp(v, starts, stops, steps)
        stage.block.add_op(sliced)
        sliced.result.name_hint = f"{v.name_hint or 'v'}_block"
        return sliced.result

    # ---- the program ----------------------------------------------------------------

    def build(self) -> tuple[list[fu.FusionOp], host.ProgramOp]:
        self.plan_levels()
        self.build_stages()
        f = self.fusion
        name = f.sym_name.data
        outputs = list(f.output_op.values)
        # what each stage must hand on: read by a later stage, a communication, or the output
        needed: set[_Key] = set()
        for stage in self.stages.values():
            needed.update(stage.imports)
        for c in self.comms:
            if c.source is not None:
                needed.add(self.resolve(c.source))
        out_keys: list[_Key | None] = []
        for v in outputs:
            held = self.holds(self.plan.placed[v])
            out_keys.append(self.key(v) if held else None)
            if held:
                needed.add(self.key(v))
        fusions: list[fu.FusionOp] = []
        program_block = Block(
            arg_types=[
                self.local_type(a, True) if isinstance(a.type, TensorType) else a.type
                for a in f.inputs
            ]
        )
        values: dict[_Key, SSAValue] = {}
        for a, b in zip(f.inputs, program_block.args, strict=True):
            b.name_hint = a.name_hint
            values[(a, True)] = values[(a, False)] = b
        pending: dict[_Key, SSAValue] = {}  # results whose communication is not waited for
        waited: set[SSAValue] = set()

        def wait(work: SSAValue) -> None:
            if work not in waited:
                waited.add(work)
                program_block.add_op(host.WaitOp(work))

        def ready(key: _Key) -> SSAValue:
            key = self.resolve(key)
            if key in pending:
                wait(pending.pop(key))
            return values[key]

        rounds = sorted({*self.stages, *(c.round for c in self.comms)})
        for level in rounds:
            stage = self.stages.get(level)
            exports: list[_Key] = []
            if stage is not None:
                exports = [k for k in stage.defined if k in needed and k not in stage.imports]
                exports = list(dict.fromkeys(exports))
            if stage is not None and exports:
                stage.block.add_op(fu.OutputOp([stage.values[k] for k in exports]))
                _erase_dead(stage)
                local = fu.FusionOp(
                    f"{name}_r{self.rank}_s{level}",
                    [a.type for a in stage.block.args],
                    [stage.values[k].type for k in exports],
                    Region(stage.block),
                )
                fusions.append(local)
                run = host.RunFusionOp(
                    local.sym_name.data,
                    [ready(k) for k in stage.imports],
                    local.function_type.outputs.data,
                )
                program_block.add_op(run)
                for k, r in zip(exports, run.results, strict=True):
                    r.name_hint = k[0].name_hint
                    values[k] = r
            self.emit_round(level, program_block, values, pending, ready)
        results = []
        for v, key in zip(outputs, out_keys, strict=True):
            if key is None:
                t = v.type
                assert isinstance(t, TensorType)
                empty = host.AllocateOp(TensorType(t.element_type, [0]), [])
                program_block.add_op(empty)
                results.append(empty.results[0])
            else:
                results.append(ready(key))
        for w in list(pending.values()):
            wait(w)
        program_block.add_op(host.ReturnOp(results))
        program = host.ProgramOp(
            name,
            [a.type for a in program_block.args],
            [r.type for r in results],
            Region(program_block),
        )
        program.attributes["fuser.rank"] = IntegerAttr(self.rank, i64)
        return fusions, program

    def emit_round(
        self,
        level: int,
        block: Block,
        values: dict[_Key, SSAValue],
        pending: dict[_Key, SSAValue],
        ready: Callable[[_Key], SSAValue],
    ) -> None:
        comms = [c for c in self.comms if c.round == level]
        groups: dict[tuple[str, tuple[int, ...]], list[_Comm]] = {}
        for c in comms:
            com = c.communication
            if com.kind == "allreduce":
                assert com.source.partial is not None
                groups.setdefault((com.source.partial, com.mesh), []).append(c)
        for (kind, mesh), group in groups.items():
            op = host.AllreduceOp(kind, [ready(c.source) for c in group if c.source], mesh)
            block.add_op(op)
            work = op.results[-1]
            work.name_hint = f"{group[0].value.name_hint or 'allreduce'}_work"
            for c, r in zip(group, op.results[:-1], strict=True):
                r.name_hint = c.value.name_hint
                values[(c.value, True)] = r
                pending[(c.value, True)] = work
        for c in comms:
            com = c.communication
            key = (c.value, True)
            result_type = self.local_type(c.value, True)
            if com.kind == "allreduce":
                continue
            if com.kind == "reduce_scatter":
                axis = com.target.split_axis
                assert axis is not None and com.source.partial is not None and c.source
                op = host.ReduceScatterOp(com.source.partial, ready(c.source), axis, com.mesh)
            elif com.kind == "allgather":
                axis = com.source.sharding.split_axis
                assert axis is not None and c.source
                op = host.AllgatherOp(ready(c.source), axis, com.mesh)
            elif com.kind == "broadcast":
                root = com.source.sharding.devices[0]
                source = ready(c.source) if c.source else None
                assert isinstance(result_type, TensorType)
                op = host.BroadcastOp(source or result_type, root, com.mesh)
            else:  # sendrecv: position i of the source mesh to position i of the target's
                src, dst = com.source.sharding.devices, com.target.devices
                if c.source is not None:
                    peer = dst[src.index(self.rank)]
                    op = host.SendOp(ready(c.source), peer)
                    block.add_op(op)
                    op.results[-1].name_hint = f"{c.value.name_hint or 'send'}_work"
                    pending[(c.value, False)] = op.results[-1]  # waited for by the end
                    continue
                peer = src[dst.index(self.rank)]
                assert isinstance(result_type, TensorType)
                op = host.RecvOp(result_type, peer)
            block.add_op(op)
            r = op.results[0]
            r.name_hint = c.value.name_hint
            op.results[-1].name_hint = f"{c.value.name_hint or com.kind}_work"
            values[key] = r
            pending[key] = op.results[-1]


def _broadcast_along(op: fu.BroadcastInDimOp, axis: int) -> bool:
    """Whether result dim `axis` of `op` is a new dim or expanded from extent 1 (every block
    of it is the same values)."""
    if axis not in op.dims:
        return True
    return (fu.shape_of(op.input.type) or ())[op.dims.index(axis)] == 1


def _erase_dead(stage: _Stage) -> None:
    """Erases what a stage computes for no output (ops a later stage recomputes, extents a
    recomputed op needed) and the inputs nothing reads."""
    for op in reversed(list(stage.block.ops)):
        if not isinstance(op, fu.OutputOp) and not any(r.uses for r in op.results):
            stage.block.erase_op(op)
    for key, arg in [(k, stage.values[k]) for k in stage.imports]:
        if not arg.uses:
            assert isinstance(arg, BlockArgument)
            stage.block.erase_arg(arg)
            stage.imports.remove(key)


def shard_for_rank(fusion: fu.FusionOp, rank: int) -> ModuleOp:
    """Rank `rank`'s program of the sharded `fusion`: a module of its local fusions and the
    `host.program` that runs them and communicates (raises ShardingError naming the op)."""
    plan = plan_sharding(fusion)
    fusions, program = _RankBuilder(plan, rank).build()
    module = ModuleOp([*fusions, program])
    try:
        module.verify()
    except VerifyException as e:  # a bug here, never the user's
        raise AssertionError(f"fuser-shard made invalid IR for rank {rank}: {e}") from e
    return module


def rank_parts(module: ModuleOp) -> tuple[list[fu.FusionOp], host.ProgramOp]:
    """The local fusions and the program of a module `shard_for_rank` made."""
    ops = list(module.body.block.ops)
    program = ops[-1]
    assert isinstance(program, host.ProgramOp)
    return [f for f in ops if isinstance(f, fu.FusionOp)], program


@dataclass(frozen=True)
class ShardPass(ModulePass):
    """`fuser-shard{rank=r}`: each sharded `fusion.fusion` of the module is replaced by rank
    `r`'s local fusions and its `host.program` (see the module docstring)."""

    name = "fuser-shard"

    rank: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.rank < 0:
            raise ShardPassError(f"fuser-shard: rank must be non-negative, got {self.rank}")
        for f in [f for f in op.body.block.ops if isinstance(f, fu.FusionOp)]:
            if not fu.is_sharded(f):
                continue
            ranked = shard_for_rank(f, self.rank)
            for part in list(ranked.body.block.ops):
                part.detach()
                op.body.block.insert_op_before(part, f)
            op.body.block.erase_op(f)
