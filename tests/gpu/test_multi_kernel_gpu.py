"""Multi-kernel on the GPU: the first call of a size class times the persistent and looped
kernels of a logsumexp over 32k bf16 columns on its inputs, keeps the faster (in memory and in
the file beside the kernel cache), and a new definition reads the choice back; FUSER_MULTI_KERNEL
forces either. Every result is checked against the float64 reference.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from definitions import logsumexp_bf16
from gpu_helpers import assert_close

from fuser import FusionDefinition, dump
from fuser.multi_kernel import ENV, FILE_NAME

pytestmark = pytest.mark.gpu


def _run(fd: FusionDefinition, x: np.ndarray) -> str:
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x], compute_dtype=np.float64)
    assert_close(out, ref, "logsumexp", (1e-5, 1e-5))
    return fd._fusion_compiler().last_segments()[0].scheduler


def test_first_call_times_then_the_choice_is_kept(
    rng: np.random.Generator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSER_KERNEL_CACHE", raising=False)
    monkeypatch.delenv(ENV, raising=False)
    x = (4.0 * rng.standard_normal((1031, 32768))).astype(ml_dtypes.bfloat16)
    dump.configure("multi_kernel")
    try:
        chosen = _run(logsumexp_bf16(), x)
        err = capfd.readouterr().err
        assert "variants persistent fuser_lse_persistent_0, looped fuser_lse_looped_1" in err
        assert f"{chosen} (timed: persistent " in err and f"stored in {tmp_path}" in err
        entries = json.loads((tmp_path / FILE_NAME).read_text())
        (entry,) = entries.values()
        assert entry["names"] == ["persistent", "looped"] and len(entry["times_ms"]) == 2
        assert entry["names"][entry["index"]] == chosen
        # another definition (as another process would): the stored choice, not timed
        again = logsumexp_bf16()
        assert _run(again, x) == chosen
        assert f"{chosen} (stored: " in capfd.readouterr().err
        # new row counts of the same size class: the same choice
        assert _run(again, x[:517]) == chosen
    finally:
        dump.configure("")


@pytest.mark.parametrize(("forced", "expected"), [("0", "persistent"), ("1", "looped")])
def test_forced_variants(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, forced: str, expected: str
) -> None:
    monkeypatch.setenv(ENV, forced)
    x = (4.0 * rng.standard_normal((33, 32768))).astype(ml_dtypes.bfloat16)
    assert _run(logsumexp_bf16(), x) == expected
