"""NVRTC compilation, register caps, argument packing and driver error reporting (no GPU needed)."""

from __future__ import annotations

import ctypes
import os
import re
import struct
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cuda.bindings import driver as cu

from fuser.errors import CompilationError, CudaError
from fuser.runtime import compiled_kernel, driver, kernel_cache
from fuser.runtime.compiled_kernel import (
    CompiledKernel,
    RtcKernel,
    check_arch,
    compile_options,
    nvrtc_compile,
    pack_args,
    pack_tensor_param,
    register_cap,
    supported_archs,
)

HALF_KERNEL = (
    "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    + "#include <fuser/core.cuh>\n"
    + """
extern "C" __global__ void scale_half(Tensor<__half, 2> out, Tensor<__nv_bfloat16, 2> in, float s) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long n = out.size[0] * out.size[1];
  if (i >= n) return;
  long long r = i / out.size[1], c = i % out.size[1];
  float v = __bfloat162float(in.data[r * in.stride[0] + c * in.stride[1]]);
  out.data[r * out.stride[0] + c * out.stride[1]] = __float2half(v * s + SHIFT);
}
"""
)

_SOURCE_PATH = re.compile(r"source written to (\S+)")


def _random_shift(rng: np.random.Generator) -> str:
    return f"-DSHIFT={rng.uniform(-4, 4):.6f}f"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_fp16_bf16_kernel_to_cubin(rng: np.random.Generator, arch: str) -> None:
    kernel = CompiledKernel(
        HALF_KERNEL, "scale_half", arch=arch, block_size=256, extra_options=[_random_shift(rng)]
    )
    assert kernel.cubin is None
    cubin = kernel.compile()
    assert cubin[:4] == b"\x7fELF"  # SASS in an ELF cubin, not PTX text
    assert kernel.cubin_size == len(cubin) > 1000
    assert b"scale_half" in cubin
    target = "sm_90a" if arch == "sm_90" else arch  # Hopper's arch-specific target (wgmma)
    assert f"--gpu-architecture={target}" in kernel.options
    assert kernel.compile() is cubin  # compiled once
    assert isinstance(kernel.log, str)


def test_cubins_differ_per_arch(rng: np.random.Generator) -> None:
    shift = _random_shift(rng)
    c80, _ = nvrtc_compile(HALF_KERNEL, "scale_half", "sm_80", [shift])
    c90, _ = nvrtc_compile(HALF_KERNEL, "scale_half", "sm_90", [shift])
    assert c80 != c90


def test_compile_options() -> None:
    opts = compile_options("sm_90", max_registers=96)
    for expected in (
        "--std=c++17",
        "--gpu-architecture=sm_90a",
        "-default-device",
        "--fmad=true",
        "-DNDEBUG",
        "--maxrregcount=96",
    ):
        assert expected in opts
    include = [Path(o[2:]) for o in opts if o.startswith("-I")]
    assert len(include) == 2
    assert (include[0] / "fuser" / "core.cuh").is_file()  # fuser's headers first
    assert (include[1] / "cuda_bf16.h").is_file()
    assert not any(o.startswith("--maxrregcount") for o in compile_options("sm_90"))


@pytest.mark.parametrize(
    ("block_size", "cap"),
    [
        (None, None),
        (1, None),
        (3, None),
        (127, None),
        (256, None),
        (257, 224),  # rounded up to 288 threads: 65536 / 288 = 227 -> 224
        (300, 200),  # 320 threads: 204 -> 200
        (384, 168),
        (512, 128),
        (640, 96),  # 102 -> 96
        (768, 80),  # 85 -> 80
        (1000, 64),  # 1024 threads
        (1024, 64),
    ],
)
def test_register_cap(block_size: int | None, cap: int | None) -> None:
    assert register_cap(block_size) == cap
    kernel = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", block_size=block_size)
    caps = [o for o in kernel.options if o.startswith("--maxrregcount=")]
    assert caps == ([] if cap is None else [f"--maxrregcount={cap}"])


def test_register_cap_other_register_file() -> None:
    assert register_cap(512, registers_per_sm=32768) == 64
    assert register_cap(96, registers_per_sm=32768) is None  # 341 -> capped at 255
    with pytest.raises(ValueError, match="positive"):
        register_cap(0)


def test_ensure_block_size_recompiles_with_a_lower_cap(rng: np.random.Generator) -> None:
    kernel = CompiledKernel(
        HALF_KERNEL,
        "scale_half",
        arch="sm_90",
        block_size=128,
        extra_options=[_random_shift(rng)],
    )
    first = kernel.compile()
    assert kernel.max_registers is None
    assert not kernel.ensure_block_size(256)  # 255 registers still fit 256 threads
    assert kernel.cubin is first
    assert kernel.ensure_block_size(512)
    assert kernel.cubin is None and kernel.max_registers == 128
    assert "--maxrregcount=128" in kernel.options
    assert kernel.compile()[:4] == b"\x7fELF"
    assert not kernel.ensure_block_size(384)  # 128 <= 168: fits already
    assert not kernel.ensure_block_size(2048)  # no GPU runs it: left to the launch to report
    assert kernel.ensure_block_size(1024)
    assert kernel.max_registers == 64


def test_syntax_error_reports_log_name_and_source_file(rng: np.random.Generator) -> None:
    marker = f"marker_{rng.integers(1 << 30)}"
    source = f'// {marker}\nextern "C" __global__ void broken_kernel(float* x) {{ x[0] = ; }}\n'
    with pytest.raises(CompilationError) as info:
        CompiledKernel(source, "broken_kernel", arch="sm_90").compile()
    message = str(info.value)
    assert "broken_kernel" in message
    assert "error: expected an expression" in message  # the NVRTC log
    match = _SOURCE_PATH.search(message)
    assert match is not None
    path = Path(match.group(1))
    try:
        assert path.name.startswith("fuser-")
        assert path.read_text() == source
    finally:
        path.unlink()


def test_kernel_must_be_extern_c() -> None:
    with pytest.raises(CompilationError, match='extern "C"') as info:
        nvrtc_compile("__global__ void mangled(int* x) { *x = 1; }", "mangled", "sm_90")
    match = _SOURCE_PATH.search(str(info.value))
    assert match is not None
    Path(match.group(1)).unlink()


def test_missing_kernel_name_is_a_compile_error() -> None:
    with pytest.raises(CompilationError, match="'absent'") as info:
        nvrtc_compile('extern "C" __global__ void present() {}', "absent", "sm_90")
    assert 'identifier "absent" is undefined' in str(info.value)
    match = _SOURCE_PATH.search(str(info.value))
    assert match is not None
    Path(match.group(1)).unlink()


@pytest.mark.parametrize("arch", ["sm_52", "sm_999"])
def test_unsupported_arch(arch: str) -> None:
    with pytest.raises(CompilationError, match=rf"{arch}.*not supported by NVRTC.*sm_90"):
        check_arch(arch)
    with pytest.raises(CompilationError, match="not supported"):
        CompiledKernel(HALF_KERNEL, "scale_half", arch=arch)


@pytest.mark.parametrize("arch", ["compute_90", "sm90", "90", "sm_9x"])
def test_malformed_arch(arch: str) -> None:
    with pytest.raises(CompilationError, match="invalid GPU architecture"):
        nvrtc_compile(HALF_KERNEL, "scale_half", arch)


EMPTY_KERNEL = 'extern "C" __global__ void empty() {}'


@pytest.mark.parametrize(
    ("version", "refused"), [((13, 0), True), ((13, 3), True), ((13, 4), False)]
)
def test_an_nvrtc_that_miscompiles_is_refused(
    monkeypatch: pytest.MonkeyPatch, version: tuple[int, int], refused: bool
) -> None:
    """NVRTC 13.0-13.3 drop a negation in an i32 `min` of negated values (the GPU fuzzer's
    find); fuser names the version and the NVRTC it pins instead of returning wrong numbers."""
    monkeypatch.setattr(compiled_kernel, "nvrtc_version", lambda: version)
    if refused:
        with pytest.raises(
            CompilationError, match=rf"NVRTC {version[0]}\.{version[1]} miscompiles.*13\.5\.0"
        ):
            nvrtc_compile(EMPTY_KERNEL, "empty", "sm_90")
    else:
        nvrtc_compile(EMPTY_KERNEL, "empty", "sm_90")


def test_supported_archs_include_hopper_and_ampere() -> None:
    assert {80, 90} <= set(supported_archs())


@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 5])
def test_pack_tensor_param_layout(rng: np.random.Generator, ndim: int) -> None:
    ptr = int(rng.integers(1, 1 << 48)) * 256
    sizes = [int(n) for n in rng.integers(1, 1000, ndim)]
    strides = [int(s) for s in rng.integers(-(1 << 40), 1 << 40, ndim)]
    blob = pack_tensor_param(ptr, sizes, strides)
    assert len(blob) == 8 + 16 * ndim
    values = struct.unpack(f"<Q{ndim}q{ndim}q", blob)
    assert values[0] == ptr
    assert list(values[1 : 1 + ndim]) == sizes
    assert list(values[1 + ndim :]) == strides


def test_pack_tensor_param_rank_mismatch() -> None:
    with pytest.raises(ValueError, match="2 sizes but 1 strides"):
        pack_tensor_param(0, [3, 4], [1])


def test_tensor_struct_layout_matches_nvrtc() -> None:
    """The device-side struct has exactly the size and offsets pack_tensor_param writes."""
    asserts = []
    for n in range(6):
        size = len(pack_tensor_param(0, [1] * n, [1] * n))
        asserts.append(f'static_assert(sizeof(Tensor<__half, {n}>) == {size}, "size {n}");')
        if n:
            asserts.append(
                f"static_assert(__builtin_offsetof(Tensor<double, {n}>, stride) == {8 + 8 * n});"
            )
    source = (
        "#include <cuda_fp16.h>\n"
        + "#include <fuser/core.cuh>\n"
        + "\n".join(asserts)
        + '\nextern "C" __global__ void layout(Tensor<float, 2> t) { t.data[0] = 1.0f; }\n'
    )
    cubin, _ = nvrtc_compile(source, "layout", "sm_90")
    assert cubin[:4] == b"\x7fELF"


def test_pack_args_layout(rng: np.random.Generator) -> None:
    i = int(rng.integers(-(1 << 60), 1 << 60))
    f = float(rng.uniform(-10, 10))
    d = np.float64(rng.uniform(-10, 10))
    h = np.float16(rng.uniform(-10, 10))
    i32 = np.int32(rng.integers(-(1 << 30), 1 << 30))
    tensor = pack_tensor_param(int(rng.integers(1, 1 << 40)), [3, 127], [127, 1])
    buffer, pointers = pack_args([i, f, tensor, h, d, i32, True])
    raw = [ctypes.string_at(p, n) for p, n in zip(pointers, [8, 4, 40, 2, 8, 4, 1], strict=True)]
    assert struct.unpack("<q", raw[0])[0] == i
    assert struct.unpack("<f", raw[1])[0] == pytest.approx(f, rel=1e-6)
    assert raw[2] == tensor
    assert np.frombuffer(raw[3], np.float16)[0] == h
    assert np.frombuffer(raw[4], np.float64)[0] == d
    assert np.frombuffer(raw[5], np.int32)[0] == i32
    assert raw[6] == b"\x01"
    base = ctypes.addressof(buffer)
    assert all(p % 8 == 0 and base <= p < base + ctypes.sizeof(buffer) for p in pointers)


def test_pack_args_rejects_host_arrays() -> None:
    with pytest.raises(TypeError, match="not in device memory"):
        pack_args([np.ones(3)])


# --------------------------------------------------------------------------------------------
# driver error reporting and availability


def test_check_returns_values() -> None:
    ok = cu.CUresult.CUDA_SUCCESS
    assert driver.check((ok,), "cuA") is None
    assert driver.check((ok, 7), "cuB") == 7
    assert driver.check((ok, 7, 8), "cuC") == (7, 8)


def test_check_raises_cuda_error_naming_call_and_error() -> None:
    with pytest.raises(CudaError, match=r"cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY"):
        driver.check((cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAllocAsync")


def test_gpu_available_is_a_bool() -> None:
    assert driver.gpu_available() in (True, False)
    if not any(Path("/dev").glob("nvidia[0-9]*")):
        assert driver.gpu_available() is False


def test_probe_without_libcuda(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(flags: int) -> tuple[object]:
        raise RuntimeError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(cu, "cuInit", missing)
    assert driver._probe() is False


def test_probe_without_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cu, "cuInit", lambda flags: (cu.CUresult.CUDA_ERROR_NO_DEVICE,))
    assert driver._probe() is False
    monkeypatch.setattr(cu, "cuInit", lambda flags: (cu.CUresult.CUDA_SUCCESS,))
    monkeypatch.setattr(cu, "cuDeviceGetCount", lambda: (cu.CUresult.CUDA_SUCCESS, 0))
    assert driver._probe() is False


@pytest.mark.skipif(driver.gpu_available(), reason="checks the behaviour without a GPU")
def test_launch_without_gpu_raises_cuda_error() -> None:
    kernel = RtcKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=["-DSHIFT=0.f"])
    kernel.compile()  # compiling needs no GPU
    with pytest.raises(CudaError, match="no CUDA device"):
        kernel.launch(1, 32, [])
    with pytest.raises(CudaError, match="no CUDA device"):
        driver.current_device()


# --------------------------------------------------------------------------------------------
# the kernel cache on disk


@pytest.fixture
def kernel_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kernel cache turned on, in a folder of the test's own (returned)."""
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    return tmp_path / "kernels"


def _no_nvrtc(*args: object, **kwargs: object) -> tuple[bytes, str]:
    raise AssertionError("NVRTC was called for a cached kernel")


def test_kernel_cache_serves_a_new_process_without_nvrtc(
    rng: np.random.Generator, kernel_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shift = _random_shift(rng)
    first = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift])
    cubin = first.compile()
    (path,) = kernel_cache_dir.glob("*.cubin")
    assert cubin in path.read_bytes() and not list(kernel_cache_dir.glob("*.tmp"))
    # a new CompiledKernel (as in a new process) takes the cubin from disk
    monkeypatch.setattr(compiled_kernel, "nvrtc_compile", _no_nvrtc)
    again = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift])
    assert again.compile() == cubin and again.log == "cubin from the kernel cache"
    # another architecture, register cap, option or source is another kernel
    for other in (
        CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_80", extra_options=[shift]),
        CompiledKernel(
            HALF_KERNEL, "scale_half", arch="sm_90", block_size=1024, extra_options=[shift]
        ),
        CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift, "-DX=1"]),
        CompiledKernel(HALF_KERNEL + "\n", "scale_half", arch="sm_90", extra_options=[shift]),
    ):
        with pytest.raises(AssertionError, match="NVRTC was called"):
            other.compile()


def test_kernel_cache_ignores_a_damaged_file(
    rng: np.random.Generator, kernel_cache_dir: Path
) -> None:
    shift = _random_shift(rng)
    cubin = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift]).compile()
    (path,) = kernel_cache_dir.glob("*.cubin")
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # one flipped byte in the cubin
    path.write_bytes(bytes(data))
    again = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift])
    assert again.compile() == cubin and again.log != "cubin from the kernel cache"
    assert cubin in path.read_bytes() and path.read_bytes() != bytes(data)  # written again


def test_kernel_cache_off_or_unwritable(
    rng: np.random.Generator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shift = _random_shift(rng)
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "0")
    CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift]).compile()
    assert not (tmp_path / "kernels").exists()
    # a cache folder that cannot be made: a warning, and the kernel still compiles
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(blocker))
    kernel = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift])
    with pytest.warns(UserWarning, match="cannot write the kernel cache"):
        assert kernel.compile()[:4] == b"\x7fELF"


def test_kernel_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.delenv("FUSER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernel_cache.cache_dir() == tmp_path / "xdg" / "fuser" / "kernels"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert kernel_cache.cache_dir() == tmp_path / "home" / ".cache" / "fuser" / "kernels"
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path / "chosen"))
    assert kernel_cache.cache_dir() == tmp_path / "chosen" / "kernels"
    for off in ("0", "off", " OFF", "false", "no"):
        monkeypatch.setenv("FUSER_KERNEL_CACHE", off)
        assert kernel_cache.cache_dir() is None


def _within(seconds: float, fn: Callable[[], object]) -> object:
    """`fn()`, failing the test (instead of hanging it) when it takes longer than `seconds`."""
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{fn} still runs after {seconds} s: it blocks"
    return result[0]


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _link_to_a_good_file(path: Path) -> None:
    good = path.with_suffix(".elsewhere")
    path.rename(good)
    path.symlink_to(good)


@pytest.mark.parametrize("make", [_fifo, _link_to_dev_zero, _link_to_a_good_file])
def test_kernel_cache_reads_only_regular_files(
    make: Callable[[Path], None],
    rng: np.random.Generator,
    kernel_cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shift = _random_shift(rng)
    cubin = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift]).compile()
    (path,) = kernel_cache_dir.glob("*.cubin")
    if make is not _link_to_a_good_file:
        path.unlink()
    make(path)
    # a miss, at once: the kernel compiles again and its cubin replaces the entry itself
    again = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift])
    assert _within(30, again.compile) == cubin and again.log != "cubin from the kernel cache"
    assert path.is_file() and not path.is_symlink() and cubin in path.read_bytes()
    monkeypatch.setattr(compiled_kernel, "nvrtc_compile", _no_nvrtc)
    third = CompiledKernel(HALF_KERNEL, "scale_half", arch="sm_90", extra_options=[shift])
    assert third.compile() == cubin and third.log == "cubin from the kernel cache"


def test_kernel_cache_skips_a_file_above_the_bound(kernel_cache_dir: Path) -> None:
    kernel_cache.store("k", b"cubin")
    assert kernel_cache.load("k") == b"cubin"
    path = kernel_cache_dir / "k.cubin"
    with path.open("r+b") as f:  # sparse: no disk space used
        f.truncate(kernel_cache.MAX_FILE_BYTES + 1)
    assert _within(30, lambda: kernel_cache.load("k")) is None


def test_an_unwritable_kernel_cache_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder belongs")
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(blocker))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for key in ("a", "b", "c"):
            kernel_cache.store(key, b"cubin")
            assert kernel_cache.load(key) is None
    assert [str(w.message)[:36] for w in caught] == ["fuser: cannot write the kernel cache"]


def test_kernel_cache_evicts_the_least_recently_used(
    kernel_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above `FUSER_CACHE_MAX_MB` a store removes the least recently used cubins (a hit makes a
    cubin recent) until the folder is back under the cap."""
    monkeypatch.setenv("FUSER_CACHE_MAX_MB", str(3.5 * 100_000 / (1024 * 1024)))  # 3.5 cubins
    folder = kernel_cache.cache_dir()
    assert folder is not None
    for i, key in enumerate("abc"):
        kernel_cache.store(key, bytes([i]) * 100_000)
        os.utime(folder / f"{key}.cubin", (1000 + i, 1000 + i))  # a older than b older than c
    assert kernel_cache.load("a") is not None  # a hit: now the most recent
    kernel_cache.store("d", b"d" * 100_000)  # 4 cubins: over the cap
    kept = sorted(p.stem for p in folder.glob("*.cubin"))
    assert kept == ["a", "c", "d"] and kernel_cache.load("b") is None
    assert sum(p.stat().st_size for p in folder.glob("*.cubin")) <= 3.5 * 100_000


@pytest.mark.parametrize("value", ["lots", "-5", "0", "nan"])
def test_a_bad_cache_cap_warns_and_keeps_the_default(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setattr(kernel_cache, "_warned", set())
    monkeypatch.setenv("FUSER_CACHE_MAX_MB", value)
    with pytest.warns(UserWarning, match="FUSER_CACHE_MAX_MB=.* is not a positive number"):
        assert kernel_cache.max_bytes() == int(kernel_cache.DEFAULT_MAX_MB * 1024 * 1024)


def test_fuser_dump_prints_ptx_sass_and_the_ptxas_report() -> None:
    """`FUSER_DUMP=ptx,sass,ptxas_verbose` prints, for a kernel NVRTC compiles, its PTX, its
    SASS (nvdisasm, from the `test` extra) and ptxas's registers and spills."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from fuser import DataType, FusionDefinition\n"
        "with FusionDefinition('machine') as fd:\n"
        "    fd.add_output(fd.ops.exp(fd.define_tensor([-1], DataType.Float)))\n"
        "fd.compile([np.ones(4, np.float32)], arch='sm_90')\n"
    )
    env = dict(os.environ, FUSER_DUMP="ptx,sass,ptxas_verbose", FUSER_KERNEL_CACHE="0")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    err = done.stderr
    for stage in ("ptxas_verbose", "ptx", "sass"):
        assert f"===== FUSER_DUMP {stage}: kernel 'fuser_machine_pointwise_0' =====" in err
    assert re.search(r"ptxas info\s+: Used \d+ registers", err)
    assert "spill stores" in err
    assert ".visible .entry fuser_machine_pointwise_0(" in err
    assert "MUFU.EX2" in err and "EXIT" in err  # the exponential, in SASS


def test_sass_says_why_when_nvdisasm_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import cuda.pathfinder

    from fuser.runtime.compiled_kernel import sass_text

    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None)
    assert "nvdisasm not found" in sass_text(b"")
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: "/no/nvdisasm")
    assert "did not run" in sass_text(b"")
