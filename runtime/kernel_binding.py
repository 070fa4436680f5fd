"""What a host program's kernels and memory look like to the host evaluator.

The evaluator (`fuser.runtime.host_evaluator`) runs a `host.program` over kernels it is given by
name and a backend for memory, streams and events; this module defines both sides:

- `KernelBinding`: a kernel the program launches. `grid` answers `host.grid` for a signature;
  `bind` makes the `Launcher` of one launch with the metadata of its arguments (`TensorInfo`
  per tensor, a numpy dtype per scalar) and the grid, block and dynamic shared memory the
  program gives. `ExecutorKernel` is the binding of a `KernelExecutor`; tests pass fakes.
- `Backend`: pool allocations, stream handles, cross-stream waits and the timestamps of a
  profiled run. `DriverBackend` (the CUDA driver, `DRIVER_BACKEND`) is the real one; tests pass
  fakes.

A launcher that also has `on_registers` (`RegisterLauncher`, as `ExecutorKernel`'s do) is run by
one generated closure over a call's register file, the evaluator's hot path.
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

import numpy as np

from fuser.dialects.views import is_contiguous
from fuser.errors import CompilationError, CudaError, InputError
from fuser.runtime import driver
from fuser.runtime.executor import Entry, KernelExecutor, ScalarParam, TensorParam
from fuser.runtime.generated import define
from fuser.runtime.signature import DTYPE_CODES, scalar_part, tensor_part


@dataclass(frozen=True)
class TensorInfo:
    """A tensor value of a specialization: sizes and strides (elements), dtype, and the
    alignment in bytes its pointer is known to have (a power of two, at most 16)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    alignment: int = 16

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def moved_bytes(self) -> int:
        """The bytes a kernel must move for it (`moved_bytes`)."""
        return moved_bytes(self.shape, self.strides, self.dtype.itemsize)

    @property
    def is_contiguous(self) -> bool:
        return is_contiguous(self.shape, self.strides)


def moved_bytes(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    """The bytes a kernel must move at least for a tensor argument: each element once, a dim
    of stride 0 (a broadcast) counted once (0 for an empty tensor). A profile's bandwidth
    counts these."""
    if 0 in shape:
        return 0
    return math.prod(n for n, s in zip(shape, strides, strict=True) if s != 0) * itemsize


ParamInfo = TensorInfo | np.dtype
"""A kernel argument as `bind` sees it: a tensor's TensorInfo, or a scalar's numpy dtype."""


class Launcher(Protocol):
    """One launch of a specialization, bound to its argument metadata.

    A launcher may also be a `RegisterLauncher` (`ExecutorKernel`'s are): the evaluator then
    uses its closure over a call's register file instead of calling it with a list of values."""

    name: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int]
    shared_bytes: int

    def __call__(self, args: list[Any], grid: tuple[int, int, int], stream: int) -> None:
        """Launch with these argument values (pointers for tensors), in parameter order;
        `grid` is the one the program computed."""
        ...

    def registers(self) -> int:
        """The registers per thread of the launched function (a profile reports them), once it
        has been launched."""
        ...


class RegisterLauncher(Launcher, Protocol):
    """A launcher that can also run as one closure over a call's register file."""

    skip: bool
    """Whether the launch does nothing (no output elements, or an empty grid)."""

    def on_registers(
        self, arg_regs: Sequence[int], stream_reg: int, batched: bool = False
    ) -> Callable[[list[Any]], None]:
        """The launch reading its arguments from registers `arg_regs` and its stream from
        `stream_reg`; `batched`: it only writes the arguments (a graph launches it)."""
        ...


def reads_registers(launcher: Launcher) -> TypeGuard[RegisterLauncher]:
    """Whether `launcher` has `on_registers` (the rest of `RegisterLauncher` comes with it)."""
    return getattr(launcher, "on_registers", None) is not None


class KernelBinding(Protocol):
    """A kernel the program launches by name."""

    def compile(self) -> None:
        """Compile now (called on a worker thread; may do nothing)."""
        ...

    def grid(self, name: str, ins: Sequence[ParamInfo], device: int) -> tuple[int, int, int]:
        """The grid the kernel's launch rule gives for leading arguments with this metadata
        (`host.grid`; called once per specialization)."""
        ...

    def bind(
        self,
        name: str,
        ins: Sequence[ParamInfo],
        outs: Sequence[TensorInfo],
        grid: tuple[int, int, int] | None,
        block: tuple[int, int, int],
        shared_bytes: int,
        device: int,
    ) -> Launcher:
        """The launcher for arguments with this metadata and the launch configuration the
        program gives (`grid` None: the program computes it per call, and passes it to the
        launcher), called once per specialization."""
        ...


class Backend(Protocol):
    """Memory, streams and events as the evaluator uses them."""

    def alloc(self, nbytes: int, stream: int) -> int: ...

    def free(self, ptr: int, stream: int) -> None: ...

    def stream_pool(self, device: int, count: int) -> list[int]:
        """`count` stream handles of `device` (the same ones on every call)."""
        ...

    def synchronize(self, stream: int, other: int) -> None:
        """Make later work on `stream` wait for the work issued so far on `other`."""
        ...

    def upload(self, values: np.ndarray) -> tuple[int, Any]:
        """A device copy of `values`, complete when this returns, as its pointer and the
        object that owns it (the memory lives while the owner does)."""
        ...

    def timestamp(self, stream: int) -> Any:
        """A mark of the point `stream` has reached in its work (a profiled run's)."""
        ...

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two `timestamp`s, once both are reached (waits for them)."""
        ...


class DriverBackend:
    """The CUDA driver: the device's stream-ordered pool, non-blocking streams (one pool per
    device and size, shared by every program), and events for `synchronize`."""

    def __init__(self) -> None:
        self._pools: dict[tuple[int, int], list[driver.Stream]] = {}
        self._events: dict[int, driver.Event] = {}
        self._lock = threading.Lock()
        self.alloc = _pool_alloc
        self.free = _pool_free

    def stream_pool(self, device: int, count: int) -> list[int]:
        with self._lock:
            pool = self._pools.get((device, count))
            if pool is None:
                previous = driver.current_device()
                driver.get_device(device).make_current()
                try:
                    pool = [driver.Stream() for _ in range(count)]
                finally:
                    previous.make_current()
                self._pools[(device, count)] = pool
        return [s.handle for s in pool]

    def synchronize(self, stream: int, other: int) -> None:
        device = driver.current_device().ordinal  # the specialization's, made current
        with self._lock:  # one event per device, recorded and waited on atomically
            event = self._events.get(device)
            if event is None:
                event = self._events[device] = driver.Event(timing=False)
            event.record(other)
            driver.stream_wait_event(stream, event)

    def upload(self, values: np.ndarray) -> tuple[int, Any]:
        host = np.ascontiguousarray(values)
        constant = driver.DeviceConstant(host.ctypes.data, host.nbytes)
        return constant.ptr, constant

    def timestamp(self, stream: int) -> driver.Event:
        return driver.Event().record(stream)

    def elapsed_ms(self, start: driver.Event, end: driver.Event) -> float:
        end.synchronize()
        return start.elapsed_ms(end)


def _pool_alloc(nbytes: int, stream: int) -> int:
    return driver.alloc(nbytes, stream) if nbytes else 0


def _pool_free(ptr: int, stream: int) -> None:
    if ptr:
        driver.free(ptr, stream)


DRIVER_BACKEND = DriverBackend()
"""The backend of every evaluator not given another (its stream pools are process-wide)."""


class ExecutorKernel:
    """A `KernelBinding` over a `KernelExecutor`.

    The executor's entry for the signature of a launch's inputs (planned once per signature)
    gives `host.grid` its value and checks the launch: the block and dynamic shared memory the
    program gives must be those the kernel was compiled for (a kernel's code assumes its
    block shape) and the outputs the program passes must have the shapes the entry expects and
    be contiguous. The launch then runs with the program's grid, block and shared memory.
    """

    def __init__(self, executor: KernelExecutor) -> None:
        self.executor = executor

    def compile(self) -> None:
        self.executor.kernel.compile()

    def _entry(self, name: str, given: Sequence[ParamInfo], device: int) -> Entry:
        """The executor's entry for arguments with this metadata (all parameters, or the
        leading `ins` for `host.grid`), after checking them against the kernel's parameters."""
        params = self.executor.params
        expected = [*params.inputs, *params.outputs][: len(given)]
        if len(given) < len(params.inputs) or any(
            isinstance(g, TensorInfo) != isinstance(p, TensorParam)
            or (isinstance(g, TensorInfo) and (len(g.shape), g.dtype) != (p.rank, p.dtype))  # type: ignore[union-attr]
            or (isinstance(p, ScalarParam) and g != p.dtype)
            for g, p in zip(given, expected, strict=True)
        ):
            raise CompilationError(
                f"host launch of @{name}: its arguments do not match the parameters of kernel "
                f"{self.executor.kernel.kernel_name!r}"
            )
        ins = given[: len(params.inputs)]
        key: tuple[int, ...] = ()
        for p in ins:
            if isinstance(p, TensorInfo):
                key += tensor_part(p.shape, p.strides, DTYPE_CODES.get(p.dtype, 0), p.alignment)
        for p in ins:
            if not isinstance(p, TensorInfo):
                key += scalar_part(p.type(0))  # a value of the parameter's dtype
        return self.executor.entry((*key, device))

    def grid(self, name: str, ins: Sequence[ParamInfo], device: int) -> tuple[int, int, int]:
        return self._entry(name, ins, device).grid  # type: ignore[return-value]

    def bind(
        self,
        name: str,
        ins: Sequence[ParamInfo],
        outs: Sequence[TensorInfo],
        grid: tuple[int, int, int] | None,
        block: tuple[int, int, int],
        shared_bytes: int,
        device: int,
    ) -> _EntryLauncher:
        params = self.executor.params
        if len(ins) + len(outs) != len(params.inputs) + len(params.outputs):
            raise CompilationError(
                f"host.launch @{name}: its arguments do not match the parameters of kernel "
                f"{self.executor.kernel.kernel_name!r}"
            )
        entry = self._entry(name, [*ins, *outs], device)
        kernel_name = self.executor.kernel.kernel_name
        if tuple(block) != entry.block:
            raise CompilationError(
                f"host.launch @{name}: block {list(block)}, but kernel {kernel_name!r} is "
                f"compiled for block {list(entry.block)}"
            )
        if shared_bytes < entry.shared_bytes:
            raise CompilationError(
                f"host.launch @{name}: smem {shared_bytes}, but kernel {kernel_name!r} needs "
                f"{entry.shared_bytes} bytes of dynamic shared memory"
            )
        for i, (o, shape) in enumerate(zip(outs, entry.out_shapes, strict=True)):
            if o.shape != shape or not o.is_contiguous:
                raise CompilationError(
                    f"host.launch @{name}: output #{i} has shape {list(o.shape)} and strides "
                    f"{list(o.strides)}, but the kernel writes a contiguous {list(shape)}"
                )
        return _EntryLauncher(name, self.executor, entry, [*ins, *outs], grid, shared_bytes)


class _EntryLauncher:
    """A launch through one executor entry, with its own copy of the argument buffer."""

    def __init__(
        self,
        name: str,
        executor: KernelExecutor,
        entry: Entry,
        params: Sequence[ParamInfo],
        grid: tuple[int, int, int] | None,
        shared_bytes: int,
    ) -> None:
        self.name = name
        self.executor = executor
        self.entry = entry
        self.grid = grid  # None: the program passes one per call
        self.block: tuple[int, int, int] = entry.block  # checked equal to the program's
        self.shared_bytes = shared_bytes
        no_output = bool(entry.out_shapes) and all(math.prod(s) == 0 for s in entry.out_shapes)
        self.skip: bool = no_output or (grid is not None and 0 in grid)
        self.func: Any = None
        self.launch_args: tuple[Any, ...] | None = None  # driver.launch_prefix once loaded
        size = ctypes.sizeof(entry.buffer)
        self.buffer = ctypes.create_string_buffer(size)
        ctypes.memmove(self.buffer, entry.buffer, size)
        self.slots = (ctypes.c_uint64 * len(entry.slots)).from_buffer(self.buffer)
        shift = ctypes.addressof(self.buffer) - ctypes.addressof(entry.buffer)
        self.pointers = (ctypes.c_void_p * len(entry.pointers))(
            *((p or 0) + shift for p in entry.pointers)
        )
        self.address = ctypes.addressof(self.pointers) if entry.address else 0
        tensor_pos = [i for i, p in enumerate(params) if isinstance(p, TensorInfo)]
        scalar_pos = [i for i, p in enumerate(params) if not isinstance(p, TensorInfo)]
        slots = [*entry.in_slots, *entry.out_slots]
        self.ptr_slots = tuple(zip(tensor_pos, slots, strict=True))
        self.scalar_slots = tuple(
            (pos, setter, off, params[pos])
            for pos, (setter, off) in zip(scalar_pos, entry.scalar_slots, strict=True)
        )

    def registers(self) -> int:
        return 0 if self.func is None else self.func.num_registers

    def _scalar_error(self, value: Any, dtype: Any, e: Exception) -> InputError:
        return InputError(
            f"{value!r} is out of range for a scalar {dtype} parameter of kernel "
            f"{self.executor.kernel.kernel_name!r} ({e})"
        )

    def _load(self) -> Any:
        if self.func is None:
            self.func = self.entry.func or self.executor.load(self.entry)
            # (the program may ask for more than the kernel's launches have been allowed)
            self.executor.allow_shared(self.entry.device, self.func, self.shared_bytes)
            if self.grid is not None:
                self.launch_args = driver.launch_prefix(
                    self.func, self.grid, self.block, self.shared_bytes
                )
        return self.func

    def _launch(self, stream: int, grid: tuple[int, int, int] | None = None) -> None:
        func = self.func if self.func is not None else self._load()
        grid = grid or self.grid
        assert grid is not None
        try:
            driver.launch(func, grid, self.block, self.shared_bytes, stream, self.address)
        except CudaError:
            self._relaunch(stream, grid)

    def _relaunch(self, stream: int, grid: tuple[int, int, int] | None = None) -> None:
        """A launch that failed, retried with the entry's device made current (another library
        may have switched this thread's context behind our back); raises the fuser error."""
        driver.get_device(self.entry.device).make_current()
        grid = grid or self.grid
        assert grid is not None
        driver.launch(self.func, grid, self.block, self.shared_bytes, stream, self.address)

    def __call__(self, args: list[Any], grid: tuple[int, int, int], stream: int) -> None:
        slots = self.slots
        for pos, s in self.ptr_slots:
            slots[s] = args[pos]
        for pos, setter, off, dtype in self.scalar_slots:
            try:
                setter(self.buffer, off, args[pos])
            except (OverflowError, TypeError, ValueError) as e:
                raise self._scalar_error(args[pos], dtype, e) from None
        if not self.skip and 0 not in grid:
            self._launch(stream, grid)

    def graph_kernel(self) -> driver.KernelNode:
        """This launch as a kernel of a `driver.LaunchGraph` (loads the function; the grid is
        the program's, fixed for the specialization)."""
        assert self.grid is not None
        return driver.KernelNode(
            self._load(), self.grid, self.block, self.shared_bytes, self.address, self.buffer
        )

    def on_registers(
        self, arg_regs: Sequence[int], stream_reg: int, batched: bool = False
    ) -> Callable[[list[Any]], None]:
        """The launch as one closure over a register file: the argument values are read from
        `arg_regs` (in parameter order), the stream from `stream_reg`. The hot path: generated,
        with the pointer writes unrolled. `batched`: the closure only writes the arguments; a
        `driver.LaunchGraph` of this and its neighbours launches the kernel afterwards."""
        lines = ["def launch(r):"]
        lines += [f"    slots[{s}] = r[{arg_regs[pos]}]" for pos, s in self.ptr_slots]
        namespace: dict[str, Any] = {
            "slots": self.slots,
            "buffer": self.buffer,
            "me": self,
            "driver": driver,
            "ADDRESS": self.address,
        }
        for k, (pos, setter, off, dtype) in enumerate(self.scalar_slots):
            namespace[f"set{k}"] = setter
            namespace[f"dtype{k}"] = dtype
            i = arg_regs[pos]
            lines += [
                "    try:",
                f"        set{k}(buffer, {off}, r[{i}])",
                "    except (OverflowError, TypeError, ValueError) as e:",
                f"        raise me._scalar_error(r[{i}], dtype{k}, e) from None",
            ]
        if self.skip or batched:
            lines.append("    return")
        else:
            lines += [
                "    args = me.launch_args",
                "    if args is None:",
                f"        return me._launch(r[{stream_reg}])  # loads the function first",
                f"    (err,) = driver.LAUNCH_KERNEL(*args, r[{stream_reg}], ADDRESS, 0)",
                "    if err is not driver.SUCCESS:",
                f"        me._relaunch(r[{stream_reg}])",
            ]
        return define("\n".join(lines) + "\n", "launch", namespace, f"launch of {self.name}")
