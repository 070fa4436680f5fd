"""Segmented fusions on the GPU: the fusion cache segments, lowers to a host program and runs it
through the host evaluator; results are checked against the float64 numpy reference.

The issue's segmentation cases (layer norm, a sum broadcast back to another tensor, segment_set
splits, a row reduction feeding a column reduction, a merge rule that refuses every merge), a
fusion of five segments, intermediates freed (the driver pool's usage is back where it started
after a call), the cache (a hit for a repeated signature, a reused program for a new shape with
the same heuristics, a new program for other heuristics), torch's current stream, two threads
calling `execute` on one definition at once, `fuser-run` on a segmented fusion, and a
hand-written host program spreading rows over the evaluator's pool of streams.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import gc
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_helpers import assert_outputs_close, context, numpy_of, parse_fusion
from xdsl.parser import Parser

from fuser import DataType, FusionDefinition
from fuser.compiler import FusionCompiler
from fuser.dialects import fusion as fu
from fuser.dialects import host
from fuser.run import main
from fuser.runtime import driver
from fuser.runtime.arrays import DeviceArray
from fuser.runtime.calls import InputLayout, read_inputs
from fuser.runtime.compiled_kernel import CompiledKernel
from fuser.runtime.dtypes import numpy_dtype, round_to_float
from fuser.runtime.executor import (
    KernelExecutor,
    KernelParams,
    LaunchPlan,
    ScalarParam,
    TensorParam,
)
from fuser.runtime.host_evaluator import HostEvaluator
from fuser.runtime.kernel_binding import ExecutorKernel
from fuser.runtime.reference import evaluate
from fuser.runtime.signature import InputMeta
from fuser.transforms.segment_rules import never_merge

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
LIT = ROOT / "lit_tests" / "transforms" / "lower_to_host"


def load(path: Path) -> fu.FusionOp:
    return parse_fusion(path.read_text())


def random_inputs(
    fusion: fu.FusionOp, shapes: Sequence[tuple[int, ...]], rng: np.random.Generator
) -> list[np.ndarray]:
    """Normal values around 1 rounded once to each input's dtype: a row sum that divides is then
    about its length, never near zero (around 0.25, one row of 33 summed to -2e-4 and its
    quotients lost 4e-4 of their value to f32 rounding, a fault of the data, not the kernel)."""
    it = iter(shapes)
    inputs = []
    for arg in fusion.inputs:
        dtype = numpy_dtype(arg.type.element_type)  # type: ignore[attr-defined]
        inputs.append(round_to_float(rng.standard_normal(next(it)) + 1.0, dtype))
    return inputs


# --------------------------------------------------------------------------------------------
# The cases, numpy in and out (copied to the device and back)

CASES = [
    # (file, shapes, schedulers of the segments run)
    ("layer_norm", [(64, 1024), (1024,), (1024,)], ["persistent"]),
    ("sum_broadcast", [(127, 33), (127, 33)], ["persistent"]),
    ("sum_broadcast", [(64, 100000), (64, 100000)], ["reduction", "pointwise"]),
    ("segment_set", [(33, 1000), (33, 1000)], ["pointwise"] * 3),
    ("segment_set", [(1, 1), (1, 1)], ["pointwise"] * 3),
    # the column sum split beside the row max (`split-reductions`): one read of x
    ("two_reductions", [(513, 1024)], ["inner_outer", "reduction"]),
    ("five_segments", [(300, 3000), (3000,)], None),
]


@pytest.mark.parametrize(("name", "shapes", "schedulers"), CASES)
def test_cases_against_the_reference(
    rng: np.random.Generator,
    name: str,
    shapes: list[tuple[int, ...]],
    schedulers: list[str] | None,
) -> None:
    path = ROOT / "examples" / "layer_norm.mlir" if name == "layer_norm" else LIT / f"{name}.mlir"
    fusion = load(path)
    compiler = FusionCompiler(fusion)
    inputs = random_inputs(fusion, shapes, rng)
    outputs = compiler.execute(inputs)
    segments = compiler.last_segments()
    if schedulers is not None:
        assert [s.scheduler for s in segments] == schedulers
    else:
        assert len(segments) == 5
    expected = evaluate(fusion, inputs, compute_dtype=np.float64)
    assert_outputs_close(outputs, expected, max(math.prod(s) for s in shapes))
    # a hit gives the same results on new data
    inputs = random_inputs(fusion, shapes, rng)
    assert_outputs_close(
        compiler.execute(inputs),
        evaluate(fusion, inputs, compute_dtype=np.float64),
        max(math.prod(s) for s in shapes),
    )
    assert (compiler.misses, compiler.hits) == (1, 1)


def test_a_merge_rule_that_refuses_every_merge(rng: np.random.Generator) -> None:
    fusion = load(LIT / "merge_none.mlir")
    compiler = FusionCompiler(fusion, should_merge=never_merge)
    shapes = [(32, 1000)]
    inputs = random_inputs(fusion, shapes, rng)
    outputs = compiler.execute(inputs)
    assert [s.scheduler for s in compiler.last_segments()] == [
        "reduction",
        "pointwise",
        "pointwise",
        "pointwise",
        "pointwise",
    ]
    assert_outputs_close(outputs, evaluate(fusion, inputs, compute_dtype=np.float64), 1000)


# --------------------------------------------------------------------------------------------
# Five segments on torch tensors; torch's current stream


def five(torch: Any, rng: np.random.Generator, rows: int, cols: int) -> tuple[Any, list, list]:
    fusion = load(LIT / "five_segments.mlir")
    inputs = random_inputs(fusion, [(rows, cols), (cols,)], rng)
    x = torch.from_numpy(inputs[0].view(np.int16)).view(torch.bfloat16).cuda()
    w = torch.from_numpy(inputs[1]).cuda()
    return fusion, inputs, [x, w]


@pytest.mark.parametrize(("rows", "cols"), [(3, 3000), (127, 1), (1000, 777)])
def test_five_segments_torch(rng: np.random.Generator, torch: Any, rows: int, cols: int) -> None:
    fusion, inputs, tensors = five(torch, rng, rows, cols)
    compiler = FusionCompiler(fusion)
    for _ in range(3):  # the first call compiles, the next take the fast path
        outputs = compiler.execute(tensors)
        assert all(isinstance(o, torch.Tensor) and o.is_cuda for o in outputs)
        expected = evaluate(fusion, inputs, compute_dtype=np.float64)
        assert_outputs_close([numpy_of(torch, o) for o in outputs], expected, rows * cols)
    assert len(compiler.last_segments()) == 5
    assert (compiler.misses, compiler.hits) == (1, 2)
    assert compiler.last_cuda_code().count('extern "C" __global__') == 5
    assert compiler.host_ir().count("host.launch") == 5


def test_torch_current_stream(rng: np.random.Generator, torch: Any) -> None:
    fusion, inputs, tensors = five(torch, rng, 256, 512)
    compiler = FusionCompiler(fusion)
    compiler.execute(tensors)  # compiled
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            outputs = compiler.execute(tensors)
    side.synchronize()
    expected = evaluate(fusion, inputs, compute_dtype=np.float64)
    assert_outputs_close([numpy_of(torch, o) for o in outputs], expected, 256 * 512)


# --------------------------------------------------------------------------------------------
# Memory, cache, threads


def chain() -> FusionDefinition:
    """exp((a + b) * a) - a with segment_sets between: three kernels, two intermediates."""
    with FusionDefinition("chain") as fd:
        a = fd.define_tensor([-1, -1], DataType.Float)
        b = fd.define_tensor([-1, -1], DataType.Float)
        x = fd.ops.segment_set(fd.ops.add(a, b))
        y = fd.ops.segment_set(fd.ops.mul(x, a))
        fd.add_output(fd.ops.sub(fd.ops.exp(y), a))
    return fd


def _numpy_pair(rng: np.random.Generator, shape: tuple[int, int]) -> list[np.ndarray]:
    return [rng.standard_normal(shape).astype(np.float32) * 0.5 for _ in range(2)]


@pytest.mark.pool_accounting
def test_pool_usage_returns_to_its_start(rng: np.random.Generator, torch: Any) -> None:
    fd = chain()
    shape = (1000, 1027)
    a, b = _numpy_pair(rng, shape)
    expected = fd.reference([a, b], compute_dtype=np.float64)
    da, db = DeviceArray.from_numpy(a), DeviceArray.from_numpy(b)
    fd.execute([da, db])  # compiles
    gc.collect()  # arrays an earlier test left to the collector must not be freed mid-test
    driver.synchronize()
    start = driver.pool_used_bytes()
    (out,) = fd.execute([da, db])
    driver.synchronize()
    # the output is a DeviceArray from the pool; the intermediates are freed
    assert out.nbytes <= driver.pool_used_bytes() - start < 3 * out.nbytes
    assert_outputs_close([out.numpy()], expected, 1)
    del out
    gc.collect()
    driver.synchronize()
    assert driver.pool_used_bytes() == start
    # torch tensors: outputs and the intermediates' workspace come from torch's allocator
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    fd.execute([ta, tb])
    torch.cuda.synchronize()
    start = driver.pool_used_bytes()
    (tout,) = fd.execute([ta, tb])
    torch.cuda.synchronize()
    torch_start = torch.cuda.memory_allocated()
    for _ in range(5):
        (tout,) = fd.execute([ta, tb])
    torch.cuda.synchronize()
    assert driver.pool_used_bytes() == start
    # steady state: each call's workspace is back in torch's cache, one output is alive (no
    # growth over five calls; torch may have released a block of its own meanwhile)
    assert torch.cuda.memory_allocated() <= torch_start
    assert_outputs_close([tout.cpu().numpy()], expected, 1)


def test_cache_hit_heuristic_reuse_and_new_program(rng: np.random.Generator, torch: Any) -> None:
    fd = chain()
    for shape in [(64, 1024), (64, 1024), (96, 1024), (7, 1023)]:
        a, b = _numpy_pair(rng, shape)
        (out,) = fd.execute([torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()])
        assert_outputs_close([out.cpu().numpy()], fd.reference([a, b], compute_dtype=np.float64), 1)
    info = fd.cache_info()
    assert (info["hits"], info["misses"], info["signatures"]) == (1, 3, 3)
    # (96, 1024) keeps the heuristics of (64, 1024); odd rows of 1023 do not (vector width)
    assert info["heuristic_reuses"] == 1
    assert (info["programs"], info["kernels"]) == (2, 6)


def test_two_threads_execute_one_definition(rng: np.random.Generator) -> None:
    fd = chain()
    shapes = [(31, 257), (64, 64)]
    sets = []
    for shape in shapes:
        a, b = _numpy_pair(rng, shape)
        sets.append(
            (
                [DeviceArray.from_numpy(a), DeviceArray.from_numpy(b)],
                fd.reference([a, b], compute_dtype=np.float64),
            )
        )
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def work(k: int) -> None:
        try:
            driver.get_device(0).make_current()
            barrier.wait()
            for i in range(30):
                inputs, expected = sets[(i + k) % len(sets)]
                (out,) = fd.execute(inputs)
                assert_outputs_close([out.numpy()], expected, 1)
        except BaseException as e:  # reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]
    info = fd.cache_info()
    assert info["hits"] + info["misses"] == 60 and info["signatures"] == 2


# --------------------------------------------------------------------------------------------
# fuser-run


def test_fuser_run_times_a_segmented_fusion(capsys: pytest.CaptureFixture[str]) -> None:
    path = LIT / "segment_set.mlir"
    status = main([str(path), "--shapes", "300x1000,300x1000", "--iters", "3", "--warmup", "1"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "@forced for sm_" in out and "3 kernels" in out
    assert "output #0 float32 (300, 1000): ok" in out and "output #1 float32 (300, 1000): ok" in out
    assert "@forced (3 kernels):" in out


# --------------------------------------------------------------------------------------------
# The evaluator's streams on a real device: rows on a pool of streams, events between them

ROW_KERNEL = (
    "#include <fuser/core.cuh>\n"
    + r"""
extern "C" __global__ void scale_row(Tensor<float, 1> x, float a, Tensor<float, 1> y) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < x.size[0]) y.data[i * y.stride[0]] = x.data[i * x.stride[0]] * a;
}
"""
)

ROWS = """
host.program @rows(%x: tensor<?x?xf32>, %a: f32) -> tensor<?x?xf32> {
  %b = host.dim %x[0] : tensor<?x?xf32>
  %d = host.dim %x[1] : tensor<?x?xf32>
  %y = host.allocate(%b, %d) : tensor<?x?xf32>
  %main = host.get_current_stream : !host.stream
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  host.for %i = %c0 to %b step %c1 {
    %slot = arith.remui %i, %c4 : index
    %s = host.stream %slot
    host.set_current_stream %s
    host.synchronize %main
    %xi = host.alias_select %x[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %yi = host.alias_select %y[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %t = host.allocate(%d) : tensor<?xf32>
    %gx, %gy, %gz = host.grid @scale_row ins(%xi, %a : tensor<?xf32>, f32)
    host.launch @scale_row grid(%gx, %gy, %gz) block [128, 1, 1] smem 0
        ins(%xi, %a : tensor<?xf32>, f32) outs(%t : tensor<?xf32>)
    host.launch @scale_row grid(%gx, %gy, %gz) block [128, 1, 1] smem 0
        ins(%t, %a : tensor<?xf32>, f32) outs(%yi : tensor<?xf32>)
    host.deallocate %t : tensor<?xf32>
  }
  host.set_current_stream %main
  host.for %j = %c0 to %c4 step %c1 {
    %s = host.stream %j
    host.synchronize %s
  }
  host.return %y : tensor<?x?xf32>
}
"""


@pytest.mark.pool_accounting
def test_rows_on_a_pool_of_streams(rng: np.random.Generator) -> None:
    f32 = np.dtype(np.float32)
    params = KernelParams((TensorParam(1, f32), ScalarParam(f32)), (TensorParam(1, f32),))

    def plan(metas: tuple[InputMeta | None, ...], device: int) -> LaunchPlan:
        (n,) = metas[0].shape  # type: ignore[union-attr]
        return LaunchPlan((max(1, -(-n // 128)), 1, 1), (128, 1, 1), 0, ((n,),))

    executor = KernelExecutor(CompiledKernel(ROW_KERNEL, "scale_row", block_size=128), params, plan)
    module = Parser(context(), ROWS).parse_module()
    program = next(op for op in module.walk() if isinstance(op, host.ProgramOp))
    evaluator = HostEvaluator(program, {"scale_row": ExecutorKernel(executor)})
    evaluator.compile_kernels()
    layout = InputLayout("rows", ("input #0", "input #1"), (True, False))
    for rows, cols in [(1, 1), (7, 1000), (33, 4097)]:
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        a = float(rng.uniform(0.5, 2.0))
        dx = DeviceArray.from_numpy(x)
        gc.collect()  # arrays an earlier test left to the collector must not be freed mid-call
        driver.synchronize()
        start = driver.pool_used_bytes()
        (y,) = evaluator.run(read_inputs([dx, a], layout))
        af = np.float32(a)
        np.testing.assert_allclose(y.numpy(), (x * af) * af, rtol=1e-6)
        driver.synchronize()
        assert driver.pool_used_bytes() - start >= y.nbytes  # the temporaries are freed
        del y
        gc.collect()
        driver.synchronize()
        assert driver.pool_used_bytes() == start
