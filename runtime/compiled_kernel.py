"""CUDA C++ source to a loaded kernel: NVRTC compilation, register caps, raw-source launches.

`nvrtc_compile` turns source into a cubin (SASS for one `sm_XY`): fuser never ships PTX, because
the NVRTC here may be newer than the driver that would have to JIT it. `CompiledKernel` owns one
kernel's source, options and cubin (kept on disk by `kernel_cache` for later processes), and loads
it lazily on the GPU; `RtcKernel` adds a convenient `launch` that packs Python arguments, for
tests and hand-written CUDA. The code generator's kernels take every tensor as the struct
`Tensor<T, N>` whose bytes `pack_tensor_param` produces.

A first call in a new process spends most of its time in NVRTC, so three things cut it:
- **Joint compiles.** `compile_together` compiles the kernels of one program that share their
  options as one NVRTC program (one cubin holding every function): the headers are parsed once,
  not once a kernel. Kernels with different options (`--maxrregcount`) cannot share a program.
- **Precompiled headers.** Once a kernel's `#include` prefix recurs in a process, later kernels
  with that prefix load NVRTC's precompiled header of it (`nvrtc_pch`); writing one is
  `_write_pch`.
- **Loading NVRTC early.** `preload_nvrtc()` loads the library on a thread while the fusion is
  scheduled; the first compile waits until it is loaded.

Kernels are looked up by name, so a kernel must be declared `extern "C" __global__`.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import os
import re
import struct
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from fuser import dump
from fuser.errors import CompilationError

from . import driver, kernel_cache
from .arrays import DeviceArray, view_of
from .nvrtc_pch import PCH, PchUse, split_includes

#: Registers of one SM on every architecture fuser targets (sm_80 .. sm_120).
DEFAULT_REGISTERS_PER_SM = 65536
_WARP = 32
_MAX_REGISTERS = 255
_MAX_THREADS_PER_BLOCK = 1024

_ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")


# --------------------------------------------------------------------------------------------
# NVRTC, loaded on first use or in the background
# --------------------------------------------------------------------------------------------

_preload: threading.Thread | None = None
_preload_lock = threading.Lock()
_loaded = threading.Event()  # set once the background thread has loaded NVRTC (or failed to)


@functools.cache
def _bindings() -> ModuleType:
    """cuda-python's NVRTC bindings, imported on first use: importing them does not load the
    library yet, but loads `cuda.pathfinder` (about 40 ms on an H100 node's CPU), which a
    process that runs only stored runnables (`fuser.runtime.runnable_store`) never needs."""
    import cuda.bindings.nvrtc as nvrtc  # (the `from` form hides a compiled module from pyright)

    return nvrtc


def _nvrtc() -> ModuleType:
    """The NVRTC bindings, once a background load (`preload_nvrtc`) has loaded the library."""
    loader = _preload
    if loader is not None and loader is not threading.current_thread():
        _loaded.wait()
    return _bindings()


def _load_nvrtc() -> None:
    """Load NVRTC (import the bindings, open the library) and read the headers' digest. Only
    that: a warm-up compile here would run beside the first real compile when scheduling is
    quick, and NVRTC work beside a compile slows it down more than the warm-up saves."""
    try:
        _bindings()
        nvrtc_version()
        header_digest()
    except Exception:  # the compile that needs NVRTC reports any problem
        return
    finally:
        _loaded.set()


def preload_nvrtc() -> None:
    """Start loading NVRTC on a thread, once per process, so that it overlaps the scheduling of
    the first fusion; the first compile waits until the library is loaded. Does nothing after
    the first call."""
    global _preload
    with _preload_lock:
        if _preload is None:
            _preload = threading.Thread(target=_load_nvrtc, name="fuser-nvrtc-load", daemon=True)
            _preload.start()


def _nvrtc_check(result: tuple[Any, ...], call: str) -> Any:
    """Check an NVRTC binding's result tuple; raise CompilationError naming the call."""
    nvrtc = _bindings()
    err = result[0]
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(err)
        raise CompilationError(f"{call} failed: {text.decode() if text else err}")
    return result[1] if len(result) == 2 else None


@functools.cache
def cuda_include_dir() -> str:
    """The directory holding cuda_fp16.h / cuda_bf16.h (from the cuda-toolkit wheels)."""
    import cuda.pathfinder

    path = cuda.pathfinder.find_nvidia_header_directory("cudart")
    if not path:
        raise CompilationError(
            "cannot find the CUDA headers (cuda_fp16.h): install cuda-toolkit[cudart,crt]"
        )
    return str(path)


@functools.cache
def fuser_include_dir() -> str:
    """The folder holding fuser's kernel headers (`fuser/core.cuh`, ...): package data of
    `fuser.codegen`, found without importing the emitter."""
    spec = importlib.util.find_spec("fuser.codegen")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    for folder in folders:
        if (Path(folder) / "include" / "fuser" / "core.cuh").is_file():
            return str(Path(folder) / "include")
    raise CompilationError(
        "cannot find fuser's kernel headers (fuser/codegen/include/fuser/core.cuh): reinstall fuser"
    )


def inline_fuser_headers(source: str) -> str:
    """`source` with each `#include "fuser/..."` replaced by the header's text, recursively,
    each header once (where it is first included); CUDA's headers stay includes."""
    root = Path(fuser_include_dir())
    seen: set[str] = set()

    def expand(text: str) -> str:
        lines: list[str] = []
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith('#include "fuser/'):
                name = stripped.split('"')[1]
                if name not in seen:
                    seen.add(name)
                    lines.append(f"// ---- {name}")
                    lines.append(expand((root / name).read_text()))
            elif stripped != "#pragma once":
                lines.append(line)
        return "\n".join(lines)

    return expand(source)


_CUDA_HEADERS = ("cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp")


@functools.cache
def header_digest() -> str:
    """A digest of the text of every header a generated kernel may include: fuser's (all of
    `fuser_include_dir()`) and CUDA's f16/bf16 headers. Part of every kernel-cache key, so that
    an edited or upgraded header is never served an old cubin."""
    h = hashlib.sha256()
    root = Path(fuser_include_dir())
    files = [(p.relative_to(root).as_posix(), p) for p in sorted(root.rglob("*.cuh"))]
    files += [(name, Path(cuda_include_dir()) / name) for name in _CUDA_HEADERS]
    for name, path in files:
        try:
            text = path.read_bytes()
        except OSError:
            text = b"(unreadable)"
        h.update(f"{name}\0{len(text)}\0".encode())
        h.update(text)
    return h.hexdigest()


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """The compute capabilities this NVRTC can generate SASS for, e.g. (75, 80, ..., 120)."""
    return tuple(_nvrtc_check(_nvrtc().nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    err, major, minor = _bindings().nvrtcVersion()
    _nvrtc_check((err,), "nvrtcVersion")
    return (major, minor)


MISCOMPILING_NVRTC = ((13, 0), (13, 4))
"""NVRTC versions [first, last) known to compile fuser's kernels wrongly: their ptxas folds the
negations of a `min(-a, -b)` into Hopper's three-way `VIMNMX3` and drops one (the GPU fuzzer's
find: an i32 `min` reduction of `neg(x)` returned `min(x)` for half of its rows; 13.0 to 13.3
do it, 13.4 and 13.5 do not, by the SASS of the same kernel)."""


def check_nvrtc() -> None:
    """Refuse an NVRTC that miscompiles fuser's kernels, naming the one fuser pins."""
    version = nvrtc_version()
    first, last = MISCOMPILING_NVRTC
    if first <= version < last:
        raise CompilationError(
            f"NVRTC {version[0]}.{version[1]} miscompiles fuser's kernels (integer min/max of "
            f"negated values; fixed in {last[0]}.{last[1]}): install the NVRTC fuser pins, "
            "pip install 'cuda-toolkit[nvrtc,cudart,crt]==13.5.0', ahead of this one"
        )


def check_arch(arch: str) -> str:
    """Validate an `sm_XY` target against what this NVRTC supports; return it."""
    m = _ARCH_RE.match(arch)
    if m is None:
        raise CompilationError(f"invalid GPU architecture {arch!r}: expected the form 'sm_90'")
    if int(m.group(1)) not in supported_archs():
        archs = ", ".join(f"sm_{a}" for a in supported_archs())
        major, minor = nvrtc_version()
        raise CompilationError(
            f"GPU architecture {arch!r} is not supported by NVRTC {major}.{minor}; "
            f"supported: {archs}"
        )
    return arch


def register_cap(
    block_size: int | None, registers_per_sm: int = DEFAULT_REGISTERS_PER_SM
) -> int | None:
    """The `--maxrregcount` that lets a block of `block_size` threads fit on one SM.

    Registers per SM divided by the block size rounded up to a warp, rounded down to a multiple
    of 8 and capped at 255; None (no option) when the cap would be 255 anyway, as in nvFuser.
    """
    if block_size is None:
        return None
    if block_size <= 0:
        raise ValueError(f"block size must be positive, got {block_size}")
    threads = -(-block_size // _WARP) * _WARP
    regs = min(registers_per_sm // threads // 8 * 8, _MAX_REGISTERS)
    return None if regs >= _MAX_REGISTERS else regs


def sass_target(arch: str) -> str:
    """The NVRTC target of `arch`: sm_90 compiles for sm_90a, Hopper's architecture-specific
    target (warpgroup MMA, `wgmma`, exists only there); its cubin runs on every compute
    capability 9.0 GPU (H100, H200, GH200), the only ones an sm_90 cubin runs on anyway."""
    return "sm_90a" if arch == "sm_90" else arch


def compile_options(
    arch: str, max_registers: int | None = None, extra: Sequence[str] = ()
) -> list[str]:
    """The NVRTC options fuser compiles every kernel with (SASS for `arch`, see `sass_target`)."""
    options = [
        "--std=c++17",
        f"--gpu-architecture={sass_target(arch)}",
        f"-I{fuser_include_dir()}",
        f"-I{cuda_include_dir()}",
        "-default-device",
        "--fmad=true",
        "-DNDEBUG",
    ]
    if max_registers is not None:
        options.append(f"--maxrregcount={max_registers}")
    if dump.enabled("ptxas_verbose"):  # registers, spills and stack in the log; same cubin
        options.append("--ptxas-options=-v")
    options.extend(extra)
    return options


def _dump_machine_code(what: str, log: str, ptx: str | None, cubin: bytes) -> None:
    """`FUSER_DUMP` stages `ptxas_verbose` (ptxas's lines of the NVRTC log), `ptx` and `sass`
    (the cubin through nvdisasm) of a kernel NVRTC just compiled."""
    dump.dump(
        "ptxas_verbose",
        what,
        lambda: "\n".join(line for line in log.splitlines() if line.startswith("ptxas")),
    )
    dump.dump("ptx", what, lambda: ptx or "(NVRTC gave no PTX)")
    dump.dump("sass", what, lambda: sass_text(cubin))


def sass_text(cubin: bytes) -> str:
    """The SASS of a cubin, as nvdisasm prints it (found by `cuda.pathfinder`), or a line
    saying why there is none."""
    from cuda.pathfinder import find_nvidia_binary_utility

    tool = find_nvidia_binary_utility("nvdisasm")
    if tool is None:
        return "nvdisasm not found (pip install 'fuser[dump]' provides it): no SASS"
    try:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            done = subprocess.run([tool, "-c", f.name], capture_output=True, text=True, check=False)
    except OSError as e:
        return f"nvdisasm ({tool}) did not run: {e}"
    if done.returncode != 0:
        return f"nvdisasm failed (exit status {done.returncode}): {done.stderr.strip()}"
    return done.stdout


def _write_failed_source(source: str, name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", name)[:64] or "kernel"
    fd, path = tempfile.mkstemp(prefix=f"fuser-{safe}-", suffix=".cu")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return path


def _program_log(prog: Any) -> str:
    nvrtc = _bindings()
    size = _nvrtc_check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buf = b" " * size
    _nvrtc_check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return buf.rstrip(b"\0").decode(errors="replace").strip()


# --------------------------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------------------------


def _pch_salt() -> str:
    """What a PCH depends on besides its prefix and options."""
    major, minor = nvrtc_version()
    return f"nvrtc {major}.{minor} headers {header_digest()}"


def _write_pch(prefix: str, options: list[str], path: Path) -> bool:
    """Compile the `#include` lines `prefix` alone with `options` (which hold
    `--create-pch=path`): True when NVRTC wrote the PCH (not when its heap was too small)."""
    nvrtc = _nvrtc()
    prog = _nvrtc_check(
        nvrtc.nvrtcCreateProgram(prefix.encode(), b"fuser_pch.cu", 0, [], []),
        "nvrtcCreateProgram",
    )
    try:
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        (status,) = nvrtc.nvrtcGetPCHCreateStatus(prog)
    finally:
        _nvrtc_check(nvrtc.nvrtcDestroyProgram(prog), "nvrtcDestroyProgram")
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    return err == ok and status == ok and path.is_file()


def _run_nvrtc(
    source: str, names: Sequence[str], opts: Sequence[str], pch: PchUse | None
) -> tuple[Any, str, bytes | None, list[str], str | None]:
    """One NVRTC compile: (result, log, cubin or None when it failed, lowered names, the PTX
    where `FUSER_DUMP` shows it)."""
    nvrtc = _nvrtc()
    options = [o.encode() for o in (*opts, *(pch.options if pch else ()))]
    try:
        prog = _nvrtc_check(
            nvrtc.nvrtcCreateProgram(source.encode(), f"{names[0]}.cu".encode(), 0, [], []),
            "nvrtcCreateProgram",
        )
    except BaseException:
        if pch is not None:
            PCH.done(pch)
        raise
    log, cubin, lowered, ptx = "", None, [], None
    try:
        for name in names:
            _nvrtc_check(
                nvrtc.nvrtcAddNameExpression(prog, name.encode()), "nvrtcAddNameExpression"
            )
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        log = _program_log(prog)
        if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            lowered = [
                _nvrtc_check(
                    nvrtc.nvrtcGetLoweredName(prog, n.encode()), "nvrtcGetLoweredName"
                ).decode()
                for n in names
            ]
            size = _nvrtc_check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            cubin = b" " * size
            _nvrtc_check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            if dump.enabled("ptx"):
                text = b" " * _nvrtc_check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
                _nvrtc_check(nvrtc.nvrtcGetPTX(prog, text), "nvrtcGetPTX")
                ptx = text.rstrip(b"\0").decode()
    finally:
        destroyed = nvrtc.nvrtcDestroyProgram(prog)
        if pch is not None:
            PCH.done(pch)
    _nvrtc_check(destroyed, "nvrtcDestroyProgram")
    return err, log, cubin, lowered, ptx


def nvrtc_compile(
    source: str, name: str | Sequence[str], arch: str, options: Sequence[str] = ()
) -> tuple[bytes, str]:
    """Compile `source` to a cubin for `arch` with fuser's options plus `options`.

    `name` is the kernel's (`extern "C"`) name, or the names of all the kernels the source
    holds: NVRTC checks they exist. Returns (cubin, log). On a failure raises CompilationError
    holding the kernel names, the NVRTC log and the path of a file the source was written to.
    The source's `#include` prefix gets a precompiled header after its first compile in a
    process (see the module docstring); a compile that fails with it runs again without it.
    """
    check_nvrtc()
    check_arch(arch)
    names = [name] if isinstance(name, str) else list(name)
    opts = compile_options(arch, extra=options)
    pch = PCH.use(source, opts, _pch_salt())
    err, log, cubin, lowered, ptx = _run_nvrtc(source, names, opts, pch)
    if pch is not None and (cubin is None or "precompiled header" in log):
        # NVRTC refused the PCH (its log says why) or the compile failed with it: never
        # again in this process, and never a failure for its sake
        retry = _run_nvrtc(source, names, opts, None)
        if retry[2] is not None:
            PCH.refuse(pch.key)
        if retry[2] is not None or cubin is None:  # both failed: the plain compile's error
            err, log, cubin, lowered, ptx = retry
    what = f"kernel {names[0]!r}" if len(names) == 1 else f"kernels {', '.join(names)}"
    if cubin is not None and pch is None:
        PCH.start_writing(source, opts, _pch_salt(), _write_pch)
    if cubin is None:
        path = _write_failed_source(source, names[0])
        _, text = _bindings().nvrtcGetErrorString(err)
        raise CompilationError(
            f"NVRTC failed to compile {what} for {arch} "
            f"({text.decode() if text else err}); source written to {path}\n{log}"
        )
    for n, symbol in zip(names, lowered, strict=True):
        if symbol != n:
            path = _write_failed_source(source, n)
            raise CompilationError(
                f'kernel {n!r} must be declared extern "C" __global__ (its symbol is '
                f"{symbol!r}); source written to {path}"
            )
    _dump_machine_code(what, log, ptx, cubin)
    return cubin, log


def joint_source(sources: Sequence[str]) -> str:
    """One translation unit of several generated kernels: the union of their `#include` lines,
    sorted (as `fuser.codegen.preamble` prints them), then each kernel's code in order."""
    includes: set[str] = set()
    bodies: list[str] = []
    for source in sources:
        prefix, body = split_includes(source)
        includes.update(line.strip() for line in prefix.splitlines() if line.strip())
        bodies.append(body.strip("\n") + "\n")
    return "\n".join(sorted(includes)) + "\n\n" + "\n".join(bodies)


def compile_together(kernels: Sequence[CompiledKernel], max_workers: int | None = None) -> None:
    """Compile every kernel of `kernels` that has no cubin yet, each group of kernels with the
    same architecture and options as one NVRTC program (one cubin holding all their functions,
    kept in the kernel cache under the group's key); groups compile in parallel. A group that
    NVRTC rejects is compiled kernel by kernel, so the error names the kernel at fault."""
    groups: dict[tuple[str, ...], list[CompiledKernel]] = {}
    for k in kernels:
        if k.cubin is None:
            groups.setdefault(tuple(k.options), []).append(k)
    jobs = list(groups.values())
    if len(jobs) <= 1:
        for members in jobs:
            _compile_group(members)
        return
    workers = max_workers or min(len(jobs), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fuser-nvrtc") as pool:
        for future in [pool.submit(_compile_group, members) for members in jobs]:
            future.result()  # re-raises a CompilationError of any group


def _compile_group(members: Sequence[CompiledKernel]) -> None:
    if len(members) == 1:
        members[0].compile()
        return
    first = members[0]
    names = [k.kernel_name for k in members]
    source = joint_source([k.source for k in members])
    key = kernel_cache.cache_key(
        source, " ".join(names), first.options, nvrtc_version(), header_digest()
    )
    cubin = kernel_cache.load(key)
    log = "cubin from the kernel cache"
    if cubin is None:
        try:
            cubin, log = nvrtc_compile(source, names, first.arch, first._extra_options())
        except CompilationError:
            for k in members:  # the kernel at fault raises its own error
                k.compile()
            return
        kernel_cache.store(key, cubin)
    for k in members:
        k.cubin, k.log = cubin, log


def pack_tensor_param(ptr: int, sizes: Sequence[int], strides: Sequence[int]) -> bytes:
    """The bytes of `Tensor<T, N>{ptr, sizes, strides}`, the layout of
    `Tensor<T, N>` in `fuser/core.cuh` (the kernel headers).

    Sizes and strides are in elements; the struct is 8 + 16 * N bytes with no padding.
    """
    n = len(sizes)
    if len(strides) != n:
        raise ValueError(f"{n} sizes but {len(strides)} strides")
    return struct.pack(f"<Q{n}q{n}q", ptr, *sizes, *strides)


class CompiledKernel:
    """One kernel: its source, NVRTC options, cubin and (on a GPU, lazily) loaded function.

    `arch` defaults to the current device's; with an explicit `arch` compilation needs no GPU.
    `block_size` is the largest block the kernel will be launched with; it sets the register cap
    (see `register_cap`).
    """

    def __init__(
        self,
        source: str,
        kernel_name: str,
        *,
        arch: str | None = None,
        block_size: int | None = None,
        extra_options: Sequence[str] = (),
    ) -> None:
        self.source = source
        self.kernel_name = kernel_name
        self._arch = check_arch(arch) if arch is not None else None
        self.block_size = block_size
        self.extra_options = tuple(extra_options)
        self.cubin: bytes | None = None
        self.log = ""
        self._function: driver.Function | None = None
        # functions replaced by a recompile: kept loaded, a launch may still be running them
        self._retired: list[driver.Function] = []
        self._dynamic_shared_limit = 0

    @classmethod
    def from_cubin(
        cls,
        source: str,
        kernel_name: str,
        cubin: bytes,
        *,
        arch: str,
        block_size: int | None = None,
        extra_options: Sequence[str] = (),
    ) -> CompiledKernel:
        """A kernel compiled before (its cubin kept, by `fuser.runtime.runnable_store`): made
        without NVRTC, which only a recompile for a lower register cap would load."""
        kernel = cls(source, kernel_name, block_size=block_size, extra_options=extra_options)
        kernel._arch = arch
        kernel.cubin = cubin
        kernel.log = "cubin from the runnable store"
        return kernel

    @property
    def arch(self) -> str:
        if self._arch is None:
            self._arch = check_arch(driver.current_device().arch)
        return self._arch

    @property
    def max_registers(self) -> int | None:
        """The register cap compiled with (None: no cap, i.e. 255)."""
        return register_cap(self.block_size)

    def _extra_options(self) -> list[str]:
        regs = self.max_registers
        cap = [f"--maxrregcount={regs}"] if regs is not None else []
        return [*cap, *self.extra_options]

    @property
    def options(self) -> list[str]:
        """The full NVRTC option list this kernel is (or will be) compiled with."""
        return compile_options(self.arch, extra=self._extra_options())

    def compile(self) -> bytes:
        """Compile (once) and return the cubin: from the kernel cache on disk when an earlier
        process compiled the same kernel (`kernel_cache`), else with NVRTC (and kept there)."""
        if self.cubin is None:
            key = kernel_cache.cache_key(
                self.source, self.kernel_name, self.options, nvrtc_version(), header_digest()
            )
            cubin = kernel_cache.load(key)
            if cubin is not None:
                self.log = "cubin from the kernel cache"
            else:
                cubin, self.log = nvrtc_compile(
                    self.source, self.kernel_name, self.arch, self._extra_options()
                )
                kernel_cache.store(key, cubin)
            self.cubin = cubin
        return self.cubin

    @property
    def cubin_size(self) -> int:
        return len(self.compile())

    @property
    def function(self) -> driver.Function:
        """The kernel loaded on the current device (compiled and loaded on first use)."""
        if self._function is None:
            module = driver.load_module(self.compile())
            self._function = module.get_function(self.kernel_name)
            self._dynamic_shared_limit = 0
        return self._function

    def ensure_block_size(self, threads: int) -> bool:
        """Recompile with a lower register cap if a block of `threads` might not fit.

        Returns True when it recompiled (the loaded function is then replaced on next use).
        """
        if threads > _MAX_THREADS_PER_BLOCK:
            return False  # no GPU runs such a block: leave the launch to report it
        needed = register_cap(threads)
        if needed is None:
            return False
        current = self.max_registers
        if current is not None and current <= needed:
            return False
        self.block_size = threads
        self.cubin = None
        self.log = ""
        if self._function is not None:
            self._retired.append(self._function)
            self._function = None
        return True

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Allow launches with `nbytes` of dynamic shared memory (needed above 48 KiB less the
        kernel's static shared memory)."""
        func = self.function
        if nbytes > self._dynamic_shared_limit:
            driver.set_max_dynamic_shared_memory(func, nbytes)
            self._dynamic_shared_limit = nbytes

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kernel_name!r}, arch={self._arch})"


def _dim3(value: int | Sequence[int]) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"launch dimensions must have 1 to 3 entries, got {value!r}")
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


def pack_args(args: Sequence[Any]) -> tuple[Any, Any]:
    """Pack launch arguments into (argument buffer, void* array pointing into it).

    Device arrays and anything `view_of` reads as device memory go as a pointer; `bytes` go as
    raw struct bytes (e.g. `pack_tensor_param`); numpy scalars with their dtype; Python ints as
    int64, floats as float32 and bools as bool.
    """
    blobs: list[bytes] = []
    for arg in args:
        if isinstance(arg, DeviceArray):
            blobs.append(struct.pack("<Q", arg.ptr))
        elif isinstance(arg, (bytes, bytearray)):
            blobs.append(bytes(arg))
        elif isinstance(arg, np.generic):
            blobs.append(arg.tobytes())
        elif isinstance(arg, bool):
            blobs.append(struct.pack("<?", arg))
        elif isinstance(arg, int):
            blobs.append(struct.pack("<q", arg))
        elif isinstance(arg, float):
            blobs.append(struct.pack("<f", arg))
        else:
            view = view_of(arg)
            if view.kind != "cuda":
                raise TypeError(f"kernel argument {arg!r} is not in device memory")
            blobs.append(struct.pack("<Q", view.ptr))
    offsets = []
    total = 0
    for blob in blobs:
        total = -(-total // 8) * 8  # 8-byte alignment covers every parameter type
        offsets.append(total)
        total += len(blob)
    buffer = ctypes.create_string_buffer(max(total, 1))
    for off, blob in zip(offsets, blobs, strict=True):
        ctypes.memmove(ctypes.addressof(buffer) + off, blob, len(blob))
    pointers = (ctypes.c_void_p * max(len(blobs), 1))(
        *(ctypes.addressof(buffer) + off for off in offsets)
    )
    return buffer, pointers


class RtcKernel(CompiledKernel):
    """A kernel from hand-written CUDA source, launched with Python arguments (see pack_args)."""

    def launch(
        self,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        args: Sequence[Any],
        shared_bytes: int = 0,
        stream: driver.StreamLike = None,
    ) -> None:
        block3 = _dim3(block)
        self.ensure_block_size(block3[0] * block3[1] * block3[2])
        func = self.function
        if shared_bytes:  # (any size: static and dynamic together may pass 48 KiB)
            self.set_max_dynamic_shared_memory(shared_bytes)
        buffer, pointers = pack_args(args)  # both must outlive the launch call
        address = ctypes.addressof(pointers) if args else 0
        driver.launch(func, _dim3(grid), block3, shared_bytes, stream, address)
        del buffer, pointers
