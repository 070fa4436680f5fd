"""The compile options a `FusionDefinition` and a `FusionCompiler` take: their defaults and their
check, in one module light enough for the frontend to import before anything is compiled (the
compiler itself costs a quarter of a second to import)."""

from __future__ import annotations

from fuser.errors import DefinitionError

DEFAULT_STREAMS = 4
"""Streams a stream-parallel loop spreads its iterations over (nvFuser's default too)."""

WELFORD_MODES: tuple[str, ...] = ("auto", "always", "never")
"""The values of the Welford translation's mode (`welford` of `fuser-segment`, of
`translate-welford` and of the compiler; see `transforms.translate_welford`)."""


def check_options(owner: str, *, streams: int, welford: str, split_k: int | None = None) -> None:
    """Checks the compile options `FusionDefinition` and `FusionCompiler` take (see
    `FusionCompiler.__init__`); a DefinitionError naming `owner` and the argument otherwise."""
    if isinstance(streams, bool) or not isinstance(streams, int) or streams < 1:
        raise DefinitionError(f"{owner}: argument 'streams' must be an int >= 1, got {streams!r}")
    if welford not in WELFORD_MODES:
        raise DefinitionError(
            f"{owner}: argument 'welford' must be one of {', '.join(map(repr, WELFORD_MODES))}, "
            f"got {welford!r}"
        )
    if split_k is not None and (
        isinstance(split_k, bool) or not isinstance(split_k, int) or split_k < 1
    ):
        raise DefinitionError(
            f"{owner}: argument 'split_k' must be None or an int >= 1 (1 never splits), got "
            f"{split_k!r}"
        )
