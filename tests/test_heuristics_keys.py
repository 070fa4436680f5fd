"""A new shape is compared by its schedulers' heuristics keys (`Scheduler.heuristics_key`), layouts
are shared per `layout_class`, and the Welford decision per `decision_key`: equal keys must give
the parameters, layouts and decisions that the shape would get on its own (checked here against
the un-keyed computation over many shapes, strided and misaligned inputs, extents 0 and 1, and
64-bit indexing), keys must separate shapes whose parameters differ (boundaries below), and a
new row count or hidden size of a seen definition must reuse the keys and the kernel."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from fuser import DataType, FusionDefinition, builder
from fuser.dialects.fusion import FusionOp
from fuser.transforms import segment
from fuser.transforms.schedulers import SCHEDULERS, reduction_structure
from fuser.transforms.schedulers import reduction_layout as rl
from fuser.transforms.schedulers.analyses import AnalysisCache, cached_analyses
from fuser.transforms.schedulers.base import cached_heuristics
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.persistent import PersistentScheduler
from fuser.transforms.schedulers.shapes import ShapeMismatch, _walk, value_shapes
from fuser.transforms.translate_welford import decide, decision_key, translated

PERSISTENT = PersistentScheduler()


def _dt(dtype: str) -> DataType:
    return DataType.Float if dtype == "float32" else DataType.BFloat16


def layer_norm(dtype: str = "float32") -> FusionDefinition:
    with FusionDefinition("ln") as fd:
        x = fd.define_tensor([-1, -1], _dt(dtype))
        w = fd.define_tensor([-1], _dt(dtype))
        xf = fd.ops.cast(x, DataType.Float)
        v, m = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
        mb = fd.ops.broadcast_in_dim(m, shape=x.shape(), broadcast_dims=[0])
        ib = fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(v, 1e-5)), x.shape(), [0])
        wb = fd.ops.broadcast_in_dim(fd.ops.cast(w, DataType.Float), x.shape(), [1])
        y = fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, mb), ib), wb)
        fd.add_output(fd.ops.cast(y, _dt(dtype)))
    return fd


def rms_norm(dtype: str = "float32") -> FusionDefinition:
    with FusionDefinition("rms") as fd:
        x = fd.define_tensor([-1, -1], _dt(dtype))
        w = fd.define_tensor([-1], _dt(dtype))
        xf = fd.ops.cast(x, DataType.Float)
        ms = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=False)
        ib = fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(ms, 1e-5)), x.shape(), [0])
        wb = fd.ops.broadcast_in_dim(fd.ops.cast(w, DataType.Float), x.shape(), [1])
        fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.mul(xf, ib), wb), _dt(dtype)))
    return fd


def softmax(dtype: str = "float32") -> FusionDefinition:
    with FusionDefinition("softmax") as fd:
        x = fd.define_tensor([-1, -1], _dt(dtype))
        xf = fd.ops.cast(x, DataType.Float)
        mb = fd.ops.broadcast_in_dim(fd.ops.max(xf, dims=[1]), x.shape(), [0])
        e = fd.ops.exp(fd.ops.sub(xf, mb))
        sb = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), x.shape(), [0])
        fd.add_output(fd.ops.cast(fd.ops.div(e, sb), _dt(dtype)))
    return fd


def column_sum() -> FusionDefinition:
    with FusionDefinition("sum0") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    return fd


def statistics() -> FusionDefinition:
    with FusionDefinition("stats") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        v, m = fd.ops.var_mean(x, dims=[1], correction=1)
        fd.add_output(v)
        fd.add_output(m)
    return fd


def bias_gelu() -> FusionDefinition:
    with FusionDefinition("gelu") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        b = fd.define_tensor([-1], DataType.Float)
        bb = fd.ops.broadcast_in_dim(b, x.shape(), [1])
        fd.add_output(fd.ops.gelu(fd.ops.add(x, bb), approximate="tanh"))
    return fd


DEFINITIONS: dict[str, Callable[[], FusionDefinition]] = {
    "layer norm": layer_norm,
    "layer norm bf16": lambda: layer_norm("bfloat16"),
    "rms norm": rms_norm,
    "softmax bf16": lambda: softmax("bfloat16"),
    "column sum": column_sum,
    "statistics": statistics,
    "bias gelu": bias_gelu,
}

ROWS = (0, 1, 2, 3, 8, 1023, 1024, 1025, 4208, 4209)
HIDDEN = (1, 2, 6, 8, 12, 128, 1000, 4096, 4098, 4100, 8192)


def infos(fusion: FusionOp) -> Iterator[FusionInfo]:
    """Metadata over ROWS x HIDDEN: contiguous, with a padded row stride, and misaligned."""
    ranks = [len(a.type.get_shape()) for a in fusion.inputs]
    for rows, hidden in itertools.product(ROWS, HIDDEN):
        for variant in ("contiguous", "padded", "aligned 8", "aligned 4"):
            metas = []
            for rank in ranks:
                shape = (rows, hidden) if rank == 2 else (hidden,)
                meta = TensorMeta.contiguous(shape)
                if variant == "padded" and rank == 2:
                    meta = TensorMeta(shape, (hidden + 4, 1))
                if variant.startswith("aligned"):
                    meta = TensorMeta(meta.shape, meta.strides, int(variant.split()[1]))
                metas.append(meta)
            yield FusionInfo(tuple(metas), DeviceInfo())
    # 64-bit indexing and the rows just under it
    for rows in (2**18, 2**20):
        shapes = [(rows, 1024) if rank == 2 else (1024,) for rank in ranks]
        yield FusionInfo(tuple(TensorMeta.contiguous(s) for s in shapes), DeviceInfo())


@pytest.mark.parametrize("name", DEFINITIONS)
def test_shared_layouts_and_fast_shapes_are_those_of_each_shape(name: str) -> None:
    """Under one cache (as the compiler keeps one), every shape's layout, taken from its class,
    and its value shapes, from the compiled steps, are those computed for it alone."""
    fusion = DEFINITIONS[name]().fusion
    structure = reduction_structure.Structure(fusion)
    cache = AnalysisCache()
    for info in infos(fusion):
        try:
            expected_shapes: Any = _walk(fusion, info.input_shapes)
        except ShapeMismatch as e:
            expected_shapes = str(e)
        with cached_analyses(cache):
            try:
                shapes: Any = value_shapes(fusion, info.input_shapes)
            except ShapeMismatch as e:
                shapes = str(e)
            layout = None if structure.error else rl.plan_layout(structure, info)
        assert shapes == expected_shapes, info
        if structure.error is None:
            assert layout == rl._plan_layout(structure, info, 8), info


@pytest.mark.parametrize("name", DEFINITIONS)
def test_equal_keys_give_equal_verdicts_and_heuristics(name: str) -> None:
    """Shapes grouped by each scheduler's heuristics key: within a group, the verdict and the
    heuristics computed for each shape alone (no cache) are the same. Equivalently, shapes
    whose heuristics differ never share a key."""
    fusion = DEFINITIONS[name]().fusion
    cache = AnalysisCache()
    for scheduler in SCHEDULERS:
        groups: dict[Any, list[FusionInfo]] = {}
        for info in infos(fusion):
            with cached_analyses(cache):
                groups.setdefault(scheduler.heuristics_key(fusion, info), []).append(info)
        for key, members in groups.items():
            verdicts = {bool(scheduler.accepts(fusion, i)) for i in members}
            assert len(verdicts) == 1, (scheduler.name, key)
            if verdicts == {True}:
                params = {scheduler.heuristics(fusion, i) for i in members}
                assert len(params) == 1, (scheduler.name, key, params)
                with cached_analyses(cache):
                    cached = cached_heuristics(scheduler, fusion, members[-1])
                assert cached == next(iter(params))


def test_equal_decision_keys_give_equal_welford_decisions() -> None:
    fusion = layer_norm().fusion
    two_pass = translated(fusion)
    cache = AnalysisCache()
    groups: dict[Any, set[bool]] = {}
    for info in infos(fusion):
        with cached_analyses(cache):
            key = decision_key(fusion, info, "auto", two_pass)
        groups.setdefault(key, set()).add(decide(fusion, info, "auto", two_pass).translate)
    assert all(len(decisions) == 1 for decisions in groups.values())
    assert len(groups) > 1


def contiguous(*shapes: tuple[int, ...], alignment: int = 16) -> FusionInfo:
    return FusionInfo(tuple(TensorMeta.contiguous(s, alignment) for s in shapes), DeviceInfo())


def persistent_key(fusion: FusionOp, info: FusionInfo) -> tuple[Any, Any]:
    with cached_analyses(AnalysisCache()):
        return PERSISTENT.heuristics_key(fusion, info), PERSISTENT.heuristics(fusion, info)


@pytest.mark.parametrize(
    ("why", "a", "b"),
    [
        # rows per block: 16 rows of 8 threads while 2 waves stay full, then 8
        ("rows per block", ((4209, 128), (128,)), ((4208, 128), (128,))),
        ("vector width", ((1024, 4096), (4096,)), ((1024, 4098), (4098,))),
        ("row sizing", ((1024, 4096), (4096,)), ((1024, 8192), (8192,))),
        ("index width", ((2**18, 1024), (1024,)), ((2**20, 1024), (1024,))),
    ],
)
def test_shapes_whose_heuristics_differ_get_different_keys(
    why: str, a: tuple[tuple[int, ...], ...], b: tuple[tuple[int, ...], ...]
) -> None:
    fusion = rms_norm().fusion
    key_a, params_a = persistent_key(fusion, contiguous(*a))
    key_b, params_b = persistent_key(fusion, contiguous(*b))
    assert params_a != params_b, why
    assert key_a != key_b, why


def test_alignment_changes_the_key() -> None:
    fusion = rms_norm().fusion
    key_a, params_a = persistent_key(fusion, contiguous((1024, 4096), (4096,)))
    key_b, params_b = persistent_key(fusion, contiguous((1024, 4096), (4096,), alignment=8))
    assert params_a != params_b
    assert key_a != key_b


@pytest.mark.parametrize("make", [layer_norm, rms_norm, softmax])
def test_new_rows_and_hidden_sizes_share_the_key(make: Callable[[], FusionDefinition]) -> None:
    """The point of the keys: row counts of any parity, and hidden sizes whose rows take the
    same threads and chunks, are one class."""
    fusion = make().fusion
    cache = AnalysisCache()
    keys = set()
    for rows, hidden in [*((r, 4096) for r in range(1025, 1045)), (1100, 4000), (1101, 3968)]:
        inputs = [(rows, hidden)] + [(hidden,)] * (len(fusion.inputs) - 1)
        with cached_analyses(cache):
            keys.add(PERSISTENT.heuristics_key(fusion, contiguous(*inputs)))
    assert len(keys) == 1


def test_new_rows_share_every_schedulers_key_and_the_welford_decision() -> None:
    """Every scheduler's key of a layer norm, and so its Welford `decision_key`, is the same for
    new row counts: a scheduler that refuses the fusion for its structure (the inner-outer one:
    no partial sums) must refuse it by reason, not per shape, or every new shape decides again."""
    fusion = layer_norm().fusion
    two_pass = translated(fusion)
    cache = AnalysisCache()
    keys: dict[str, set[Any]] = {s.name: set() for s in SCHEDULERS}
    decisions = set()
    for rows in range(1025, 1041):
        info = contiguous((rows, 4096), *[(4096,)] * (len(fusion.inputs) - 1))
        with cached_analyses(cache):
            for s in SCHEDULERS:
                keys[s.name].add(s.heuristics_key(fusion, info))
            decisions.add(decision_key(fusion, info, "auto", two_pass))
    assert {name: len(k) for name, k in keys.items()} == {name: 1 for name in keys}
    assert len(decisions) == 1


def numpy_inputs(fd: FusionDefinition, rows: int, hidden: int) -> list[np.ndarray]:
    n = len(fd.fusion.inputs)
    return [np.ones((rows, hidden), np.float32)] + [np.ones(hidden, np.float32)] * (n - 1)


SHAPES = ((1024, 4096), (1025, 4096), (7, 4096), (1024, 4000), (64, 4098), (4209, 128), (4208, 128))


def sources(fd: FusionDefinition) -> list[tuple[list[str], list[Any]]]:
    result = []
    for rows, hidden in SHAPES:
        compiled = fd.compile(numpy_inputs(fd, rows, hidden), arch="sm_90")
        result.append(
            ([k.source for k in compiled.kernels], [k.heuristics for k in compiled.kernels])
        )
    return result


@pytest.mark.parametrize("make", [layer_norm, rms_norm, softmax])
def test_keys_change_no_kernel(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], FusionDefinition]
) -> None:
    """The same shapes give the same heuristics and CUDA, byte for byte, without any cache
    (every analysis, layout and decision computed for each shape alone)."""
    keyed = sources(make())
    monkeypatch.setattr(builder, "cached_analyses", lambda cache: contextlib.nullcontext(cache))
    assert sources(make()) == keyed


def test_a_new_row_count_or_hidden_size_computes_no_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    fd = layer_norm()
    fd.compile(numpy_inputs(fd, 1024, 4096), arch="sm_90")
    planned: list[Any] = []
    original = rl._plan_layout

    def counting(*args: Any) -> Any:
        planned.append(args)
        return original(*args)

    monkeypatch.setattr(rl, "_plan_layout", counting)
    for rows, hidden in [(1025, 4096), (1026, 4096), (333, 4096), (1100, 4000), (9, 3968)]:
        fd.compile(numpy_inputs(fd, rows, hidden), arch="sm_90")
    assert planned == []
    assert fd.cache_info()["kernels"] == 1


def segmented() -> FusionDefinition:
    with FusionDefinition("two") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.ops.segment_set(fd.ops.exp(x))
        fd.add_output(fd.ops.sum(y, dims=[1]))
    return fd


def test_a_program_segments_each_new_shape_once_without_cloning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new shape of a program computes its segments' metadata once (it was twice: to check
    the heuristics, then for the launches) and clones and verifies no segment."""
    fd = segmented()
    fd.compile([np.ones((64, 256), np.float32)], arch="sm_90")
    cloned: list[Any] = []
    calls: list[Any] = []
    as_fusion, segment_calls = segment.segment_as_fusion, segment._segment_calls
    monkeypatch.setattr(segment, "segment_as_fusion", lambda *a: cloned.append(a) or as_fusion(*a))
    monkeypatch.setattr(segment, "_segment_calls", lambda *a: calls.append(a) or segment_calls(*a))
    for rows in (65, 66, 100):
        compiled = fd.compile([np.ones((rows, 256), np.float32)], arch="sm_90")
        assert len(compiled.kernels) == 2
    assert cloned == []
    assert len(calls) == 3
    assert fd.cache_info()["programs"] == 1


def test_scheduling_a_kernel_analyses_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`accepts` analyses the fusion; `heuristics`, `emit` and `launch_config` reuse that
    analysis (they each derived it again), also outside the compiler (`schedule_fusion`)."""
    from fuser.transforms.schedule import schedule_fusion
    from fuser.transforms.schedulers import persistent

    analysed: list[Any] = []
    original = persistent._analyze
    monkeypatch.setattr(persistent, "_analyze", lambda *a: analysed.append(a) or original(*a))
    fusion = layer_norm().fusion
    scheduled = schedule_fusion(fusion, contiguous((1024, 4096), (4096,)))
    assert scheduled.scheduler.name == "persistent"
    assert len(analysed) == 1
