"""Multi-kernel: where the heuristics cannot decide between schedulers that take a fusion, each
is compiled and the first call of a size class times them on its real inputs; the fastest is
kept (Inductor's `multi_kernel.py`).

A scheduler names the later schedulers worth timing against its choice (`Scheduler.contenders`:
the persistent scheduler, for rows that fill a 1024-thread block, names `looped`). The builder
then compiles at most `MAX_VARIANTS` kernels (in parallel: NVRTC releases the GIL) and, at the
first call of a signature whose variants have no choice yet, runs each `WARMUP` times and then
`REPS` times between CUDA events on the call's stream. Every run allocates its own outputs, so
the timed runs write to scratch tensors and the call's result comes from the chosen kernel's
own run after them.

The choice is kept per key, in memory and in `multi_kernel.json` beside the kernel cache
(`FUSER_CACHE_DIR`): the key is a digest of the variants' kernel sources and heuristics (the
size class). Writes are atomic (a temporary file renamed over the old one); a corrupt or
unreadable file reads as empty; an unwritable one is skipped.

`FUSER_MULTI_KERNEL=0` turns timing off (the heuristics' first choice); `=N` forces variant N
(for benchmarking; a fusion with fewer variants takes its first). `FUSER_DUMP=multi_kernel`
prints each decision with its timings, and `fd.compile(...).summary()` lists the variants.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fuser.errors import InputError

MAX_VARIANTS = 3
WARMUP = 2
REPS = 5
ENV = "FUSER_MULTI_KERNEL"
FILE_NAME = "multi_kernel.json"


def forced_variant() -> int | None:
    """The variant `FUSER_MULTI_KERNEL` forces (0: the heuristics' first choice), or None to
    time them. A value that is not a number is an InputError naming the variable."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise InputError(
            f"{ENV}={raw!r}: expected a variant number (0 turns timing off and takes the "
            "heuristics' first choice; N forces variant N), or unset to time the variants"
        )
    return int(raw)


def choice_key(sources: Sequence[str], size_class: Sequence[str]) -> str:
    """The key of a set of variants: a digest of their kernels' sources (which name the
    target) and their heuristics (the size class)."""
    text = json.dumps([list(sources), list(size_class)])
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Decision:
    """Which variant runs a size class, and why."""

    index: int
    names: tuple[str, ...]
    """The variants' schedulers, in the heuristics' order."""
    times_ms: tuple[float, ...] = ()
    """Each variant's median time on the first call's inputs (empty when not timed)."""
    how: str = "timed"
    """"timed", "stored" (read from the file), or "forced" (FUSER_MULTI_KERNEL)."""

    def describe(self) -> str:
        chosen = self.names[self.index]
        if self.times_ms:
            times = ", ".join(
                f"{n} {t:.4f} ms" for n, t in zip(self.names, self.times_ms, strict=True)
            )
            return f"{chosen} ({self.how}: {times})"
        return f"{chosen} ({self.how})"


class ChoiceStore:
    """The choices on disk: one JSON object of key -> {"index", "names", "times_ms"}."""

    def __init__(self, folder: Path | None) -> None:
        self.path = None if folder is None else folder / FILE_NAME

    def load(self) -> dict[str, Decision]:
        """Every stored choice (none where the file is missing, unreadable or corrupt)."""
        if self.path is None:
            return {}
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict):
            return {}
        found: dict[str, Decision] = {}
        for key, entry in raw.items():
            try:
                names = tuple(str(n) for n in entry["names"])
                index = int(entry["index"])
                times = tuple(float(t) for t in entry.get("times_ms", ()))
            except (KeyError, TypeError, ValueError):
                continue
            if 0 <= index < len(names):
                found[str(key)] = Decision(index, names, times, "stored")
        return found

    def save(self, key: str, decision: Decision) -> bool:
        """Adds a choice to the file (atomically); False where it cannot be written."""
        if self.path is None:
            return False
        entries = {k: _entry(d) for k, d in self.load().items()}
        entries[key] = _entry(decision)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".multi_kernel-")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(entries, f, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return False
        return True


def _entry(d: Decision) -> dict[str, object]:
    return {"index": d.index, "names": list(d.names), "times_ms": list(d.times_ms)}


def time_variants(
    runs: Sequence[Callable[[], object]],
    clock: Callable[[Callable[[], object], int], float],
) -> tuple[float, ...]:
    """Each variant's median milliseconds per run: `clock(run, n)` runs it `n` times between
    two events and returns the milliseconds; WARMUP runs first (module loads, caches)."""
    times: list[float] = []
    for run in runs:
        for _ in range(WARMUP):
            run()
        times.append(statistics.median(clock(run, 1) for _ in range(REPS)))
    return tuple(times)


def decide(
    key: str,
    names: Sequence[str],
    known: dict[str, Decision],
    store: ChoiceStore,
    timer: Callable[[], tuple[float, ...]],
) -> tuple[Decision, bool]:
    """The variant for `key`: forced, known (memory or file), or timed now (then kept in
    `known` and in the file). Returns it and whether it was newly stored on disk."""
    forced = forced_variant()
    if forced is not None:
        index = forced if forced < len(names) else 0
        return Decision(index, tuple(names), (), "forced"), False
    if key not in known:
        known.update(store.load())
    found = known.get(key)
    if found is not None and found.names == tuple(names):
        return found, False
    times = timer()
    decision = Decision(min(range(len(times)), key=times.__getitem__), tuple(names), times)
    known[key] = decision
    return decision, store.save(key, decision)
