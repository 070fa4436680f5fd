"""Shared pytest fixtures: `rng`, a fresh random generator for every test.

Every run draws new data (a new session seed), so tests keep probing fresh inputs; the seed is
printed with each test's output, and `FUSER_SEED=<seed> pytest ...` replays a failing run.
"""

from __future__ import annotations

import os
import secrets
import zlib

import numpy as np
import pytest

SESSION_SEED = int(os.environ.get("FUSER_SEED", secrets.randbits(32)))


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the session seed and the test's id (so each test differs)."""
    print(f"FUSER_SEED={SESSION_SEED} ({request.node.nodeid})")
    return np.random.default_rng([SESSION_SEED, zlib.crc32(request.node.nodeid.encode())])


@pytest.fixture(autouse=True)
def _no_kernel_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests compile every kernel they check with NVRTC and write nothing to the user's cache
    (the kernel-cache tests turn it on in a folder of their own). `FUSER_TEST_KERNEL_CACHE=1`
    keeps the cache on: `SANITIZE=1 bash benchmarks/gpu_check.sh` reruns the GPU tests under
    compute-sanitizer on the cubins its plain run compiled, in a folder of its own. The
    runnable store stays off either way (a test that counts compiled kernels must not be served
    an earlier test's runnable); its tests turn it on."""
    if os.environ.get("FUSER_TEST_KERNEL_CACHE") != "1":
        monkeypatch.setenv("FUSER_KERNEL_CACHE", "0")
    monkeypatch.setenv("FUSER_RUNNABLE_STORE", "0")


@pytest.fixture(autouse=True)
def _python_definitions_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every FusionDefinition a test completes is printed as Python (`python_definition`) and
    the text re-run: it must define the same IR. So the printed form round-trips over the whole
    test suite's definitions."""
    from fuser.frontend import FusionDefinition

    original = FusionDefinition.__exit__
    checking = False

    def exit_and_check(fd: FusionDefinition, exc_type: object, exc: object, tb: object) -> None:
        nonlocal checking
        original(fd, exc_type, exc, tb)
        if exc_type is not None or checking:
            return
        checking = True
        try:
            text = fd.python_definition()
            namespace: dict[str, object] = {}
            exec(compile(text, f"<python_definition of {fd.name}>", "exec"), namespace)
            again = namespace["fd"]
            assert isinstance(again, FusionDefinition)
            assert again.fusion_ir() == fd.fusion_ir(), f"not the same IR when re-run:\n{text}"
            assert (again.streams, again.welford) == (fd.streams, fd.welford), text
        finally:
            checking = False

    monkeypatch.setattr(FusionDefinition, "__exit__", exit_and_check)
