"""Stream-parallel fusions on the GPU: slices of a tensor computed on a pool of CUDA streams.

Every case of the lit tests in `lit_tests/transforms/lower_stream_parallel/` (one stream-parallel
set, two chained ones in one loop, three with a plain one between two loops, a pointwise kernel
and a reduction per slice, a bias every slice reads whole) and two loops over different extents
run through `FusionCompiler` and equal the float64 reference, with 1 and 4 streams, numpy and
torch inputs, and a strided input. A timeline of CUDA events recorded around every launch on its
own stream shows that iterations on different streams overlap in time (and that with one stream
they do not), that no slice starts before the caller's stream reaches the program, and that the
caller's stream is past every slice when the program ends; work the caller issues after
`execute` on its stream sees complete results without a host-side synchronize.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_helpers import assert_outputs_close, parse_fusion

from fuser.compiler import FusionCompiler
from fuser.dialects import fusion as fu
from fuser.runtime import driver
from fuser.runtime.calls import read_inputs
from fuser.runtime.host_evaluator import HostEvaluator
from fuser.runtime.kernel_binding import ExecutorKernel, KernelBinding, Launcher
from fuser.runtime.reference import evaluate
from fuser.transforms.segment_rules import MergePredicate, never_merge

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
LIT = ROOT / "lit_tests" / "transforms" / "lower_stream_parallel"

CROSSED = """
fusion.fusion @crossed(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %s = fusion.sum %e [0] {fusion.stream_axis = 0 : i64} : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s, %e : tensor<?xf32>, tensor<?x?xf32>
}
"""


def load(name: str) -> fu.FusionOp:
    """The (first) fusion of a lit test of the stream lowering, or CROSSED."""
    return parse_fusion(CROSSED if name == "crossed" else (LIT / f"{name}.mlir").read_text())


def numpy_inputs(
    fusion: fu.FusionOp, shapes: Sequence[tuple[int, ...]], rng: np.random.Generator
) -> list[np.ndarray]:
    assert len(shapes) == len(fusion.inputs)
    return [(rng.standard_normal(s) * 0.5 + 0.1).astype(np.float32) for s in shapes]


# --------------------------------------------------------------------------------------------
# Results


CASES = [
    # (lit file, merge rule, input shapes, loops over streams the program has)
    ("single_set", None, [(7, 1001)], 1),
    ("single_set", None, [(1, 33)], 1),
    ("two_sets", never_merge, [(9, 777)], 1),  # two kernels per slice, one loop
    ("two_sets", None, [(3, 4096)], 1),  # one kernel per slice
    ("three_sets", None, [(6, 515)], 2),  # loop, plain kernel, loop
    ("kernel_segments", never_merge, [(5, 33, 1000)], 1),  # pointwise + reduction per slice
    ("kernel_segments", None, [(11, 64, 257)], 1),
    ("bias", None, [(5, 17, 4097), (4097,)], 1),  # the bias is read whole by every slice
    ("crossed", None, [(6, 130)], 2),  # loops over 6 and over 130 slices
]


@pytest.mark.parametrize("streams", [1, 4])
@pytest.mark.parametrize(("name", "merge", "shapes", "loops"), CASES)
def test_results_equal_the_reference(
    rng: np.random.Generator,
    name: str,
    merge: MergePredicate | None,
    shapes: list[tuple[int, ...]],
    loops: int,
    streams: int,
) -> None:
    fusion = load(name)
    compiler = FusionCompiler(fusion, should_merge=merge, streams=streams)
    n = max(math.prod(s) for s in shapes)
    for _ in range(2):  # a miss, then a hit on new data
        inputs = numpy_inputs(fusion, shapes, rng)
        outputs = compiler.execute(inputs)
        assert_outputs_close(outputs, evaluate(fusion, inputs, compute_dtype=np.float64), n)
    assert (compiler.misses, compiler.hits) == (1, 1)
    text = compiler.host_ir()
    assert text.count("host.get_current_stream") == loops
    assert text.count("host.synchronize %joined") == loops
    assert "fuser.stream_parallel" not in text


def test_torch_inputs_and_a_strided_view(rng: np.random.Generator, torch: Any) -> None:
    fusion = load("kernel_segments")
    compiler = FusionCompiler(fusion, should_merge=never_merge, streams=3)
    base = torch.from_numpy(numpy_inputs(fusion, [(300, 24, 7)], rng)[0]).cuda()
    x = base.permute(2, 1, 0)  # [7, 24, 300]: every slice is strided
    assert not x.is_contiguous()
    (out,) = compiler.execute([x])
    assert isinstance(out, torch.Tensor) and out.is_cuda and tuple(out.shape) == (7, 24)
    torch.cuda.synchronize()
    expected = evaluate(fusion, [x.cpu().numpy()], compute_dtype=np.float64)
    assert_outputs_close([out.cpu().numpy()], expected, 300)


# --------------------------------------------------------------------------------------------
# The timeline: CUDA events around every launch, on the launch's stream


class _TimedLauncher:
    """Records a timing event on the launch's stream before and after it."""

    def __init__(self, inner: Launcher, timeline: list[tuple[str, int, Any, Any]]) -> None:
        self.inner = inner
        self.timeline = timeline
        self.name = inner.name
        self.grid = inner.grid
        self.block = inner.block
        self.shared_bytes = inner.shared_bytes

    def __call__(self, args: list[Any], grid: tuple[int, int, int], stream: int) -> None:
        start, end = driver.Event(), driver.Event()
        start.record(stream)
        self.inner(args, grid, stream)
        end.record(stream)
        self.timeline.append((self.name, stream, start, end))


class TimedKernel:
    """A kernel binding that times each launch of another one with CUDA events."""

    def __init__(self, inner: KernelBinding, timeline: list[tuple[str, int, Any, Any]]) -> None:
        self.inner = inner
        self.timeline = timeline

    def compile(self) -> None:
        self.inner.compile()

    def grid(self, *args: Any) -> tuple[int, int, int]:
        """The inner binding's grid (`KernelBinding.grid`'s)."""
        return self.inner.grid(*args)

    def bind(self, *args: Any) -> _TimedLauncher:
        """The inner binding's launcher for these arguments (`KernelBinding.bind`'s), timed."""
        return _TimedLauncher(self.inner.bind(*args), self.timeline)


def block_stream(torch: Any, stream: Any, ms: float = 40.0) -> None:
    """Keeps `stream` busy for about `ms` milliseconds (a spin kernel), so that everything the
    program issues is queued before any of it runs: the host's issue rate then does not hide or
    fake the overlap of the streams."""
    with torch.cuda.stream(stream):
        sleep: Callable[[int], None] | None = getattr(torch.cuda, "_sleep", None)
        if sleep is not None:
            clock_hz = 2.0e9  # cycles per ms below: an upper bound of the SM clock
            sleep(int(ms * clock_hz / 1000))
        else:
            a = torch.randn(4096, 4096, device="cuda")
            for _ in range(int(ms)):
                a = torch.tanh(a @ a)


def timed_run(
    torch: Any, compiler: FusionCompiler, inputs: list[Any], streams: int
) -> tuple[list[Any], list[tuple[str, int, float, float]], int, float, bool]:
    """Runs the compiler's (last) program through an evaluator whose launches are timed, after
    a spin kernel on the caller's stream. Returns the outputs, the timeline (kernel, stream,
    start ms, end ms, relative to the end of the spin kernel), the caller's stream, the time the
    caller's stream passes the program (same origin), and whether the host returned from the
    program while the spin kernel still ran."""
    program = compiler.builder._programs[-1]  # the compiled program and its executors
    timeline: list[tuple[str, int, Any, Any]] = []
    kernels = {
        s.kernel_name: TimedKernel(ExecutorKernel(e), timeline)
        for s, e in zip(program.lowering.segments, program.executors, strict=True)
    }
    evaluator = HostEvaluator(program.lowering.program, kernels, num_streams=streams)
    evaluator.run(read_inputs(inputs, compiler.layout))  # warm-up: specialization, functions
    torch.cuda.synchronize()
    timeline.clear()
    caller = torch.cuda.current_stream()
    block_stream(torch, caller)
    origin = driver.Event().record(caller.cuda_stream)  # the spin kernel's end
    outputs = evaluator.run(read_inputs(inputs, compiler.layout))
    returned_early = not origin.query()
    done = driver.Event().record(caller.cuda_stream)  # the caller's stream past the program
    torch.cuda.synchronize()
    events = [(n, s, origin.elapsed_ms(a), origin.elapsed_ms(b)) for n, s, a, b in timeline]
    return outputs, events, caller.cuda_stream, origin.elapsed_ms(done), returned_early


def concurrency(events: Sequence[tuple[str, int, float, float]]) -> float:
    """Summed busy time of the streams over the span of the timeline: at most 1 when launches
    run one after another, up to the number of streams when they all overlap."""
    busy = sum(end - start for _, _, start, end in events)
    span = max(e for *_, e in events) - min(s for _, _, s, _ in events)
    return busy / span


SLICES, ROWS, COLS = 16, 256, 4096  # each [256, 4096] slice too small to fill the GPU alone


@pytest.mark.timing  # compute-sanitizer serializes launches: SANITIZE=1 leaves it out
@pytest.mark.parametrize("streams", [1, 4])
def test_iterations_on_different_streams_overlap(
    rng: np.random.Generator, torch: Any, streams: int
) -> None:
    fusion = load("kernel_segments")  # exp, then a row sum, of each slice: two kernels
    compiler = FusionCompiler(fusion, should_merge=never_merge, streams=streams)
    host_x = numpy_inputs(fusion, [(SLICES, ROWS, COLS)], rng)[0]
    x = torch.from_numpy(host_x).cuda()
    compiler.execute([x])
    torch.cuda.synchronize()
    (out,), events, caller, done, returned_early = timed_run(torch, compiler, [x], streams)

    assert returned_early  # the host queued every slice without waiting for the GPU
    assert len(events) == 2 * SLICES
    # iteration i runs both its kernels on stream i mod `streams` of the pool
    iteration_streams = [events[2 * i][1] for i in range(SLICES)]
    assert all(events[2 * i + 1][1] == iteration_streams[i] for i in range(SLICES))
    assert len(set(iteration_streams)) == streams and caller not in iteration_streams
    for i in range(SLICES):
        same = iteration_streams[i] == iteration_streams[(i + streams) % SLICES]
        other = iteration_streams[i] == iteration_streams[(i + 1) % SLICES]
        assert same and (streams == 1 or not other)
    eps = 2e-3  # ms: event timestamps are exact to about a microsecond
    # nothing starts before the caller's stream reaches the program (after the spin kernel)...
    assert min(start for _, _, start, _ in events) >= -eps
    # ...launches on one stream run in order...
    for s in set(iteration_streams):
        mine = [(a, b) for _, t, a, b in events if t == s]
        assert all(b1 <= a2 + eps for (_, b1), (a2, _) in pairwise(mine))
    # ...and the caller's stream is past every slice when the program returns to it
    assert done >= max(end for *_, end in events) - eps
    ratio = concurrency(events)
    if streams == 1:
        assert ratio <= 1.0 + 0.05, f"one stream, yet launches overlap: {ratio:.2f}"
    else:
        assert ratio >= 1.5, f"launches on {streams} streams barely overlap: {ratio:.2f}"
        best = max(
            (min(b1, b2) - max(a1, a2)) / max(min(b1 - a1, b2 - a2), eps)
            for _, s1, a1, b1 in events
            for _, s2, a2, b2 in events
            if s1 != s2
        )
        assert best >= 0.5, f"no two launches on different streams overlap by half: {best:.2f}"
    torch.cuda.synchronize()
    expected = evaluate(fusion, [host_x], compute_dtype=np.float64)
    assert_outputs_close([out.cpu().numpy()], expected, COLS)


def test_the_callers_stream_sees_complete_results(rng: np.random.Generator, torch: Any) -> None:
    fusion = load("kernel_segments")
    compiler = FusionCompiler(fusion, should_merge=never_merge, streams=4)
    shape = (SLICES, ROWS, COLS)
    warm = torch.from_numpy(numpy_inputs(fusion, [shape], rng)[0]).cuda()
    compiler.execute([warm])  # compiled
    host_x = numpy_inputs(fusion, [shape], rng)[0]  # new values: no stale output can match
    x = torch.from_numpy(host_x).cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # x is ready on the side stream
    with torch.cuda.stream(side):
        block_stream(torch, side)  # the slices start late: a missing join would show
        (out,) = compiler.execute([x])
        copy = out.clone()  # issued on the caller's stream right away, no host synchronize
        total = copy.double().sum()
    side.synchronize()
    expected = evaluate(fusion, [host_x], compute_dtype=np.float64)
    assert_outputs_close([copy.cpu().numpy()], expected, COLS)
    assert math.isclose(float(total), float(expected[0].sum()), rel_tol=1e-5)
