"""Tests of the Welford translation (`fuser.transforms.translate_welford`): the two-pass form
computes what `welford` / `var_mean` compute (the numpy reference, float64, on fresh random data
with a large mean and odd sizes), reuses an existing broadcast of the mean, is accepted by the
persistent scheduler and compiles with NVRTC; `decide` translates exactly where the persistent
scheduler takes the two-pass form, and the segmenter, the compiler and the pass options follow
it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from ir_helpers import context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from fuser import DataType, DefinitionError, FusionDefinition, dump
from fuser.codegen.cuda import emit_cuda
from fuser.compiler import FusionCompiler
from fuser.dialects import fusion as fu
from fuser.runtime.compiled_kernel import nvrtc_compile
from fuser.runtime.reference import evaluate
from fuser.transforms import get_all_passes
from fuser.transforms import translate_welford as tw
from fuser.transforms.schedule import fusion_info, schedule_fusion
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo
from fuser.transforms.segment import segment_calls, segment_fusion
from fuser.transforms.segment_rules import MERGE_RULES
from fuser.transforms.translate_welford import (
    TranslateWelfordOptionError,
    decide,
    translated,
    welford_ops,
)

# --------------------------------------------------------------------------------------------
# Fusions


def layer_norm(dt: DataType = DataType.Float, correction: int = 0) -> FusionDefinition:
    """Layer norm over the last dim as users write it: the mean broadcast once, subtracted."""
    with FusionDefinition("layer_norm") as fd:
        x = fd.define_tensor([-1, -1], dt)
        w = fd.define_tensor([-1], dt)
        b = fd.define_tensor([-1], dt)
        xf = x if dt in (DataType.Float, DataType.Double) else fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(xf, [1], correction=correction)
        shape = x.shape()
        centered = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape, [0]))
        inv = fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(var, 1e-5)), shape, [0])
        y = fd.ops.mul(centered, inv)
        y = fd.ops.add(
            fd.ops.mul(y, fd.ops.broadcast_in_dim(w, shape, [1])),
            fd.ops.broadcast_in_dim(b, shape, [1]),
        )
        fd.add_output(fd.ops.cast(y, dt))
        fd.add_output(mean)
        fd.add_output(var)
    return fd


def statistics(
    kind: str, shape: Sequence[int], dims: list[int], correction: int = 1, keepdim: bool = False
) -> FusionDefinition:
    """`welford` (every result) or `var_mean` of an f64 input of `shape` (-1: dynamic)."""
    with FusionDefinition(kind) as fd:
        x = fd.define_tensor(list(shape), DataType.Double)
        if kind == "welford":
            for r in fd.ops.welford(x, dims):
                fd.add_output(r)
        else:
            for r in fd.ops.var_mean(x, dims, correction=correction, keepdim=keepdim):
                fd.add_output(r)
    return fd


def info_for(fusion: fu.FusionOp, shapes: Sequence[tuple[int, ...]]) -> FusionInfo:
    return fusion_info(fusion, list(shapes), DeviceInfo())


def ops_of(fusion: fu.FusionOp, kind: type[Operation]) -> list[Operation]:
    return [op for op in fusion.body.walk() if isinstance(op, kind)]


def data(rng: np.random.Generator, shape: Sequence[int], mean: float, dtype: type) -> np.ndarray:
    return rng.normal(mean, 1.0, tuple(shape)).astype(dtype)


# --------------------------------------------------------------------------------------------
# The rewrite computes the same values


@pytest.mark.parametrize("mean", [0.25, 1e4])
@pytest.mark.parametrize(
    ("kind", "shape", "dims", "correction", "keepdim", "sizes"),
    [
        ("var_mean", [-1, -1], [1], 1, False, (37, 101)),
        ("var_mean", [-1, -1], [1], 0, True, (5, 3)),
        ("var_mean", [-1, -1, -1], [0, 2], 2, False, (3, 7, 5)),
        ("var_mean", [-1, -1], [0], 1, True, (129, 17)),
        ("var_mean", [1, 5], [1], 7, False, (1, 5)),  # N - correction < 0: divides by 0
        ("welford", [-1, -1], [1], 0, False, (11, 257)),
        ("welford", [8, -1, 6], [0, 2], 0, False, (8, 13, 6)),
        ("welford", [4, 9], [0, 1], 0, False, (4, 9)),
    ],
)
def test_two_pass_form_equals_welford(
    rng: np.random.Generator,
    mean: float,
    kind: str,
    shape: list[int],
    dims: list[int],
    correction: int,
    keepdim: bool,
    sizes: tuple[int, ...],
) -> None:
    fd = statistics(kind, shape, dims, correction, keepdim)
    two_pass = translated(fd.fusion)
    assert not welford_ops(two_pass.body) and welford_ops(fd.fusion.body)
    assert len(ops_of(two_pass, fu.SumOp)) in (2, 3)  # x, the deviations (and the count)
    x = data(rng, sizes, mean, np.float64)
    expected = evaluate(fd.fusion, [x])
    got = evaluate(two_pass, [x])
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=0)
    # and both against numpy's own statistics
    axes = tuple(dims)
    np.testing.assert_allclose(got[-1 if kind == "var_mean" else 0].squeeze(), x.mean(axes))
    if kind == "welford":
        n = int(np.prod([sizes[a] for a in dims]))
        assert (got[2] == n).all() and got[2].dtype == np.int64
        np.testing.assert_allclose(got[1], x.var(axes) * n, rtol=1e-9)


@pytest.mark.parametrize(("dt", "mean"), [(DataType.Float, 1e4), (DataType.Double, 0.5)])
def test_layer_norm_two_pass_equals_welford(
    rng: np.random.Generator, dt: DataType, mean: float
) -> None:
    fd = layer_norm(dt, correction=1)
    two_pass = translated(fd.fusion)
    np_dt = np.float32 if dt == DataType.Float else np.float64
    for rows, cols in ((13, 1031), (1, 7)):
        inputs = [
            data(rng, (rows, cols), mean, np_dt),
            data(rng, (cols,), 1.0, np_dt),
            data(rng, (cols,), 0.0, np_dt),
        ]
        expected = evaluate(fd.fusion, inputs, compute_dtype=np.float64)
        got = evaluate(two_pass, inputs, compute_dtype=np.float64)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_existing_mean_broadcast_is_reused() -> None:
    fd = layer_norm()
    (vm,) = welford_ops(fd.fusion.body)
    assert isinstance(vm, fu.VarMeanOp)
    (mean_b,) = [u.operation for u in vm.mean.uses if isinstance(u.operation, fu.BroadcastInDimOp)]
    (centered,) = [u.operation for u in mean_b.result.uses]
    before = len(ops_of(fd.fusion, fu.BroadcastInDimOp))
    tw.translate_region(fd.fusion.body)
    fd.fusion.verify()
    # no new broadcast of the mean (only the count's broadcast of 1 is new)
    assert len(ops_of(fd.fusion, fu.BroadcastInDimOp)) == before + 1
    assert mean_b.parent is not None and isinstance(mean_b.input.owner, fu.DivOp)
    # the deviations subtract the same broadcast; the user's centering stays where it was
    subs = [op for op in ops_of(fd.fusion, fu.SubOp) if op.rhs is mean_b.result]
    assert len(subs) == 2 and centered in subs
    body = list(fd.fusion.body.block.ops)
    (dev,) = [op for op in subs if op is not centered]
    assert body.index(mean_b) < body.index(dev) < body.index(centered)
    (square,) = {u.operation for u in dev.results[0].uses}
    assert isinstance(square, fu.MulOp) and square.lhs is square.rhs is dev.results[0]


def test_static_extents_give_a_scalar_count() -> None:
    fd = statistics("welford", [8, -1, 6], [0, 2])
    two_pass = translated(fd.fusion)
    constants = [
        (op.value.value.data, op.result.type)
        for op in ops_of(two_pass, fu.ConstantOp)
        if isinstance(op, fu.ConstantOp)
    ]
    # N as the divisor (f64) and as welford's count (i64), no reduction of ones
    assert sorted(constants, key=str) == [(48, fu.I64), (48.0, fu.F64)]
    assert all(fu.element_type(op.operands[0].type) == fu.F64 for op in ops_of(two_pass, fu.SumOp))


# --------------------------------------------------------------------------------------------
# The schedulers take it, NVRTC compiles it


def test_two_pass_forms_are_persistent_and_compile() -> None:
    cases = [
        (layer_norm(dt), [(64, 1000), (1000,), (1000,)])
        for dt in (DataType.Float, DataType.BFloat16, DataType.Double)
    ]
    cases.append((statistics("var_mean", [-1, -1], [1]), [(100, 333)]))
    cases.append((statistics("welford", [-1, -1], [1]), [(100, 4097)]))
    funcs, names = [], []
    for k, (fd, shapes) in enumerate(cases):
        two_pass = translated(fd.fusion)
        info = info_for(two_pass, shapes)
        kernel = schedule_fusion(two_pass, info, f"two_pass_{k}")
        assert kernel.scheduler.name == "persistent"
        funcs.append(kernel.func)
        names.append(f"two_pass_{k}")
    source = emit_cuda(ModuleOp(funcs))
    cubin, log = nvrtc_compile(source, names[0], "sm_90")
    assert cubin and "warning" not in log.lower(), log


# --------------------------------------------------------------------------------------------
# When to translate


def test_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "persistent", True)
    fd = layer_norm()
    fusion = fd.fusion
    yes = decide(fusion, info_for(fusion, [(64, 1000), (1000,), (1000,)]))
    assert yes.translate and "Welford form goes to persistent" in str(yes)
    long_row = decide(fusion, info_for(fusion, [(4, 100000), (100000,), (100000,)]))
    assert not long_row.translate
    assert (
        "does not fit in registers" in long_row.reason
        and "once more in two passes" in long_row.reason
    )
    outer = statistics("var_mean", [-1, -1], [0])
    columns = decide(outer.fusion, info_for(outer.fusion, [(5000, 64)]))
    assert not columns.translate and "not the innermost" in columns.reason
    assert "grid reduction" in columns.reason
    assert decide(fusion, info_for(fusion, [(4, 100000), (100000,), (100000,)]), "always").translate
    never = decide(fusion, info_for(fusion, [(64, 1000), (1000,), (1000,)]), "never")
    assert not never.translate and str(never) == "kept: welford=never"
    with pytest.raises(TranslateWelfordOptionError, match="unknown Welford translation mode"):
        decide(fusion, info_for(fusion, [(64, 1000), (1000,), (1000,)]), "sometimes")


def test_auto_follows_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "reduction", False)
    fd = statistics("var_mean", [-1, -1], [1])
    info = info_for(fd.fusion, [(256, 1024)])
    kept = decide(fd.fusion, info)
    assert not kept.translate and "goes to reduction" in kept.reason
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "reduction", True)
    assert decide(fd.fusion, info).translate
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "persistent", False)
    ln = layer_norm()
    assert not decide(ln.fusion, info_for(ln.fusion, [(64, 1000), (1000,), (1000,)])).translate


# --------------------------------------------------------------------------------------------
# The segmenter and the compiler


def _segment(fd: FusionDefinition, shapes: Sequence[tuple[int, ...]], **kwargs: object):
    fusion = fd.fusion.clone()
    result = segment_fusion(fusion, info_for(fusion, shapes), **kwargs)  # type: ignore[arg-type]
    return fusion, result


def test_segmenter_translates_the_whole_fusion(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "persistent", True)
    fd = layer_norm(correction=1)
    shapes = [(64, 1000), (1000,), (1000,)]
    fusion, result = _segment(fd, shapes)
    (segment,) = result.segments
    assert segment.scheduler.data == "persistent" and not welford_ops(segment.body)
    attr = segment.attributes["fuser.welford"]
    assert isinstance(attr, StringAttr) and attr.data.startswith("translated: ")
    assert any(line.startswith("welford g0{var_mean") for line in result.log)
    (call,) = segment_calls(fusion, info_for(fusion, shapes))
    assert call.segment.scheduler.data == "persistent"
    inputs = [data(rng, s, 1e4 if len(s) == 2 else 1.0, np.float32) for s in shapes]
    for g, e in zip(evaluate(fusion, inputs), evaluate(fd.fusion, inputs), strict=True):
        np.testing.assert_array_equal(g, e)


def test_segmenter_keeps_welford_for_long_rows() -> None:
    fd = layer_norm()
    _, result = _segment(fd, [(4, 100000), (100000,), (100000,)])
    assert result.schedulers == ("looped",)  # one kernel, a pass for the Welford, one for y
    kept = [line for line in result.log if line.startswith("welford ")]
    assert len(kept) == 1 and "kept: " in kept[0] and "does not fit in registers" in kept[0]
    assert welford_ops(result.segments[0].body)


def test_segmenter_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "persistent", True)
    fd = layer_norm()
    shapes = [(64, 1000), (1000,), (1000,)]
    _, never = _segment(fd, shapes, welford="never")
    assert welford_ops(never.segments[0].body) and "welford=never: not translated" in never.log
    assert "fuser.welford" not in never.segments[0].attributes
    # always translates before segmenting, also where the rows do not fit: more kernels
    _, always = _segment(fd, [(4, 100000), (100000,), (100000,)], welford="always")
    assert not any(welford_ops(s.body) for s in always.segments)
    assert "welford=always: 1 op(s) translated before segmenting" in always.log
    _, custom = _segment(fd, shapes, should_merge=MERGE_RULES["none"])
    assert "welford: not translated: a should_merge predicate is set" in custom.log
    assert any(welford_ops(s.body) for s in custom.segments)


@pytest.fixture
def commented_kernels() -> Iterator[None]:
    """The runtime compiler's kernels with their `kernel.comment`s, which these tests read to
    tell a Welford reduction from a translated one: it builds them only for a kernel dump."""
    dump.configure("cuda")
    try:
        yield
    finally:
        dump.configure("")


@pytest.mark.usefixtures("commented_kernels")
def test_compiler_single_kernel_and_program_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "persistent", True)
    fd = layer_norm()
    inputs = [np.ones((64, 1000), np.float32), np.ones(1000, np.float32), np.ones(1000, np.float32)]
    sources = {}
    for mode in ("auto", "never"):
        compiled = FusionCompiler(fd.fusion, welford=mode).compile(inputs, arch="sm_90")
        (kernel,) = compiled.kernels
        assert kernel.scheduler == "persistent"
        sources[mode] = kernel.source
    assert "reduce fusion.var_mean" in sources["never"]
    assert (
        "reduce fusion.var_mean" not in sources["auto"] and "reduce fusion.sum" in sources["auto"]
    )
    # a segment_set makes a program: the persistent segment before it is translated
    with FusionDefinition("ln_then_relu") as fd2:
        x = fd2.define_tensor([-1, -1])
        var, mean = fd2.ops.var_mean(x, [1], correction=0)
        c = fd2.ops.sub(x, fd2.ops.broadcast_in_dim(mean, x.shape(), [0]))
        y = fd2.ops.segment_set(fd2.ops.mul(c, fd2.ops.broadcast_in_dim(var, x.shape(), [0])))
        fd2.add_output(fd2.ops.relu(y))
    compiler = FusionCompiler(fd2.fusion)
    compiled = compiler.compile([np.ones((33, 515), np.float32)], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["persistent", "pointwise"]
    assert "reduce fusion.var_mean" not in compiled.kernels[0].source
    with pytest.raises(DefinitionError, match="argument 'welford' must be one of"):
        FusionCompiler(fd.fusion, welford="yes")


@pytest.mark.usefixtures("commented_kernels")
def test_fusion_definition_mode() -> None:
    """`FusionDefinition(name, welford=...)` reaches the compiler; a bad mode fails at once."""
    inputs = [np.ones((64, 1000), np.float32)]
    sources = {}
    for mode in ("auto", "never"):
        with FusionDefinition("stats", welford=mode) as fd:
            x = fd.define_tensor([-1, -1])
            var, mean = fd.ops.var_mean(x, [1])
            fd.add_output(var)
            fd.add_output(mean)
        (kernel,) = fd.compile(inputs, arch="sm_90").kernels
        sources[mode] = (kernel.scheduler, "reduce fusion.var_mean" in kernel.source)
    # statistics alone: two passes in registers by default (AUTO_TRANSLATE), Welford on request
    assert sources["never"] == ("reduction", True)
    expected = ("persistent", False) if tw.AUTO_TRANSLATE["reduction"] else ("reduction", True)
    assert sources["auto"] == expected
    with pytest.raises(DefinitionError, match="argument 'welford' must be one of"):
        FusionDefinition("bad", welford="sometimes")


# --------------------------------------------------------------------------------------------
# The pass


PASS_INPUT = """
fusion.fusion @vm(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %var, %mean = fusion.var_mean %x [1] correction(1)
      : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  fusion.output %var, %mean : tensor<?xf32>, tensor<?xf32>
}
"""


def _run_pass(spec: str) -> fu.FusionOp:
    module = Parser(context(), PASS_INPUT).parse_module()
    passes = {name: factory for name, factory in get_all_passes().items()}
    PassPipeline.parse_spec(passes, spec).apply(context(), module)
    module.verify()
    return next(op for op in module.walk() if isinstance(op, fu.FusionOp))


def test_pass_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tw.AUTO_TRANSLATE, "reduction", False)
    assert not welford_ops(_run_pass("translate-welford{mode=always}").body)
    assert welford_ops(_run_pass("translate-welford{mode=never}").body)
    # auto: a plain var_mean stays with the reduction scheduler (AUTO_TRANSLATE)
    assert welford_ops(_run_pass('translate-welford{shapes="64x1000"}').body)
    with pytest.raises(TranslateWelfordOptionError, match="has dynamic dims"):
        _run_pass("translate-welford")
    with pytest.raises(TranslateWelfordOptionError, match="unknown Welford translation mode"):
        _run_pass("translate-welford{mode=maybe}")
    with pytest.raises(TranslateWelfordOptionError, match="unknown Welford translation mode"):
        _run_pass('fuser-segment{shapes="64x1000" welford=on}')


def test_a_broadcast_of_the_mean_to_another_tensors_extents_is_not_reused(
    rng: np.random.Generator,
) -> None:
    """The fuzzer's find: the mean broadcast to `y`'s extents has `x`'s type but not its shape,
    so `x - mean` must broadcast the new mean itself (it took that broadcast and failed)."""
    with FusionDefinition(welford="always") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.define_tensor([-1, -1], DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[0, 1], keepdim=True)
        fd.add_output(var)
        fd.add_output(fd.ops.broadcast_in_dim(mean, shape=y.shape(), broadcast_dims=[0, 1]))
    xs = rng.standard_normal((3, 1)).astype(np.float32)
    ys = rng.standard_normal((1, 1)).astype(np.float32)
    kernels = fd.compile([xs, ys], arch="sm_90")  # segmented with the translation, compiled
    assert kernels
    var_out, mean_out = fd.reference([xs, ys], compute_dtype=np.float64)
    np.testing.assert_allclose(var_out, [[xs.astype(np.float64).var(ddof=1)]], rtol=1e-6)
    np.testing.assert_allclose(mean_out, [[xs.astype(np.float64).mean()]], rtol=1e-6)
