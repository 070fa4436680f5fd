"""The signature of a call: the one flat tuple of ints that every runtime cache is keyed by.

A signature holds, for each tensor input in input order, its rank, shape, strides in elements,
dtype code (`DTYPE_CODES`: 1..7 for the fusion dtypes, 0 for any other) and pointer alignment
(the largest power of two <= 16 bytes dividing the data pointer); then `(-1, kind)` for each
scalar input (`SCALAR_KINDS`: 1 bool, 2 int, 3 float, 0 anything else); then the device
ordinal. The encoding is prefix-free, so equal signatures mean equal metadata, and
`decode_signature` recovers it.

The layout is written once, as the two source templates `TENSOR_PART` and `SCALAR_PART`: the
generated fast path of `fuser.runtime.dispatch` pastes them into its code, and `tensor_part` /
`scalar_part`, which every other encoder calls, are compiled from the same text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from fuser.runtime.dtypes import BFLOAT16, FUSION_DTYPES

#: The dtype code of each dtype a fusion may take; every other dtype is code 0.
DTYPE_CODES: dict[np.dtype, int] = {dtype: code for code, dtype in enumerate(FUSION_DTYPES, 1)}
#: The same codes by torch dtype name (`str(torch.bfloat16)`), for torch inputs.
TORCH_DTYPE_CODES: dict[str, int] = {f"torch.{d.name}": c for d, c in DTYPE_CODES.items()}
DTYPES_BY_CODE: dict[int, np.dtype] = {code: dtype for dtype, code in DTYPE_CODES.items()}

SCALAR_BOOL, SCALAR_INT, SCALAR_FLOAT = 1, 2, 3
#: The kind code of each Python/numpy scalar type (0: not a number, rejected on a miss).
SCALAR_KINDS: dict[type, int] = {bool: SCALAR_BOOL, np.bool_: SCALAR_BOOL, int: SCALAR_INT}
SCALAR_KINDS.update({t: SCALAR_INT for t in (np.int8, np.int16, np.int32, np.int64)})
SCALAR_KINDS.update({t: SCALAR_INT for t in (np.uint8, np.uint16, np.uint32, np.uint64)})
SCALAR_KINDS.update({t: SCALAR_FLOAT for t in (float, np.float16, np.float32, np.float64)})
SCALAR_KINDS[BFLOAT16.type] = SCALAR_FLOAT

#: ALIGNMENT[ptr & 15]: the largest power of two <= 16 dividing ptr.
ALIGNMENT: tuple[int, ...] = tuple(16 if r == 0 else r & -r for r in range(16))

SCALAR_MARK = -1
"""Where a tensor part would start with its rank, a scalar part starts with this."""

TENSOR_PART = "len({shape}), *{shape}, *{strides}, {code}, ALIGNMENT[{ptr} & 15]"
"""A tensor input's part of a signature, as Python source over four expressions: its shape and
strides (sequences of ints), dtype code and data pointer (or the pointer's alignment, which
encodes the same). Evaluated with `NAMESPACE`."""

SCALAR_PART = f"{SCALAR_MARK}, SCALAR_KINDS.get(type({{value}}), 0)"
"""A scalar input's part of a signature, as Python source over its value."""

NAMESPACE: dict[str, Any] = {"ALIGNMENT": ALIGNMENT, "SCALAR_KINDS": SCALAR_KINDS}
"""The names the templates use."""


def _compiled(params: str, template: str, **fields: str) -> Callable[..., tuple[int, ...]]:
    """A function of `params` returning the template filled with `fields` as a tuple."""
    return eval(f"lambda {params}: ({template.format(**fields)},)", dict(NAMESPACE))


tensor_part: Callable[[Sequence[int], Sequence[int], int, int], tuple[int, ...]] = _compiled(
    "shape, strides, code, ptr",
    TENSOR_PART,
    shape="shape",
    strides="strides",
    code="code",
    ptr="ptr",
)
"""`tensor_part(shape, strides, code, ptr)`: `TENSOR_PART` as a function."""

scalar_part: Callable[[Any], tuple[int, ...]] = _compiled("value", SCALAR_PART, value="value")
"""`scalar_part(value)`: `SCALAR_PART` as a function."""


def dtype_code(dtype: Any) -> int:
    """The signature code of a numpy dtype (0 for a dtype no fusion takes)."""
    return DTYPE_CODES.get(np.dtype(dtype), 0)


def alignment_of(ptr: int) -> int:
    """The largest power of two, at most 16, that divides `ptr` (16 for a null pointer)."""
    return ALIGNMENT[ptr & 15]


class InputMeta(NamedTuple):
    """A tensor input as a signature describes it (strides in elements, alignment in bytes)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype_code: int
    alignment: int


def decode_signature(
    key: tuple[int, ...], is_tensor: Sequence[bool]
) -> tuple[tuple[InputMeta | None, ...], tuple[int, ...], int]:
    """(per input: InputMeta or None for a scalar, the scalar kinds, device) of a signature."""
    pos = 0
    tensors: list[InputMeta] = []
    for flag in is_tensor:
        if flag:
            rank = key[pos]
            shape = key[pos + 1 : pos + 1 + rank]
            strides = key[pos + 1 + rank : pos + 1 + 2 * rank]
            code, align = key[pos + 1 + 2 * rank], key[pos + 2 + 2 * rank]
            tensors.append(InputMeta(tuple(shape), tuple(strides), code, align))
            pos += 3 + 2 * rank
    kinds: list[int] = []
    for flag in is_tensor:
        if not flag:
            if key[pos] != SCALAR_MARK:
                raise ValueError(f"malformed signature {key}")
            kinds.append(key[pos + 1])
            pos += 2
    if pos != len(key) - 1:
        raise ValueError(f"malformed signature {key}")
    it = iter(tensors)
    metas = tuple(next(it) if flag else None for flag in is_tensor)
    return metas, tuple(kinds), key[-1]
