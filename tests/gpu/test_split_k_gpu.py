"""Split-K matmuls on the GPU through `fd.execute`, checked against the float64 numpy reference.

A matmul whose output tiles cannot fill the GPU runs as two kernels (`fuser.transforms.split_k`):
the partial matmul (scheduler `matmul`) and the sum over the splits with the cast and epilogue
(scheduler `reduction`). Covered: bf16, f16 and f32 operands; M and N in {1, 17, 128, 256}; K
up to 65536, odd and not a multiple of the factor; batch dims; a bias + relu epilogue; factors
forced with `FusionCompiler(split_k=...)`, including empty chunks and `split_k=1`; the program
cache (a repeated signature hits, a shape of another factor gets its own program, a large output
runs as one kernel); torch inputs with a transposed operand.

Tolerance: an output may differ from the reference by its own rounding (one ulp, two where the
epilogue rounds again) plus f32 accumulation error, `4 * eps(f32) * sqrt(K) * (|A| @ |B|)`; a
lost or doubled chunk is orders of magnitude more.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import test_split_k

from fuser import DataType, FusionDefinition
from fuser.compiler import FusionCompiler
from fuser.runtime import driver
from fuser.runtime.dtypes import numpy_dtype, round_to_float
from fuser.transforms.split_k import split_factor

pytestmark = pytest.mark.gpu

DTYPES = [DataType.BFloat16, DataType.Half, DataType.Float]
EPS32 = float(np.finfo(np.float32).eps)
EPS_OUT = {
    numpy_dtype(DataType.BFloat16.element_type): 2.0**-7,
    numpy_dtype(DataType.Half.element_type): 2.0**-10,
    np.dtype(np.float32): EPS32,
}
"""The spacing of each output dtype at 1: a rounding of the output may be one of these off."""


linear = functools.cache(test_split_k.linear)
"""`a @ b`, or `relu(a @ b + bias)`, every dim dynamic; one per module and kind, so cases of one
kind share compiled programs where the factors and heuristics allow."""


def make_inputs(
    rng: np.random.Generator,
    dtype: DataType,
    batch: tuple[int, ...],
    m: int,
    k: int,
    n: int,
    epilogue: bool = False,
) -> list[np.ndarray]:
    """Normal values rounded to the dtype (the bias larger, so relu clips some outputs only)."""
    np_dtype = numpy_dtype(dtype.element_type)
    inputs = [
        round_to_float(rng.standard_normal((*batch, m, k)), np_dtype),
        round_to_float(rng.standard_normal((*batch, k, n)), np_dtype),
    ]
    if epilogue:
        inputs.append(round_to_float(rng.standard_normal(n) * math.sqrt(max(k, 1)), np_dtype))
    return inputs


def check(fd: FusionDefinition, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
    """`output` against the float64 reference, within the tolerance of the module docstring."""
    (expected,) = fd.reference(list(inputs), compute_dtype=np.float64)
    assert output.dtype == inputs[0].dtype and output.shape == expected.shape
    a, b = (x.astype(np.float64) for x in inputs[:2])
    k = a.shape[-1]
    magnitude = np.abs(a @ b)
    rounding = 1
    if len(inputs) > 2:
        magnitude = magnitude + np.abs(inputs[2].astype(np.float64))
        rounding = 2
    accumulation = 4 * EPS32 * math.sqrt(max(k, 1)) * (np.abs(a) @ np.abs(b))
    bound = rounding * EPS_OUT[output.dtype] * magnitude + accumulation
    error = np.abs(output.astype(np.float64) - expected.astype(np.float64))
    bad = error > bound
    if bad.any():
        j = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{int(bad.sum())} of {output.size} elements differ; first at {j}: got {output[j]!r}, "
            f"expected {expected[j]!r} (bound {bound[j]:.3g})"
        )


def schedulers(fd: FusionDefinition) -> list[str]:
    return [s.scheduler for s in fd.last_segments()]


def expected_split(dtype: DataType, batch: tuple[int, ...], m: int, k: int, n: int) -> int:
    sms = driver.current_device().sm_count
    return split_factor(m, n, k, dtype.element_type, sms, math.prod(batch))


# --------------------------------------------------------------------------------------------
# Split by the rule, through fd.execute

SHAPES = [
    # (M, N): K is 65536 and 4099 for each
    (1, 1),
    (1, 256),
    (17, 17),
    (17, 128),
    (128, 17),
    (128, 128),
    (256, 256),
]


@pytest.mark.parametrize("k", [65536, 4099])
@pytest.mark.parametrize(("m", "n"), SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_split_by_the_rule(
    rng: np.random.Generator, device: driver.Device, dtype: DataType, m: int, n: int, k: int
) -> None:
    fd = linear(dtype)
    inputs = make_inputs(rng, dtype, (), m, k, n)
    (out,) = fd.execute(inputs)
    check(fd, inputs, out)
    s = expected_split(dtype, (), m, k, n)
    assert s > 1, "every case here is a skinny output with a long K"
    assert schedulers(fd) == ["matmul", "reduction"]


@pytest.mark.parametrize(
    ("m", "k", "n"), [(256, 65536, 256), (17, 32768, 1), (128, 4099, 256), (1, 9999, 17)]
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_split_with_bias_relu(
    rng: np.random.Generator, device: driver.Device, dtype: DataType, m: int, k: int, n: int
) -> None:
    """The epilogue runs after the sum, in the reduction's kernel."""
    fd = linear(dtype, epilogue=True)
    inputs = make_inputs(rng, dtype, (), m, k, n, epilogue=True)
    (out,) = fd.execute(inputs)
    check(fd, inputs, out)
    assert expected_split(dtype, (), m, k, n) > 1
    assert schedulers(fd) == ["matmul", "reduction"]
    # relu clipped every clearly negative output (`check` compared the values). The bias is one
    # value per column, so with N = 1 all M outputs may lie above 0 (1 run in M + 1): no clip
    # is asserted then.
    a, b, bias = (x.astype(np.float64) for x in inputs)
    negative = a @ b + bias < -0.05 * math.sqrt(k)
    assert np.all(out.astype(np.float64)[negative] == 0)
    assert n == 1 or np.any(negative)


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float], ids=lambda d: d.name)
def test_split_batched(rng: np.random.Generator, device: driver.Device, dtype: DataType) -> None:
    fd = linear(dtype, batch_rank=1, epilogue=True)
    batch, m, k, n = (3,), 128, 20001, 17
    inputs = make_inputs(rng, dtype, batch, m, k, n, epilogue=True)
    (out,) = fd.execute(inputs)
    check(fd, inputs, out)
    assert expected_split(dtype, batch, m, k, n) > 1
    assert schedulers(fd) == ["matmul", "reduction"]


# --------------------------------------------------------------------------------------------
# Forced factors


@pytest.mark.parametrize(
    ("m", "k", "n", "s"),
    [
        (17, 1001, 33, 7),  # chunks of 143
        (128, 9, 128, 4),  # chunks of 3: the last one empty
        (5, 5, 3, 7),  # chunks of 1: the last two empty
        (256, 65536, 256, 3),  # chunks of 21846, not a K-step
        (64, 4096, 64, 64),  # chunks of 64
    ],
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_forced_factor(
    rng: np.random.Generator, device: driver.Device, dtype: DataType, m: int, k: int, n: int, s: int
) -> None:
    fd = linear(dtype, epilogue=True)
    compiler = FusionCompiler(fd.fusion, split_k=s)
    inputs = make_inputs(rng, dtype, (), m, k, n, epilogue=True)
    (out,) = compiler.execute(inputs)
    check(fd, inputs, out)
    assert [seg.scheduler for seg in compiler.last_segments()] == ["matmul", "reduction"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_split_k_1_never_splits(
    rng: np.random.Generator, device: driver.Device, dtype: DataType
) -> None:
    fd = linear(dtype, epilogue=True)
    compiler = FusionCompiler(fd.fusion, split_k=1)
    inputs = make_inputs(rng, dtype, (), 256, 65536, 256, epilogue=True)
    (out,) = compiler.execute(inputs)
    check(fd, inputs, out)
    assert [seg.scheduler for seg in compiler.last_segments()] == ["matmul"]


# --------------------------------------------------------------------------------------------
# The program cache


def test_programs_of_different_factors(rng: np.random.Generator, device: driver.Device) -> None:
    """A program is reused only for the same factors: 256x65536x256 and 256xKx256 with a
    shorter K split differently and get a program each; a repeated signature hits; a large
    output runs as one kernel; every result is right."""
    dtype = DataType.BFloat16
    fd = linear(dtype)
    compiler = FusionCompiler(fd.fusion)
    first = expected_split(dtype, (), 256, 65536, 256)
    k = next(
        k
        for k in (1024, 2048, 4096, 8192)
        if expected_split(dtype, (), 256, k, 256) not in (1, first)
    )
    shapes = [(256, 65536, 256), (256, k, 256), (2048, 512, 2048)]
    factors = [expected_split(dtype, (), *shape) for shape in shapes]
    assert factors[0] > 1 and factors[1] > 1 and factors[0] != factors[1] and factors[2] == 1
    for i, (m, k, n) in enumerate(shapes):
        inputs = make_inputs(rng, dtype, (), m, k, n)
        (out,) = compiler.execute(inputs)
        check(fd, inputs, out)
        split = factors[i] > 1
        assert [s.scheduler for s in compiler.last_segments()] == (
            ["matmul", "reduction"] if split else ["matmul"]
        )
    assert compiler.cache_info()["programs"] == 2
    inputs = make_inputs(rng, dtype, (), *shapes[0])
    hits = compiler.hits
    (out,) = compiler.execute(inputs)
    check(fd, inputs, out)
    assert compiler.hits == hits + 1
    assert compiler.cache_info()["programs"] == 2


def test_torch_inputs_with_a_transposed_operand(rng: np.random.Generator, torch: Any) -> None:
    """Torch bf16 tensors on the device, `b` a transposed view; the fast path on repeats."""
    fd = linear(DataType.BFloat16)
    m, k, n = 128, 32768, 128
    inputs = make_inputs(rng, DataType.BFloat16, (), m, k, n)
    a = torch.from_numpy(inputs[0].view(np.int16)).view(torch.bfloat16).cuda()
    bt = torch.from_numpy(np.ascontiguousarray(inputs[1].T).view(np.int16))
    b = bt.view(torch.bfloat16).cuda().t()
    assert not b.is_contiguous()
    compiler = FusionCompiler(fd.fusion)
    for _ in range(3):
        (out,) = compiler.execute([a, b])
        assert isinstance(out, torch.Tensor) and out.is_cuda
        host = out.contiguous().view(torch.int16).cpu().numpy().view(inputs[0].dtype)
        check(fd, inputs, host)
    assert [s.scheduler for s in compiler.last_segments()] == ["matmul", "reduction"]
    assert (compiler.misses, compiler.hits) == (1, 2)
