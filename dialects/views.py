"""How a reshape and a slice map extents and strides: the one definition that `fusion.reshape`,
`fusion.slice`, their `host` twins, the segmenter and the host evaluator share.

A reshape keeps the elements in row-major order and changes only the shape. Its result type
gives the new extents: static ones, and at most one `?`, the extent inferred from the element
count (torch's `-1`). `reshape_extents` computes the result's extents from the operand's.

On the GPU a reshape moves nothing when it is a *view*: when the new shape can be given strides
over the operand's memory (`view_strides`, the rule of torch's `Tensor.view`): each run of
result dims must split or merge a run of operand dims that are contiguous with each other
(`stride[i] == stride[i + 1] * extent[i + 1]`, extent-1 dims ignored). A contiguous tensor is a
view of any reshape; a transposed one generally is not, and is copied first.

A slice keeps, along each dim, the indices `range(start, stop, step)` as Python and torch read
them: a negative bound counts from the end, a bound past either end is clamped, and `END` (an
omitted stop) is the end. It is always a view: the first element's offset and the strides times
the steps (`slice_view`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX


class ReshapeError(ValueError):
    """A reshape whose extents do not fit its operand's (the message says how)."""


def reshape_extents(target: Sequence[int], source: Sequence[int]) -> tuple[int, ...]:
    """The result's extents: `target` (static extents, at most one `DYNAMIC_INDEX`, inferred)
    for an operand of extents `source` (all known). Raises ReshapeError if the element counts
    differ or the inferred extent is not whole."""
    numel = math.prod(source)
    known = math.prod(e for e in target if e != DYNAMIC_INDEX)
    inferred = [i for i, e in enumerate(target) if e == DYNAMIC_INDEX]
    what = f"cannot reshape {format_shape(source)}"
    if len(inferred) > 1:
        raise ReshapeError(f"{format_shape(target)} infers more than one extent")
    if inferred:
        if known == 0:
            raise ReshapeError(
                f"{what} to {format_shape(target)}: beside a zero extent the ? could be any extent"
            )
        if numel % known:
            raise ReshapeError(
                f"{what} ({numel} elements) to {format_shape(target)}: {numel} is not a "
                f"multiple of {known}"
            )
        out = list(target)
        out[inferred[0]] = numel // known
        return tuple(out)
    if known != numel:
        raise ReshapeError(
            f"{what} ({numel} elements) to {format_shape(target)} ({known} elements)"
        )
    return tuple(target)


def reshape_view(
    target: Sequence[int], shape: Sequence[int], strides: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The extents of a reshape to `target` of a tensor of `shape` and `strides`, and the
    strides that view it so (None: it needs a copy). Raises ReshapeError as `reshape_extents`."""
    extents = reshape_extents(target, shape)
    return extents, view_strides(shape, strides, extents)


def view_strides(
    shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """The strides of `new_shape` over a tensor of `shape` and `strides` (same element count),
    or None when no strides give it (the reshape needs a copy)."""
    if math.prod(shape) == 0:
        return contiguous_strides(new_shape)
    # the operand's dims without the extent-1 ones, as (extent, stride)
    dims = [(e, s) for e, s in zip(shape, strides, strict=True) if e != 1]
    out: list[int] = []
    i = 0  # the next operand dim
    j = 0  # the next result dim
    while j < len(new_shape):
        if new_shape[j] == 1:
            out.append(_next_stride(dims, i))
            j += 1
            continue
        # one chunk: operand dims [i, k) and result dims [j, m) of equal element counts
        k, m = i + 1, j + 1
        have, want = dims[i][0], new_shape[j]
        while have != want:
            if have < want:
                have *= dims[k][0]
                k += 1
            else:
                want *= new_shape[m]
                m += 1
        if any(dims[n][1] != dims[n + 1][1] * dims[n + 1][0] for n in range(i, k - 1)):
            return None  # the operand dims merged are not contiguous with each other
        stride = dims[k - 1][1]  # the innermost operand dim's
        chunk: list[int] = []
        for e in reversed(new_shape[j:m]):
            chunk.append(stride)
            stride *= e
        out.extend(reversed(chunk))
        i, j = k, m
    return tuple(out)


def _next_stride(dims: Sequence[tuple[int, int]], i: int) -> int:
    """A stride for a new extent-1 dim before operand dim `i` (any value is valid: torch
    takes the next dim's extent times its stride)."""
    return dims[i][0] * dims[i][1] if i < len(dims) else 1


END = 2**63 - 1
"""A slice stop that means the end of the dim (Python's omitted stop)."""


class SliceError(ValueError):
    """A slice whose bounds are malformed (the message says how)."""


def slice_range(start: int, stop: int, step: int, extent: int) -> tuple[int, int]:
    """(first index, count) of `range(start, stop, step)` over a dim of `extent`, bounds read as
    Python and torch do (negative from the end, clamped to [0, extent]); `step` >= 1."""

    def clamp(i: int) -> int:
        return min(max(i + extent if i < 0 else i, 0), extent)

    first, last = clamp(start), clamp(stop)
    return first, max(0, -(-(last - first) // step))


def check_slice_steps(steps: Sequence[int]) -> None:
    """Raises SliceError for a step below 1 (torch slices forwards only)."""
    for d, step in enumerate(steps):
        if step < 1:
            raise SliceError(f"step {step} of dim {d} must be at least 1")


def slice_extents(
    starts: Sequence[int], stops: Sequence[int], steps: Sequence[int], shape: Sequence[int]
) -> tuple[int, ...]:
    """The extents of a slice of a tensor of `shape` (all known)."""
    return tuple(
        slice_range(a, b, c, n)[1] for a, b, c, n in zip(starts, stops, steps, shape, strict=True)
    )


def slice_view(
    starts: Sequence[int],
    stops: Sequence[int],
    steps: Sequence[int],
    shape: Sequence[int],
    strides: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The extents, strides and element offset of a slice of a tensor of `shape` and
    `strides` (the offset is 0 for an empty slice, which addresses nothing)."""
    ranges = [
        slice_range(a, b, c, n) for a, b, c, n in zip(starts, stops, steps, shape, strict=True)
    ]
    extents = tuple(count for _, count in ranges)
    new_strides = tuple(s * c for s, c in zip(strides, steps, strict=True))
    if 0 in extents:
        return extents, new_strides, 0
    offset = sum(first * s for (first, _), s in zip(ranges, strides, strict=True))
    return extents, new_strides, offset


def permute_view(
    dims: Sequence[int], shape: Sequence[int], strides: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The extents and strides of a permute (result dim i is operand dim `dims[i]`) of a
    tensor with these extents and strides: a view, always."""
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)


def view_alignment(alignment: int, offset_bytes: int) -> int:
    """The pointer alignment (a power of two, at most 16 bytes) of a view `offset_bytes` past
    a pointer of `alignment`."""
    return min(alignment, offset_bytes & -offset_bytes) if offset_bytes else alignment


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """C-order strides in elements (an extent 0 counts as 1)."""
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether element strides `strides` lay out `shape` C-contiguously (a dim of extent 1 may
    have any stride)."""
    expected = contiguous_strides(shape)
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected, strict=True))


def format_shape(shape: Sequence[int]) -> str:
    """A shape for messages: `[?, 4]`."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"
