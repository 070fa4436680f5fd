"""The transformer block's fusible regions in Thunder's form (tests/thunder_regions.py) on the
CPU: each defines as Thunder writes it, its reference interpreter agrees with numpy (float64),
and it compiles to the kernels expected (NVRTC, no GPU). tests/gpu/test_thunder_regions_gpu.py
runs them on the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from thunder_regions import KERNELS, REGIONS, inputs_of

from fuser import DataType


@pytest.mark.parametrize("name", sorted(REGIONS))
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_a_region_defines_and_compiles(
    rng: np.random.Generator, name: str, dtype: DataType
) -> None:
    fd, expected = REGIONS[name](dtype)
    inputs = inputs_of(rng, fd)
    for got, want in zip(fd.reference(inputs, np.float64), expected(*inputs), strict=True):
        exact = np.asarray(got).dtype in (np.float32, np.float64)
        tolerance = 1e-6 if exact else 2.0**-8  # a bf16 output is rounded to bf16 once
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tolerance, atol=1e-9)
    kernels = [k.scheduler for k in fd.compile(inputs, arch="sm_90").kernels]
    assert kernels == KERNELS[name], kernels
