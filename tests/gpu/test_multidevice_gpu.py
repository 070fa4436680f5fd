"""Sharded fusions on GPUs: a mesh of one device in this process, and two processes on a 2-GPU
machine (`fuser-launch -n 2 tests/gpu/multidevice_worker.py`) against single-GPU results and the
float64 reference; a failed rank and a stalled collective end every process with a clear error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fuser.runtime import driver

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from multidevice_definitions import layer_norm, rms_norm, tp_mlp

pytestmark = pytest.mark.gpu

WORKER = Path(__file__).with_name("multidevice_worker.py")


def _gpus() -> int:
    if not driver.gpu_available():
        return 0
    import torch

    return torch.cuda.device_count()


TWO_GPUS = pytest.mark.skipif(_gpus() < 2, reason="needs 2 GPUs (one process per GPU)")


def _launch(
    mode: str, timeout: float, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fuser.launch", "-n", "2", str(WORKER), mode],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NCCL_NVLS_ENABLE": "1", **env},  # the launcher must force it off
    )
    return done, time.monotonic() - start


def test_one_device_mesh() -> None:
    """A fusion placed on a mesh of one device runs in this process (no communicator): the
    stages and the collectives of one device, against the reference."""
    import torch

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((127, 96)) + 0.25).astype(np.float32)
    w, b = rng.standard_normal(96).astype(np.float32), rng.standard_normal(96).astype(np.float32)
    for fd, inputs in (
        (rms_norm(1, 96), [x, w]),
        (layer_norm(1, 96), [x, w, b]),
        (
            tp_mlp(1, 96, 64),
            [
                x,
                rng.standard_normal((64, 96)).astype(np.float32),
                rng.standard_normal((96, 64)).astype(np.float32),
            ],
        ),
    ):
        (got,) = fd.execute([torch.from_numpy(a).cuda() for a in inputs])
        (want,) = fd.reference(inputs, compute_dtype=np.float64)
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-3, atol=1e-3)


@TWO_GPUS
def test_two_processes_match_one_gpu() -> None:
    done, _ = _launch("check", timeout=540)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for rank in (0, 1):
        assert f"rank {rank}: " in done.stdout and "checks passed" in done.stdout, done.stdout


@TWO_GPUS
def test_failed_rank_stops_every_process() -> None:
    done, seconds = _launch("fail", timeout=300)
    assert done.returncode != 0
    assert "rank 1" in done.stderr and "fails on purpose" in done.stderr, done.stderr[-3000:]
    assert "finished an allreduce" not in done.stdout
    assert seconds < 120, seconds


@TWO_GPUS
def test_stalled_collective_times_out() -> None:
    done, seconds = _launch("stall", timeout=300, FUSER_COMM_TIMEOUT="10")
    assert done.returncode != 0
    timed_out = ("timed out", "timing out", "CommunicationError")
    assert any(t in done.stderr for t in timed_out), done.stderr[-3000:]
    assert "rank 0" in done.stderr, done.stderr[-3000:]
    assert seconds < 150, seconds


@TWO_GPUS
def test_readme_example_on_two_gpus(tmp_path: Path) -> None:
    """The README's multi-GPU example, as a reader runs it: `fuser-launch -n 2 rms_norm_tp.py`."""
    from readme_examples import blocks

    (example,) = [b for b in blocks("python") if "fuser-launch -n 2" in b]
    script = tmp_path / "rms_norm_tp.py"
    script.write_text(example)
    done = subprocess.run(
        [sys.executable, "-m", "fuser.launch", "-n", "2", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        assert f"[rank {rank}] rank {rank}: my block of y is (4096, 1024)" in done.stdout
