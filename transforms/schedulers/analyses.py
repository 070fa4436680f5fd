"""Analyses of a fusion that scheduling asks for again and again, computed once while the caller
vouches that its fusions are not rewritten.

A scheduler's `accepts`, `heuristics`, `launch_config` and `emit` each analyse the fusion they
are given from scratch (its `Structure`, the layout of a shape, the sizing of a row), because a
fusion is mutable IR that a pass may rewrite in place between two questions: a new shape of a
layer norm built the same `Structure` eight times. A caller that knows its fusions stay as they
are (the compiler: its fusion and the two-pass copy of it are never rewritten) keeps an
`AnalysisCache` and opens it with `cached_analyses` around its questions; inside, `memoized`
computes each analysis once per key and returns the same (immutable) result after. Outside any,
`memoized` computes every time, so passes, which rewrite fusions, need nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class AnalysisCache:
    """Analysis results by (kind, key). A key holds its fusion ops, so their identities (the
    ops hash by identity) are never reused while the cache lives."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, Hashable], Any] = {}

    def get(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        try:
            return self._results[kind, key]
        except KeyError:
            result = self._results[kind, key] = compute()
            return result

    def lookup(self, kind: str, key: Hashable) -> Any:
        """The result kept under (kind, key), or None."""
        return self._results.get((kind, key))

    def put(self, kind: str, key: Hashable, value: Any) -> None:
        self._results[kind, key] = value

    def __len__(self) -> int:
        return len(self._results)


_ACTIVE: ContextVar[AnalysisCache | None] = ContextVar("fuser_analysis_cache", default=None)


@contextmanager
def cached_analyses(cache: AnalysisCache) -> Generator[AnalysisCache, None, None]:
    """Within the block, `memoized` analyses are kept in `cache`: the caller vouches that no
    fusion analysed inside is rewritten while `cache` lives."""
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)


def analysis_scope() -> AbstractContextManager[AnalysisCache | None]:
    """For the questions about one fusion that is not rewritten meanwhile (`accepts`, then
    `heuristics`, `emit` and `launch_config` of one kernel): the open cache if there is one,
    else a fresh one kept for the block, so that the analysis `accepts` made is reused by the
    others."""
    return nullcontext() if _ACTIVE.get() is not None else cached_analyses(AnalysisCache())


def active() -> AnalysisCache | None:
    """The open cache, or None: for analyses worth precomputing only when they are kept."""
    return _ACTIVE.get()


def memoized(kind: str, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()`, kept under (kind, key) in the open cache, if one is open."""
    cache = _ACTIVE.get()
    return compute() if cache is None else cache.get(kind, key, compute)
