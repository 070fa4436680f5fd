"""Random numbers (`fusion.rand`, `fusion.randn`; `fd.ops.uniform`, `normal`, `rand_like`,
`randn_like`): the generator against Philox's published answers, the distributions, that an
element depends on (seed, offset, index) alone, and the pointwise kernel, simulated under
several schedules (vector widths, unrolls, index types) and maps (the iteration space's own,
a static 1 broadcast, a permute, a pad's shifted operand), against the reference element by
element. `tests/gpu/test_random_gpu.py` checks the GPU against the same reference."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_schedulers import parse_fusion, run_kernel

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError
from fuser.runtime import philox
from fuser.transforms.schedulers.pointwise import PointwiseScheduler


@pytest.mark.parametrize(
    ("seed", "offset", "subsequence", "expected"),
    [
        (0, 0, 0, (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        (2**64 - 1, 2**64 - 1, 2**64 - 1, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            0x299F31D0A4093822,
            0x85A308D3243F6A88,
            0x0370734413198A2E,
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox_gives_the_published_answers(
    seed: int, offset: int, subsequence: int, expected: tuple[int, ...]
) -> None:
    """Random123's known-answer vectors of Philox4x32-10 (key = seed, counter = (offset,
    subsequence), low words first)."""
    words = philox.philox(seed, offset, np.array([subsequence], np.uint64))[0]
    assert tuple(int(w) for w in words) == expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_distributions(dtype: type) -> None:
    n = 200_000
    u = philox.random((n,), np.dtype(dtype), seed=7, offset=3, normal=False)
    assert u.dtype == dtype and u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    assert counts.min() > 0.9 * n / 20 and counts.max() < 1.1 * n / 20
    z = philox.random((n,), np.dtype(dtype), seed=7, offset=3, normal=True)
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.005  # the normal's one-sigma mass


def test_an_element_depends_on_seed_offset_and_index_alone() -> None:
    f32 = np.dtype(np.float32)
    a = philox.random((6, 7), f32, seed=1, offset=0, normal=False)
    b = philox.random((42,), f32, seed=1, offset=0, normal=False)
    np.testing.assert_array_equal(a.reshape(-1), b)  # the row-major index, whatever the shape
    np.testing.assert_array_equal(philox.elements(np.array([41, 5]), f32, 1, 0, False), b[[41, 5]])
    assert not np.array_equal(b, philox.random((42,), f32, seed=2, offset=0, normal=False))
    assert not np.array_equal(b, philox.random((42,), f32, seed=1, offset=1, normal=False))


# --------------------------------------------------------------------------------------------
# The kernel, simulated


RANDOM_FUSIONS = {
    "own space": """fusion.fusion @f(%x: tensor<?x?xf32>, %s: i64, %o: i64) -> (tensor<?x?xf32>) {
      %n0 = fusion.dim %x[0] : tensor<?x?xf32>
      %n1 = fusion.dim %x[1] : tensor<?x?xf32>
      %r = fusion.rand %s, %o sizes(%n0, %n1) : tensor<?x?xf32>
      %y = fusion.add %x, %r : tensor<?x?xf32>
      fusion.output %y : tensor<?x?xf32>
    }""",
    "normal f64": """fusion.fusion @f(%x: tensor<?x?xf64>, %s: i64, %o: i64) -> (tensor<?x?xf64>) {
      %n0 = fusion.dim %x[0] : tensor<?x?xf64>
      %n1 = fusion.dim %x[1] : tensor<?x?xf64>
      %r = fusion.randn %s, %o sizes(%n0, %n1) : tensor<?x?xf64>
      %y = fusion.mul %x, %r : tensor<?x?xf64>
      fusion.output %y : tensor<?x?xf64>
    }""",
    "a static 1 broadcast": """fusion.fusion @f(%x: tensor<?x12xf32>, %s: i64, %o: i64)
        -> (tensor<?x12xf32>) {
      %n = fusion.dim %x[0] : tensor<?x12xf32>
      %r = fusion.rand %s, %o : tensor<1x12xf32>
      %b = fusion.broadcast_in_dim %r [0, 1] sizes(%n) : tensor<1x12xf32> -> tensor<?x12xf32>
      %y = fusion.add %x, %b : tensor<?x12xf32>
      fusion.output %y : tensor<?x12xf32>
    }""",
    "a permute": """fusion.fusion @f(%x: tensor<?x?xf32>, %s: i64, %o: i64) -> (tensor<?x?xf32>) {
      %n0 = fusion.dim %x[0] : tensor<?x?xf32>
      %n1 = fusion.dim %x[1] : tensor<?x?xf32>
      %r = fusion.randn %s, %o sizes(%n1, %n0) : tensor<?x?xf32>
      %p = fusion.permute %r [1, 0] : tensor<?x?xf32> -> tensor<?x?xf32>
      %y = fusion.sub %x, %p : tensor<?x?xf32>
      fusion.output %y : tensor<?x?xf32>
    }""",
    "a pad's operand": """fusion.fusion @f(%x: tensor<?x12xf32>, %s: i64, %o: i64)
        -> (tensor<?x12xf32>) {
      %n = fusion.dim %x[0] : tensor<?x12xf32>
      %r = fusion.rand %s, %o sizes(%n) : tensor<?x9xf32>
      %zero = fusion.constant 0.0 : f32
      %p = fusion.pad %r low [0, 2] high [0, 1] value %zero
        : tensor<?x9xf32> -> tensor<?x12xf32>
      %y = fusion.add %x, %p : tensor<?x12xf32>
      fusion.output %y : tensor<?x12xf32>
    }""",
}


@pytest.mark.parametrize("name", list(RANDOM_FUSIONS))
@pytest.mark.parametrize(("width", "unroll", "bits"), [(1, 1, 32), (4, 1, 32), (2, 2, 64)])
def test_the_kernel_draws_each_element_at_its_own_index(
    name: str, width: int, unroll: int, bits: int, rng: np.random.Generator
) -> None:
    """The simulated kernel (`kernel.random` evaluated at the index the kernel computes) equals
    the reference element for element, whatever the schedule: so the numbers depend on
    (seed, offset, index) alone."""
    text = RANDOM_FUSIONS[name]
    fusion = parse_fusion(text)
    dtype = np.float64 if "f64" in str(fusion.inputs[0].type) else np.float32
    width = min(width, 2) if dtype == np.float64 else width  # (16-byte vectors)
    x = rng.standard_normal((7, 12)).astype(dtype) + 0.5
    run_kernel(
        text, [x, np.int64(1234), np.int64(5)], vector_width=width, unroll=unroll, index_bits=bits
    )


def test_a_random_value_expanded_along_a_dynamic_dim_is_a_kernel_of_its_own() -> None:
    """A `?` dim that is 1 at run time and broadcast would read one random element many times:
    the pointwise scheduler refuses it (and says why), so the segmenter computes the random
    tensor by itself."""
    fusion = parse_fusion(
        """fusion.fusion @f(%x: tensor<?x?xf32>, %s: i64, %o: i64) -> (tensor<?x?xf32>) {
      %n0 = fusion.dim %x[0] : tensor<?x?xf32>
      %n1 = fusion.dim %x[1] : tensor<?x?xf32>
      %r = fusion.rand %s, %o sizes(%n1) : tensor<?xf32>
      %b = fusion.broadcast_in_dim %r [1] sizes(%n0) : tensor<?xf32> -> tensor<?x?xf32>
      %y = fusion.add %x, %b : tensor<?x?xf32>
      fusion.output %y : tensor<?x?xf32>
    }"""
    )
    from test_schedulers import info_of

    info = info_of(fusion, [np.ones((3, 5), np.float32), np.int64(0), np.int64(0)])
    verdict = PointwiseScheduler().accepts(fusion, info)
    assert not verdict and "expands random values along a dynamic dim" in str(verdict.reason)


# --------------------------------------------------------------------------------------------
# The frontend


def test_uniform_and_normal_in_the_frontend() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 16], DataType.BFloat16)
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        u = fd.ops.uniform(
            -2.0, 3.0, x.shape(), rng_seed=seed, rng_offset=offset, dtype=DataType.BFloat16
        )
        z = fd.ops.normal(1.5, 0.25, [4, 16], rng_seed=11, rng_offset=2, dtype=DataType.Double)
        r = fd.ops.rand_like(x, rng_seed=seed, rng_offset=offset)
        n = fd.ops.randn_like(x, rng_seed=seed, rng_offset=offset)
        for t in (u, z, r, n):
            fd.add_output(t)
    assert [t.dtype for t in fd.outputs] == [
        DataType.BFloat16,
        DataType.Double,
        DataType.BFloat16,
        DataType.BFloat16,
    ]
    xs = np.zeros((4096, 16), ml_dtypes.bfloat16)
    uu, zz, rr, nn = fd.reference([xs, 99, 0])
    uf = uu.astype(np.float64)
    assert uf.min() >= -2.0 and uf.max() < 3.0 and abs(uf.mean() - 0.5) < 0.05
    assert zz.shape == (4, 16) and abs(zz.mean() - 1.5) < 0.1
    # rand_like with the seed and offset of `uniform` draws the same numbers before scaling;
    # one that rounds up to 1 in bf16 is 0, as in torch's uniform_
    base = philox.random((4096, 16), np.dtype(np.float32), 99, 0, False)
    rounded = base.astype(ml_dtypes.bfloat16).astype(np.float32)
    expected = np.where(rounded == 1, 0, rounded)
    assert (rounded == 1).any() and rr.astype(np.float32).max() < 1
    np.testing.assert_array_equal(rr.astype(np.float32), expected)
    assert abs(nn.astype(np.float64).std() - 1) < 0.05


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.uniform(0, 1, [3]), "needs rng_seed and rng_offset"),
        (
            lambda fd, x: fd.ops.uniform(0, 1, [3], rng_seed=1, rng_offset=0, dtype=DataType.Int),
            "argument 'dtype' must be a floating-point type, got Int",
        ),
        (
            lambda fd, x: fd.ops.normal(0, 1, [3, -1], rng_seed=1, rng_offset=0),
            "argument 'shape' entry 1 is -1; extents are >= 0",
        ),
        (
            lambda fd, x: fd.ops.normal(0, 1, [2.5], rng_seed=1, rng_offset=0),
            "argument 'shape' entry 0 must be an int, a constant Int Scalar or an extent",
        ),
        (lambda fd, x: fd.ops.rand_like(x), "needs rng_seed and rng_offset"),
        (
            lambda fd, x: fd.ops.uniform(x, 1, [3], rng_seed=1, rng_offset=0),
            "argument 'minval' must be a Python number or a Scalar",
        ),
        (
            lambda fd, x: fd.ops.uniform(0, 1, [3], rng_seed=1.5, rng_offset=0),
            "argument 'rng_seed' must be an int or an Int Scalar, got Float",
        ),
        (
            lambda fd, x: fd.ops.uniform(3, 1, [3], rng_seed=1, rng_offset=0),
            r"needs minval <= maxval, got 3 > 1",
        ),
    ],
)
def test_random_mistakes_are_named(call: object, message: str) -> None:
    with pytest.raises(DefinitionError, match=message), FusionDefinition() as fd:
        x = fd.define_tensor([-1], DataType.Float)
        call(fd, x)  # type: ignore[operator]


def test_random_kernels_compile_with_nvrtc() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        d = fd.define_tensor([-1], DataType.Double)
        fd.add_output(fd.ops.mul(x, fd.ops.rand_like(x, rng_seed=3, rng_offset=0)))
        fd.add_output(fd.ops.randn_like(x, rng_seed=3, rng_offset=1))
        fd.add_output(
            fd.ops.add(
                d, fd.ops.uniform(0, 2, d.shape(), rng_seed=3, rng_offset=2, dtype=DataType.Double)
            )
        )
        fd.add_output(
            fd.ops.normal(0, 2, d.shape(), rng_seed=3, rng_offset=3, dtype=DataType.Double)
        )
    fd.compile([np.ones((3, 5), ml_dtypes.bfloat16), np.ones(7)], arch="sm_90")
    code = fd.last_cuda_code()
    for function in (
        "fuser::rand_f32(",
        "fuser::randn_f32(",
        "fuser::rand_f64(",
        "fuser::randn_f64(",
    ):
        assert function in code, function


def test_dropout_compiles_at_a_benchmark_shape() -> None:
    """[8192, 4096] bf16 takes the pointwise kernel's 2-D grid, whose flat index is built on
    first use: the random draw inside the unrolled loop must not be its first use (the GPU
    benchmark found `elem` declared inside the loop and stored outside it)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        r = fd.define_tensor([-1, -1], DataType.BFloat16)
        u = fd.ops.uniform(0.0, 1.0, x.shape(), rng_seed=1, rng_offset=8)
        kept = fd.ops.where(fd.ops.ge(u, 0.1), fd.ops.mul(x, 1 / 0.9), 0.0)
        fd.add_output(fd.ops.cast(fd.ops.add(kept, r), DataType.BFloat16))
    shape = (8192, 4096)
    inputs = [np.empty(shape, ml_dtypes.bfloat16), np.empty(shape, ml_dtypes.bfloat16)]
    compiled = fd.compile(inputs, arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["pointwise"]
