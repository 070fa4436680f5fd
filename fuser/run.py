"""`fuser-run`: compile a fusion from a `.mlir` file, run it on random inputs, check and time it.

    fuser-run FILE.mlir --shapes 16384x4096,4096 [--fusion NAME] [--seed N] [--iters N]

It parses and verifies the file (errors located at `file:line:col`, as `fuser-opt` reports them),
picks the first `fusion.fusion` (or `--fusion NAME`), and makes random inputs of the given shapes
(one shape per tensor input, `()` for rank 0; normal floats, small non-zero integers, random
bools; scalars alike). With a GPU it runs the fusion, checks every output against the reference
interpreter computing in float64 (tolerances by dtype, `fuser.validation.TOLERANCES`), and
prints each kernel's median time (CUDA events after warm-up, L2 flushed before each launch)
and the bandwidth it achieved, counting every input read once and every output written once.
Without a GPU (or with `--compile-only`) it compiles every kernel with NVRTC for `--arch`
(default sm_90), evaluates the reference, and says that nothing was run.

Exit status (as `fuser-opt`'s): 0 when every output matches, 1 for a user's mistake (a one-line
`fuser-run: error: ...` or a located diagnostic) or a mismatch, 2 for a bug in fuser ("internal
error in fuser", the stage, and a reproducer file), never a traceback.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np
from xdsl.context import Context
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.utils.lexer import Span

from fuser.cli import (
    USER_ERRORS,
    LocatedParser,
    quiet_broken_pipe,
    report_internal_error,
    user_error_text,
    verify_located,
)
from fuser.compiler import CompiledFusion, FusionCompiler
from fuser.dialects import get_all_dialects
from fuser.dialects.fusion import I1, FusionOp, element_type, format_shape
from fuser.errors import FuserError
from fuser.runtime import driver
from fuser.runtime.arrays import DeviceArray
from fuser.runtime.compiled_kernel import RtcKernel
from fuser.runtime.dtypes import numpy_dtype, round_to_float
from fuser.runtime.reference import evaluate
from fuser.transforms.schedulers.info import DEFAULT_ARCH, SHAPES_SYNTAX, arch_problem
from fuser.transforms.schedulers.info import parse_shapes as parse_shape_list
from fuser.validation import compare

PROG = "fuser-run"


class RunError(FuserError):
    """A mistake in the command line or the file (reported as one line)."""


class Progress:
    """What `run` is doing, for the report of an internal error: the stage, and the text of the
    file once read (for the reproducer)."""

    def __init__(self) -> None:
        self.stage = "reading the command line"
        self.input_text: str | None = None


# --------------------------------------------------------------------------------------------
# Checking outputs


def max_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """The largest absolute difference, ignoring positions where both are NaN or equal."""
    if actual.size == 0:
        return 0.0
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
    diff[(a == e) | (np.isnan(a) & np.isnan(e))] = 0.0
    return float(np.nanmax(diff)) if diff.size else 0.0


# --------------------------------------------------------------------------------------------
# Inputs


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    """`16384x4096,4096,()` -> [(16384, 4096), (4096,), ()]: the grammar of the passes' `shapes`
    option (`SHAPES_SYNTAX`); RunError for a bad one."""
    try:
        shapes = parse_shape_list(text, f"--shapes {text}")
    except ValueError as e:
        raise RunError(str(e)) from None
    if shapes is None:
        raise RunError(f"--shapes is empty: expected {SHAPES_SYNTAX}")
    return shapes


def _input_name(index: int, fusion: FusionOp) -> str:
    hint = fusion.body.block.args[index].name_hint
    return f"input #{index}" + (f" (%{hint})" if hint else "")


def input_shapes(fusion: FusionOp, shapes: list[tuple[int, ...]] | None) -> list[tuple[int, ...]]:
    """One shape per tensor input: the given ones (checked), or the static shapes."""
    tensors = [(i, a.type) for i, a in enumerate(fusion.body.block.args)]
    tensors = [(i, t) for i, t in tensors if isinstance(t, TensorType)]
    if shapes is None:
        out = []
        for i, t in tensors:
            shape = tuple(t.get_shape())
            if DYNAMIC_INDEX in shape:
                raise RunError(
                    f"{_input_name(i, fusion)} has dynamic extents ({t}): give its shape with "
                    "--shapes"
                )
            out.append(shape)
        return out
    if len(shapes) != len(tensors):
        names = ", ".join(_input_name(i, fusion) for i, _ in tensors)
        raise RunError(
            f"--shapes gives {len(shapes)} shape(s) but @{fusion.sym_name.data} has "
            f"{len(tensors)} tensor input(s): {names}"
        )
    for (i, t), shape in zip(tensors, shapes, strict=True):
        expected = tuple(t.get_shape())
        if len(shape) != len(expected) or any(
            e not in (DYNAMIC_INDEX, s) for e, s in zip(expected, shape, strict=True)
        ):
            got = "x".join(map(str, shape)) or "()"
            raise RunError(
                f"--shapes: {_input_name(i, fusion)} has type {t} (shape "
                f"{format_shape(expected)}), got shape {got}"
            )
    return shapes


def random_value(t: Attribute, shape: tuple[int, ...] | None, rng: np.random.Generator) -> Any:
    """A random input of type `t` (shape None: a Python scalar). Floats are standard normal,
    integers non-zero in [-8, 8] (so a division never divides by 0), bools fair coins."""
    el = element_type(t)
    size = () if shape is None else shape
    if el == I1:
        data: np.ndarray = rng.random(size) < 0.5
    else:
        dtype = numpy_dtype(el)
        if dtype.kind == "i":
            data = (rng.integers(1, 9, size) * rng.choice([-1, 1], size)).astype(dtype)
        else:
            normal = rng.standard_normal(size)
            data = round_to_float(normal, dtype) if dtype.itemsize < 8 else normal.astype(dtype)
    if shape is None:
        return data.item() if el != I1 else bool(data)
    return np.asarray(data)


def random_inputs(
    fusion: FusionOp, shapes: list[tuple[int, ...]], rng: np.random.Generator
) -> list[Any]:
    it = iter(shapes)
    return [
        random_value(a.type, next(it) if isinstance(a.type, TensorType) else None, rng)
        for a in fusion.body.block.args
    ]


# --------------------------------------------------------------------------------------------
# Parsing the file


def load_fusion(path: str, name: str | None, progress: Progress | None = None) -> FusionOp:
    """Parse and verify `path`; return its first fusion, or the one named `name`."""
    progress = progress or Progress()
    progress.stage = "reading the file"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise RunError(f"{e.strerror}: {path}") from None
    progress.input_text = text
    progress.stage = "parsing"
    ctx = Context()
    for dialect, factory in (xdsl_dialects() | get_all_dialects()).items():
        ctx.register_dialect(dialect, factory)
    spans: dict[Operation, Span] = {}
    module = LocatedParser(ctx, text, path, spans=spans).parse_module()
    assert isinstance(module, ModuleOp)
    progress.stage = "verification"
    verify_located(module, spans)
    fusions = [op for op in module.walk() if isinstance(op, FusionOp)]
    if not fusions:
        raise RunError(f"{path} holds no fusion.fusion op")
    if name is None:
        return fusions[0]
    wanted = name.lstrip("@")
    for fusion in fusions:
        if fusion.sym_name.data == wanted:
            return fusion
    found = ", ".join(f"@{f.sym_name.data}" for f in fusions)
    raise RunError(f"{path} has no fusion @{wanted} (it has {found})")


# --------------------------------------------------------------------------------------------
# Timing

_SPIN_SOURCE = r"""
extern "C" __global__ void fuser_run_spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
}
"""


def time_launch(launch: Any, iters: int, warmup: int, stream: int) -> float:
    """The median milliseconds of `launch()` over `iters` runs, after `warmup` runs.

    Each run is bracketed by CUDA events, with the L2 cache flushed before it. A spin kernel
    queued first keeps the GPU busy while the host queues every run, so the events time the
    kernels and not the host's launch overhead.
    """
    for _ in range(warmup):
        launch()
    dev = driver.current_device()
    flush_bytes = 2 * dev.l2_bytes
    flush = driver.alloc(flush_bytes, stream)
    starts = [driver.Event() for _ in range(iters)]
    ends = [driver.Event() for _ in range(iters)]
    spin = RtcKernel(_SPIN_SOURCE, "fuser_run_spin")
    clock_hz = 2e9  # an over-estimate is harmless: the spin only has to outlast the queueing
    spin.launch(1, 1, [int(iters * 40e-6 * clock_hz)], stream=stream)
    try:
        for start, end in zip(starts, ends, strict=True):
            driver.memset_d8_async(flush, 0, flush_bytes, stream)
            start.record(stream)
            launch()
            end.record(stream)
        ends[-1].synchronize()
    finally:
        driver.free(flush, stream)
    return statistics.median(s.elapsed_ms(e) for s, e in zip(starts, ends, strict=True))


def _nbytes(x: Any) -> int:
    shape = getattr(x, "shape", None)
    if shape is None:
        return 0
    return math.prod(shape) * np.dtype(x.dtype).itemsize


# --------------------------------------------------------------------------------------------
# The command


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{PROG}: error: {message}", file=sys.stderr)
        sys.exit(1)


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog=PROG,
        description="Compile a fusion from FILE, run it on random inputs, check it against "
        "the reference interpreter and time it (or, without a GPU, compile it and evaluate "
        "the reference).",
    )
    p.add_argument("file", metavar="FILE", help="a .mlir file holding fusion.fusion ops")
    p.add_argument(
        "--shapes",
        help=f"{SHAPES_SYNTAX}, e.g. 16384x4096,4096,(); optional when every tensor input "
        "has a static shape",
    )
    p.add_argument("--fusion", metavar="NAME", help="the fusion to run (default: the first)")
    p.add_argument(
        "--seed",
        "--dtype-seed",
        dest="seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the random inputs (default 0)",
    )
    p.add_argument("--iters", type=int, default=100, metavar="N", help="timed runs (100)")
    p.add_argument("--warmup", type=int, default=10, metavar="N", help="untimed runs (10)")
    p.add_argument(
        "--arch",
        help="GPU architecture to compile for without a GPU (default sm_90, at least sm_75; "
        "with a GPU its own architecture is used)",
    )
    p.add_argument(
        "--compile-only",
        action="store_true",
        help="only compile and evaluate the reference, even when a GPU is present",
    )
    p.add_argument("--print-cuda", action="store_true", help="print each kernel's CUDA source")
    return p


def _describe_outputs(fusion: FusionOp, outputs: Sequence[np.ndarray]) -> list[str]:
    lines = []
    for i, (v, out) in enumerate(zip(fusion.output_op.values, outputs, strict=True)):
        lines.append(f"  output #{i} {v.type}: shape {tuple(out.shape)}")
    return lines


def run(args: argparse.Namespace, progress: Progress | None = None) -> int:
    progress = progress or Progress()
    if args.iters < 1 or args.warmup < 0:
        raise RunError("--iters must be >= 1 and --warmup >= 0")
    if args.arch is not None and (problem := arch_problem(args.arch)) is not None:
        raise RunError(f"--arch: {problem}")
    fusion = load_fusion(args.file, args.fusion, progress)
    shapes = input_shapes(fusion, parse_shapes(args.shapes) if args.shapes else None)
    rng = np.random.default_rng(args.seed)
    inputs = random_inputs(fusion, shapes, rng)
    progress.stage = "compiling"
    compiler = FusionCompiler(fusion)
    name = fusion.sym_name.data
    gpu = driver.gpu_available() and not args.compile_only
    if not gpu:
        arch = args.arch or DEFAULT_ARCH
        progress.stage = f"compiling for {arch}"
        compiled = compiler.compile(inputs, arch=arch)
        _print_compiled(compiled, args.print_cuda)
        progress.stage = "the reference"
        reference = evaluate(fusion, inputs, compute_dtype=np.float64)
        print("reference (numpy, float64):")
        print("\n".join(_describe_outputs(fusion, reference)))
        n = len(compiled.kernels)
        reason = "--compile-only" if driver.gpu_available() else "no GPU found"
        print(
            f"{reason}: compiled {n} kernel{'' if n == 1 else 's'} for {arch} and evaluated "
            "the reference; nothing was run"
        )
        return 0
    if args.arch is not None and args.arch != driver.current_device().arch:
        raise RunError(
            f"--arch {args.arch} differs from the GPU's {driver.current_device().arch}; "
            "use --compile-only to compile for another architecture"
        )
    dev = driver.current_device()
    device_inputs = [_to_device(x) for x in inputs]
    progress.stage = f"compiling for {dev.arch}"
    compiled = compiler.compile(device_inputs)
    print(f"device: {dev.name} ({dev.arch})")
    _print_compiled(compiled, args.print_cuda)
    progress.stage = "running on the GPU"
    outputs = [o.numpy() for o in compiler.execute(device_inputs)]
    progress.stage = "the reference"
    reference = evaluate(fusion, inputs, compute_dtype=np.float64)
    # an aliased output is written into its input instead of being returned
    returned, written = fusion.output_op.returned(), fusion.output_op.written()
    checked = [
        *((f"output #{o}", out) for o, out in zip(returned, outputs, strict=True)),
        *((f"input #{i} (output #{o})", device_inputs[i].numpy()) for o, i in written),
    ]
    expected = [reference[o] for o in returned] + [reference[o] for o, _ in written]
    failures = []
    print("check against the reference (numpy, float64):")
    for (what, out), ref in zip(checked, expected, strict=True):
        problem = compare(out, ref, what)
        status = "ok" if problem is None else "MISMATCH"
        print(
            f"  {what} {out.dtype} {tuple(out.shape)}: {status}, max abs error "
            f"{max_error(out, ref):.3g}"
        )
        if problem is not None:
            failures.append(problem)
    progress.stage = "timing"
    moved = sum(_nbytes(x) for x in inputs) + sum(_nbytes(o) for o in outputs)
    print(f"time (CUDA events, median of {args.iters} runs after {args.warmup}, L2 flushed):")
    for launch in compiler.prepare(device_inputs):
        ms = time_launch(launch, args.iters, args.warmup, launch.stream)
        gbps = moved / (ms * 1e-3) / 1e9 if ms > 0 else float("inf")
        print(
            f"  {launch.name}: {ms * 1e3:.1f} us, {gbps:.0f} GB/s ({moved / 1e6:.1f} MB read "
            "and written)"
        )
    if failures:
        for problem in failures:
            print(f"{PROG}: error: @{name} {problem}", file=sys.stderr)
        return 1
    return 0


def _to_device(x: Any) -> Any:
    """A DeviceArray copy of a numpy input (scalars stay Python numbers)."""
    return DeviceArray.from_numpy(x) if isinstance(x, np.ndarray) else x


def _print_compiled(compiled: CompiledFusion, print_cuda: bool) -> None:
    print(compiled.summary())
    if print_cuda:
        for k in compiled.kernels:
            print(f"// ---- {k.name} ----")
            print(k.source)


def main(argv: Sequence[str] | None = None) -> int:
    """The `fuser-run` command; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    progress = Progress()
    try:
        return run(args, progress)
    except USER_ERRORS as e:
        print(user_error_text(PROG, e), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return quiet_broken_pipe()
    except Exception as e:
        command = [PROG, *(sys.argv[1:] if argv is None else argv)]
        return report_internal_error(PROG, progress.stage, e, command, progress.input_text)


if __name__ == "__main__":
    sys.exit(main())
