"""The Welford translation on the GPU: layer norm and var_mean through both paths, the two-pass
form forced on (`FusionCompiler(..., welford="always")`) and the in-kernel Welford forced on
(`welford="never"`), each checked against the float64 numpy reference and against each other,
on normal data and on the large-mean data (mean 1e4, std 1, f32) where a one-pass
`E[x^2] - E[x]^2` would lose every digit.

Shapes: odd widths (1031), a wide row (8192) the persistent scheduler still holds, and rows of
100000 that it does not (the two-pass form then runs as reduction kernels, the Welford as a
reduction and a pointwise kernel). Each case also asserts which path ran: the kernels' CUDA
names the reductions they compute (`reduce fusion.var_mean` only in the Welford path).

Tolerances (as tests/gpu/test_reductions_gpu.py): f32 outputs within 1e-4 relative on normal
data; with mean 1e4, the mean to 1e-5 relative, the variance to 1e-3 relative, and y to 5e-3
absolute (the f32 mean is known to about one ulp of 1e4, 1e-3); bf16 outputs within one ulp.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from gpu_helpers import assert_close

from fuser import DataType, FusionDefinition, dump
from fuser.compiler import FusionCompiler
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

F32 = np.dtype(np.float32)
Tol = tuple[float, float]


def layer_norm(dtype: DataType) -> FusionDefinition:
    """y = (x - mean) * rsqrt(var + eps) * w + b (computed in f32), mean, var (correction 0)."""
    with FusionDefinition(f"layer_norm_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        w, b = fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)
        if dtype != DataType.Float:
            x, w, b = (fd.ops.cast(t, DataType.Float) for t in (x, w, b))
        var, mean = fd.ops.var_mean(x, [1], correction=0)
        shape = x.shape()
        y = fd.ops.mul(
            fd.ops.sub(x, fd.ops.broadcast_in_dim(mean, shape, [0])),
            fd.ops.broadcast_in_dim(fd.ops.rsqrt(fd.ops.add(var, 1e-5)), shape, [0]),
        )
        y = fd.ops.mul(y, fd.ops.broadcast_in_dim(w, shape, [1]))
        y = fd.ops.add(y, fd.ops.broadcast_in_dim(b, shape, [1]))
        fd.add_output(y if dtype == DataType.Float else fd.ops.cast(y, dtype))
        fd.add_output(mean)
        fd.add_output(var)
    return fd


def var_mean() -> FusionDefinition:
    with FusionDefinition("var_mean") as fd:
        x = fd.define_tensor([-1, -1])
        var, mean = fd.ops.var_mean(x, [1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


def normal(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, mean: float, std: float
) -> np.ndarray:
    return round_to_float(mean + std * rng.standard_normal(shape), dtype)


@pytest.fixture(autouse=True)
def commented_kernels() -> Iterator[None]:
    """The runtime compiler's kernels with their `kernel.comment`s, which `run_both_paths` reads
    to tell a Welford reduction from a translated one: it builds them only for a kernel dump."""
    dump.configure("cuda")
    try:
        yield
    finally:
        dump.configure("")


def run_both_paths(
    fd: FusionDefinition, inputs: Sequence[np.ndarray]
) -> dict[str, tuple[list[np.ndarray], list[str], list[str]]]:
    """Each path's outputs, schedulers and kernel sources (after the run: a cache hit)."""
    runs = {}
    for mode in ("always", "never"):
        compiler = FusionCompiler(fd.fusion, welford=mode)
        outputs = compiler.execute(list(inputs))
        kernels = compiler.compile(list(inputs)).kernels
        runs[mode] = (outputs, [k.scheduler for k in kernels], [k.source for k in kernels])
    two_pass, welford = runs["always"][2], runs["never"][2]
    assert not any("reduce fusion.var_mean" in s for s in two_pass), "translation did not run"
    assert any("reduce fusion.var_mean" in s for s in welford), "the Welford path was translated"
    return runs


def check_paths(
    runs: dict[str, tuple[list[np.ndarray], list[str], list[str]]],
    expected: Sequence[np.ndarray],
    labels: Sequence[str],
    tols: Sequence[Tol],
) -> None:
    for mode, (outputs, _, _) in runs.items():
        for out, ref, label, tol in zip(outputs, expected, labels, tols, strict=True):
            assert_close(out, ref, f"welford={mode}: {label}", tol)
    for a, b, label, (rtol, atol) in zip(
        runs["always"][0], runs["never"][0], labels, tols, strict=True
    ):
        assert_close(a, b, f"two-pass vs Welford: {label}", (2 * rtol, 2 * atol))


SHAPES = [(263, 1031), (64, 8192), (3, 100000)]
"""Rows the persistent scheduler holds (an odd width, a wide one), and rows it does not."""


def expected_schedulers(shape: tuple[int, int]) -> dict[str, list[str]]:
    if shape[1] <= 8192:
        return {"always": ["persistent"], "never": ["persistent"]}
    # too long for registers: one looped kernel, its passes over the row the two-pass form's
    # (mean, deviations, normalization) or the Welford's (statistics, normalization)
    return {"always": ["looped"], "never": ["looped"]}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_layer_norm_f32_both_paths(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    fd = layer_norm(DataType.Float)
    width = shape[1]
    labels = ["y", "mean", "var"]
    for center in (0.5, 1e4):  # normal data, then the large-mean data
        x = normal(rng, shape, F32, center, 2.0 if center < 1 else 1.0)
        w, b = normal(rng, (width,), F32, 1.0, 0.5), normal(rng, (width,), F32, 0.0, 1.0)
        inputs = [x, w, b]
        expected = fd.reference(inputs, compute_dtype=np.float64)
        runs = run_both_paths(fd, inputs)
        for mode, names in expected_schedulers(shape).items():
            assert runs[mode][1] == names, (mode, runs[mode][1])
        if center < 1:
            scale = abs(center) + 2.0
            tols = [
                (1e-4, 1e-5),
                (1e-5, 1e-6 + 2e-5 * scale / math.sqrt(width)),
                (2e-5 * max(1.0, math.sqrt(width) / 32), 1e-6),
            ]
        else:
            tols = [(1e-3, 5e-3), (1e-5, 0.0), (1e-3, 0.0)]
        check_paths(runs, expected, labels, tols)
        # the statistics against numpy's own, on the exact inputs
        exact = x.astype(np.float64)
        for mode, (outputs, _, _) in runs.items():
            assert_close(outputs[1], exact.mean(axis=1), f"{mode}: mean vs numpy", tols[1])
            assert_close(outputs[2], exact.var(axis=1), f"{mode}: var vs numpy", tols[2])


@pytest.mark.parametrize("shape", SHAPES[:2], ids=lambda s: "x".join(map(str, s)))
def test_layer_norm_bf16_both_paths(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    fd = layer_norm(DataType.BFloat16)
    d = numpy_dtype(DataType.BFloat16.element_type)
    assert d == BFLOAT16
    width = shape[1]
    inputs = [
        normal(rng, shape, d, 0.5, 2.0),
        normal(rng, (width,), d, 1.0, 0.5),
        normal(rng, (width,), d, 0.0, 1.0),
    ]
    expected = fd.reference(inputs, compute_dtype=np.float64)
    runs = run_both_paths(fd, inputs)
    assert runs["always"][1] == runs["never"][1] == ["persistent"]
    tols = [
        (1e-2, 1e-4),
        (1e-5, 1e-6 + 5e-5 / math.sqrt(width)),
        (2e-5 * max(1.0, math.sqrt(width) / 32), 1e-6),
    ]
    check_paths(runs, expected, ["y", "mean", "var"], tols)


@pytest.mark.parametrize("shape", [(257, 4099), (5, 131071)], ids=["4099", "131071"])
def test_var_mean_large_mean_both_paths(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    fd = var_mean()
    x = normal(rng, shape, F32, 1e4, 1.0)
    runs = run_both_paths(fd, [x])
    exact = x.astype(np.float64)
    expected = [exact.var(axis=1, ddof=1), exact.mean(axis=1)]
    check_paths(runs, expected, ["var", "mean"], [(1e-3, 0.0), (1e-5, 0.0)])
    if shape[1] <= 8192:  # the two-pass form keeps the row in registers
        assert runs["always"][1] == ["persistent"] and runs["never"][1] == ["reduction"]
