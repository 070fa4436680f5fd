"""The schedulers' analyses are computed once per fusion (and shape) while the compiler's cache is
open, and every time elsewhere; the kernels do not change."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

from fuser import DataType, FusionDefinition, builder
from fuser.transforms.schedulers import reduction_structure
from fuser.transforms.schedulers.analyses import AnalysisCache, cached_analyses, memoized


def layer_norm() -> FusionDefinition:
    with FusionDefinition("ln") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        w = fd.define_tensor([-1], DataType.Float)
        v, m = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=True)
        y = fd.ops.mul(fd.ops.sub(x, m), fd.ops.rsqrt(fd.ops.add(v, 1e-5)))
        fd.add_output(fd.ops.mul(y, w))
    return fd


def inputs(rows: int, hidden: int = 1024) -> list[np.ndarray]:
    return [np.ones((rows, hidden), np.float32), np.ones(hidden, np.float32)]


ROWS = (64, 65, 66, 1000, 3)


def sources(fd: FusionDefinition) -> list[list[str]]:
    return [[k.source for k in fd.compile(inputs(r), arch="sm_90").kernels] for r in ROWS]


def test_a_new_shape_of_a_seen_definition_builds_no_structure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new shape of a layer norm built `Structure` 8 times, `plan_layout` 5 times (issue 13's
    profile). With the compiler's cache, new row counts reuse the structure of the fusion and of
    its two-pass copy."""
    fd = layer_norm()
    fd.compile(inputs(64), arch="sm_90")
    built: list[Any] = []
    original = reduction_structure.Structure.__init__

    def counting(self: Any, fusion: Any, partials: bool = False) -> None:
        built.append(fusion)
        original(self, fusion, partials)

    monkeypatch.setattr(reduction_structure.Structure, "__init__", counting)
    for rows in ROWS[1:]:
        fd.compile(inputs(rows), arch="sm_90")
    assert built == []
    layer_norm().compile(inputs(64), arch="sm_90")
    assert built  # a new compiler analyses its own fusion


def test_the_cache_changes_no_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same sequence of shapes compiles the same kernels, byte for byte, without it."""
    cached = sources(layer_norm())
    monkeypatch.setattr(builder, "cached_analyses", lambda cache: contextlib.nullcontext(cache))
    assert sources(layer_norm()) == cached


def test_analyses_are_kept_only_inside_an_open_cache() -> None:
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert memoized("k", "key", compute) == 1
    assert memoized("k", "key", compute) == 2  # no cache open: computed again
    cache = AnalysisCache()
    with cached_analyses(cache):
        assert memoized("k", "key", compute) == 3
        assert memoized("k", "key", compute) == 3
        assert memoized("k", "other", compute) == 4
    assert memoized("k", "key", compute) == 5
    with cached_analyses(cache):  # the same cache again: its results are still there
        assert memoized("k", "key", compute) == 3
    assert len(cache) == 2
