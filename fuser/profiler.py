"""What `fd.execute(inputs, profile=True)` measured, as `fd.profile()` returns it.

A profiled call runs the fusion as any call does, on the call's stream, with a pair of CUDA
events around each kernel launch (nvFuser's profiler reads CUPTI; fuser's events time the same
launches from the GPU's side, to about a microsecond). A program's launches then run one by one,
not as the CUDA graphs of an unprofiled call, so that each has its own events; the kernels,
their arguments and their order are those of an unprofiled call. An event on an idle GPU would
also time the host's work until the kernel arrives (the launch itself, loading the function
on its first launch), so the call's launches are queued behind a kernel that only waits
(`HEAD_START_MS`, and 0.1 ms more per launch): the host issues them while it runs, and the GPU
then runs events and kernels back to back, as benchmarks do behind their L2 flush. The call
waits for its events before it returns.

`FusionProfile` keeps nvFuser's names for what both report: `kernel_profiles`, `segments`,
`cuda_evt_time_ms` (the call on the GPU, first launch to last), `host_time_ms` (the call on the
host, compilation excluded; with numpy inputs the call waits for its outputs, so this holds
the GPU's time too), `compile_time_ms` (this call's compilation, 0 on a cache hit),
`kernel_time_ms` (the sum of the kernels'), `input_bytes`, `output_bytes`,
`effective_bandwidth_gbs` and `percentage_peak_bandwidth`. fuser's peak is the device's
measured device-to-device copy bandwidth (`copy_gbs`: a 256 MiB `cuMemcpyDtoD`, timed once
per device and process), the figure its benchmarks compare against, not the memory's
theoretical bandwidth.

A kernel's bytes are those it must move at least (`kernel_binding.moved_bytes`): each tensor
argument once, a dim of stride 0 (a broadcast) counted once, not per element that reads it. The
fusion's are its inputs' (the same way) and its outputs'.

Profiled calls of one process run one at a time (`_PROFILE_LOCK`): a profiled specialization
collects its launches in one list.
"""

from __future__ import annotations

import ctypes
import math
import statistics
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fuser.errors import CudaError
from fuser.runtime import driver
from fuser.runtime.calls import Call
from fuser.runtime.executor import Entry, TensorParam
from fuser.runtime.host_evaluator import LaunchRecord, Specialization
from fuser.runtime.kernel_binding import moved_bytes
from fuser.runtime.signature import DTYPES_BY_CODE, InputMeta, decode_signature

COPY_BYTES = 256 << 20
"""The bytes the copy that gives `copy_gbs` reads (and writes): five times an H100's L2."""

HEAD_START_MS = 1.0
"""How long the GPU waits before a profiled call's first launch, plus 0.1 ms per launch."""

_WAIT_SOURCE = r"""
extern "C" __global__ void fuser_profile_wait(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
"""


@dataclass(frozen=True)
class KernelProfile:
    """One kernel launch of a profiled call (nvFuser's `KernelProfile` fields where both have
    them)."""

    name: str
    scheduler: str
    device: int
    stream: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    """The launch's dynamic shared memory."""
    registers: int
    """Registers per thread (the loaded function's)."""
    time_ms: float
    input_bytes: int
    output_bytes: int
    copy_gbs: float

    @property
    def effective_bandwidth_gbs(self) -> float:
        """(input + output bytes) / `time_ms`, in GB/s (1e9 bytes per second)."""
        return _gbs(self.input_bytes + self.output_bytes, self.time_ms)

    @property
    def percentage_peak_bandwidth(self) -> float:
        """The effective bandwidth as a percentage of the device's copy bandwidth."""
        return _percent(self.effective_bandwidth_gbs, self.copy_gbs)


@dataclass(frozen=True)
class FusionProfile:
    """A profiled call of one fusion: the whole call and each kernel (see the module
    docstring). `str()` prints it as a table."""

    fusion: str
    kernel_profiles: tuple[KernelProfile, ...]
    cuda_evt_time_ms: float
    host_time_ms: float
    compile_time_ms: float
    input_bytes: int
    output_bytes: int
    copy_gbs: float

    @property
    def segments(self) -> int:
        """The number of kernel launches."""
        return len(self.kernel_profiles)

    @property
    def kernel_time_ms(self) -> float:
        """The sum of the kernels' times."""
        return sum(k.time_ms for k in self.kernel_profiles)

    @property
    def effective_bandwidth_gbs(self) -> float:
        """The fusion's input and output bytes over `cuda_evt_time_ms`, in GB/s."""
        return _gbs(self.input_bytes + self.output_bytes, self.cuda_evt_time_ms)

    @property
    def percentage_peak_bandwidth(self) -> float:
        """The effective bandwidth as a percentage of the device's copy bandwidth."""
        return _percent(self.effective_bandwidth_gbs, self.copy_gbs)

    def __str__(self) -> str:
        head = (
            f"fusion @{self.fusion}: {self.segments} kernel(s), {self.cuda_evt_time_ms:.4f} ms "
            f"on the GPU ({self.kernel_time_ms:.4f} ms in kernels), {self.host_time_ms:.4f} ms "
            f"on the host, {self.compile_time_ms:.1f} ms compiling; "
            f"{_size(self.input_bytes)} in, {_size(self.output_bytes)} out, "
            f"{self.effective_bandwidth_gbs:.0f} GB/s = {self.percentage_peak_bandwidth:.0f}% "
            f"of copy ({self.copy_gbs:.0f} GB/s)"
        )
        rows = [
            ("kernel", "scheduler", "grid", "block", "smem", "regs", "ms", "bytes", "GB/s", "%")
        ]
        for k in self.kernel_profiles:
            rows.append(
                (
                    k.name,
                    k.scheduler,
                    "x".join(map(str, k.grid)),
                    "x".join(map(str, k.block)),
                    str(k.shared_bytes),
                    str(k.registers),
                    f"{k.time_ms:.4f}",
                    _size(k.input_bytes + k.output_bytes),
                    f"{k.effective_bandwidth_gbs:.0f}",
                    f"{k.percentage_peak_bandwidth:.0f}",
                )
            )
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        lines = [
            "  "
            + "  ".join(
                v.ljust(w) if c < 2 else v.rjust(w)
                for c, (v, w) in enumerate(zip(r, widths, strict=True))
            )
            for r in rows
        ]
        return "\n".join([head, *lines])


def _gbs(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e6) if ms > 0 else 0.0


def _percent(gbs: float, copy_gbs: float) -> float:
    return 100 * gbs / copy_gbs


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


_COPY_GBS: dict[int, float] = {}
_COPY_LOCK = threading.Lock()


def copy_bandwidth(device: int) -> float:
    """The device's device-to-device copy bandwidth in GB/s (read + write bytes per second):
    the median of 5 timed `COPY_BYTES` `cuMemcpyDtoDAsync`s of a zeroed buffer after one
    untimed, in memory outside the pool (freed right after), measured on first use per device
    (the device current) and kept for the process; NaN where the memory is not there (the
    percentages then read NaN, the call still runs)."""
    with _COPY_LOCK:
        gbs = _COPY_GBS.get(device)
        if gbs is None:
            try:
                src, dst = driver.DeviceBuffer(COPY_BYTES), driver.DeviceBuffer(COPY_BYTES)
            except CudaError:
                return math.nan  # (not kept: another call may find the memory)
            stream = driver.Stream()
            driver.memset_d8_async(src.ptr, 0, COPY_BYTES, stream)  # (no undefined bytes read)
            driver.memcpy_dtod_async(dst.ptr, src.ptr, COPY_BYTES, stream)
            times = []
            for _ in range(5):
                start = driver.Event().record(stream)
                driver.memcpy_dtod_async(dst.ptr, src.ptr, COPY_BYTES, stream)
                end = driver.Event().record(stream)
                end.synchronize()
                times.append(start.elapsed_ms(end))
            gbs = _COPY_GBS[device] = _gbs(2 * COPY_BYTES, statistics.median(times))
        return gbs


_PROFILE_LOCK = threading.Lock()
_WAITERS: dict[int, driver.Function] = {}


def wait(device: int, stream: int, ms: float) -> None:
    """Queue a kernel on `stream` that only waits for `ms` (the device current; compiled with
    NVRTC on first use per device)."""
    func = _WAITERS.get(device)
    if func is None:
        from fuser.runtime.compiled_kernel import nvrtc_compile

        cubin, _ = nvrtc_compile(_WAIT_SOURCE, "fuser_profile_wait", driver.get_device(device).arch)
        module = driver.load_module(cubin)
        func = _WAITERS[device] = driver.get_function(module, "fuser_profile_wait")
    ns = ctypes.c_uint64(int(ms * 1e6))
    params = (ctypes.c_void_p * 1)(ctypes.addressof(ns))
    driver.launch(func, (1, 1, 1), (1, 1, 1), 0, stream, ctypes.addressof(params))


def run_profiled(
    runnable: Entry | Specialization,
    call: Call,
    schedulers: Mapping[str, str],
    compile_time_ms: float,
) -> tuple[list[Any], FusionProfile]:
    """Run `call` with `runnable` (its signature's), timing each launch; `schedulers` names
    the scheduler of each kernel; `compile_time_ms` is what finding `runnable` compiled.
    Returns the outputs (of the inputs' kind) and the profile."""
    previous = driver.current_device()
    driver.get_device(call.device).make_current()
    try:
        with _PROFILE_LOCK:
            copy_gbs = copy_bandwidth(call.device)
            call.upload()  # host inputs: copied before the clock starts
            if isinstance(runnable, Entry):
                outputs, kernels, span, host_ms = _profile_entry(
                    runnable, call, copy_gbs, schedulers
                )
            else:
                outputs, kernels, span, host_ms = _profile_program(
                    runnable, call, copy_gbs, schedulers
                )
    finally:
        previous.make_current()
    # what the kernels wrote (not an input returned, or returned as a view)
    written = (
        outputs
        if isinstance(runnable, Entry)
        else [o for o, w in zip(outputs, runnable.result_is_output, strict=True) if w]
    )
    profile = FusionProfile(
        fusion=call.layout.fusion_name,
        kernel_profiles=tuple(kernels),
        cuda_evt_time_ms=span,
        host_time_ms=host_ms,
        compile_time_ms=compile_time_ms,
        input_bytes=sum(
            moved_bytes(m.shape, m.strides, DTYPES_BY_CODE[m.dtype_code].itemsize)
            for m in _metas(call)
            if m is not None
        ),
        output_bytes=sum(int(getattr(o, "nbytes", 0)) for o in written),
        copy_gbs=copy_gbs,
    )
    return outputs, profile


_Timed = tuple[list[Any], list[KernelProfile], float, float]
"""A profiled run: the outputs, the kernels, the GPU span and the host time (ms)."""


def _profile_entry(
    entry: Entry, call: Call, copy_gbs: float, schedulers: Mapping[str, str]
) -> _Timed:
    """One kernel's call between two events, behind the head start (its kernel loaded
    first)."""
    if entry.func is None:
        entry.executor.load(entry)
    wait(call.device, call.stream, HEAD_START_MS + 0.1)
    began = time.perf_counter()
    events: list[driver.Event] = []
    outputs = entry.executor.run_entry(entry, call, events)
    host_ms = (time.perf_counter() - began) * 1e3
    if not events:  # no output elements: no launch
        return outputs, [], 0.0, host_ms
    kernel = _entry_profile(entry, call, events, schedulers, copy_gbs)
    return outputs, [kernel], kernel.time_ms, host_ms


def _profile_program(
    runnable: Specialization, call: Call, copy_gbs: float, schedulers: Mapping[str, str]
) -> _Timed:
    """A program's call through its profiled specialization (built, its constants uploaded,
    before the head start), each launch between two timestamps."""
    spec = runnable.evaluator.profiled(call.key, call.scalars)
    records = spec.records
    assert records is not None
    if spec.pending_constants:
        spec.upload_constants()
    launches = max(len(spec.launches), len(records))  # (in loops: the last run's count)
    records.clear()
    wait(call.device, call.stream, HEAD_START_MS + 0.1 * launches)
    began = time.perf_counter()
    outputs = spec.run(call)
    host_ms = (time.perf_counter() - began) * 1e3
    kernels = [_launch_profile(r, spec, schedulers, copy_gbs) for r in records]
    return outputs, kernels, _span_ms(spec, records), host_ms


def _metas(call: Call) -> tuple[InputMeta | None, ...]:
    return decode_signature(call.key, call.layout.is_tensor)[0]


def _entry_profile(
    entry: Entry,
    call: Call,
    events: list[driver.Event],
    schedulers: Mapping[str, str],
    copy_gbs: float,
) -> KernelProfile:
    """The profile of a one-kernel call's launch (`events`: before and after it)."""
    executor = entry.executor
    events[1].synchronize()
    name = executor.kernel.kernel_name
    return KernelProfile(
        name=name,
        scheduler=schedulers.get(name, ""),
        device=entry.device,
        stream=call.stream,
        grid=entry.grid,
        block=entry.block,
        shared_bytes=entry.shared_bytes,
        registers=0 if entry.func is None else entry.func.num_registers,
        time_ms=events[0].elapsed_ms(events[1]),
        input_bytes=sum(
            moved_bytes(m.shape, m.strides, p.dtype.itemsize)
            for m, p in zip(_metas(call), executor.params.inputs, strict=True)
            if m is not None and isinstance(p, TensorParam)
        ),
        output_bytes=sum(
            math.prod(shape) * dtype.itemsize
            for shape, dtype in zip(entry.out_shapes, executor.out_dtypes, strict=True)
        ),
        copy_gbs=copy_gbs,
    )


def _launch_profile(
    record: LaunchRecord, spec: Specialization, schedulers: Mapping[str, str], copy_gbs: float
) -> KernelProfile:
    """The profile of one launch of a profiled program."""
    launcher = record.launcher
    return KernelProfile(
        name=launcher.name,
        scheduler=schedulers.get(launcher.name, ""),
        device=spec.device,
        stream=record.stream,
        grid=record.grid,
        block=launcher.block,
        shared_bytes=launcher.shared_bytes,
        registers=launcher.registers(),
        time_ms=spec.evaluator.backend.elapsed_ms(record.start, record.end),
        input_bytes=record.input_bytes,
        output_bytes=record.output_bytes,
        copy_gbs=copy_gbs,
    )


def _span_ms(spec: Specialization, records: list[LaunchRecord]) -> float:
    """From the first launch's start to the latest end of any launch (launches on several
    streams may end in another order than they began)."""
    if not records:
        return 0.0
    elapsed = spec.evaluator.backend.elapsed_ms
    return max(elapsed(records[0].start, r.end) for r in records)
