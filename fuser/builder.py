"""What compiles a fusion for a signature: scheduling, segmentation, CUDA and NVRTC.

`FusionBuilder` is the compile side of one `FusionCompiler` (`fuser.compiler`), made on the
compiler's first signature that the runnable store (`fuser.runtime.runnable_store`) does not
hold, so that a process whose signatures are all stored never imports the passes, the schedulers
or the emitter. For a new signature it finds what runs it:

0. **Split-K.** `transforms.split_k.plan_split_k` picks a split factor for each matmul from the
   concrete shapes and the device's SM count (or the compiler's `split_k` forces one); a matmul
   split in two kernels makes the signature a program's (steps 2 and 3 on the fusion rewritten
   by `apply_split_k`), and a program is reused only for signatures with the same factors.
   Column sums beside row sums of the same 2-D tensor (norm backwards) are split likewise by
   `transforms.split_reductions`, into partial sums for the `inner_outer` scheduler.
1. **One kernel.** If the fusion holds no `segment_set`, no matmul is split, the compiler has
   no merge predicate (`should_merge`, which replaces the schedulers in the segmenter) and a
   scheduler accepts the whole fusion, the kernel already compiled for the same (arch,
   scheduler, heuristics) is reused, as nvFuser does, or a new one is emitted and compiled.
   Its `KernelExecutor` plans the launch of the new signature (an `Entry`, the signature's
   runnable: a program of one launch). The fusion asked about has its Welford ops as two passes
   where `transforms.translate_welford.decide` says so for the signature (`welford`, default
   `auto`; the decision is logged as `segmenter_log`); step 3 decides per segment. The
   schedulers' analyses of the fusion and its two-pass copy (never rewritten) are kept in the
   builder's `AnalysisCache` (`transforms.schedulers.analyses`): a new shape builds no
   `Structure`, takes the layout of an earlier shape of its class, and its heuristics and
   Welford decision once per heuristics key (`Scheduler.heuristics_key`, `decision_key`).
2. **A compiled program whose heuristics still hold.** Otherwise each program compiled before is
   asked whether it fits the new signature: every segment's scheduler must still accept the
   segment, with heuristics equal to those it was compiled with (nvFuser's
   `getMaybeHeuristicsFor`). The first that fits is reused: only its launch configurations are
   recomputed, by the segments' executors. Each program keeps the analyses of its segments
   (cloned and verified once) for the new shapes it is asked about.
3. **A new program.** Else the pipeline of `fuser-compile` (`transforms.pipeline`) segments the
   fusion, lowers it to a `host.program` and one `kernel.func` per segment, spreads its
   stream-parallel loops over `streams` CUDA streams and plans its workspace; the kernels are
   compiled together (NVRTC), and a `HostEvaluator` with a pool of `streams` streams runs the
   program. A fusion with a stream-parallel op (`fusion.stream_axis`) always runs as a program.

A signature a program serves runs the evaluator's `Specialization` for it. `compile(call,
arch)` runs the same steps without a GPU (NVRTC only), for an explicit `sm_XY` target with an
H100's limits.

This is the one module that ties `transforms/` (segmenter, schedulers, host lowering),
`codegen/` (CUDA) and `runtime/` (NVRTC, driver, executor, host evaluator) together; they never
import each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute

from fuser import dump, multi_kernel
from fuser.codegen.cuda import emit_cuda
from fuser.compiler import CompiledFusion, KernelSummary, SegmentSummary
from fuser.dialects import host, kernel
from fuser.dialects.common import op_text
from fuser.dialects.fusion import (
    VIEW_OPS,
    FusionOp,
    IotaOp,
    ScatterOp,
    SegmentSetOp,
)
from fuser.errors import CompilationError, InputError
from fuser.options import DEFAULT_STREAMS
from fuser.runtime import driver, kernel_cache
from fuser.runtime.calls import Call, InputLayout
from fuser.runtime.compiled_kernel import (
    CompiledKernel,
    check_arch,
    compile_together,
    preload_nvrtc,
)
from fuser.runtime.dispatch import Runnable
from fuser.runtime.dtypes import numpy_dtype
from fuser.runtime.executor import (
    Entry,
    KernelExecutor,
    KernelParams,
    LaunchPlan,
    Planner,
    ScalarParam,
    TensorParam,
)
from fuser.runtime.host_evaluator import HostEvaluator, Specialization
from fuser.runtime.kernel_binding import ExecutorKernel
from fuser.runtime.signature import InputMeta, decode_signature
from fuser.transforms.lower_to_host import HostLowering, LoweredSegment, lower_fusion
from fuser.transforms.pipeline import Compilation, run_pipeline
from fuser.transforms.schedulers import contenders, propose
from fuser.transforms.schedulers.analyses import AnalysisCache, cached_analyses
from fuser.transforms.schedulers.base import (
    LaunchConfig,
    Params,
    Scheduler,
    SchedulingError,
    cached_heuristics,
)
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta, arch_problem
from fuser.transforms.schedulers.kernel_builder import kernel_comments
from fuser.transforms.schedulers.shapes import ShapeMismatch, value_shapes
from fuser.transforms.segment import (
    NotAViewError,
    returned_view_chains,
    returned_view_outputs,
    segment_calls,
)
from fuser.transforms.segment_rules import MergePredicate
from fuser.transforms.split_k import plan_split_k
from fuser.transforms.split_reductions import plan_split_reductions, split_candidates
from fuser.transforms.stream_slicing import has_stream_parallel_ops
from fuser.transforms.translate_welford import (
    Decision,
    decide,
    decision_key,
    translated,
    welford_ops,
)

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
    if len(params) != len(expected) or not all(
        _param_fits(p, t) for p, t in zip(params, expected, strict=False)
    ):
        raise CompilationError(
            f"kernel @{func.sym_name.data} has parameters ({func.function_type.inputs}) that "
            f"are not the inputs then outputs of fusion @{fusion.sym_name.data}"
        )
    n = len(fusion.inputs)
    return KernelParams(tuple(params[:n]), tuple(params[n:]))  # type: ignore[arg-type]


def _param_fits(param: TensorParam | ScalarParam, t: Attribute) -> bool:
    """Whether a kernel parameter takes a fusion value of type `t`: a tensor of its rank, or a
    scalar."""
    if isinstance(t, TensorType):
        return isinstance(param, TensorParam) and param.rank == t.get_num_dims()
    return not isinstance(param, TensorParam)


def kernel_stem(name: str) -> str:
    """The part of a kernel's name a fusion's name gives: letters, digits and single
    underscores, none at either end (C++ reserves names with `__`), e.g. "sum_1" for
    "sum(-1)"; "f" for a name with none of them."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", name)).strip("_") or "f"


_SEGMENTED_OPS = (SegmentSetOp, IotaOp, ScatterOp, *VIEW_OPS)
"""Ops a fusion is always segmented for (see `FusionCompiler` below)."""


@dataclass
class _Variant:
    """A compiled kernel for one (arch, scheduler, heuristics), and its executor; described,
    as a `_Program` is, by its segments, sources and host program."""

    executor: KernelExecutor
    scheduler: Scheduler
    params: Params
    device: DeviceInfo
    info: FusionInfo
    """The metadata it was first compiled for."""
    fusion: FusionOp
    """The fusion it runs: the compiler's, or its Welford ops as two passes."""

    def segments(self) -> list[SegmentSummary]:
        return [SegmentSummary(self.scheduler.name, self.executor.kernel.kernel_name)]

    def sources(self) -> list[str]:
        return [self.executor.kernel.source]

    variants: str = ""
    """The multi-kernel variants it was chosen among, and how (empty: none)."""

    def host_ir(self) -> str:
        """The program that launches this kernel (lowered on demand), with the multi-kernel
        variants it was chosen among as the program's `fuser.multi_kernel` attribute."""
        program = lower_fusion(self.fusion, self.info, scheduler=self.scheduler.name).program
        symbol = SymbolRefAttr(self.executor.kernel.kernel_name)
        for op in program.walk():
            if isinstance(op, host.LaunchOp | host.GridOp):
                op.kernel = symbol
        if self.variants:
            program.attributes["fuser.multi_kernel"] = StringAttr(self.variants)
        return op_text(program)


Splits = tuple[tuple[int, ...], tuple[int, ...]]
"""The split factors of a signature: of each matmul (split-K), of each sum `split-reductions`
may split (its `split_candidates`: column sums, or the sums of a few long rows)."""


class _Program:
    """A segmented fusion compiled for one set of heuristics: the segmented fusion, its host
    program and kernels (one module), an executor per segment, and the evaluator.
    `split_factors` are the split factors of the fusion's matmuls and sums it was
    rewritten with (`FusionBuilder._split_factors`); `view_outputs` the outputs it returns as
    views of inputs (`returned_view_outputs`)."""

    def __init__(
        self,
        segmented: FusionOp,
        lowering: HostLowering,
        executors: Sequence[KernelExecutor],
        device: DeviceInfo,
        split_factors: Splits = ((), ()),
        streams: int = DEFAULT_STREAMS,
        analyses: AnalysisCache | None = None,
        view_outputs: frozenset[int] = frozenset(),
    ) -> None:
        self.segmented = segmented
        self.view_outputs = view_outputs
        # the analyses of its segments (standalone fusions, never rewritten) for new shapes
        self.analyses = AnalysisCache() if analyses is None else analyses
        self.split_factors = split_factors
        self.lowering = lowering
        self.executors = tuple(executors)
        self.device = device
        self.module = ModuleOp([lowering.program, *lowering.kernels])
        self.evaluator = HostEvaluator(
            lowering.program,
            {
                s.kernel_name: ExecutorKernel(e)
                for s, e in zip(lowering.segments, executors, strict=True)
            },
            num_streams=streams,
        )

    @property
    def arch(self) -> str:
        return self.device.arch

    def segment_infos(self, info: FusionInfo) -> list[FusionInfo]:
        """Each segment's FusionInfo for the fusion's input metadata `info` (once per `info`:
        the segments are cloned and verified once per program, see `segment_calls`)."""
        with cached_analyses(self.analyses):
            return [c.info for c in segment_calls(self.segmented, info)]

    def heuristics_hold(self, info: FusionInfo) -> bool:
        """Whether each segment's scheduler accepts it for `info` with unchanged heuristics
        (computed once per heuristics key, on the segments the kernels were emitted from)."""
        if info.device.arch != self.arch:
            return False
        try:
            seg_infos = self.segment_infos(info)
        except NotAViewError:  # a reshape this program views needs a copy for these strides
            return False
        with cached_analyses(self.analyses):
            for seg, seg_info in zip(self.lowering.segments, seg_infos, strict=True):
                if not seg.scheduler.accepts(seg.fusion, seg_info):
                    return False
                if cached_heuristics(seg.scheduler, seg.fusion, seg_info) != seg.params:
                    return False
        return True

    def segments(self) -> list[SegmentSummary]:
        return [SegmentSummary(s.scheduler.name, s.kernel_name) for s in self.lowering.segments]

    def sources(self) -> list[str]:
        return [e.kernel.source for e in self.executors]

    def host_ir(self) -> str:
        return op_text(self.lowering.program)


def target_arch(arch: object) -> str:
    """The `arch` argument of `compile`: "sm_90", or the int 90 for it. A CompilationError names
    the argument when it is neither, or when fuser or this NVRTC does not compile for it."""
    if isinstance(arch, int) and not isinstance(arch, bool):
        arch = f"sm_{arch}"
    if not isinstance(arch, str):
        raise CompilationError(
            f"compile: argument 'arch' must be a GPU architecture like 'sm_90' (or the int 90), "
            f"got {arch!r}"
        )
    problem = arch_problem(arch)
    if problem is not None:
        raise CompilationError(f"compile: argument 'arch': {problem}")
    try:
        return check_arch(arch)
    except CompilationError as e:
        raise CompilationError(f"compile: argument 'arch': {e}") from None


class FusionBuilder:
    """The compile side of one `FusionCompiler` (see the module docstring): the kernels and
    programs compiled for its fusion, and the analyses and decisions they were made from.
    `kernels_compiled` counts the kernels compiled (with NVRTC, or taken from the kernel cache
    on disk); `heuristic_reuses` counts new signatures served by a kernel or program compiled
    for another one."""

    def __init__(
        self,
        fusion: FusionOp,
        layout: InputLayout,
        *,
        should_merge: MergePredicate | None,
        split_k: int | None,
        streams: int,
        welford: str,
    ) -> None:
        self.fusion = fusion
        self.layout = layout
        self.should_merge = should_merge
        self.split_k = split_k
        self.streams = streams
        self.welford = welford
        self._is_tensor = layout.is_tensor
        self._two_pass: FusionOp | None = None
        self._welford_decisions: dict[Hashable, Decision] = {}  # by `decision_key`
        self._has_welford = bool(welford_ops(fusion.body))
        self._has_split_candidates = bool(split_candidates(fusion))
        # the schedulers' analyses of `fusion` and its two-pass copy, which are never rewritten:
        # a new shape analyses each once (the segmenter's copies are rewritten: not kept)
        self._analyses = AnalysisCache()
        self._variants: dict[tuple[str, str, Params, bool], _Variant] = {}
        self._multi_decisions: dict[str, multi_kernel.Decision] = {}
        self._multi_keys: dict[tuple[int, ...], str] = {}
        self._variant_of: dict[KernelExecutor, _Variant] = {}
        self._programs: list[_Program] = []
        self._program_of: dict[HostEvaluator, _Program] = {}
        self._always_segment = (
            should_merge is not None
            # a view is taken between kernels, an iota is the host's constant (a scatter is
            # decomposed into one), an output that views an input is returned as a view: never
            # one kernel
            or any(isinstance(op, _SEGMENTED_OPS) for op in fusion.body.walk())
            or bool(returned_view_chains(fusion))
            or has_stream_parallel_ops(fusion)
        )
        self._compiled_signatures: set[tuple[str, tuple[int, ...]]] = set()
        self.kernels_compiled = 0
        self.heuristic_reuses = 0
        self._base_name = "fuser_" + kernel_stem(fusion.sym_name.data)

    @property
    def programs(self) -> int:
        """How many host programs were built."""
        return len(self._programs)

    def runnable(self, call: Call) -> Runnable:
        """What runs a validated call's signature on its device: found or compiled (see the
        module docstring). Call with the compiler's lock held."""
        choice, reused, rest = self._plan(self._infos(call, device_info(call.device)))
        self.heuristic_reuses += reused
        if isinstance(choice, _Variant) and rest:
            choice = self._multi_choice((choice, *rest), call)
        return self._runnable(choice, call)

    def choice_of(self, runnable: Runnable) -> _Variant | _Program | None:
        """The kernel or program behind a runnable this builder made (None: not one of its)."""
        if isinstance(runnable, Specialization):
            return self._program_of.get(runnable.evaluator)
        if isinstance(runnable, Entry):
            return self._variant_of.get(runnable.executor)
        return None

    def choice_for(self, key: tuple[int, ...]) -> _Variant | _Program:
        """The kernel or program that runs a signature (found or compiled; for the
        description of a signature the runnable store served)."""
        metas, _, device = decode_signature(key, self._is_tensor)
        return self._settled(*self._plan(self._info_of(metas, device_info(device))))

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
        return _output_shapes(self.fusion, info, self.layout.fusion_name)

    def info(self, call: Call, arch: str | None = None) -> FusionInfo:
        """The FusionInfo of a read call: its tensors' metadata and the limits of the device it
        names, or an H100's with `arch` as target when `arch` is given."""
        return self._infos(call, DeviceInfo(arch=arch) if arch is not None else device_info())

    # ---- compiling ---------------------------------------------------------------------------

    def _plan(self, info: FusionInfo) -> tuple[_Variant | _Program, bool, tuple[_Variant, ...]]:
        """What runs a new signature, whether it was compiled for another one (see the module
        docstring), and the kernels to time against it (multi-kernel). Call with the lock
        held."""
        preload_nvrtc()  # NVRTC loads on a thread while the fusion is scheduled
        with cached_analyses(self._analyses):
            self.output_shapes(info)  # reports clashing shapes as an InputError first
            factors = self._split_factors(info)
            if not self._always_segment and not _splits_any(factors):
                fusion = self._single_kernel_fusion(info)
                try:
                    proposal = propose(fusion, info)
                except SchedulingError:
                    proposal = None
                if proposal is not None:
                    return self._variants_for(info, *proposal, fusion)
        views = returned_view_outputs(self.fusion, info)
        for program in self._programs:
            # a program's kernels are those of its split factors, its outputs views or copies
            # of inputs as its signature's strides allowed: reused only for the same
            if (
                program.split_factors == factors
                and program.view_outputs == views
                and program.heuristics_hold(info)
            ):
                return program, True, ()
        return self._new_program(info, factors, views), False, ()

    def _variants_for(
        self, info: FusionInfo, scheduler: Scheduler, params: Params, fusion: FusionOp
    ) -> tuple[_Variant, bool, tuple[_Variant, ...]]:
        """The kernel of the heuristics' choice and of the contenders it names (unless
        FUSER_MULTI_KERNEL=0), compiled together (in parallel where their options differ)."""
        others = (
            []
            if multi_kernel.forced_variant() == 0
            else contenders(fusion, info, scheduler, params, multi_kernel.MAX_VARIANTS - 1)
        )
        first, reused = self._variant_for(info, scheduler, params, fusion)
        rest = tuple(self._variant_for(info, s, p, fusion)[0] for s, p in others)
        compile_together([v.executor.kernel for v in (first, *rest)])
        return first, reused, rest

    def _multi_key(self, variants: Sequence[_Variant]) -> str:
        """The choice key of `variants`, once per set (it hashes their CUDA sources: a new
        shape of a known size class must not pay for it)."""
        ids = tuple(id(v) for v in variants)  # (variants live as long as the builder)
        key = self._multi_keys.get(ids)
        if key is None:
            key = multi_kernel.choice_key(
                [v.executor.kernel.source for v in variants], [repr(v.params) for v in variants]
            )
            self._multi_keys[ids] = key
        return key

    def _known_decision(self, variants: Sequence[_Variant]) -> multi_kernel.Decision | None:
        """The choice among `variants` made earlier (this process or one before), if any."""
        key = self._multi_key(variants)
        if key not in self._multi_decisions:
            self._multi_decisions.update(multi_kernel.ChoiceStore(kernel_cache.base_dir()).load())
        return self._multi_decisions.get(key)

    def _settled(
        self, choice: _Variant | _Program, _: bool, rest: tuple[_Variant, ...]
    ) -> _Variant | _Program:
        """The variant a plan runs without timing: the forced or known choice among the
        contenders, else the heuristics' first."""
        if not isinstance(choice, _Variant) or not rest:
            return choice
        variants = (choice, *rest)
        forced = multi_kernel.forced_variant()
        decision = self._known_decision(variants) if forced is None else None
        if forced is not None:
            chosen = variants[forced if forced < len(variants) else 0]
            how = f"{chosen.scheduler.name} (forced)"
        elif decision is not None:
            chosen, how = variants[decision.index], decision.describe()
        else:
            chosen, how = choice, "the first execute times them"
        chosen.variants = self._multi_summary_of(variants, how)
        return chosen

    @staticmethod
    def _multi_summary_of(variants: Sequence[_Variant], how: str) -> str:
        listed = ", ".join(f"{v.scheduler.name} {v.executor.kernel.kernel_name}" for v in variants)
        return f"variants {listed}; {how}"

    def _multi_choice(self, variants: Sequence[_Variant], call: Call) -> _Variant:
        """The variant that runs the call's size class: forced, known, or timed now on the
        call's inputs (see `fuser.multi_kernel`)."""
        names = tuple(v.scheduler.name for v in variants)
        store = multi_kernel.ChoiceStore(kernel_cache.base_dir())

        def timer() -> tuple[float, ...]:
            runnables = [self._runnable(v, call) for v in variants]
            return multi_kernel.time_variants(
                [lambda r=r: r.run(call) for r in runnables],
                lambda run, n: _elapsed_ms(run, n, call.stream),
            )

        key = self._multi_key(variants)
        decision, stored = multi_kernel.decide(key, names, self._multi_decisions, store, timer)
        dump.dump(
            "multi_kernel",
            f"@{self.layout.fusion_name}",
            lambda: (
                "variants "
                + ", ".join(f"{v.scheduler.name} {v.executor.kernel.kernel_name}" for v in variants)
                + f": {decision.describe()}"
                + (f"; stored in {store.path}" if stored else "")
            ),
        )
        chosen = variants[decision.index]
        chosen.variants = self._multi_summary_of(variants, decision.describe())
        return chosen

    def _split_factors(self, info: FusionInfo, log: list[str] | None = None) -> Splits:
        """The split-K factor of each matmul of the fusion for `info` (`plan_split_k`), and
        the factor of each column sum and of each sum of a few long rows
        (`plan_split_reductions`)."""
        matmuls = plan_split_k(
            self.fusion,
            info.input_shapes,
            info.device.sm_count,
            splits=self.split_k,
            log=log,
            arch=info.device.arch,
        )
        if not self._has_split_candidates:
            return matmuls, ()
        return matmuls, plan_split_reductions(self.fusion, info, log=log)

    def _single_kernel_fusion(self, info: FusionInfo) -> FusionOp:
        """The fusion that one kernel would run for `info`: the fusion, or a copy with its
        Welford ops as two passes where `translate_welford.decide` says so (the segmenter's
        decision on the whole fusion as its one segment; logged as `segmenter_log`)."""
        if self.welford == "never" or self.should_merge is not None:
            return self.fusion
        if not self._has_welford:
            return self.fusion
        if self._two_pass is None:
            self._two_pass = translated(self.fusion)
        key = decision_key(self.fusion, info, self.welford, self._two_pass)
        decision = self._welford_decisions.get(key)
        if decision is None:
            decision = decide(self.fusion, info, self.welford, self._two_pass)
            self._welford_decisions[key] = decision
            dump.dump(
                "segmenter_log", f"@{self.layout.fusion_name}", f"whole fusion, welford: {decision}"
            )
        if decision.translate and self._two_pass is not None:
            return self._two_pass
        return self.fusion

    def _variant_for(
        self, info: FusionInfo, scheduler: Scheduler, params: Params, fusion: FusionOp
    ) -> tuple[_Variant, bool]:
        """The compiled kernel of `fusion` (the compiler's, or its two-pass copy) for the
        scheduler's choice: a kernel is emitted and compiled only for heuristics not seen
        before."""
        key = (info.device.arch, scheduler.name, params, fusion is not self.fusion)
        variant = self._variants.get(key)
        if variant is not None:
            return variant, True
        name = f"{self._base_name}_{scheduler.name}_{len(self._variants)}"
        dump.dump("fusion_ir", f"@{self.layout.fusion_name}", lambda: op_text(self.fusion))
        dump.dump(
            "segments",
            f"@{self.layout.fusion_name}",
            f"one segment: the whole fusion, scheduler {scheduler.name!r}, kernel {name}"
            + (" (Welford ops as two passes)" if fusion is not self.fusion else ""),
        )
        with kernel_comments(dump.enabled("kernel_ir") or dump.enabled("cuda")):
            func = scheduler.emit(fusion, params, name)
        launch = scheduler.launch_config(fusion, params, info)
        dump.dump("kernel_ir", name, lambda: op_text(func))
        compiled = CompiledKernel(
            emit_cuda(func), name, arch=info.device.arch, block_size=launch.threads_per_block
        )
        dump.dump("cuda", name, compiled.source)
        compiled.compile()
        self.kernels_compiled += 1
        variant = _Variant(
            KernelExecutor(
                compiled,
                kernel_params(func, fusion),
                self._planner(fusion, scheduler, params, info.device, self._analyses),
            ),
            scheduler,
            params,
            info.device,
            info,
            fusion,
        )
        self._variants[key] = variant
        self._variant_of[variant.executor] = variant
        return variant, False

    def _new_program(self, info: FusionInfo, factors: Splits, views: frozenset[int]) -> _Program:
        """Split matmuls and sums with `factors` (see `_split_factors`), segment, lower
        and compile the fusion for `info`, whose outputs at `views` are returned as views of
        inputs (`returned_view_outputs`)."""
        name = self.layout.fusion_name
        dump.dump("fusion_ir", f"@{name}", lambda: op_text(self.fusion))
        c = Compilation(
            self.fusion.clone(),
            info,
            factors[0],
            self.should_merge,
            self.welford,
            self.streams,
            kernel_prefix=f"{self._base_name}_p{len(self._programs)}",
            comments=dump.enabled("kernel_ir") or dump.enabled("cuda"),
            analyses=AnalysisCache(),  # the final segments are analysed once, then reused
        )
        c.reduction_splits = factors[1]
        if factors != ((), ()):
            self._split_factors(info, c.log)  # the reasons, for the segmenter log
        logged = False

        def dump_stage(stage: str, c: Compilation) -> None:
            nonlocal logged
            if stage == "fuser-segment":
                logged = True
                dump.dump("segmenter_log", f"@{name}", lambda: "\n".join(c.log))
                dump.dump("segments", f"@{name}", lambda: op_text(c.fusion))

        try:
            lowering = run_pipeline(c, dump_stage)  # the stages `fuser-compile` runs
        finally:
            if not logged:  # why segmentation failed
                dump.dump("segmenter_log", f"@{name}", lambda: "\n".join(c.log))
        segmented, analyses = c.fusion, c.analyses
        executors = []
        for seg in lowering.segments:
            dump.dump("kernel_ir", seg.kernel_name, lambda seg=seg: op_text(seg.func))
            compiled = CompiledKernel(
                emit_cuda(seg.func),
                seg.kernel_name,
                arch=info.device.arch,
                block_size=seg.launch.threads_per_block,
            )
            dump.dump("cuda", seg.kernel_name, compiled.source)
            executors.append(
                KernelExecutor(
                    compiled,
                    kernel_params(seg.func, seg.fusion),
                    self._planner(seg.fusion, seg.scheduler, seg.params, info.device, analyses),
                )
            )
        program = _Program(
            segmented,
            lowering,
            executors,
            info.device,
            factors,
            streams=self.streams,
            analyses=analyses,
            view_outputs=views,
        )
        dump.dump("host_ir", f"@{name}", program.host_ir)
        program.evaluator.compile_kernels()  # in parallel: NVRTC releases the GIL
        self.kernels_compiled += len(executors)
        self._programs.append(program)
        self._program_of[program.evaluator] = program
        return program

    def _planner(
        self,
        fusion: FusionOp,
        scheduler: Scheduler,
        params: Params,
        dev: DeviceInfo,
        analyses: AnalysisCache | None = None,
    ) -> Planner:
        """The launch of a new signature for a compiled kernel of `fusion` (the whole fusion or
        a segment's; its heuristics are fixed), with the scheduler's analyses kept in
        `analyses` where given."""
        name = self.layout.fusion_name

        def plan(metas: tuple[InputMeta | None, ...], device: int) -> LaunchPlan:
            # the launch is for the device the signature names (the heuristics stay those
            # the kernel was compiled with)
            info = self._info_of(metas, device_info(device) if driver.gpu_available() else dev)
            with cached_analyses(analyses) if analyses is not None else nullcontext():
                launch = scheduler.launch_config(fusion, params, info)
                shapes = _output_shapes(fusion, info, name)
            return LaunchPlan(launch.grid, launch.block, launch.shared_bytes, shapes)

        return plan

    def _runnable(self, choice: _Variant | _Program, call: Call) -> Runnable:
        """What runs a call's signature: the kernel's entry for it (planned) or the program's
        specialization."""
        if isinstance(choice, _Program):
            spec = choice.evaluator.specialize(call.key, call.scalars)
            dump.dump("launch_params", f"@{self.layout.fusion_name}", spec.describe_launches)
            return spec
        executor = choice.executor
        entry = executor.entry(call.key)
        dump.dump(
            "launch_params",
            f"@{self.layout.fusion_name}",
            lambda: (
                f"{executor.kernel.kernel_name}: grid={list(entry.grid)} "
                f"block={list(entry.block)} smem={entry.shared_bytes}"
            ),
        )
        return entry

    def compile(self, call: Call, dev: DeviceInfo, executed: bool) -> _Variant | _Program:
        """The kernel or program `FusionCompiler.compile` describes for a validated call on
        `dev`. `executed`: `execute` ran the signature already (a reuse is counted once per
        (arch, signature))."""
        choice, reused, rest = self._plan(self._infos(call, dev))
        choice = self._settled(choice, reused, rest)
        signature = (dev.arch, call.key)
        if signature not in self._compiled_signatures and not executed:
            self.heuristic_reuses += reused  # a new signature, served by code compiled for another
        self._compiled_signatures.add(signature)
        return choice

    def runnable_of(self, choice: _Variant | _Program, call: Call) -> Runnable:
        """What runs a call's signature with a kernel or program `compile` chose."""
        return self._runnable(choice, call)

    def summary(self, choice: _Variant | _Program, call: Call, dev: DeviceInfo) -> CompiledFusion:
        """What `compile` returns: each kernel of `choice` with its launch for the call."""
        info = self._infos(call, dev)
        if isinstance(choice, _Variant):
            compiled = choice.executor.kernel
            with cached_analyses(self._analyses):  # (the fusion or its two-pass copy)
                launch = choice.scheduler.launch_config(choice.fusion, choice.params, info)
            summary = KernelSummary(
                name=compiled.kernel_name,
                scheduler=choice.scheduler.name,
                heuristics=choice.params,
                source=compiled.source,
                cubin_size=compiled.cubin_size,
                launch=launch,
                arch=compiled.arch,
            )
            return CompiledFusion(self.layout.fusion_name, dev.arch, (summary,), choice.variants)
        summaries = []
        seg_infos = choice.segment_infos(info)
        for seg, executor, seg_info in zip(
            choice.lowering.segments, choice.executors, seg_infos, strict=True
        ):
            summaries.append(
                KernelSummary(
                    name=seg.kernel_name,
                    scheduler=seg.scheduler.name,
                    heuristics=seg.params,
                    source=executor.kernel.source,
                    cubin_size=executor.kernel.cubin_size,
                    launch=_launch_config(choice.analyses, seg, seg_info),
                    arch=executor.kernel.arch,
                )
            )
        return CompiledFusion(self.layout.fusion_name, dev.arch, tuple(summaries))


def _elapsed_ms(run: Callable[[], object], n: int, stream: int) -> float:
    """Milliseconds per run of `n` runs of `run`, between two events on `stream`."""
    start = driver.Event().record(stream)
    for _ in range(n):
        run()
    end = driver.Event().record(stream)
    end.synchronize()
    return start.elapsed_ms(end) / n


def _launch_config(analyses: AnalysisCache, seg: LoweredSegment, info: FusionInfo) -> LaunchConfig:
    """A program segment's launch for `info`, with the program's kept analyses."""
    with cached_analyses(analyses):
        return seg.scheduler.launch_config(seg.fusion, seg.params, info)


def _splits_any(factors: Splits) -> bool:
    """Whether a split plan splits any matmul or sum."""
    return any(f > 1 for group in factors for f in group)


def _output_shapes(fusion: FusionOp, info: FusionInfo, name: str) -> tuple[tuple[int, ...], ...]:
    try:
        env = value_shapes(fusion, info.input_shapes)
    except ShapeMismatch as e:
        raise InputError(f"@{name}: input shapes do not fit: {e}") from None
    shapes = []
    for v in fusion.output_op.values:
        shape = env[v]
        assert isinstance(shape, tuple)
        shapes.append(shape)
    return tuple(shapes)
