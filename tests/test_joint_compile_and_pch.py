"""Several kernels as one NVRTC program (`compile_together`), NVRTC's precompiled headers
(`nvrtc_pch`), the header digest in the kernel-cache key and the background load of NVRTC (no
GPU needed)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fuser.errors import CompilationError
from fuser.runtime import compiled_kernel, kernel_cache
from fuser.runtime.compiled_kernel import (
    CompiledKernel,
    compile_together,
    header_digest,
    joint_source,
    nvrtc_compile,
    preload_nvrtc,
)
from fuser.runtime.nvrtc_pch import PCH, WRITE_AFTER, split_includes


def source(name: str, value: str = "1.0f", half: bool = True) -> str:
    """A generated-style kernel: sorted `#include` lines, then one `extern "C"` kernel."""
    includes = '#include "fuser/core.cuh"\n' + ("#include <cuda_bf16.h>\n" if half else "")
    store = f"__float2bfloat16_rn({value})" if half else value
    element = "__nv_bfloat16" if half else "float"
    return (
        f"{includes}\n"
        f'extern "C" __global__ void {name}(Tensor<{element}, 1> x) {{\n'
        f"  x.data[threadIdx.x * x.stride[0]] = {store};\n}}\n"
    )


def _shift(rng: np.random.Generator) -> str:
    """A define no other test uses: a new PCH and cache key for each test."""
    return f"-DFUSER_TEST_{rng.integers(1 << 62)}=1"


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Records the kernel names of each `nvrtc_compile` call."""
    calls: list[list[str]] = []
    real = compiled_kernel.nvrtc_compile

    def counted(src: str, name: str | Sequence[str], *args: Any, **kw: Any) -> tuple[bytes, str]:
        calls.append([name] if isinstance(name, str) else list(name))
        return real(src, name, *args, **kw)

    monkeypatch.setattr(compiled_kernel, "nvrtc_compile", counted)
    return calls


def _spy_pch(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, for each NVRTC compile, whether it loaded a precompiled header."""
    used: list[bool] = []
    real = compiled_kernel._run_nvrtc

    def spy(src: str, names: Sequence[str], opts: Sequence[str], pch: Any) -> Any:
        used.append(pch is not None)
        return real(src, names, opts, pch)

    monkeypatch.setattr(compiled_kernel, "_run_nvrtc", spy)
    return used


@pytest.fixture
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kernel cache and precompiled headers on, in a folder of the test's own."""
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.setenv("FUSER_PCH", "1")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "_pch_folders", {})  # a PCH folder under tmp_path
    return tmp_path


# ---- joint compiles ----------------------------------------------------------------------------


def test_split_includes() -> None:
    head, body = split_includes('#include "a.h"\n\n  #include <b.h>\nint x;\n#include "c.h"\n')
    assert head == '#include "a.h"\n\n  #include <b.h>\n'
    assert body == 'int x;\n#include "c.h"\n'
    assert split_includes("int x;") == ("", "int x;")


def test_joint_source_merges_the_includes() -> None:
    joint = joint_source([source("a", half=False), source("b"), source("c", half=False)])
    head, _, body = joint.partition("\n\n")
    assert head.splitlines() == ['#include "fuser/core.cuh"', "#include <cuda_bf16.h>"]
    assert "#include" not in body and [n in body for n in ("void a(", "void b(", "void c(")]


def test_a_joint_compile_yields_every_function_in_one_cubin(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    opts = [_shift(rng)]
    kernels = [
        CompiledKernel(source(n, half=n != "b"), n, arch="sm_90", extra_options=opts)
        for n in ("a", "b", "c")
    ]
    compile_together(kernels)
    assert calls == [["a", "b", "c"]]  # one NVRTC program
    cubin = kernels[0].cubin
    assert cubin is not None and all(k.cubin is cubin for k in kernels)
    assert all(f"{n}\0".encode() in cubin for n in ("a", "b", "c"))
    compile_together(kernels)  # compiled: nothing to do
    assert len(calls) == 1


def test_kernels_with_different_register_caps_compile_apart(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    opts = [_shift(rng)]
    kernels = [
        CompiledKernel(source("a"), "a", arch="sm_90", block_size=128, extra_options=opts),
        CompiledKernel(source("b"), "b", arch="sm_90", block_size=1024, extra_options=opts),
        CompiledKernel(source("c"), "c", arch="sm_90", block_size=128, extra_options=opts),
    ]
    compile_together(kernels)
    assert sorted(calls) == [["a", "c"], ["b"]]
    assert "--maxrregcount=64" in kernels[1].options and kernels[1].cubin != kernels[0].cubin
    assert kernels[0].cubin is kernels[2].cubin


def test_a_joint_cubin_is_kept_and_found_in_the_kernel_cache(
    rng: np.random.Generator, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = [_shift(rng)]

    def kernels() -> list[CompiledKernel]:
        return [CompiledKernel(source(n), n, arch="sm_90", extra_options=opts) for n in "ab"]

    first = kernels()
    compile_together(first)
    (path,) = (cache_on / "kernels").glob("*.cubin")
    assert first[0].cubin is not None and first[0].cubin in path.read_bytes()
    calls = _counting(monkeypatch)
    again = kernels()  # as in a new process
    compile_together(again)
    assert calls == [] and again[1].cubin == first[0].cubin
    assert again[0].log == "cubin from the kernel cache"


def test_a_rejected_kernel_in_a_joint_compile_names_that_kernel(rng: np.random.Generator) -> None:
    opts = [_shift(rng)]
    bad = source("bad_kernel", value="undeclared_name")
    kernels = [
        CompiledKernel(source("good_a"), "good_a", arch="sm_90", extra_options=opts),
        CompiledKernel(bad, "bad_kernel", arch="sm_90", extra_options=opts),
        CompiledKernel(source("good_c"), "good_c", arch="sm_90", extra_options=opts),
    ]
    with pytest.raises(CompilationError) as info:
        compile_together(kernels)
    message = str(info.value)
    assert "kernel 'bad_kernel'" in message and "undeclared_name" in message
    assert "good_a" not in message.splitlines()[0]
    assert kernels[0].cubin is not None  # the kernels that compile are compiled


# ---- the header digest in the cache key --------------------------------------------------------


def test_a_header_change_changes_the_cache_key(
    rng: np.random.Generator, tmp_path: Path, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = tmp_path / "include"
    shutil.copytree(compiled_kernel.fuser_include_dir(), headers)
    monkeypatch.setattr(compiled_kernel, "fuser_include_dir", lambda: str(headers))
    header_digest.cache_clear()
    try:
        before = header_digest()
        core = headers / "fuser" / "core.cuh"
        core.write_text(core.read_text() + "// one more comment\n")
        header_digest.cache_clear()
        after = header_digest()
    finally:
        header_digest.cache_clear()
    assert before != after
    key = kernel_cache.cache_key("src", "k", ["-O3"], (13, 5), before)
    assert key != kernel_cache.cache_key("src", "k", ["-O3"], (13, 5), after)
    # a kernel compiled with the old headers is not served for the new ones
    opts = [_shift(rng)]
    monkeypatch.setattr(compiled_kernel, "header_digest", lambda: before)
    CompiledKernel(source("k"), "k", arch="sm_90", extra_options=opts).compile()
    monkeypatch.setattr(compiled_kernel, "header_digest", lambda: after)
    again = CompiledKernel(source("k"), "k", arch="sm_90", extra_options=opts)
    again.compile()
    assert again.log != "cubin from the kernel cache"
    assert len(list((cache_on / "kernels").glob("*.cubin"))) == 2


# ---- precompiled headers -----------------------------------------------------------------------


def _pch_files(folder: Path) -> list[Path]:
    return list((folder / "pch").glob("*/*.pch"))


def _compile_until_written(name: str, opts: list[str]) -> bytes:
    """Compile `source(name)` until its prefix's PCH is written; the cubin."""
    for _ in range(WRITE_AFTER):
        cubin, _ = nvrtc_compile(source(name), name, "sm_90", opts)
    PCH.wait()
    return cubin


def test_a_recurring_prefix_gets_a_pch_that_gives_the_same_cubin(
    rng: np.random.Generator, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = [_shift(rng)]
    monkeypatch.setenv("FUSER_PCH", "0")
    plain = nvrtc_compile(source("other"), "other", "sm_90", opts)[0]
    monkeypatch.setenv("FUSER_PCH", "1")
    used = _spy_pch(monkeypatch)
    for n in range(1, WRITE_AFTER + 1):
        nvrtc_compile(source("first"), "first", "sm_90", opts)
        PCH.wait()
        assert len(_pch_files(cache_on)) == (n == WRITE_AFTER)  # for a prefix that recurs
    (pch,) = _pch_files(cache_on)
    assert pch.parent.stat().st_mode & 0o777 == 0o700  # this process's own folder
    cubin, log = nvrtc_compile(source("other"), "other", "sm_90", opts)
    assert used == [False] * WRITE_AFTER + [True] and cubin == plain and "precompiled" not in log


def test_a_damaged_pch_is_never_used(
    rng: np.random.Generator, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = [_shift(rng)]
    plain = _compile_until_written("k", opts)
    (pch,) = _pch_files(cache_on)
    used = _spy_pch(monkeypatch)
    with open(pch, "r+b") as f:  # cut short: NVRTC would crash on it, so it is not handed over
        f.truncate(pch.stat().st_size // 2)
    assert nvrtc_compile(source("k"), "k", "sm_90", opts)[0] == plain
    assert used == [False]


def test_a_pch_nvrtc_refuses_is_dropped_and_the_kernel_compiles(
    rng: np.random.Generator, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = [_shift(rng)]
    plain = _compile_until_written("k", opts)
    (pch,) = _pch_files(cache_on)
    info = pch.stat()
    with open(pch, "r+b") as f:  # a damaged header, same size and time: NVRTC refuses it
        f.write(os.urandom(256))
    os.utime(pch, ns=(info.st_atime_ns, info.st_mtime_ns))
    used = _spy_pch(monkeypatch)
    cubin, log = nvrtc_compile(source("k"), "k", "sm_90", opts)
    assert cubin == plain and "precompiled" not in log
    assert used == [True, False]  # refused, compiled again without it
    nvrtc_compile(source("k"), "k", "sm_90", opts)
    assert used == [True, False, False]  # and never offered again


@pytest.mark.parametrize("how", ["off", "no folder", "folder gone"])
def test_without_a_usable_pch_folder_kernels_still_compile(
    how: str, rng: np.random.Generator, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = [_shift(rng)]
    if how == "off":
        monkeypatch.setenv("FUSER_PCH", "0")
    elif how == "no folder":
        blocker = cache_on / "file"
        blocker.write_text("not a folder")
        monkeypatch.setenv("FUSER_CACHE_DIR", str(blocker))
    else:
        folder = kernel_cache.pch_folder()
        assert folder is not None
        shutil.rmtree(folder)  # the PCH cannot be written there
    used = _spy_pch(monkeypatch)
    for name in ("a", "b", "c"):
        cubin, _ = nvrtc_compile(source(name), name, "sm_90", opts)
        assert cubin[:4] == b"\x7fELF"
        PCH.wait()
    assert used == [False, False, False]
    assert how != "no folder" or kernel_cache.pch_folder() is None


def test_a_rejected_kernel_is_a_compilation_error_with_a_pch(
    rng: np.random.Generator, cache_on: Path
) -> None:
    opts = [_shift(rng)]
    _compile_until_written("ok", opts)
    bad = CompiledKernel(source("broken", value="1.0f +"), "broken", arch="sm_90")
    bad.extra_options = tuple(opts)
    with pytest.raises(CompilationError, match=r"kernel 'broken'.*\n.*error") as info:
        bad.compile()
    assert "source written to" in str(info.value)


def test_the_pch_folder_follows_the_cache_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FUSER_PCH", "1")
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "0")
    assert kernel_cache.pch_folder() is None
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")  # turned on later in the process
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    folder = kernel_cache.pch_folder()
    assert folder is not None and folder.parent == tmp_path / "pch"
    assert kernel_cache.pch_folder() == folder  # one per process and cache folder
    monkeypatch.setenv("FUSER_PCH", "0")
    assert kernel_cache.pch_folder() is None


@pytest.mark.parametrize(("cpus", "on"), [(2, False), (kernel_cache.PCH_MIN_CPUS, True)])
def test_pch_is_on_by_default_only_with_cpus_to_spare(
    cpus: int, on: bool, cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FUSER_PCH")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    assert (kernel_cache.pch_folder() is not None) == on
    monkeypatch.setenv("FUSER_PCH", "1")  # asked for: on whatever the CPUs
    assert kernel_cache.pch_folder() is not None


def test_stale_pch_folders_are_removed(cache_on: Path) -> None:
    root = cache_on / "pch"
    old, recent = root / "1-old", root / "2-recent"
    for folder in (old, recent):
        folder.mkdir(parents=True)
        (folder / "x.pch").write_bytes(b"x")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    mine = kernel_cache.pch_folder()
    assert mine is not None and mine.parent == root and mine.is_dir()
    assert not old.exists() and recent.exists()


# ---- loading NVRTC in the background -----------------------------------------------------------


def test_preload_starts_one_thread_and_compiles_join_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled_kernel, "_preload", None)
    monkeypatch.setattr(compiled_kernel, "_loaded", threading.Event())
    started: list[Callable[[], None]] = []
    real = compiled_kernel._load_nvrtc

    def load() -> None:
        started.append(load)
        real()

    monkeypatch.setattr(compiled_kernel, "_load_nvrtc", load)
    preload_nvrtc()
    thread = compiled_kernel._preload
    preload_nvrtc()
    assert thread is not None and compiled_kernel._preload is thread
    cubin, _ = nvrtc_compile(source("after_preload", half=False), "after_preload", "sm_80")
    assert compiled_kernel._loaded.is_set() and cubin[:4] == b"\x7fELF"
    thread.join()
    assert started == [load]
