"""Running a `host.program`: the host evaluator.

`HostEvaluator` interprets one `host.program` over kernels it is given by name (`KernelBinding`:
`ExecutorKernel` for a `KernelExecutor`; tests pass fakes) and a `Backend` for memory, streams and
events (`DriverBackend`, the CUDA driver; tests pass fakes). It never walks IR on the hot path:

- **Specialization.** Per input signature (the executor's encoding: shapes, strides, dtypes,
  alignment, device; plus the values of `index` arguments, if any) the program is compiled once
  into a `Specialization`: a register file template and a flat list of closures. Every value
  that follows from the signature is folded while compiling: `host.dim`, `arith` on extents,
  tensor shapes and strides, the kernel's launch configuration, constant stream indices. What is
  left for a call is what depends on it: pointers, scalar values, loop indices, streams.
- **Tensors** are registers holding a device pointer; their sizes, strides and dtype are static
  per specialization (an `allocate` whose sizes depend on a loop index is rejected).
- **Allocation.** `host.allocate` of a value that `host.return` returns is an output: it is
  allocated by the frontend of the call's inputs (`torch.empty` for torch tensors, a
  `DeviceArray` otherwise), as the executor does. Other allocations come from the backend's
  stream-ordered pool. In a program that uses one stream, the top-level allocations that are
  deallocated at the top level are laid out in one *workspace* per call: offsets are assigned
  first-fit over their lifetimes (from `allocate` to `deallocate`), so a buffer reuses the bytes
  of one deallocated before it; the workspace is taken from the pool at the first such
  `allocate` and returned at the last such `deallocate`. One pool allocation per call instead of
  one per intermediate, and pool usage is back where it started after every call. With torch
  inputs the workspace is a `torch.empty` byte tensor instead (torch's caching allocator on
  torch's current stream, where the program runs): two driver calls fewer per call.
- **Launches** go through the binding: `ExecutorKernel` takes the launch configuration from the
  `KernelExecutor` entry of the launch's inputs, which recomputes it per signature (the `grid`
  operands of a lowered program are the values for the signature it was lowered for; only
  fakes read them). Each specialization owns a copy of each entry's argument buffer. Top-level
  launches on the call's stream run as CUDA graphs (`driver.LaunchGraph`, one per run of
  launches that no deallocation, stream change or loop separates): about 3 µs for the graph
  plus 1 µs for each kernel whose arguments changed since its last launch, against 4-5 µs a
  kernel for `cuLaunchKernel`.
- **Streams.** The current stream starts as the call's stream. `host.stream %i` is stream
  `i mod n` of a per-device pool of `n` (default 4) streams; `host.synchronize %s` records an
  event on `%s` and makes the current stream wait for it (the host never blocks).
- **Threads.** A specialization runs under its own lock (its argument buffers are shared);
  different signatures run concurrently.
- **Compilation.** `compile_kernels()` compiles every kernel's binding on a thread pool (NVRTC
  releases the GIL), so the kernels of a segmented fusion compile in parallel on first use.

`ProgramCache` maps the signatures of one fusion to specializations and holds the generated fast
path of `execute` for torch inputs, as `ExecutorCache` does for single kernels.
"""

from __future__ import annotations

import ctypes
import math
import operator
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Protocol

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, TensorType
from xdsl.ir import Block, Operation, SSAValue

from fuser.dialects import host
from fuser.errors import CompilationError, CudaError, InputError

from . import driver
from .compiled_kernel import compile_together
from .dtypes import numpy_dtype
from .executor import (
    ALIGNMENT,
    DTYPE_CODES,
    SCALAR_BOOL,
    SCALAR_FLOAT,
    SCALAR_INT,
    SCALAR_KINDS,
    TORCH_FRONTEND,
    Call,
    ExecutorCache,
    Frontend,
    InputLayout,
    KernelExecutor,
    ScalarParam,
    TensorParam,
    contiguous_strides,
    decode_signature,
    read_inputs,
    torch_signature_prologue,
    torch_sizes,
)

#: Streams in the pool `host.stream` indexes (as nvFuser's `number_of_streams`).
DEFAULT_NUM_STREAMS = 4

#: Byte alignment of each buffer in a workspace.
WORKSPACE_ALIGNMENT = 256

Code = list[Callable[[list[Any]], None]]
"""Compiled code: closures run in order on the register file of a call."""

# Registers every specialization has.
_CUR, _FE, _DEV, _INPUTS = 0, 1, 2, 3
_FIRST_FREE = 4


# --------------------------------------------------------------------------------------------
# What kernels and backends look like to the evaluator


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
    def is_contiguous(self) -> bool:
        expected = contiguous_strides(self.shape)
        return all(
            n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected, strict=True)
        )


ParamInfo = TensorInfo | np.dtype
"""A kernel argument as `bind` sees it: a tensor's TensorInfo, or a scalar's numpy dtype."""


class Launcher(Protocol):
    """One launch of a specialization, bound to its argument metadata.

    A launcher may also have `on_registers(arg_regs, stream_reg)`, returning the launch as one
    closure over a call's register file (`ExecutorKernel`'s do): the evaluator then uses that
    closure instead of calling the launcher with a list of values."""

    name: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int]
    shared_bytes: int

    def __call__(self, args: list[Any], grid: tuple[int, int, int], stream: int) -> None:
        """Launch with these argument values (pointers for tensors), in parameter order;
        `grid` is the one the program computed."""
        ...


class KernelBinding(Protocol):
    """A kernel the program launches by name."""

    def compile(self) -> None:
        """Compile now (called on a worker thread; may do nothing)."""
        ...

    def bind(
        self,
        name: str,
        ins: Sequence[ParamInfo],
        outs: Sequence[TensorInfo],
        block: tuple[int, int, int],
        shared_bytes: int,
        device: int,
    ) -> Launcher:
        """The launcher for arguments with this metadata (called once per specialization)."""
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


def _pool_alloc(nbytes: int, stream: int) -> int:
    return driver.alloc(nbytes, stream) if nbytes else 0


def _pool_free(ptr: int, stream: int) -> None:
    if ptr:
        driver.free(ptr, stream)


DRIVER_BACKEND = DriverBackend()
"""The backend of every evaluator not given another (its stream pools are process-wide)."""


def _scalar_kind(dtype: np.dtype) -> int:
    return {"b": SCALAR_BOOL, "f": SCALAR_FLOAT, "V": SCALAR_FLOAT}.get(dtype.kind, SCALAR_INT)


class ExecutorKernel:
    """A `KernelBinding` over a `KernelExecutor`.

    `bind` builds the executor signature of the launch's inputs and takes the launch
    configuration and output shapes from its entry (planned once per signature by the executor):
    the grid the program computed is not used. The outputs the program passes must have the
    shapes the entry expects and be contiguous.
    """

    def __init__(self, executor: KernelExecutor) -> None:
        self.executor = executor

    def compile(self) -> None:
        self.executor.kernel.compile()

    def bind(
        self,
        name: str,
        ins: Sequence[ParamInfo],
        outs: Sequence[TensorInfo],
        block: tuple[int, int, int],
        shared_bytes: int,
        device: int,
    ) -> _EntryLauncher:
        params = self.executor.params
        expected = [*params.inputs, *params.outputs]
        given = [*ins, *outs]
        if len(given) != len(expected) or any(
            isinstance(g, TensorInfo) != isinstance(p, TensorParam)
            or (isinstance(g, TensorInfo) and (len(g.shape), g.dtype) != (p.rank, p.dtype))  # type: ignore[union-attr]
            or (isinstance(p, ScalarParam) and g != p.dtype)
            for g, p in zip(given, expected, strict=False)
        ):
            raise CompilationError(
                f"host.launch @{name}: its arguments do not match the parameters of kernel "
                f"{self.executor.kernel.kernel_name!r}"
            )
        key: tuple[int, ...] = ()
        for p in ins:
            if isinstance(p, TensorInfo):
                code = DTYPE_CODES.get(p.dtype, 0)
                key += (len(p.shape), *p.shape, *p.strides, code, p.alignment)
        for p in ins:
            if not isinstance(p, TensorInfo):
                key += (-1, _scalar_kind(p))
        entry = self.executor.entry((*key, device))
        for i, (o, shape) in enumerate(zip(outs, entry.out_shapes, strict=True)):
            if o.shape != shape or not o.is_contiguous:
                raise CompilationError(
                    f"host.launch @{name}: output #{i} has shape {list(o.shape)} and strides "
                    f"{list(o.strides)}, but the kernel writes a contiguous {list(shape)}"
                )
        return _EntryLauncher(name, self.executor, entry, [*ins, *outs])


class _EntryLauncher:
    """A launch through one executor entry, with its own copy of the argument buffer."""

    def __init__(
        self, name: str, executor: KernelExecutor, entry: Any, params: Sequence[ParamInfo]
    ) -> None:
        self.name = name
        self.executor = executor
        self.entry = entry
        self.grid: tuple[int, int, int] | None = entry.grid
        self.block: tuple[int, int, int] = entry.block
        self.shared_bytes: int = entry.shared_bytes
        self.skip: bool = entry.skip
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

    def _scalar_error(self, value: Any, dtype: Any, e: Exception) -> InputError:
        return InputError(
            f"{value!r} is out of range for a scalar {dtype} parameter of kernel "
            f"{self.executor.kernel.kernel_name!r} ({e})"
        )

    def _load(self) -> Any:
        if self.func is None:
            self.func = self.entry.func or self.executor.load(self.entry)
            self.launch_args = driver.launch_prefix(
                self.func, self.entry.grid, self.block, self.shared_bytes
            )
        return self.func

    def _launch(self, stream: int) -> None:
        func = self.func if self.func is not None else self._load()
        entry = self.entry
        try:
            driver.launch(func, entry.grid, self.block, self.shared_bytes, stream, self.address)
        except CudaError:
            self._relaunch(stream)

    def _relaunch(self, stream: int) -> None:
        """A launch that failed, retried with the entry's device made current (another library
        may have switched this thread's context behind our back); raises the fuser error."""
        entry = self.entry
        driver.get_device(entry.device).make_current()
        driver.launch(self.func, entry.grid, self.block, self.shared_bytes, stream, self.address)

    def __call__(self, args: list[Any], grid: tuple[int, int, int], stream: int) -> None:
        slots = self.slots
        for pos, s in self.ptr_slots:
            slots[s] = args[pos]
        for pos, setter, off, dtype in self.scalar_slots:
            try:
                setter(self.buffer, off, args[pos])
            except (OverflowError, TypeError, ValueError) as e:
                raise self._scalar_error(args[pos], dtype, e) from None
        if not self.skip:
            self._launch(stream)

    def graph_kernel(self) -> driver.KernelNode:
        """This launch as a kernel of a `driver.LaunchGraph` (loads the function)."""
        return driver.KernelNode(
            self._load(), self.entry.grid, self.block, self.shared_bytes, self.address, self.buffer
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
        exec("\n".join(lines), namespace)  # our own generated code
        return namespace["launch"]


# --------------------------------------------------------------------------------------------
# Folding index arithmetic


def _div_trunc(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _rem_trunc(a: int, b: int) -> int:
    return a - b * _div_trunc(a, b)


def _ceil_div_signed(a: int, b: int) -> int:
    return -((-a) // b)


_INT_OPS: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: operator.add,
    arith.SubiOp: operator.sub,
    arith.MuliOp: operator.mul,
    arith.DivUIOp: operator.floordiv,
    arith.DivSIOp: _div_trunc,
    arith.FloorDivSIOp: operator.floordiv,
    arith.CeilDivUIOp: _ceil_div_signed,
    arith.CeilDivSIOp: _ceil_div_signed,
    arith.RemUIOp: operator.mod,
    arith.RemSIOp: _rem_trunc,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
}
"""The `arith` ops on integers and `index` the evaluator computes (operands are non-negative
for the unsigned ones)."""

_DIVISIONS = (
    arith.DivUIOp,
    arith.DivSIOp,
    arith.FloorDivSIOp,
    arith.CeilDivUIOp,
    arith.CeilDivSIOp,
    arith.RemUIOp,
    arith.RemSIOp,
)

_SUPPORTED: tuple[type[Operation], ...] = (
    *_INT_OPS,
    arith.ConstantOp,
    arith.IndexCastOp,
    host.DimOp,
    host.AllocateOp,
    host.DeallocateOp,
    host.AliasSelectOp,
    host.LaunchOp,
    host.ForOp,
    host.YieldOp,
    host.GetCurrentStreamOp,
    host.SetCurrentStreamOp,
    host.StreamOp,
    host.SynchronizeOp,
    host.ReturnOp,
)


def _where(op: Operation) -> str:
    return f"'{op.name}'"


# --------------------------------------------------------------------------------------------
# The evaluator


class HostEvaluator:
    """Runs one `host.program` (see the module docstring).

    `kernels` maps each kernel symbol the program launches to its binding; `backend` defaults
    to the CUDA driver; `num_streams` is the size of the pool `host.stream` indexes.
    """

    def __init__(
        self,
        program: host.ProgramOp,
        kernels: Mapping[str, KernelBinding],
        backend: Backend | None = None,
        num_streams: int = DEFAULT_NUM_STREAMS,
    ) -> None:
        if num_streams < 1:
            raise ValueError(f"num_streams must be positive, got {num_streams}")
        self.program = program
        self.name = program.sym_name.data
        self.kernels = dict(kernels)
        self.backend: Backend = backend if backend is not None else DRIVER_BACKEND
        self.num_streams = num_streams
        args = program.args
        self.is_tensor = tuple(isinstance(a.type, TensorType) for a in args)
        scalars = [i for i, t in enumerate(self.is_tensor) if not t]
        #: positions, among the scalar arguments, of the `index` arguments (part of the key)
        self.index_scalars = tuple(
            n for n, i in enumerate(scalars) if isinstance(args[i].type, IndexType)
        )
        self.specializations: dict[tuple[Any, ...], Specialization] = {}
        self._lock = threading.Lock()
        self._analyze()

    # ---- once per program ------------------------------------------------------------------

    def _analyze(self) -> None:
        """Check every op is supported, and find outputs and the allocations to plan."""
        block = self.program.body.block
        ret = block.last_op
        assert isinstance(ret, host.ReturnOp)
        self.returned = {v for v in ret.values}
        allocs: dict[SSAValue, int] = {}
        deallocs: dict[SSAValue, list[int]] = {}  # top-level index, or -1 inside a loop
        multi_stream = False
        for op in self.program.body.walk():
            if not isinstance(op, _SUPPORTED):
                raise CompilationError(
                    f"host.program @{self.name}: the host evaluator does not run {_where(op)}"
                )
            if isinstance(op, host.LaunchOp):
                name = op.kernel.root_reference.data
                if name not in self.kernels:
                    raise CompilationError(
                        f"host.program @{self.name}: host.launch @{name} names no kernel the "
                        f"evaluator was given ({', '.join(sorted(self.kernels)) or 'none'})"
                    )
                multi_stream |= op.stream is not None
            multi_stream |= isinstance(op, host.SetCurrentStreamOp | host.StreamOp)
            if isinstance(op, host.DeallocateOp):
                top = op.parent_block() is block
                where = block.get_operation_index(op) if top else -1
                deallocs.setdefault(op.input, []).append(where)
                owner = op.input.owner
                if not isinstance(owner, host.AllocateOp):
                    raise CompilationError(
                        f"host.program @{self.name}: host.deallocate of a value that no "
                        "host.allocate made"
                    )
                if op.input in self.returned:
                    raise CompilationError(
                        f"host.program @{self.name}: host.deallocate of a returned tensor"
                    )
            if isinstance(op, host.AllocateOp) and op.parent_block() is block:
                allocs[op.result] = block.get_operation_index(op)
        self.multi_stream = multi_stream
        #: top-level allocations laid out in the workspace: value -> (alloc index, dealloc index)
        self.planned: dict[SSAValue, tuple[int, int]] = {}
        if not multi_stream:
            for value, start in allocs.items():
                frees = deallocs.get(value, [])
                if value not in self.returned and len(frees) == 1 and frees[0] > start:
                    self.planned[value] = (start, frees[0])
        self.first_planned = min((s for s, _ in self.planned.values()), default=-1)
        self.last_planned = max((e for _, e in self.planned.values()), default=-1)

    def compile_kernels(self, max_workers: int | None = None) -> None:
        """Compile every kernel: those with the same options as one NVRTC program
        (`compile_together`), any others in parallel on a thread pool (NVRTC releases the GIL)."""
        bindings = list(self.kernels.values())
        compile_together([b.executor.kernel for b in bindings if isinstance(b, ExecutorKernel)])
        if len(bindings) <= 1:
            for b in bindings:
                b.compile()
            return
        workers = max_workers or min(len(bindings), os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fuser-nvrtc") as pool:
            for future in [pool.submit(b.compile) for b in bindings]:
                future.result()  # re-raises a CompilationError of any kernel

    # ---- once per signature ----------------------------------------------------------------

    def key_of(self, signature: tuple[int, ...], scalars: Sequence[Any]) -> tuple[Any, ...]:
        """The specialization key of a call: its signature, and its `index` argument values."""
        if not self.index_scalars:
            return signature
        return (*signature, *(int(scalars[n]) for n in self.index_scalars))

    def specialize(self, signature: tuple[int, ...], scalars: Sequence[Any] = ()) -> Specialization:
        """The specialization for a signature (`scalars` give the `index` argument values);
        compiled on first sight."""
        key = self.key_of(signature, scalars)
        spec = self.specializations.get(key)
        if spec is None:
            with self._lock:
                spec = self.specializations.get(key)
                if spec is None:
                    metas, _, device = decode_signature(signature, self.is_tensor)
                    index_values = [int(scalars[n]) for n in self.index_scalars]
                    spec = _Builder(self, metas, device, index_values).build()
                    self.specializations[key] = spec
        return spec

    # ---- running ---------------------------------------------------------------------------

    def run(self, call: Call) -> list[Any]:
        """Run the program on a read call (see `fuser.runtime.executor.read_inputs`); outputs
        come back as the inputs' kind."""
        return self.specialize(call.key, call.scalars).run(call)

    def __repr__(self) -> str:
        return f"HostEvaluator(@{self.name}, {len(self.specializations)} signature(s))"


class Specialization:
    """A program compiled for one signature: a register template and a list of closures.

    `launches` lists the bound launches in program order (their launch configuration is the
    one this signature runs with, for `FUSER_DUMP=launch_params`).
    """

    def __init__(self, evaluator: HostEvaluator, device: int) -> None:
        self.evaluator = evaluator
        self.device = device
        self.template: list[Any] = [None] * _FIRST_FREE
        self.code: Code = []
        self.ptr_regs = slice(_FIRST_FREE, _FIRST_FREE)
        self.scalar_regs = slice(_FIRST_FREE, _FIRST_FREE)
        self.result_regs: tuple[int, ...] = ()
        self.results: Callable[[list[Any]], list[Any]] = lambda r: []
        self.result_is_output: tuple[bool, ...] = ()
        self.cleanup_regs: tuple[int, ...] = ()
        self.launches: list[Launcher] = []
        self.output_dtypes: list[np.dtype] = []
        self.torch_device: Any = None
        self.torch_dtypes: list[Any] = []
        self.torch_bytes: Any = None  # torch.uint8, for a workspace from torch's allocator
        self.lock = threading.Lock()

    def prepare_torch(self) -> None:
        """What torch output allocations need (the torch frontend is set up on first use)."""
        if self.torch_device is not None:
            return
        fe = TORCH_FRONTEND
        if not fe.dtypes:
            fe.raw_stream(self.device)  # sets the frontend up
        stub = SimpleNamespace(
            device=self.device,
            out_shapes=tuple(() for _ in self.output_dtypes),
            out_slots=tuple(range(len(self.output_dtypes))),
            torch_device=None,
            torch_out=None,
        )
        fe.prepare_entry(stub, self.output_dtypes)  # type: ignore[arg-type]
        self.torch_dtypes = [dtype for _, _, dtype in stub.torch_out]
        self.torch_bytes = fe.dtypes[np.dtype(np.uint8)]
        self.torch_device = stub.torch_device

    def execute(
        self,
        inputs: Sequence[Any],
        ptrs: Sequence[int],
        scalars: Sequence[Any],
        stream: int,
        frontend: Frontend,
    ) -> list[Any]:
        """Run with the given tensor pointers and scalar values on `stream` (the device of the
        specialization must be current). Returns the results, outputs as `frontend` made them."""
        r = self.template.copy()
        r[_CUR] = stream
        r[_FE] = frontend
        r[_INPUTS] = inputs
        r[self.ptr_regs] = ptrs  # exactly one per tensor argument (as `scalars` below)
        if scalars:
            r[self.scalar_regs] = scalars
        with self.lock:
            try:
                for ins in self.code:
                    ins(r)
            except BaseException:
                self._release(r, stream)
                raise
        return self.results(r)

    def _release(self, r: list[Any], stream: int) -> None:
        """Free the pool memory a failed call still holds."""
        free = self.evaluator.backend.free
        for reg in self.cleanup_regs:
            if r[reg]:
                free(r[reg], stream)
                r[reg] = None

    def run(self, call: Call) -> list[Any]:
        """Run a read call: uploads host inputs, makes the device current, hands the outputs
        back as the inputs' kind."""
        if call.needs_upload:
            call.upload()
        fe = call.frontend
        if fe is TORCH_FRONTEND and self.torch_device is None:
            self.prepare_torch()
        previous = driver.current_device() if self.device != _current_ordinal() else None
        if previous is not None:
            driver.get_device(self.device).make_current()
        try:
            results = self.execute(call.inputs, call.ptrs, call.scalars, call.stream, fe)
        finally:
            if previous is not None:
                previous.make_current()
        outs = [r for r, o in zip(results, self.result_is_output, strict=True) if o]
        finished = iter(fe.finish(outs, call.stream)) if outs else iter(())
        return [
            next(finished) if o else r for r, o in zip(results, self.result_is_output, strict=True)
        ]

    def describe_launches(self) -> str:
        """One line per launch: kernel, grid, block, dynamic shared memory."""
        return "\n".join(
            f"{launch.name}: grid={list(launch.grid) if launch.grid else 'computed'} "
            f"block={list(launch.block)} smem={launch.shared_bytes}"
            for launch in self.launches
        )


def _unreachable(r: list[Any]) -> None:
    raise AssertionError("a placeholder instruction ran")


def _graph_launch(launchers: Sequence[Any]) -> Callable[[list[Any]], None]:
    """A closure that launches `launchers` (their arguments written already) on the current
    stream as one `driver.LaunchGraph`, built on first use. Should the graph fail (another
    library may have switched this thread's context), each kernel is launched on its own (its
    device made current if that launch fails too), and that launch's error is the one raised."""
    kernels = tuple(launchers)
    graph: list[driver.LaunchGraph] = []

    def launch_graph(r: list[Any]) -> None:
        stream = r[_CUR]
        try:
            if not graph:
                graph.append(driver.LaunchGraph([k.graph_kernel() for k in kernels]))
            graph[0].launch(stream)
        except CudaError:
            for k in kernels:
                k._launch(stream)

    return launch_graph


def _getter(regs: Sequence[int]) -> Callable[[list[Any]], list[Any]]:
    """A function returning the values of `regs` from a register file, as a list."""
    if not regs:
        return lambda r: []
    if len(regs) == 1:
        (k,) = regs

        def one(r: list[Any]) -> list[Any]:
            return [r[k]]

        return one
    get = operator.itemgetter(*regs)
    return lambda r: list(get(r))


def _current_ordinal() -> int:
    return driver.current_device().ordinal


class _Workspace:
    """The planned allocations of a specialization: offsets first-fit over lifetimes."""

    def __init__(self) -> None:
        self.buffers: list[tuple[int, int, int, int]] = []  # (reg, nbytes, start, end)
        self.offsets: tuple[tuple[int, int], ...] = ()
        self.total = 0

    def add(self, reg: int, nbytes: int, start: int, end: int) -> None:
        self.buffers.append((reg, nbytes, start, end))

    def finalize(self) -> None:
        placed: list[tuple[int, int, int, int]] = []  # (offset, size, start, end)
        offsets = []
        for reg, nbytes, start, end in sorted(self.buffers, key=lambda b: (b[2], -b[1])):
            size = -(-max(nbytes, 1) // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT
            live = sorted((o, s) for o, s, a, b in placed if a <= end and start <= b)
            offset = 0
            for o, s in live:
                if offset + size <= o:
                    break
                offset = max(offset, o + s)
            placed.append((offset, size, start, end))
            offsets.append((reg, offset))
            self.total = max(self.total, offset + size)
        self.offsets = tuple(offsets)


class _Builder:
    """Compiles a program for one signature into a Specialization (see the module docstring)."""

    def __init__(
        self,
        evaluator: HostEvaluator,
        metas: Sequence[Any],
        device: int,
        index_values: Sequence[int],
    ) -> None:
        self.ev = evaluator
        self.spec = Specialization(evaluator, device)
        self.template = self.spec.template
        self.template[_DEV] = device
        self.device = device
        self.metas = metas
        self.index_values = list(index_values)
        self.regs: dict[SSAValue, int] = {}
        self.consts: dict[SSAValue, Any] = {}
        self.tensors: dict[SSAValue, TensorInfo] = {}
        self.owners: dict[SSAValue, int] = {}  # output value -> register of its object
        self.cleanup: list[int] = []
        self.workspace = _Workspace()
        self.workspace_reg = self.workspace_owner = -1
        self.workspace_at: tuple[Code, int] | None = None
        self.streams: list[int] | None = None
        # top-level closures that write a launch's arguments for a graph (see batch_launches),
        # and those that may sit between two such launches (they only make arguments)
        self.batched: dict[Callable[[list[Any]], None], Any] = {}
        self.argument_makers: set[Callable[[list[Any]], None]] = set()

    # ---- registers -------------------------------------------------------------------------

    def new_reg(self, initial: Any = None) -> int:
        self.template.append(initial)
        return len(self.template) - 1

    def bind(self, value: SSAValue, initial: Any = None) -> int:
        reg = self.regs[value] = self.new_reg(initial)
        return reg

    def const(self, value: SSAValue, c: Any) -> None:
        self.consts[value] = c
        self.bind(value, c)

    def known(self, value: SSAValue) -> bool:
        return value in self.consts

    def fail(self, op: Operation, message: str) -> CompilationError:
        return CompilationError(f"host.program @{self.ev.name}: {_where(op)} {message}")

    # ---- the program -----------------------------------------------------------------------

    def build(self) -> Specialization:
        spec = self.spec
        args = self.ev.program.args
        # tensor arguments, then scalar arguments, in consecutive registers (a call fills them
        # with two slice assignments)
        first = len(self.template)
        for arg, meta in zip(args, self.metas, strict=True):
            t = arg.type
            if isinstance(t, TensorType):
                assert meta is not None
                dtype = numpy_dtype(t.element_type)
                self.tensors[arg] = TensorInfo(meta.shape, meta.strides, dtype, meta.alignment)
                self.bind(arg)
        middle = len(self.template)
        index_values = iter(self.index_values)
        for arg in args:
            t = arg.type
            if isinstance(t, IndexType):
                self.const(arg, next(index_values))
            elif not isinstance(t, TensorType):
                self.bind(arg)
        spec.ptr_regs = slice(first, middle)
        spec.scalar_regs = slice(middle, len(self.template))
        self.block(self.ev.program.body.block, spec.code, top=True)
        self.workspace.finalize()
        if self.workspace_at is not None:
            code, index = self.workspace_at
            code[index] = self.workspace_closure()
            self.argument_makers.add(code[index])
        spec.code = self.batch_launches(spec.code)
        spec.cleanup_regs = tuple(self.cleanup)
        return spec

    def batch_launches(self, code: Code) -> Code:
        """The top-level launches on the call's stream, run as `driver.LaunchGraph`s: each run
        of them that nothing but allocations and index arithmetic separates becomes one graph,
        launched where the run ends, before whatever comes next (a deallocation, a stream change
        or synchronization, a loop, the return). What lies between them only makes their
        arguments, which the graph reads when it is launched. Launches in loops or on other
        streams stay single: the launches of one graph are serialized, which would undo the
        overlap of stream-parallel slices."""
        out: Code = []
        run: list[Any] = []
        for fn in code:
            if fn in self.batched:
                run.append(self.batched[fn])
            elif run and fn not in self.argument_makers:
                out.append(_graph_launch(run))
                run = []
            out.append(fn)
        if run:
            out.append(_graph_launch(run))
        return out

    def block(self, block: Block, code: Code, top: bool) -> None:
        for index, op in enumerate(block.ops):
            if top and index == self.ev.first_planned:
                self.workspace_alloc(code)
            self.op(op, code, index if top else -1)
            if top and index == self.ev.last_planned:
                self.workspace_free(code)

    def op(self, op: Operation, code: Code, index: int) -> None:
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if isinstance(value, IntegerAttr):
                c: Any = value.value.data
                if isinstance(value.type, IntegerType) and value.type.width.data == 1:
                    c = bool(c)
            elif isinstance(value, FloatAttr):
                c = float(value.value.data)
            else:
                raise self.fail(op, f"has a value the evaluator does not handle: {value}")
            self.const(op.result, c)
        elif isinstance(op, arith.IndexCastOp):
            self.alias(op.results[0], op.operands[0])
        elif type(op) in _INT_OPS:
            self.int_op(op, code)
        elif isinstance(op, host.DimOp):
            self.const(op.result, self.tensors[op.input].shape[op.axis.value.data])
        elif isinstance(op, host.AllocateOp):
            self.allocate(op, code, index)
        elif isinstance(op, host.DeallocateOp):
            self.deallocate(op, code)
        elif isinstance(op, host.AliasSelectOp):
            self.alias_select(op, code)
        elif isinstance(op, host.LaunchOp):
            self.launch(op, code)
        elif isinstance(op, host.ForOp):
            self.loop(op, code)
        elif isinstance(op, host.YieldOp):
            pass
        elif isinstance(op, host.GetCurrentStreamOp):
            self.copy(code, self.bind(op.result), _CUR)
        elif isinstance(op, host.SetCurrentStreamOp):
            self.copy(code, _CUR, self.regs[op.stream])
        elif isinstance(op, host.StreamOp):
            self.stream(op, code)
        elif isinstance(op, host.SynchronizeOp):
            self.synchronize(op, code)
        elif isinstance(op, host.ReturnOp):
            self.returns(op, code)
        else:  # _analyze rejected it already
            raise self.fail(op, "is not supported")

    def alias(self, result: SSAValue, source: SSAValue) -> None:
        self.regs[result] = self.regs[source]
        if source in self.consts:
            self.consts[result] = self.consts[source]

    @staticmethod
    def copy(code: Code, dst: int, src: int) -> None:
        def copy(r: list[Any]) -> None:
            r[dst] = r[src]

        code.append(copy)

    # ---- index arithmetic ------------------------------------------------------------------

    def int_op(self, op: Operation, code: Code) -> None:
        fn = _INT_OPS[type(op)]
        lhs, rhs = op.operands
        result = op.results[0]
        if self.known(lhs) and self.known(rhs):
            a, b = self.consts[lhs], self.consts[rhs]
            if isinstance(op, _DIVISIONS) and b == 0:
                raise self.fail(op, f"divides {a} by zero")
            self.const(result, fn(a, b))
            return
        a, b, out = self.regs[lhs], self.regs[rhs], self.bind(result)
        name = op.name

        def compute(r: list[Any]) -> None:
            try:
                r[out] = fn(r[a], r[b])
            except ZeroDivisionError:
                raise CompilationError(f"'{name}' divides {r[a]} by zero") from None

        code.append(compute)
        self.argument_makers.add(compute)

    # ---- memory ----------------------------------------------------------------------------

    def allocate(self, op: host.AllocateOp, code: Code, index: int) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        sizes = iter(op.dynamic_sizes)
        shape = []
        for d in t.get_shape():
            if d >= 0:
                shape.append(d)
                continue
            size = next(sizes)
            if not self.known(size):
                raise self.fail(
                    op,
                    "has a size that depends on a loop index; sizes must follow from the input "
                    "shapes",
                )
            extent = self.consts[size]
            if extent < 0:
                raise self.fail(op, f"has a negative size {extent}")
            shape.append(extent)
        dtype = numpy_dtype(t.element_type)
        info = TensorInfo(tuple(shape), contiguous_strides(shape), dtype, 16)
        self.tensors[op.result] = info
        reg = self.bind(op.result)
        if op.result in self.ev.returned:
            self.output_allocation(op.result, info, reg, code)
        elif op.result in self.ev.planned:
            start, end = self.ev.planned[op.result]
            self.workspace.add(reg, info.nbytes, start, end)
        else:
            alloc = self.ev.backend.alloc
            nbytes = info.nbytes
            self.cleanup.append(reg)

            def allocate(r: list[Any]) -> None:
                r[reg] = alloc(nbytes, r[_CUR])

            code.append(allocate)
            self.argument_makers.add(allocate)

    def output_allocation(self, value: SSAValue, info: TensorInfo, reg: int, code: Code) -> None:
        spec = self.spec
        k = len(spec.output_dtypes)
        spec.output_dtypes.append(info.dtype)
        owner = self.owners[value] = self.new_reg()
        shape, dtype = info.shape, info.dtype
        sizes = torch_sizes(shape)
        torch = TORCH_FRONTEND

        def allocate_output(r: list[Any]) -> None:
            fe = r[_FE]
            if fe is torch:
                out = torch.empty(*sizes, dtype=spec.torch_dtypes[k], device=spec.torch_device)
                r[reg] = out.data_ptr()
            else:
                outs, ptrs = fe.allocate((shape,), (dtype,), r[_DEV], r[_CUR])
                out = outs[0]
                r[reg] = ptrs[0]
            r[owner] = out

        code.append(allocate_output)
        self.argument_makers.add(allocate_output)

    def workspace_alloc(self, code: Code) -> None:
        """A placeholder for the workspace's allocation, replaced once its layout is known."""
        self.workspace_reg = self.new_reg()
        self.workspace_owner = self.new_reg()
        self.cleanup.append(self.workspace_reg)
        self.workspace_at = (code, len(code))
        code.append(_unreachable)

    def workspace_closure(self) -> Callable[[list[Any]], None]:
        """Allocates the workspace and points each planned buffer into it (unrolled).

        A call with torch tensors takes the workspace from torch's caching allocator, like
        torch's own temporaries (a workspace exists only in programs that run on the caller's
        stream alone, torch's current stream): no driver call, and once dropped the bytes are
        reusable by whatever that stream runs next. Other calls take it from the pool.
        """
        lines = [
            "def allocate_workspace(r):",
            f"    if r[{_FE}] is TORCH:",
            f"        ws = r[{self.workspace_owner}] = TORCH.empty(",
            "            TOTAL, dtype=spec.torch_bytes, device=spec.torch_device)",
            "        base = ws.data_ptr()",
            "    else:",
            f"        base = r[{self.workspace_reg}] = alloc(TOTAL, r[{_CUR}])",
        ]
        lines += [f"    r[{reg}] = base + {offset}" for reg, offset in self.workspace.offsets]
        namespace = {
            "alloc": self.ev.backend.alloc,
            "TOTAL": self.workspace.total,
            "TORCH": TORCH_FRONTEND,
            "spec": self.spec,
        }
        exec("\n".join(lines), namespace)  # our own generated code
        return namespace["allocate_workspace"]

    def workspace_free(self, code: Code) -> None:
        reg, owner = self.workspace_reg, self.workspace_owner
        free = self.ev.backend.free

        def free_workspace(r: list[Any]) -> None:
            if r[reg]:
                free(r[reg], r[_CUR])
                r[reg] = None
            r[owner] = None  # a torch workspace returns to torch's cache

        code.append(free_workspace)

    def deallocate(self, op: host.DeallocateOp, code: Code) -> None:
        if op.input in self.ev.planned:
            return  # its bytes are the workspace's: reused by later planned buffers
        reg = self.regs[op.input]
        free = self.ev.backend.free

        def deallocate(r: list[Any]) -> None:
            free(r[reg], r[_CUR])
            r[reg] = None

        code.append(deallocate)

    def alias_select(self, op: host.AliasSelectOp, code: Code) -> None:
        base = self.tensors[op.input]
        axis = op.axis.value.data
        extent, stride = base.shape[axis], base.strides[axis]
        step = stride * base.dtype.itemsize
        shape = base.shape[:axis] + base.shape[axis + 1 :]
        strides = base.strides[:axis] + base.strides[axis + 1 :]
        src, out = self.regs[op.input], self.bind(op.result)
        if self.known(op.index):
            i = self.consts[op.index]
            if not 0 <= i < extent:
                raise self.fail(op, f"index {i} is out of range for extent {extent}")
            offset = i * step
            alignment = min(base.alignment, ALIGNMENT[offset & 15])

            def select(r: list[Any]) -> None:
                r[out] = r[src] + offset

        else:
            alignment = min(base.alignment, ALIGNMENT[step & 15])  # any multiple of step
            index = self.regs[op.index]
            name = op.name

            def select(r: list[Any]) -> None:
                i = r[index]
                if not 0 <= i < extent:
                    raise InputError(f"'{name}' index {i} is out of range for extent {extent}")
                r[out] = r[src] + i * step

        self.tensors[op.result] = TensorInfo(shape, strides, base.dtype, alignment)
        code.append(select)
        self.argument_makers.add(select)

    # ---- launches, loops, streams ------------------------------------------------------------

    def launch(self, op: host.LaunchOp, code: Code) -> None:
        name = op.kernel.root_reference.data
        binding = self.ev.kernels[name]
        ins: list[ParamInfo] = []
        for v in op.ins:
            if isinstance(v.type, TensorType):
                ins.append(self.tensors[v])
            else:
                ins.append(numpy_dtype(v.type))
        outs = [self.tensors[v] for v in op.outs]
        block = op.block_dims
        launcher = binding.bind(
            name, ins, outs, (block[0], block[1], block[2]), op.smem.value.data, self.device
        )
        self.spec.launches.append(launcher)
        arg_regs = tuple(self.regs[v] for v in op.params)
        stream = _CUR if op.stream is None else self.regs[op.stream]
        on_registers = getattr(launcher, "on_registers", None)
        if on_registers is not None:  # the launcher reads the registers itself
            batched = code is self.spec.code and stream == _CUR and not launcher.skip
            fn = on_registers(arg_regs, stream, batched)
            if batched:
                self.batched[fn] = launcher
            code.append(fn)
            return
        if all(self.known(g) for g in op.grid):
            grid = tuple(self.consts[g] for g in op.grid)

            def launch(r: list[Any]) -> None:
                launcher([r[i] for i in arg_regs], grid, r[stream])

        else:
            gx, gy, gz = (self.regs[g] for g in op.grid)

            def launch(r: list[Any]) -> None:
                launcher([r[i] for i in arg_regs], (r[gx], r[gy], r[gz]), r[stream])

        code.append(launch)

    def loop(self, op: host.ForOp, code: Code) -> None:
        lb, ub, step = self.regs[op.lb], self.regs[op.ub], self.regs[op.step]
        iv = self.bind(op.induction_var)
        body: Code = []
        self.block(op.body.block, body, top=False)

        def loop(r: list[Any]) -> None:
            s = r[step]
            if s <= 0:
                raise InputError(f"'host.for' step {s} must be positive")
            for i in range(r[lb], r[ub], s):
                r[iv] = i
                for ins in body:
                    ins(r)

        code.append(loop)

    def stream_pool(self) -> list[int]:
        if self.streams is None:
            self.streams = self.ev.backend.stream_pool(self.device, self.ev.num_streams)
        return self.streams

    def stream(self, op: host.StreamOp, code: Code) -> None:
        pool = self.stream_pool()
        n = len(pool)
        if self.known(op.index):
            i = self.consts[op.index]
            if i < 0:
                raise self.fail(op, f"index {i} is negative")
            self.const(op.result, pool[i % n])
            return
        index, out = self.regs[op.index], self.bind(op.result)

        def stream(r: list[Any]) -> None:
            i = r[index]
            if i < 0:
                raise InputError(f"'host.stream' index {i} is negative")
            r[out] = pool[i % n]

        code.append(stream)

    def synchronize(self, op: host.SynchronizeOp, code: Code) -> None:
        other = self.regs[op.stream]
        sync = self.ev.backend.synchronize

        def synchronize(r: list[Any]) -> None:
            if r[other] != r[_CUR]:
                sync(r[_CUR], r[other])

        code.append(synchronize)

    def returns(self, op: host.ReturnOp, code: Code) -> None:
        regs: list[int] = []
        is_output: list[bool] = []
        args = list(self.ev.program.args)
        for v in op.values:
            if v in self.owners:
                regs.append(self.owners[v])
                is_output.append(True)
            elif isinstance(v.type, TensorType):
                if v not in args:
                    raise self.fail(op, "returns a view; return allocated tensors or arguments")
                position = args.index(v)
                reg = self.new_reg()

                def pass_input(r: list[Any], reg: int = reg, position: int = position) -> None:
                    r[reg] = r[_INPUTS][position]

                code.append(pass_input)
                regs.append(reg)
                is_output.append(False)
            else:
                regs.append(self.regs[v])
                is_output.append(False)
        self.spec.result_regs = tuple(regs)
        self.spec.results = _getter(regs)
        self.spec.result_is_output = tuple(is_output)


# --------------------------------------------------------------------------------------------
# The per-fusion cache of specializations and its fast path

#: Called on a signature the cache does not hold, with the read call: returns the
#: specialization to run it with, or None when the signature is not one for a program (the
#: cache then hands the call to `fallback`). Raises for inputs that do not fit.
ProgramMiss = Callable[[Call], "Specialization | None"]


class ProgramCache:
    """Signature -> Specialization, for one fusion: the hot path of `execute` for segmented
    fusions.

    A call whose tensor inputs are all CUDA torch tensors on the current device, with a known
    signature, takes a generated fast path (read the metadata, look the signature up, run the
    specialization on torch's current stream). A signature that the single-kernel cache `other`
    holds goes straight to `other.execute`; anything else takes the general path (`read_inputs`,
    `miss` on a new signature). `hits` and `misses` count the calls this cache served.
    """

    def __init__(self, layout: InputLayout, miss: ProgramMiss, other: ExecutorCache) -> None:
        self.layout = layout
        self.entries: dict[tuple[int, ...], Specialization] = {}
        self.hits = 0
        self.misses = 0
        self.last: Specialization | None = None
        self._miss = miss
        self.other = other
        self.fast_path_source = _program_fast_path_source(layout)
        self.execute: Callable[[Sequence[Any]], list[Any]] = self._general
        if self.fast_path_source:
            namespace = {
                "CACHE": self,
                "SPECS": self.entries,
                "BY_TORCH_KEY": {},
                "OTHER": other,
                "OTHER_ENTRIES": other.entries,
                "FE": TORCH_FRONTEND,
                "TYPES": TORCH_FRONTEND.types,
                "CODES": TORCH_FRONTEND.codes,
                "ALIGN": ALIGNMENT,
                "KINDS": SCALAR_KINDS,
                "GENERAL": self._general,
                "driver": driver,
            }
            exec(self.fast_path_source, namespace)  # our own generated code
            self.execute = namespace["execute"]

    def _general(self, inputs: Sequence[Any]) -> list[Any]:
        """The general path: any inputs, any signature."""
        call = read_inputs(inputs, self.layout)
        spec = self.entries.get(call.key)
        if spec is None:
            if call.key in self.other.entries:
                return self.other.execute(inputs)
            spec = self._miss(call)
            if spec is None:
                return self.other.execute(inputs)
            self.misses += 1
            self.entries[call.key] = spec
        else:
            self.hits += 1
        self.last = spec
        self.other.last = None
        return spec.run(call)


def _program_fast_path_source(layout: InputLayout) -> str:
    """The fast path of a ProgramCache for torch inputs ("" without tensor inputs)."""
    tensors, scalars = layout.tensors, layout.scalars
    if not tensors:
        return ""
    lines, torch_key, key = torch_signature_prologue(layout)
    ptrs = "".join(f"p{i}, " for i in tensors)
    values = "".join(f"x{i}, " for i in scalars)
    lines += [
        f"        torch_key = {torch_key}",
        "        spec = BY_TORCH_KEY.get(torch_key)",
        "        if spec is None:",
        f"            key = {key}",
        "    except (AttributeError, TypeError, KeyError):",
        "        return GENERAL(inputs)",
        "    if spec is None:",
        "        spec = SPECS.get(key)",
        "        if spec is None:",
        "            if key in OTHER_ENTRIES:",
        "                return OTHER.execute(inputs)",
        "            return GENERAL(inputs)",
        "        BY_TORCH_KEY[torch_key] = spec",
        "    if spec.torch_device is None or driver.current_device().ordinal != device:",
        "        return GENERAL(inputs)",
        "    CACHE.hits += 1",
        "    CACHE.last = spec",
        "    OTHER.last = None",
        f"    return spec.execute(inputs, ({ptrs}), ({values}), FE.raw_stream(device), FE)",
    ]
    return "\n".join(lines) + "\n"
