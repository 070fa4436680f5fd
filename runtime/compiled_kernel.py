"""CUDA C++ source to a loaded kernel: NVRTC compilation, register caps, raw-source launches.

`nvrtc_compile` turns source into a cubin (SASS for one `sm_XY`): fuser never ships PTX, because
the NVRTC here may be newer than the driver that would have to JIT it. `CompiledKernel` owns one
kernel's source, options and cubin (kept on disk by `kernel_cache` for later processes), and loads
it lazily on the GPU; `RtcKernel` adds a convenient `launch` that packs Python arguments, for
tests and hand-written CUDA. The code generator's kernels take every tensor as the struct
`Tensor<T, N>` whose bytes `pack_tensor_param` produces.

Kernels are looked up by name, so a kernel must be declared `extern "C" __global__`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import struct
import tempfile
from collections.abc import Sequence
from typing import Any

import cuda.bindings.nvrtc as nvrtc  # (the `from` form hides a compiled module from pyright)
import numpy as np

from fuser.errors import CompilationError

from . import driver, kernel_cache
from .arrays import DeviceArray, view_of

#: Registers of one SM on every architecture fuser targets (sm_80 .. sm_120).
DEFAULT_REGISTERS_PER_SM = 65536
_WARP = 32
_MAX_REGISTERS = 255
_MAX_THREADS_PER_BLOCK = 1024

_ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")


def _nvrtc_check(result: tuple[Any, ...], call: str) -> Any:
    """Check an NVRTC binding's result tuple; raise CompilationError naming the call."""
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
def supported_archs() -> tuple[int, ...]:
    """The compute capabilities this NVRTC can generate SASS for, e.g. (75, 80, ..., 120)."""
    return tuple(_nvrtc_check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    err, major, minor = nvrtc.nvrtcVersion()
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
        f"-I{cuda_include_dir()}",
        "-default-device",
        "--fmad=true",
        "-DNDEBUG",
    ]
    if max_registers is not None:
        options.append(f"--maxrregcount={max_registers}")
    options.extend(extra)
    return options


def _write_failed_source(source: str, name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", name)[:64] or "kernel"
    fd, path = tempfile.mkstemp(prefix=f"fuser-{safe}-", suffix=".cu")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return path


def _program_log(prog: Any) -> str:
    size = _nvrtc_check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buf = b" " * size
    _nvrtc_check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return buf.rstrip(b"\0").decode(errors="replace").strip()


def nvrtc_compile(
    source: str, name: str, arch: str, options: Sequence[str] = ()
) -> tuple[bytes, str]:
    """Compile `source` to a cubin for `arch` with fuser's options plus `options`.

    `name` is the kernel's (`extern "C"`) name: NVRTC checks it exists. Returns (cubin, log). On a
    failure raises CompilationError holding the kernel name, the NVRTC log and the path of a file
    the source was written to.
    """
    check_nvrtc()
    check_arch(arch)
    opts = [o.encode() for o in compile_options(arch, extra=options)]
    prog = _nvrtc_check(
        nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []),
        "nvrtcCreateProgram",
    )
    try:
        _nvrtc_check(nvrtc.nvrtcAddNameExpression(prog, name.encode()), "nvrtcAddNameExpression")
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _program_log(prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            path = _write_failed_source(source, name)
            _, text = nvrtc.nvrtcGetErrorString(err)
            raise CompilationError(
                f"NVRTC failed to compile kernel {name!r} for {arch} "
                f"({text.decode() if text else err}); source written to {path}\n{log}"
            )
        lowered = _nvrtc_check(
            nvrtc.nvrtcGetLoweredName(prog, name.encode()), "nvrtcGetLoweredName"
        )
        if lowered.decode() != name:
            path = _write_failed_source(source, name)
            raise CompilationError(
                f'kernel {name!r} must be declared extern "C" __global__ (its symbol is '
                f"{lowered.decode()!r}); source written to {path}"
            )
        size = _nvrtc_check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        _nvrtc_check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return cubin, log


def pack_tensor_param(ptr: int, sizes: Sequence[int], strides: Sequence[int]) -> bytes:
    """The bytes of `Tensor<T, N>{ptr, sizes, strides}`, the layout of
    `fuser.dialects.kernel.TENSOR_STRUCT_SOURCE`.

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
                self.source, self.kernel_name, self.options, nvrtc_version()
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
        """Allow launches with `nbytes` of dynamic shared memory (needed above 48 KiB)."""
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
        if shared_bytes > driver.current_device().max_shared_memory_per_block:
            self.set_max_dynamic_shared_memory(shared_bytes)
        buffer, pointers = pack_args(args)  # both must outlive the launch call
        address = ctypes.addressof(pointers) if args else 0
        driver.launch(func, _dim3(grid), block3, shared_bytes, stream, address)
        del buffer, pointers
