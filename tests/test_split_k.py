"""Tests of `split-k` (`fuser.transforms.split_k`): the rewritten fusion computes what the
original computes (the numpy reference, f32 and float64 compute, on fresh random inputs of odd
shapes: K not divisible by the factor, empty last chunks, batch dims, an epilogue), the rewrite's
IR, the factor rule (fills one wave, keeps chunks of `MIN_K_STEPS` K-steps, prefers aligned
chunks, leaves large outputs alone), the plan, and, once the matmul scheduler exists, the
segmenter cutting a split matmul into exactly two segments and the compiler keeping programs of
different factors apart.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from fuser import DataType, FusionDefinition
from fuser.compiler import FusionCompiler
from fuser.dialects import fusion as fu
from fuser.errors import DefinitionError
from fuser.runtime.reference import evaluate
from fuser.transforms import get_all_passes
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.matmul_tiles import matmul_tile
from fuser.transforms.schedulers.shapes import ShapeMismatch
from fuser.transforms.split_k import (
    MIN_K_STEPS,
    SplitKPass,
    apply_split_k,
    plain_matmuls,
    plan_split_k,
    split_factor,
)

NUMPY = {
    DataType.BFloat16: np.dtype(ml_dtypes.bfloat16),
    DataType.Half: np.dtype(np.float16),
    DataType.Float: np.dtype(np.float32),
    DataType.Double: np.dtype(np.float64),
}
ELEMENT = {
    DataType.BFloat16: fu.BF16,
    DataType.Half: fu.F16,
    DataType.Float: fu.F32,
    DataType.Double: fu.F64,
}
HAS_MATMUL_SCHEDULER = importlib.util.find_spec("fuser.transforms.schedulers.matmul") is not None
NO_MATMUL_SCHEDULER = (
    "fuser.transforms.schedulers.matmul (the matmul scheduler) does not exist yet: no scheduler "
    "accepts the partial matmul's segment"
)


def linear(dtype: DataType, batch_rank: int = 0, epilogue: bool = False) -> FusionDefinition:
    """`a @ b`, optionally `relu(a @ b + bias)`, with every dim dynamic (the GPU tests share it)."""
    rank = batch_rank + 2
    with FusionDefinition(f"linear_{dtype.name.lower()}_{batch_rank}_{int(epilogue)}") as fd:
        a = fd.define_tensor(shape=[-1] * rank, dtype=dtype)
        b = fd.define_tensor(shape=[-1] * rank, dtype=dtype)
        mm = fd.ops.matmul(a, b)
        if epilogue:
            bias = fd.define_tensor(shape=[-1], dtype=dtype)
            bb = fd.ops.broadcast_in_dim(bias, shape=mm.shape(), broadcast_dims=[rank - 1])
            mm = fd.ops.relu(fd.ops.add(mm, bb))
        fd.add_output(mm)
    return fd


def split(fd: FusionDefinition, factor: int) -> fu.FusionOp:
    """A copy of the definition's fusion with every plain matmul split `factor` ways."""
    rewritten = fd.fusion.clone()
    assert apply_split_k(rewritten, (factor,) * len(plain_matmuls(rewritten))) == (factor > 1)
    rewritten.verify()
    return rewritten


def eighths(rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """Random nonzero multiples of 1/8 in [-4, 4]: exact in every float type, and so are their
    products and sums of up to 2^14 of them in f32, so any order of summation gives the same
    result."""
    magnitude = rng.integers(1, 33, size=shape)
    return (np.where(rng.random(shape) < 0.5, -magnitude, magnitude) / 8).astype(dtype)


def problem_inputs(
    rng: np.random.Generator,
    dtype: DataType,
    batch: tuple[int, ...],
    m: int,
    k: int,
    n: int,
    epilogue: bool = False,
) -> list[np.ndarray]:
    np_dtype = NUMPY[dtype]
    inputs = [eighths(rng, (*batch, m, k), np_dtype), eighths(rng, (*batch, k, n), np_dtype)]
    if epilogue:
        inputs.append(eighths(rng, (n,), np_dtype))
    return inputs


# --------------------------------------------------------------------------------------------
# The rewrite computes what the matmul computes
# --------------------------------------------------------------------------------------------

ODD_CASES = [
    # (batch, M, K, N, splits)
    ((), 7, 1000, 5, 3),  # chunks of 334: 334, 334, 332
    ((), 3, 10, 4, 4),  # chunks of 3: 3, 3, 3, 1
    ((2,), 5, 9, 3, 4),  # chunks of 3: the last one empty
    ((2, 3), 4, 6, 2, 5),  # chunks of 2: the last two empty, two batch dims
    ((), 1, 1, 1, 3),  # one element of K, two empty chunks
    ((), 17, 129, 33, 2),  # chunks of 65 and 64
    ((3,), 6, 0, 4, 2),  # K = 0: every chunk empty, the product is zeros
]


@pytest.mark.parametrize("compute", [None, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", ODD_CASES, ids=lambda c: "x".join(map(str, c[:4])) + f"-s{c[4]}")
@pytest.mark.parametrize("dtype", list(NUMPY), ids=lambda d: d.name)
def test_split_equals_matmul(
    rng: np.random.Generator,
    dtype: DataType,
    case: tuple[tuple[int, ...], int, int, int, int],
    compute: type | None,
) -> None:
    batch, m, k, n, s = case
    fd = linear(dtype, len(batch))
    inputs = problem_inputs(rng, dtype, batch, m, k, n)
    (expected,) = evaluate(fd.fusion, inputs, compute_dtype=compute)
    (got,) = evaluate(split(fd, s), inputs, compute_dtype=compute)
    assert got.dtype == expected.dtype and got.shape == (*batch, m, n)
    np.testing.assert_array_equal(got, expected)
    assert k == 0 or np.any(got != 0)


@pytest.mark.parametrize("compute", [None, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double], ids=lambda d: d.name)
def test_split_matches_matmul_on_normal_values(
    rng: np.random.Generator, dtype: DataType, compute: type | None
) -> None:
    """Normal values: only the order of the additions differs, within its rounding bound."""
    batch, m, k, n, s = (2,), 9, 777, 11, 6
    fd = linear(dtype, 1)
    np_dtype = NUMPY[dtype]
    a = rng.standard_normal((*batch, m, k)).astype(np_dtype)
    b = rng.standard_normal((*batch, k, n)).astype(np_dtype)
    (expected,) = evaluate(fd.fusion, [a, b], compute_dtype=compute)
    (got,) = evaluate(split(fd, s), [a, b], compute_dtype=compute)
    wide = compute is not None or dtype == DataType.Double
    eps = np.finfo(np.float64 if wide else np.float32).eps
    bound = 2 * k * eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    assert np.all(np.abs(got.astype(np.float64) - expected) <= bound)


@pytest.mark.parametrize("compute", [None, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float], ids=lambda d: d.name)
def test_epilogue_follows_the_sum(
    rng: np.random.Generator, dtype: DataType, compute: type | None
) -> None:
    """bias + relu after the matmul: evaluated after the sum, with the same result."""
    fd = linear(dtype, epilogue=True)
    rewritten = split(fd, 5)
    ops = list(rewritten.body.block.ops)
    total = next(op for op in ops if isinstance(op, fu.SumOp))
    add = next(op for op in ops if isinstance(op, fu.AddOp))
    relu = next(op for op in ops if isinstance(op, fu.ReluOp))
    assert ops.index(total) < ops.index(add) < ops.index(relu)
    # the add reads the sum (through the cast back to bf16 and the frontend's cast to f32)
    value = add.lhs
    while not isinstance(value.owner, fu.SumOp):
        assert isinstance(value.owner, fu.CastOp)
        value = value.owner.input
    assert value.owner is total
    inputs = problem_inputs(rng, dtype, (), 13, 301, 7, epilogue=True)
    (expected,) = evaluate(fd.fusion, inputs, compute_dtype=compute)
    (got,) = evaluate(rewritten, inputs, compute_dtype=compute)
    np.testing.assert_array_equal(got, expected)
    assert np.any(got > 0) and np.any(got == 0)


# --------------------------------------------------------------------------------------------
# The IR of the rewrite
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(NUMPY), ids=lambda d: d.name)
def test_rewritten_ir(dtype: DataType) -> None:
    fd = linear(dtype, 1)
    original = fd.fusion.body.block.ops.first
    assert isinstance(original, fu.MatmulOp)
    name = original.result.name_hint
    rewritten = split(fd, 6)
    ops = list(rewritten.body.block.ops)
    half = dtype in (DataType.BFloat16, DataType.Half)
    accumulator = fu.F64 if dtype == DataType.Double else fu.F32
    expected_ops = [fu.MatmulOp, fu.SegmentSetOp, fu.SumOp, *([fu.CastOp] * half), fu.OutputOp]
    assert [type(op) for op in ops] == expected_ops
    partial, staged, total = ops[:3]
    assert isinstance(partial, fu.MatmulOp) and partial.split_count == 6
    assert isinstance(partial.result.type, TensorType)
    assert partial.result.type.element_type == accumulator
    assert isinstance(original.result.type, TensorType)
    assert partial.result.type.get_shape() == (6, *original.result.type.get_shape())
    assert staged.operands[0] is partial.result
    assert isinstance(total, fu.SumOp) and total.reduction_axes == (0,)
    assert total.keepdim is None and total.input is staged.results[0]
    final = ops[-2].results[0]
    assert final.type == original.result.type
    assert final.name_hint == name
    assert ops[-1].operands[0] is final
    names = [partial.result.name_hint, staged.results[0].name_hint]
    assert names == [f"{name}_partial", f"{name}_partials"]
    assert total.result.name_hint == (f"{name}_sum" if half else name)


def test_split_matmuls_are_left_alone() -> None:
    fd = linear(DataType.Half)
    rewritten = split(fd, 4)
    assert plain_matmuls(rewritten) == []
    text = str(rewritten)
    assert apply_split_k(rewritten, ()) == 0
    assert str(rewritten) == text


def test_apply_split_k_checks_its_factors() -> None:
    fd = linear(DataType.Float)
    with pytest.raises(ValueError, match=r"2 factor\(s\) for the 1 plain matmul"):
        apply_split_k(fd.fusion.clone(), (2, 2))
    with pytest.raises(ValueError, match="must be >= 1"):
        apply_split_k(fd.fusion.clone(), (0,))


# --------------------------------------------------------------------------------------------
# The factor rule
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "k", "n"), [(256, 65536, 256), (128, 32768, 128)])
def test_factor_of_the_split_k_benchmark_shapes(m: int, k: int, n: int) -> None:
    """The issue's split-K shapes split within one wave, in chunks of whole K-steps."""
    tile = matmul_tile(m, n, k, fu.BF16)
    s = split_factor(m, n, k, fu.BF16, 132)
    assert s > 1 and s * tile.count(m, n) <= tile.per_sm * 132
    assert math.ceil(k / s) % tile.k == 0


def test_a_large_square_matmul_is_not_split() -> None:
    assert split_factor(4096, 4096, 4096, fu.BF16, 132) == 1
    assert split_factor(4096, 4096, 4096, fu.F32, 132) == 1


@pytest.mark.parametrize("sm_count", [132, 114, 80, 16])
@pytest.mark.parametrize("dtype", [fu.BF16, fu.F16, fu.F32, fu.F64], ids=str)
def test_factor_fills_one_wave(dtype: Attribute, sm_count: int) -> None:
    """With a long K the factor is the wave's (`per_sm * sm_count // tiles`) or an aligned one
    at most a third below it, never more than a wave, and 1 when no second chunk per tile fits."""
    k = 1 << 20
    for m in (1, 17, 64, 128, 200, 256, 300, 1000, 5000):
        for n in (1, 17, 128, 256, 640):
            for batch in (1, 3):
                tile = matmul_tile(m, n, k, dtype)
                tiles = tile.count(m, n, batch)
                s = split_factor(m, n, k, dtype, sm_count, batch)
                wave = tile.per_sm * sm_count // tiles
                if wave < 2:
                    assert s == 1, (m, n, batch)
                else:
                    assert math.ceil(2 * wave / 3) <= s <= wave, (m, n, batch, s, wave)
                    assert s * tiles <= tile.per_sm * sm_count


@pytest.mark.parametrize("dtype", [fu.BF16, fu.F32, fu.F64], ids=str)
def test_factor_keeps_chunks_of_a_few_k_steps(dtype: Attribute) -> None:
    """Short K caps the factor: every chunk spans at least MIN_K_STEPS K-steps of the tile,
    and a K that holds fewer than two such chunks is not split."""
    step = matmul_tile(128, 128, 1, dtype).k
    least = MIN_K_STEPS * step
    for k in [*range(1, 4 * least + 3), 1000, 4099, 12345]:
        s = split_factor(128, 128, k, dtype, 132)
        if k < 2 * least:
            assert s == 1, k
        else:
            assert s >= 2 and math.ceil(k / s) >= least, (k, s)
            assert s <= k // least
    assert split_factor(128, 128, 2 * least, dtype, 132) == 2


@pytest.mark.parametrize(
    ("dtype", "wave", "k", "expected"),
    [
        # 3 * 2^19 / 33 rounds up to 47663, odd; / 32 is 49152, a multiple of any K-step
        (fu.BF16, 33, 3 << 19, 32),
        (fu.F32, 33, 3 << 19, 32),
        (fu.F64, 33, 3 << 19, 32),
        # 2^20 / 7, / 6 and / 5 round up to 149797, 174763 and 209716: no multiple of 8
        # elements (16 bytes of bf16) or of a K-step, but 209716 is of 4 f32 and of 2 f64
        (fu.BF16, 7, 1 << 20, 7),
        (fu.F32, 7, 1 << 20, 5),
        (fu.F64, 7, 1 << 20, 5),
        # 2^20 / 3 is not aligned; 2 is in the window [2, 3]
        (fu.BF16, 3, 1 << 20, 2),
    ],
    ids=lambda v: str(v),
)
def test_factor_prefers_aligned_chunks(dtype: Attribute, wave: int, k: int, expected: int) -> None:
    """Among the wave's factor and those down to 2/3 of it, the largest whose chunk is a
    multiple of the tile's K-step, else of 16 bytes, else the wave's factor itself."""
    m = n = 64
    tile = matmul_tile(m, n, k, dtype)
    batch = tile.per_sm  # a batch of per_sm tiles: the GPU below holds `wave` partials of each
    sm_count = wave * tile.count(m, n, batch) // tile.per_sm
    assert split_factor(m, n, k, dtype, sm_count, batch) == expected


def test_factor_leaves_large_and_empty_outputs_alone() -> None:
    """No split once two chunks per output tile exceed a wave, or for an empty problem."""
    k = 1 << 20
    for batch in range(1, 280):
        tile = matmul_tile(64, 64, k, fu.BF16)
        tiles = tile.count(64, 64, batch)
        s = split_factor(64, 64, k, fu.BF16, 132, batch)
        assert (s == 1) == (2 * tiles > tile.per_sm * 132), (batch, tiles, s)
    assert split_factor(0, 128, k, fu.BF16, 132) == 1
    assert split_factor(128, 128, 0, fu.BF16, 132) == 1
    assert split_factor(128, 128, k, fu.BF16, 132, batch=0) == 1


# --------------------------------------------------------------------------------------------
# The plan and the pass
# --------------------------------------------------------------------------------------------


def two_matmuls() -> FusionDefinition:
    with FusionDefinition("two") as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        c = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.matmul(a, b))
        fd.add_output(fd.ops.matmul(c, c))
    return fd


def test_plan_decides_each_matmul() -> None:
    fd = two_matmuls()
    log: list[str] = []
    shapes = [(256, 65536), (65536, 256), (4096, 4096)]
    s = split_factor(256, 256, 65536, fu.BF16, 132)
    assert s > 1
    assert plan_split_k(fd.fusion, shapes, 132, log=log) == (s, 1)
    assert len(log) == 2
    assert "256x65536x256 bf16" in log[0] and f"splits({s})" in log[0]
    assert "4096x4096x4096 f32" in log[1] and "not split" in log[1]
    assert plan_split_k(fd.fusion, shapes, 132, splits=3) == (3, 3)
    assert plan_split_k(fd.fusion, None, 132, splits=1) == (1, 1)
    with pytest.raises(ShapeMismatch, match="cannot multiply"):
        plan_split_k(fd.fusion, [(256, 100), (99, 256), (8, 8)], 132)
    with pytest.raises(ValueError, match="needs the input shapes"):
        plan_split_k(fd.fusion, None, 132)


def test_pass_is_registered() -> None:
    assert get_all_passes()["split-k"]() is SplitKPass


def test_compiler_checks_its_split_k_argument() -> None:
    fd = linear(DataType.Float)
    for bad in (0, -2, 2.0, True, "4"):
        with pytest.raises(DefinitionError, match="argument 'split_k' must be None or an int"):
            FusionCompiler(fd.fusion, split_k=bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Segmentation and compilation (need the matmul scheduler)
# --------------------------------------------------------------------------------------------


def info_for(shapes: Sequence[tuple[int, ...]]) -> FusionInfo:
    return FusionInfo(tuple(TensorMeta.contiguous(s) for s in shapes), DeviceInfo())


@pytest.mark.skipif(not HAS_MATMUL_SCHEDULER, reason=NO_MATMUL_SCHEDULER)
@pytest.mark.parametrize("epilogue", [False, True], ids=["plain", "bias_relu"])
def test_segmenter_makes_two_segments(rng: np.random.Generator, epilogue: bool) -> None:
    """The partial matmul's segment and the reduction's segment, which takes the epilogue;
    the segmented fusion still computes the matmul."""
    from fuser.transforms.segment import segment_fusion

    fd = linear(DataType.BFloat16, epilogue=epilogue)
    m, k, n = 256, 65536, 256
    shapes = [(m, k), (k, n), *([(n,)] * epilogue)]
    info = info_for(shapes)
    factors = plan_split_k(fd.fusion, info.input_shapes, info.device.sm_count)
    assert factors[0] > 1
    segmented = fd.fusion.clone()
    apply_split_k(segmented, factors)
    result = segment_fusion(segmented, info)
    assert result.schedulers == ("matmul", "reduction")
    first, second = result.segments
    assert any(isinstance(op, fu.MatmulOp) and op.split_count == factors[0] for op in first.walk())
    assert not any(isinstance(op, fu.SumOp) for op in first.walk())
    assert any(isinstance(op, fu.SumOp) for op in second.walk())
    assert any(isinstance(op, fu.ReluOp) for op in second.walk()) == epilogue
    small = problem_inputs(rng, DataType.BFloat16, (), 5, 300, 3, epilogue)
    np.testing.assert_array_equal(evaluate(segmented, small)[0], evaluate(fd.fusion, small)[0])


@pytest.mark.skipif(not HAS_MATMUL_SCHEDULER, reason=NO_MATMUL_SCHEDULER)
def test_compiler_keeps_programs_of_different_factors_apart() -> None:
    """Programs are reused only for signatures with the same split factors; a shape whose
    output fills the GPU runs as one kernel."""
    fd = linear(DataType.BFloat16)
    compiler = FusionCompiler(fd.fusion)
    bf16 = NUMPY[DataType.BFloat16]

    def compile_for(m: int, k: int, n: int) -> list[str]:
        a, b = np.zeros((m, k), bf16), np.zeros((k, n), bf16)
        compiled = compiler.compile([a, b], arch="sm_90")
        return [kernel.scheduler for kernel in compiled.kernels]

    first = split_factor(256, 256, 65536, fu.BF16, 132)
    k = next(k for k in (1024, 2048, 4096, 8192) if split_factor(256, 256, k, fu.BF16, 132) > 1)
    second = split_factor(256, 256, k, fu.BF16, 132)
    assert first > 1 and second > 1 and first != second
    assert compile_for(256, 65536, 256) == ["matmul", "reduction"]
    assert compiler.cache_info()["programs"] == 1
    assert compile_for(256, k, 256) == ["matmul", "reduction"]  # another factor, another program
    assert compiler.cache_info()["programs"] == 2
    assert compile_for(4096, 4096, 4096) == ["matmul"]  # not split: one kernel
    assert compiler.cache_info()["programs"] == 2
    forced = FusionCompiler(fd.fusion, split_k=1)
    a, b = np.zeros((256, 65536), bf16), np.zeros((65536, 256), bf16)
    assert [k.scheduler for k in forced.compile([a, b], arch="sm_90").kernels] == ["matmul"]
