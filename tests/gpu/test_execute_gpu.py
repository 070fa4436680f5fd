"""Fusions run on the GPU through `FusionCompiler.execute`, checked against the float64 numpy
reference: pointwise ops on odd sizes in f32/f16/bf16, broadcasts along every axis, strided
torch inputs, each kind of input (numpy, torch, cupy, DeviceArray) giving back the same kind,
the signature cache, torch's current stream, and the input errors.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present; torch
and cupy tests are skipped where those are not installed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from definitions import cpu_scalar_scale, running_mean_update
from gpu_helpers import numpy_of, torch_of

from fuser import DataType, FusionDefinition
from fuser.compiler import FusionCompiler
from fuser.errors import InputError
from fuser.run import main
from fuser.runtime import driver
from fuser.runtime.arrays import BFLOAT16, DeviceArray
from fuser.runtime.dtypes import round_to_float
from fuser.validation import compare, host_array

pytestmark = pytest.mark.gpu

SIZES = [1, 3, 127, 1000, 4097, 65537]
FLOATS = {DataType.Float: np.dtype(np.float32), DataType.Half: np.dtype(np.float16)}
FLOATS[DataType.BFloat16] = BFLOAT16


@pytest.fixture
def cupy(device: driver.Device) -> Any:
    return pytest.importorskip("cupy")


# --------------------------------------------------------------------------------------------
# Fusions and data


def _to_f32(fd: FusionDefinition, t: Any, dtype: DataType) -> Any:
    return t if dtype in (DataType.Float, DataType.Double) else fd.ops.cast(t, DataType.Float)


def _back(fd: FusionDefinition, t: Any, dtype: DataType) -> Any:
    return t if dtype in (DataType.Float, DataType.Double) else fd.ops.cast(t, dtype)


def gelu_scale(dtype: DataType) -> FusionDefinition:
    """1-D: gelu_tanh((x + y) * s) and y - sigmoid(x), in f32, stored as `dtype`."""
    with FusionDefinition("gelu_scale") as fd:
        x = fd.define_tensor([-1], dtype)
        y = fd.define_tensor([-1], dtype)
        s = fd.define_scalar(dtype=DataType.Float)
        xf, yf = _to_f32(fd, x, dtype), _to_f32(fd, y, dtype)
        g = fd.ops.gelu(fd.ops.mul(fd.ops.add(xf, yf), s), approximate="tanh")
        fd.add_output(_back(fd, g, dtype))
        fd.add_output(_back(fd, fd.ops.sub(yf, fd.ops.sigmoid(xf)), dtype))
    return fd


def broadcasts(dtype: DataType) -> FusionDefinition:
    """3-D: x * a[:, None, None] + b[None, :, None] - c[None, None, :] * m[:, None, :] + u,
    u: [1, ?, 1] (static broadcast dims); also outputs b * 2 (an output smaller than x)."""
    with FusionDefinition("broadcasts") as fd:
        x = fd.define_tensor([-1, -1, -1], dtype)
        a = fd.define_tensor([-1], dtype)
        b = fd.define_tensor([-1], dtype)
        c = fd.define_tensor([-1], dtype)
        m = fd.define_tensor([-1, -1], dtype)
        u = fd.define_tensor([1, -1, 1], dtype)
        shape = x.shape()
        xf = _to_f32(fd, x, dtype)
        ab = fd.ops.broadcast_in_dim(_to_f32(fd, a, dtype), shape=shape, broadcast_dims=[0])
        bb = fd.ops.broadcast_in_dim(_to_f32(fd, b, dtype), shape=shape, broadcast_dims=[1])
        cb = fd.ops.broadcast_in_dim(_to_f32(fd, c, dtype), shape=shape, broadcast_dims=[2])
        mb = fd.ops.broadcast_in_dim(_to_f32(fd, m, dtype), shape=shape, broadcast_dims=[0, 2])
        ub = fd.ops.broadcast_in_dim(_to_f32(fd, u, dtype), shape=shape, broadcast_dims=[0, 1, 2])
        out = fd.ops.add(fd.ops.sub(fd.ops.add(fd.ops.mul(xf, ab), bb), fd.ops.mul(cb, mb)), ub)
        fd.add_output(_back(fd, out, dtype))
        fd.add_output(_back(fd, fd.ops.mul(_to_f32(fd, b, dtype), 2.0), dtype))
    return fd


def integer_ops() -> FusionDefinition:
    """i32/i64/bool: where(x > y, x * y, x - 3) in i64, and the comparison itself."""
    with FusionDefinition("integer_ops") as fd:
        x = fd.define_tensor([-1, -1], DataType.Int32)
        y = fd.define_tensor([-1, -1], DataType.Int)
        gt = fd.ops.gt(x, y)
        fd.add_output(fd.ops.where(gt, fd.ops.mul(x, y), fd.ops.sub(x, 3)))
        fd.add_output(gt)
    return fd


def random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Normal floats rounded to `dtype` (never all zeros), small integers."""
    if dtype.kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    return round_to_float(rng.standard_normal(shape), dtype)


def assert_matches(fd: FusionDefinition, host_inputs: list[Any], outputs: list[np.ndarray]):
    expected = fd.reference(host_inputs, compute_dtype=np.float64)
    assert len(outputs) == len(expected)
    for i, (out, ref) in enumerate(zip(outputs, expected, strict=True)):
        problem = compare(out, ref, f"output #{i}")
        assert problem is None, problem


# --------------------------------------------------------------------------------------------
# Pointwise fusions, every size and float dtype, each kind of input


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", list(FLOATS), ids=lambda d: d.name)
def test_pointwise_device_arrays(rng: np.random.Generator, n: int, dtype: DataType) -> None:
    fd = gelu_scale(dtype)
    compiler = FusionCompiler(fd.fusion)
    x, y = random(rng, (n,), FLOATS[dtype]), random(rng, (n,), FLOATS[dtype])
    s = float(rng.uniform(0.5, 2.0))
    outs = compiler.execute([DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), s])
    assert all(isinstance(o, DeviceArray) for o in outs)
    assert [o.dtype for o in outs] == [FLOATS[dtype]] * 2 and outs[0].shape == (n,)
    assert_matches(fd, [x, y, s], [o.numpy() for o in outs])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", list(FLOATS), ids=lambda d: d.name)
def test_pointwise_torch(rng: np.random.Generator, torch: Any, n: int, dtype: DataType) -> None:
    fd = gelu_scale(dtype)
    compiler = FusionCompiler(fd.fusion)
    x, y = random(rng, (n,), FLOATS[dtype]), random(rng, (n,), FLOATS[dtype])
    s = float(rng.uniform(0.5, 2.0))
    tx, ty = torch_of(torch, x), torch_of(torch, y)
    for _ in range(3):  # the first call compiles, the next take the fast path
        outs = compiler.execute([tx, ty, s])
        assert all(isinstance(o, torch.Tensor) and o.is_cuda for o in outs)
        assert_matches(fd, [x, y, s], [numpy_of(torch, o) for o in outs])
    assert (compiler.misses, compiler.hits) == (1, 2)


def test_kernels_from_the_kernel_cache_run(
    rng: np.random.Generator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new compiler (as in a new process) loads the cubins an earlier one kept on disk, and
    they run correctly."""
    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    n = 4097
    x, y = random(rng, (n,), np.dtype(np.float32)), random(rng, (n,), np.dtype(np.float32))
    s = float(rng.uniform(0.5, 2.0))
    fd = gelu_scale(DataType.Float)
    FusionCompiler(fd.fusion).execute([DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), s])
    assert len(list((tmp_path / "kernels").glob("*.cubin"))) == 1
    compiler = FusionCompiler(gelu_scale(DataType.Float).fusion)
    outs = compiler.execute([DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), s])
    assert_matches(fd, [x, y, s], [o.numpy() for o in outs])
    (variant,) = compiler.builder._variants.values()
    assert variant.executor.kernel.log == "cubin from the kernel cache"


@pytest.mark.parametrize("n", [1, 127, 4097])
def test_pointwise_numpy_in_numpy_out(rng: np.random.Generator, n: int) -> None:
    fd = gelu_scale(DataType.BFloat16)
    compiler = FusionCompiler(fd.fusion)
    x, y = random(rng, (n,), BFLOAT16), random(rng, (n,), BFLOAT16)
    outs = compiler.execute([x, y, 1.5])
    assert all(isinstance(o, np.ndarray) and o.dtype == BFLOAT16 for o in outs)
    assert_matches(fd, [x, y, 1.5], outs)


@pytest.mark.parametrize("n", [3, 1000, 65537])
def test_pointwise_cupy(rng: np.random.Generator, cupy: Any, n: int) -> None:
    fd = gelu_scale(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    x, y = random(rng, (n,), np.dtype(np.float32)), random(rng, (n,), np.dtype(np.float32))
    outs = compiler.execute([cupy.asarray(x), cupy.asarray(y), -0.75])
    assert all(isinstance(o, cupy.ndarray) for o in outs)
    assert_matches(fd, [x, y, -0.75], [cupy.asnumpy(o) for o in outs])


def test_integer_and_bool_outputs(rng: np.random.Generator, torch: Any) -> None:
    fd = integer_ops()
    compiler = FusionCompiler(fd.fusion)
    x = random(rng, (127, 33), np.dtype(np.int32))
    y = random(rng, (127, 33), np.dtype(np.int64))
    outs = compiler.execute([torch_of(torch, x), torch_of(torch, y)])
    assert [o.dtype for o in outs] == [torch.int64, torch.bool]
    assert_matches(fd, [x, y], [numpy_of(torch, o) for o in outs])
    outs = compiler.execute([DeviceArray.from_numpy(x), DeviceArray.from_numpy(y)])
    assert_matches(fd, [x, y], [o.numpy() for o in outs])


# --------------------------------------------------------------------------------------------
# Broadcasts and layouts


def _broadcast_inputs(
    rng: np.random.Generator, shape: tuple[int, int, int], dtype: np.dtype
) -> list[np.ndarray]:
    a, b, c = shape
    return [
        random(rng, shape, dtype),
        random(rng, (a,), dtype),
        random(rng, (b,), dtype),
        random(rng, (c,), dtype),
        random(rng, (a, c), dtype),
        random(rng, (1, b, 1), dtype),
    ]


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 1, 127), (5, 127, 3), (2, 3, 4097), (127, 9, 1)])
@pytest.mark.parametrize("dtype", list(FLOATS), ids=lambda d: d.name)
def test_broadcast_on_every_axis(
    rng: np.random.Generator, shape: tuple[int, int, int], dtype: DataType
) -> None:
    fd = broadcasts(dtype)
    host = _broadcast_inputs(rng, shape, FLOATS[dtype])
    outs = FusionCompiler(fd.fusion).execute([DeviceArray.from_numpy(h) for h in host])
    assert outs[0].shape == shape and outs[1].shape == (shape[1],)
    assert_matches(fd, host, [o.numpy() for o in outs])


def test_strided_torch_inputs(rng: np.random.Generator, torch: Any) -> None:
    """Transposed, sliced and expanded (stride 0) torch tensors are passed with their strides."""
    fd = broadcasts(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    f32 = np.dtype(np.float32)
    shape = (7, 129, 33)
    host = _broadcast_inputs(rng, shape, f32)
    # x as a permuted view of a (33, 7, 129) tensor; m as a transposed (33, 7) tensor
    x = torch_of(torch, np.ascontiguousarray(host[0].transpose(2, 0, 1))).permute(1, 2, 0)
    m = torch_of(torch, np.ascontiguousarray(host[4].T)).t()
    # c as every other element of a longer tensor; a as an expanded single value
    c_long = np.empty(2 * shape[2], f32)
    c_long[::2] = host[3]
    c = torch_of(torch, c_long)[::2]
    host[1] = np.full(shape[0], host[1][0], f32)
    a = torch_of(torch, host[1][:1]).expand(shape[0])
    assert not x.is_contiguous() and not m.is_contiguous() and c.stride() == (2,)
    assert a.stride() == (0,)
    inputs = [x, a, torch_of(torch, host[2]), c, m, torch_of(torch, host[5])]
    outs = compiler.execute(inputs)
    assert_matches(fd, host, [numpy_of(torch, o) for o in outs])
    # the same values, contiguous: another signature (other strides), the same results
    outs = compiler.execute([t.contiguous() for t in inputs])
    assert compiler.misses == 2
    assert_matches(fd, host, [numpy_of(torch, o) for o in outs])


def test_misaligned_torch_input(rng: np.random.Generator, torch: Any) -> None:
    """A tensor starting one element into its storage is not 16-byte aligned: a signature of
    its own, whose kernel must not use vector accesses that need the alignment."""
    fd = gelu_scale(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    x, y = random(rng, (4097,), np.dtype(np.float32)), random(rng, (4098,), np.dtype(np.float32))
    ty = torch_of(torch, y)[1:]
    assert ty.data_ptr() % 16 == 4
    key = compiler.signature_of([torch_of(torch, x), ty, 1.0])
    # per tensor: rank, extent, stride, dtype code, alignment (x: 16 bytes, y: 4 bytes)
    assert key[:10] == (1, 4097, 1, 3, 16, 1, 4097, 1, 3, 4)
    outs = compiler.execute([torch_of(torch, x), ty, 1.0])
    assert_matches(fd, [x, y[1:], 1.0], [numpy_of(torch, o) for o in outs])


def test_empty_tensors(rng: np.random.Generator, torch: Any) -> None:
    fd = gelu_scale(DataType.Float)
    x = random(rng, (0,), np.dtype(np.float32))
    outs = FusionCompiler(fd.fusion).execute([torch_of(torch, x), torch_of(torch, x), 1.0])
    assert [tuple(o.shape) for o in outs] == [(0,), (0,)]
    outs = FusionCompiler(broadcasts(DataType.Float).fusion).execute(
        [DeviceArray.from_numpy(h) for h in _broadcast_inputs(rng, (4, 0, 3), np.dtype(np.float32))]
    )
    assert outs[0].shape == (4, 0, 3) and outs[1].shape == (0,)


def test_an_empty_matmul_launches_nothing_on_either_path(torch: Any) -> None:
    """[0, 16] x [16, 0]: nothing to write, so no kernel runs, on the first call (the general
    path) nor on the second (the generated fast path; it launched the matmul kernel, which
    faulted: the GPU fuzzer's find)."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.matmul(a, b))
    x = torch.zeros(0, 16, dtype=torch.bfloat16, device="cuda")
    y = torch.zeros(16, 0, dtype=torch.bfloat16, device="cuda")
    for _ in range(3):
        (out,) = fd.execute([x, y])
        torch.cuda.synchronize()
        assert tuple(out.shape) == (0, 0)


# --------------------------------------------------------------------------------------------
# The signature cache, scalars, streams


def test_cache_hits_patch_new_pointers_and_scalars(rng: np.random.Generator, torch: Any) -> None:
    fd = gelu_scale(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    f32 = np.dtype(np.float32)
    for i in range(4):  # new data, new pointers and a new scalar value each time: hits
        x, y = random(rng, (1000,), f32), random(rng, (1000,), f32)
        s = float(rng.uniform(-2, 2))
        outs = compiler.execute([torch_of(torch, x), torch_of(torch, y), s])
        assert_matches(fd, [x, y, s], [numpy_of(torch, o) for o in outs])
        assert (compiler.misses, compiler.hits) == (1, i)
    # another size: a miss; the kernel is compiled again only if the heuristics differ
    x, y = random(rng, (1001,), f32), random(rng, (1001,), f32)
    outs = compiler.execute([torch_of(torch, x), torch_of(torch, y), 0.5])
    assert_matches(fd, [x, y, 0.5], [numpy_of(torch, o) for o in outs])
    assert compiler.misses == 2 and compiler.kernels_compiled <= 2
    assert compiler.cache_info()["signatures"] == 2
    assert 'extern "C" __global__' in compiler.last_cuda_code()


def test_compile_then_execute_hits(rng: np.random.Generator) -> None:
    fd = gelu_scale(DataType.Half)
    compiler = FusionCompiler(fd.fusion)
    x, y = random(rng, (127,), np.dtype(np.float16)), random(rng, (127,), np.dtype(np.float16))
    inputs = [DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), 3.0]
    compiled = compiler.compile(inputs)
    assert compiled.arch == driver.current_device().arch and compiler.kernels_compiled == 1
    outs = compiler.execute(inputs)
    assert (compiler.misses, compiler.hits) == (0, 1)
    assert_matches(fd, [x, y, 3.0], [o.numpy() for o in outs])


def test_runs_on_torch_current_stream(rng: np.random.Generator, torch: Any) -> None:
    """Inputs produced on a side stream behind a long sleep: a launch on any other stream
    would read them before they are written."""
    fd = gelu_scale(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    f32 = np.dtype(np.float32)
    x, y = random(rng, (65537,), f32), random(rng, (65537,), f32)
    compiler.execute([torch_of(torch, x), torch_of(torch, y), 1.0])  # compile first
    side = torch.cuda.Stream()
    hx, hy = torch.from_numpy(x).pin_memory(), torch.from_numpy(y).pin_memory()
    with torch.cuda.stream(side):
        tx = torch.empty_like(hx, device="cuda")
        ty = torch.empty_like(hy, device="cuda")
        torch.cuda._sleep(50_000_000)
        tx.copy_(hx, non_blocking=True)
        ty.copy_(hy, non_blocking=True)
        outs = compiler.execute([tx, ty, 1.0])
    side.synchronize()
    assert compiler.hits == 1
    assert_matches(fd, [x, y, 1.0], [numpy_of(torch, o) for o in outs])


# --------------------------------------------------------------------------------------------
# Input errors on the GPU path


def test_input_errors_with_torch(torch: Any) -> None:
    fd = gelu_scale(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    x = torch.randn(127, device="cuda")
    with pytest.raises(InputError, match=r"input #1 \(%t1\): expected a CUDA tensor, got a "
                       r"torch\.Tensor on device 'cpu'"):  # fmt: skip
        compiler.execute([x, torch.randn(127), 1.0])
    with pytest.raises(InputError, match=r"input #0 \(%t0\): expected dtype float32 \(f32\) for "
                       r"tensor<\?xf32>, got float16"):  # fmt: skip
        compiler.execute([x.half(), x, 1.0])
    with pytest.raises(InputError, match=r"input #1 \(%t1\): expected rank 1 .*got rank 2"):
        compiler.execute([x, x.reshape(1, 127), 1.0])
    with pytest.raises(InputError, match=r"input #2 \(%s0\): expected a number for scalar f32"):
        compiler.execute([x, x, x])
    with pytest.raises(InputError, match=r"input shapes do not fit"):
        compiler.execute([x, x[:100], 1.0])
    assert compiler.kernels_compiled == 0
    outs = compiler.execute([x, x, 1.0])  # still usable
    assert tuple(outs[0].shape) == (127,)
    # after a compile, the torch fast path answers the same mistakes with the same errors
    for wrong in (None, x, "x"):
        with pytest.raises(InputError, match="inputs must be a sequence of arrays"):
            compiler.execute(wrong)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"takes 3 input\(s\) .*got 2"):
        compiler.execute([x, x])
    with pytest.raises(InputError, match=r"input #0 \(%t0\): expected a tensor, got NoneType"):
        compiler.execute([None, x, 1.0])


def test_tensors_on_two_devices(torch: Any) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    fd = gelu_scale(DataType.Float)
    x0 = torch.randn(127, device="cuda:0")
    x1 = torch.randn(127, device="cuda:1")
    with pytest.raises(InputError, match=r"input #1 \(%t1\) is on cuda:1 but input #0 \(%t0\) "
                       "is on cuda:0"):  # fmt: skip
        FusionCompiler(fd.fusion).execute([x0, x1, 1.0])


def test_second_device(rng: np.random.Generator, torch: Any) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    fd = gelu_scale(DataType.Float)
    compiler = FusionCompiler(fd.fusion)
    f32 = np.dtype(np.float32)
    x, y = random(rng, (1000,), f32), random(rng, (1000,), f32)
    for dev in ("cuda:1", "cuda:0", "cuda:1"):
        outs = compiler.execute([torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev), 2.0])
        assert str(outs[0].device) == dev
        assert_matches(fd, [x, y, 2.0], [numpy_of(torch, o) for o in outs])


# --------------------------------------------------------------------------------------------
# fuser-run on the GPU

POINTWISE = """\
fusion.fusion @bias_gelu(%x: tensor<?x?xbf16>, %b: tensor<?xbf16>) -> (tensor<?x?xbf16>) {
  %n = fusion.dim %x[0] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %bf = fusion.cast %b : tensor<?xbf16> -> tensor<?xf32>
  %bb = fusion.broadcast_in_dim %bf [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.add %xf, %bb : tensor<?x?xf32>
  %g = fusion.gelu %y tanh : tensor<?x?xf32>
  %o = fusion.cast %g : tensor<?x?xf32> -> tensor<?x?xbf16>
  fusion.output %o : tensor<?x?xbf16>
}
"""


def test_fuser_run_checks_and_times(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bias_gelu.mlir"
    path.write_text(POINTWISE)
    status = main([str(path), "--shapes", "1000x4097,4097", "--iters", "5", "--warmup", "1"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "output #0 bfloat16 (1000, 4097): ok" in captured.out
    assert "time (CUDA events, median of 5 runs after 1, L2 flushed):" in captured.out
    assert re.search(r"fuser_bias_gelu_pointwise_0: [0-9.]+ us, [0-9]+ GB/s", captured.out)


@pytest.mark.parametrize("shape", ["3x127", "127x1000", "1000x4097"])
def test_fuser_run_layer_norm_example(shape: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A fusion with reductions, through whichever scheduler takes it."""
    cols = shape.split("x")[1]
    example = Path(__file__).resolve().parents[2] / "examples" / "layer_norm.mlir"
    status = main([str(example), "--shapes", f"{shape},{cols},{cols}", "--iters", "3"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out.count(": ok, max abs error") == 3


@pytest.mark.parametrize("shape", [(2, 2), (3, 6), (9, 130)])
def test_min_of_negated_integers(torch: Any, shape: tuple[int, int]) -> None:
    """The GPU fuzzer's find: NVRTC 13.0-13.3 compile this i32 reduction so that the rows of an
    odd tail lose their negation (`min(x)` instead of `min(-x)` in half of the columns).
    fuser refuses those NVRTCs (`MISCOMPILING_NVRTC`); with the one it pins, this holds."""
    with FusionDefinition("min_neg") as fd:
        x = fd.define_tensor([-1, -1], DataType.Int32)
        fd.add_output(fd.ops.min(fd.ops.neg(x), dims=[0]))
    a = torch.randint(-10, 10, shape, dtype=torch.int32, device="cuda")
    (out,) = fd.execute([a])
    assert torch.equal(out, (-a).amin(0))


def test_validate_and_nvfuser_keywords_on_torch_inputs(
    rng: np.random.Generator, torch: Any
) -> None:
    """`fd.validate` on bf16 torch tensors (copied to the host for the reference), with
    Thunder's keywords; a wrong reference is a ValidationError naming the output."""
    from fuser import ValidationError

    with FusionDefinition("validate_bf16") as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        y = fd.ops.cast(fd.ops.mul(fd.ops.cast(x, DataType.Float), 3.0), DataType.BFloat16)
        fd.add_output(y)
        fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [1]))
    a = round_to_float(rng.standard_normal((127, 33)), BFLOAT16)
    t = torch_of(torch, a)
    options = {"device": t.device, "_enable_options": [], "_disable_options": []}
    fd.validate([t], **options)
    (tripled, sums) = fd.execute([t], **options)
    with pytest.raises(ValidationError, match="output #1: 127 of 127 elements differ"):
        fd.validate([t], [tripled, sums + 1.0])
    with pytest.raises(InputError, match="device is cuda:1 but input 0 is on cuda:0"):
        fd.execute([t], device="cuda:1")


def test_a_cpu_scalar_tensor_input(rng: np.random.Generator, torch: Any) -> None:
    """`is_cpu=True`: a 0-d CPU torch tensor is read on the host at each call (a new value
    runs the same kernel); `from_pytorch` of one defines the same input; a CUDA tensor there is
    an InputError."""
    fd = cpu_scalar_scale()
    x = torch.randn(129, 33, device="cuda", dtype=torch.bfloat16)
    for value in (2.5, -0.75):
        scale = torch.tensor(value)  # on the CPU, f32
        got, plus_one = fd.execute([x, scale])
        assert got.dtype == torch.bfloat16 and plus_one.shape == ()
        torch.testing.assert_close(got, x * scale)
        assert plus_one.item() == value + 1
    with FusionDefinition("from_pytorch_cpu") as fd2:
        t = fd2.from_pytorch(x)
        s = fd2.from_pytorch(torch.tensor(2.5))
        fd2.add_output(fd2.ops.mul(t, s))
    assert "is_cpu=True" in fd2.python_definition()
    torch.testing.assert_close(fd2.execute([x, torch.tensor(3.0)])[0], x * 3.0)
    with pytest.raises(InputError, match="must be on the CPU"):
        fd.execute([x, torch.tensor(2.5, device="cuda")])


@pytest.mark.parametrize("kind", ["torch", "torch_strided", "numpy", "device_array"])
def test_alias_input_updates_the_input_in_place(
    rng: np.random.Generator, torch: Any, kind: str
) -> None:
    """`add_output(t, alias_input=x)`: x holds t after the run (read by the same fusion), only
    the other outputs come back; torch's strided input takes it through `copy_`; `validate`
    checks the written input too."""
    fd = running_mean_update()
    x = rng.standard_normal((4097, 127)).astype(np.float32)
    running = rng.standard_normal(127).astype(np.float32)
    expected = running.astype(np.float64) * 0.9 + x.astype(np.float64).mean(0) * 0.1
    base = torch_of(torch, np.repeat(running, 2))  # [254]: running at every other element
    args: list[Any] = {
        "numpy": lambda: [x, running.copy()],
        "device_array": lambda: [DeviceArray.from_numpy(x), DeviceArray.from_numpy(running)],
        "torch": lambda: [torch_of(torch, x), torch_of(torch, running)],
        "torch_strided": lambda: [torch_of(torch, x), base[::2]],
    }[kind]()
    (mean,) = fd.execute(args)
    np.testing.assert_allclose(host_array(args[1]), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host_array(mean), x.mean(0), rtol=1e-4, atol=1e-6)
    if kind == "torch_strided":
        assert torch.equal(base[1::2], torch_of(torch, running))  # the gaps untouched
    if kind == "torch":
        fd.validate([torch_of(torch, x), torch_of(torch, running)])


def test_an_input_torch_cannot_write_is_an_input_error(torch: Any) -> None:
    """An aliased input that requires grad, or an expanded view (stride 0): InputError naming
    it, raised before anything is written."""
    fd = running_mean_update()
    x = torch.randn(33, 7, device="cuda")
    leaf = torch.zeros(7, device="cuda", requires_grad=True)
    with pytest.raises(InputError, match="requires grad"):
        fd.execute([x, leaf])
    assert not leaf.detach().any()
    expanded = torch.zeros(1, device="cuda").expand(7)
    with pytest.raises(InputError, match="expanded view"):
        fd.execute([x, expanded])
