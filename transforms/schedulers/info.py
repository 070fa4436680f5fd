"""What a scheduling decision may depend on: the fusion's input metadata and the device's limits.

The heuristics of every scheduler are a function of a `FusionInfo` alone, so "do the cached
heuristics still hold for this new input?" is a comparison of heuristics computed from two
`FusionInfo`s, as in nvFuser.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fuser.dialects.views import contiguous_strides

MIN_ARCH = 75
"""The oldest GPU architecture fuser compiles for (sm_75): the oldest NVRTC 13 targets."""

MAX_EXTENT = 2**63 - 1
"""The largest extent a shape may give: kernels index with 64-bit integers at most."""

SHAPES_SYNTAX = (
    "one shape per tensor input, separated by ',': extents joined by 'x' (16384x4096), "
    "'()' for a rank-0 tensor"
)
"""The grammar of `fuser-run --shapes` and of the `shapes` option of fuser's passes."""


def arch_number(arch: str) -> int | None:
    """The compute capability of `sm_<digits>` (an `a` suffix allowed: `sm_90a` is 90) as
    one number, or None for another text."""
    match = re.fullmatch(r"sm_(\d+)a?", arch)
    return None if match is None else int(match.group(1))


def arch_problem(arch: str) -> str | None:
    """Why `arch` is not a GPU architecture fuser compiles for, or None: it must be
    `sm_<digits>` at least MIN_ARCH (`fuser-run --arch` and the `arch` option of every pass)."""
    number = arch_number(arch)
    if number is None:
        return f"bad arch {arch!r}: expected sm_<digits>, like sm_90"
    if number < MIN_ARCH:
        return f"arch {arch} is not supported: fuser compiles for sm_{MIN_ARCH} and newer"
    return None


def parse_shapes(text: str, where: str = "shapes") -> list[tuple[int, ...]] | None:
    """`16384x4096,4096,()` -> [(16384, 4096), (4096,), ()]; None for an empty text (no shapes
    given). An empty item is also a rank-0 tensor (`8x4,,4`), the older spelling. Raises
    ValueError naming the bad item, `where` it is (the option) and `SHAPES_SYNTAX`."""
    if not text.strip():
        return None
    shapes: list[tuple[int, ...]] = []
    for item in text.split(","):
        item = item.strip()
        if item in ("", "()"):
            shapes.append(())
            continue
        try:
            shape = tuple(int(e) for e in item.lower().split("x"))
        except ValueError:
            shape = (-1,)
        if any(e < 0 for e in shape):
            raise ValueError(f"bad shape {item!r} in {where}: expected {SHAPES_SYNTAX}")
        if any(e > MAX_EXTENT for e in shape):
            raise ValueError(f"bad shape {item!r} in {where}: an extent is over 2^63 - 1")
        shapes.append(shape)
    return shapes


@dataclass(frozen=True)
class TensorMeta:
    """A tensor input as the scheduler sees it: extents, strides in elements, pointer alignment."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    alignment: int = 16
    """The largest power of two (at most 16) in bytes that divides the data pointer."""

    @staticmethod
    def contiguous(shape: Sequence[int], alignment: int = 16) -> TensorMeta:
        return TensorMeta(tuple(shape), contiguous_strides(shape), alignment)


DEFAULT_ARCH = "sm_90"
"""The GPU compiled for when none is named or present (the passes' `arch`, `fuser-run` and
`fd.compile` without a GPU): an H100's."""
DEFAULT_SM_COUNT = 132
"""The SMs of that GPU (an H100 SXM's)."""


@dataclass(frozen=True)
class DeviceInfo:
    """The limits of the GPU a kernel is compiled for (defaults: an H100 SXM)."""

    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT
    max_threads_per_block: int = 1024
    max_shared_memory_per_block: int = 227 * 1024
    registers_per_sm: int = 65536
    l2_bytes: int = 50 * 1024 * 1024


@dataclass(frozen=True)
class FusionInfo:
    """The metadata of one call: a `TensorMeta` per tensor input (None for scalars)."""

    inputs: tuple[TensorMeta | None, ...]
    device: DeviceInfo = field(default_factory=DeviceInfo)

    @property
    def input_shapes(self) -> tuple[tuple[int, ...] | None, ...]:
        return tuple(None if m is None else m.shape for m in self.inputs)
