"""GPU test support: tests marked `gpu` are skipped, with the reason, where no device is present.

`fuser.runtime.driver.gpu_available()` decides (False when libcuda is missing or sees no device).
The fixtures give the current device and a fresh non-blocking stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

# On the GPU machine torch 2.11 failed to import (a schema parse error in torch.library) when it
# was first imported late in the test process, after the driver tests; importing it first works.
with contextlib.suppress(ImportError):
    import torch as _torch_first  # noqa: F401

from fuser.runtime import driver

NO_GPU_REASON = (
    "no CUDA device: fuser.runtime.driver.gpu_available() is False (libcuda or GPU missing)"
)


@pytest.fixture(autouse=True)
def _skip_gpu_tests_without_a_device(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("gpu") is not None and not driver.gpu_available():
        pytest.skip(NO_GPU_REASON)


@pytest.fixture
def device() -> driver.Device:
    """The current device (its primary context made current on this thread)."""
    if not driver.gpu_available():
        pytest.skip(NO_GPU_REASON)
    return driver.current_device()


@pytest.fixture
def stream(device: driver.Device) -> Iterator[driver.Stream]:
    """A new non-blocking stream, synchronized when the test ends."""
    s = driver.Stream()
    yield s
    s.synchronize()


@pytest.fixture
def torch(device: driver.Device) -> Any:
    """The torch module, on a device torch can use (skips the test without torch or CUDA)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA support here")
    return torch
