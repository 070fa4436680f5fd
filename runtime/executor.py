"""Launching one compiled kernel, fast, for every input signature it meets.

`KernelExecutor` runs one `CompiledKernel` (nvFuser's CompiledKernel / KernelExecutor split): the
compiled kernel owns source and cubin; the executor owns what depends on the inputs of a call,
which is described by its signature (`fuser.runtime.signature`).

Per signature the executor caches an `Entry`: the launch configuration and output shapes (from
the `plan` callable the compiler supplies: the executor walks no IR), a packed argument buffer
holding the bytes of every kernel parameter, the slots in it where pointers and scalar values go,
and the `void*[]` array into it that `cuLaunchKernel` takes. A hit then only reads the inputs'
pointers, allocates the outputs, patches the buffer and launches. An entry is what the
signature cache of `fuser.runtime.dispatch` runs for a signature that one kernel serves: a
program of one launch, whose launch the cache's fast path makes itself.
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuser.dialects.views import contiguous_strides
from fuser.errors import CudaError, InputError
from fuser.runtime import driver
from fuser.runtime.arrays import BFLOAT16
from fuser.runtime.calls import Call, InputLayout
from fuser.runtime.compiled_kernel import CompiledKernel, pack_tensor_param
from fuser.runtime.dtypes import round_to_float
from fuser.runtime.frontends import TORCH_FRONTEND
from fuser.runtime.signature import InputMeta, decode_signature

# --------------------------------------------------------------------------------------------
# Kernel parameters and launch plans


@dataclass(frozen=True)
class TensorParam:
    """A `Tensor<T, N>` kernel parameter: rank and element dtype."""

    rank: int
    dtype: np.dtype


@dataclass(frozen=True)
class ScalarParam:
    """A scalar kernel parameter of a numpy dtype (f16/bf16/f32/f64/i32/i64/bool)."""

    dtype: np.dtype


@dataclass(frozen=True)
class KernelParams:
    """The parameters of a generated kernel: the fusion's inputs, then its outputs."""

    inputs: tuple[TensorParam | ScalarParam, ...]
    outputs: tuple[TensorParam, ...]

    @property
    def is_tensor(self) -> tuple[bool, ...]:
        return tuple(isinstance(p, TensorParam) for p in self.inputs)


@dataclass(frozen=True)
class LaunchPlan:
    """What the compiler computes for a new signature: the launch and the output shapes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    output_shapes: tuple[tuple[int, ...], ...]


#: (input metas, device ordinal) -> LaunchPlan; called once per new signature.
Planner = Callable[[tuple[InputMeta | None, ...], int], LaunchPlan]


# --------------------------------------------------------------------------------------------
# Scalar packing


def _float_setter(fmt: str) -> Callable[[Any, int, Any], None]:
    packer = struct.Struct(fmt).pack_into

    def pack(buffer: Any, offset: int, value: Any) -> None:
        try:
            packer(buffer, offset, value)
        except OverflowError:  # rounds to +-inf in the target type
            packer(buffer, offset, math.copysign(math.inf, float(value)))

    return pack


def _bf16_setter(buffer: Any, offset: int, value: Any) -> None:
    bits = round_to_float(np.float64(value), BFLOAT16).view(np.uint16)
    struct.pack_into("<H", buffer, offset, int(bits))


def _int_setter(fmt: str) -> Callable[[Any, int, Any], None]:
    packer = struct.Struct(fmt).pack_into

    def pack(buffer: Any, offset: int, value: Any) -> None:
        packer(buffer, offset, int(value))

    return pack


def _scalar_setter(dtype: np.dtype) -> Callable[[Any, int, Any], None]:
    if dtype == BFLOAT16:
        return _bf16_setter
    fmt = {"f2": "<e", "f4": "<f", "f8": "<d", "i4": "<i", "i8": "<q", "b1": "<?"}.get(
        f"{dtype.kind}{dtype.itemsize}"
    )
    if fmt is None:
        raise ValueError(f"unsupported scalar parameter dtype {dtype}")
    if dtype.kind == "f":
        return _float_setter(fmt)
    if dtype.kind == "b":
        packer = struct.Struct(fmt).pack_into
        return lambda buffer, offset, value: packer(buffer, offset, bool(value))
    return _int_setter(fmt)


# --------------------------------------------------------------------------------------------
# The executor


def _dim3(dims: Sequence[int]) -> tuple[int, int, int]:
    """A grid or block (three extents, in any sequence) as a tuple."""
    x, y, z = dims
    return (x, y, z)


class Entry:
    """What one signature needs at launch: the configuration, the outputs, the packed
    arguments, and (once launched) the function loaded on the signature's device."""

    __slots__ = (
        "address",
        "block",
        "buffer",
        "device",
        "executor",
        "func",
        "graph",
        "grid",
        "in_slots",
        "key",
        "launched",
        "out_shapes",
        "out_slots",
        "pointers",
        "scalar_slots",
        "shared_bytes",
        "skip",
        "slots",
        "torch_device",
        "torch_out",
    )

    one_launch = True
    """What the dispatch fast path checks: it launches an entry's kernel itself."""

    def __init__(
        self,
        executor: KernelExecutor,
        plan: LaunchPlan,
        key: tuple[int, ...],
        metas: Sequence[InputMeta | None],
    ) -> None:
        """The entry of signature `key` (its inputs' `metas` decoded) launched with `plan`."""
        params = executor.params
        self.executor = executor
        self.key = key
        self.device = key[-1]
        self.func: driver.Function | None = None
        self.graph: driver.LaunchGraph | None = None  # see launch()
        self.launched = False
        self.torch_device: Any = None
        self.torch_out: tuple[tuple[tuple[int, ...], int, Any], ...] | None = None
        self.grid = _dim3(plan.grid)
        self.block = _dim3(plan.block)
        self.shared_bytes = plan.shared_bytes
        self.out_shapes = tuple(tuple(s) for s in plan.output_shapes)
        # every parameter's bytes at an 8-byte aligned offset; pointers at 8-byte slots
        blobs: list[bytes] = []
        kinds: list[str] = []
        for p, meta in zip(params.inputs, metas, strict=True):
            if isinstance(p, TensorParam):
                assert meta is not None
                blobs.append(pack_tensor_param(0, meta.shape, meta.strides))
                kinds.append("in")
            else:
                blobs.append(bytes(p.dtype.itemsize))
                kinds.append("scalar")
        for shape in self.out_shapes:
            blobs.append(pack_tensor_param(0, shape, contiguous_strides(shape)))
            kinds.append("out")
        offsets: list[int] = []
        total = 0
        for blob in blobs:
            offsets.append(total)
            total += -(-len(blob) // 8) * 8
        self.buffer = ctypes.create_string_buffer(max(total, 8))
        for off, blob in zip(offsets, blobs, strict=True):
            ctypes.memmove(ctypes.addressof(self.buffer) + off, blob, len(blob))
        self.slots = (ctypes.c_uint64 * (max(total, 8) // 8)).from_buffer(self.buffer)
        self.in_slots = tuple(o // 8 for o, k in zip(offsets, kinds, strict=True) if k == "in")
        self.out_slots = tuple(o // 8 for o, k in zip(offsets, kinds, strict=True) if k == "out")
        scalar_params = [p for p in params.inputs if isinstance(p, ScalarParam)]
        scalar_offsets = [o for o, k in zip(offsets, kinds, strict=True) if k == "scalar"]
        self.scalar_slots = tuple(
            (_scalar_setter(p.dtype), off)
            for p, off in zip(scalar_params, scalar_offsets, strict=True)
        )
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(blobs), 1))(*(base + o for o in offsets))
        self.address = ctypes.addressof(self.pointers) if blobs else 0
        self.skip = 0 in self.grid or (
            bool(self.out_shapes) and all(math.prod(s) == 0 for s in self.out_shapes)
        )

    def set_function(self, func: driver.Function | None) -> None:
        """The loaded function this entry launches (None: load it again before the next
        launch); the graph of the one before is dropped."""
        self.func = func
        self.graph = None

    def launch(self, stream: int) -> None:
        """Launch the loaded function with the argument buffer as it is: the first launch
        with `cuLaunchKernel`, later ones as a one-node `driver.LaunchGraph` (cheaper on the
        host than `cuLaunchKernel`; building it costs more than one launch saves, and a
        signature seen once may never come back), built on the second launch with the entry's
        device current; the fast path launches `graph` directly. A failure is retried once
        with the device made current (another library may have switched this thread's
        context behind our back) and then raised. An entry with nothing to write (`skip`: an
        empty grid or empty outputs) launches nothing, and so never gets a graph: the fast
        path, which calls this while `graph` is None, launches nothing either (a matmul of
        [0, 16] x [16, 0] launched so faulted, the GPU fuzzer found)."""
        if self.skip:
            return
        try:
            if self.graph is None:
                assert self.func is not None, "launch() before load()"
                if not self.launched:
                    self.launched = True
                    driver.launch(
                        self.func, self.grid, self.block, self.shared_bytes, stream, self.address
                    )
                    return
                kernel = driver.KernelNode(
                    self.func, self.grid, self.block, self.shared_bytes, self.address, self.buffer
                )
                self.graph = driver.LaunchGraph([kernel])
            self.graph.launch(stream)
        except CudaError:
            relaunch(self, stream)

    def run(self, call: Call) -> list[Any]:
        """Run a read call of this entry's signature (the dispatch cache's general path)."""
        return self.executor.run_entry(self, call)

    def prepare_torch(self) -> None:
        """What the fast path allocates torch outputs with: `torch_device`, and `torch_out`,
        per output its `torch.empty` sizes, argument slot and torch dtype."""
        device, specs = TORCH_FRONTEND.output_specs(
            self.device, self.out_shapes, self.executor.out_dtypes
        )
        self.torch_device = device
        self.torch_out = tuple(
            (sizes, slot, dtype) for (sizes, dtype), slot in zip(specs, self.out_slots, strict=True)
        )

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def set_scalars(self, scalars: Sequence[Any], layout: InputLayout) -> None:
        """Write scalar input values into the argument buffer (InputError when out of range)."""
        buffer = self.buffer
        for i, ((setter, off), value) in enumerate(zip(self.scalar_slots, scalars, strict=True)):
            try:
                setter(buffer, off, value)
            except (struct.error, OverflowError, TypeError, ValueError) as e:
                index = layout.scalars[i]
                dtype = [p for p in self.executor.params.inputs if isinstance(p, ScalarParam)]
                raise InputError(
                    f"{layout.names[index]}: {value!r} is out of range for a scalar "
                    f"{dtype[i].dtype} parameter ({e})"
                ) from None


class KernelExecutor:
    """Runs one CompiledKernel for any signature (see the module docstring).

    `params` describes the kernel's parameters (the fusion's inputs, then its outputs); `plan`
    computes the launch and output shapes of a new signature. Launches of one executor are
    serialized by a lock (the argument buffers are shared), so threads may share it.
    """

    def __init__(self, kernel: CompiledKernel, params: KernelParams, plan: Planner) -> None:
        self.kernel = kernel
        self.params = params
        self.plan = plan
        self.is_tensor = params.is_tensor
        self.out_dtypes = tuple(p.dtype for p in params.outputs)
        self.entries: dict[tuple[int, ...], Entry] = {}
        self._functions: dict[int, driver.Function] = {}
        self._retired: list[driver.Function] = []
        self._shared_limit: dict[int, int] = {}
        self.lock = threading.Lock()

    # ---- entries ---------------------------------------------------------------------------

    def entry(self, key: tuple[int, ...]) -> Entry:
        """The entry of a signature (planned and cached on first sight)."""
        entry = self.entries.get(key)
        if entry is None:
            metas, _, device = decode_signature(key, self.is_tensor)
            plan = self.plan(metas, device)
            if len(plan.output_shapes) != len(self.params.outputs):
                raise AssertionError(
                    f"plan gave {len(plan.output_shapes)} output shapes for "
                    f"{len(self.params.outputs)} outputs"
                )
            entry = Entry(self, plan, key, metas)
            if self.kernel.ensure_block_size(entry.threads):
                # recompiled with a lower register cap: every entry loads the new function
                self._retired.extend(self._functions.values())
                self._functions.clear()
                for other in self.entries.values():
                    other.set_function(None)
            self.entries[key] = entry
        return entry

    def load(self, entry: Entry) -> driver.Function:
        """The kernel loaded on the entry's device (with the dynamic shared memory it needs)."""
        device = entry.device
        func = self._functions.get(device)
        if func is None:
            driver.get_device(device).make_current()
            module = driver.load_module(self.kernel.compile())
            func = module.get_function(self.kernel.kernel_name)
            self._functions[device] = func
            self._shared_limit[device] = 0
        self.allow_shared(device, func, entry.shared_bytes)
        entry.set_function(func)
        return func

    def allow_shared(self, device: int, func: driver.Function, nbytes: int) -> None:
        """Opts the kernel loaded on `device` (`func`) into launches with `nbytes` of dynamic
        shared memory, where it has not been yet. Any dynamic size opts in: the default limit
        is 48 KiB less the kernel's static shared memory, which a launch within 48 KiB may
        still pass."""
        if nbytes > self._shared_limit.get(device, 0):
            driver.set_max_dynamic_shared_memory(func, nbytes)
            self._shared_limit[device] = nbytes

    # ---- launching -------------------------------------------------------------------------

    def run(self, call: Call) -> list[Any]:
        """Launch `call` (planning its signature if new) and return its outputs."""
        entry = self.entries.get(call.key)
        if entry is None:
            entry = self.entry(call.key)
        return self.run_entry(entry, call)

    def run_entry(
        self, entry: Entry, call: Call, events: list[driver.Event] | None = None
    ) -> list[Any]:
        """Allocate the outputs, launch, and return the outputs (of the inputs' kind). Work
        for another device than the current one runs with that device's context current,
        and the previous one is made current again afterwards. `events` (a profiled call's)
        gets a CUDA event recorded just before the launch and one just after (none when the
        launch is skipped: no output elements)."""
        previous = driver.current_device()
        if previous.ordinal == entry.device:
            return self._run_entry(entry, call, events)
        driver.get_device(entry.device).make_current()
        try:
            return self._run_entry(entry, call, events)
        finally:
            previous.make_current()

    def _run_entry(
        self, entry: Entry, call: Call, events: list[driver.Event] | None = None
    ) -> list[Any]:
        device = entry.device
        if entry.func is None:
            self.load(entry)
        if call.needs_upload:
            call.upload()
        fe = call.frontend
        stream = call.stream
        outs, out_ptrs = fe.allocate(entry.out_shapes, self.out_dtypes, device, stream)
        if fe is TORCH_FRONTEND and entry.torch_out is None:
            entry.prepare_torch()
        if not entry.skip:
            with self.lock:
                slots = entry.slots
                for s, p in zip(entry.in_slots, call.ptrs, strict=True):
                    slots[s] = p
                for s, p in zip(entry.out_slots, out_ptrs, strict=True):
                    slots[s] = p
                if entry.scalar_slots:
                    entry.set_scalars(call.scalars, call.layout)
                if events is None:
                    entry.launch(stream)
                else:
                    events.append(driver.Event().record(stream))
                    entry.launch(stream)
                    events.append(driver.Event().record(stream))
        return fe.finish(outs, stream)

    def prepare(self, call: Call) -> PreparedLaunch:
        """`call`'s launch with its outputs allocated once, for timing: each call of the result
        relaunches the kernel with the same arguments, overwriting the same outputs (device
        arrays, also for numpy inputs)."""
        entry = self.entry(call.key)
        driver.get_device(entry.device).make_current()
        func = self.load(entry)
        if call.needs_upload:
            call.upload()
        outs, out_ptrs = call.frontend.allocate(
            entry.out_shapes, self.out_dtypes, entry.device, call.stream
        )
        size = ctypes.sizeof(entry.buffer)
        buffer = ctypes.create_string_buffer(size)
        ctypes.memmove(buffer, entry.buffer, size)
        slots = (ctypes.c_uint64 * len(entry.slots)).from_buffer(buffer)
        for s, p in zip(entry.in_slots, call.ptrs, strict=True):
            slots[s] = p
        for s, p in zip(entry.out_slots, out_ptrs, strict=True):
            slots[s] = p
        for (setter, off), value in zip(entry.scalar_slots, call.scalars, strict=True):
            setter(buffer, off, value)
        shift = ctypes.addressof(buffer) - ctypes.addressof(entry.buffer)
        pointers = (ctypes.c_void_p * len(entry.pointers))(
            *((p or 0) + shift for p in entry.pointers)
        )
        return PreparedLaunch(self.kernel.kernel_name, func, entry, call, buffer, pointers, outs)

    def __repr__(self) -> str:
        return f"KernelExecutor({self.kernel.kernel_name!r}, {len(self.entries)} signature(s))"


class PreparedLaunch:
    """One kernel launch with fixed arguments and outputs (`KernelExecutor.prepare`)."""

    def __init__(
        self,
        name: str,
        func: driver.Function,
        entry: Entry,
        call: Call,
        buffer: Any,
        pointers: Any,
        outputs: list[Any],
    ) -> None:
        self.name = name
        self.outputs = outputs
        self._func = func
        self._entry = entry
        self._keep = (call, buffer, pointers)
        self._address = ctypes.addressof(pointers) if entry.address else 0
        self.stream = call.stream

    def __call__(self) -> None:
        e = self._entry
        if not e.skip:
            driver.launch(self._func, e.grid, e.block, e.shared_bytes, self.stream, self._address)

    def __repr__(self) -> str:
        return f"PreparedLaunch({self.name!r}, grid={self._entry.grid}, block={self._entry.block})"


def relaunch(entry: Entry, stream: int) -> None:
    """A launch that failed, retried with the entry's device made current (another library may
    have switched this thread's context behind our back)."""
    assert entry.func is not None, "relaunch() of an entry that was never loaded"
    driver.get_device(entry.device).make_current()
    driver.launch(entry.func, entry.grid, entry.block, entry.shared_bytes, stream, entry.address)
