"""From a fusion and its inputs to kernels that run: scheduling, CUDA emission, NVRTC, caching.

`FusionCompiler` serves one `fusion.fusion` op. `execute(inputs)` reads the inputs into a
signature (`fuser.runtime.executor`), looks the signature up and, on a hit, only launches. On a
miss it validates the inputs against the fusion's signature (count, dtype, rank, static extents,
scalar kinds; device placement is checked while reading), builds a `FusionInfo`, lets the
scheduler registry pick a scheduler and its heuristics, and reuses the kernel already compiled for
the same (arch, scheduler, heuristics), as nvFuser does, or emits CUDA and compiles a new one. The
`KernelExecutor` of that kernel then caches the launch of the new signature.

`compile(inputs, arch=...)` runs the same pipeline without a GPU (NVRTC only), for an explicit
`sm_XY` target with an H100's limits, and returns a `CompiledFusion` describing each kernel.

This is the one module that ties `transforms/` (schedulers), `codegen/` (CUDA) and `runtime/`
(NVRTC, driver, executor) together; they never import each other.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType

from fuser.codegen.cuda import emit_cuda
from fuser.dialects import kernel
from fuser.dialects.fusion import I1, FusionOp, element_type, format_shape
from fuser.errors import CompilationError, CudaError, DefinitionError, InputError
from fuser.runtime import driver
from fuser.runtime.compiled_kernel import CompiledKernel
from fuser.runtime.dtypes import numpy_dtype
from fuser.runtime.executor import (
    SCALAR_BOOL,
    SCALAR_FLOAT,
    SCALAR_INT,
    SCALAR_KINDS,
    Call,
    ExecutorCache,
    InputLayout,
    InputMeta,
    KernelExecutor,
    KernelParams,
    LaunchPlan,
    Planner,
    PreparedLaunch,
    ScalarParam,
    TensorParam,
    decode_signature,
    read_inputs,
)
from fuser.transforms.schedulers import propose
from fuser.transforms.schedulers.base import LaunchConfig, Params, Scheduler
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.shapes import ShapeMismatch, value_shapes

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

    def summary(self) -> str:
        """A readable listing: one block per kernel with its heuristics."""
        n = len(self.kernels)
        lines = [f"@{self.fusion_name} for {self.arch}: {n} kernel{'' if n == 1 else 's'}"]
        for i, k in enumerate(self.kernels):
            lines.append(f"  #{i} {k.describe()}")
            lines.append(f"     heuristics: {k.heuristics}")
        return "\n".join(lines)

    def cuda_code(self) -> str:
        """The CUDA source of every kernel."""
        return "\n".join(k.source for k in self.kernels)

    def __repr__(self) -> str:
        kernels = "; ".join(k.describe() for k in self.kernels)
        return f"CompiledFusion(@{self.fusion_name}, {self.arch}, [{kernels}])"


# --------------------------------------------------------------------------------------------
# Devices

_device_infos: dict[int, DeviceInfo] = {}


def device_info(ordinal: int | None = None) -> DeviceInfo:
    """The DeviceInfo of a GPU (default: the current one); needs a GPU."""
    dev = driver.current_device() if ordinal is None else driver.get_device(ordinal)
    info = _device_infos.get(dev.ordinal)
    if info is None:
        info = _device_infos[dev.ordinal] = DeviceInfo(
            arch=dev.arch,
            sm_count=dev.sm_count,
            max_threads_per_block=dev.max_threads_per_block,
            max_shared_memory_per_block=dev.max_shared_memory_per_block_optin,
            registers_per_sm=dev.registers_per_sm,
            l2_bytes=dev.l2_bytes,
        )
    return info


def _no_gpu_error() -> CudaError:
    return CudaError(
        "no CUDA device is available to run the fusion on (libcuda missing or no GPU found); "
        "compile(inputs, arch='sm_90') compiles without one"
    )


# --------------------------------------------------------------------------------------------
# The compiler of one fusion


def _describe_input(index: int, hint: str | None) -> str:
    return f"input #{index}" + (f" (%{hint})" if hint else "")


def _shape_str(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def kernel_params(func: kernel.FuncOp, fusion: FusionOp) -> KernelParams:
    """The runtime description of a kernel's parameters, which must be the fusion's inputs
    (same kinds and ranks) followed by its outputs."""
    params: list[TensorParam | ScalarParam] = []
    for t in func.function_type.inputs.data:
        if isinstance(t, kernel.TensorParamType):
            params.append(TensorParam(t.rank.data, numpy_dtype(t.element_type)))
        else:
            params.append(ScalarParam(numpy_dtype(t)))
    expected = [*(a.type for a in fusion.inputs), *(v.type for v in fusion.output_op.values)]
    if len(params) != len(expected) or any(
        isinstance(p, TensorParam) != isinstance(t, TensorType)
        or (isinstance(p, TensorParam) and p.rank != t.get_num_dims())
        for p, t in zip(params, expected, strict=False)
    ):
        raise CompilationError(
            f"kernel @{func.sym_name.data} has parameters ({func.function_type.inputs}) that "
            f"are not the inputs then outputs of fusion @{fusion.sym_name.data}"
        )
    n = len(fusion.inputs)
    return KernelParams(tuple(params[:n]), tuple(params[n:]))  # type: ignore[arg-type]


@dataclass
class _Variant:
    """A compiled kernel for one (arch, scheduler, heuristics), and its executor."""

    executor: KernelExecutor
    scheduler: Scheduler
    params: Params
    device: DeviceInfo


class FusionCompiler:
    """Compiles and runs one fusion for whatever inputs it is given (see the module docstring).

    `hits` / `misses` count signature-cache lookups of `execute`; `kernels_compiled` counts NVRTC
    compilations.
    """

    def __init__(self, fusion: FusionOp) -> None:
        self.fusion = fusion
        args = fusion.body.block.args
        self.input_types = tuple(a.type for a in args)
        self.n_outputs = len(fusion.output_op.values)
        hints = tuple(a.name_hint for a in args)
        self.layout = InputLayout(
            fusion_name=fusion.sym_name.data,
            names=tuple(_describe_input(i, h) for i, h in enumerate(hints)),
            is_tensor=tuple(isinstance(t, TensorType) for t in self.input_types),
            short_names=tuple(f"%{h}" if h else "_" for h in hints),
        )
        self._is_tensor = self.layout.is_tensor
        self._variants: dict[tuple[str, str, Params], _Variant] = {}
        self._cache = ExecutorCache(self.layout, self._on_miss)
        # `execute` is the cache's (generated) fast path itself: no call layer in between
        self.execute = self._cache.execute  # type: ignore[method-assign]
        self._compiled_last: KernelExecutor | None = None
        self.kernels_compiled = 0
        self._base_name = "fuser_" + (re.sub(r"[^A-Za-z0-9_]", "_", fusion.sym_name.data) or "f")

    # ---- reading and checking inputs ---------------------------------------------------------

    def signature_of(self, inputs: Sequence[Any]) -> tuple[int, ...]:
        """The signature of a call (see `fuser.runtime.executor`); inputs are not validated
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

    def _infos(self, call: Call, dev: DeviceInfo) -> FusionInfo:
        metas, _, _ = decode_signature(call.key, self._is_tensor)
        return self._info_of(metas, dev)

    def _info_of(self, metas: Sequence[InputMeta | None], dev: DeviceInfo) -> FusionInfo:
        return FusionInfo(
            tuple(
                None if m is None else TensorMeta(m.shape, m.strides, m.alignment) for m in metas
            ),
            dev,
        )

    def output_shapes(self, info: FusionInfo) -> tuple[tuple[int, ...], ...]:
        """The outputs' shapes for the input shapes of `info` (InputError if they clash)."""
        try:
            env = value_shapes(self.fusion, info.input_shapes)
        except ShapeMismatch as e:
            raise InputError(f"@{self.layout.fusion_name}: input shapes do not fit: {e}") from None
        shapes = []
        for v in self.fusion.output_op.values:
            shape = env[v]
            assert isinstance(shape, tuple)
            shapes.append(shape)
        return tuple(shapes)

    def info_for(self, inputs: Sequence[Any], arch: str | None = None) -> FusionInfo:
        """The FusionInfo of a call: tensor metadata of the inputs (numpy arrays as the
        contiguous, aligned device copies they would become) and the current device's limits,
        or an H100's with `arch` as target when `arch` is given."""
        call = read_inputs(inputs, self.layout, with_stream=False)
        self.validate(call)
        return self._infos(call, DeviceInfo(arch=arch) if arch is not None else device_info())

    # ---- compiling ---------------------------------------------------------------------------

    def _variant_for(self, info: FusionInfo) -> _Variant:
        """The compiled kernel for `info`: the scheduler registry picks a scheduler and its
        heuristics; a kernel is emitted and compiled only for heuristics not seen before."""
        self.output_shapes(info)  # reports clashing shapes as an InputError before scheduling
        scheduler, params = propose(self.fusion, info)
        key = (info.device.arch, scheduler.name, params)
        variant = self._variants.get(key)
        if variant is None:
            name = f"{self._base_name}_{scheduler.name}_{len(self._variants)}"
            func = scheduler.emit(self.fusion, params, name)
            launch = scheduler.launch_config(self.fusion, params, info)
            compiled = CompiledKernel(
                emit_cuda(func), name, arch=info.device.arch, block_size=launch.threads_per_block
            )
            compiled.compile()
            self.kernels_compiled += 1
            variant = _Variant(
                KernelExecutor(
                    compiled,
                    kernel_params(func, self.fusion),
                    self._planner(scheduler, params, info.device),
                ),
                scheduler,
                params,
                info.device,
            )
            self._variants[key] = variant
        return variant

    def _planner(self, scheduler: Scheduler, params: Params, dev: DeviceInfo) -> Planner:
        """The launch of a new signature for a compiled kernel (its heuristics are fixed)."""

        def plan(metas: tuple[InputMeta | None, ...], device: int) -> LaunchPlan:
            # the launch is for the device the signature names (the heuristics stay those
            # the kernel was compiled with)
            info = self._info_of(metas, device_info(device) if driver.gpu_available() else dev)
            launch = scheduler.launch_config(self.fusion, params, info)
            return LaunchPlan(
                launch.grid, launch.block, launch.shared_bytes, self.output_shapes(info)
            )

        return plan

    def compile(self, inputs: Sequence[Any], arch: str | None = None) -> CompiledFusion:
        """Compile the fusion for these inputs: for the current GPU, or without one for `arch`
        (e.g. "sm_90", with an H100's limits). Numpy arrays, device tensors and Python numbers
        are accepted as inputs; only their metadata is used."""
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
        info = self._infos(call, dev)
        variant = self._variant_for(info)
        if arch is None and call.key not in self._cache.entries:  # execute will hit
            self._cache.entries[call.key] = variant.executor.entry(call.key)
        self._compiled_last = variant.executor
        self._cache.last = None
        compiled = variant.executor.kernel
        summary = KernelSummary(
            name=compiled.kernel_name,
            scheduler=variant.scheduler.name,
            heuristics=variant.params,
            source=compiled.source,
            cubin_size=compiled.cubin_size,
            launch=variant.scheduler.launch_config(self.fusion, variant.params, info),
            arch=compiled.arch,
        )
        return CompiledFusion(self.layout.fusion_name, dev.arch, (summary,))

    # ---- running -----------------------------------------------------------------------------

    def execute(self, inputs: Sequence[Any]) -> list[Any]:
        """Run the fusion; outputs come back as the inputs' kind (torch, cupy, DeviceArray or
        numpy). Compiles on the first call for each new signature."""
        return self._cache.execute(inputs)

    def _on_miss(self, call: Call) -> KernelExecutor:
        """A new signature: validate it, then find or compile its kernel."""
        self.validate(call)
        if not driver.gpu_available():
            raise _no_gpu_error()
        return self._variant_for(self._infos(call, device_info(call.device))).executor

    def prepare(self, inputs: Sequence[Any]) -> list[PreparedLaunch]:
        """Each kernel's launch for these inputs with its outputs allocated once, for timing
        (compiles on a new signature, like `execute`)."""
        call = read_inputs(inputs, self.layout)
        entry = self._cache.lookup(call)
        self._cache.last = entry
        return [entry.executor.prepare(call)]

    def last_cuda_code(self) -> str:
        """The CUDA source of the kernel the last `execute` or `compile` used."""
        last = self._cache.last
        executor = last.executor if last is not None else self._compiled_last
        if executor is None:
            raise DefinitionError(
                f"fusion '@{self.layout.fusion_name}' has not been compiled yet: call "
                "execute(inputs) or compile(inputs) first"
            )
        return executor.kernel.source

    @property
    def hits(self) -> int:
        """Signature-cache hits of `execute`."""
        return self._cache.hits

    @property
    def misses(self) -> int:
        """Signature-cache misses of `execute` (each validated the inputs)."""
        return self._cache.misses

    def cache_info(self) -> dict[str, int]:
        """Signature-cache hits and misses, signatures seen and kernels compiled."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "signatures": len(self._cache.entries),
            "kernels": self.kernels_compiled,
        }

    def __repr__(self) -> str:
        return (
            f"FusionCompiler(@{self.layout.fusion_name}, {len(self._cache.entries)} signature(s), "
            f"{self.kernels_compiled} kernel(s), hits={self.hits}, misses={self.misses})"
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


def compiler_for(fusion: FusionOp) -> FusionCompiler:
    """The FusionCompiler of a fusion op (one per op, kept while the op lives)."""
    compiler = _compilers.get(fusion)
    if compiler is None:
        compiler = _compilers[fusion] = FusionCompiler(fusion)
    return compiler


def compile_fusion(
    fusion: FusionOp, inputs: Sequence[Any], arch: str | None = None
) -> CompiledFusion:
    """`FusionCompiler.compile` on the fusion's shared compiler."""
    return compiler_for(fusion).compile(inputs, arch)


def execute_fusion(fusion: FusionOp, inputs: Sequence[Any]) -> list[Any]:
    """`FusionCompiler.execute` on the fusion's shared compiler."""
    return compiler_for(fusion).execute(inputs)
