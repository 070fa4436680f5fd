"""What the templates built around one op that is not pointwise (`scan`: a scan; `sort`: a top-k
or an argsort) share: the fusion's other ops split into the *prologue*, what computes the op's
operand at a point of the operand's shape, and the *epilogue*, what the outputs compute from
the op's results at a point of the results' shape; and the checks of one call's shapes against
those two spaces.

Each space is the op's own: every dim indexed by itself (`identity_map`), inputs broadcast into
it through the maps `iteration_space.expand` traces. Every output has the results' shape; the
results are read as they are computed (never broadcast), so a kernel computes them at the point
it stores.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.transforms.schedulers.base import AnalyzedScheduler, call_shapes
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    MappingError,
    Needs,
    body_ops,
    expand,
    identity_map,
)
from fuser.transforms.schedulers.kernel_builder import KernelBuilder, compute_element, op_label
from fuser.transforms.schedulers.scalar_lowering import is_pointwise

Reads = tuple[tuple[int, DimMap], ...]
"""Tensor inputs read, as (input index, map)."""


@dataclass(frozen=True)
class AroundOp:
    """A fusion of one op with a pointwise prologue and epilogue (`around_op`)."""

    op: Operation
    ops: tuple[Operation, ...]
    """The fusion's ops without `op`: its operand and its outputs are computed by them."""
    operand_space: DimMap
    """The map of the op's (first) operand: its own dims (static 1: index 0)."""
    result_space: DimMap
    """The map of the op's results, and of every output."""
    needs_before: Needs
    """What computing the operand at a point needs, under which maps."""
    needs_after: Needs
    """What computing the outputs at a point needs (the op's results given)."""

    def reads_before(self, fusion: fu.FusionOp) -> Reads:
        """The inputs the prologue reads, in maps of the operand's space."""
        return _reads(fusion, self.needs_before)

    def reads_after(self, fusion: fu.FusionOp) -> Reads:
        """The inputs the epilogue reads, in maps of the results' space."""
        return _reads(fusion, self.needs_after)

    def values_at(
        self,
        fusion: fu.FusionOp,
        kb: KernelBuilder,
        needs: Needs,
        wanted: Sequence[tuple[SSAValue, DimMap]],
        read: Callable[[int, DimMap], SSAValue],
        env: dict[tuple[SSAValue, DimMap], SSAValue] | None = None,
    ) -> list[SSAValue]:
        """The scalars of `wanted` at one point of the kernel `kb` builds for `fusion`, from
        the values `env` gives there (the op's results); tensor input i read under map m is
        `read(i, m)`, a scalar input the kernel's parameter."""

        def load(value: SSAValue, m: DimMap) -> SSAValue:
            i = list(fusion.inputs).index(value)
            return read(i, m) if isinstance(value.type, TensorType) else kb.inputs[i]

        env = compute_element(list(self.ops), needs, load, env)
        return [env[v, m] if (v, m) in env else load(v, m) for v, m in wanted]


def _reads(fusion: fu.FusionOp, needs: Needs) -> Reads:
    return tuple(
        (i, m)
        for i, arg in enumerate(fusion.inputs)
        if isinstance(arg.type, TensorType)
        for m in needs.get(arg, [])
    )


def around_op(fusion: fu.FusionOp, kinds: tuple[type[Operation], ...], what: str) -> AroundOp | str:
    """The one op of `kinds` in `fusion` (called `what` in reasons) with its prologue and
    epilogue, or why the fusion is not one such op with pointwise ops around it."""
    ops = body_ops(fusion)
    found = [op for op in ops if isinstance(op, kinds)]
    if not found:
        return f"no {what} op"
    if len(found) > 1:
        return f"{len(found)} {what}s: a {what} kernel computes one"
    for op in ops:
        if isinstance(op, fu.SegmentSetOp):
            return f"{op_label(op)} marks a kernel boundary"
        if not (is_pointwise(op) or isinstance(op, (fu.DimOp, *kinds))):
            return f"{op_label(op)} is neither a pointwise op nor the {what}"
    op = found[0]
    if not fusion.output_op.values:
        return "the fusion has no outputs"
    operand_t = cast(TensorType, op.operands[0].type)
    result_t = cast(TensorType, op.results[0].type)
    result_space = identity_map(result_t)
    roots: dict[SSAValue, list[DimMap]] = {}
    for o, value in enumerate(fusion.output_op.values):
        t = value.type
        if not (
            isinstance(t, TensorType)
            and t.get_num_dims() == result_t.get_num_dims()
            and fu.shapes_compatible(t.get_shape(), result_t.get_shape())
        ):
            return (
                f"output #{o} ({t}) does not have the {what}'s shape "
                f"{fu.format_shape(result_t.get_shape())}: a {what} kernel writes that shape"
            )
        roots.setdefault(value, []).append(identity_map(cast(TensorType, t)))
    others = tuple(o for o in ops if o is not op)
    operand_space = identity_map(operand_t)
    try:
        after = expand(others, roots)
        before = expand(others, {op.operands[0]: [operand_space]})
    except MappingError as e:
        return str(e)
    for r in op.results:
        if any(m != result_space for m in after.get(r, [])):
            return f"the {what}'s result is read broadcast: a {what} kernel reads it as it is"
    return AroundOp(op, others, operand_space, result_space, before, after)


def call_extents(
    fusion: fu.FusionOp, info: FusionInfo, around: AroundOp, what: str
) -> tuple[tuple[int, ...], tuple[int, ...]] | str:
    """The extents of the operand and of the results for one call (`info`), or why the call's
    shapes do not fit them: an output of another shape, an input of an extent neither 1 nor
    the space's along a dim it is read by."""
    env = call_shapes(fusion, info)
    if isinstance(env, str):
        return env
    operand = cast(tuple[int, ...], env[around.op.operands[0]])
    result = cast(tuple[int, ...], env[around.op.results[0]])
    for o, value in enumerate(fusion.output_op.values):
        if env[value] != result:
            return (
                f"output #{o} has shape {list(cast(tuple[int, ...], env[value]))}, not the "
                f"{what}'s {list(result)}: a {what} kernel writes that shape"
            )
    spaces = ((around.reads_before(fusion), operand), (around.reads_after(fusion), result))
    for reads, extents in spaces:
        for i, m in reads:
            shape = cast(TensorMeta, info.inputs[i]).shape
            for d, entry in enumerate(m):
                if entry is not None and shape[d] not in (1, extents[cast(int, entry)]):
                    return (
                        f"input #{i} has extent {shape[d]} in dim {d}, which cannot be indexed "
                        f"by dim {entry} of the {what}'s space {list(extents)}"
                    )
    return operand, result


A = TypeVar("A")


class AroundOpScheduler(AnalyzedScheduler[A]):
    """A scheduler of one op with pointwise ops around it. Its heuristics key is the parameters
    themselves (the default); a fusion refused for its ops (`structure`) is refused whatever
    its shapes, so the key of such a refusal is the reason alone."""

    @abstractmethod
    def structure(self, fusion: fu.FusionOp) -> object:
        """What the template knows of the fusion's ops, or (a str) why it does not take them."""

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        return ("refused", reason if isinstance(self.structure(fusion), str) else info)


def pow2_at_least(n: int) -> int:
    """The least power of two >= n (1 for n <= 1)."""
    return 1 << max(0, (n - 1).bit_length())
