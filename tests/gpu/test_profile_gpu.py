"""`fd.execute(inputs, profile=True)` and `fd.profile()` on the GPU.

Covered: one kernel (torch and numpy inputs: the upload stays outside the timing), a segmented
fusion of three kernels, a stream-parallel program whose launches run in loops on four streams,
an `alias_input` output, a zero-size input (no launch). Each profile's kernels are those the
fusion runs (names and schedulers as `last_segments`), their launch as the program's, their
bytes exact, their times positive and within the call's span, and the outputs equal an
unprofiled call's. Nothing here is a performance target (those live in benchmarks/); the
bandwidth of a large kernel is only checked to be a plausible fraction of the device's copy
bandwidth (a `timing` test: compute-sanitizer slows kernels and copies unevenly).

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from gpu_helpers import parse_fusion

from fuser import DataType, FusionDefinition
from fuser.compiler import FusionCompiler
from fuser.profiler import FusionProfile

pytestmark = pytest.mark.gpu


def _consistent(profile: FusionProfile) -> None:
    """What every profile of a call that launched kernels satisfies (under compute-sanitizer
    too, which slows kernels and copies alike)."""
    assert profile.host_time_ms > 0 and profile.cuda_evt_time_ms > 0 and profile.copy_gbs > 0
    for k in profile.kernel_profiles:
        assert 0 < k.time_ms <= profile.cuda_evt_time_ms + 1e-3, k
        assert k.registers > 0 and math.prod(k.grid) > 0 and math.prod(k.block) > 0
        assert k.percentage_peak_bandwidth > 0, k
    assert profile.kernel_time_ms >= max(k.time_ms for k in profile.kernel_profiles)


@pytest.mark.timing
def test_the_bandwidth_is_a_plausible_fraction_of_copy(rng: np.random.Generator) -> None:
    """A large copy-like kernel runs at a sizeable fraction of the measured copy bandwidth, and
    never far above it (the events time the kernel, not the host's launch)."""
    fd = _add_mul("add_mul_large")
    a, b = (rng.standard_normal((4096, 4096)).astype(np.float32) for _ in "ab")
    fd.execute([a, b])
    fd.execute([a, b], profile=True)
    profile = fd.profile()
    assert profile.copy_gbs > 100  # any data-centre GPU copies faster than 100 GB/s
    (k,) = profile.kernel_profiles
    assert 30 < k.percentage_peak_bandwidth < 130, profile


def _add_mul(name: str = "add_mul") -> FusionDefinition:
    with FusionDefinition(name) as fd:
        a = fd.define_tensor([-1, -1], DataType.Float)
        b = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.mul(fd.ops.add(a, b), a))
    return fd


def test_one_kernel_with_torch_inputs(rng: np.random.Generator, torch: Any) -> None:
    fd = _add_mul()
    shape = (4097, 1023)
    a, b = (torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).cuda() for _ in "ab")
    (out,) = fd.execute([a, b], profile=True)
    profile = fd.profile()
    (k,) = profile.kernel_profiles
    (segment,) = fd.last_segments()
    assert (k.name, k.scheduler) == (segment.kernel, segment.scheduler) == (k.name, "pointwise")
    n = math.prod(shape)
    assert (k.input_bytes, k.output_bytes) == (8 * n, 4 * n)
    assert (profile.input_bytes, profile.output_bytes) == (8 * n, 4 * n)
    assert profile.compile_time_ms > 0  # this call compiled the kernel
    _consistent(profile)
    assert torch.equal(out, (a + b) * a)
    fd.execute([a, b], profile=True)
    assert fd.profile().compile_time_ms == 0 and fd.profile() is not profile
    print(fd.profile())


def test_one_kernel_with_numpy_inputs(rng: np.random.Generator) -> None:
    """Host inputs are uploaded before the clock starts: the kernel is the call's span."""
    fd = _add_mul("add_mul_numpy")
    a, b = (rng.standard_normal((3, 1 << 20)).astype(np.float32) for _ in "ab")
    (expected,) = fd.execute([a, b])
    (out,) = fd.execute([a, b], profile=True)
    np.testing.assert_array_equal(out, expected)
    profile = fd.profile()
    _consistent(profile)
    assert profile.cuda_evt_time_ms == profile.kernel_profiles[0].time_ms


def _three_kernels() -> FusionDefinition:
    with FusionDefinition("three") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.ops.segment_set(fd.ops.exp(x))
        s = fd.ops.sum(y, [1], keepdim=True)  # a reduction kernel
        fd.add_output(fd.ops.segment_set(fd.ops.div(y, s)))
    return fd


def test_a_segmented_fusion_times_each_kernel(rng: np.random.Generator, torch: Any) -> None:
    fd = _three_kernels()
    x = torch.from_numpy(rng.standard_normal((1000, 4099)).astype(np.float32)).cuda()
    (expected,) = fd.execute([x])
    (out,) = fd.execute([x], profile=True)
    assert torch.equal(out, expected)
    profile = fd.profile()
    segments = fd.last_segments()
    assert len(segments) >= 2
    assert [(k.name, k.scheduler) for k in profile.kernel_profiles] == [
        (s.kernel, s.scheduler) for s in segments
    ]
    _consistent(profile)
    assert profile.kernel_time_ms <= profile.cuda_evt_time_ms + 1e-3
    assert profile.input_bytes == x.numel() * 4 and profile.output_bytes == x.numel() * 4
    text = str(profile)
    assert all(s.kernel in text for s in segments)


STREAMED = """
fusion.fusion @streamed(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %e : tensor<?x?xf32>
}
"""


def test_a_stream_parallel_program_times_each_slice(rng: np.random.Generator) -> None:
    """A launch per slice, in a loop over four streams: each is timed on its own stream."""
    fusion = parse_fusion(STREAMED)
    compiler = FusionCompiler(fusion, streams=4)
    x = rng.standard_normal((6, 1 << 18)).astype(np.float32)
    (expected,) = compiler.execute([x])
    (out,) = compiler.execute([x])
    outputs, profile = compiler.profile([x])
    np.testing.assert_array_equal(outputs[0], expected)
    np.testing.assert_array_equal(out, expected)
    assert profile.segments == 6
    assert len({k.stream for k in profile.kernel_profiles}) == 4
    assert all(k.input_bytes == k.output_bytes == x[0].nbytes for k in profile.kernel_profiles)
    _consistent(profile)


def test_an_aliased_output_is_written_into_its_input(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("alias_profile") as fd:
        x = fd.define_tensor([-1], DataType.Float)
        r = fd.define_tensor([-1], DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.mul(r, 0.5), x), alias_input=r)
        fd.add_output(fd.ops.exp(x))
    x = torch.from_numpy(rng.standard_normal(5000).astype(np.float32)).cuda()
    r = torch.from_numpy(rng.standard_normal(5000).astype(np.float32)).cuda()
    expected = r * 0.5 + x
    (e,) = fd.execute([x, r], profile=True)
    torch.testing.assert_close(r, expected)
    torch.testing.assert_close(e, torch.exp(x))
    _consistent(fd.profile())


def test_an_empty_input_launches_nothing(torch: Any) -> None:
    fd = _add_mul("add_mul_empty")
    a = torch.empty((0, 7), device="cuda")
    (out,) = fd.execute([a, a], profile=True)
    assert tuple(out.shape) == (0, 7)
    profile = fd.profile()
    assert profile.segments == 0 and profile.cuda_evt_time_ms == 0
    assert profile.input_bytes == profile.output_bytes == 0
