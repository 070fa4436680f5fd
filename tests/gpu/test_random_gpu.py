"""Random numbers on the GPU: `fd.ops.uniform`, `normal`, `rand_like`, `randn_like` against the
reference (`fuser.runtime.philox`): standard uniform numbers bit for bit (their conversions
have no fused multiply-add), normal ones within the math library's units; the same numbers under two
schedules (a vectorized kernel and one a misaligned input keeps scalar); dropout with a
residual add as one kernel; the moments of a million draws; a random tensor broadcast along a
dynamic dim computed by a kernel of its own; sizes 0, 1, 3, 127 and 4097.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest
from gpu_helpers import assert_close, numpy_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime import philox
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype
from fuser.transforms.schedulers.pointwise import PointwiseParams

pytestmark = pytest.mark.gpu

SIZES = [0, 1, 3, 127, 4097]


def _draws(dtype: DataType, normal: bool) -> FusionDefinition:
    with FusionDefinition(f"draws_{dtype.name}_{normal}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        draw = fd.ops.randn_like if normal else fd.ops.rand_like
        fd.add_output(draw(x, rng_seed=seed, rng_offset=offset))
    return fd


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double])
@pytest.mark.parametrize("normal", [False, True])
def test_the_gpu_draws_the_reference_numbers(dtype: DataType, normal: bool, n: int) -> None:
    fd = _draws(dtype, normal)
    x = np.zeros((n, 33), numpy_dtype(dtype.element_type))
    inputs = [x, 20261127, 3]
    (out,) = fd.execute(inputs)
    if n:
        assert schedulers(fd, inputs) == ["pointwise"]
    (ref,) = fd.reference(inputs)
    if not normal:
        np.testing.assert_array_equal(out, ref)  # bit for bit
    else:
        tol = (2e-6, 2e-6) if dtype == DataType.Float else (1e-13, 1e-13)
        assert_close(out, ref, "randn", tol)


def test_the_numbers_do_not_depend_on_the_schedule() -> None:
    """rand_like beside a read of its input: of a contiguous input (a vectorized kernel) and of
    a misaligned view (the read keeps the kernel scalar), the same numbers; a second seed or
    offset gives others."""
    torch = pytest.importorskip("torch")
    with FusionDefinition("draws_beside_a_read") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.rand_like(x, rng_seed=seed, rng_offset=offset))
        fd.add_output(fd.ops.add(x, 1.0))
    base = torch.zeros(256 * 1032 + 1, device="cuda")
    aligned = base[: 256 * 1032].view(256, 1032)
    misaligned = base[1:].view(256, 1032)
    plans = [fd.compile([v, 5, 0]).kernels[0].heuristics for v in (aligned, misaligned)]
    assert all(isinstance(p, PointwiseParams) for p in plans)
    widths = [cast(PointwiseParams, p).vector_width for p in plans]
    assert widths[0] > 1 and widths[1] == 1, widths  # two schedules
    a, _ = fd.execute([aligned, 5, 0])
    b, _ = fd.execute([misaligned, 5, 0])
    assert torch.equal(a, b)
    c, _ = fd.execute([aligned, 5, 1])
    d, _ = fd.execute([aligned, 6, 0])
    assert not torch.equal(a, c) and not torch.equal(a, d)


def test_dropout_and_a_residual_add_are_one_kernel(rng: np.random.Generator) -> None:
    p = 0.1
    with FusionDefinition("dropout") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        r = fd.define_tensor([-1, -1], DataType.BFloat16)
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        u = fd.ops.uniform(0.0, 1.0, x.shape(), rng_seed=seed, rng_offset=offset)
        kept = fd.ops.where(fd.ops.ge(u, p), fd.ops.mul(x, 1 / (1 - p)), 0.0)
        fd.add_output(fd.ops.cast(fd.ops.add(kept, r), DataType.BFloat16))
        fd.add_output(fd.ops.ge(u, p))
    xs = (rng.standard_normal((257, 1031)) + 0.5).astype(BFLOAT16)
    rs = rng.standard_normal((257, 1031)).astype(BFLOAT16)
    inputs = [xs, rs, 77, 12]
    out, mask = fd.execute(inputs)
    assert schedulers(fd, inputs) == ["pointwise"]
    ref_out, ref_mask = fd.reference(inputs, compute_dtype=np.float64)
    np.testing.assert_array_equal(mask, ref_mask)
    assert_close(out, ref_out, "dropout")
    assert abs(mask.mean() - (1 - p)) < 0.005


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
def test_a_million_draws_have_the_distributions_moments(dtype: DataType) -> None:
    with FusionDefinition() as fd:
        u = fd.ops.uniform(-1.0, 3.0, [1000, 1000], rng_seed=1, rng_offset=0, dtype=dtype)
        z = fd.ops.normal(2.0, 0.5, [1000, 1000], rng_seed=1, rng_offset=1, dtype=dtype)
        fd.add_output(u)
        fd.add_output(z)
    u_out, z_out = (o.numpy().astype(np.float64) for o in fd.execute([]))
    assert u_out.min() >= -1.0 and u_out.max() < 3.0  # never maxval, rounded or not
    assert abs(u_out.mean() - 1.0) < 0.01 and abs(u_out.var() - 16 / 12) < 0.01
    assert abs(z_out.mean() - 2.0) < 0.01 and abs(z_out.std() - 0.5) < 0.01


def test_a_random_row_broadcast_along_a_dynamic_dim() -> None:
    """rand of [?] broadcast to [?, ?]: the pointwise kernel would read the row at the wrong
    index where the `?` is 1, so the random row is a kernel of its own (two kernels)."""
    torch = pytest.importorskip("torch")
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        row = fd.ops.uniform(0.0, 1.0, [x.size(1)], rng_seed=9, rng_offset=0)
        fd.add_output(fd.ops.add(x, fd.ops.broadcast_in_dim(row, x.shape(), [1])))
    for shape in ((5, 7), (1, 7), (5, 1)):
        xs = np.zeros(shape, np.float32)
        (out,) = fd.execute([torch_of(torch, xs)])
        (ref,) = fd.reference([xs])
        np.testing.assert_array_equal(numpy_of(torch, out), ref)
        row = philox.random((shape[1],), np.dtype(np.float32), 9, 0, False)
        np.testing.assert_array_equal(ref, np.broadcast_to(row, shape))
    assert len(schedulers(fd, [np.zeros((5, 7), np.float32)])) == 2
