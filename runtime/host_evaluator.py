"""Running a `host.program`: the host evaluator.

`HostEvaluator` interprets one `host.program` over kernels it is given by name and a backend for
memory, streams and events (`KernelBinding` and `Backend`, `fuser.runtime.kernel_binding`:
`ExecutorKernel` for a `KernelExecutor`, `DriverBackend` for the CUDA driver; tests pass fakes).
It never walks IR on the hot path:

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
  stream-ordered pool. A `host.workspace` (which `fuser-plan-memory` makes, laying out a
  program's intermediates by their lifetimes) is one allocation per call, and each
  `host.workspace_view` a pointer into it: with torch inputs the workspace is a `torch.empty`
  byte tensor (torch's caching allocator on torch's current stream, where the program runs),
  else it comes from the pool, and `host.release` returns it.
- **Views.** `host.reshape`, `host.slice` and `host.permute` compute a view's extents and
  strides once per signature (a slice moves the pointer). A returned view of an argument (an
  output that views a fusion input, as nvFuser aliases it) is built per call by the frontend
  (`Frontend.view`: `as_strided` of the caller's torch tensor, a strided `DeviceArray`, ...):
  it is no output allocation and is not copied back.
- **Constants.** A `host.iota` is computed with numpy for the signature and uploaded by the
  specialization's first `run` (the device current; before the dispatch fast path can call
  `execute`) into memory outside the pool (`driver.DeviceConstant`, whose free waits for the
  device). Its pointer sits in the register template: a call runs nothing for it.
- **Launches** run as the program says: `host.grid` asks the kernel's binding for the grid of a
  signature (`ExecutorKernel`: the `KernelExecutor` entry of the launch's inputs, planned once
  per signature), and `host.launch` launches with its grid operands (whatever computed them),
  block and dynamic shared memory; a block or shared memory the kernel was not compiled for is
  a CompilationError naming the launch. Each specialization owns a copy of each entry's
  argument buffer. Top-level
  launches on the call's stream run as CUDA graphs (`driver.LaunchGraph`, one per run of
  launches that no deallocation, stream change or loop separates): about 3 µs for the graph
  plus 1 µs for each kernel whose arguments changed since its last launch, against 4-5 µs a
  kernel for `cuLaunchKernel`.
- **Streams.** The current stream starts as the call's stream. `host.stream %i` is stream
  `i mod n` of a per-device pool of `n` (default 4) streams; `host.synchronize %s` records an
  event on `%s` and makes the current stream wait for it (the host never blocks).
- **Threads.** A specialization runs under its own lock (its argument buffers are shared);
  different signatures run concurrently.
- **Profiling.** `profiled(signature, scalars)` is the signature's specialization built once
  more for `fd.execute(..., profile=True)`: the same closures, but every launch runs on its own
  (no graphs) between two backend timestamps on its stream, appending a `LaunchRecord` to the
  specialization's `records`. Unprofiled calls never run it.
- **Compilation.** `compile_kernels()` compiles every kernel's binding on a thread pool (NVRTC
  releases the GIL), so the kernels of a segmented fusion compile in parallel on first use.

A `Specialization` is what the signature cache of `fuser.runtime.dispatch` runs for a signature
that a program serves.
"""

from __future__ import annotations

import operator
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    Builtin,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from fuser.dialects import host
from fuser.dialects.views import (
    ReshapeError,
    contiguous_strides,
    permute_view,
    reshape_view,
    slice_view,
    view_alignment,
)
from fuser.errors import CompilationError, CudaError, InputError
from fuser.options import DEFAULT_STREAMS
from fuser.runtime import driver
from fuser.runtime.calls import Call
from fuser.runtime.compiled_kernel import compile_together
from fuser.runtime.dtypes import iota_array, numpy_dtype
from fuser.runtime.frontends import TORCH_FRONTEND, Frontend, torch_sizes
from fuser.runtime.generated import define
from fuser.runtime.kernel_binding import (
    DRIVER_BACKEND,
    Backend,
    ExecutorKernel,
    KernelBinding,
    Launcher,
    ParamInfo,
    TensorInfo,
    reads_registers,
)
from fuser.runtime.signature import ALIGNMENT, decode_signature

Code = list[Callable[[list[Any]], None]]
"""Compiled code: closures run in order on the register file of a call."""

# Registers every specialization has.
_CUR, _FE, _DEV, _INPUTS = 0, 1, 2, 3
_FIRST_FREE = 4


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
    arith.AndIOp: operator.and_,
    arith.OrIOp: operator.or_,
}
"""The `arith` ops on integers and `index` the evaluator computes (operands are non-negative
for the unsigned ones), besides `cmpi` (`_COMPARISONS`) and `select`."""

_COMPARISONS: tuple[Callable[[int, int], bool], ...] = (
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
)
"""`arith.cmpi` by predicate number: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge (the
evaluator's integers are exact, and non-negative where compared unsigned)."""

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
    arith.CmpiOp,
    arith.SelectOp,
    arith.ConstantOp,
    arith.IndexCastOp,
    host.DimOp,
    host.AllocateOp,
    host.DeallocateOp,
    host.AliasSelectOp,
    host.ReshapeOp,
    host.SliceOp,
    host.PermuteOp,
    host.IotaOp,
    host.WorkspaceOp,
    host.WorkspaceViewOp,
    host.ReleaseOp,
    host.GridOp,
    host.LaunchOp,
    host.ForOp,
    host.YieldOp,
    host.GetCurrentStreamOp,
    host.SetCurrentStreamOp,
    host.StreamOp,
    host.SynchronizeOp,
    host.ReturnOp,
)


_VIEW_OPS = (host.ReshapeOp, host.SliceOp, host.PermuteOp)
"""Ops whose result is a view of their operand, sharing its memory."""


def _view_source(v: SSAValue) -> SSAValue:
    """The tensor `v` is a view of through reshapes, slices and permutes (`v` itself if it is
    no view)."""
    while isinstance(v.owner, _VIEW_OPS):
        v = v.owner.input
    return v


def parse_program(text: str) -> host.ProgramOp:
    """The `host.program` of printed host IR (`op_text` of one), verified; a
    CompilationError when the text holds none or does not parse."""
    ctx = Context()
    for dialect in (Builtin, Arith, host.Host):
        ctx.load_dialect(dialect)
    try:
        module = Parser(ctx, text).parse_module()
        module.verify()
    except (ParseError, VerifyException) as e:
        raise CompilationError(f"host IR does not parse: {e}") from None
    programs = [op for op in module.ops if isinstance(op, host.ProgramOp)]
    if len(programs) != 1:
        raise CompilationError(f"host IR holds {len(programs)} host.program ops, not one")
    program = programs[0]
    program.detach()
    return program


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
        num_streams: int = DEFAULT_STREAMS,
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
        self.profiled_specializations: dict[tuple[Any, ...], Specialization] = {}
        self._lock = threading.Lock()
        self._analyze()

    # ---- once per program ------------------------------------------------------------------

    def _analyze(self) -> None:
        """Check every op is supported and every kernel named, and find the outputs."""
        block = self.program.body.block
        ret = block.last_op
        assert isinstance(ret, host.ReturnOp)
        self.returned = {v for v in ret.values}
        # an allocation that a returned reshape views: the output is allocated in its shape
        self.returned_views: dict[SSAValue, list[host.ReshapeOp]] = {}
        args = set(self.program.args)
        for v in ret.values:
            if _view_source(v) in args:
                continue  # a view of an argument: a view of the caller's tensor (`returns`)
            chain: list[host.ReshapeOp] = []
            while isinstance(v.owner, host.ReshapeOp):
                chain.insert(0, v.owner)
                v = v.owner.input
            if isinstance(v.owner, host.SliceOp | host.IotaOp):
                raise CompilationError(
                    f"host.program @{self.name}: returns a {v.owner.name} (or a reshape of one); "
                    "an output owns its memory: copy it into an allocation first"
                )
            if chain and isinstance(v.owner, host.AllocateOp):
                if v in self.returned or v in self.returned_views:
                    raise CompilationError(
                        f"host.program @{self.name}: returns a tensor and a reshape of it, or "
                        "two reshapes of one tensor; outputs share no memory"
                    )
                self.returned_views[v] = chain
        for op in self.program.body.walk():
            if not isinstance(op, _SUPPORTED):
                raise CompilationError(
                    f"host.program @{self.name}: the host evaluator does not run {_where(op)}"
                )
            if isinstance(op, host.LaunchOp | host.GridOp):
                name = op.kernel.root_reference.data
                if name not in self.kernels:
                    raise CompilationError(
                        f"host.program @{self.name}: {op.name} @{name} names no kernel the "
                        f"evaluator was given ({', '.join(sorted(self.kernels)) or 'none'})"
                    )
            if isinstance(op, host.DeallocateOp):
                if not isinstance(op.input.owner, host.AllocateOp):
                    raise CompilationError(
                        f"host.program @{self.name}: host.deallocate of a value that no "
                        "host.allocate made"
                    )
                if op.input in self.returned or op.input in self.returned_views:
                    raise CompilationError(
                        f"host.program @{self.name}: host.deallocate of a returned tensor"
                    )

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
        return self._specialize(self.specializations, signature, scalars, profile=False)

    def profiled(self, signature: tuple[int, ...], scalars: Sequence[Any] = ()) -> Specialization:
        """The profiled specialization for a signature (see the module docstring); compiled on
        first sight."""
        return self._specialize(self.profiled_specializations, signature, scalars, profile=True)

    def _specialize(
        self,
        cache: dict[tuple[Any, ...], Specialization],
        signature: tuple[int, ...],
        scalars: Sequence[Any],
        profile: bool,
    ) -> Specialization:
        key = self.key_of(signature, scalars)
        spec = cache.get(key)
        if spec is None:
            with self._lock:
                spec = cache.get(key)
                if spec is None:
                    metas, _, device = decode_signature(signature, self.is_tensor)
                    index_values = [int(scalars[n]) for n in self.index_scalars]
                    spec = _Builder(self, metas, device, index_values, profile).build()
                    cache[key] = spec
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
    one this signature runs with, for `FUSER_DUMP=launch_params`). It is the runnable the
    signature cache of `fuser.runtime.dispatch` keeps for a signature a program serves. A
    profiled one (`HostEvaluator.profiled`) appends a `LaunchRecord` per launch it runs to
    `records` (None for others), which its caller empties before a run.
    """

    one_launch = False
    """What the dispatch fast path checks: a program runs through `execute`."""

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
        self.constants: list[Any] = []  # owners of the device memory of its `host.iota`s
        self.pending_constants: list[tuple[int, np.ndarray]] = []  # (register, values) to upload
        self.records: list[LaunchRecord] | None = None
        self.lock = threading.Lock()

    def prepare_torch(self) -> None:
        """What torch output allocations need: the torch device and each output's dtype."""
        if self.torch_device is not None:
            return
        device, specs = TORCH_FRONTEND.output_specs(
            self.device, [() for _ in self.output_dtypes], self.output_dtypes
        )
        self.torch_dtypes = [dtype for _, dtype in specs]
        self.torch_bytes = TORCH_FRONTEND.dtypes[np.dtype(np.uint8)]
        self.torch_device = device

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
        previous = driver.current_device() if self.device != _current_ordinal() else None
        if previous is not None:
            driver.get_device(self.device).make_current()
        try:
            if self.pending_constants:
                self.upload_constants()
            # (after the constants: a prepared torch device lets the fast path call execute)
            if fe is TORCH_FRONTEND and self.torch_device is None:
                self.prepare_torch()
            results = self.execute(call.inputs, call.ptrs, call.scalars, call.stream, fe)
        finally:
            if previous is not None:
                previous.make_current()
        outs = [r for r, o in zip(results, self.result_is_output, strict=True) if o]
        finished = iter(fe.finish(outs, call.stream)) if outs else iter(())
        return [
            next(finished) if o else r for r, o in zip(results, self.result_is_output, strict=True)
        ]

    def upload_constants(self) -> None:
        """Upload the `host.iota`s of the signature (its first run, the device current) into
        their registers of the template, which every call copies."""
        with self.lock:
            upload = self.evaluator.backend.upload
            for reg, values in self.pending_constants:
                ptr, owner = upload(values)
                self.constants.append(owner)
                self.template[reg] = ptr
            self.pending_constants = []

    def describe_launches(self) -> str:
        """One line per launch: kernel, grid, block, dynamic shared memory."""
        return "\n".join(
            f"{launch.name}: grid={list(launch.grid) if launch.grid else 'computed'} "
            f"block={list(launch.block)} smem={launch.shared_bytes}"
            for launch in self.launches
        )


@dataclass(frozen=True)
class LaunchRecord:
    """One launch of a profiled run: its launcher, the grid and stream it ran with, the bytes
    its tensor inputs and outputs move (`TensorInfo.moved_bytes`), and the backend's
    timestamps before and after it."""

    launcher: Launcher
    grid: tuple[int, int, int]
    stream: int
    input_bytes: int
    output_bytes: int
    start: Any
    end: Any


def _unreachable(r: list[Any]) -> None:
    raise AssertionError("a placeholder instruction ran")


def _graph_launch(launchers: Sequence[Any]) -> Callable[[list[Any]], None]:
    """A closure that launches `launchers` (their arguments written already) on the current
    stream: one by one on the specialization's first run, as one `driver.LaunchGraph` from its
    second (building a graph costs more than the launches it saves once, and a signature seen
    once may never come back). Should the graph fail (another library may have switched this
    thread's context), each kernel is launched on its own (its device made current if that
    launch fails too), and that launch's error is the one raised."""
    kernels = tuple(launchers)
    graph: list[driver.LaunchGraph] = []
    runs = [0]

    def launch_graph(r: list[Any]) -> None:
        stream = r[_CUR]
        try:
            if not graph:
                runs[0] += 1
                if runs[0] == 1:
                    for k in kernels:
                        k._launch(stream)
                    return
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


@dataclass
class _WorkspacePlan:
    """A `host.workspace` of a specialization: its size, the registers of its base pointer, of
    its pool allocation (to free) and of its torch tensor (to keep alive), where its allocation
    goes in the code, and its views (register, byte offset)."""

    nbytes: int
    base: int
    pool: int
    owner: int
    at: tuple[Code, int]
    views: list[tuple[int, int]] = field(default_factory=list)


class _Builder:
    """Compiles a program for one signature into a Specialization (see the module docstring)."""

    def __init__(
        self,
        evaluator: HostEvaluator,
        metas: Sequence[Any],
        device: int,
        index_values: Sequence[int],
        profile: bool = False,
    ) -> None:
        self.ev = evaluator
        self.spec = Specialization(evaluator, device)
        self.profile = profile
        if profile:
            self.spec.records = []
        self.template = self.spec.template
        self.template[_DEV] = device
        self.device = device
        self.metas = metas
        self.index_values = list(index_values)
        self.regs: dict[SSAValue, int] = {}
        self.consts: dict[SSAValue, Any] = {}
        self.tensors: dict[SSAValue, TensorInfo] = {}
        self.owners: dict[SSAValue, int] = {}  # output value -> register of its object
        self.arg_views: dict[SSAValue, tuple[int, int]] = {}
        """A tensor argument or a view of one -> (the argument's position, the byte offset of
        the view's first element from the argument's)."""
        self.cleanup: list[int] = []
        # per workspace: where its (placeholder) allocation sits, its registers and its views
        self.workspaces: dict[SSAValue, _WorkspacePlan] = {}
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
        for position, (arg, meta) in enumerate(zip(args, self.metas, strict=True)):
            t = arg.type
            if isinstance(t, TensorType):
                assert meta is not None
                dtype = numpy_dtype(t.element_type)
                self.tensors[arg] = TensorInfo(meta.shape, meta.strides, dtype, meta.alignment)
                self.bind(arg)
                self.arg_views[arg] = (position, 0)
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
        for plan in self.workspaces.values():
            code, index = plan.at
            code[index] = self.workspace_closure(plan)
            self.argument_makers.add(code[index])
        if not self.profile:
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
            self.op(op, code, index if top else -1)

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
        elif isinstance(op, arith.CmpiOp):
            self.compare(op, code)
        elif isinstance(op, arith.SelectOp):
            self.select(op, code)
        elif isinstance(op, host.DimOp):
            self.const(op.result, self.tensors[op.input].shape[op.axis.value.data])
        elif isinstance(op, host.AllocateOp):
            self.allocate(op, code, index)
        elif isinstance(op, host.DeallocateOp):
            self.deallocate(op, code)
        elif isinstance(op, host.WorkspaceOp):
            self.workspace(op, code)
        elif isinstance(op, host.WorkspaceViewOp):
            self.workspace_view(op, code)
        elif isinstance(op, host.ReleaseOp):
            self.release(op, code)
        elif isinstance(op, host.AliasSelectOp):
            self.alias_select(op, code)
        elif isinstance(op, host.ReshapeOp):
            self.reshape(op)
        elif isinstance(op, host.SliceOp):
            self.slice(op, code)
        elif isinstance(op, host.PermuteOp):
            self.permute(op)
        elif isinstance(op, host.IotaOp):
            self.iota(op)
        elif isinstance(op, host.GridOp):
            self.grid(op)
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

    def compare(self, op: arith.CmpiOp, code: Code) -> None:
        fn = _COMPARISONS[op.predicate.value.data]
        lhs, rhs = op.lhs, op.rhs
        if self.known(lhs) and self.known(rhs):
            self.const(op.result, fn(self.consts[lhs], self.consts[rhs]))
            return
        a, b, out = self.regs[lhs], self.regs[rhs], self.bind(op.result)

        def compare(r: list[Any]) -> None:
            r[out] = fn(r[a], r[b])

        code.append(compare)
        self.argument_makers.add(compare)

    def select(self, op: arith.SelectOp, code: Code) -> None:
        cond, on_true, on_false = op.cond, op.lhs, op.rhs
        if self.known(cond):
            self.alias(op.result, on_true if self.consts[cond] else on_false)
            return
        c, t, f, out = (
            self.regs[cond],
            self.regs[on_true],
            self.regs[on_false],
            self.bind(op.result),
        )

        def select(r: list[Any]) -> None:
            r[out] = r[t] if r[c] else r[f]

        code.append(select)
        self.argument_makers.add(select)

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
        elif op.result in self.ev.returned_views:  # allocated as the reshape it is returned as
            final = info
            for view in self.ev.returned_views[op.result]:
                final = self.view_of(view, final)
            self.output_allocation(op.result, final, reg, code)
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

    def known_index(self, op: Operation, value: SSAValue, what: str) -> int:
        """The value of an `index` operand that must follow from the signature."""
        if not self.known(value):
            raise self.fail(
                op, f"has a {what} that depends on a loop index; it must follow from the shapes"
            )
        n = self.consts[value]
        if n < 0:
            raise self.fail(op, f"has a negative {what} {n}")
        return n

    def workspace(self, op: host.WorkspaceOp, code: Code) -> None:
        """A placeholder for the workspace's allocation, replaced once its views are known."""
        nbytes = self.known_index(op, op.nbytes, "size")
        plan = _WorkspacePlan(
            nbytes, self.bind(op.result), self.new_reg(), self.new_reg(), (code, len(code))
        )
        self.workspaces[op.result] = plan
        self.cleanup.append(plan.pool)
        code.append(_unreachable)

    def workspace_view(self, op: host.WorkspaceViewOp, code: Code) -> None:
        plan = self.workspaces.get(op.workspace)
        if plan is None:
            raise self.fail(op, "views a workspace this program does not make")
        t = op.result.type
        assert isinstance(t, TensorType)
        sizes = iter(op.dynamic_sizes)
        shape = tuple(
            d if d >= 0 else self.known_index(op, next(sizes), "size") for d in t.get_shape()
        )
        info = TensorInfo(shape, contiguous_strides(shape), numpy_dtype(t.element_type), 16)
        offset = self.known_index(op, op.offset, "offset")
        if offset + info.nbytes > plan.nbytes:
            raise self.fail(
                op,
                f"lays {info.nbytes} bytes at offset {offset} of a workspace of {plan.nbytes} "
                "bytes",
            )
        self.tensors[op.result] = TensorInfo(
            info.shape, info.strides, info.dtype, ALIGNMENT[offset & 15]
        )
        plan.views.append((self.bind(op.result), offset))

    def workspace_closure(self, plan: _WorkspacePlan) -> Callable[[list[Any]], None]:
        """Allocates the workspace and points each of its views into it (unrolled).

        A call with torch tensors takes the workspace from torch's caching allocator, like
        torch's own temporaries (`fuser-plan-memory` makes workspaces only in programs that
        run on the caller's stream alone, torch's current stream): no driver call, and once
        dropped the bytes are reusable by whatever that stream runs next. Other calls take it
        from the pool.
        """
        lines = [
            "def allocate_workspace(r):",
            f"    if r[{_FE}] is TORCH:",
            f"        ws = r[{plan.owner}] = TORCH.empty(",
            "            TOTAL, dtype=spec.torch_bytes, device=spec.torch_device)",
            f"        base = r[{plan.base}] = ws.data_ptr()",
            "    else:",
            f"        base = r[{plan.base}] = r[{plan.pool}] = alloc(TOTAL, r[{_CUR}])",
        ]
        lines += [f"    r[{reg}] = base + {offset}" for reg, offset in plan.views]
        namespace = {
            "alloc": self.ev.backend.alloc,
            "TOTAL": max(plan.nbytes, 1),
            "TORCH": TORCH_FRONTEND,
            "spec": self.spec,
        }
        return define(
            "\n".join(lines) + "\n",
            "allocate_workspace",
            namespace,
            f"workspace of @{self.ev.name}",
        )

    def release(self, op: host.ReleaseOp, code: Code) -> None:
        plan = self.workspaces.get(op.workspace)
        if plan is None:
            raise self.fail(op, "releases a workspace this program does not make")
        pool, owner = plan.pool, plan.owner
        free = self.ev.backend.free

        def free_workspace(r: list[Any]) -> None:
            if r[pool]:
                free(r[pool], r[_CUR])
                r[pool] = None
            r[owner] = None  # a torch workspace returns to torch's cache

        code.append(free_workspace)

    def deallocate(self, op: host.DeallocateOp, code: Code) -> None:
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
        if self.known(op.index):
            i = self.consts[op.index]
            if not 0 <= i < extent:
                raise self.fail(op, f"index {i} is out of range for extent {extent}")
            alignment = view_alignment(base.alignment, i * step)
            self.tensors[op.result] = TensorInfo(shape, strides, base.dtype, alignment)
            self.offset_view(op.input, op.result, i * step, code)
            return
        alignment = min(base.alignment, ALIGNMENT[step & 15])  # any multiple of step
        src, out = self.regs[op.input], self.bind(op.result)
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

    def offset_view(self, source: SSAValue, result: SSAValue, offset: int, code: Code) -> None:
        """`result` is `source`'s pointer plus `offset` bytes, fixed for the signature (the
        same register where the offset is 0)."""
        if offset == 0:
            self.alias(result, source)
            return
        src, out = self.regs[source], self.bind(result)

        def offset_view(r: list[Any]) -> None:
            r[out] = r[src] + offset

        code.append(offset_view)
        self.argument_makers.add(offset_view)

    def view_of(self, op: host.ReshapeOp, base: TensorInfo) -> TensorInfo:
        """The TensorInfo of `op`'s view of a tensor described by `base`."""
        try:
            shape, strides = reshape_view(op.target(base.shape), base.shape, base.strides)
        except ReshapeError as e:
            raise InputError(f"'{op.name}' {e}") from None
        if strides is None:  # the segmenter copies an operand it cannot view
            raise self.fail(
                op,
                f"cannot view a {list(base.shape)} tensor with strides {list(base.strides)} as "
                f"{list(shape)}",
            )
        return TensorInfo(shape, strides, base.dtype, base.alignment)

    def reshape(self, op: host.ReshapeOp) -> None:
        """`host.reshape`: a view, computed once per signature; the pointer is the operand's."""
        self.tensors[op.result] = self.view_of(op, self.tensors[op.input])
        self.alias(op.result, op.input)
        if op.input in self.owners:  # a returned view of an output allocated in its shape
            self.owners[op.result] = self.owners[op.input]
        self.view_of_argument(op.input, op.result, 0)

    def permute(self, op: host.PermuteOp) -> None:
        """`host.permute`: a view, computed once per signature; the pointer is the operand's."""
        base = self.tensors[op.input]
        shape, strides = permute_view(op.source_dims, base.shape, base.strides)
        self.tensors[op.result] = TensorInfo(shape, strides, base.dtype, base.alignment)
        self.alias(op.result, op.input)
        self.view_of_argument(op.input, op.result, 0)

    def view_of_argument(self, source: SSAValue, view: SSAValue, offset: int) -> None:
        """Records `view` as a view of the argument `source` is (or views), `offset` bytes
        further, for `returns`."""
        if source in self.arg_views:
            position, base = self.arg_views[source]
            self.arg_views[view] = (position, base + offset)

    def slice(self, op: host.SliceOp, code: Code) -> None:
        """`host.slice`: a view, computed once per signature; the pointer is the operand's
        plus the offset of the first element (none for an empty slice)."""
        base = self.tensors[op.input]
        shape, strides, offset = slice_view(*op.bounds(), base.shape, base.strides)
        offset_bytes = offset * base.dtype.itemsize
        alignment = view_alignment(base.alignment, offset_bytes)
        self.tensors[op.result] = TensorInfo(shape, strides, base.dtype, alignment)
        self.offset_view(op.input, op.result, offset_bytes, code)
        self.view_of_argument(op.input, op.result, offset_bytes)

    def iota(self, op: host.IotaOp) -> None:
        """`host.iota`: a constant of the specialization, computed now, uploaded by its first
        `run` (`Specialization.upload_constants`) and kept while the specialization lives."""
        t = cast(TensorType, op.result.type)
        extent = t.get_shape()[0]
        length = extent if op.length is None else self.known_index(op, op.length, "length")
        dtype = numpy_dtype(t.element_type)
        self.tensors[op.result] = TensorInfo((length,), (1,), dtype, 16)
        reg = self.bind(op.result)  # set in the template by the first run
        self.spec.pending_constants.append((reg, iota_array(length, *op.values(), dtype)))

    # ---- launches, loops, streams ------------------------------------------------------------

    def params(self, values: Sequence[SSAValue]) -> list[ParamInfo]:
        """What a binding sees of kernel arguments: a tensor's TensorInfo, a scalar's dtype."""
        return [
            self.tensors[v] if isinstance(v.type, TensorType) else numpy_dtype(v.type)
            for v in values
        ]

    def grid(self, op: host.GridOp) -> None:
        """`host.grid`: the kernel's grid for this signature, a constant of the specialization."""
        name = op.kernel.root_reference.data
        grid = self.ev.kernels[name].grid(name, self.params(op.ins), self.device)
        for value, extent in zip(op.grid, grid, strict=True):
            self.const(value, extent)

    def launch(self, op: host.LaunchOp, code: Code) -> None:
        """`host.launch` with the program's grid (constant per specialization, or computed per
        call), block and dynamic shared memory."""
        name = op.kernel.root_reference.data
        binding = self.ev.kernels[name]
        known = all(self.known(g) for g in op.grid)
        grid = tuple(self.consts[g] for g in op.grid) if known else None
        for g in grid or ():
            if g < 0:
                raise self.fail(op, f"has a negative grid extent {g}")
        block = op.block_dims
        launcher = binding.bind(
            name,
            self.params(op.ins),
            [self.tensors[v] for v in op.outs],
            grid,  # type: ignore[arg-type]
            (block[0], block[1], block[2]),
            op.smem.value.data,
            self.device,
        )
        self.spec.launches.append(launcher)
        arg_regs = tuple(self.regs[v] for v in op.params)
        stream = _CUR if op.stream is None else self.regs[op.stream]
        if reads_registers(launcher) and grid is not None:  # it reads the registers itself
            batched = (
                code is self.spec.code and stream == _CUR and not launcher.skip and not self.profile
            )
            fn = launcher.on_registers(arg_regs, stream, batched)
            if batched:
                self.batched[fn] = launcher
        else:
            fn = self.launch_with_arguments(op, launcher, grid, arg_regs, stream)
        skip = reads_registers(launcher) and launcher.skip  # (nothing to time)
        code.append(self.timed(op, fn, launcher, stream) if self.profile and not skip else fn)

    def launch_with_arguments(
        self,
        op: host.LaunchOp,
        launcher: Launcher,
        grid: tuple[int, int, int] | None,
        arg_regs: tuple[int, ...],
        stream: int,
    ) -> Callable[[list[Any]], None]:
        """The launch calling `launcher` with its argument values: with the specialization's
        `grid`, or (None) the grid the program computes per call."""
        if grid is not None:
            fixed = grid

            def launch(r: list[Any]) -> None:
                launcher([r[i] for i in arg_regs], fixed, r[stream])

        else:
            gx, gy, gz = (self.regs[g] for g in op.grid)
            op_name = op.name

            def launch(r: list[Any]) -> None:
                computed = (r[gx], r[gy], r[gz])
                if min(computed) < 0:
                    raise InputError(f"'{op_name}' has a negative grid extent: {list(computed)}")
                launcher([r[i] for i in arg_regs], computed, r[stream])

        return launch

    def timed(
        self,
        op: host.LaunchOp,
        launch: Callable[[list[Any]], None],
        launcher: Launcher,
        stream: int,
    ) -> Callable[[list[Any]], None]:
        """`launch` between two timestamps on its stream, recorded in the specialization's
        `records` (a profiled specialization's)."""
        records = self.spec.records
        assert records is not None
        backend = self.ev.backend
        read = sum(i.moved_bytes for i in self.params(op.ins) if isinstance(i, TensorInfo))
        written = sum(self.tensors[v].moved_bytes for v in op.outs)
        grid_regs = tuple(self.regs[g] for g in op.grid)

        def timed_launch(r: list[Any]) -> None:
            s = r[stream]
            start = backend.timestamp(s)
            launch(r)
            grid = cast(tuple[int, int, int], tuple(r[g] for g in grid_regs))
            records.append(
                LaunchRecord(launcher, grid, s, read, written, start, backend.timestamp(s))
            )

        return timed_launch

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

    def returned_view(self, v: SSAValue, code: Code) -> int:
        """The register of a returned view of an argument: each call makes it a view of the
        caller's tensor (`Frontend.view`), as nvFuser returns an output aliasing an input."""
        info = self.tensors[v]
        position, offset_bytes = self.arg_views[v]
        shape, strides, offset = info.shape, info.strides, offset_bytes // info.dtype.itemsize
        reg = self.new_reg()

        def return_view(r: list[Any]) -> None:
            r[reg] = r[_FE].view(r[_INPUTS][position], shape, strides, offset)

        code.append(return_view)
        return reg

    def returns(self, op: host.ReturnOp, code: Code) -> None:
        regs: list[int] = []
        is_output: list[bool] = []
        args = list(self.ev.program.args)
        for v in op.values:
            if v in self.owners:
                regs.append(self.owners[v])
                is_output.append(True)
            elif v in args and isinstance(v.type, TensorType):
                position = args.index(v)
                reg = self.new_reg()

                def pass_input(r: list[Any], reg: int = reg, position: int = position) -> None:
                    r[reg] = r[_INPUTS][position]

                code.append(pass_input)
                regs.append(reg)
                is_output.append(False)
            elif isinstance(v.type, TensorType):
                if v not in self.arg_views:
                    raise self.fail(op, "returns a view; return allocated tensors or arguments")
                regs.append(self.returned_view(v, code))
                is_output.append(False)
            else:
                regs.append(self.regs[v])
                is_output.append(False)
        self.spec.result_regs = tuple(regs)
        self.spec.results = _getter(regs)
        self.spec.result_is_output = tuple(is_output)
