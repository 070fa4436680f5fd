"""`fd.ops.scatter` / `fusion.scatter` on the CPU: the reference against an element-by-element
loop, `fuser-decompose`'s rewrite against the reference (every dtype, static and dynamic
shapes, one and several indices per row, negative, out-of-range and repeated indices, tensor
and scalar `src`), the frontend's and the run's errors, and the kernels through NVRTC.
"""

from __future__ import annotations

import itertools
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_reference import parse_fusion

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError, InputError
from fuser.runtime.reference import evaluate
from fuser.transforms.decompose import decompose

NUMPY = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "i32": np.int32,
    "i64": np.int64,
    "i1": np.bool_,
}


def loop_scatter(x: np.ndarray, index: np.ndarray, src: Any, dim: int) -> np.ndarray:
    """The op's definition, one write at a time: an index in [-n, 0) counts from the end, any
    other outside [0, n) writes nothing, the largest of several writes of an element wins."""
    out = x.copy()
    n = x.shape[dim]
    values = np.broadcast_to(np.asarray(src, x.dtype), index.shape)
    first: dict[tuple[int, ...], Any] = {}
    for at in itertools.product(*map(range, index.shape)):
        i = int(index[at])
        i = i + n if -n <= i < 0 else i
        if not 0 <= i < n:
            continue
        target = (*at[:dim], i, *at[dim + 1 :])
        v = values[at]
        first[target] = v if target not in first else np.maximum(first[target], v)  # NaN wins
    for target, v in first.items():
        out[target] = v
    return out


def _type(shape: tuple[int, ...], el: str) -> str:
    return "tensor<" + "x".join([*(str(e) if e >= 0 else "?" for e in shape), el]) + ">"


def scatter_fusion(
    x: tuple[int, ...], index: tuple[int, ...], el: str, index_el: str, dim: int, scalar: bool
) -> Any:
    src = el if scalar else _type(index, el)
    xt, it = _type(x, el), _type(index, index_el)
    return parse_fusion(f"""
fusion.fusion @s(%x: {xt}, %i: {it}, %v: {src}) -> ({xt}) {{
  %y = fusion.scatter %x, %i, %v [{dim}] : {xt}, {it}, {src} -> {xt}
  fusion.output %y : {xt}
}}""")


def _src(rng: np.random.Generator, el: str, shape: tuple[int, ...] | None) -> Any:
    if shape is None:  # a scalar argument: a Python number
        if el == "i1":
            return bool(rng.random() < 0.5)
        return int(rng.integers(-9, 9)) if el.startswith("i") else float(rng.standard_normal())
    return (rng.standard_normal(shape) * 4).astype(NUMPY[el])


CASES = [((3, 9), 1, 2), ((3, 9), 1, 1), ((5, 4), 0, 3), ((2, 3, 4), 1, 5), ((7,), 0, 9)]


@pytest.mark.parametrize(("shape", "dim", "k"), CASES)
def test_the_reference_is_the_definition(
    rng: np.random.Generator, shape: tuple[int, ...], dim: int, k: int
) -> None:
    index_shape = tuple(k if j == dim else e for j, e in enumerate(shape))
    n = shape[dim]
    for el, scalar in itertools.product(["f32", "i64", "i1"], [False, True]):
        f = scatter_fusion(shape, index_shape, el, "i64", dim, scalar)
        x = (rng.standard_normal(shape) * 4).astype(NUMPY[el])
        index = rng.integers(-n - 2, n + 2, index_shape)  # negative, out of range, repeated
        src = _src(rng, el, None if scalar else index_shape)
        (y,) = evaluate(f, [x, index, src])
        np.testing.assert_array_equal(y, loop_scatter(x, index, src, dim))


@pytest.mark.parametrize(("shape", "dim", "k"), [*CASES, ((3, 9), 1, 0)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_the_decomposition_equals_the_reference(
    rng: np.random.Generator, shape: tuple[int, ...], dim: int, k: int, dynamic: bool
) -> None:
    index_shape = tuple(k if j == dim else e for j, e in enumerate(shape))
    n = shape[dim]
    for el, index_el, scalar in itertools.product(NUMPY, ["i32", "i64"], [False, True]):
        declared_x = tuple(-1 if dynamic else e for e in shape)
        declared_i = tuple(-1 if dynamic else e for e in index_shape)
        f = scatter_fusion(declared_x, declared_i, el, index_el, dim, scalar)
        g = f.clone()
        decompose(g)
        g.verify()
        assert "fusion.scatter" not in str(g)
        x = (rng.standard_normal(shape) * 4).astype(NUMPY[el])
        index = rng.integers(-n - 2, n + 2, index_shape).astype(NUMPY[index_el])
        src = _src(rng, el, None if scalar else index_shape)
        (expected,) = evaluate(f, [x, index, src])
        (got,) = evaluate(g, [x, index, src])
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_a_nan_among_several_writes_wins() -> None:
    f = scatter_fusion((1, 4), (1, 3), "f32", "i64", 1, False)
    x = np.zeros((1, 4), np.float32)
    index = np.array([[2, 2, 0]])
    src = np.array([[1.0, np.nan, -3.0]], np.float32)
    for fusion in (f, _decomposed(f)):
        (y,) = evaluate(fusion, [x, index, src])
        assert np.isnan(y[0, 2]) and y[0, 0] == -3.0 and y[0, 1] == 0 and y[0, 3] == 0


def _decomposed(f: Any) -> Any:
    g = f.clone()
    decompose(g)
    return g


def _definition() -> FusionDefinition:
    with FusionDefinition("scatter") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        i = fd.define_tensor([-1, -1], DataType.Int)
        v = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.scatter(x, i, v, 1))
        fd.add_output(fd.ops.scatter(x, i, 7, -1))
    return fd


def test_the_frontend_and_its_run_time_errors(rng: np.random.Generator) -> None:
    fd = _definition()
    assert fd.fusion_ir().count("fusion.scatter") == 2
    x = rng.standard_normal((4, 9)).astype(np.float32)
    i = rng.integers(-9, 9, (4, 3))
    v = rng.standard_normal((4, 3)).astype(np.float32)
    y, z = fd.reference([x, i, v])
    np.testing.assert_array_equal(y, loop_scatter(x, i, v, 1))
    np.testing.assert_array_equal(z, loop_scatter(x, i, np.float32(7), 1))
    with pytest.raises(InputError, match=r"'fusion.scatter'.*dim 0 differs"):
        fd.reference([x, i[:3], v[:3]])
    with pytest.raises(InputError, match=r"'fusion.scatter'.*src has shape \[4, 2\]"):
        fd.reference([x, i, v[:, :2]])
    with pytest.raises(InputError, match=r"'fusion.scatter'.*dim 1 of extent 0"):
        fd.reference([x[:, :0], i, v])
    fd.compile([x, i, v], arch="sm_90")  # NVRTC takes its kernels


Bad = Any


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda fd, x, i, v: fd.ops.scatter(x, v, v, 1), "argument 'index' must be an Int"),
        (lambda fd, x, i, v: fd.ops.scatter(x, i, v, 2), "argument 'dim' has dim 2, out of range"),
        (
            lambda fd, x, i, v: fd.ops.scatter(x, fd.ops.sum(i, [1]), v, 0),
            "argument 'index' has rank 1; it needs arg1's rank 2",
        ),
        (
            lambda fd, x, i, v: fd.ops.scatter(x, i, fd.ops.cast(v, DataType.Half), 1),
            "argument 'src' is Half; it needs arg1's Float",
        ),
        (
            lambda fd, x, i, v: fd.ops.scatter(fd.ops.slice(x, [0, 0], [3, 9]), i, v, 1),
            "argument 'index' has extent 4 on dim 0; it needs arg1's 3 there",
        ),
        (
            lambda fd, x, i, v: fd.ops.scatter(x, i, fd.ops.slice(v, [0, 0], [4, 1]), 1),
            "argument 'src' has shape [4, 1]; it needs the index's [4, 2]",
        ),
        (lambda fd, x, i, v: fd.ops.scatter(x, i, 2.5, 1), None),  # a number: fine
    ],
)
def test_frontend_mistakes_name_the_argument(build: Bad, message: str | None) -> None:
    with FusionDefinition("bad") as fd:
        x = fd.define_tensor([4, 9], DataType.Float)
        i = fd.define_tensor([4, 2], DataType.Int)
        v = fd.define_tensor([4, 2], DataType.Float)
        if message is None:
            fd.add_output(build(fd, x, i, v))
            return
        with pytest.raises(DefinitionError) as e:
            build(fd, x, i, v)
        assert "fd.ops.scatter" in str(e.value) and message in str(e.value)
        fd.add_output(x)


@pytest.mark.parametrize("dtype", [DataType.Half, DataType.BFloat16, DataType.Int32, DataType.Bool])
def test_kernels_compile_for_every_dtype(dtype: DataType) -> None:
    with FusionDefinition("scatter_dtypes") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        i = fd.define_tensor([-1, -1], DataType.Int32)
        v = fd.define_tensor([-1, -1], dtype)
        fd.add_output(fd.ops.scatter(x, i, v, 0))
    np_dtype = NUMPY[{"Half": "f16", "BFloat16": "bf16", "Int32": "i32", "Bool": "i1"}[dtype.name]]
    x = np.zeros((6, 5), np_dtype)
    compiled = fd.compile([x, np.zeros((2, 5), np.int32), np.zeros((2, 5), np_dtype)], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["reduction"]
