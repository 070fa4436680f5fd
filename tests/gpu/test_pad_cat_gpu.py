"""`pad` and `cat` on the GPU, against the float64 reference.

A resize op fuses into the pointwise kernel, which reads each operand shifted and predicated
(`iteration_space.Shifted`); the tests run under compute-sanitizer in the session that changes
them. Covered:
- pads with positive, negative and zero widths and a fill, in f32, f16 and bf16, at 0, 1, 3,
  127 and 4097 rows, read by pointwise ops;
- a cat of three operands of mixed extents, one transposed (non-contiguous), one a row
  broadcast to the others', and the same operand twice;
- the rotation of a rotary embedding at head sizes whose halves take 8-wide, 2-wide and no
  vectors;
- a pad of a reduction's result (a second kernel) and nested resizes over integers and bools;
- a permuted output beside its source (each stored at its own offsets).
The transformer regions (tests/gpu/test_thunder_regions_gpu.py) add the rotary embedding's
forward and backward in Thunder's form.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from definitions import permuted_beside_source, rotate
from gpu_helpers import DTYPES, check_against_reference, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition

pytestmark = pytest.mark.gpu

F32 = DataType.Float
ROWS = [0, 1, 3, 127, 4097]


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_pads_read_by_pointwise_ops(
    rng: np.random.Generator, torch: Any, dtype: DataType, rows: int
) -> None:
    with FusionDefinition(f"pads_{dtype.name}") as fd:
        x = fd.define_tensor([-1, 40], dtype)
        y = fd.define_tensor([-1, 45], dtype)
        xf = fd.ops.mul(fd.ops.cast(x, F32), 2.0)
        padded = fd.ops.pad(xf, [-3, 8], -1.5)  # [rows, 45]: 3 cropped, 8 filled
        fd.add_output(fd.ops.cast(fd.ops.add(padded, fd.ops.cast(y, F32)), dtype))
        fd.add_output(fd.ops.pad(x, [8, 0]))  # a pad that is the whole kernel
    a = random_of(rng, (rows, 40), dtype)
    b = random_of(rng, (rows, 45), dtype)
    check_against_reference(fd, torch, [torch_of(torch, a), torch_of(torch, b)], [a, b])


@pytest.mark.parametrize("rows", [1, 127, 4097])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_a_cat_of_strided_and_broadcast_operands(
    rng: np.random.Generator, torch: Any, dtype: DataType, rows: int
) -> None:
    """cat([x (transposed in memory), y, b (one row broadcast to x's), x], dim 1)."""
    with FusionDefinition(f"cats_{dtype.name}") as fd:
        x = fd.define_tensor([-1, 16], dtype)
        y = fd.define_tensor([-1, 3], dtype)
        b = fd.define_tensor([1, 8], dtype)
        rows_of_b = fd.ops.broadcast_in_dim(b, shape=[x.size(0), 8], broadcast_dims=[0, 1])
        joined = fd.ops.cat([x, y, rows_of_b, x], 1)
        fd.add_output(fd.ops.cast(fd.ops.sigmoid(fd.ops.cast(joined, F32)), dtype))
    a = random_of(rng, (16, rows), dtype).T  # a transposed view
    c = random_of(rng, (rows, 3), dtype)
    d = random_of(rng, (1, 8), dtype)
    views = [torch_of(torch, a.T).t(), torch_of(torch, c), torch_of(torch, d)]
    check_against_reference(fd, torch, views, [a, c, d])
    assert len(schedulers(fd, views)) == 1


@pytest.mark.parametrize("d", [128, 12, 10])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_a_rotation_is_one_kernel(
    rng: np.random.Generator, torch: Any, dtype: DataType, d: int
) -> None:
    fd = rotate(dtype, d)
    x = random_of(rng, (3, 127, d), dtype)
    c = random_of(rng, (127, d), dtype)
    s = random_of(rng, (127, d), dtype)
    views = [torch_of(torch, a) for a in (x, c, s)]
    check_against_reference(fd, torch, views, [x, c, s])
    assert schedulers(fd, views) == ["pointwise"]


def test_a_cos_table_from_the_same_frequencies_twice(rng: np.random.Generator, torch: Any) -> None:
    """Mistral's `cos(cat([f, f], -1))` of permuted frequencies [1, d/2, t] -> [1, t, d]."""
    with FusionDefinition("freqs") as fd:
        f = fd.define_tensor([1, 32, 127], F32)
        ft = fd.ops.permute(f, [0, 2, 1])
        both = fd.ops.cat([ft, ft], dim=-1, manual_padding=0)
        fd.add_output(fd.ops.cast(fd.ops.cos(both), DataType.BFloat16))
        fd.add_output(fd.ops.cast(fd.ops.sin(both), DataType.BFloat16))
    a = random_of(rng, (1, 32, 127), F32)
    check_against_reference(fd, torch, [torch_of(torch, a)], [a])


@pytest.mark.parametrize("columns", [1, 4097])
def test_a_pad_of_column_sums(rng: np.random.Generator, torch: Any, columns: int) -> None:
    with FusionDefinition("pad_sums") as fd:
        x = fd.define_tensor([-1, columns], F32)
        fd.add_output(fd.ops.exp(fd.ops.mul(fd.ops.pad(fd.ops.sum(x, [0]), [1, 2], -1.0), 0.1)))
    a = random_of(rng, (7, columns), F32)
    check_against_reference(fd, torch, [torch_of(torch, a)], [a])
    assert schedulers(fd, [torch_of(torch, a)]) == ["reduction", "pointwise"]


@pytest.mark.parametrize("dtype", [DataType.Int, DataType.Int32, DataType.Bool], ids=str)
def test_nested_resizes_of_integers_and_bools(
    rng: np.random.Generator, torch: Any, dtype: DataType
) -> None:
    with FusionDefinition("nested") as fd:
        x = fd.define_tensor([3, 4], dtype)
        y = fd.define_tensor([3, 2], dtype)
        inner = fd.ops.cat([x, fd.ops.pad(y, [1, 1, 0, 0], 1)], 1)
        fd.add_output(fd.ops.pad(inner, [0, 1, 2, 0], 0))
    from fuser.runtime.dtypes import numpy_dtype

    def draw(shape: tuple[int, ...]) -> np.ndarray:
        values = rng.integers(-5, 6, shape)
        return (values > 0 if dtype == DataType.Bool else values).astype(
            numpy_dtype(dtype.element_type)
        )

    a, b = draw((3, 4)), draw((3, 2))
    check_against_reference(fd, torch, [torch_of(torch, a), torch_of(torch, b)], [a, b])


def test_a_permuted_output_beside_its_source(rng: np.random.Generator, torch: Any) -> None:
    """Two outputs of the space's shape, one a permute of the other: each at its own offsets."""
    fd = permuted_beside_source()
    for n in (4, 17):
        a = random_of(rng, (n, n), F32)
        check_against_reference(fd, torch, [torch_of(torch, a)], [a])
