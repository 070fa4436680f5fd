"""Multi-kernel on the CPU: the choice's key, the file of choices (format, atomic writes, a
corrupt or unwritable file), FUSER_MULTI_KERNEL (off, forced, a bad value), the decision, and
the variants a fusion compiles to as `fd.compile(...).summary()` lists them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from definitions import logsumexp_bf16

from fuser import FusionDefinition
from fuser.errors import InputError
from fuser.multi_kernel import (
    ENV,
    FILE_NAME,
    ChoiceStore,
    Decision,
    choice_key,
    decide,
    forced_variant,
    time_variants,
)


def test_forced_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert forced_variant() is None
    for value, expected in (("0", 0), (" 2 ", 2), ("", None)):
        monkeypatch.setenv(ENV, value)
        assert forced_variant() == expected
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(InputError, match=r"FUSER_MULTI_KERNEL='fast': expected a variant number"):
        forced_variant()


def test_choice_key_names_sources_and_size_class() -> None:
    key = choice_key(["a", "b"], ["P(1)", "Q(2)"])
    assert key == choice_key(["a", "b"], ["P(1)", "Q(2)"]) and len(key) == 64
    assert key != choice_key(["a", "c"], ["P(1)", "Q(2)"])
    assert key != choice_key(["a", "b"], ["P(1)", "Q(3)"])


def test_store_round_trip_and_atomic_writes(tmp_path: Path) -> None:
    store = ChoiceStore(tmp_path / "cache")
    assert store.load() == {}
    assert store.save("k1", Decision(1, ("persistent", "looped"), (0.3, 0.2)))
    assert store.save("k2", Decision(0, ("persistent", "looped"), (0.1, 0.2)))
    loaded = store.load()
    assert loaded["k1"] == Decision(1, ("persistent", "looped"), (0.3, 0.2), "stored")
    assert loaded["k2"].index == 0
    raw = json.loads((tmp_path / "cache" / FILE_NAME).read_text())
    assert raw["k1"] == {"index": 1, "names": ["persistent", "looped"], "times_ms": [0.3, 0.2]}
    assert os.listdir(tmp_path / "cache") == [FILE_NAME]  # no temporary file left


@pytest.mark.parametrize(
    "text", ["{not json", "[1, 2]", '{"k": {"index": 5, "names": ["a"]}}', '{"k": 3}']
)
def test_corrupt_file_reads_as_empty_and_is_replaced(tmp_path: Path, text: str) -> None:
    (tmp_path / FILE_NAME).write_text(text)
    store = ChoiceStore(tmp_path)
    assert store.load() == {}
    assert store.save("k", Decision(0, ("a", "b"), (1.0, 2.0)))
    assert store.load()["k"].names == ("a", "b")


def test_unwritable_folder_is_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = ChoiceStore(blocker / "cache")
    assert store.load() == {}
    assert not store.save("k", Decision(0, ("a", "b")))
    assert not ChoiceStore(None).save("k", Decision(0, ("a", "b")))


def test_decide_times_once_then_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    store, known = ChoiceStore(tmp_path), {}
    calls: list[int] = []

    def timer() -> tuple[float, ...]:
        calls.append(1)
        return (0.5, 0.2, 0.9)

    names = ("persistent", "looped", "other")
    decision, stored = decide("k", names, known, store, timer)
    assert (decision.index, decision.how, stored) == (1, "timed", True)
    assert decide("k", names, known, store, timer)[0].index == 1 and len(calls) == 1
    # another process: from the file, not timed again
    again, stored = decide("k", names, {}, store, timer)
    assert (again.index, again.how, stored, len(calls)) == (1, "stored", False, 1)
    # other variants under the same key: timed again
    assert decide("k", names[:2], {}, store, lambda: (0.1, 0.3))[0].index == 0
    monkeypatch.setenv(ENV, "2")
    assert decide("j", names, {}, store, timer)[0] == Decision(2, names, (), "forced")
    monkeypatch.setenv(ENV, "7")  # beyond the variants: the heuristics' first choice
    assert decide("j", names, {}, store, timer)[0].index == 0
    assert len(calls) == 1


def test_time_variants_warms_up_and_takes_medians() -> None:
    runs: list[str] = []
    clocks = iter([3.0, 1.0, 2.0, 9.0, 9.0, 5.0, 4.0, 6.0, 4.0, 4.0])

    def clock(run: object, n: int) -> float:
        assert callable(run) and n == 1
        run()
        return next(clocks)

    times = time_variants([lambda: runs.append("a"), lambda: runs.append("b")], clock)
    assert times == (3.0, 4.0)
    assert runs == ["a"] * 7 + ["b"] * 7  # 2 warm-up runs and 5 timed each


def test_summary_lists_the_variants(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A row filling a 1024-thread block: the persistent and looped kernels are both
    compiled; the first execute would time them. FUSER_MULTI_KERNEL=0 compiles the first only,
    =1 runs the looped kernel."""
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSER_KERNEL_CACHE", raising=False)  # (the tests' default: off)
    monkeypatch.delenv(ENV, raising=False)
    x = np.zeros((64, 32768), ml_dtypes.bfloat16)
    summary = logsumexp_bf16().compile([x], arch="sm_90").summary()
    assert summary.splitlines()[-1] == (
        "  multi-kernel: variants persistent fuser_lse_persistent_0, looped fuser_lse_looped_1; "
        "the first execute times them"
    )
    monkeypatch.setenv(ENV, "1")
    fd = logsumexp_bf16()
    compiled = fd.compile([x], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["looped"]
    assert compiled.multi_kernel.endswith("looped (forced)")
    host_ir = fd._fusion_compiler().host_ir()  # the variants, on the program that runs one
    assert 'fuser.multi_kernel = "variants persistent fuser_lse_persistent_0, looped' in host_ir
    assert (
        "host.launch @fuser_lse_looped_1 grid(%grid_x, %grid_y, %grid_z) block [256, 1, 1]"
        in host_ir
    )
    monkeypatch.setenv(ENV, "0")
    compiled = logsumexp_bf16().compile([x], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["persistent"]
    assert compiled.multi_kernel == "" and "multi-kernel" not in compiled.summary()
    # a stored choice is what compile describes
    monkeypatch.delenv(ENV)
    fd = logsumexp_bf16()
    fd.compile([x], arch="sm_90")
    key = next(iter(_keys(fd, x)))
    ChoiceStore(tmp_path).save(key, Decision(1, ("persistent", "looped"), (0.29, 0.22)))
    compiled = logsumexp_bf16().compile([x], arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == ["looped"]
    assert compiled.multi_kernel.endswith("looped (stored: persistent 0.2900 ms, looped 0.2200 ms)")


def _keys(fd: FusionDefinition, x: np.ndarray) -> list[str]:
    """The choice key of the variants `fd` compiled for `x` (as the builder computes it)."""
    compiled = fd.compile([x], arch="sm_90")
    assert compiled.multi_kernel
    builder = fd._fusion_compiler().builder
    variants = list(builder._variants.values())
    return [builder._multi_key(variants)]


def test_rows_below_a_full_block_have_one_variant() -> None:
    x = np.zeros((64, 4096), ml_dtypes.bfloat16)
    compiled = logsumexp_bf16().compile([x], arch="sm_90")
    assert compiled.multi_kernel == "" and [k.scheduler for k in compiled.kernels] == ["persistent"]
