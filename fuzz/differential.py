"""The differential fuzzer of the whole pipeline: random programs, each checked stage by stage.

    python -m fuser.fuzz.differential --seed S --count N [--gpu] [--sizes small|large]
        [--jobs J] [--nvrtc-every K]

`--jobs` checks programs in J processes (each with its own CUDA context under `--gpu`); on a
16-core GPU node `--count 2000 --gpu --jobs 16` is the intended run.

For each program of `fuser.fuzz.programs.generate` (see `check_program`):

1. `definition`: build the FusionDefinition. A `DefinitionError` here, or an `InputError` of the
   reference in step 2, is a generator bug (the generator draws only what the frontend and the
   run accept), counted apart from fuser's failures but failing the run too.
2. `reference`: fuser's reference interpreter in float64 against the independent oracle
   (`fuser.fuzz.oracle`), with tolerances by the least precise dtype upstream of each output;
   NaN and +-inf positions exact, integers and bools exact.
3. The fusion-level passes, each evaluated by the reference and compared with the reference of
   the original fusion: `translate-welford` (when the program has welford/var_mean),
   `split-k` with a forced factor (when it has a matmul), `fuser-segment` (on the split-K form
   when there is one, with a random Welford mode), and `fuser-lower-host`: the host program run
   by the host evaluator over host memory, each kernel replaced by the reference interpreter on
   its segment's standalone fusion.
4. `nvrtc`: `fd.compile(inputs, arch="sm_90")`, every kernel through NVRTC (no GPU needed;
   skipped under `--gpu`, where `fd.execute` compiles).
5. `gpu` (with `--gpu`): `fd.execute` on torch CUDA tensors in the program's layouts (transposed,
   broadcast with stride 0, sliced, misaligned), twice (the second call hits the caches), into
   outputs allocated over NaN-poisoned memory, against the float64 reference with
   `fuser.validation.TOLERANCES` by the least precise dtype upstream of each output, the absolute
   tolerance scaled by the largest magnitude there. An element that misses the float64
   reference passes if it matches the reference computing f32 in f32 (the GPU's precision), or
   lies within `ILL_CONDITIONED` times the two references' distance of the float64 one: where an
   ill-conditioned op makes them disagree, the GPU's rounding may land anywhere near either.
   Elements the oracle marks shaky (a comparison, truncation or pole within rounding of its
   boundary, and what follows from it) are not compared.

A failing program is shrunk (`shrink`: ops dropped, dims reduced toward 1 and 0, dtypes and
layouts simplified, while the same stage still fails) and printed as a standalone Python script,
with one summary line. The run ends with `fuzz: N programs, M mismatches, E errors (seed S, T s)`
and exits 1 on any failure. CPU tolerances (`CPU_TOLERANCES`) are tight for float64 evaluations
and loosen to one unit of f16/bf16 where such a rounding lies upstream of an output.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import multiprocessing
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fuser import FusionDefinition
from fuser.dialects import fusion as fu
from fuser.errors import DefinitionError
from fuser.fuzz import oracle
from fuser.fuzz.programs import (
    AVOIDED,
    FLOATS,
    NUMPY_DTYPES,
    Input,
    Op,
    Program,
    base_shape,
    build,
    generate,
    input_buffers,
    make_inputs,
    to_script,
    view_of,
)
from fuser.transforms.schedulers.info import DEFAULT_ARCH
from fuser.validation import host_array

# --------------------------------------------------------------------------------------------
# Comparing

#: (rtol, atol) of a float64 evaluation against another, by the least precise float dtype
#: upstream of the output (a rounding to f16/bf16 may flip by one unit of that dtype).
CPU_TOLERANCES: dict[str, tuple[float, float]] = {
    "f16": (2e-3, 1e-3),
    "bf16": (1.6e-2, 1e-2),
    "f32": (1e-9, 1e-12),
    "f64": (1e-9, 1e-12),
}
#: The same for two float32 evaluations that may sum in different orders (the lowered program,
#: whose kernels store f32 intermediates, against the float32 reference).
F32_TOLERANCES: dict[str, tuple[float, float]] = CPU_TOLERANCES | {"f32": (2e-4, 1e-5)}


def gpu_tolerances() -> dict[str, tuple[float, float]]:
    """The GPU tolerances (`fuser.validation`) against the float64 reference, by dtype name."""
    from fuser.validation import TOLERANCES

    return {name: TOLERANCES[NUMPY_DTYPES[name]] for name in FLOATS}


ILL_CONDITIONED = 16.0
"""How many times the distance between the float64 and the float32 reference a GPU value may lie
from the float64 one (see `mismatch`). The float32 reference's error is one sample of what
rounding in another order gives, and may be several times smaller than the GPU's by chance: a
GPU fuzz run found 1 / sum(x) with the sum of 35 values cancelling to 1e-4 of their magnitude,
the GPU's tree 5 times farther from the float64 value than numpy's pairwise sum. The band is a
statistical one: it holds elements where the two references disagree, only those."""


def _differ(
    actual: np.ndarray,
    expected: np.ndarray,
    expect: oracle.Value,
    tolerances: dict[str, tuple[float, float]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where `actual` differs from `expected`: (every difference, NaN positions, inf
    positions) as boolean arrays (see the module docstring). The oracle's shaky elements
    (rounding upstream decides them) differ nowhere."""
    steady = np.ones(actual.shape, bool) if expect.shaky is None else ~expect.shaky
    if expect.dtype not in FLOATS:
        bad = (actual.astype(np.int64) != expected.astype(np.int64)) & steady
        return bad, np.zeros_like(bad), np.zeros_like(bad)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    rtol, atol = tolerances[expect.loosest or expect.dtype]
    scale = max(1.0, expect.scale)
    with np.errstate(all="ignore"):
        nan_bad = (np.isnan(a) != np.isnan(e)) & steady
        inf_bad = (np.isinf(a) | np.isinf(e)) & (a != e) & ~np.isnan(a) & ~np.isnan(e) & steady
        finite = np.isfinite(a) & np.isfinite(e)
        far = finite & (np.abs(a - e) > atol * scale + rtol * np.abs(e)) & steady
    return nan_bad | inf_bad | far, nan_bad, inf_bad


def mismatch(
    actual: np.ndarray,
    expected: np.ndarray,
    expect: oracle.Value,
    tolerances: dict[str, tuple[float, float]],
    alternative: np.ndarray | None = None,
) -> str | None:
    """None when `actual` matches `expected` (see the module docstring), else why not. An
    element that matches `alternative` (the reference in the GPU's own precision) instead
    passes too."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    bad, nan_bad, inf_bad = _differ(actual, expected, expect, tolerances)
    if alternative is not None and bad.any():
        bad &= _differ(actual, np.asarray(alternative), expect, tolerances)[0]
        if bad.any() and expect.dtype in FLOATS:
            # where the two references disagree the element is ill-conditioned in the GPU's
            # precision (1 + erf(x) cancelling before a reciprocal): within ILL_CONDITIONED
            # times their distance of the float64 one, the GPU's value passes
            a, e, f = (np.asarray(x, np.float64) for x in (actual, expected, alternative))
            with np.errstate(all="ignore"):
                spread = np.abs(f - e)
                spread = np.where(np.isfinite(spread), spread, 0.0)  # (an infinity: above)
                bad &= ~(np.isfinite(a) & (np.abs(a - e) <= ILL_CONDITIONED * spread))
        nan_bad &= bad
        inf_bad &= bad
    if not bad.any():
        return None
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    if expect.dtype not in FLOATS:
        return (
            f"{int(bad.sum())} of {bad.size} {expect.dtype} elements differ, "
            f"e.g. at {i}: {actual[i]!r} vs {expected[i]!r}"
        )
    rtol, atol = tolerances[expect.loosest or expect.dtype]
    kind = "NaN position" if nan_bad.any() else ("inf position" if inf_bad.any() else "value")
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return (
        f"{int(bad.sum())} of {bad.size} {expect.dtype} elements differ ({kind}), "
        f"e.g. at {i}: {a[i]!r} vs {e[i]!r} (rtol {rtol:g}, atol {atol:g} x "
        f"{max(1.0, expect.scale):.3g})"
    )


def compare_all(
    got: Sequence[Any],
    expected: Sequence[Any],
    facts: Sequence[oracle.Value],
    names: Sequence[str],
    tolerances: dict[str, tuple[float, float]],
    alternatives: Sequence[Any] | None = None,
) -> str | None:
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    others = alternatives if alternatives is not None else [None] * len(got)
    for g, e, f, n, o in zip(got, expected, facts, names, others, strict=True):
        problem = mismatch(g, e, f, tolerances, o)
        if problem is not None:
            return f"output {n}: {problem}"
    return None


# --------------------------------------------------------------------------------------------
# Running a lowered host program on the CPU


class _HostMemory:
    """A backend of host buffers (0xff-filled, poisoned when freed) for the host evaluator."""

    def __init__(self) -> None:
        self.buffers: dict[int, np.ndarray] = {}

    def alloc(self, nbytes: int, stream: int) -> int:
        buf = np.full(nbytes + 64, 0xFF, np.uint8)
        ptr = (buf.ctypes.data + 63) // 64 * 64
        self.buffers[ptr] = buf
        return ptr

    def free(self, ptr: int, stream: int) -> None:
        self.buffers.pop(ptr)[:] = 0xFF

    def stream_pool(self, device: int, count: int) -> list[int]:
        return [0x100 * (i + 1) for i in range(count)]

    def synchronize(self, stream: int, other: int) -> None:
        pass

    def upload(self, values: np.ndarray) -> tuple[int, Any]:
        owner = np.ascontiguousarray(values).copy()
        return owner.ctypes.data, owner

    def timestamp(self, stream: int) -> float:
        return time.perf_counter()

    def elapsed_ms(self, start: float, end: float) -> float:
        return (end - start) * 1e3


def _array_at(ptr: int, shape: Sequence[int], strides: Sequence[int], dtype: np.dtype) -> Any:
    if 0 in shape:
        return np.zeros(shape, dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    buffer = memoryview((ctypes.c_char * max(span * dtype.itemsize, 1)).from_address(ptr))
    return np.ndarray(
        tuple(shape), dtype, buffer=buffer, strides=tuple(s * dtype.itemsize for s in strides)
    )


class _ReferenceKernel:
    """A kernel binding that evaluates its segment's standalone fusion with the reference."""

    def __init__(self, fusion: fu.FusionOp) -> None:
        self.fusion = fusion

    def compile(self) -> None:
        pass

    def grid(self, name: str, ins: Any, device: int) -> tuple[int, int, int]:
        return (1, 1, 1)  # the reference evaluates the whole segment at once

    def bind(
        self,
        name: str,
        ins: Any,
        outs: Any,
        grid: Any,
        block: Any,
        shared_bytes: int,  # the name KernelBinding.bind gives it
        device: int,
    ) -> Any:
        params = [*ins, *outs]
        fusion, n = self.fusion, len(self.fusion.inputs)

        class Launch:
            def __init__(self) -> None:
                self.name, self.grid, self.block = name, grid, block
                self.shared_bytes = shared_bytes

            def __call__(self, args: list[Any], grid: Any, stream: int) -> None:
                from fuser.runtime.reference import evaluate

                views = [
                    _array_at(a, p.shape, p.strides, p.dtype) if hasattr(p, "strides") else a
                    for a, p in zip(args, params, strict=True)
                ]
                inputs = [v.copy() if isinstance(v, np.ndarray) else v for v in views[:n]]
                for out, value in zip(views[n:], evaluate(fusion, inputs), strict=True):
                    out[...] = value

        return Launch()


def host_call(evaluator: Any, inputs: Sequence[Any], frontend: Any, stream: int = 0x5) -> Any:
    """A runtime `Call` of `evaluator` (a `HostEvaluator`) on numpy inputs standing in for device
    tensors (no upload): their addresses are the pointers; `frontend` allocates the outputs.
    The host-evaluator tests build their calls with it too."""
    from fuser.runtime.calls import Call, InputLayout
    from fuser.runtime.signature import dtype_code, scalar_part, tensor_part

    layout = InputLayout(
        evaluator.name, [f"input #{i}" for i in range(len(inputs))], evaluator.is_tensor
    )
    key: tuple[int, ...] = ()
    ptrs: list[int] = []
    scalars: list[Any] = []
    for x, is_tensor in zip(inputs, evaluator.is_tensor, strict=True):
        if is_tensor:
            strides = _element_strides(x)
            key += tensor_part(x.shape, strides, dtype_code(x.dtype), x.ctypes.data)
            ptrs.append(x.ctypes.data)
    for x, is_tensor in zip(inputs, evaluator.is_tensor, strict=True):
        if not is_tensor:
            key += scalar_part(x)
            scalars.append(x)
    return Call(layout, inputs, (*key, 0), ptrs, scalars, 0, stream, frontend)


def _element_strides(x: np.ndarray) -> tuple[int, ...]:
    return tuple(s // x.itemsize for s in x.strides)


def _host_info(info: Any, inputs: Sequence[Any]) -> Any:
    """`info` with the strides `run_lowered` passes: the numpy arrays' own (`info_for` gives
    those of the contiguous copies a device call would upload), so that the segmenter decides
    its copies for reshapes on the layouts the program runs on."""
    from fuser.transforms.schedulers.info import FusionInfo

    metas = [
        m if m is None else replace(m, strides=_element_strides(x))
        for m, x in zip(info.inputs, inputs, strict=True)
    ]
    return FusionInfo(tuple(metas), info.device)


def run_lowered(lowering: Any, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Runs a `HostLowering` on numpy inputs over host memory (see the module docstring)."""
    from fuser.runtime import driver
    from fuser.runtime.arrays import host_view
    from fuser.runtime.frontends import Frontend
    from fuser.runtime.host_evaluator import HostEvaluator

    class HostFrontend(Frontend):
        def allocate(self, shapes: Any, dtypes: Any, device: int, stream: int) -> Any:
            outs = [np.full(s, 0xFF, d) for s, d in zip(shapes, dtypes, strict=True)]
            return outs, [o.ctypes.data for o in outs]

        def view(self, base: Any, shape: Any, strides: Any, offset: int) -> Any:
            return host_view(base, shape, strides, offset)  # the input array's own memory

    memory = _HostMemory()
    kernels = {s.kernel_name: _ReferenceKernel(s.fusion) for s in lowering.segments}
    evaluator = HostEvaluator(lowering.program, kernels, backend=memory)
    call = host_call(evaluator, inputs, HostFrontend())

    class Device0:
        ordinal = 0

        def make_current(self) -> None:
            pass

    saved = driver.current_device, driver.get_device
    driver.current_device = lambda: Device0()  # type: ignore[assignment]  # host memory only
    driver.get_device = lambda ordinal: Device0()  # type: ignore[assignment]
    try:
        outputs = evaluator.run(call)
    finally:
        driver.current_device, driver.get_device = saved
    if memory.buffers:
        raise AssertionError(f"the host program leaked {len(memory.buffers)} allocation(s)")
    return [np.asarray(o) for o in outputs]


# --------------------------------------------------------------------------------------------
# Checking one program


@dataclass(frozen=True)
class Failure:
    """Why a program failed: the stage, and a mismatch (`kind` "mismatch") or an exception."""

    stage: str
    kind: str
    message: str

    def line(self) -> str:
        return f"{self.stage}: {self.kind}: {self.message}"


class _Stop(Exception):
    def __init__(self, failure: Failure) -> None:
        self.failure = failure


def _stage(stage: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except _Stop:
        raise
    except Exception as e:
        text = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise _Stop(Failure(stage, "error", f"{text} (at {where.filename}:{where.lineno})")) from e


def _expect(stage: str, problem: str | None) -> None:
    if problem is not None:
        raise _Stop(Failure(stage, "mismatch", problem))


def _reference(
    fusion: fu.FusionOp, inputs: Sequence[Any], compute: type = np.float64
) -> list[np.ndarray]:
    from fuser.runtime.reference import evaluate

    return evaluate(fusion, inputs, compute_dtype=compute)


def _split_factors(fusion: fu.FusionOp, seed: int) -> list[int]:
    from fuser.transforms.split_k import plain_matmuls

    return [2 + (seed + i) % 3 for i in range(len(plain_matmuls(fusion)))]


def check_program(
    program: Program,
    gpu: bool = False,
    nvrtc: bool = True,
    passes: bool = True,
    only: str | None = None,
) -> Failure | None:
    """Runs every stage on one program (see the module docstring); None when all agree.
    `only` stops after that stage (the shrinker asks only the stage that failed)."""
    try:
        _check(program, gpu, nvrtc, passes, only)
    except _Stop as stop:
        return stop.failure
    return None


def _check(program: Program, gpu: bool, nvrtc: bool, passes: bool, only: str | None) -> None:
    def definition() -> FusionDefinition:
        try:
            return build(program)
        except DefinitionError as e:
            raise _Stop(Failure("definition", "generator", str(e))) from e

    fd = _stage("definition", definition)
    inputs = _stage("inputs", lambda: make_inputs(program))
    facts = _stage("oracle", lambda: oracle.evaluate(program, inputs))
    expected = [f.data for f in facts]
    names = program.outputs
    try:
        reference = _stage("reference", lambda: _reference(fd.fusion, inputs))
    except _Stop as stop:  # inputs that do not fit the fusion: the generator's mistake
        if stop.failure.message.startswith("InputError"):
            raise _Stop(replace(stop.failure, kind="generator")) from stop
        raise
    _expect("reference", compare_all(reference, expected, facts, names, CPU_TOLERANCES))
    if only == "reference":
        return

    permutes: list[tuple[int, tuple[int, ...]]] = []  # `fuser-output-layouts`' (on `base`)

    def logical(got: Sequence[Any]) -> list[Any]:
        """Results of the rewritten fusion with each ordered output seen as the output."""
        got = list(got)
        for k, dims in permutes:
            got[k] = np.transpose(got[k], dims)
        return got

    def against_reference(stage: str, got: Sequence[Any]) -> None:
        _expect(stage, compare_all(logical(got), reference, facts, names, CPU_TOLERANCES))

    if passes:
        from fuser.transforms.decompose import decompose
        from fuser.transforms.hoist_views import hoist_views
        from fuser.transforms.lower_to_host import lower_fusion
        from fuser.transforms.output_layouts import physical_outputs
        from fuser.transforms.segment import segment_fusion
        from fuser.transforms.split_k import apply_split_k
        from fuser.transforms.translate_welford import translated, welford_ops

        fusion = fd.fusion
        if welford_ops(fusion.body) and only in (None, "translate-welford"):
            two_pass = _stage("translate-welford", lambda: translated(fusion))
            got = _stage("translate-welford", lambda: _reference(two_pass, inputs))
            against_reference("translate-welford", got)
        base = fusion.clone()
        if fusion.output_op.stride_orders is not None:  # first, as FusionCompiler runs it
            permutes.extend(_stage("fuser-output-layouts", lambda: physical_outputs(base)))
            base.verify()
            got = _stage("fuser-output-layouts", lambda: _reference(base, inputs))
            against_reference("fuser-output-layouts", got)
        _stage("fuser-decompose", lambda: decompose(base))
        decomposed = any(isinstance(op, fu.ScatterOp) for op in fusion.walk())
        if decomposed and only in (None, "fuser-decompose"):
            base.verify()
            got = _stage("fuser-decompose", lambda: _reference(base, inputs))
            against_reference("fuser-decompose", got)
        factors = _split_factors(fusion, program.data_seed)
        later = ("fuser-hoist-views", "fuser-segment", "fuser-lower-host", "fuser-plan-memory")
        if factors and only in (None, "split-k", *later):
            _stage("split-k", lambda: apply_split_k(base, factors))
            base.verify()
            got = _stage("split-k", lambda: _reference(base, inputs))
            against_reference("split-k", got)
        if only in (None, *later):
            from fuser.compiler import FusionCompiler
            from fuser.transforms.plan_memory import plan_memory

            info = _stage(
                "fuser-segment",
                lambda: _host_info(
                    FusionCompiler(fusion).info_for(inputs, arch=DEFAULT_ARCH), inputs
                ),
            )
            _stage("fuser-hoist-views", lambda: hoist_views(base, info))
            got = _stage("fuser-hoist-views", lambda: _reference(base, inputs))
            against_reference("fuser-hoist-views", got)
            mode = ("auto", "always", "never")[program.data_seed % 3]
            _stage("fuser-segment", lambda: segment_fusion(base, info, welford=mode))
            got = _stage("fuser-segment", lambda: _reference(base, inputs))
            against_reference("fuser-segment", got)
            # kernels store f32 intermediates as f32: against the f32 reference of the segments
            lowering = _stage("fuser-lower-host", lambda: lower_fusion(base, info))
            got = _stage("fuser-lower-host", lambda: run_lowered(lowering, inputs))
            single = _stage("fuser-lower-host", lambda: _reference(base, inputs, np.float32))
            got, single = logical(got), logical(single)
            _expect("fuser-lower-host", compare_all(got, single, facts, names, F32_TOLERANCES))
            # its intermediates in one workspace, as execute runs it
            if only != "fuser-lower-host" and _stage(
                "fuser-plan-memory", lambda: plan_memory(lowering.program)
            ):
                got = logical(_stage("fuser-plan-memory", lambda: run_lowered(lowering, inputs)))
                _expect("fuser-plan-memory", compare_all(got, single, facts, names, F32_TOLERANCES))
    if only not in (None, "nvrtc", "gpu"):
        return
    if nvrtc and not gpu:  # (fd.execute compiles on the GPU)
        _stage("nvrtc", lambda: fd.compile(inputs, arch=DEFAULT_ARCH))
    if gpu:
        # the GPU computes f32 in f32: where an ill-conditioned op makes the float64 and the
        # float32 reference disagree (gelu underflowing to -0 before a reciprocal or a sqrt, a
        # comparison of values within rounding), either answer is the GPU's to give
        in_f32 = _stage("gpu", lambda: _reference(fd.fusion, inputs, np.float32))
        tolerances = gpu_tolerances()
        for attempt in (1, 2):
            got = _stage("gpu", lambda: run_on_gpu(fd, program))
            problem = compare_all(got, reference, facts, names, tolerances, in_f32)
            _expect("gpu", None if problem is None else f"call {attempt}: {problem}")


# --------------------------------------------------------------------------------------------
# The GPU


def _torch_of(array: np.ndarray) -> Any:
    import torch  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

    dense = np.array(array, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    if array.dtype == NUMPY_DTYPES["bf16"]:
        t = torch.from_numpy(dense.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(dense)
    return t.cuda()


def torch_inputs(program: Program) -> list[Any]:
    """The inputs as CUDA torch tensors in the program's layouts (views of device buffers)."""
    out: list[Any] = []
    for inp, buf in zip(program.inputs, input_buffers(program), strict=True):
        if inp.shape is None:
            out.append(buf)
        else:
            assert isinstance(buf, np.ndarray)
            out.append(view_of(inp, _torch_of(buf)))
    return out


def run_on_gpu(fd: FusionDefinition, program: Program) -> list[np.ndarray]:
    """`fd.execute` on fresh torch inputs; the caching allocator's memory is filled with NaN
    bytes first, so an output element the kernels never write shows up."""
    import torch  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

    poison = torch.full((1 << 22,), -1, dtype=torch.int32, device="cuda")
    del poison  # its block returns to torch's cache, NaN-filled, for the outputs to reuse
    outputs = fd.execute(torch_inputs(program))
    torch.cuda.synchronize()
    for name, out in zip(program.outputs, outputs, strict=True):
        order = program.order_of(name, out.dim())
        if order is not None and tuple(out.stride()) != dense_strides(tuple(out.shape), order):
            raise AssertionError(
                f"output {name} in stride order {list(order)} has strides {tuple(out.stride())}"
            )
    return [host_array(o) for o in outputs]


def dense_strides(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a dense tensor of `shape` in stride order `order` (as torch
    computes them: an empty dim counts as extent 1)."""
    strides = [0] * len(shape)
    step = 1
    for d in sorted(range(len(shape)), key=lambda d: order[d]):  # the innermost first
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


# --------------------------------------------------------------------------------------------
# Shrinking


def _reads(op: Op) -> set[str]:
    """The values `op` reads: its operands, and the tensors whose extents it takes (in a
    `shape`, or an iota's `length`)."""
    extents = [*op.kw.get("shape", []), *op.kw.get("new_shape", []), op.kw.get("length")]
    return {a for a in op.args if isinstance(a, str)} | {
        e[0] for e in extents if isinstance(e, tuple)
    }


def _renamed(op: Op, old: str, new: str) -> Op:
    """`op` reading `new` wherever it read `old` (operands and extents alike)."""

    def extent(e: Any) -> Any:
        return (new, e[1]) if isinstance(e, tuple) and e[0] == old else e

    args = tuple(new if a == old else a for a in op.args)
    kwargs = tuple(
        (
            k,
            [extent(e) for e in v]
            if k in ("shape", "new_shape")
            else extent(v)
            if k == "length"
            else v,
        )
        for k, v in op.kwargs
    )
    return replace(op, args=args, kwargs=kwargs)


def _without_op(program: Program, index: int) -> Program | None:
    """The program without op `index`, when no op uses its results and an output is left."""
    op = program.ops[index]
    rest = program.ops[:index] + program.ops[index + 1 :]
    used = {a for o in rest for a in _reads(o)}
    if any(r in used for r in op.results):
        return None
    outputs = tuple(o for o in program.outputs if o not in op.results)
    if not outputs:
        return None
    return replace(program, ops=rest, outputs=outputs)


def _bypass(
    program: Program, index: int, values: dict[str, oracle.Value], handles: dict[str, Any]
) -> Program | None:
    """The program without op `index`, its result replaced everywhere (outputs included) by
    its first operand of the same dtype and shape, run-time and declared (`handles`: the
    definition's values by name), where it has one."""
    op = program.ops[index]
    if len(op.results) != 1 or op.results[0] not in values:
        return None
    result = values[op.results[0]]
    same = [
        a
        for a in op.args
        if isinstance(a, str)
        and a in values
        and values[a].dtype == result.dtype
        and values[a].is_tensor == result.is_tensor
        and np.shape(values[a].data) == np.shape(result.data)
        and _declared(handles.get(a)) == _declared(handles.get(op.results[0]))
    ]
    if not same:
        return None
    old, new = op.results[0], same[0]
    ops = tuple(_renamed(o, old, new) for o in program.ops[:index] + program.ops[index + 1 :])
    outputs = tuple(dict.fromkeys(new if x == old else x for x in program.outputs))
    orders = tuple((new if x == old else x, o) for x, o in program.output_orders)
    return replace(program, ops=ops, outputs=outputs, output_orders=orders)


def _cut(
    program: Program, index: int, values: dict[str, oracle.Value], handles: dict[str, Any]
) -> Program | None:
    """The program with op `index` replaced by new inputs of its results' dtypes, shapes and
    declared shapes (the ops only it used then die)."""
    op = program.ops[index]
    if any(r not in values or r not in handles for r in op.results):
        return None
    fresh: list[Input] = []
    for r in op.results:
        v = values[r]
        if v.is_tensor:
            shape = tuple(v.data.shape)
            fresh.append(Input(r, v.dtype, shape, tuple(handles[r].static_shape)))
        else:
            number = v.data.item()
            fresh.append(Input(r, v.dtype, None, value=number))
    ops = program.ops[:index] + program.ops[index + 1 :]
    return _drop_dead(replace(program, inputs=(*program.inputs, *fresh), ops=ops))


def _drop_dead(program: Program) -> Program:
    """Drops ops whose results nothing uses, then inputs nothing uses."""
    ops = list(program.ops)
    while True:
        used = set(program.outputs)
        for o in ops:
            used |= _reads(o)
        alive = [o for o in ops if any(r in used for r in o.results)]
        if len(alive) == len(ops):
            break
        ops = alive
    return _drop_unused_inputs(replace(program, ops=tuple(ops)))


def _declared(handle: Any) -> tuple[int, ...] | None:
    """A tensor's shape as the definition declares it (-1 dynamic); None for a scalar."""
    return getattr(handle, "static_shape", None)


def _drop_unused_inputs(program: Program) -> Program:
    used = {a for o in program.ops for a in _reads(o)}
    used |= set(program.outputs)  # an input a bypass or cut made an output
    return replace(program, inputs=tuple(i for i in program.inputs if i.name in used))


def _variants(program: Program) -> list[Program]:
    """Smaller or simpler neighbours of a program, most promising first."""
    out: list[Program] = []
    for i in range(len(program.ops) - 1):  # the program up to op i, its results the outputs
        out.append(_drop_dead(replace(program, outputs=program.ops[i].results)))
    for i in reversed(range(len(program.ops))):
        p = _without_op(program, i)
        if p is not None:
            out.append(_drop_unused_inputs(p))
    try:
        handles: dict[str, Any] = {}
        build(program, handles=handles)
        values = oracle.Oracle(program, make_inputs(program))
        values.run()
        for i in reversed(range(len(program.ops))):
            bypassed = _bypass(program, i, values.values, handles)
            if bypassed is not None:
                out.append(_drop_dead(bypassed))
        cuts = (_cut(program, i, values.values, handles) for i in range(len(program.ops)))
        out.extend(c for c in cuts if c is not None)
    except Exception:
        pass
    if len(program.outputs) > 1:
        for o in program.outputs:
            out.append(replace(program, outputs=tuple(x for x in program.outputs if x != o)))
    if program.specials:
        out.append(replace(program, specials=False))
    if program.output_orders:
        out.append(replace(program, output_orders=()))
    for k, inp in enumerate(program.inputs):
        simpler: list[Input] = []
        if inp.layout != "contiguous":
            simpler.append(replace(inp, layout="contiguous", broadcast_dims=()))
        if inp.declared is not None and any(d not in (-1, 1) for d in inp.declared):
            dynamic = tuple(-1 if d != 1 else 1 for d in inp.declared)
            simpler.append(replace(inp, declared=dynamic))
        for s in simpler:
            out.append(replace(program, inputs=(*program.inputs[:k], s, *program.inputs[k + 1 :])))
    out.extend(_smaller_dims(program))
    out.append(replace(program, data_seed=program.data_seed + 1))
    return out


def _smaller_dims(program: Program) -> list[Program]:
    """The program with one run-time extent (wherever it occurs in the inputs) made smaller."""
    extents = sorted({e for i in program.inputs if i.shape for e in i.shape if e > 1}, reverse=True)
    out: list[Program] = []
    for e in extents:
        for smaller in (1, 2, 3, e // 2 + 1, e - 1):
            if 0 < smaller < e:
                out.append(_resize(program, e, smaller))
    return out


def _resize(program: Program, old: int, new: int) -> Program:
    def fix(shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return None if shape is None else tuple(new if e == old else e for e in shape)

    inputs = tuple(
        replace(
            i,
            shape=fix(i.shape),
            declared=fix(i.declared),
            broadcast_dims=i.broadcast_dims if new > 1 else (),
            layout=i.layout if new > 1 or i.layout != "broadcast" else "contiguous",
        )
        for i in program.inputs
    )
    ops = []
    for op in program.ops:
        kw = op.kw
        for key in ("shape", "new_shape"):  # a reshape's merged extents stay: it may no longer fit
            if key in kw:
                kw[key] = [new if isinstance(e, int) and e == old else e for e in kw[key]]
                op = replace(op, kwargs=tuple(kw.items()))
        if kw.get("length") == old:  # an iota's int length
            kw["length"] = new
            op = replace(op, kwargs=tuple(kw.items()))
        ops.append(op)
    return replace(program, inputs=inputs, ops=tuple(ops))


def _size(program: Program) -> tuple[int, int]:
    return len(program.ops), sum(math.prod(base_shape(i)) for i in program.inputs if i.shape)


def shrink(
    program: Program,
    fails: Callable[[Program], bool],
    budget: int = 300,
) -> Program:
    """A smaller program on which `fails` still holds (greedy: the first smaller neighbour
    that fails is taken, until none does or `budget` checks are spent)."""
    best, tries, improved = program, 0, True
    while improved and tries < budget:
        improved = False
        for candidate in _variants(best):
            if tries >= budget:
                break
            if candidate == best or _size(candidate) > _size(best):
                continue
            tries += 1
            try:
                ok = fails(candidate)
            except Exception:
                ok = False
            if ok:
                best, improved = candidate, True
                break
    return best


def shrink_failure(program: Program, failure: Failure, gpu: bool) -> tuple[Program, Failure]:
    """The shrunk program of a failure and its failure (the same stage and kind)."""
    last = [failure]

    def fails(p: Program) -> bool:
        f = check_program(p, gpu=gpu, nvrtc=failure.stage == "nvrtc", only=failure.stage)
        same_error = failure.kind != "error" or (
            f is not None and f.message.split(":")[0] == failure.message.split(":")[0]
        )
        if f is not None and f.stage == failure.stage and f.kind == failure.kind and same_error:
            last.append(f)
            return True
        return False

    small = shrink(program, fails)
    final = check_program(small, gpu=gpu, nvrtc=failure.stage == "nvrtc", only=failure.stage)
    return small, final or last[-1]


# --------------------------------------------------------------------------------------------
# The run


@dataclass
class Tally:
    """What a run found: counts, and a reproducer script per failure."""

    programs: int = 0
    mismatches: int = 0
    errors: int = 0
    generator: int = 0
    reports: list[str] = field(default_factory=list)


def check_range(
    seed: int, indices: Sequence[int], gpu: bool, sizes: str, nvrtc_every: int
) -> list[tuple[int, Failure]]:
    """Checks programs `seed + k` for k in `indices`; the failures, by k (a worker's job)."""
    failures: list[tuple[int, Failure]] = []
    for k in indices:
        nvrtc = nvrtc_every > 0 and k % nvrtc_every == 0
        failure = check_program(generate(seed + k, sizes), gpu=gpu, nvrtc=nvrtc)
        if failure is not None:
            failures.append((k, failure))
    return failures


def run(
    seed: int,
    count: int,
    gpu: bool = False,
    sizes: str = "small",
    nvrtc_every: int = 1,
    jobs: int = 1,
    out: Any = sys.stdout,
    shrink_failures: bool = True,
) -> Tally:
    """Checks programs `seed .. seed + count - 1`, NVRTC on every `nvrtc_every`-th (0: none),
    in `jobs` processes (each with its own CUDA context under `--gpu`); failures are shrunk
    and printed here."""
    tally = Tally(programs=count)
    chunks = [list(range(k, min(k + 16, count))) for k in range(0, count, 16)]
    if jobs > 1:
        context = multiprocessing.get_context("spawn")  # CUDA does not survive a fork
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [pool.submit(check_range, seed, c, gpu, sizes, nvrtc_every) for c in chunks]
            found = [f for future in futures for f in future.result()]
    else:
        found = [f for c in chunks for f in check_range(seed, c, gpu, sizes, nvrtc_every)]
    for k, failure in sorted(found, key=lambda kf: kf[0]):
        program = generate(seed + k, sizes)
        if failure.kind == "generator":
            tally.generator += 1
        elif failure.kind == "mismatch":
            tally.mismatches += 1
        else:
            tally.errors += 1
        small, final = (
            shrink_failure(program, failure, gpu) if shrink_failures else (program, failure)
        )
        report = to_script(small, final.stage, f"{final.kind}: {final.message}", gpu)
        tally.reports.append(report)
        print(report, file=out)
        print(f"FAIL program {seed + k}: {final.line()} [{small.describe()}]", file=out, flush=True)
    return tally


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuser.fuzz.differential",
        description=(__doc__ or "").split("\n\n")[0],  # None under python -OO
        epilog="never drawn: " + "; ".join(f"{k} ({v})" for k, v in AVOIDED.items()),
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--gpu", action="store_true", help="also run fd.execute on torch CUDA")
    parser.add_argument("--sizes", choices=("small", "large"), default="small")
    parser.add_argument(
        "--nvrtc-every", type=int, default=1, help="compile every N-th program (0: none)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--no-shrink", action="store_true")
    args = parser.parse_args(argv)
    start = time.monotonic()
    tally = run(
        args.seed,
        args.count,
        gpu=args.gpu,
        sizes=args.sizes,
        nvrtc_every=args.nvrtc_every,
        jobs=args.jobs,
        shrink_failures=not args.no_shrink,
    )
    seconds = time.monotonic() - start
    extra = f", {tally.generator} generator bugs" if tally.generator else ""
    print(
        f"fuzz: {tally.programs} programs, {tally.mismatches} mismatches, {tally.errors} errors"
        f"{extra} (seed {args.seed}, {seconds:.0f} s{', gpu' if args.gpu else ''})"
    )
    return 1 if tally.mismatches or tally.errors or tally.generator else 0


if __name__ == "__main__":
    sys.exit(main())
