"""The CUDA driver, behind a small checked API.

This module is the only code in fuser that calls the CUDA driver (`cuda.bindings.driver`). Every
driver call goes through `check`, so a failure raises `fuser.errors.CudaError` naming the call and
the CUDA error instead of returning an error code someone may forget to test.

Work runs in the device's *primary* context, the one torch and cupy also use, so device pointers
and streams can be shared with them freely. Memory comes from the device's stream-ordered default
memory pool (`cuMemAllocAsync` / `cuMemFreeAsync`); its release threshold is raised so freed memory
stays in the pool for the next allocation instead of going back to the OS at every synchronize.

Streams are passed as a `Stream`, a raw handle (`int`), or `None` for the legacy default stream.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import cuda.bindings.driver as cu  # (the `from` form hides a compiled module from pyright)

from fuser.errors import CudaError

_SUCCESS = cu.CUresult.CUDA_SUCCESS
_UINT64_MAX = (1 << 64) - 1


def _error_text(err: Any) -> str:
    """`NAME (description)` for a CUresult, even when the driver itself cannot be asked."""
    try:
        name_err, name = cu.cuGetErrorName(err)
        text_err, text = cu.cuGetErrorString(err)
    except Exception:  # no libcuda: fall back to the enum's own name
        name_err = text_err = None
        name = text = None
    name_str = (
        name.decode() if name_err == _SUCCESS and name else getattr(err, "name", f"CUresult {err}")
    )
    if text_err == _SUCCESS and text:
        return f"{name_str} ({text.decode()})"
    return name_str


def check(result: tuple[Any, ...], call: str) -> Any:
    """Check a driver binding's result tuple `(CUresult, *values)` and return its values.

    Returns None when the call returns nothing, the value when it returns one, else the tuple.
    Raises CudaError naming `call` and the CUDA error name and string on a failure.
    """
    err = result[0]
    if err != _SUCCESS:
        raise CudaError(f"{call} failed: {_error_text(err)}")
    n = len(result)
    if n == 1:
        return None
    if n == 2:
        return result[1]
    return result[1:]


# --------------------------------------------------------------------------------------------
# Availability and devices


_available: bool | None = None


def _probe() -> bool:
    """Initialise the driver and look for a device; False on any failure."""
    try:
        (err,) = cu.cuInit(0)
        if err != _SUCCESS:
            return False
        err, count = cu.cuDeviceGetCount()
        return err == _SUCCESS and count > 0
    except Exception:  # libcuda missing or unusable
        return False


def gpu_available() -> bool:
    """Whether a CUDA driver and at least one device are present. Never raises; cached."""
    global _available
    if _available is None:
        _available = _probe()
    return _available


def _require_gpu() -> None:
    if not gpu_available():
        raise CudaError("no CUDA device is available (libcuda missing or no device found)")


class Device:
    """One CUDA device with its primary context and the attributes the compiler plans with.

    Created through `get_device` / `current_device`; attributes are read once when first asked.
    """

    def __init__(self, ordinal: int) -> None:
        _require_gpu()
        self.ordinal = ordinal
        self.handle = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        self.context = check(cu.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self._attributes: dict[Any, int] = {}
        self._pool: Any = None
        self._name: str | None = None

    def make_current(self) -> None:
        """Make this device's primary context current on the calling thread."""
        check(cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        _local.device = self

    def attribute(self, attr: Any) -> int:
        """A `CUdevice_attribute` of this device (cached)."""
        value = self._attributes.get(attr)
        if value is None:
            value = check(cu.cuDeviceGetAttribute(attr, self.handle), "cuDeviceGetAttribute")
            self._attributes[attr] = value
        return value

    @property
    def compute_capability(self) -> tuple[int, int]:
        a = cu.CUdevice_attribute
        return (
            self.attribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            self.attribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )

    @property
    def arch(self) -> str:
        """The SASS target of this device, e.g. "sm_90"."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def sm_count(self) -> int:
        return self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    @property
    def max_threads_per_block(self) -> int:
        return self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def max_shared_memory_per_block(self) -> int:
        """Shared memory a block gets without opting in (48 KiB)."""
        return self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)

    @property
    def max_shared_memory_per_block_optin(self) -> int:
        """Shared memory a block can get after `set_max_dynamic_shared_memory`."""
        return self.attribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        )

    @property
    def max_shared_memory_per_sm(self) -> int:
        return self.attribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        )

    @property
    def registers_per_sm(self) -> int:
        return self.attribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR
        )

    @property
    def warp_size(self) -> int:
        return self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE)

    @property
    def l2_bytes(self) -> int:
        return self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)

    @property
    def name(self) -> str:
        if self._name is None:
            raw: bytes = check(cu.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
            name = self._name = raw.split(b"\0", 1)[0].decode()
            return name
        return self._name

    @property
    def memory_pool(self) -> Any:
        """The device's default stream-ordered memory pool (release threshold raised to max)."""
        if self._pool is None:
            pool = check(cu.cuDeviceGetDefaultMemPool(self.handle), "cuDeviceGetDefaultMemPool")
            check(
                cu.cuMemPoolSetAttribute(
                    pool,
                    cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    cu.cuuint64_t(_UINT64_MAX),
                ),
                "cuMemPoolSetAttribute",
            )
            self._pool = pool
        return self._pool

    def synchronize(self) -> None:
        """Wait for all work in this device's primary context."""
        self.make_current()
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")

    def __repr__(self) -> str:
        return f"Device({self.ordinal}, {self.name!r}, {self.arch})"


_devices: dict[int, Device] = {}
_devices_lock = threading.Lock()
_local = threading.local()


def get_device(ordinal: int) -> Device:
    """The Device for `ordinal` (created once; its primary context is retained)."""
    dev = _devices.get(ordinal)
    if dev is None:
        with _devices_lock:
            dev = _devices.get(ordinal)
            if dev is None:
                dev = Device(ordinal)
                _devices[ordinal] = dev
    return dev


def current_device() -> Device:
    """The device work on this thread goes to, with its primary context current.

    The first call on a thread adopts the device of whatever context is already current there
    (e.g. one torch made current), else device 0; later calls return the same device.
    """
    dev: Device | None = getattr(_local, "device", None)
    if dev is not None:
        return dev
    _require_gpu()
    ordinal = 0
    ctx = check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is not None and int(ctx) != 0:
        ordinal = int(check(cu.cuCtxGetDevice(), "cuCtxGetDevice"))
    dev = get_device(ordinal)
    dev.make_current()
    return dev


def synchronize() -> None:
    """Wait for all work on the current device."""
    current_device().synchronize()


def _release(destroy: Callable[[Any], tuple[Any, ...]], handle: Any, call: str) -> None:
    """Destroy a driver object from `__del__`, on whatever thread the collector runs (the
    primary context is made current there); failures are quiet only at interpreter exit."""
    try:
        current_device()
        check(destroy(handle), call)
    except Exception:
        if not sys.is_finalizing():
            raise


# --------------------------------------------------------------------------------------------
# Streams and events


class Stream:
    """A CUDA stream: a new non-blocking one (owned, destroyed with this object) or a wrapped
    external handle (e.g. torch's current stream; never destroyed here)."""

    def __init__(self, handle: int | None = None) -> None:
        if handle is None:
            current_device()
            self._cu = check(
                cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate"
            )
            self.owned = True
        else:
            self._cu = cu.CUstream(handle)
            self.owned = False
        self.handle: int = int(self._cu)

    def synchronize(self) -> None:
        check(cu.cuStreamSynchronize(self.handle), "cuStreamSynchronize")

    def query(self) -> bool:
        """True when all work on the stream has finished."""
        (err,) = cu.cuStreamQuery(self.handle)
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((err,), "cuStreamQuery")
        return True

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for `event`."""
        stream_wait_event(self, event)

    def __del__(self) -> None:
        if getattr(self, "owned", False):
            _release(cu.cuStreamDestroy, self.handle, "cuStreamDestroy")

    def __int__(self) -> int:
        return self.handle

    def __repr__(self) -> str:
        return f"Stream(0x{self.handle:x}{', owned' if self.owned else ''})"


StreamLike = Stream | int | None


def stream_handle(stream: StreamLike) -> int:
    """The raw handle of a Stream, an int handle, or None (the legacy default stream, 0)."""
    if type(stream) is int:  # the launch paths' case: first
        return stream
    if stream is None:
        return 0
    if isinstance(stream, Stream):
        return stream.handle
    return int(stream)


class Event:
    """A CUDA event; `timing=False` makes a lighter event usable only for ordering."""

    def __init__(self, timing: bool = True) -> None:
        current_device()
        flags = (
            cu.CUevent_flags.CU_EVENT_DEFAULT
            if timing
            else cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        )
        self._cu = check(cu.cuEventCreate(flags), "cuEventCreate")
        self.timing = timing

    def record(self, stream: StreamLike = None) -> Event:
        check(cu.cuEventRecord(self._cu, stream_handle(stream)), "cuEventRecord")
        return self

    def synchronize(self) -> None:
        check(cu.cuEventSynchronize(self._cu), "cuEventSynchronize")

    def query(self) -> bool:
        """True when the work the event waits on has finished."""
        (err,) = cu.cuEventQuery(self._cu)
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((err,), "cuEventQuery")
        return True

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to `end` (both recorded, `end` completed)."""
        return float(check(cu.cuEventElapsedTime(self._cu, end._cu), "cuEventElapsedTime"))

    def __del__(self) -> None:
        if getattr(self, "_cu", None) is not None:
            _release(cu.cuEventDestroy, self._cu, "cuEventDestroy")


def stream_wait_event(stream: StreamLike, event: Event) -> None:
    """Make later work on `stream` wait until `event` has completed."""
    check(cu.cuStreamWaitEvent(stream_handle(stream), event._cu, 0), "cuStreamWaitEvent")


def elapsed_ms(start: Event, end: Event) -> float:
    return start.elapsed_ms(end)


# --------------------------------------------------------------------------------------------
# Memory


def alloc(nbytes: int, stream: StreamLike = None) -> int:
    """Allocate `nbytes` from the current device's default pool, ordered on `stream`."""
    current_device().memory_pool  # noqa: B018 (raises the pool's release threshold once)
    ptr = check(cu.cuMemAllocAsync(nbytes, stream_handle(stream)), "cuMemAllocAsync")
    return int(ptr)


def free(ptr: int, stream: StreamLike = None) -> None:
    """Return `ptr` to its pool once the work queued on `stream` before this call is done."""
    check(cu.cuMemFreeAsync(ptr, stream_handle(stream)), "cuMemFreeAsync")


class DeviceBuffer:
    """Device memory outside the stream-ordered pool (which keeps what it frees), freed with
    `cuMemFree` when the object goes; `cuMemFree` waits for the device's work: a kernel still
    reading it on any stream finishes first, where a pool free is ordered on one stream only."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.ptr = int(check(cu.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc"))

    def __del__(self) -> None:
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            _release(cu.cuMemFree, ptr, "cuMemFree")


class DeviceConstant(DeviceBuffer):
    """A copy of host bytes in a `DeviceBuffer`, for the constants a host program uploads once
    and every later call reads (`host.iota`)."""

    def __init__(self, address: int, nbytes: int) -> None:
        super().__init__(nbytes)
        if nbytes:
            memcpy_htod(self.ptr, address, nbytes)  # complete when this returns


def pool_used_bytes(device: Device | None = None) -> int:
    """Bytes currently allocated from the device's default pool (USED_MEM_CURRENT)."""
    dev = device if device is not None else current_device()
    value = check(
        cu.cuMemPoolGetAttribute(
            dev.memory_pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT
        ),
        "cuMemPoolGetAttribute",
    )
    return int(value)


def pointer_device(ptr: int) -> int:
    """The ordinal of the device a device pointer belongs to."""
    return int(
        check(
            cu.cuPointerGetAttribute(
                cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr
            ),
            "cuPointerGetAttribute",
        )
    )


def memcpy_htod_async(dst: int, src: Any, nbytes: int, stream: StreamLike = None) -> None:
    """Copy `nbytes` from host address / buffer `src` to device pointer `dst` on `stream`."""
    check(cu.cuMemcpyHtoDAsync(dst, src, nbytes, stream_handle(stream)), "cuMemcpyHtoDAsync")


def memcpy_dtoh_async(dst: Any, src: int, nbytes: int, stream: StreamLike = None) -> None:
    """Copy `nbytes` from device pointer `src` to host address / buffer `dst` on `stream`."""
    check(cu.cuMemcpyDtoHAsync(dst, src, nbytes, stream_handle(stream)), "cuMemcpyDtoHAsync")


def memcpy_dtod_async(dst: int, src: int, nbytes: int, stream: StreamLike = None) -> None:
    check(cu.cuMemcpyDtoDAsync(dst, src, nbytes, stream_handle(stream)), "cuMemcpyDtoDAsync")


def memset_d8_async(dst: int, value: int, nbytes: int, stream: StreamLike = None) -> None:
    """Set `nbytes` bytes at `dst` to `value` on `stream`."""
    check(cu.cuMemsetD8Async(dst, value, nbytes, stream_handle(stream)), "cuMemsetD8Async")


def stream_synchronize(stream: StreamLike = None) -> None:
    check(cu.cuStreamSynchronize(stream_handle(stream)), "cuStreamSynchronize")


def memcpy_htod(dst: int, src: Any, nbytes: int, stream: StreamLike = None) -> None:
    """Host-to-device copy that returns once the copy is done."""
    memcpy_htod_async(dst, src, nbytes, stream)
    stream_synchronize(stream)


def memcpy_dtoh(dst: Any, src: int, nbytes: int, stream: StreamLike = None) -> None:
    """Device-to-host copy that returns once the data is on the host."""
    memcpy_dtoh_async(dst, src, nbytes, stream)
    stream_synchronize(stream)


# --------------------------------------------------------------------------------------------
# Modules, functions, launches


class Module:
    """A loaded cubin; unloaded when garbage-collected."""

    def __init__(self, handle: Any) -> None:
        self._cu = handle

    def get_function(self, name: str) -> Function:
        fn = check(cu.cuModuleGetFunction(self._cu, name.encode()), "cuModuleGetFunction")
        return Function(fn, name, self)

    def __del__(self) -> None:
        if getattr(self, "_cu", None) is not None:
            _release(cu.cuModuleUnload, self._cu, "cuModuleUnload")


class Function:
    """A kernel in a loaded Module (keeps the module alive)."""

    def __init__(self, handle: Any, name: str, module: Module) -> None:
        self._cu = handle
        self.name = name
        self.module = module
        self.handle = int(handle)

    def attribute(self, attr: Any) -> int:
        return int(check(cu.cuFuncGetAttribute(attr, self._cu), "cuFuncGetAttribute"))

    @property
    def num_registers(self) -> int:
        return self.attribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS)

    @property
    def max_threads_per_block(self) -> int:
        """The largest block this kernel can be launched with (limited by its registers)."""
        return self.attribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    def __repr__(self) -> str:
        return f"Function({self.name!r})"


def load_module(cubin: bytes) -> Module:
    """Load a cubin into the current device's primary context."""
    current_device()
    return Module(check(cu.cuModuleLoadData(cubin), "cuModuleLoadData"))


def get_function(module: Module, name: str) -> Function:
    return module.get_function(name)


def set_max_dynamic_shared_memory(func: Function, nbytes: int) -> None:
    """Allow launches of `func` with up to `nbytes` of dynamic shared memory (above 48 KiB)."""
    check(
        cu.cuFuncSetAttribute(
            func._cu,
            cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            nbytes,
        ),
        "cuFuncSetAttribute",
    )


def launch(
    func: Function,
    grid: Sequence[int],
    block: Sequence[int],
    shared_bytes: int,
    stream: StreamLike,
    kernel_params_address: int,
) -> None:
    """Launch `func` with a pre-packed argument array.

    `grid` and `block` are 3-tuples; `kernel_params_address` is the address of a `void*[n]` whose
    entries point at each argument's bytes (0 for a kernel without parameters). The driver copies
    the arguments before this returns, so the buffers may be reused right after.
    """
    gx, gy, gz = grid
    bx, by, bz = block
    (err,) = cu.cuLaunchKernel(
        func._cu,
        gx,
        gy,
        gz,
        bx,
        by,
        bz,
        shared_bytes,
        stream_handle(stream),
        kernel_params_address,
        0,
    )
    if err != _SUCCESS:
        raise CudaError(
            f"cuLaunchKernel failed for kernel {func.name!r} with grid {tuple(grid)}, block "
            f"{tuple(block)}, {shared_bytes} bytes of dynamic shared memory: {_error_text(err)}"
        )


class KernelNode(NamedTuple):
    """One kernel of a `LaunchGraph`: the function and its launch configuration, the address
    of its `void*[]` argument array, and `arguments`, the buffer that array points into (its
    bytes are compared between launches)."""

    func: Function
    grid: Sequence[int]
    block: Sequence[int]
    shared_bytes: int
    params_address: int
    arguments: Any  # a ctypes buffer (`.raw` gives its bytes)


class LaunchGraph:
    """A fixed sequence of kernel launches, replayed as one CUDA graph.

    On an H100 host a launch through cuda-python's `cuLaunchKernel` takes about 4-5 µs, a graph
    launch about 3 µs, and refreshing a kernel node's arguments about 1 µs more
    (benchmarks/RESULTS.md runs 13 and 16), so the executors launch their kernels this way.
    Each node runs after the one before it. `launch(stream)` gives each node the arguments its
    buffer holds now (the driver copies them there and then, as `cuLaunchKernel` does, so the
    buffers may change for the next call) and launches the graph on `stream`: ordered after the
    stream's earlier work, as the launches one by one would be. A node whose buffer holds the
    bytes it was last given keeps them without a driver call: in a steady loop torch's caching
    allocator hands out the same addresses call after call.
    """

    def __init__(self, kernels: Sequence[KernelNode]) -> None:
        self.names = [k.func.name for k in kernels]
        self._graph = check(cu.cuGraphCreate(0), "cuGraphCreate")
        self._exec: Any = None
        nodes = []
        previous: list[Any] = []
        for k in kernels:
            params = cu.CUDA_KERNEL_NODE_PARAMS()
            params.func = k.func._cu
            params.gridDimX, params.gridDimY, params.gridDimZ = k.grid
            params.blockDimX, params.blockDimY, params.blockDimZ = k.block
            params.sharedMemBytes = k.shared_bytes
            params.kernelParams = k.params_address
            node = check(
                cu.cuGraphAddKernelNode(self._graph, previous, len(previous), params),
                "cuGraphAddKernelNode",
            )
            nodes.append((node, params, k.arguments))
            previous = [node]
        self._exec = check(cu.cuGraphInstantiate(self._graph, 0), "cuGraphInstantiate")
        self._nodes = tuple(nodes)
        self._given = [arguments.raw for _, _, arguments in nodes]  # what each node holds

    def launch(self, stream: StreamLike) -> None:
        """Refresh the kernels' changed arguments and launch them on `stream` (CudaError on
        failure)."""
        graph_exec, given = self._exec, self._given
        for i, (node, params, arguments) in enumerate(self._nodes):
            now = arguments.raw
            if now != given[i]:
                (err,) = cu.cuGraphExecKernelNodeSetParams(graph_exec, node, params)
                if err is not _SUCCESS:
                    raise CudaError(
                        f"cuGraphExecKernelNodeSetParams failed for kernels {self.names}: "
                        f"{_error_text(err)}"
                    )
                given[i] = now
        (err,) = cu.cuGraphLaunch(graph_exec, stream_handle(stream))
        if err is not _SUCCESS:
            raise CudaError(f"cuGraphLaunch failed for kernels {self.names}: {_error_text(err)}")

    def __del__(self) -> None:
        try:
            if self._exec is not None:
                cu.cuGraphExecDestroy(self._exec)
            cu.cuGraphDestroy(self._graph)
        except Exception:  # interpreter shutdown: the driver may be gone already
            pass


LAUNCH_KERNEL = cu.cuLaunchKernel
"""cuda-python's `cuLaunchKernel`, for the generated launches of a host program that run outside
a `LaunchGraph` (in loops, on other streams): called as `LAUNCH_KERNEL(*launch_prefix(...),
stream_handle, kernel_params_address, 0)` it returns `(CUresult,)`. It skips `launch`'s Python
frame and argument handling (about 1.5 µs of a 4-6 µs launch on an H100 host,
benchmarks/RESULTS.md run 13); a caller hands any result other than `SUCCESS` to `launch`, which
retries the launch and raises the fuser error naming the kernel."""

SUCCESS = _SUCCESS
"""The `CUresult` of a call that worked (compare with `is`)."""


def launch_prefix(
    func: Function, grid: Sequence[int], block: Sequence[int], shared_bytes: int
) -> tuple[Any, ...]:
    """The leading arguments of `LAUNCH_KERNEL` for `func` with this configuration."""
    return (func._cu, *grid, *block, shared_bytes)
