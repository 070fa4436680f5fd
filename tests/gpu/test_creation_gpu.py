"""`full`, `zeros` and `ones` on the GPU, against the reference: a fusion whose only output is a
filled tensor (no tensor input at all), zero-size and odd shapes, f32, f16 and bf16, a fill
read by a pointwise op beside an input (one kernel), and a Bool `ones` picking with `where`.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import DTYPES, check_against_reference, numpy_of, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.dtypes import numpy_dtype

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(0, 3), (1,), (3, 127), (4097, 5)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_a_fill_alone(torch: Any, dtype: DataType, shape: tuple[int, ...]) -> None:
    with FusionDefinition(f"fill_{dtype.name}") as fd:
        fd.add_output(fd.ops.full(list(shape), -1.5, dtype))
        fd.add_output(fd.ops.zeros(list(shape), dtype))
    filled, zeros = (numpy_of(torch, o) for o in fd.execute([]))
    expected = np.full(shape, -1.5).astype(numpy_dtype(dtype.element_type))
    np.testing.assert_array_equal(filled, expected)
    np.testing.assert_array_equal(zeros, np.zeros_like(expected))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_a_fill_beside_an_input(rng: np.random.Generator, torch: Any, dtype: DataType) -> None:
    """x * full(x.shape(), s) + where(ones(bool), 1, 0): one kernel, no filled tensor written."""
    with FusionDefinition(f"fill_x_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        s = fd.define_scalar(DataType.Double)
        scaled = fd.ops.mul(x, fd.ops.full(x.shape(), s, dtype))
        mask = fd.ops.ones([x.size(0), x.size(1)], DataType.Bool)
        fd.add_output(fd.ops.add(scaled, fd.ops.where(mask, 1.0, 0.0)))
    a = random_of(rng, (127, 4097), dtype)
    check_against_reference(fd, torch, [torch_of(torch, a), 0.5], [a, 0.5])
    assert schedulers(fd, [a, 0.5]) == ["pointwise"]
