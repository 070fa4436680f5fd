"""What every kernel template needs to build a `kernel.func` for a fusion.

`KernelBuilder` creates the function (parameters: the fusion's inputs, then its outputs; tensors
become `!kernel.tensor<T, rank>`, scalars stay scalars), hoists what is loop-invariant (index
constants, thread geometry, extents and strides) to the top of the body, and offers index
arithmetic in i32 or i64 that folds Python ints (so `i * 1 + 0` emits nothing), offsets from
strides, delinearization, and `scf.for` / `scf.if` as context managers. `compute_element` emits
the scalar code of a list of fusion ops for one point of the iteration space, op by op, with a
`kernel.comment` naming each, through `scalar_lowering`.

Comments exist for people reading the kernel IR or its CUDA: `comment` emits one only while
`kernel_comments` is on. It is on by default (`fuser-opt` prints the IR); the runtime compiler
turns it off unless `FUSER_DUMP` shows kernels, as building them costs Python time for nothing.

Code is built with xDSL's `ImplicitBuilder`: inside `with kb.build():` (or a loop or branch of
it) every op created is inserted at the current point.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar, cast

from xdsl.builder import Builder, ImplicitBuilder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, IntegerType, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    Indexed,
    MapEntry,
    MappingError,
    Needs,
    Shifted,
    operand_maps,
)
from fuser.transforms.schedulers.scalar_lowering import lower_pointwise

Index = SSAValue | int
"""An index: a value of the kernel's index type, or a Python int that folds until used."""

IndexT = TypeVar("IndexT", bound=Index)
"""An `Index` whose kind (value or int) a helper keeps (see `named`)."""


_COMMENTS: ContextVar[bool] = ContextVar("fuser_kernel_comments", default=True)


@contextmanager
def kernel_comments(enabled: bool | None) -> Generator[None, None, None]:
    """Within it, `comment` emits `kernel.comment` ops only if `enabled` (None: as outside)."""
    if enabled is None:
        yield
        return
    token = _COMMENTS.set(enabled)
    try:
        yield
    finally:
        _COMMENTS.reset(token)


def comments_enabled() -> bool:
    """Whether `comment` emits comments here (see `kernel_comments`)."""
    return _COMMENTS.get()


def comment(text: str | Callable[[], str]) -> None:
    """A `kernel.comment` at the current point, if comments are on (`text()` is only called
    then)."""
    if _COMMENTS.get():
        kernel.CommentOp(text if isinstance(text, str) else text())


def param_type(t: Attribute) -> Attribute:
    """The kernel parameter type of a fusion input or output type."""
    if isinstance(t, TensorType):
        return kernel.TensorParamType(t.element_type, t.get_num_dims())
    return t


def value_name(value: SSAValue) -> str:
    """`%name` of a fusion value, or `%<op>#<i>` without a name hint."""
    if value.name_hint is not None:
        return f"%{value.name_hint}"
    owner = value.owner
    index = value.index if isinstance(value, OpResult | BlockArgument) else "?"
    return f"%{owner.name if isinstance(owner, Operation) else 'arg'}#{index}"


def op_text(op: Operation) -> str:
    """How a `kernel.comment` names a fusion op: `fusion.add %y`."""
    return f"{op.name} {', '.join(value_name(r) for r in op.results)}".rstrip()


def op_label(op: Operation) -> str:
    """How a scheduler's reason names a fusion op: `'fusion.sum' (%s)`."""
    names = ", ".join(value_name(r) for r in op.results)
    return f"'{op.name}'" + (f" ({names})" if names else "")


class KernelBuilder:
    """A `kernel.func` for a fusion under construction, with index helpers in one index type."""

    def __init__(
        self, fusion: fu.FusionOp, name: str, index_type: Attribute, max_threads: int
    ) -> None:
        assert isinstance(index_type, IntegerType) and index_type in kernel.INDEX_TYPES
        values = [*fusion.inputs, *fusion.output_op.values]
        self.func = kernel.FuncOp(
            name, [param_type(v.type) for v in values], max_threads=max_threads
        )
        self.index_type: IntegerType = index_type
        block = self.func.body.block
        for arg, value, kind in zip(
            block.args,
            values,
            ["in"] * len(fusion.inputs) + ["out"] * len(fusion.output_op.values),
            strict=True,
        ):
            arg.name_hint = value.name_hint or kind
        self.inputs: Sequence[SSAValue] = block.args[: len(fusion.inputs)]
        self.outputs: Sequence[SSAValue] = block.args[len(fusion.inputs) :]
        self._return = kernel.ReturnOp()
        block.add_op(self._return)
        self._prologue_end: Operation | None = None
        self._hoisted: dict[Hashable, SSAValue] = {}

    @contextmanager
    def build(self) -> Generator[None, None, None]:
        """Creates ops at the end of the body (before its `kernel.return`)."""
        with ImplicitBuilder(Builder(InsertPoint.before(self._return))):
            yield

    def hoist(self, key: Hashable, make: Callable[[], SSAValue]) -> SSAValue:
        """The value `make()` creates, created once at the top of the body (it must depend on
        parameters and hoisted values only)."""
        if key not in self._hoisted:
            block = self.func.body.block
            at = (
                InsertPoint.at_start(block)
                if self._prologue_end is None
                else InsertPoint.after(self._prologue_end)
            )
            builder = Builder(at)
            with ImplicitBuilder(builder):
                value = make()
            # The prologue now ends just before where `builder` would insert next (`make` may
            # return an existing value, and hoists nested in `make` insert earlier).
            before = builder.insertion_point.insert_before
            self._prologue_end = block.last_op if before is None else before.prev_op
            self._hoisted[key] = value
        return self._hoisted[key]

    # --- values of the index type -------------------------------------------------------

    def value(self, x: Index) -> SSAValue:
        """`x` as an SSA value (an int becomes a hoisted constant)."""
        if isinstance(x, SSAValue):
            return x
        t = self.index_type
        return self.hoist(("const", x), lambda: arith.ConstantOp(IntegerAttr(x, t)).result)

    def cast_index(self, x: SSAValue) -> SSAValue:
        """An i64 (extent, stride) in the index type."""
        if x.type == self.index_type:
            return x
        return arith.TruncIOp(x, self.index_type).result

    def geometry(self, op_type: type[kernel.GeometryOp], dim: kernel.Dimension) -> SSAValue:
        """`threadIdx.<dim>` etc. in the index type, hoisted."""
        name = f"{op_type.name.removeprefix('kernel.')}_{dim.value}"
        return self.hoist((op_type, dim), lambda: named(op_type(dim, self.index_type).result, name))

    def extent(self, tensor: SSAValue, axis: int) -> SSAValue:
        """The extent of `tensor` along `axis` as i64 (`kernel.size`), hoisted."""
        return self.hoist(("extent", tensor, axis), lambda: kernel.SizeOp(tensor, axis).result)

    def size(self, tensor: SSAValue, axis: int) -> SSAValue:
        """The extent of `tensor` along `axis`, in the index type, hoisted."""
        name = f"{tensor.name_hint}_size{axis}"
        return self.hoist(
            ("size", tensor, axis),
            lambda: named(self.cast_index(self.extent(tensor, axis)), name),
        )

    def i64(self, x: int) -> SSAValue:
        """An i64 constant, hoisted."""
        return self.hoist(("i64", x), lambda: arith.ConstantOp(IntegerAttr(x, fu.I64)).result)

    def stride(self, tensor: SSAValue, axis: int) -> SSAValue:
        """The stride (elements) of `tensor` along `axis`, in the index type, hoisted."""
        name = f"{tensor.name_hint}_stride{axis}"
        return self.hoist(
            ("stride", tensor, axis),
            lambda: named(self.cast_index(kernel.StrideOp(tensor, axis).result), name),
        )

    def broadcast_stride(self, tensor: SSAValue, axis: int) -> SSAValue:
        """The stride of `axis`, or 0 where its extent is 1: reads a dim that may be broadcast
        at run time with index 0 whatever the iteration index."""

        def make() -> SSAValue:
            is_one = arith.CmpiOp(self.size(tensor, axis), self.value(1), "eq")
            stride = arith.SelectOp(is_one, self.value(0), self.stride(tensor, axis)).result
            return named(stride, f"{tensor.name_hint}_bstride{axis}")

        return self.hoist(("bstride", tensor, axis), make)

    # --- folding arithmetic ----------------------------------------------------------------

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0 or b == 0:
            return b if a == 0 else a
        return arith.AddiOp(self.value(a), self.value(b)).result

    def mul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 0 or b == 0:
            return 0
        if a == 1 or b == 1:
            return b if a == 1 else a
        return arith.MuliOp(self.value(a), self.value(b)).result

    def div(self, a: Index, b: Index) -> Index:
        """Division of non-negative indices."""
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if b == 1 or a == 0:
            return a
        return arith.DivSIOp(self.value(a), self.value(b)).result

    def rem(self, a: Index, b: Index) -> Index:
        """Remainder of non-negative indices."""
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        if b == 1 or a == 0:
            return 0
        return arith.RemSIOp(self.value(a), self.value(b)).result

    def cmp(self, predicate: str, a: Index, b: Index) -> SSAValue:
        """`arith.cmpi` of two indices (`slt`, `eq`, ...), an i1."""
        return arith.CmpiOp(self.value(a), self.value(b), predicate).result

    def all_of(self, conditions: Sequence[SSAValue]) -> SSAValue | None:
        """The conjunction of i1 values, or None for none."""
        result: SSAValue | None = None
        for c in conditions:
            result = c if result is None else arith.AndIOp(result, c).result
        return result

    def offset(self, terms: Sequence[tuple[Index, Index]]) -> Index:
        """`sum(index * stride)` over (index, stride) pairs."""
        total: Index = 0
        for index, stride in terms:
            total = self.add(total, self.mul(index, stride))
        return total

    def entry_index(
        self,
        entry: MapEntry,
        index: Callable[[int], Index],
        taken: Mapping[Indexed, Index] | None = None,
    ) -> Index:
        """The index along a dim indexed by `entry` of the point whose index along iteration
        dim x is `index(x)` (negative, or past the extent, outside a `Shifted` dim); an
        `Indexed` dim's is in `taken` (`taken_index`)."""
        if isinstance(entry, Indexed):
            assert taken is not None and entry in taken, "a take's index is computed first"
            return taken[entry]
        if isinstance(entry, Shifted):
            return self.add(0 if entry.dim is None else index(entry.dim), -entry.offset)
        return 0 if entry is None else index(entry)

    def taken_index(self, tensor: SSAValue, axis: int, value: SSAValue) -> SSAValue:
        """Where a take reads `tensor` along `axis` for its index `value` (i32 or i64), in the
        index type: a negative index counts from the end, and the result is clamped into
        [0, extent) (the extent is not 0: the host checks)."""
        wide = value if value.type == fu.I64 else arith.ExtSIOp(value, fu.I64).result
        extent = self.extent(tensor, axis)
        negative = arith.CmpiOp(wide, self.i64(0), "slt").result
        wide = arith.SelectOp(negative, arith.AddiOp(wide, extent).result, wide).result
        last = arith.SubiOp(extent, self.i64(1)).result
        clamped = arith.MaxSIOp(arith.MinSIOp(wide, last).result, self.i64(0)).result
        return named(self.cast_index(clamped), f"{tensor.name_hint}_at{axis}")

    def within(self, m: DimMap, index: Callable[[int], Index]) -> SSAValue | None:
        """Whether the point lies within every `Shifted` dim of `m` (None: no such dim), one
        unsigned compare per dim."""
        return self.all_of(
            [
                self.cmp("ult", self.entry_index(e, index), e.extent)
                for e in m
                if isinstance(e, Shifted)
            ]
        )

    def access_offset(
        self,
        tensor: SSAValue,
        m: DimMap,
        static: Sequence[int],
        index: Callable[[int], Index],
        broadcast: bool = True,
        taken: Mapping[Indexed, Index] | None = None,
    ) -> Index:
        """The element offset in `tensor`, accessed with map `m`, of the point whose index
        along iteration dim x is `index(x)` (and whose take indices are `taken`): a stride per
        mapped dim. With `broadcast`, a dim of dynamic extent (`static`: the tensor type's
        shape) is read with stride 0 where it is 1 at run time (`broadcast_stride`; a taken
        dim's clamped index is 0 there)."""
        terms: list[tuple[Index, Index]] = []
        for d, x in enumerate(m):
            if x is not None:
                dynamic = broadcast and static[d] == DYNAMIC_INDEX and not isinstance(x, Indexed)
                stride = self.broadcast_stride(tensor, d) if dynamic else self.stride(tensor, d)
                terms.append((self.entry_index(x, index, taken), stride))
        return self.offset(terms)

    def delinearize(self, flat: Index, sizes: Sequence[Index], lowest: int = 0) -> list[Index]:
        """The row-major indices of `flat` in `sizes`, for dims `lowest` and above (the
        others are 0 in the result and cost nothing); the outermost index is not reduced
        modulo its extent."""
        indices: list[Index] = [0] * len(sizes)
        rest = flat
        for d in range(len(sizes) - 1, lowest - 1, -1):
            if d == 0:
                indices[d] = rest
            else:
                indices[d] = self.rem(rest, sizes[d])
                rest = self.div(rest, sizes[d])
        return indices

    # --- control flow ----------------------------------------------------------------------

    @contextmanager
    def loop(
        self, lower: Index, upper: Index, step: Index = 1, unroll: bool = False, name: str = "i"
    ) -> Generator[SSAValue, None, None]:
        """`scf.for` over the index type; yields the induction variable (named `name`).
        `unroll` marks a loop of constant trip count for full unrolling (`#pragma unroll`)."""
        body = Block(arg_types=[self.index_type])
        body.args[0].name_hint = name
        op = scf.ForOp(self.value(lower), self.value(upper), self.value(step), [], body)
        if unroll:
            op.attributes["unroll"] = UnitAttr()
        with ImplicitBuilder(body) as (iv,):
            yield iv
            scf.YieldOp()

    def unrolled(self, count: int, name: str) -> AbstractContextManager[Index]:
        """A fully unrolled loop from 0 to `count` (no loop, index 0, for one trip)."""
        if count == 1:
            return nullcontext(0)
        return self.loop(0, count, unroll=True, name=name)

    @contextmanager
    def if_(self, condition: SSAValue | None) -> Generator[None, None, None]:
        """`scf.if` without results; a None condition means always (no branch)."""
        if condition is None:
            yield
            return
        block = Block()
        scf.IfOp(condition, [], [block])
        with ImplicitBuilder(block):
            yield
            scf.YieldOp()


def named(x: IndexT, name: str) -> IndexT:
    """`x`, with the name hint `name` if it is a value that has none yet."""
    if isinstance(x, SSAValue) and x.name_hint is None:
        x.name_hint = name
    return x


def lower_resize(
    kb: KernelBuilder,
    op: fu.ResizeOp,
    m: DimMap,
    operands: Sequence[SSAValue],
    index: Callable[[int], Index],
) -> SSAValue:
    """The scalar of a pad or cat under map `m` at the element whose index along iteration dim
    x is `index(x)`: the operand placed there (its scalar, computed at the shifted point), or
    the pad's value. `operands` are the op's scalars (the tensor operands', then a pad's
    value)."""
    placements = op.placements()
    if isinstance(op, fu.PadOp):
        (_, offsets), fill = placements[0], operands[1]
        n = fu.shape_of(op.input.type) or ()
        inside = kb.all_of(
            [
                kb.cmp("ult", kb.add(kb.entry_index(m[d], index), -a), n[d])
                for d, a in offsets.items()
            ]
        )
        return operands[0] if inside is None else arith.SelectOp(inside, operands[0], fill).result
    assert isinstance(op, fu.CatOp)
    at = kb.entry_index(m[op.axis], index)
    result = operands[-1]
    for k in range(len(placements) - 2, -1, -1):
        before_next = kb.cmp("slt", at, placements[k + 1][1][op.axis])
        result = arith.SelectOp(before_next, operands[k], result).result
    return result


@dataclass(frozen=True)
class ElementPosition:
    """Where the element a kernel computes lies, for the ops whose value depends on it and not
    only on their operands' scalars (`pad`, `cat`, `rand`, `randn`): its index along iteration
    dim x is `index(x)`, the iteration space's extent there `extent(x)`, and `flat()` its
    row-major index in the iteration space, of `rank` dims. Where the kernel computes a vector
    of `width` consecutive elements of that flat space at once, `vector` is (the flat index of
    its first element, a multiple of `width`; the element's lane in it; `width`)."""

    kb: KernelBuilder
    rank: int
    index: Callable[[int], Index]
    extent: Callable[[int], Index]
    flat: Callable[[], Index]
    vector: Callable[[], tuple[Index, Index, int]] | None = None


def drawn_in_its_own_space(m: DimMap, rank: int) -> bool:
    """Whether a random op read under map `m` has the dims of the iteration space (of `rank`
    dims): its element index is then the space's flat index (`lower_random`)."""
    return m == tuple(range(rank))


def lower_random(
    position: ElementPosition, op: fu.RandomOp, m: DimMap, operands: Sequence[SSAValue]
) -> SSAValue:
    """The scalar of a `fusion.rand`/`randn` under map `m`: `kernel.random` at the element's
    row-major index i in the op's own shape (its extents: static, the iteration space's along
    the dim a dim follows, a pad's or cat's operand extent along a shifted one), as the Philox
    block i / k and component i % k (k elements a block). Where the op's shape is the
    iteration space's and the kernel computes whole blocks in one vector, the block is
    (vector start) / k + lane / k: one expression for the k lanes of a block, which the
    compiler computes once. `operands` are the seed's and the offset's scalars."""
    kb = position.kb
    shape = fu.shape_of(op.result.type) or ()
    el = fu.element_type(op.result.type)
    per = kernel.random_per_block(el)
    own_space = drawn_in_its_own_space(m, position.rank)
    vector = position.vector() if own_space and position.vector is not None else None
    if vector is not None and vector[2] % per == 0:
        start, lane, _ = vector
        subsequence = kb.add(kb.div(start, per), kb.div(lane, per))
        component = kb.rem(lane, per)
    else:
        linear: Index = 0
        if own_space:  # the op's dims are the iteration space's
            linear = position.flat()
        else:
            for d, entry in enumerate(m):
                if isinstance(entry, Indexed):
                    raise MappingError(f"'{op.name}' read at an index: a kernel of its own")
                if isinstance(entry, Shifted):
                    size: Index = entry.extent
                elif shape[d] != DYNAMIC_INDEX or entry is None:
                    size = shape[d]
                else:
                    size = position.extent(entry)
                linear = kb.add(kb.mul(linear, size), kb.entry_index(entry, position.index))
        subsequence, component = kb.div(linear, per), kb.rem(linear, per)
    normal = isinstance(op, fu.RandnOp)
    distribution = kernel.Distribution.NORMAL if normal else kernel.Distribution.UNIFORM
    seed, offset = operands
    return kernel.RandomOp(
        distribution, seed, offset, kb.value(subsequence), kb.value(component), el
    ).result


def compute_element(
    ops: Sequence[Operation],
    needs: Needs,
    read: Callable[[SSAValue, DimMap], SSAValue],
    env: dict[tuple[SSAValue, DimMap], SSAValue] | None = None,
    lower: Callable[[Operation, Sequence[SSAValue]], SSAValue] = lower_pointwise,
    position: ElementPosition | None = None,
) -> dict[tuple[SSAValue, DimMap], SSAValue]:
    """Emits the scalar code of `ops` for one element and returns the scalar of each (value,
    map) computed, extending `env` (values a scheduler computed itself, e.g. a reduction).

    Walks `ops` in order and lowers each result under each map that `needs` gives it (ops
    nothing needs are skipped; `fusion.dim` is an extent). An operand that is neither in `env`
    nor computed here (a fusion input) is `read(value, map)`: a load at the current point, or a
    scalar parameter. `lower` lowers one op (a scheduler may specialize `lower_pointwise`);
    resize and random ops need the element's `position` (`lower_resize`, `lower_random`).
    """
    env = {} if env is None else env
    comments = comments_enabled()

    def get(value: SSAValue, m: DimMap) -> SSAValue:
        if (value, m) not in env:
            env[value, m] = read(value, m)
        return env[value, m]

    for op in ops:
        if isinstance(op, fu.DimOp) or len(op.results) != 1:
            continue
        result = op.results[0]
        for m in needs.get(result, []):
            if (result, m) in env:
                continue
            if comments:
                kernel.CommentOp(op_text(op))
            maps = operand_maps(op, m)
            if isinstance(op, fu.INDEXING_OPS):  # the input, loaded at the index (`Indexed`)
                env[result, m] = get(op.input, cast(DimMap, maps[0]))
                continue
            operands = [
                get(o, om) for o, om in zip(op.operands, maps, strict=True) if om is not None
            ]
            if isinstance(op, fu.ResizeOp | fu.RandomOp):
                assert position is not None, f"'{op.name}' needs the element's position"
                if isinstance(op, fu.ResizeOp):
                    env[result, m] = lower_resize(position.kb, op, m, operands, position.index)
                else:
                    env[result, m] = lower_random(position, op, m, operands)
            else:
                env[result, m] = lower(op, operands)
            if result.name_hint is not None and env[result, m].name_hint is None:
                env[result, m].name_hint = result.name_hint
    return env
