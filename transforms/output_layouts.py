"""`fuser-output-layouts`: outputs returned in a given layout (nvFuser's
`add_output(t, stride_order=)`), written by kernels that only write row-major tensors.

An output with stride order `order` (`fusion.output`'s `stride_orders`: entry i is the rank of
dim i's stride, 0 the innermost) is a dense tensor of its own: the row-major tensor of its dims
taken outermost first, `p = permute(t, outer_first(order))`, seen through the inverse
permutation. The rewrite makes `p` the output (the kernels write it row-major, through the
transpose scheduler where the innermost dim moves) and drops the stride orders; `FusionCompiler`
hands each such output back as its inverse permutation, a view of the kernels' tensor
(`runtime.frontends.permute_outputs`), as it writes an aliased output into its input after the
run. An output that is an input, or a view of one (returned as a view of the caller's tensor
otherwise, `segment.returned_view_chains`), is copied first (`fusion.set`), whatever its order:
a row-major order is how Thunder asks for a permuted input to be made contiguous. The values
are the same either way (the reference ignores the layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import BlockArgument
from xdsl.passes import ModulePass

from fuser.dialects import fusion as fu
from fuser.transforms.segment import input_view_chain

OutputPermutes = tuple[tuple[int, tuple[int, ...]], ...]
"""(output, dims): output k is handed back as the kernels' tensor permuted by `dims`."""


def outer_first(order: tuple[int, ...]) -> list[int]:
    """The dims of a stride order from the outermost (the largest stride) to the innermost."""
    return sorted(range(len(order)), key=lambda d: -order[d])


def physical_outputs(fusion: fu.FusionOp) -> OutputPermutes:
    """Rewrites `fusion` in place: each output with a stride order becomes a tensor of its own
    in the row-major permutation of that order; returns how to permute each back (see the
    module docstring)."""
    output = fusion.output_op
    layouts = output.layouts()
    if output.stride_orders is not None:
        del output.properties["stride_orders"]
    permutes: list[tuple[int, tuple[int, ...]]] = []
    block = fusion.body.block
    for k, order in enumerate(layouts):
        if order is None:
            continue
        value = original = output.values[k]
        if isinstance(value, BlockArgument) or input_view_chain(value) is not None:
            copy = fu.SetOp(value)
            copy.result.name_hint = original.name_hint
            block.insert_op_before(copy, output)
            value = copy.result
        if order != fu.row_major_order(len(order)):
            dims = outer_first(order)
            permuted = fu.PermuteOp(value, dims)
            block.insert_op_before(permuted, output)
            value = permuted.result
            permutes.append((k, tuple(dims.index(d) for d in range(len(dims)))))
        if value is not original:
            value.name_hint = original.name_hint
            output.operands[k] = value
    ftype = fusion.function_type
    outputs = [v.type for v in output.values]
    fusion.function_type = FunctionType.from_lists(list(ftype.inputs.data), outputs)
    return tuple(permutes)


@dataclass(frozen=True)
class OutputLayoutsPass(ModulePass):
    """Writes each output with a stride order as its row-major permutation (see the module
    docstring)."""

    name = "fuser-output-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            physical_outputs(fusion)
