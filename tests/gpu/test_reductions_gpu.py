"""Reductions and normalizations on the GPU, through every scheduler that takes them, checked
against the float64 numpy reference (`fd.reference(..., compute_dtype=np.float64)`).

Covered: sum/max/min (prod too, below) over every non-empty axis subset of 3-D tensors (odd shapes,
(1, 1, 1) included) with and without keepdim, on f32, f16 and bf16 (which the frontend reduces in
f32), and on i32/i64; inner and outer reductions of large 2-D tensors; several reductions of one
input with an epilogue and a full-shape output (multi-output); softmax, layer norm and RMS norm on
odd widths up to 16384 in f32 and bf16; var_mean and welford with correction 0 and 1, with and
without keepdim; the large-mean case (mean 1e4, std 1, f32), where a one-pass `E[x^2] - E[x]^2`
would lose every digit, for var_mean (reduction scheduler) and layer norm (persistent scheduler);
NaN and infinities in max/min/sum/prod; `prod` over floats, integers (wrapping) and Bool, inner,
outer, empty and reused by an epilogue; non-contiguous torch inputs (permuted and transposed views,
row-sliced normalization inputs). Named cases assert which scheduler ran them (`fd.compile(inputs)`
after the run: a cache hit that lists the kernels), so a change of scheduler shows up here.

Tolerances: max/min are exact; sums of n values get an absolute tolerance growing with
sqrt(n) times the data's scale (float sums in another order); f16/bf16 outputs allow one ulp.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from definitions import back, softmax, to_f32
from gpu_helpers import F32, TOL, assert_close, numpy_of, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype, round_to_float

pytestmark = pytest.mark.gpu

HALF_AND_FLOAT = [DataType.Float, DataType.Half, DataType.BFloat16]

Tol = tuple[float, float] | None


def np_dtype(dtype: DataType) -> np.dtype:
    return numpy_dtype(dtype.element_type)


def sum_tol(dtype: np.dtype, n: int, scale: float = 1.0) -> tuple[float, float]:
    """A sum of `n` values of magnitude `scale`: rounding errors of f32 accumulation in another
    order grow like sqrt(n) * scale (absolute), on top of the output dtype's tolerance."""
    rtol, atol = TOL[dtype]
    return rtol, atol + 2e-5 * math.sqrt(n) * scale


def mean_tol(n: int, scale: float = 1.0) -> tuple[float, float]:
    """A mean of `n` values of magnitude `scale` (a sum's tolerance divided by n)."""
    return 1e-5, 1e-6 + 2e-5 * scale / math.sqrt(n)


def var_tol(n: int) -> tuple[float, float]:
    """A variance (or sum of squared deviations) of `n` values: relative, growing slowly."""
    return 2e-5 * max(1.0, math.sqrt(n) / 32), 1e-6


def normal(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: np.dtype = F32,
    mean: float = 0.0,
    std: float = 1.0,
) -> np.ndarray:
    """Normal values rounded once to `dtype` (never all zeros)."""
    return round_to_float(mean + std * rng.standard_normal(shape), dtype)


def check(
    fd: FusionDefinition,
    inputs: Sequence[Any],
    labels: Sequence[str],
    tols: Sequence[Tol] | None = None,
    outputs: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Runs `fd` on numpy `inputs` (unless `outputs` are given) and checks each output's dtype
    and values against the float64 reference, output i within `tols[i]` (None: by dtype)."""
    if outputs is None:
        outputs = fd.execute(list(inputs))
    expected = fd.reference(list(inputs), compute_dtype=np.float64)
    assert len(outputs) == len(expected) == len(labels)
    tols = tols or [None] * len(labels)
    for i, (out, ref, t) in enumerate(zip(outputs, expected, fd.outputs, strict=True)):
        what = f"output #{i} {labels[i]}"
        assert out.dtype == np_dtype(t.dtype), f"{what}: dtype {out.dtype}, declared {t.dtype}"
        assert_close(out, ref, what, tols[i])
    return list(outputs)


def scheduler_names(fd: FusionDefinition, inputs: Sequence[Any]) -> list[str]:
    """The schedulers of the kernels `fd` runs for `inputs` (compiled already: a cache hit)."""
    return [k.scheduler for k in fd.compile(list(inputs)).kernels]


def assert_persistent(fd: FusionDefinition, inputs: Sequence[Any]) -> None:
    """The persistent kernel runs `inputs`, or, where its row fills a 1024-thread block and
    multi-kernel timed the looped kernel against it, whichever was faster."""
    compiled = fd.compile(list(inputs))
    names = [k.scheduler for k in compiled.kernels]
    if compiled.multi_kernel:
        assert compiled.multi_kernel.startswith("variants persistent ")
        assert names in (["persistent"], ["looped"])
    else:
        assert names == ["persistent"]


# --------------------------------------------------------------------------------------------
# sum / max / min over every axis subset of 3-D tensors

SHAPES_3D = [(3, 5, 7), (127, 3, 65), (2, 4097, 3), (1, 1, 1)]
AXES = [axes for r in (1, 2, 3) for axes in itertools.combinations(range(3), r)]
"""Every non-empty subset of the axes of a 3-D tensor."""


@functools.cache
def subset_fusion(
    axes: tuple[int, ...],
) -> tuple[FusionDefinition, tuple[tuple[str, str, DataType], ...]]:
    """sum/max/min over `axes` of an f32, an f16 and a bf16 tensor in one kernel. keepdim
    alternates between outputs and between axis subsets, so each (dtype, op) is reduced with
    and without it."""
    outputs: list[tuple[str, str, DataType]] = []  # (label, op, input dtype)
    parity = AXES.index(axes)
    cases = [(d, ("sum", "max", "min")) for d in HALF_AND_FLOAT]
    with FusionDefinition(f"reduce_{''.join(map(str, axes))}") as fd:
        for k, (dtype, ops) in enumerate(cases):
            x = fd.define_tensor([-1, -1, -1], dtype)
            for j, op in enumerate(ops):
                keep = (k + j + parity) % 2 == 1
                fd.add_output(getattr(fd.ops, op)(x, list(axes), keepdim=keep))
                outputs.append((f"{op}({dtype.name}, {list(axes)}, keepdim={keep})", op, dtype))
    return fd, tuple(outputs)


@pytest.mark.parametrize("shape", SHAPES_3D, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("axes", AXES, ids=lambda a: "axes" + "".join(map(str, a)))
def test_reduce_every_axis_subset(
    rng: np.random.Generator, axes: tuple[int, ...], shape: tuple[int, int, int]
) -> None:
    fd, outputs = subset_fusion(axes)
    n = math.prod(shape[a] for a in axes)
    inputs = [normal(rng, shape, np_dtype(d)) for d in HALF_AND_FLOAT]
    tols = [sum_tol(np_dtype(dtype), n) if op == "sum" else None for _, op, dtype in outputs]
    check(fd, inputs, [label for label, _, _ in outputs], tols)
    assert scheduler_names(fd, inputs) == ["reduction"]


@functools.cache
def integer_fusion(axes: tuple[int, ...]) -> FusionDefinition:
    with FusionDefinition(f"reduce_int_{''.join(map(str, axes))}") as fd:
        i = fd.define_tensor([-1, -1, -1], DataType.Int32)
        j = fd.define_tensor([-1, -1, -1], DataType.Int)
        fd.add_output(fd.ops.sum(i, list(axes)))
        fd.add_output(fd.ops.sum(j, list(axes), keepdim=True))
        fd.add_output(fd.ops.min(i, list(axes), keepdim=True))
        fd.add_output(fd.ops.max(j, list(axes)))
    return fd


INTEGER_CASES = [((127, 3, 65), axes) for axes in AXES]
INTEGER_CASES += [((1000, 1, 4097), (2,)), ((1000, 1, 4097), (0,)), ((3, 1, 65537), (0, 2))]


@pytest.mark.parametrize(
    "shape, axes",
    INTEGER_CASES,
    ids=["x".join(map(str, s)) + "-axes" + "".join(map(str, a)) for s, a in INTEGER_CASES],
)
def test_integer_reductions(
    rng: np.random.Generator, shape: tuple[int, int, int], axes: tuple[int, ...]
) -> None:
    """Exact i32 and i64 sums, min and max; the i64 values are past the i32 range."""
    fd = integer_fusion(axes)
    inputs = [
        rng.integers(-5000, 5000, shape).astype(np.int32),
        rng.integers(-(2**40), 2**40, shape).astype(np.int64),
    ]
    check(fd, inputs, ["sum i32", "sum i64 (keepdim)", "min i32 (keepdim)", "max i64"])
    assert scheduler_names(fd, inputs) == ["reduction"]


# --------------------------------------------------------------------------------------------
# Inner and outer reductions of large 2-D tensors

LARGE = [(1000, 4097), (4097, 1000), (16384, 1024), (3, 65537)]


@functools.cache
def large_fusion(axis: int) -> FusionDefinition:
    with FusionDefinition(f"reduce_2d_axis{axis}") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.sum(x, [axis]))
        fd.add_output(fd.ops.max(x, [axis]))
        fd.add_output(fd.ops.min(x, [axis], keepdim=True))
    return fd


@pytest.mark.parametrize("axis", [1, 0], ids=["inner", "outer"])
@pytest.mark.parametrize("shape", LARGE, ids=lambda s: "x".join(map(str, s)))
def test_large_inner_and_outer(rng: np.random.Generator, shape: tuple[int, int], axis: int) -> None:
    fd = large_fusion(axis)
    inputs = [normal(rng, shape)]
    labels = [f"sum over {axis}", f"max over {axis}", f"min over {axis} (keepdim)"]
    check(fd, inputs, labels, [sum_tol(F32, shape[axis]), None, None])
    assert scheduler_names(fd, inputs) == ["reduction"]


# --------------------------------------------------------------------------------------------
# Several reductions of one input with an epilogue


@functools.cache
def epilogue_fusion(dtype: DataType, axis: int) -> FusionDefinition:
    """y = x * s (prologue); sum, max, min and sum of squares of y over `axis`; epilogue
    outputs max - min and E[y^2] - E[y]^2 (with 1/n a scalar input); relu(y) at full shape."""
    with FusionDefinition(f"epilogue_{dtype.name}_axis{axis}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        s, inv_n = fd.define_scalar(dtype=DataType.Float), fd.define_scalar(dtype=DataType.Float)
        y = fd.ops.mul(to_f32(fd, x), s)
        total = fd.ops.sum(y, [axis])
        high, low = fd.ops.max(y, [axis]), fd.ops.min(y, [axis])
        squares = fd.ops.sum(fd.ops.mul(y, y), [axis])
        mean = fd.ops.mul(total, inv_n)
        fd.add_output(total)
        fd.add_output(back(fd, high, dtype))
        fd.add_output(fd.ops.sub(high, low))
        fd.add_output(fd.ops.sub(fd.ops.mul(squares, inv_n), fd.ops.mul(mean, mean)))
        fd.add_output(back(fd, fd.ops.relu(y), dtype))
    return fd


@pytest.mark.parametrize(
    "shape, axis",
    [((127, 1000), 1), ((127, 1000), 0), ((3, 4097), 1), ((4097, 3), 0), ((1, 1), 1)],
    ids=["127x1000-inner", "127x1000-outer", "3x4097-inner", "4097x3-outer", "1x1"],
)
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_multi_output_epilogue(
    rng: np.random.Generator, dtype: DataType, shape: tuple[int, int], axis: int
) -> None:
    fd = epilogue_fusion(dtype, axis)
    n = shape[axis]
    s = float(rng.uniform(0.5, 2.0))
    inputs = [normal(rng, shape, np_dtype(dtype)), s, 1.0 / n]
    labels = ["sum", "max", "max - min", "E[y^2] - E[y]^2", "relu(y)"]
    scale = 2.0 * s
    tols = [sum_tol(F32, n, scale), None, None, (1e-4, mean_tol(n, scale * scale)[1]), None]
    check(fd, inputs, labels, tols)
    assert scheduler_names(fd, inputs) == ["reduction"]


# --------------------------------------------------------------------------------------------
# Normalizations (persistent scheduler)

WIDTHS = [1, 3, 127, 1000, 4097, 8192, 16384]
ROWS = 67
NORM_DTYPES = [DataType.Float, DataType.BFloat16]


@functools.cache
def layer_norm_fusion(dtype: DataType) -> FusionDefinition:
    """Outputs: y = (x - mean) * rsqrt(var + eps) * w + b, mean, var (correction 0)."""
    with FusionDefinition(f"layer_norm_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        w, b = fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)
        xf = to_f32(fd, x)
        var, mean = fd.ops.var_mean(xf, [1], correction=0)
        inv = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
        shape = x.shape()
        y = fd.ops.mul(
            fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape, [0])),
            fd.ops.broadcast_in_dim(inv, shape, [0]),
        )
        y = fd.ops.mul(y, fd.ops.broadcast_in_dim(to_f32(fd, w), shape, [1]))
        y = fd.ops.add(y, fd.ops.broadcast_in_dim(to_f32(fd, b), shape, [1]))
        fd.add_output(back(fd, y, dtype))
        fd.add_output(mean)
        fd.add_output(var)
    return fd


@functools.cache
def rms_norm_fusion(dtype: DataType) -> FusionDefinition:
    """Outputs: y = x * rsqrt(mean(x^2) + eps) * w, and the rsqrt (1/n a scalar input)."""
    with FusionDefinition(f"rms_norm_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        w = fd.define_tensor([-1], dtype)
        inv_n = fd.define_scalar(dtype=DataType.Float)
        xf = to_f32(fd, x)
        ms = fd.ops.mul(fd.ops.sum(fd.ops.mul(xf, xf), [1], keepdim=True), inv_n)
        inv = fd.ops.rsqrt(fd.ops.add(ms, 1e-6))
        y = fd.ops.mul(xf, fd.ops.broadcast_in_dim(inv, x.shape(), [0, 1]))
        y = fd.ops.mul(y, fd.ops.broadcast_in_dim(to_f32(fd, w), x.shape(), [1]))
        fd.add_output(back(fd, y, dtype))
        fd.add_output(inv)
    return fd


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", NORM_DTYPES, ids=lambda d: d.name)
def test_softmax(rng: np.random.Generator, dtype: DataType, width: int) -> None:
    fd = softmax(dtype)
    inputs = [normal(rng, (ROWS, width), np_dtype(dtype), std=3.0)]
    check(fd, inputs, ["softmax"], [(1e-4, 1e-7) if dtype == DataType.Float else None])
    assert_persistent(fd, inputs)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", NORM_DTYPES, ids=lambda d: d.name)
def test_layer_norm(rng: np.random.Generator, dtype: DataType, width: int) -> None:
    fd = layer_norm_fusion(dtype)
    d = np_dtype(dtype)
    inputs = [
        normal(rng, (ROWS, width), d, mean=0.5, std=2.0),
        normal(rng, (width,), d),
        normal(rng, (width,), d),
    ]
    y_tol = (1e-4, 1e-5) if dtype == DataType.Float else None
    check(fd, inputs, ["y", "mean", "var"], [y_tol, mean_tol(width, 2.5), var_tol(width)])
    assert_persistent(fd, inputs)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", NORM_DTYPES, ids=lambda d: d.name)
def test_rms_norm(rng: np.random.Generator, dtype: DataType, width: int) -> None:
    fd = rms_norm_fusion(dtype)
    d = np_dtype(dtype)
    inputs = [normal(rng, (ROWS, width), d, std=2.0), normal(rng, (width,), d), 1.0 / width]
    y_tol = (1e-4, 1e-6) if dtype == DataType.Float else None
    check(fd, inputs, ["y", "rsqrt(mean(x^2) + eps)"], [y_tol, (1e-4, 1e-6)])
    assert_persistent(fd, inputs)


# --------------------------------------------------------------------------------------------
# var_mean and welford


@functools.cache
def statistics_fusion(axes: tuple[int, ...]) -> tuple[FusionDefinition, tuple[str, ...]]:
    """var_mean with correction 0 and 1 (keepdim alternating with the axis subset, so every
    pairing occurs), and welford (avg, var_sum, n) with var_sum / (n - 1) as an epilogue."""
    keep = AXES.index(axes) % 2 == 0
    dims = list(axes)
    with FusionDefinition(f"statistics_{''.join(map(str, axes))}", welford="never") as fd:
        x = fd.define_tensor([-1, -1, -1])
        var0, mean0 = fd.ops.var_mean(x, dims, correction=0, keepdim=keep)
        var1, mean1 = fd.ops.var_mean(x, dims, correction=1, keepdim=not keep)
        avg, var_sum, n = fd.ops.welford(x, dims)
        for t in (var0, mean0, var1, mean1, avg, var_sum, n):
            fd.add_output(t)
        fd.add_output(fd.ops.truediv(var_sum, fd.ops.sub(n, 1)))
    labels = (
        f"var (correction 0, keepdim={keep})",
        f"mean (keepdim={keep})",
        f"var (correction 1, keepdim={not keep})",
        f"mean (keepdim={not keep})",
        "welford avg",
        "welford var_sum",
        "welford n",
        "var_sum / (n - 1)",
    )
    return fd, labels


STATISTICS_CASES = [((127, 3, 65), axes) for axes in AXES]
STATISTICS_CASES += [((2, 4097, 3), (1,)), ((2, 4097, 3), (0, 2)), ((2, 4097, 3), (0, 1, 2))]


@pytest.mark.parametrize(
    "shape, axes",
    STATISTICS_CASES,
    ids=["x".join(map(str, s)) + "-axes" + "".join(map(str, a)) for s, a in STATISTICS_CASES],
)
def test_var_mean_and_welford(
    rng: np.random.Generator, axes: tuple[int, ...], shape: tuple[int, int, int]
) -> None:
    fd, labels = statistics_fusion(axes)
    n = math.prod(shape[a] for a in axes)
    inputs = [normal(rng, shape, mean=0.3, std=1.5)]
    v, m = var_tol(n), mean_tol(n, 1.5)
    check(fd, inputs, labels, [v, m, v, m, m, v, None, v])
    assert scheduler_names(fd, inputs) == ["reduction"]


def test_var_of_one_element(rng: np.random.Generator) -> None:
    """N = 1: the variance is 0 with correction 0 and NaN (0 / 0) with correction 1."""
    fd, labels = statistics_fusion((2,))
    inputs = [normal(rng, (3, 1, 1))]
    outputs = check(fd, inputs, labels)
    assert np.all(outputs[0] == 0) and np.all(np.isnan(outputs[2]))


# --------------------------------------------------------------------------------------------
# The large-mean case: mean 1e4, std 1 in f32


@functools.cache
def var_mean_fusion(axis: int) -> FusionDefinition:
    with FusionDefinition(f"var_mean_axis{axis}", welford="never") as fd:
        x = fd.define_tensor([-1, -1])
        var, mean = fd.ops.var_mean(x, [axis], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


@pytest.mark.parametrize("shape, axis", [((64, 65537), 1), ((4097, 64), 0)], ids=["inner", "outer"])
def test_var_mean_large_mean(rng: np.random.Generator, shape: tuple[int, int], axis: int) -> None:
    fd = var_mean_fusion(axis)
    x = normal(rng, shape, mean=1e4, std=1.0)
    var, mean = fd.execute([x])
    exact = x.astype(np.float64)
    assert_close(var, np.var(exact, axis=axis, ddof=1), "var", (1e-3, 0.0))
    assert_close(mean, np.mean(exact, axis=axis), "mean", (1e-5, 0.0))
    assert scheduler_names(fd, [x]) == ["reduction"]


@pytest.mark.parametrize("width", [4097, 16384])
def test_layer_norm_large_mean(rng: np.random.Generator, width: int) -> None:
    fd = layer_norm_fusion(DataType.Float)
    x = normal(rng, (64, width), mean=1e4, std=1.0)
    w, b = normal(rng, (width,)), normal(rng, (width,))
    y, mean, var = fd.execute([x, w, b])
    exact = x.astype(np.float64)
    assert_close(var, np.var(exact, axis=1), "var", (1e-3, 0.0))
    assert_close(mean, np.mean(exact, axis=1), "mean", (1e-5, 0.0))
    # x - mean is exact in f32, but mean itself is only known to ~1 ulp of 1e4 (1e-3)
    ref = fd.reference([x, w, b], compute_dtype=np.float64)[0]
    assert_close(y, ref, "y", (1e-3, 5e-3))
    assert_persistent(fd, [x, w, b])


# --------------------------------------------------------------------------------------------
# prod


def product_values(
    rng: np.random.Generator, shape: tuple[int, ...], n: int, dtype: np.dtype
) -> np.ndarray:
    """Values of either sign near 1 (log-normal, spread 1/sqrt(n)) rounded to `dtype`: a
    product of `n` of them neither overflows nor vanishes, and is never all zeros."""
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return round_to_float(sign * np.exp(rng.standard_normal(shape) / math.sqrt(max(n, 1))), dtype)


def prod_tol(dtype: np.dtype, n: int) -> tuple[float, float]:
    """A product of `n` values near 1: the relative error of f32 products grows like sqrt(n)
    ulps, on top of the output dtype's tolerance."""
    rtol, atol = TOL[dtype]
    return rtol + 2e-7 * math.sqrt(n), atol


@functools.cache
def prod_fusion(axes: tuple[int, ...]) -> FusionDefinition:
    """prod over `axes` of an f32, an f16 and a bf16 tensor (f32 products), keepdim on f16."""
    with FusionDefinition(f"prod_{''.join(map(str, axes))}") as fd:
        for k, dtype in enumerate(HALF_AND_FLOAT):
            x = fd.define_tensor([-1, -1, -1], dtype)
            fd.add_output(fd.ops.prod(x, list(axes), keepdim=k == 1))
    return fd


PROD_CASES = [((127, 3, 65), axes) for axes in AXES]
PROD_CASES += [((1000, 1, 4097), (2,)), ((4097, 1, 1000), (0,)), ((3, 1, 65537), (0, 2))]
PROD_CASES += [((3, 0, 5), (1,)), ((1, 1, 1), (0, 1, 2))]


@pytest.mark.parametrize(
    "shape, axes",
    PROD_CASES,
    ids=["x".join(map(str, s)) + "-axes" + "".join(map(str, a)) for s, a in PROD_CASES],
)
def test_prod(rng: np.random.Generator, shape: tuple[int, int, int], axes: tuple[int, ...]) -> None:
    """`fd.ops.prod` on floats of each width, inner, outer and every axis subset; a product
    over an empty dim is 1."""
    fd = prod_fusion(axes)
    n = math.prod(shape[a] for a in axes)
    inputs = [product_values(rng, shape, n, np_dtype(d)) for d in HALF_AND_FLOAT]
    tols = [prod_tol(np_dtype(d), n) for d in HALF_AND_FLOAT]
    labels = [f"prod({d.name}, {list(axes)})" for d in HALF_AND_FLOAT]
    outputs = check(fd, inputs, labels, tols)
    if n == 0:
        assert all((o == 1).all() for o in outputs)
    elif math.prod(shape):
        assert scheduler_names(fd, inputs) == ["reduction"]


@functools.cache
def int_prod_fusion() -> FusionDefinition:
    with FusionDefinition("prod_int") as fd:
        i = fd.define_tensor([-1, -1], DataType.Int32)
        j = fd.define_tensor([-1, -1], DataType.Int)
        b = fd.define_tensor([-1, -1], DataType.Bool)
        fd.add_output(fd.ops.prod(i, [1]))
        fd.add_output(fd.ops.prod(j, [0]))
        fd.add_output(fd.ops.prod(b, [1]))
    return fd


@pytest.mark.parametrize(
    "shape", [(37, 129), (3, 4097), (1000, 1)], ids=lambda s: "x".join(map(str, s))
)
def test_integer_prod(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    """Exact integer products, wrapping past the type's range as torch's (odd factors up to 5
    in size, so long rows wrap many times and never reach 0); a Bool product is an Int (1
    where the row is all true)."""
    fd = int_prod_fusion()
    odd = np.array([-5, -3, -1, 1, 1, 1, 3, 5])
    i = rng.choice(odd, shape).astype(np.int32)
    j = rng.choice(odd, shape).astype(np.int64)
    b = rng.random(shape) < 0.97
    b[0] = True
    outputs = check(fd, [i, j, b], ["prod i32", "prod i64 over dim 0", "prod bool"])
    assert outputs[2].dtype == np.int64 and outputs[2][0] == 1


@functools.cache
def prod_epilogue_fusion() -> FusionDefinition:
    with FusionDefinition("prod_epilogue") as fd:
        x = fd.define_tensor([-1, -1])
        p = fd.ops.prod(x, [1], keepdim=True)
        fd.add_output(fd.ops.div(x, p))  # a full-shape output after the product: persistent
        fd.add_output(fd.ops.prod(fd.ops.abs(x), [0]))
    return fd


@pytest.mark.parametrize("shape", [(129, 1000), (8, 70001)], ids=lambda s: "x".join(map(str, s)))
def test_prod_normalization(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    """x / prod(x, 1): the product reused at full shape (the persistent scheduler for rows in
    registers, the looped one beyond), beside a column product of |x|."""
    fd = prod_epilogue_fusion()
    x = product_values(rng, shape, max(shape), F32)
    check(
        fd, [x], ["x / prod(x)", "prod(|x|, 0)"], [prod_tol(F32, shape[1]), prod_tol(F32, shape[0])]
    )


def test_prod_nan_and_inf(rng: np.random.Generator) -> None:
    """A NaN in a row makes its product NaN, inf times 0 too; inf alone stays inf."""
    with FusionDefinition("prod_nan") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.prod(x, [1]))
    x = product_values(rng, (6, 129), 129, F32)
    x[0, 5] = np.nan
    x[1, 7] = np.inf
    x[2, 3], x[2, 90] = np.inf, 0.0
    x[3, :] = 0.0
    (out,) = check(fd, [x], ["prod"], [prod_tol(F32, 129)])
    assert np.isnan(out[0]) and np.isinf(out[1]) and np.isnan(out[2]) and out[3] == 0


# --------------------------------------------------------------------------------------------
# NaN and infinities


@functools.cache
def nan_fusion(axis: int) -> FusionDefinition:
    with FusionDefinition(f"nan_axis{axis}") as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.max(x, [axis]))
        fd.add_output(fd.ops.min(x, [axis]))
        fd.add_output(fd.ops.sum(x, [axis]))
    return fd


@pytest.mark.parametrize("axis", [1, 0], ids=["inner", "outer"])
def test_nan_and_inf(rng: np.random.Generator, axis: int) -> None:
    """A NaN anywhere in a row makes its max, min and sum NaN; +inf and -inf together make
    the sum NaN; rows without NaN reduce normally."""
    fd = nan_fusion(axis)
    x = normal(rng, (37, 129))
    if axis == 0:
        x = np.ascontiguousarray(x.T)
    rows = x if axis == 1 else x.T  # a view whose row i is reduction i
    rows[0, 5] = np.nan
    rows[1, 7] = np.inf
    rows[2, -1] = -np.inf
    rows[3, 0], rows[3, 9] = np.inf, -np.inf
    rows[4, :] = np.nan
    rows[5, -1] = np.nan
    outputs = check(fd, [x], ["max", "min", "sum"], [None, None, sum_tol(F32, rows.shape[1])])
    assert all(np.isnan(o[[0, 4, 5]]).all() for o in outputs)
    assert np.isnan(outputs[2][3]) and outputs[0][1] == np.inf and outputs[1][2] == -np.inf


# --------------------------------------------------------------------------------------------
# Non-contiguous torch inputs


@functools.cache
def strided_fusion(axes: tuple[int, ...]) -> FusionDefinition:
    with FusionDefinition(f"strided_{''.join(map(str, axes))}", welford="never") as fd:
        x = fd.define_tensor([-1, -1, -1])
        fd.add_output(fd.ops.sum(x, list(axes)))
        fd.add_output(fd.ops.max(x, list(axes), keepdim=True))
        var, mean = fd.ops.var_mean(x, list(axes))
        fd.add_output(var)
        fd.add_output(mean)
    return fd


@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (1, 2)], ids=lambda a: f"axes{a}")
def test_reductions_of_permuted_torch_views(
    rng: np.random.Generator, torch: Any, axes: tuple[int, ...]
) -> None:
    """x is a (33, 65, 7) view of a contiguous (7, 33, 65) tensor: its fastest dim is dim 1."""
    fd = strided_fusion(axes)
    base = normal(rng, (7, 33, 65))
    x = torch_of(torch, base).permute(1, 2, 0)
    assert tuple(x.shape) == (33, 65, 7) and not x.is_contiguous()
    outs = fd.execute([x])
    host = [np.ascontiguousarray(base.transpose(1, 2, 0))]
    n = math.prod(host[0].shape[a] for a in axes)
    tols = [sum_tol(F32, n), None, var_tol(n), mean_tol(n)]
    check(fd, host, ["sum", "max", "var", "mean"], tols, [numpy_of(torch, o) for o in outs])
    assert scheduler_names(fd, [x]) == ["reduction"]


@pytest.mark.parametrize("width, pad", [(127, 5), (4096, 8)])
def test_normalizations_of_strided_torch_views(
    rng: np.random.Generator, torch: Any, width: int, pad: int
) -> None:
    """Rows sliced out of a wider tensor (row stride width + pad; with pad 8 the rows stay
    16-byte aligned, so vector loads apply) and a strided weight stay on the persistent
    scheduler; a transposed input (reduced dim not the fastest) gives the same softmax."""
    fd = layer_norm_fusion(DataType.BFloat16)
    wide = normal(rng, (ROWS, width + pad), BFLOAT16, std=2.0)
    long_w = normal(rng, (2 * width,), BFLOAT16)
    b = normal(rng, (width,), BFLOAT16)
    inputs = [torch_of(torch, wide)[:, :width], torch_of(torch, long_w)[::2], torch_of(torch, b)]
    outs = fd.execute(inputs)
    host = [np.ascontiguousarray(wide[:, :width]), np.ascontiguousarray(long_w[::2]), b]
    tols = [None, mean_tol(width, 2.0), var_tol(width)]
    check(fd, host, ["y", "mean", "var"], tols, [numpy_of(torch, o) for o in outs])
    assert_persistent(fd, inputs)

    sm = softmax(DataType.Float)
    base = normal(rng, (width, ROWS))
    (out,) = sm.execute([torch_of(torch, base).t()])
    (ref,) = sm.reference([np.ascontiguousarray(base.T)], compute_dtype=np.float64)
    np.testing.assert_allclose(numpy_of(torch, out), ref, rtol=1e-5, atol=1e-7)
