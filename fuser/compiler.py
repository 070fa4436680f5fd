"""From a fusion and its inputs to kernels that run: the signature cache, and what fills it.

`FusionCompiler` serves one `fusion.fusion` op (nvFuser's FusionExecutorCache). `execute(inputs)`
reads the inputs into a signature (`fuser.runtime.signature`: shapes, strides, dtypes, pointer
alignment, device), looks the signature up in its one `SignatureCache` (`fuser.runtime.dispatch`)
and, on a hit, only launches. On a miss (`_on_miss`, the cache's one miss handler) it validates
the inputs against the fusion's signature (count, dtype, rank, static extents, scalar kinds;
device placement is checked while reading) and finds what runs the signature:

1. **The runnable store** (`fuser.runtime.runnable_store`): what an earlier process ran for the
   same fusion, options, device and signature, loaded with the runtime alone: the kernel's
   entry, or the program's host IR and kernels.
2. **The builder** (`fuser.builder`, imported and made on the first signature the store does
   not hold): a kernel or program compiled before whose heuristics still hold, or a new one
   (split-K, scheduling, segmentation, host lowering, CUDA, NVRTC); what it makes is stored.

Either way the runnable is an `Entry` (one kernel's launch) or a `Specialization` (a program's)
and sits in the signature cache, whose generated fast path serves torch inputs of known
signatures. `cache_info()` counts hits, misses, heuristic reuses, signatures, kernels, programs
and stored runnables loaded. Misses are serialized by a lock, so threads may share one compiler.

`compile(inputs, arch=...)` runs the builder without a GPU (NVRTC only), for an explicit `sm_XY`
target with an H100's limits, and returns a `CompiledFusion` describing each kernel.
`FUSER_DUMP` (`fuser.dump`) prints the stages as they happen.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType

from fuser.dialects.common import op_text
from fuser.dialects.fusion import I1, FusionOp, element_type, format_shape
from fuser.errors import CudaError, DefinitionError, InputError
from fuser.multi_kernel import ENV as MULTI_KERNEL_ENV
from fuser.options import DEFAULT_STREAMS, check_options
from fuser.runtime import driver
from fuser.runtime.calls import Call, InputLayout, read_inputs
from fuser.runtime.dispatch import Runnable, SignatureCache
from fuser.runtime.dtypes import numpy_dtype
from fuser.runtime.executor import Entry
from fuser.runtime.frontends import permute_outputs, write_aliases
from fuser.runtime.runnable_store import RunnableStore
from fuser.runtime.signature import SCALAR_BOOL, SCALAR_FLOAT, SCALAR_INT, SCALAR_KINDS

if TYPE_CHECKING:
    from fuser.builder import FusionBuilder, _Program, _Variant
    from fuser.profiler import FusionProfile
    from fuser.runtime.host_evaluator import Specialization
    from fuser.transforms.output_layouts import OutputPermutes
    from fuser.transforms.schedulers.base import LaunchConfig, Params
    from fuser.transforms.schedulers.info import FusionInfo
    from fuser.transforms.segment_rules import MergePredicate

# --------------------------------------------------------------------------------------------
# What a compilation produced


@dataclass(frozen=True)
class KernelSummary:
    """One compiled kernel: name, scheduler and heuristics, CUDA source, cubin, launch."""

    name: str
    scheduler: str
    heuristics: Params
    source: str
    cubin_size: int
    launch: LaunchConfig
    arch: str

    def describe(self) -> str:
        return (
            f"{self.name} [{self.scheduler}] grid={self.launch.grid} block={self.launch.block} "
            f"shared={self.launch.shared_bytes} B cubin={self.cubin_size / 1024:.1f} KiB"
        )


@dataclass(frozen=True)
class CompiledFusion:
    """The kernels a fusion compiled to for one input signature, in launch order."""

    fusion_name: str
    arch: str
    kernels: tuple[KernelSummary, ...]
    multi_kernel: str = ""
    """The variants timed against the kernel and the choice (`fuser.multi_kernel`), or ""."""

    def summary(self) -> str:
        """A readable listing: one block per kernel with its heuristics, and the multi-kernel
        variants where there are several."""
        n = len(self.kernels)
        lines = [f"@{self.fusion_name} for {self.arch}: {n} kernel{'' if n == 1 else 's'}"]
        for i, k in enumerate(self.kernels):
            lines.append(f"  #{i} {k.describe()}")
            lines.append(f"     heuristics: {k.heuristics}")
        if self.multi_kernel:
            lines.append(f"  multi-kernel: {self.multi_kernel}")
        return "\n".join(lines)

    def cuda_code(self) -> str:
        """The CUDA source of every kernel."""
        return "\n".join(k.source for k in self.kernels)

    def __repr__(self) -> str:
        kernels = "; ".join(k.describe() for k in self.kernels)
        return f"CompiledFusion(@{self.fusion_name}, {self.arch}, [{kernels}])"


class SegmentSummary(NamedTuple):
    """One segment of the last execution: the scheduler that runs it and its kernel's name."""

    scheduler: str
    kernel: str


def _no_gpu_error() -> CudaError:
    return CudaError(
        "no CUDA device is available to run the fusion on (libcuda missing or no GPU found); "
        "compile(inputs, arch='sm_90') compiles without one"
    )


def _describe_input(index: int, hint: str | None) -> str:
    return f"input #{index}" + (f" (%{hint})" if hint else "")


def _shape_str(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class _PreparedProgram:
    """A whole program's run with fixed inputs, for timing (`FusionCompiler.prepare`)."""

    def __init__(self, spec: Specialization, call: Call) -> None:
        self.spec = spec
        self.call = call
        self.name = f"@{spec.evaluator.name} ({len(spec.launches)} kernels)"
        self.stream = call.stream
        self.outputs = spec.run(call)

    def __call__(self) -> None:
        self.outputs = self.spec.run(self.call)


class FusionCompiler:
    """Compiles and runs one fusion for whatever inputs it is given (see the module docstring).

    `hits` / `misses` count signature-cache lookups of `execute`; `kernels_compiled` counts the
    kernels compiled (with NVRTC, or taken from the kernel cache on disk); `heuristic_reuses`
    counts new signatures served by a kernel or program compiled for another one.
    """

    def __init__(
        self,
        fusion: FusionOp,
        *,
        should_merge: MergePredicate | None = None,
        split_k: int | None = None,
        streams: int = DEFAULT_STREAMS,
        welford: str = "auto",
    ) -> None:
        """`should_merge` replaces the schedulers in the segmenter (`segment_fusion`): every
        signature then runs as a program of the segments it allows. `split_k` forces the
        split-K factor of every matmul (1: never split); None lets `transforms.split_k` choose
        per signature. `streams` is the number of CUDA streams the slices of stream-parallel
        ops (`fusion.stream_axis`) are spread over. `welford` (`auto`, `always`, `never`) is
        the Welford translation (`transforms.translate_welford`), decided per signature for a
        fusion one kernel runs, per segment by the segmenter otherwise."""
        check_options("FusionCompiler", streams=streams, welford=welford, split_k=split_k)
        self.should_merge = should_merge
        self.split_k = split_k
        self.streams = streams
        self.welford = welford
        args = fusion.body.block.args
        self.input_types = tuple(a.type for a in args)
        self.n_outputs = len(fusion.output_op.values)
        self.aliases = tuple(fusion.output_op.written())
        """(output, input) pairs: output o is written into input i after a run, not returned."""
        self.output_permutes: OutputPermutes = ()
        """Outputs the kernels write in another order of their dims (a stride order), each
        handed back permuted (`transforms.output_layouts`)."""
        if any(fusion.output_op.layouts()):
            from fuser.transforms.output_layouts import physical_outputs  # (a pass: imported late)

            fusion = fusion.clone()
            self.output_permutes = physical_outputs(fusion)
        self.fusion = fusion
        """The fusion the kernels compute: the definition's, its outputs with stride orders
        written row-major in the order of their strides."""
        hints = tuple(a.name_hint for a in args)
        self.layout = InputLayout(
            fusion_name=fusion.sym_name.data,
            names=tuple(_describe_input(i, h) for i, h in enumerate(hints)),
            is_tensor=tuple(isinstance(t, TensorType) for t in self.input_types),
            short_names=tuple(f"%{h}" if h else "_" for h in hints),
        )
        self._lock = threading.RLock()
        self._signatures = SignatureCache(self.layout, self._on_miss)
        self._builder: FusionBuilder | None = None
        # a merge predicate is code, which no record can name: such a compiler stores nothing
        self._store = (
            RunnableStore(self._describe, self.layout.is_tensor, streams)
            if should_merge is None
            else None
        )
        self._stored: dict[int, tuple[int, ...]] = {}  # id(stored runnable) -> its signature
        self._compiled_last: _Variant | _Program | None = None

    def _describe(self) -> str:
        """The fusion and the options it is compiled with, as the runnable store keys them
        (a forced multi-kernel variant is one: a record holds the kernel that ran)."""
        options = (
            f"split_k={self.split_k} streams={self.streams} welford={self.welford} "
            f"multi_kernel={os.environ.get(MULTI_KERNEL_ENV, '').strip()}"
        )
        return f"{op_text(self.fusion)}{options}"

    @property
    def builder(self) -> FusionBuilder:
        """The compile side (`fuser.builder`), imported and made on first use."""
        if self._builder is None:
            from fuser.builder import FusionBuilder

            with self._lock:
                if self._builder is None:
                    self._builder = FusionBuilder(
                        self.fusion,
                        self.layout,
                        should_merge=self.should_merge,
                        split_k=self.split_k,
                        streams=self.streams,
                        welford=self.welford,
                    )
        return self._builder

    # ---- reading and checking inputs ---------------------------------------------------------

    def signature_of(self, inputs: Sequence[Any]) -> tuple[int, ...]:
        """The signature of a call (see `fuser.runtime.signature`); inputs are not validated
        beyond what reading them needs."""
        return read_inputs(inputs, self.layout, with_stream=False).key

    def validate(self, call: Call) -> None:
        """Raise InputError, naming the input, if a read call does not match the fusion."""
        names = self.layout.names
        for i, view in zip(self.layout.tensors, call.tensor_views(), strict=True):
            t = self.input_types[i]
            assert isinstance(t, TensorType)
            where = names[i]
            expected = numpy_dtype(t.element_type)
            if view.dtype != expected:
                raise InputError(
                    f"{where}: expected dtype {expected} ({t.element_type}) for {t}, "
                    f"got {view.dtype}"
                )
            rank = t.get_num_dims()
            if view.ndim != rank:
                raise InputError(
                    f"{where}: expected rank {rank} for {t}, got rank {view.ndim} "
                    f"(shape {_shape_str(view.shape)})"
                )
            for d, (static, actual) in enumerate(zip(t.get_shape(), view.shape, strict=True)):
                if static not in (DYNAMIC_INDEX, actual):
                    raise InputError(
                        f"{where}: expected extent {static} in dim {d} (shape "
                        f"{format_shape(t.get_shape())}), got shape {_shape_str(view.shape)}"
                    )
        for i, value in zip(self.layout.scalars, call.scalars, strict=True):
            _check_scalar(names[i], self.input_types[i], value)

    def output_shapes(self, info: FusionInfo) -> tuple[tuple[int, ...], ...]:
        """The outputs' shapes for the input shapes of `info` (InputError if they clash)."""
        return self.builder.output_shapes(info)

    def info_for(self, inputs: Sequence[Any], arch: str | None = None) -> FusionInfo:
        """The FusionInfo of a call: tensor metadata of the inputs (numpy arrays as the
        contiguous, aligned device copies they would become) and the current device's limits,
        or an H100's with `arch` as target when `arch` is given."""
        call = read_inputs(inputs, self.layout, with_stream=False)
        self.validate(call)
        return self.builder.info(call, arch)

    # ---- compiling ---------------------------------------------------------------------------

    def compile(self, inputs: Sequence[Any], arch: str | int | None = None) -> CompiledFusion:
        """Compile the fusion for these inputs: for the current GPU, or without one for `arch`
        (e.g. "sm_90" or 90, with an H100's limits). Numpy arrays, device tensors and Python numbers
        are accepted as inputs; only their metadata is used."""
        from fuser.builder import DeviceInfo, device_info, target_arch

        builder = self.builder
        if arch is not None:
            arch = target_arch(arch)
        call = read_inputs(inputs, self.layout, with_stream=False)
        self.validate(call)
        if arch is None:
            if not driver.gpu_available():
                raise CudaError(
                    "no CUDA device found to compile for: pass arch='sm_90' (or another "
                    "sm_XY) to compile without one"
                )
            dev = device_info(call.device)
        else:
            dev = DeviceInfo(arch=arch)
        with self._lock:
            entries = self._signatures.entries
            executed = arch is None and call.key in entries
            choice = builder.compile(call, dev, executed)
            if arch is None and call.key not in entries:  # execute will hit
                entries[call.key] = builder.runnable_of(choice, call)
        self._compiled_last = choice
        self._signatures.last = None
        return builder.summary(choice, call, dev)

    # ---- running -----------------------------------------------------------------------------

    def execute(self, inputs: Sequence[Any]) -> list[Any]:
        """Run the fusion; outputs come back as the inputs' kind (torch, cupy, DeviceArray or
        numpy), an aliased one written into its input instead (`write_aliases`). Compiles on
        the first call for each new signature."""
        outputs = self._signatures.execute(inputs)
        if self.output_permutes:
            outputs = permute_outputs(outputs, self.output_permutes)
        if self.aliases:
            layout = self.layout
            return write_aliases(inputs, outputs, self.aliases, layout.names, layout.tensors[0])
        return outputs

    def profile(self, inputs: Sequence[Any]) -> tuple[list[Any], FusionProfile]:
        """`execute` with each kernel launch timed (`fd.execute(..., profile=True)`, see
        `fuser.profiler`): the outputs and the profile of the call."""
        from fuser.profiler import run_profiled  # (not on the hot path)
        from fuser.runtime.host_evaluator import Specialization

        began = time.perf_counter()
        call = read_inputs(inputs, self.layout)
        misses = self._signatures.misses
        runnable = self._signatures.lookup(call)
        compile_ms = (time.perf_counter() - began) * 1e3 if self._signatures.misses > misses else 0
        self._signatures.last = runnable
        assert isinstance(runnable, Entry | Specialization)
        schedulers = {s.kernel: s.scheduler for s in self._last().segments()}
        outputs, profile = run_profiled(runnable, call, schedulers, compile_ms)
        if self.output_permutes:
            outputs = permute_outputs(outputs, self.output_permutes)
        if self.aliases:
            layout = self.layout
            outputs = write_aliases(inputs, outputs, self.aliases, layout.names, layout.tensors[0])
        return outputs, profile

    def _on_miss(self, call: Call) -> Runnable:
        """The signature cache's miss: validate the call, then load or compile what runs its
        signature (see the module docstring)."""
        with self._lock:
            runnable = self._signatures.entries.get(call.key)
            if runnable is not None:  # another thread compiled it meanwhile
                return runnable
            self.validate(call)
            if not driver.gpu_available():
                raise _no_gpu_error()
            store = self._store
            if store is not None:
                runnable = store.load(call.key)
                if runnable is not None:
                    self._stored[id(runnable)] = call.key
                    return runnable
            runnable = self.builder.runnable(call)
            if store is not None:
                store.save(call.key, runnable)
            return runnable

    def prepare(self, inputs: Sequence[Any]) -> list[Any]:
        """Each kernel's launch for these inputs with its outputs allocated once, for timing
        (compiles on a new signature, like `execute`). A fusion that runs as a program gives
        one callable that runs the whole program (allocating its buffers each time)."""
        from fuser.runtime.host_evaluator import Specialization  # (a program's: not on a hit)

        call = read_inputs(inputs, self.layout)
        runnable = self._signatures.lookup(call)
        self._signatures.last = runnable
        if isinstance(runnable, Entry):
            return [runnable.executor.prepare(call)]
        assert isinstance(runnable, Specialization)
        return [_PreparedProgram(runnable, call)]

    # ---- describing --------------------------------------------------------------------------

    def _last(self) -> _Variant | _Program:
        """The kernel or program the last `execute` (or else `compile`) ran; for a runnable the
        store loaded, the builder's (found or compiled again) for its signature."""
        last = self._signatures.last
        if last is not None:
            key = self._stored.get(id(last))
            if key is not None:
                return self.builder.choice_for(key)
            choice = self.builder.choice_of(last)
            if choice is not None:
                return choice
        if self._compiled_last is not None:
            return self._compiled_last
        raise DefinitionError(
            f"fusion '@{self.layout.fusion_name}' has not been compiled yet: call "
            "execute(inputs) or compile(inputs) first"
        )

    def last_cuda_code(self) -> str:
        """The CUDA source of every kernel the last `execute` or `compile` used."""
        return "\n".join(self._last().sources())

    def last_segments(self) -> list[SegmentSummary]:
        """The segments of the last `execute` or `compile`: scheduler and kernel name each
        (one for a fusion that runs as one kernel)."""
        return self._last().segments()

    def host_ir(self) -> str:
        """The host program of the last `execute` or `compile`, as text. For a fusion that
        runs as one kernel it is the program that launches that kernel (lowered on demand)."""
        return self._last().host_ir()

    @property
    def hits(self) -> int:
        """Signature-cache hits of `execute`."""
        return self._signatures.hits

    @property
    def misses(self) -> int:
        """Signature-cache misses of `execute` (each validated the inputs)."""
        return self._signatures.misses

    @property
    def kernels_compiled(self) -> int:
        """Kernels compiled (with NVRTC, or taken from the kernel cache on disk)."""
        return 0 if self._builder is None else self._builder.kernels_compiled

    @property
    def heuristic_reuses(self) -> int:
        """New signatures served by a kernel or program compiled for another one."""
        return 0 if self._builder is None else self._builder.heuristic_reuses

    def cache_info(self) -> dict[str, int]:
        """Signature-cache hits and misses, new signatures served by a kernel or program
        compiled for another one (`heuristic_reuses`), signatures seen, kernels compiled, host
        programs built, and runnables loaded from the runnable store (`stored`)."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "heuristic_reuses": self.heuristic_reuses,
            "signatures": len(self._signatures.entries),
            "kernels": self.kernels_compiled,
            "programs": 0 if self._builder is None else self._builder.programs,
            "stored": 0 if self._store is None else self._store.loaded,
        }

    def __repr__(self) -> str:
        info = self.cache_info()
        return (
            f"FusionCompiler(@{self.layout.fusion_name}, {info['signatures']} signature(s), "
            f"{info['kernels']} kernel(s), {info['programs']} program(s), "
            f"hits={self.hits}, misses={self.misses})"
        )


def _check_scalar(where: str, t: Any, value: object) -> None:
    """A scalar input must be a Python or numpy number of the kind its type takes."""
    got = type(value).__name__
    kind = SCALAR_KINDS.get(type(value), 0)
    if t == I1:
        if kind != SCALAR_BOOL:
            raise InputError(f"{where}: expected a bool for scalar i1, got {got}")
        return
    dtype = numpy_dtype(element_type(t))
    if dtype.kind == "i":
        if kind != SCALAR_INT:
            raise InputError(f"{where}: expected an integer for scalar {t}, got {got}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:  # type: ignore[call-overload]
            raise InputError(f"{where}: {int(value)} is out of range for scalar {t}")  # type: ignore[call-overload]
        return
    if kind not in (SCALAR_INT, SCALAR_FLOAT):
        raise InputError(f"{where}: expected a number for scalar {t}, got {got}")


# --------------------------------------------------------------------------------------------
# Per-fusion compilers for callers that hold only the op

_compilers: weakref.WeakKeyDictionary[FusionOp, FusionCompiler] = weakref.WeakKeyDictionary()
_compilers_lock = threading.Lock()


def compiler_for(fusion: FusionOp) -> FusionCompiler:
    """The FusionCompiler of a fusion op (one per op, kept while the op lives)."""
    compiler = _compilers.get(fusion)
    if compiler is None:
        with _compilers_lock:  # one per op, also when two threads' first calls meet
            compiler = _compilers.get(fusion)
            if compiler is None:
                compiler = _compilers[fusion] = FusionCompiler(fusion)
    return compiler


def compile_fusion(
    fusion: FusionOp, inputs: Sequence[Any], arch: str | int | None = None
) -> CompiledFusion:
    """`FusionCompiler.compile` on the fusion's shared compiler."""
    return compiler_for(fusion).compile(inputs, arch)


def execute_fusion(fusion: FusionOp, inputs: Sequence[Any]) -> list[Any]:
    """`FusionCompiler.execute` on the fusion's shared compiler."""
    return compiler_for(fusion).execute(inputs)
