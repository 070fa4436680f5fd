"""`fuser-decompose`: rewrites the fusion ops that no scheduler reads into ops they do.

`fusion.scatter(x, index, src, d)` becomes a compare against an iota: each position `p` of `x`
along `d` is compared with the index and with the index plus `n` (`x`'s extent on `d`: the iota's
last element plus one, read from the iota itself as a one-element slice, a view), so an index in
[-n, 0) counts from the end and any other outside [0, n) matches no position (writes nothing),

    hit(p, j) = index[..., j, ...] == p  or  index[..., j, ...] + n == p
    out[..., p, ...] = any_j hit ? max_j where(hit, src[..., j, ...], lowest) : x[..., p, ...]

Where the index has extent 1 on `d`, the compare runs over `x`'s own shape and the result is a
where: one pointwise kernel. Otherwise a new dim after `d` holds the `k` candidates and two max
reductions over it give whether any index wrote the element and the largest value written (in
f32 for half types, exactly): a reduction kernel reading the index and `src` `n` times per row
(from cache), meant for small `k`. A max keeps the value written exactly (a -0.0, a NaN, an
infinity), where a sum would turn -0.0 into +0.0.

(`take_along_axis`, decomposed the same way at first, is now loaded at its index by the
pointwise kernel, as `take` is: one load per element instead of a compare per candidate.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from fuser.dialects import fusion as fu
from fuser.dialects.views import END

_COMPUTE: dict[Attribute, Attribute] = {fu.F16: fu.F32, fu.BF16: fu.F32, fu.I1: fu.I32}
"""The type a max reduction runs in, for element types it does not take."""


@dataclass
class _Ops:
    """The ops a rewrite creates, in order, with the `fusion.dim`s it takes once each."""

    name: str
    """What the values made are named after: `<name>_<role>`."""
    ops: list[Operation] = field(default_factory=list[Operation])
    dims: dict[tuple[SSAValue, int], SSAValue] = field(
        default_factory=dict[tuple[SSAValue, int], SSAValue]
    )

    def add(self, op: Operation, role: str) -> SSAValue:
        self.ops.append(op)
        op.results[0].name_hint = f"{self.name}_{role}"
        return op.results[0]

    def extent(self, tensor: SSAValue, axis: int) -> SSAValue:
        if (tensor, axis) not in self.dims:
            dim = fu.DimOp(tensor, axis)
            self.ops.append(dim)
            dim.result.name_hint = f"{tensor.name_hint or 'x'}_size{axis}"
            self.dims[tensor, axis] = dim.result
        return self.dims[tensor, axis]

    def broadcast(
        self,
        value: SSAValue,
        shape: Sequence[int],
        dims: Sequence[int],
        extent: Callable[[int], SSAValue],
        role: str,
    ) -> SSAValue:
        """`value` broadcast into `shape` (its dim i to `dims[i]`); `extent(d)` gives each
        dynamic result dim the operand does not carry."""
        t = TensorType(fu.element_type(value.type), shape)
        if value.type == t and list(dims) == list(range(len(shape))):
            return value
        in_shape = fu.shape_of(value.type) or ()
        sizes = [extent(d) for d in fu.broadcast_sized_dims(in_shape, dims, shape)]
        return self.add(fu.BroadcastInDimOp(value, dims, t, sizes), role)

    def cast(self, value: SSAValue, el: Attribute, role: str) -> SSAValue:
        if fu.element_type(value.type) == el:
            return value
        t = value.type
        new = TensorType(el, t.get_shape()) if isinstance(t, TensorType) else el
        return self.add(fu.CastOp(value, new), role)


class DecomposeScatter(RewritePattern):
    """`scatter` as an iota compare, max reductions and a where (see the module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fu.ScatterOp, rewriter: PatternRewriter, /):
        b = _Ops(op.result.name_hint or "scatter")
        x, index, src, d = op.input, op.index, op.src, op.axis
        x_shape = fu.shape_of(x.type) or ()
        index_shape = fu.shape_of(index.type) or ()
        index_type = fu.element_type(index.type)
        n, k, rank = x_shape[d], index_shape[d], len(x_shape)
        length = b.extent(x, d) if n == DYNAMIC_INDEX else None
        iota = b.add(fu.IotaOp(0, 1, TensorType(index_type, [n]), length), "positions")
        last = b.add(fu.SliceOp(iota, [-1], [END], [1]), "last")
        if n == DYNAMIC_INDEX:  # of extent 1 (n > 0), typed so: it then broadcasts
            last = b.add(fu.ReshapeOp(last, [1]), "last1")
        one = b.add(fu.ConstantOp.of(1, index_type), "one")
        count = b.add(fu.AddOp(last, one, last.type), "count")  # n, as a [1] tensor
        el = fu.element_type(x.type)
        if k == 1:  # the compare runs over x's own shape: pointwise, no reduction
            shape, index_dims, candidates = list(x_shape), list(range(rank)), None

            def extent(j: int) -> SSAValue:
                return b.extent(x, j)

        else:  # a new dim d + 1 holds the k candidates of each of x's n positions
            shape = [*x_shape[: d + 1], k, *x_shape[d + 1 :]]
            index_dims = [j if j < d else j + 1 for j in range(rank)]
            candidates = d + 1

            def extent(j: int) -> SSAValue:
                if j == d + 1:
                    return b.extent(index, d)
                return b.extent(x, j if j <= d else j - 1)

        positions = b.broadcast(iota, shape, [d], extent, "each")
        at = b.broadcast(index, shape, index_dims, extent, "index")
        wrapped = b.add(
            fu.AddOp(at, b.broadcast(count, shape, [d], extent, "counts"), at.type), "wrapped"
        )
        hit_t = TensorType(fu.I1, shape)
        direct = b.add(fu.EqOp(positions, at, hit_t), "direct")
        from_end = b.add(fu.EqOp(positions, wrapped, hit_t), "from_end")  # index in [-n, 0)
        hit = b.add(fu.WhereOp(direct, direct, from_end, hit_t), "hit")
        is_tensor = isinstance(src.type, TensorType)
        if candidates is None:
            written = hit
            value = b.broadcast(src, shape, index_dims, extent, "src") if is_tensor else src
        else:
            counted = fu.I32
            zero, unit = (b.add(fu.ConstantOp.of(c, counted), f"c{c}") for c in (0, 1))
            hits = b.add(fu.WhereOp(hit, unit, zero, TensorType(counted, shape)), "hits")
            x_type = TensorType(counted, x_shape)
            times = b.add(fu.MaxOp(hits, [candidates], False, x_type), "times")
            written = b.add(fu.GtOp(times, zero, TensorType(fu.I1, x_shape)), "written")
            value = src
            if is_tensor:  # of several writes of one element, the largest value
                compute = _COMPUTE.get(el, el)
                values = b.broadcast(b.cast(src, compute, "src"), shape, index_dims, extent, "src")
                lowest = fu.reduction_identity("max", compute)
                low = b.add(fu.ConstantOp.of(lowest, compute), "lowest")
                picked = b.add(fu.WhereOp(hit, values, low, values.type), "picked")
                best = b.add(
                    fu.MaxOp(picked, [candidates], False, TensorType(compute, x_shape)), "best"
                )
                value = b.cast(best, el, "value")
        result = b.add(fu.WhereOp(written, value, x, x.type), "scattered")
        result.name_hint = op.result.name_hint  # the value the fusion had
        rewriter.replace(op, b.ops, [result])


def decompose(fusion: fu.FusionOp) -> None:
    """Applies the pass to one fusion, in place."""
    # no dead-code elimination: the compiler planned split factors on every matmul, dead or not
    applier = GreedyRewritePatternApplier([DecomposeScatter()], dce_enabled=False)
    PatternRewriteWalker(applier).rewrite_region(fusion.body)


@dataclass(frozen=True)
class DecomposePass(ModulePass):
    """Rewrites ops no scheduler reads into ops they do (see the module docstring)."""

    name = "fuser-decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            decompose(fusion)
