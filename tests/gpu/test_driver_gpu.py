"""The runtime on a real GPU: device attributes, DeviceArray copies, RtcKernel launches with
Tensor structs, streams and events, the memory pool, launch errors, torch / cupy interop.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import ctypes
import gc
import re
import struct
import threading
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cuda.bindings import driver as cu

from fuser.errors import CudaError
from fuser.runtime import arrays, driver
from fuser.runtime.arrays import BFLOAT16, DeviceArray, view_of
from fuser.runtime.compiled_kernel import (
    CompiledKernel,
    RtcKernel,
    pack_tensor_param,
    supported_archs,
)

pytestmark = pytest.mark.gpu

DTYPES = [
    np.dtype(np.float16),
    BFLOAT16,
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int8),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.bool_),
    np.dtype(np.complex64),
]

ADD_2D = (
    "#include <fuser/core.cuh>\n"
    + r"""
extern "C" __global__ void add2d(Tensor<float, 2> out, Tensor<float, 2> a, Tensor<float, 2> b) {
  long long n = out.size[0] * out.size[1];
  long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += step) {
    long long r = i / out.size[1], c = i % out.size[1];
    out.data[r * out.stride[0] + c * out.stride[1]] =
        a.data[r * a.stride[0] + c * a.stride[1]] + b.data[r * b.stride[0] + c * b.stride[1]];
  }
}
"""
)

SCALARS = (
    "#include <fuser/core.cuh>\n"
    + r"""
extern "C" __global__ void axpbc(Tensor<double, 1> out, Tensor<double, 1> x, double a,
                                 long long n, float b, int c) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out.data[i * out.stride[0]] = a * x.data[i * x.stride[0]] + (double)b + c;
}
"""
)

FILL = r"""
extern "C" __global__ void fill(float* p, long long n, float v) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
"""

STREAMS = r"""
extern "C" __global__ void slow_fill(float* p, long long n, float v, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  for (long long i = threadIdx.x; i < n; i += blockDim.x) p[i] = v;
}
extern "C" __global__ void copy(float* dst, const float* src, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
"""

SMEM_REVERSE = r"""
extern "C" __global__ void smem_reverse(float* out, const float* in, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}
"""

HEAVY = r"""
extern "C" __global__ void heavy(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) acc[k] = in[(i + k) % n] * (k + 1);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += acc[k] * acc[47 - k];
  out[i] = s;
}
"""


def _random(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(
            dtype
        )
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _quiesce() -> None:
    """Collect dead arrays and wait for their stream-ordered frees to happen."""
    gc.collect()
    driver.synchronize()


# --------------------------------------------------------------------------------------------
# device


def test_device_attributes(device: driver.Device) -> None:
    assert re.fullmatch(r"sm_\d{2,3}", device.arch)
    major, minor = device.compute_capability
    assert device.arch == f"sm_{major}{minor}"
    assert major * 10 + minor in supported_archs()
    assert device.sm_count > 0
    assert device.max_threads_per_block == 1024
    assert device.max_shared_memory_per_block == 48 * 1024
    assert device.max_shared_memory_per_block_optin > device.max_shared_memory_per_block
    assert device.registers_per_sm == 65536
    assert device.warp_size == 32
    assert device.l2_bytes > 1 << 20
    assert device.name.strip()
    assert driver.current_device() is device
    assert driver.get_device(device.ordinal) is device


def test_current_device_and_launch_from_another_thread(
    rng: np.random.Generator, device: driver.Device
) -> None:
    kernel = RtcKernel(FILL, "fill")
    n = 127
    value = float(np.float32(rng.uniform(1, 2)))
    seen: list[Any] = []

    def work() -> None:
        try:
            seen.append(driver.current_device())
            out = DeviceArray.empty(n, np.float32)
            kernel.launch(1, 128, [out, n, value])
            seen.append(out.numpy())
        except Exception as e:  # reported in the main thread
            seen.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if isinstance(seen[-1], Exception):
        raise seen[-1]
    assert seen[0] is device
    np.testing.assert_array_equal(seen[1], np.full(n, value, np.float32))


# --------------------------------------------------------------------------------------------
# DeviceArray


@pytest.mark.parametrize("shape", [(1,), (3,), (127,), (3, 5, 7), (2, 0)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("use_stream", [False, True], ids=["default-stream", "stream"])
def test_device_array_round_trip(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: np.dtype,
    use_stream: bool,
    stream: driver.Stream,
) -> None:
    s = stream if use_stream else None
    host = _random(shape, dtype, rng)
    arr = DeviceArray.from_numpy(host, s)
    assert arr.shape == shape and arr.dtype == dtype and arr.nbytes == host.nbytes
    if host.size:  # numpy gives zero-size arrays all-zero strides
        assert arr.strides == host.strides
    assert (arr.ptr != 0) == (host.size != 0)
    back = arr.numpy()
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(arr.copy().numpy(), host)


def test_device_array_from_non_contiguous_numpy(
    rng: np.random.Generator, stream: driver.Stream
) -> None:
    host = rng.standard_normal((5, 127)).astype(np.float32)
    view = host.T[::2]
    arr = DeviceArray.from_numpy(view, stream)
    assert arr.shape == view.shape
    np.testing.assert_array_equal(arr.numpy(), view)


def test_device_array_zeros(stream: driver.Stream) -> None:
    arr = DeviceArray.zeros((3, 127), np.float64, stream)
    np.testing.assert_array_equal(arr.numpy(), np.zeros((3, 127)))


def test_raw_alloc_memcpy_memset(
    rng: np.random.Generator, device: driver.Device, stream: driver.Stream
) -> None:
    host = rng.integers(0, 255, 127, dtype=np.uint8)
    ptr = driver.alloc(host.nbytes, stream)
    try:
        driver.memcpy_htod(ptr, host.ctypes.data, host.nbytes, stream)
        back = np.empty_like(host)
        driver.memcpy_dtoh(back.ctypes.data, ptr, host.nbytes, stream)
        np.testing.assert_array_equal(back, host)
        value = int(rng.integers(1, 255))
        driver.memset_d8_async(ptr + 3, value, 5, stream)
        driver.memcpy_dtoh(back, ptr, host.nbytes, stream)  # a buffer works as well as an address
        expected = host.copy()
        expected[3:8] = value
        np.testing.assert_array_equal(back, expected)
    finally:
        driver.free(ptr, stream)


def test_pool_usage_returns_to_start(device: driver.Device, stream: driver.Stream) -> None:
    _quiesce()
    start = driver.pool_used_bytes()
    arrays_ = [DeviceArray.empty(n, np.float32, stream) for n in (1, 3, 127, 1 << 20)]
    stream.synchronize()
    assert driver.pool_used_bytes() >= start + sum(a.nbytes for a in arrays_)
    del arrays_
    _quiesce()
    assert driver.pool_used_bytes() == start


# --------------------------------------------------------------------------------------------
# kernels


def test_a_device_constant_freed_on_a_thread_without_a_context(device: driver.Device) -> None:
    """The collector may free a `DeviceConstant` (an iota's upload) on any thread: its
    `cuMemFree` makes the primary context current there first, so it neither fails nor
    leaks."""
    data = np.arange(1 << 20, dtype=np.int64)
    constant = driver.DeviceConstant(data.ctypes.data, data.nbytes)
    before = _free_bytes()
    errors: list[BaseException] = []

    def free() -> None:
        try:
            constant.__del__()
        except BaseException as e:  # reported below
            errors.append(e)

    thread = threading.Thread(target=free)
    thread.start()
    thread.join()
    assert not errors and constant.ptr == 0
    assert _free_bytes() >= before + data.nbytes


def _free_bytes() -> int:
    """The device's free memory (`cuMemGetInfo`)."""
    free, _ = driver.check(cu.cuMemGetInfo(), "cuMemGetInfo")
    return int(free)


def test_add_through_tensor_structs_on_strided_inputs(
    rng: np.random.Generator, stream: driver.Stream
) -> None:
    rows, cols = 37, 127
    a_host = rng.standard_normal((rows, 2 * cols + 1)).astype(np.float32)
    b_host = rng.standard_normal((cols, rows)).astype(np.float32)
    a = DeviceArray.from_numpy(a_host, stream)
    b = DeviceArray.from_numpy(b_host, stream)
    out = DeviceArray.empty((rows, cols), np.float32, stream)
    kernel = RtcKernel(ADD_2D, "add2d", block_size=128)
    args = [
        pack_tensor_param(out.ptr, (rows, cols), (cols, 1)),
        pack_tensor_param(a.ptr + 4, (rows, cols), (2 * cols + 1, 2)),  # a[:, 1::2]
        pack_tensor_param(b.ptr, (rows, cols), (1, rows)),  # b.T
    ]
    kernel.launch(7, 128, args, stream=stream)
    np.testing.assert_array_equal(out.numpy(), a_host[:, 1::2] + b_host.T)
    assert kernel.arch == driver.current_device().arch


def test_scalar_arguments(rng: np.random.Generator, stream: driver.Stream) -> None:
    n = 127
    x_host = rng.standard_normal(n + 3)
    x = DeviceArray.from_numpy(x_host, stream)
    out = DeviceArray.zeros(n + 3, np.float64, stream)
    a, b, c = np.float64(rng.uniform(-3, 3)), float(rng.uniform(-3, 3)), int(rng.integers(-9, 9))
    kernel = RtcKernel(SCALARS, "axpbc")
    args = [
        pack_tensor_param(out.ptr, (n,), (1,)),
        pack_tensor_param(x.ptr, (n,), (1,)),
        a,
        n,
        b,
        np.int32(c),
    ]
    kernel.launch(2, 64, args, stream=stream)
    expected = np.zeros(n + 3)
    expected[:n] = a * x_host[:n] + float(np.float32(b)) + c
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13, atol=1e-13)


def test_launch_graph_refreshes_changed_arguments_only(
    rng: np.random.Generator, stream: driver.Stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node of a LaunchGraph takes its buffer's arguments when they changed since its last
    launch, and costs no driver call when they did not."""
    n = 1000
    a = DeviceArray.zeros(n, np.float32, stream)
    b = DeviceArray.zeros(n, np.float32, stream)
    buffer = ctypes.create_string_buffer(24)  # fill(float* p, long long n, float v)
    pointers = (ctypes.c_void_p * 3)(*(ctypes.addressof(buffer) + o for o in (0, 8, 16)))

    def arguments(ptr: int, value: float) -> None:
        struct.pack_into("<Qqf", buffer, 0, ptr, n, value)

    values = [float(np.float32(v)) for v in rng.uniform(-5, 5, 3)]
    arguments(a.ptr, values[0])
    func = RtcKernel(FILL, "fill").function
    node = driver.KernelNode(func, (8, 1, 1), (128, 1, 1), 0, ctypes.addressof(pointers), buffer)
    graph = driver.LaunchGraph([node])
    refreshes: list[int] = []
    set_params = cu.cuGraphExecKernelNodeSetParams

    def counted(*args: Any) -> Any:
        refreshes.append(1)
        return set_params(*args)

    monkeypatch.setattr(cu, "cuGraphExecKernelNodeSetParams", counted)
    graph.launch(stream)
    arguments(a.ptr, values[0])  # rewritten, the same bytes
    graph.launch(stream)
    assert refreshes == []
    np.testing.assert_array_equal(a.numpy(), np.full(n, values[0], np.float32))
    arguments(b.ptr, values[1])
    graph.launch(stream)
    graph.launch(stream)
    assert len(refreshes) == 1
    arguments(a.ptr, values[2])
    graph.launch(stream)
    assert len(refreshes) == 2
    np.testing.assert_array_equal(a.numpy(), np.full(n, values[2], np.float32))
    np.testing.assert_array_equal(b.numpy(), np.full(n, values[1], np.float32))


def test_device_array_passed_as_pointer(rng: np.random.Generator, stream: driver.Stream) -> None:
    n = 1000
    value = float(np.float32(rng.uniform(-5, 5)))
    out = DeviceArray.zeros(n + 1, np.float32, stream)
    RtcKernel(FILL, "fill").launch(4, 256, [out, n, value], stream=stream)
    expected = np.full(n + 1, value, np.float32)
    expected[n] = 0
    np.testing.assert_array_equal(out.numpy(), expected)


def test_dynamic_shared_memory_above_48k(
    rng: np.random.Generator, device: driver.Device, stream: driver.Stream
) -> None:
    n = 64 * 1024 // 4 + 3
    host = rng.standard_normal(n).astype(np.float32)
    inp = DeviceArray.from_numpy(host, stream)
    out = DeviceArray.empty(n, np.float32, stream)
    RtcKernel(SMEM_REVERSE, "smem_reverse").launch(
        1, 256, [out, inp, np.int32(n)], shared_bytes=n * 4, stream=stream
    )
    np.testing.assert_array_equal(out.numpy(), host[::-1])


def test_large_block_recompiles_with_register_cap(
    rng: np.random.Generator, stream: driver.Stream
) -> None:
    n = 3000
    host = rng.standard_normal(n).astype(np.float32)
    inp = DeviceArray.from_numpy(host, stream)
    out = DeviceArray.empty(n, np.float32, stream)
    kernel = RtcKernel(HEAVY, "heavy", block_size=128)
    assert kernel.max_registers is None
    kernel.launch(-(-n // 1024), 1024, [out, inp, np.int32(n)], stream=stream)
    assert kernel.max_registers == 64
    assert kernel.function.num_registers <= 64
    assert kernel.function.max_threads_per_block == 1024
    i = np.arange(n)[:, None]
    k = np.arange(48)[None, :]
    acc = host[(i + k) % n].astype(np.float64) * (k + 1)
    terms = acc * acc[:, ::-1]
    # float32 accumulation of 48 terms: error well under 1e-5 of the sum of their magnitudes
    error = np.abs(out.numpy() - terms.sum(axis=1))
    assert np.all(error <= 1e-5 * np.abs(terms).sum(axis=1))


def test_compiled_kernel_loads_for_current_device(device: driver.Device) -> None:
    kernel = CompiledKernel(FILL, "fill")
    func = kernel.function
    assert kernel.arch == device.arch
    assert kernel.function is func
    assert func.name == "fill" and func.num_registers > 0


# --------------------------------------------------------------------------------------------
# streams and events


def test_stream_event_ordering(rng: np.random.Generator, device: driver.Device) -> None:
    kernel_fill = RtcKernel(STREAMS, "slow_fill")
    kernel_copy = RtcKernel(STREAMS, "copy")
    s1, s2 = driver.Stream(), driver.Stream()
    assert s1.owned and s1.handle != s2.handle != 0
    n = 4099
    value = float(np.float32(rng.uniform(1, 2)))
    x = DeviceArray.zeros(n, np.float32, s1)
    y = DeviceArray.zeros(n, np.float32, s2)
    s1.synchronize()
    s2.synchronize()
    start, end = driver.Event(), driver.Event()
    start.record(s1)
    kernel_fill.launch(1, 256, [x, n, value, 20_000_000], stream=s1)  # >= 10 ms at <= 2 GHz
    end.record(s1)
    s2.wait_event(end)
    kernel_copy.launch(-(-n // 256), 256, [y, x, n], stream=s2)
    s2.synchronize()
    assert end.query() and s1.query()
    np.testing.assert_array_equal(y.numpy(), np.full(n, value, np.float32))
    assert start.elapsed_ms(end) > 2.0
    assert driver.elapsed_ms(start, end) == start.elapsed_ms(end)


def test_external_stream_is_not_owned(device: driver.Device) -> None:
    s = driver.Stream(0)
    assert not s.owned and s.handle == 0 and driver.stream_handle(s) == 0
    s.synchronize()


# --------------------------------------------------------------------------------------------
# errors


def test_bad_launch_names_cu_launch_kernel(device: driver.Device) -> None:
    kernel = RtcKernel(FILL, "fill")
    out = DeviceArray.empty(4, np.float32)
    with pytest.raises(CudaError, match=r"cuLaunchKernel failed for kernel 'fill'.*CUDA_ERROR_"):
        kernel.launch(1, 2048, [out, 4, 1.0])
    with pytest.raises(CudaError, match=r"cuLaunchKernel|cuFuncSetAttribute"):
        kernel.launch(
            1, 32, [out, 4, 1.0], shared_bytes=device.max_shared_memory_per_block_optin + 4
        )
    # the context is still usable
    kernel.launch(1, 32, [out, 4, 1.0])
    np.testing.assert_array_equal(out.numpy(), np.ones(4, np.float32))


def test_bad_cubin_names_cu_module_load_data(device: driver.Device) -> None:
    with pytest.raises(CudaError, match="cuModuleLoadData failed: CUDA_ERROR_"):
        driver.load_module(b"this is neither a cubin nor PTX\0")


def test_wrong_kernel_name_names_cu_module_get_function(device: driver.Device) -> None:
    module = driver.load_module(CompiledKernel(FILL, "fill").compile())
    with pytest.raises(CudaError, match="cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"):
        module.get_function("no_such_kernel")


# --------------------------------------------------------------------------------------------
# interop through our own interfaces


class _Cai:
    def __init__(self, interface: dict[str, Any]) -> None:
        self.__cuda_array_interface__ = interface


class _DLPack:
    def __init__(self, target: Any) -> None:
        self.target = target

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.target.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.target.__dlpack_device__()


def test_view_of_device_array_cai_and_dlpack(
    rng: np.random.Generator, device: driver.Device, stream: driver.Stream
) -> None:
    host = rng.standard_normal((3, 127)).astype(np.float32)
    a = DeviceArray.from_numpy(host, stream)
    direct = view_of(a)
    assert (direct.ptr, direct.shape, direct.strides) == (a.ptr, (3, 127), (127, 1))
    assert direct.kind == "cuda" and direct.device == device.ordinal

    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["stream"] == stream.handle
    via_cai = view_of(_Cai(cai), stream)
    assert (via_cai.ptr, via_cai.shape, via_cai.strides, via_cai.dtype, via_cai.device) == (
        a.ptr,
        (3, 127),
        (127, 1),
        np.float32,
        device.ordinal,
    )

    _quiesce()
    start = arrays.live_dlpack_exports()
    via_dlpack = view_of(_DLPack(a), None)  # orders the array's stream before the default one
    assert (via_dlpack.ptr, via_dlpack.shape, via_dlpack.dtype) == (a.ptr, (3, 127), np.float32)
    assert via_dlpack.kind == "cuda" and via_dlpack.device == device.ordinal
    assert arrays.live_dlpack_exports() == start + 1
    del via_dlpack
    gc.collect()
    assert arrays.live_dlpack_exports() == start


def test_bf16_has_no_cuda_array_interface(device: driver.Device) -> None:
    a = DeviceArray.empty(3, ml_dtypes.bfloat16)
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match=r"bfloat16.*DLPack"):
        a.__cuda_array_interface__  # noqa: B018
    v = view_of(_DLPack(a))
    assert v.dtype == BFLOAT16 and v.ptr == a.ptr


def test_dlpack_export_checks_device_and_copies(
    rng: np.random.Generator, device: driver.Device
) -> None:
    host = rng.standard_normal(127).astype(np.float32)
    a = DeviceArray.from_numpy(host)
    with pytest.raises(BufferError, match="cannot be exported"):
        a.__dlpack__(dl_device=(1, 0))
    copied = arrays.parse_dlpack_capsule(a.__dlpack__(copy=True))
    assert copied.ptr != a.ptr
    back = np.empty_like(host)
    driver.memcpy_dtoh(back.ctypes.data, copied.ptr, back.nbytes)
    np.testing.assert_array_equal(back, host)


# --------------------------------------------------------------------------------------------
# torch and cupy


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.int64, np.bool_], ids=str)
def test_torch_from_dlpack_is_zero_copy(rng: np.random.Generator, torch: Any, dtype: Any) -> None:
    dtype = np.dtype(dtype)
    host = _random((3, 127), dtype, rng)
    a = DeviceArray.from_numpy(host)
    _quiesce()
    start = arrays.live_dlpack_exports()
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.ptr and t.is_cuda and tuple(t.shape) == (3, 127)
    del a
    gc.collect()  # t keeps the memory alive
    values = t.float().cpu().numpy() if dtype == BFLOAT16 else t.cpu().numpy()
    np.testing.assert_array_equal(values, host.astype(values.dtype))
    del t
    gc.collect()
    assert arrays.live_dlpack_exports() == start


def test_torch_reads_cuda_array_interface_zero_copy(rng: np.random.Generator, torch: Any) -> None:
    host = rng.standard_normal((5, 7)).astype(np.float32)
    a = DeviceArray.from_numpy(host)
    t = torch.as_tensor(a, device="cuda")
    assert t.data_ptr() == a.ptr
    np.testing.assert_array_equal(t.cpu().numpy(), host)


def test_view_of_torch_tensors(torch: Any, device: driver.Device) -> None:
    t = torch.randn(7, 127, device="cuda")
    tt = t.T[1:]
    v = view_of(tt)
    assert v.ptr == tt.data_ptr() and v.strides == tuple(tt.stride()) and v.shape == (126, 7)
    assert v.dtype == np.float32 and v.device == device.ordinal and v.kind == "cuda"
    bf = t.to(torch.bfloat16)
    assert view_of(bf).dtype == BFLOAT16
    with pytest.raises(Exception, match="cpu"):
        view_of(t.cpu())


def test_torch_tensors_as_kernel_arguments(rng: np.random.Generator, torch: Any) -> None:
    n = 127
    value = float(np.float32(rng.uniform(-3, 3)))
    t = torch.zeros(n, device="cuda")
    RtcKernel(FILL, "fill").launch(1, 128, [t, n, value])  # legacy default stream, as torch's
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), np.full(n, value, np.float32))


@pytest.fixture
def cupy(device: driver.Device) -> Any:
    return pytest.importorskip("cupy")


def test_cupy_interop_zero_copy(rng: np.random.Generator, cupy: Any, device: driver.Device) -> None:
    host = rng.standard_normal((3, 127)).astype(np.float32)
    a = DeviceArray.from_numpy(host)
    c = cupy.asarray(a)  # __cuda_array_interface__
    assert c.data.ptr == a.ptr
    np.testing.assert_array_equal(cupy.asnumpy(c), host)
    d = cupy.from_dlpack(a)
    assert d.data.ptr == a.ptr
    sliced = c[:, 1::2]
    v = view_of(sliced)
    assert v.ptr == sliced.data.ptr and v.strides == (127, 2) and v.device == device.ordinal
