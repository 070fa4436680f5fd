"""What a scheduling decision may depend on: the fusion's input metadata and the device's limits.

The heuristics of every scheduler are a function of a `FusionInfo` alone, so "do the cached
heuristics still hold for this new input?" is a comparison of heuristics computed from two
`FusionInfo`s, as in nvFuser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TensorMeta:
    """A tensor input as the scheduler sees it: extents, strides in elements, pointer alignment."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    alignment: int = 16
    """The largest power of two (at most 16) in bytes that divides the data pointer."""

    @staticmethod
    def contiguous(shape: Sequence[int], alignment: int = 16) -> TensorMeta:
        strides: list[int] = []
        step = 1
        for extent in reversed(shape):
            strides.append(step)
            step *= max(extent, 1)
        return TensorMeta(tuple(shape), tuple(reversed(strides)), alignment)


@dataclass(frozen=True)
class DeviceInfo:
    """The limits of the GPU a kernel is compiled for (defaults: an H100 SXM)."""

    arch: str = "sm_90"
    sm_count: int = 132
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
