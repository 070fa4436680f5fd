"""The transformer block's fusible regions in Thunder's form (tests/thunder_regions.py) on the
GPU, in f32 and bf16, against the float64 reference: RMSNorm, the q/k/v split into heads, the
causal-masked softmax (its mask from iotas), SwiGLU, the heads merge and a cross-entropy forward
(take_along_axis), and the rotary embedding forward (slice, cat) and backward (pads), each as
the kernels `thunder_regions.KERNELS` names.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import check_against_reference, schedulers, torch_of
from thunder_regions import KERNELS, REGIONS, inputs_of

from fuser import DataType

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(REGIONS))
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_a_region_runs_as_its_kernels(
    rng: np.random.Generator, torch: Any, name: str, dtype: DataType
) -> None:
    fd, _ = REGIONS[name](dtype)
    inputs = inputs_of(rng, fd)
    views = [torch_of(torch, a) if isinstance(a, np.ndarray) else a for a in inputs]
    check_against_reference(fd, torch, views, inputs)
    assert schedulers(fd, inputs) == KERNELS[name]
