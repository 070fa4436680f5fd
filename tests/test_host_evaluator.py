"""The host evaluator without a GPU: hand-written host programs run over fake device memory (host
buffers, poisoned when freed) and kernels written in numpy, so results are checked as numbers;
the order of allocations, launches, frees and stream synchronizations is checked from a log; the
workspace layout, streams, loops, views, errors and the parallel compile of kernels. The fusion
cache (`FusionCompiler` on programs) runs against a recording driver and a faked torch.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType
from xdsl.parser import Parser

from fuser import DataType, FusionDefinition, dump, profiler
from fuser.compiler import FusionCompiler, SegmentSummary
from fuser.dialects import fusion as fu
from fuser.dialects import get_all_dialects, host
from fuser.dialects.views import contiguous_strides
from fuser.errors import CompilationError, CudaError, InputError
from fuser.fuzz.differential import host_call
from fuser.runtime import dispatch, driver, frontends
from fuser.runtime.arrays import host_view
from fuser.runtime.calls import Call
from fuser.runtime.frontends import Frontend
from fuser.runtime.host_evaluator import HostEvaluator
from fuser.runtime.kernel_binding import ParamInfo, TensorInfo
from fuser.runtime.reference import evaluate
from fuser.transforms.plan_memory import WORKSPACE_ALIGNMENT, plan_memory

# --------------------------------------------------------------------------------------------
# Fakes: device memory in host buffers, kernels in numpy


class FakeDevice:
    """Memory, streams and events of a pretend device, logged in order.

    Allocations are host buffers filled with 0xff (NaN for floats); a freed buffer is poisoned
    the same way (and kept, so a use after free reads NaNs instead of crashing)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.buffers: dict[int, np.ndarray] = {}
        self.freed: list[np.ndarray] = []
        self.pools: list[tuple[int, int]] = []

    def alloc(self, nbytes: int, stream: int) -> int:
        buf = np.full(nbytes + 64, 0xFF, np.uint8)
        ptr = (buf.ctypes.data + 63) // 64 * 64
        self.buffers[ptr] = buf
        self.log.append(("alloc", nbytes, stream, ptr))
        return ptr

    def free(self, ptr: int, stream: int) -> None:
        buf = self.buffers.pop(ptr)  # KeyError: a double free or a foreign pointer
        buf[:] = 0xFF
        self.freed.append(buf)
        self.log.append(("free", ptr, stream))

    def stream_pool(self, device: int, count: int) -> list[int]:
        self.pools.append((device, count))
        return [0x100 * (i + 1) for i in range(count)]

    def synchronize(self, stream: int, other: int) -> None:
        self.log.append(("sync", stream, other))

    def upload(self, values: np.ndarray) -> tuple[int, Any]:
        owner = np.ascontiguousarray(values).copy()
        self.log.append(("upload", owner.nbytes))
        return owner.ctypes.data, owner

    def events(self, kind: str) -> list[tuple[Any, ...]]:
        return [e for e in self.log if e[0] == kind]


def array_at(ptr: int, info: TensorInfo) -> np.ndarray:
    """A numpy view of `info`'s elements at address `ptr`."""
    itemsize = info.dtype.itemsize
    span = 1 + sum((n - 1) * s for n, s in zip(info.shape, info.strides, strict=True))
    if 0 in info.shape:
        span = 0
    buffer = (ctypes.c_char * max(span * itemsize, 1)).from_address(ptr)
    strides = tuple(s * itemsize for s in info.strides)
    return np.ndarray(info.shape, info.dtype, buffer=buffer, strides=strides)


class NumpyKernel:
    """A kernel binding that runs `fn(*views)` on numpy views of the arguments."""

    def __init__(self, fn: Callable[..., None], device: FakeDevice) -> None:
        self.fn = fn
        self.device = device
        self.compiled_on: list[str] = []
        self.bound: list[tuple[list[ParamInfo], list[TensorInfo]]] = []

    def compile(self) -> None:
        self.compiled_on.append(threading.current_thread().name)

    def grid(self, name: str, ins: Sequence[ParamInfo], device: int) -> tuple[int, int, int]:
        """A grid that names the kernel's input count and first extent (for the launch log)."""
        first = next((p.shape for p in ins if isinstance(p, TensorInfo) and p.shape), (1,))
        return (max(1, first[0]), len(ins), 1)

    def bind(
        self,
        name: str,
        ins: Sequence[ParamInfo],
        outs: Sequence[TensorInfo],
        grid: tuple[int, int, int] | None,
        block: tuple[int, int, int],
        shared_bytes: int,
        device: int,
    ) -> NumpyLauncher:
        self.bound.append((list(ins), list(outs)))
        return NumpyLauncher(name, self, [*ins, *outs], grid, block, shared_bytes)


class NumpyLauncher:
    def __init__(
        self,
        name: str,
        kernel: NumpyKernel,
        params: list[ParamInfo],
        grid: tuple[int, int, int] | None,
        block: tuple[int, int, int],
        shared_bytes: int,
    ) -> None:
        self.name, self.kernel, self.params = name, kernel, params
        self.grid, self.block, self.shared_bytes = grid, block, shared_bytes

    def __call__(self, args: list[Any], grid: tuple[int, int, int], stream: int) -> None:
        self.kernel.device.log.append(("launch", self.name, grid, stream, tuple(args)))
        views = [
            array_at(a, p) if isinstance(p, TensorInfo) else a
            for a, p in zip(args, self.params, strict=True)
        ]
        self.kernel.fn(*views)


class ReferenceKernel(NumpyKernel):
    """A kernel binding that evaluates a segment's standalone fusion (one slice of it, for a
    stream-parallel segment) with the reference interpreter, reading its inputs from (fake)
    device memory and writing its outputs there."""

    def __init__(self, fusion: fu.FusionOp, device: FakeDevice) -> None:
        super().__init__(self._evaluate, device)
        self.fusion = fusion

    def _evaluate(self, *views: Any) -> None:
        n = len(self.fusion.inputs)
        ranks = [
            a.type.get_num_dims() for a in self.fusion.inputs if isinstance(a.type, TensorType)
        ]
        assert ranks == [v.ndim for v in views[:n] if isinstance(v, np.ndarray)], self.fusion
        inputs = [v.copy() if isinstance(v, np.ndarray) else v for v in views[:n]]
        results = evaluate(self.fusion, inputs)
        for out, value in zip(views[n:], results, strict=True):
            assert value.shape == out.shape and value.dtype == out.dtype
            out[...] = value


class HostMemoryFrontend(Frontend):
    """Outputs as numpy arrays (host memory stands in for device memory here)."""

    def allocate(self, shapes, dtypes, device, stream):  # type: ignore[no-untyped-def]
        outs = [
            np.full(s, np.nan if np.dtype(d).kind == "f" else -7, d)
            for s, d in zip(shapes, dtypes, strict=True)
        ]
        return outs, [o.ctypes.data for o in outs]

    def view(self, base, shape, strides, offset):  # type: ignore[no-untyped-def]
        return host_view(base, shape, strides, offset)  # the input array's own memory


FRONTEND = HostMemoryFrontend()


def parse_module(text: str) -> tuple[ModuleOp, host.ProgramOp]:
    ctx = Context()
    ctx.load_dialect(Builtin)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    from xdsl.dialects.arith import Arith

    ctx.load_dialect(Arith)
    module = Parser(ctx, text).parse_module()
    module.verify()
    program = next(op for op in module.walk() if isinstance(op, host.ProgramOp))
    return module, program


def call_of(evaluator: HostEvaluator, inputs: Sequence[Any], stream: int = 0x5) -> Call:
    """A read call for numpy inputs standing in for device tensors (no upload)."""
    return host_call(evaluator, inputs, FRONTEND, stream)


@pytest.fixture
def one_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluator asks the driver which device is current: device 0."""

    class Device0:
        ordinal = 0

        def make_current(self) -> None:
            pass

    monkeypatch.setattr(driver, "current_device", lambda: Device0())
    monkeypatch.setattr(driver, "get_device", lambda ordinal: Device0())


def _scale(x: np.ndarray, a: float, y: np.ndarray) -> None:
    y[...] = x * np.float32(a)


def _add(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
    z[...] = x + y


# --------------------------------------------------------------------------------------------
# A chain of kernels: intermediates in one workspace, freed after their last use

CHAIN = """
kernel.func @scale(%x: !kernel.tensor<f32, 1>, %a: f32, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
kernel.func @add(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>,
                 %z: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @chain(%x: tensor<?xf32>, %a: f32) -> tensor<?xf32> {
  %n = host.dim %x[0] : tensor<?xf32>
  %c1 = arith.constant 1 : index
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %np = arith.addi %n, %c127 : index
  %g = arith.divui %np, %c128 : index
  %t = host.allocate(%n) : tensor<?xf32>
  host.launch @scale grid(%g, %c1, %c1) block [128, 1, 1] smem 0
      ins(%x, %a : tensor<?xf32>, f32) outs(%t : tensor<?xf32>)
  %u = host.allocate(%n) : tensor<?xf32>
  host.launch @add grid(%g, %c1, %c1) block [128, 1, 1] smem 0
      ins(%t, %x : tensor<?xf32>, tensor<?xf32>) outs(%u : tensor<?xf32>)
  host.deallocate %t : tensor<?xf32>
  %v = host.allocate(%n) : tensor<?xf32>
  host.launch @scale grid(%g, %c1, %c1) block [128, 1, 1] smem 0
      ins(%u, %a : tensor<?xf32>, f32) outs(%v : tensor<?xf32>)
  host.deallocate %u : tensor<?xf32>
  %y = host.allocate(%n) : tensor<?xf32>
  host.launch @add grid(%g, %c1, %c1) block [128, 1, 1] smem 0
      ins(%v, %x : tensor<?xf32>, tensor<?xf32>) outs(%y : tensor<?xf32>)
  host.deallocate %v : tensor<?xf32>
  host.return %y : tensor<?xf32>
}
"""


def chain_evaluator(device: FakeDevice) -> tuple[HostEvaluator, dict[str, NumpyKernel]]:
    """The chain with its intermediates planned into one workspace (`fuser-plan-memory`)."""
    _, program = parse_module(CHAIN)
    assert plan_memory(program) == 3
    kernels = {"scale": NumpyKernel(_scale, device), "add": NumpyKernel(_add, device)}
    return HostEvaluator(program, kernels, backend=device), kernels


@pytest.mark.parametrize("n", [1, 3, 127, 1000])
def test_chain_runs_in_order_with_a_workspace(
    rng: np.random.Generator, one_device: None, n: int
) -> None:
    device = FakeDevice()
    evaluator, _ = chain_evaluator(device)
    x = rng.standard_normal(n).astype(np.float32)
    a = float(rng.uniform(0.5, 2.0))
    (y,) = evaluator.run(call_of(evaluator, [x, a]))
    af = np.float32(a)
    np.testing.assert_allclose(y, (x * af + x) * af + x, rtol=1e-6)
    # one workspace for t, u, v: v reuses t's bytes (t is freed before v is allocated)
    size = -(-n * 4 // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT
    kinds = [e[0] for e in device.log]
    assert kinds == ["alloc", "launch", "launch", "launch", "launch", "free"]
    (_, nbytes, stream, base), *_ = device.log
    assert (nbytes, stream) == (2 * size, 0x5)
    launches = device.events("launch")
    grid = (-(-n // 128), 1, 1)
    assert [(name, g, s) for _, name, g, s, _ in launches] == [
        ("scale", grid, 0x5),
        ("add", grid, 0x5),
        ("scale", grid, 0x5),
        ("add", grid, 0x5),
    ]
    t, u, v = launches[0][4][2], launches[1][4][2], launches[2][4][2]
    assert launches[1][4][0] == t and launches[2][4][0] == u and launches[3][4][0] == v
    assert t == v == base and u == base + size
    assert launches[0][4][:2] == (x.ctypes.data, a)
    assert launches[3][4][2] == y.ctypes.data  # the output comes from the frontend
    assert device.log[-1] == ("free", base, 0x5) and not device.buffers


def test_a_signature_is_compiled_once(rng: np.random.Generator, one_device: None) -> None:
    device = FakeDevice()
    evaluator, kernels = chain_evaluator(device)
    x = rng.standard_normal(5).astype(np.float32)
    first = evaluator.specialize(call_of(evaluator, [x, 1.0]).key)
    x2 = rng.standard_normal(5).astype(np.float32)
    assert evaluator.specialize(call_of(evaluator, [x2, 2.5]).key) is first
    assert len(kernels["scale"].bound) == 2  # two launches of it, bound once each
    other = evaluator.specialize(call_of(evaluator, [x[:3], 1.0]).key)
    assert other is not first and len(evaluator.specializations) == 2
    (ins, outs) = kernels["scale"].bound[-1]
    assert ins == [TensorInfo((3,), (1,), np.dtype(np.float32), 16), np.dtype(np.float32)]
    assert outs == [TensorInfo((3,), (1,), np.dtype(np.float32), 16)]
    assert "scale: grid=[1, 1, 1] block=[128, 1, 1] smem=0" in other.describe_launches()


def test_a_failing_launch_frees_the_workspace(rng: np.random.Generator, one_device: None) -> None:
    device = FakeDevice()
    _, program = parse_module(CHAIN)
    plan_memory(program)

    def broken(*args: Any) -> None:
        raise InputError("kernel rejected its arguments")

    kernels = {"scale": NumpyKernel(_scale, device), "add": NumpyKernel(broken, device)}
    evaluator = HostEvaluator(program, kernels, backend=device)
    with pytest.raises(InputError, match="kernel rejected"):
        evaluator.run(call_of(evaluator, [rng.standard_normal(7).astype(np.float32), 2.0]))
    assert [e[0] for e in device.log] == ["alloc", "launch", "launch", "free"]
    assert not device.buffers


def test_kernels_compile_in_parallel() -> None:
    device = FakeDevice()
    evaluator, kernels = chain_evaluator(device)
    evaluator.compile_kernels()
    for k in kernels.values():
        assert len(k.compiled_on) == 1 and k.compiled_on[0].startswith("fuser-nvrtc")


# --------------------------------------------------------------------------------------------
# Streams, loops and views

STREAMS = """
kernel.func @scale_row(%x: !kernel.tensor<f32, 1>, %alpha: f32, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @batched(%x: tensor<?x?xf32>, %alpha: f32) -> tensor<?x?xf32> {
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
    host.launch @scale_row grid(%i, %c1, %c1) block [32, 1, 1] smem 0
        ins(%xi, %alpha : tensor<?xf32>, f32) outs(%t : tensor<?xf32>)
    host.launch @scale_row grid(%i, %c1, %c1) block [32, 1, 1] smem 0
        ins(%t, %alpha : tensor<?xf32>, f32) outs(%yi : tensor<?xf32>)
    host.deallocate %t : tensor<?xf32>
  }
  host.set_current_stream %main
  host.for %j = %c0 to %c4 step %c1 {
    %s = host.stream %j
    host.synchronize %s
  }
  %s1 = host.stream %c1
  %c2 = arith.constant 2 : index
  %x0 = host.alias_select %x[%c1] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
  %y0 = host.alias_select %y[%c2] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
  host.launch @scale_row grid(%c2, %c1, %c1) block [32, 1, 1] smem 0
      ins(%x0, %alpha : tensor<?xf32>, f32) outs(%y0 : tensor<?xf32>) on %s1
  host.synchronize %s1
  host.return %y : tensor<?x?xf32>
}
"""


@pytest.mark.parametrize("rows", [1, 3, 6])
def test_streams_loops_and_views(rng: np.random.Generator, one_device: None, rows: int) -> None:
    device = FakeDevice()
    _, program = parse_module(STREAMS)
    kernel = NumpyKernel(_scale, device)
    evaluator = HostEvaluator(program, {"scale_row": kernel}, backend=device)
    cols = 5
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    alpha = float(rng.uniform(0.5, 2.0))
    main = 0x77
    (y,) = evaluator.run(call_of(evaluator, [x, alpha], stream=main))
    af = np.float32(alpha)
    expected = (x * af) * af
    expected[:, 2] = x[:, 1] * af  # the last launch writes column 2 from column 1
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    pool = [0x100, 0x200, 0x300, 0x400]
    assert device.pools == [(0, 4)]
    # row i: on stream i mod 4, after it waits for the main stream; its temporary is
    # allocated and freed on that stream (no workspace: the program uses several streams)
    log = [e for e in device.log if e[0] != "launch"] + []
    expected_log: list[tuple[Any, ...]] = []
    for i in range(rows):
        s = pool[i % 4]
        expected_log += [("sync", s, main), ("alloc", cols * 4, s), ("free", s)]
    expected_log += [("sync", main, s) for s in pool] + [("sync", main, pool[1])]
    assert [e[:3] if e[0] != "free" else ("free", e[2]) for e in log] == expected_log
    launches = device.events("launch")
    assert len(launches) == 2 * rows + 1
    for i in range(rows):
        first, second = launches[2 * i], launches[2 * i + 1]
        assert first[2] == second[2] == (i, 1, 1) and first[3] == second[3] == pool[i % 4]
        assert first[4][0] == x.ctypes.data + i * cols * 4  # the row view
        assert second[4][2] == y.ctypes.data + i * cols * 4
    last = launches[-1]
    assert last[3] == pool[1] and last[2] == (2, 1, 1)
    assert last[4][0] == x.ctypes.data + 4 and last[4][2] == y.ctypes.data + 8
    # the column views: stride `cols`, alignment from the offset (4 and 8 bytes)
    ins, outs = kernel.bound[-1]
    assert ins[0] == TensorInfo((rows,), (cols,), np.dtype(np.float32), 4)
    assert outs[0] == TensorInfo((rows,), (cols,), np.dtype(np.float32), 8)
    assert not device.buffers


IOTA = """
kernel.func @add(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>,
                 %z: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @ramp(%x: tensor<?xf32>) -> tensor<?xf32> {
  %n = host.dim %x[0] : tensor<?xf32>
  %c1 = arith.constant 1 : index
  %r = host.iota(%n) start -1.5 step 0.25 : tensor<?xf32>
  %y = host.allocate(%n) : tensor<?xf32>
  host.launch @add grid(%c1, %c1, %c1) block [32, 1, 1] smem 0
      ins(%x, %r : tensor<?xf32>, tensor<?xf32>) outs(%y : tensor<?xf32>)
  host.return %y : tensor<?xf32>
}
"""


def test_an_iota_is_uploaded_once_per_signature(rng: np.random.Generator, one_device: None) -> None:
    device = FakeDevice()
    _, program = parse_module(IOTA)
    kernel = NumpyKernel(_add, device)
    evaluator = HostEvaluator(program, {"add": kernel}, backend=device)
    for n in (5, 5, 0, 127, 5):
        x = rng.standard_normal(n).astype(np.float32)
        (y,) = evaluator.run(call_of(evaluator, [x]))
        ramp = (-1.5 + 0.25 * np.arange(n)).astype(np.float32)
        np.testing.assert_array_equal(y, x + ramp)
    # one upload per signature (5, 0, 127), on its first call; the kernel sees a contiguous,
    # 16-byte aligned f32 tensor
    assert device.events("upload") == [("upload", 20), ("upload", 0), ("upload", 508)]
    assert kernel.bound[0][0][1] == TensorInfo((5,), (1,), np.dtype(np.float32), 16)


SLICE = """
kernel.func @scale(%x: !kernel.tensor<f32, 2>, %a: f32, %y: !kernel.tensor<f32, 2>) {
  kernel.return
}
host.program @corner(%x: tensor<?x?xf32>, %a: f32) -> tensor<?x?xf32> {
  %c1 = arith.constant 1 : index
  %v = host.slice %x [1::2, -3:] : tensor<?x?xf32> -> tensor<?x?xf32>
  %r = host.dim %v[0] : tensor<?x?xf32>
  %c = host.dim %v[1] : tensor<?x?xf32>
  %y = host.allocate(%r, %c) : tensor<?x?xf32>
  host.launch @scale grid(%c1, %c1, %c1) block [32, 1, 1] smem 0
      ins(%v, %a : tensor<?x?xf32>, f32) outs(%y : tensor<?x?xf32>)
  host.return %y : tensor<?x?xf32>
}
"""


@pytest.mark.parametrize("shape", [(7, 5), (1, 2), (0, 4)], ids=str)
def test_a_slice_is_a_view_at_the_first_elements_address(
    rng: np.random.Generator, one_device: None, shape: tuple[int, int]
) -> None:
    device = FakeDevice()
    _, program = parse_module(SLICE)
    kernel = NumpyKernel(_scale, device)
    evaluator = HostEvaluator(program, {"scale": kernel}, backend=device)
    x = rng.standard_normal(shape).astype(np.float32)
    (y,) = evaluator.run(call_of(evaluator, [x, 2.0]))
    np.testing.assert_array_equal(y, x[1::2, -3:] * np.float32(2.0))
    (launch,) = device.events("launch")
    rows, cols = x[1::2, -3:].shape
    offset = 0 if rows * cols == 0 else (shape[1] + max(shape[1] - 3, 0)) * 4
    assert launch[4][0] == x.ctypes.data + offset  # the view's pointer
    alignment = 16 if offset % 16 == 0 else offset & -offset
    ins, _ = kernel.bound[-1]
    assert ins[0].shape == (rows, cols) and ins[0].alignment == alignment
    if rows * cols:  # (an empty input's strides are the signature's business)
        assert ins[0].strides == (2 * shape[1], 1)


INDEX_ARGS = """
kernel.func @scale(%x: !kernel.tensor<f32, 1>, %a: f32, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @tiles(%x: tensor<?xf32>, %k: index, %a: f32) -> (tensor<?xf32>, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %y = host.allocate(%k) : tensor<?xf32>
  %m = arith.muli %k, %c1 : index
  %t = host.allocate(%m) : tensor<?xf32>
  host.launch @scale grid(%k, %c1, %c1) block [32, 1, 1] smem 0
      ins(%x, %a : tensor<?xf32>, f32) outs(%t : tensor<?xf32>)
  host.launch @scale grid(%k, %c1, %c1) block [32, 1, 1] smem 0
      ins(%t, %a : tensor<?xf32>, f32) outs(%y : tensor<?xf32>)
  host.deallocate %t : tensor<?xf32>
  host.return %y, %k : tensor<?xf32>, index
}
"""


def test_index_arguments_are_part_of_the_key(rng: np.random.Generator, one_device: None) -> None:
    device = FakeDevice()
    _, program = parse_module(INDEX_ARGS)
    evaluator = HostEvaluator(program, {"scale": NumpyKernel(_scale, device)}, backend=device)
    x = rng.standard_normal(7).astype(np.float32)
    for k in (3, 7, 3):
        y, k_out = evaluator.run(call_of(evaluator, [x[:k], k, 2.0]))
        np.testing.assert_allclose(y, x[:k] * 4, rtol=1e-6)
        assert k_out == k and y.shape == (k,)
    assert len(evaluator.specializations) == 2
    assert device.events("launch")[0][2] == (3, 1, 1)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "%y = host.allocate(%n) : tensor<?xf32>\n"
            "host.for %i = %c0 to %n step %c1 {\n"
            "  %t = host.allocate(%i) : tensor<?xf32>\n"
            "}\n",
            r"'host.allocate' has a size that depends on a loop index",
        ),
        (
            "%y = host.allocate(%n) : tensor<?xf32>\n"
            "%c9 = arith.constant 9 : index\n"
            "%v = host.alias_select %x[%c9] axis 0 : tensor<?xf32> -> tensor<f32>\n",
            r"'host.alias_select' index 9 is out of range for extent 5",
        ),
        (
            "%y = host.allocate(%n) : tensor<?xf32>\n%z = arith.divui %n, %c0 : index\n",
            r"'arith.divui' divides 5 by zero",
        ),
        (
            "%y = host.allocate(%n) : tensor<?xf32>\n"
            "%v = host.alias_select %y[%c0] axis 0 : tensor<?xf32> -> tensor<f32>\n"
            "host.return %v : tensor<f32>\n",
            r"'host.return' returns a view",
        ),
    ],
)
def test_programs_the_evaluator_cannot_specialize(
    rng: np.random.Generator, one_device: None, body: str, message: str
) -> None:
    ret = "" if "host.return" in body else "host.return %y : tensor<?xf32>\n"
    result = "tensor<f32>" if "host.return %v" in body else "tensor<?xf32>"
    text = (
        f"host.program @p(%x: tensor<?xf32>) -> {result} {{\n"
        "%n = host.dim %x[0] : tensor<?xf32>\n"
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n" + body + ret + "}\n"
    )
    _, program = parse_module(text)
    evaluator = HostEvaluator(program, {}, backend=FakeDevice())
    x = rng.standard_normal(5).astype(np.float32)
    with pytest.raises(CompilationError, match=message):
        evaluator.run(call_of(evaluator, [x]))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "host.program @p(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
            "%c1 = arith.constant 1 : index\n"
            "host.launch @missing grid(%c1, %c1, %c1) block [1, 1, 1] smem 0 "
            "ins(%x : tensor<?xf32>)\nhost.return %x : tensor<?xf32>\n}",
            r"host.launch @missing names no kernel the evaluator was given \(none\)",
        ),
        (
            "host.program @p(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
            "host.deallocate %x : tensor<?xf32>\nhost.return %x : tensor<?xf32>\n}",
            r"host.deallocate of a value that no host.allocate made",
        ),
        (
            "host.program @p(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
            "%n = host.dim %x[0] : tensor<?xf32>\n%y = host.allocate(%n) : tensor<?xf32>\n"
            "host.deallocate %y : tensor<?xf32>\nhost.return %y : tensor<?xf32>\n}",
            r"host.deallocate of a returned tensor",
        ),
        (
            "host.program @p(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
            "%c1 = arith.constant 1.0 : f32\n%b = arith.cmpf oeq, %c1, %c1 : f32\n"
            "host.return %x : tensor<?xf32>\n}",
            r"the host evaluator does not run 'arith.cmpf'",
        ),
    ],
)
def test_programs_the_evaluator_rejects(text: str, message: str) -> None:
    _, program = parse_module(text)
    with pytest.raises(CompilationError, match=message):
        HostEvaluator(program, {}, backend=FakeDevice())


def test_dynamic_view_index_out_of_range(rng: np.random.Generator, one_device: None) -> None:
    text = """
host.program @p(%x: tensor<?xf32>, %k: index) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  host.for %i = %c0 to %k step %c1 {
    %j = arith.muli %i, %c3 : index
    %v = host.alias_select %x[%j] axis 0 : tensor<?xf32> -> tensor<f32>
  }
  host.return %x : tensor<?xf32>
}
"""
    _, program = parse_module(text)
    evaluator = HostEvaluator(program, {}, backend=FakeDevice())
    x = rng.standard_normal(7).astype(np.float32)
    (same,) = evaluator.run(call_of(evaluator, [x, 3]))  # 0, 3, 6: in range
    assert same is x  # an argument returned as it is
    with pytest.raises(
        InputError, match=r"'host.alias_select' index 9 is out of range for extent 7"
    ):
        evaluator.run(call_of(evaluator, [x, 4]))


@pytest.mark.parametrize("dynamic", [False, True])
def test_workspace_first_fit_reuses_bytes(
    rng: np.random.Generator, one_device: None, dynamic: bool
) -> None:
    """Five intermediates of different sizes with staggered lifetimes, planned by
    `fuser-plan-memory`: buffers alive at the same time never overlap, and the workspace is
    smaller than their sum. Static sizes fold to constants; dynamic ones (`k * n` elements) are
    placed by `arith.cmpi`/`select` the evaluator folds per signature."""
    sizes = [3, 100, 40, 70, 5]
    n = int(rng.integers(1, 50)) if dynamic else 1
    lines = ["%c1 = arith.constant 1 : index"]
    if dynamic:
        lines.append("%n = host.dim %x[0] : tensor<?xf32>")
    types = []
    for i, k in enumerate(sizes):
        if dynamic:
            lines.append(f"%k{i} = arith.constant {k} : index")
            lines.append(f"%s{i} = arith.muli %n, %k{i} : index")
            lines.append(f"%t{i} = host.allocate(%s{i}) : tensor<?xf32>")
            types.append("tensor<?xf32>")
        else:
            lines.append(f"%t{i} = host.allocate() : tensor<{k}xf32>")
            types.append(f"tensor<{k}xf32>")
        if i >= 2:
            lines.append(f"host.deallocate %t{i - 2} : {types[i - 2]}")
    lines.append(f"host.deallocate %t3 : {types[3]}")
    lines.append(f"host.deallocate %t4 : {types[4]}")
    args = "%x: tensor<?xf32>" if dynamic else ""
    text = f"host.program @p({args}) {{\n" + "\n".join(lines) + "\nhost.return\n}"
    _, program = parse_module(text)
    assert plan_memory(program) == 5
    assert dynamic == any(isinstance(op, arith.CmpiOp) for op in program.walk())
    device = FakeDevice()
    evaluator = HostEvaluator(program, {}, backend=device)
    x = np.zeros(n, np.float32)
    key = call_of(evaluator, [x]).key if dynamic else (0,)
    spec = evaluator.specialize(key)
    ptrs = [x.ctypes.data] if dynamic else []
    assert spec.execute([x] if dynamic else [], ptrs, [], 0x9, FRONTEND) == []
    (alloc,) = device.events("alloc")
    rounded = [-(-n * k * 4 // 256) * 256 for k in sizes]
    most_live = max(sum(rounded[i : i + 3]) for i in range(5))
    assert most_live <= alloc[1] < sum(rounded)
    assert [e[0] for e in device.log] == ["alloc", "free"]


# --------------------------------------------------------------------------------------------
# The fusion cache on programs, against a recording driver and a faked torch


class FakeTorchTensor:
    """Looks like a CUDA torch.Tensor to fuser (metadata only)."""

    __module__ = "torch"

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "float32") -> None:
        self._ptr, self.shape = ptr, tuple(shape)
        self.dtype = FAKE_DTYPES[dtype]
        self.device = FakeTorchDevice()

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return contiguous_strides(self.shape)

    def get_device(self) -> int:
        return 0

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * 4


class FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


FAKE_DTYPES = {"float32": FakeDtype("float32")}


class FakeTorchDevice:
    type = "cuda"
    index = 0

    def __str__(self) -> str:
        return "cuda:0"


class FakeDevice0:
    """Device 0, an H100 as far as the compiler asks (tests/test_executor.py uses it too)."""

    ordinal = 0
    arch = "sm_90"
    sm_count = 132
    max_threads_per_block = 1024
    max_shared_memory_per_block_optin = 227 * 1024
    registers_per_sm = 65536
    l2_bytes = 50 * 1024 * 1024

    def make_current(self) -> None:
        pass


def patch_launch(monkeypatch: pytest.MonkeyPatch, launch: Callable[..., None]) -> None:
    """Route every launch, `driver.launch`, the raw `driver.LAUNCH_KERNEL` and the kernels of a
    `driver.LaunchGraph` alike, to `launch(func, grid, block, shared_bytes, stream,
    params_address)`."""

    def raw(func: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, *rest: Any) -> Any:
        shared, stream, address, _ = rest
        launch(func, (gx, gy, gz), (bx, by, bz), shared, stream, address)
        return (driver.SUCCESS,)

    class Graph:
        """`driver.LaunchGraph`: each launch of the graph launches its kernels in order."""

        def __init__(self, kernels: Sequence[tuple[Any, ...]]) -> None:
            self.kernels = list(kernels)

        def launch(self, stream: Any) -> None:
            for func, grid, block, shared, address, _ in self.kernels:
                driver.launch(func, tuple(grid), tuple(block), shared, stream, address)

    monkeypatch.setattr(driver, "launch", launch)
    monkeypatch.setattr(driver, "LAUNCH_KERNEL", raw)
    monkeypatch.setattr(driver, "LaunchGraph", Graph)
    monkeypatch.setattr(
        driver, "launch_prefix", lambda func, grid, block, shared: (func, *grid, *block, shared)
    )


def fake_torch_shape(size: tuple[Any, ...]) -> tuple[int, ...]:
    """The shape `torch.empty(*size)` makes: sizes one by one, or one tuple of them."""
    if len(size) == 1 and isinstance(size[0], tuple | list):
        return tuple(size[0])
    return tuple(size)


def fake_output_specs(device: int, shapes: Any, dtypes: Any) -> tuple[Any, Any]:
    """The torch frontend's `output_specs`, with strings for torch's device and dtypes."""
    specs = tuple(
        (frontends.torch_sizes(shape), f"torch.{d}")
        for shape, d in zip(shapes, dtypes, strict=True)
    )
    return f"cuda:{device}", specs


class FakeGpu:
    """The driver calls of a run, recorded: pool allocations and frees, launches with the
    pointer at the start of each argument, torch outputs."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.next_ptr = 1 << 32
        self.live: set[int] = set()
        self.outputs: list[FakeTorchTensor] = []
        self.raw: list[list[bytes]] = []

    def alloc(self, nbytes: int, stream: Any = None) -> int:
        ptr = self.next_ptr
        self.next_ptr += -(-max(nbytes, 1) // 512) * 512
        self.live.add(ptr)
        self.log.append(("alloc", nbytes, driver.stream_handle(stream), ptr))
        return ptr

    def free(self, ptr: int, stream: Any = None) -> None:
        self.live.remove(ptr)
        self.log.append(("free", ptr, driver.stream_handle(stream)))

    def allow_shared(self, func: Any, nbytes: int) -> None:
        self.log.append(("allow_shared", func, nbytes))

    def launch(self, func, grid, block, shared, stream, address):  # type: ignore[no-untyped-def]
        count = self.params[func]  # KeyError rather than reading past the argument array
        raw = []
        for i in range(count):
            p = ctypes.c_void_p.from_address(address + 8 * i).value
            raw.append(ctypes.string_at(p, 8))
        ptrs = tuple(int.from_bytes(b, "little") for b in raw)
        self.log.append(("launch", func, tuple(grid), tuple(block), shared, stream, ptrs))
        self.raw.append(raw)

    def empty(self, *size: Any, dtype: Any, device: Any) -> FakeTorchTensor:
        shape = fake_torch_shape(size)
        out = FakeTorchTensor(self.alloc_output(shape), shape)
        out.dtype = dtype
        self.outputs.append(out)
        return out

    def alloc_output(self, shape: Any) -> int:
        ptr = self.next_ptr
        self.next_ptr += -(-max(math.prod(shape) * 4, 1) // 512) * 512
        return ptr

    params: dict[str, int] = {}


class FakeFunction(str):
    """A loaded kernel: its name (the launch log's key) and a register count."""

    num_registers = 40


class _FakeModule:
    def get_function(self, name: str) -> str:
        return FakeFunction(name)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    fake = FakeGpu()
    fake.params = {}
    monkeypatch.setattr(driver, "gpu_available", lambda: True)
    patch_launch(monkeypatch, fake.launch)
    monkeypatch.setattr(driver, "alloc", fake.alloc)
    monkeypatch.setattr(driver, "free", fake.free)
    monkeypatch.setattr(driver, "set_max_dynamic_shared_memory", fake.allow_shared)
    monkeypatch.setattr(driver, "current_device", lambda: FakeDevice0())
    monkeypatch.setattr(driver, "get_device", lambda ordinal: FakeDevice0())
    monkeypatch.setattr(driver, "load_module", lambda cubin: _FakeModule())
    fe = frontends.TORCH_FRONTEND
    monkeypatch.setattr(fe, "empty", fake.empty)
    monkeypatch.setattr(fe, "raw_stream", lambda device: 0x7000 + device)
    monkeypatch.setattr(
        fe, "dtypes", {np.dtype(np.float32): "torch.float32", np.dtype(np.uint8): "torch.uint8"}
    )
    monkeypatch.setattr(fe, "output_specs", fake_output_specs)
    return fake


def chain3() -> FusionDefinition:
    """exp((a + b) * a) with a segment_set after the add and after the mul: three kernels."""
    with FusionDefinition("chain3") as fd:
        a = fd.define_tensor([-1], DataType.Float)
        b = fd.define_tensor([-1], DataType.Float)
        x = fd.ops.segment_set(fd.ops.add(a, b))
        y = fd.ops.segment_set(fd.ops.mul(x, a))
        fd.add_output(fd.ops.exp(y))
    return fd


def _torch_inputs(rng: np.random.Generator, n: int, count: int = 2) -> list[FakeTorchTensor]:
    return [FakeTorchTensor(int(p) * 256, (n,)) for p in rng.integers(1, 1 << 20, count)]


def test_segmented_execute_cache_and_fast_path(
    rng: np.random.Generator, gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    general: list[int] = []
    read_inputs = dispatch.read_inputs

    def counted(*args: Any, **kwargs: Any) -> Call:
        general.append(1)
        return read_inputs(*args, **kwargs)

    monkeypatch.setattr(dispatch, "read_inputs", counted)
    fd = chain3()
    compiler = FusionCompiler(fd.fusion)
    assert "def execute(inputs):" in compiler._signatures.fast_path_source
    n = 1024
    kernels = [f"fuser_chain3_p0_s{k}_pointwise" for k in range(3)]
    gpu.params = {kernels[0]: 3, kernels[1]: 3, kernels[2]: 2}
    for i in range(3):
        a, b = _torch_inputs(rng, n)
        start = len(gpu.log)
        (out,) = compiler.execute([a, b])
        assert (compiler.misses, compiler.hits) == (1, i)
        assert len(general) == 1  # only the first call took the general path
        assert out is gpu.outputs[-1] and out.shape == (n,)
        log = gpu.log[start:]
        # torch inputs: the workspace (both intermediates) is a torch byte tensor, no pool call
        assert [e[0] for e in log] == ["launch", "launch", "launch"]
        workspace = gpu.outputs[-2]
        assert workspace.shape == (2 * n * 4,) and workspace.dtype == "torch.uint8"
        base = workspace.data_ptr()
        l0, l1, l2 = log
        assert [e[1] for e in (l0, l1, l2)] == kernels
        spec = compiler._signatures.last
        assert spec is not None
        # the three launches write their arguments, then run as one graph before the
        # workspace goes back
        assert [f.__name__ for f in spec.code] == [
            "allocate_workspace",
            "launch",
            "launch",
            "allocate_output",
            "launch",
            "launch_graph",
            "free_workspace",
        ]
        for e, launch in zip((l0, l1, l2), spec.launches, strict=True):
            # the executor entry's launch configuration: one thread per 4 elements or more
            assert e[5] == 0x7000 and e[2] == launch.grid and e[3] == launch.block
            assert math.prod(e[2]) * math.prod(e[3]) * 4 >= n
        assert l0[6] == (a.data_ptr(), b.data_ptr(), base)
        assert l1[6] == (a.data_ptr(), base, base + n * 4)
        assert l2[6] == (base + n * 4, out.data_ptr())
    info = compiler.cache_info()
    assert info == {
        "hits": 2,
        "misses": 1,
        "heuristic_reuses": 0,
        "signatures": 1,
        "kernels": 3,
        "programs": 1,
        "stored": 0,
    }
    assert compiler.last_segments() == [SegmentSummary("pointwise", k) for k in kernels]
    code = compiler.last_cuda_code()
    assert all(f"void __launch_bounds__(128) {k}(" in code for k in kernels)
    text = compiler.host_ir()
    assert text.startswith("host.program @chain3(%t0: tensor<?xf32>, %t1: tensor<?xf32>)")
    assert text.count("host.launch @fuser_chain3_p0_s") == 3
    # both intermediates in one workspace, planned in the IR (fuser-plan-memory)
    assert text.count("host.workspace_view %workspace[") == 2 and "host.deallocate" not in text
    assert text.count("host.workspace %") == 1 and text.count("host.release %workspace") == 1
    # a new length with the same heuristics reuses the program; another one does not
    first = compiler._signatures.last
    compiler.execute(_torch_inputs(rng, 1024 + 512))
    assert compiler.cache_info()["heuristic_reuses"] == 1
    assert compiler.cache_info()["kernels"] == 3
    spec = compiler._signatures.last
    assert spec is not first and first is not None and spec.evaluator is first.evaluator
    # the launch configuration is the new signature's (more blocks, or more work per block)
    assert gpu.log[-3][2] == spec.launches[0].grid
    assert math.prod(spec.launches[0].grid) * 3 >= math.prod(first.launches[0].grid) * 2
    gpu.params |= {k.replace("_p0_", "_p1_"): n for k, n in gpu.params.items()}
    compiler.execute(_torch_inputs(rng, 1023))  # odd: vector width 1, other heuristics
    info = compiler.cache_info()
    assert (info["programs"], info["kernels"], info["misses"], info["signatures"]) == (2, 6, 3, 3)
    assert compiler.last_segments()[0].kernel == "fuser_chain3_p1_s0_pointwise"


class TickEvent:
    """A CUDA event whose records tick a clock by 1 ms each."""

    clock = 0

    def __init__(self, timing: bool = True) -> None:
        self.at = -1

    def record(self, stream: Any = None) -> TickEvent:
        TickEvent.clock += 1
        self.at = TickEvent.clock
        return self

    def synchronize(self) -> None:
        assert self.at >= 0, "an event synchronized before it was recorded"

    def elapsed_ms(self, end: TickEvent) -> float:
        return float(end.at - self.at)


def test_a_profiled_call_times_each_launch_of_a_program(
    rng: np.random.Generator, gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fd.execute(..., profile=True)` runs the program's launches one by one (no graph), each
    between two events on its stream: per kernel its name, scheduler, launch, registers, time
    and bytes; the call's span from the first start to the last end. The next unprofiled call
    runs the graph again."""
    monkeypatch.setattr(driver, "Event", TickEvent)
    monkeypatch.setattr(profiler, "copy_bandwidth", lambda device: 1.0e-3)  # 1 MB/ms
    monkeypatch.setattr(profiler, "_WAITERS", {})  # (the fake module's function stays here)
    fd = chain3()
    n = 1000
    kernels = [f"fuser_chain3_p0_s{k}_pointwise" for k in range(3)]
    gpu.params = {kernels[0]: 3, kernels[1]: 3, kernels[2]: 2, "fuser_profile_wait": 1}
    (out,) = fd.execute(_torch_inputs(rng, n), profile=True)
    assert out is gpu.outputs[-1]
    # the kernels queue behind a wait of 1 ms + 0.1 ms per launch (NVRTC compiled it)
    launched = [e for e in gpu.log if e[0] == "launch"]
    assert [e[1] for e in launched] == ["fuser_profile_wait", *kernels]
    assert launched[0][2:4] == ((1, 1, 1), (1, 1, 1))
    assert int.from_bytes(gpu.raw[0][0], "little") == 1_300_000  # ns
    profile = fd.profile()
    assert [k.name for k in profile.kernel_profiles] == kernels
    assert {k.scheduler for k in profile.kernel_profiles} == {"pointwise"}
    assert [k.time_ms for k in profile.kernel_profiles] == [1.0, 1.0, 1.0]
    assert profile.cuda_evt_time_ms == 5.0 and profile.kernel_time_ms == 3.0
    assert [(k.input_bytes, k.output_bytes) for k in profile.kernel_profiles] == [
        (8 * n, 4 * n),  # a + b
        (8 * n, 4 * n),  # (a + b) * a
        (4 * n, 4 * n),  # exp
    ]
    assert (profile.input_bytes, profile.output_bytes, profile.segments) == (8 * n, 4 * n, 3)
    spec = fd._fusion_compiler()._signatures.last
    assert spec is not None and not spec.one_launch
    for k, launch in zip(profile.kernel_profiles, spec.launches, strict=True):
        assert (k.grid, k.block, k.registers, k.stream) == (launch.grid, launch.block, 40, 0x7000)
    first = profile.kernel_profiles[0]
    assert first.effective_bandwidth_gbs == pytest.approx(12 * n / 1e6)
    assert first.percentage_peak_bandwidth == pytest.approx(100 * 12 * n / 1e6 / 1e-3)
    text = str(profile)
    assert text.startswith("fusion @chain3: 3 kernel(s), 5.0000 ms on the GPU")
    assert all(k in text for k in kernels)
    profiled = spec.evaluator.profiled_specializations
    (profiled_spec,) = profiled.values()
    assert "launch_graph" in [f.__name__ for f in spec.code]
    assert [f.__name__ for f in profiled_spec.code].count("timed_launch") == 3
    assert "launch_graph" not in [f.__name__ for f in profiled_spec.code]
    clock = TickEvent.clock
    fd.execute(_torch_inputs(rng, n))
    fd.execute(_torch_inputs(rng, n))  # the second run of a signature launches its graph
    assert TickEvent.clock == clock  # unprofiled: no events
    assert fd.profile() is profile


def test_a_profiled_call_of_one_kernel(
    rng: np.random.Generator, gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "Event", TickEvent)
    monkeypatch.setattr(profiler, "copy_bandwidth", lambda device: 2.0)
    monkeypatch.setattr(profiler, "_WAITERS", {})
    fd = _add_one()
    gpu.params = {"fuser_add_one_pointwise_0": 2, "fuser_profile_wait": 1}
    a = _torch_inputs(rng, 4096, 1)
    fd.execute(a)  # compiled by an unprofiled call: the profile's compile time is 0
    (out,) = fd.execute(a, profile=True)
    profile = fd.profile()
    (k,) = profile.kernel_profiles
    assert (k.name, k.scheduler, k.time_ms, k.registers) == (
        "fuser_add_one_pointwise_0",
        "pointwise",
        1.0,
        40,
    )
    assert (k.input_bytes, k.output_bytes) == (4 * 4096, 4 * 4096)
    assert profile.compile_time_ms == 0 and profile.cuda_evt_time_ms == 1.0
    assert out is gpu.outputs[-1]


def _add_one() -> FusionDefinition:
    with FusionDefinition("add_one") as fd:
        a = fd.define_tensor([-1], DataType.Float)
        fd.add_output(fd.ops.add(a, a))
    return fd


def _launches(log: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The launches of a log: kernel, grid, block and shared memory each."""
    return [e[1:5] for e in log if e[0] == "launch"]


def test_runnable_store_serves_a_new_compiler_without_the_builder(
    rng: np.random.Generator, gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A signature run once is run again by a new compiler of the same fusion (a new process)
    from the runnable store: the same launches, nothing scheduled or compiled, for a program
    and for one kernel. Another shape, other options, a damaged record or another fuser build
    compile again."""
    from fuser import builder
    from fuser.runtime import compiled_kernel, runnable_store

    monkeypatch.setenv("FUSER_KERNEL_CACHE", "1")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSER_RUNNABLE_STORE", "1")
    gpu.params = {f"fuser_chain3_p0_s{k}_pointwise": 3 - (k == 2) for k in range(3)}
    gpu.params |= {"fuser_add_one_pointwise_0": 2, "fuser_add_one_pointwise_1": 2}
    n = 1000
    first: dict[str, list[tuple[Any, ...]]] = {}
    compilers = {}
    for make in (chain3, _add_one):
        compiler = compilers[make] = FusionCompiler(make().fusion)
        start = len(gpu.log)
        compiler.execute(_torch_inputs(rng, n, len(make().fusion.inputs)))
        first[make.__name__] = _launches(gpu.log[start:])
        assert compiler.cache_info()["stored"] == 0
    runnable_store.flush()  # (records are written on a thread)
    assert len(list(tmp_path.glob("kernels/*.run"))) == 2
    assert len(list(tmp_path.glob("kernels/*.kernel"))) == 4
    # a new length the program serves again: a record, and no kernel written twice
    compilers[chain3].execute(_torch_inputs(rng, n + 512))
    assert compilers[chain3].cache_info()["heuristic_reuses"] == 1
    runnable_store.flush()
    assert len(list(tmp_path.glob("kernels/*.run"))) == 3
    assert len(list(tmp_path.glob("kernels/*.kernel"))) == 4

    def no_builder(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the builder was made")

    def no_nvrtc(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("NVRTC compiled")

    with monkeypatch.context() as m:
        m.setattr(builder.FusionBuilder, "__init__", no_builder)
        m.setattr(compiled_kernel, "nvrtc_compile", no_nvrtc)
        for make in (chain3, _add_one):
            compiler = FusionCompiler(make().fusion)
            inputs = _torch_inputs(rng, n, len(make().fusion.inputs))
            start = len(gpu.log)
            (out,) = compiler.execute(inputs)
            log = gpu.log[start:]
            assert _launches(log) == first[make.__name__]
            assert out is gpu.outputs[-1] and out.shape == (n,)
            assert next(e[6][0] for e in log if e[0] == "launch") == inputs[0].data_ptr()
            info = compiler.cache_info()
            assert (info["stored"], info["kernels"], info["programs"]) == (1, 0, 0)
            compiler.execute(inputs)  # the fast path runs the loaded runnable
            assert _launches(gpu.log[start:]) == 2 * first[make.__name__]
            assert compiler.hits == 1
    # describing a loaded signature builds it again; a new shape compiles
    assert compiler.last_segments() == [SegmentSummary("pointwise", "fuser_add_one_pointwise_0")]
    compiler.execute(_torch_inputs(rng, n + 3, 1))
    assert compiler.cache_info()["stored"] == 1
    runnable_store.flush()
    # other options, another build of fuser, a damaged record: nothing loaded
    assert (
        FusionCompiler(chain3().fusion, streams=2)._store.load(  # type: ignore[union-attr]
            FusionCompiler(chain3().fusion).signature_of(_torch_inputs(rng, n))
        )
        is None
    )
    key = FusionCompiler(_add_one().fusion).signature_of(_torch_inputs(rng, n, 1))
    store = FusionCompiler(_add_one().fusion)._store
    assert store is not None and store.load(key) is not None
    with monkeypatch.context() as m:
        m.setattr(runnable_store, "build_id", lambda: "another build")
        other = FusionCompiler(_add_one().fusion)._store
        assert other is not None and other.load(key) is None
    for path in tmp_path.glob("kernels/*.run"):
        data = bytearray(path.read_bytes())
        data[-2] ^= 1
        path.write_bytes(bytes(data))
    assert store.load(key) is None
    assert store.loaded == 1


SUM_DIV = """
fusion.fusion @sum_div(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.div %z, %sb : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}
"""


def _fusion(text: str) -> Any:
    from fuser.dialects import fusion as fu

    ctx = Context()
    ctx.load_dialect(Builtin)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, text).parse_module()
    return next(op for op in module.walk() if isinstance(op, fu.FusionOp))


def test_one_kernel_for_some_shapes_a_program_for_others(
    rng: np.random.Generator, gpu: FakeGpu
) -> None:
    """Rows that fit in registers: one persistent kernel; rows that do not: two segments.
    Both kinds of signature are served by one compiler, from its one signature cache."""
    compiler = FusionCompiler(_fusion(SUM_DIV))
    small = [FakeTorchTensor(1 << 20, (3, 127)), FakeTorchTensor(1 << 21, (3, 127))]
    big = [FakeTorchTensor(1 << 30, (3, 70000)), FakeTorchTensor(1 << 31, (3, 70000))]
    gpu.params = {"fuser_sum_div_persistent_0": 3}
    compiler.execute(small)
    assert compiler.last_segments() == [SegmentSummary("persistent", "fuser_sum_div_persistent_0")]
    gpu.params |= {"fuser_sum_div_p0_s0_reduction": 2, "fuser_sum_div_p0_s1_pointwise": 3}
    compiler.execute(big)
    assert [s.scheduler for s in compiler.last_segments()] == ["reduction", "pointwise"]
    compiler.execute(small)  # the same cache: the persistent kernel's entry
    assert compiler.last_segments()[0].scheduler == "persistent"
    compiler.execute(big)
    info = compiler.cache_info()
    assert (info["hits"], info["misses"], info["kernels"], info["programs"]) == (2, 2, 3, 1)
    launches = [e for e in gpu.log if e[0] == "launch"]
    assert [e[1] for e in launches] == [
        "fuser_sum_div_persistent_0",
        "fuser_sum_div_p0_s0_reduction",
        "fuser_sum_div_p0_s1_pointwise",
        "fuser_sum_div_persistent_0",
        "fuser_sum_div_p0_s0_reduction",
        "fuser_sum_div_p0_s1_pointwise",
    ]
    assert not gpu.live


def test_two_threads_share_one_compiler(rng: np.random.Generator, gpu: FakeGpu) -> None:
    fd = chain3()
    compiler = FusionCompiler(fd.fusion)
    gpu.params = {f"fuser_chain3_p0_s{k}_pointwise": 3 - (k == 2) for k in range(3)}
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    outputs: list[Any] = []

    def work() -> None:
        try:
            barrier.wait()
            for _ in range(20):
                outputs.extend(compiler.execute(_torch_inputs(rng, 256)))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(outputs) == 40
    info = compiler.cache_info()
    assert (info["programs"], info["kernels"], info["hits"] + info["misses"]) == (1, 3, 40)
    assert not gpu.live


@pytest.mark.parametrize("segmented", [False, True])
def test_a_failed_graph_launch_is_retried_then_reported(
    rng: np.random.Generator, gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch, segmented: bool
) -> None:
    """The fast paths launch their kernels as graphs; when a graph fails, its kernels are
    launched one by one through `driver.launch` (then once more with the device made current),
    and that launch's fuser error reaches the caller."""
    with FusionDefinition("add") as add:
        a = add.define_tensor([-1], DataType.Float)
        add.add_output(add.ops.add(a, add.define_tensor([-1], DataType.Float)))
    compiler = FusionCompiler((chain3() if segmented else add).fusion)
    gpu.params = {f"fuser_chain3_p0_s{k}_pointwise": 3 - (k == 2) for k in range(3)}
    gpu.params["fuser_add_pointwise_0"] = 3
    compiler.execute(_torch_inputs(rng, 256))  # the general path loads the kernels
    launched = len(gpu.log)
    assert compiler.execute(_torch_inputs(rng, 256))  # the fast path: one graph
    assert len(gpu.log) - launched == (3 if segmented else 1)
    retried: list[str] = []

    def failing_launch(func: Any, *rest: Any) -> None:
        retried.append(func)
        raise CudaError(f"cuLaunchKernel failed for kernel {func!r}: out of resources")

    monkeypatch.setattr(driver, "launch", failing_launch)  # the graph's kernels fail too
    with pytest.raises(CudaError, match="cuLaunchKernel failed for kernel"):
        compiler.execute(_torch_inputs(rng, 256))
    assert (compiler.misses, compiler.hits) == (1, 2)  # the fast path launched
    first = "fuser_chain3_p0_s0_pointwise" if segmented else "fuser_add_pointwise_0"
    # the graph, then the kernel alone, then (a program's) once more with its device current
    assert retried == [first] * (3 if segmented else 2)
    assert not gpu.live


def test_compile_without_gpu_lists_each_segment(rng: np.random.Generator) -> None:
    fd = chain3()
    compiled = fd.compile([np.ones(1000, np.float32), np.ones(1000, np.float32)], arch="sm_80")
    assert compiled.summary().startswith("@chain3 for sm_80: 3 kernels")
    assert [k.scheduler for k in compiled.kernels] == ["pointwise"] * 3
    assert all(k.arch == "sm_80" and k.cubin_size > 1000 for k in compiled.kernels)
    assert fd.last_segments() == [
        SegmentSummary("pointwise", f"fuser_chain3_p0_s{k}_pointwise") for k in range(3)
    ]
    assert fd.last_cuda_code() == compiled.cuda_code()
    assert "host.launch @fuser_chain3_p0_s2_pointwise" in fd.host_ir()
    again = fd.compile([np.ones(1016, np.float32), np.ones(1016, np.float32)], arch="sm_80")
    assert [k.name for k in again.kernels] == [k.name for k in compiled.kernels]
    assert fd.cache_info()["heuristic_reuses"] == 1


def test_host_ir_of_a_single_kernel_fusion(rng: np.random.Generator) -> None:
    with FusionDefinition("axpy") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        y = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.mul(x, 2.0), y))
    x = rng.standard_normal((3, 5)).astype(np.float32)
    compiled = fd.compile([x, x], arch="sm_90")
    name = compiled.kernels[0].name
    text = fd.host_ir()
    assert f"host.launch @{name} grid(" in text and "host.allocate(%t0_d0, %t0_d1)" in text
    assert fd.last_segments() == [SegmentSummary("pointwise", name)]


# --------------------------------------------------------------------------------------------
# FUSER_DUMP


def test_dump_prints_each_stage(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        dump.configure("segments,host_ir,launch_params,segmenter_log,cuda,kernel_ir,fusion_ir")
        fd = chain3()
        fd.compile([np.ones(16, np.float32), np.ones(16, np.float32)], arch="sm_90")
    finally:
        dump.configure("")
    err = capsys.readouterr().err
    headers = [line for line in err.splitlines() if line.startswith("===== FUSER_DUMP")]
    names = [f"fuser_chain3_p0_s{k}_pointwise" for k in range(3)]
    assert headers == [
        "===== FUSER_DUMP fusion_ir: @chain3 =====",
        "===== FUSER_DUMP segmenter_log: @chain3 =====",
        "===== FUSER_DUMP segments: @chain3 =====",
        *(f"===== FUSER_DUMP {stage}: {n} =====" for n in names for stage in ("kernel_ir", "cuda")),
        "===== FUSER_DUMP host_ir: @chain3 =====",
    ]
    assert "whole fusion: not tried: it holds segment_set" in err
    assert err.count('fusion.segment "pointwise"') == 3
    assert "host.program @chain3" in err and 'extern "C" __global__' in err


def test_dump_reads_the_environment_once() -> None:
    code = (
        "import os\n"
        "import numpy as np\n"
        "from fuser import DataType, FusionDefinition, dump\n"
        "with FusionDefinition('f') as fd:\n"
        "    a = fd.define_tensor([-1], DataType.Float)\n"
        "    fd.add_output(fd.ops.exp(fd.ops.segment_set(fd.ops.neg(a))))\n"
        "fd.compile([np.ones(4, np.float32)], arch='sm_90')\n"
        "os.environ['FUSER_DUMP'] = ''\n"
        "assert dump.enabled('host_ir')\n"
    )
    env = dict(os.environ, FUSER_DUMP="host_ir,nonsense")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "fuser: FUSER_DUMP: unknown stage(s) nonsense (known: all, python_definition," in err
    assert "===== FUSER_DUMP host_ir: @f =====" in err and "host.launch" in err
    assert "FUSER_DUMP segments" not in err and "FUSER_DUMP cuda" not in err


def test_scalar_arguments_reach_the_kernels(gpu: FakeGpu) -> None:
    """A scalar input of the fusion is passed to each segment that reads it."""
    with FusionDefinition("scaled") as fd:
        a = fd.define_tensor([-1], DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        x = fd.ops.segment_set(fd.ops.mul(a, s))
        fd.add_output(fd.ops.add(x, s))
    compiler = FusionCompiler(fd.fusion)
    gpu.params = {"fuser_scaled_p0_s0_pointwise": 3, "fuser_scaled_p0_s1_pointwise": 3}
    compiler.execute([FakeTorchTensor(1 << 20, (64,)), 2.5])
    launches = [e for e in gpu.log if e[0] == "launch"]
    assert [e[1] for e in launches] == list(gpu.params)
    # the segments take (%t0, %s0) and (%s0, %t2): fusion inputs come first
    assert "ins(%s0, %t2 : f32, tensor<?xf32>)" in compiler.host_ir()
    assert gpu.raw[0][1][:4] == gpu.raw[1][0][:4] == struct.pack("<f", 2.5)
    assert launches[0][6][2] == launches[1][6][1]  # the intermediate


def test_fuser_run_compiles_a_segmented_fusion(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from fuser.run import main

    path = Path(__file__).parent.parent / "lit_tests/transforms/lower_to_host/segment_set.mlir"
    status = main([str(path), "--shapes", "30x100,30x100", "--compile-only", "--print-cuda"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "@forced for sm_90: 3 kernels" in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("  #")] == [
        f"fuser_forced_p0_s{k}_pointwise" for k in range(3)
    ]
    assert out.count("// ---- fuser_forced_p0_s") == 3
    assert "compiled 3 kernels for sm_90" in out


def test_dump_launch_params_of_each_new_signature(
    rng: np.random.Generator, gpu: FakeGpu, capsys: pytest.CaptureFixture[str]
) -> None:
    compiler = FusionCompiler(chain3().fusion)
    gpu.params = {f"fuser_chain3_p0_s{k}_pointwise": 3 - (k == 2) for k in range(3)}
    try:
        dump.configure("launch_params")
        compiler.execute(_torch_inputs(rng, 1024))
        compiler.execute(_torch_inputs(rng, 1024))  # a hit: nothing printed
        compiler.execute(_torch_inputs(rng, 1024 + 512))  # a new signature, the same program
    finally:
        dump.configure("")
    err = capsys.readouterr().err
    assert err.count("===== FUSER_DUMP launch_params: @chain3 =====") == 2
    launches = [e for e in gpu.log if e[0] == "launch"]
    for e in (*launches[:3], *launches[-3:]):
        grid, block = list(e[2]), list(e[3])
        assert f"{e[1]}: grid={grid} block={block} smem=0" in err


def _edited_run(
    compiler: FusionCompiler, edit: Callable[[str], str], inputs: list[FakeTorchTensor]
) -> HostEvaluator:
    """The compiler's last program, printed, edited as text, parsed back and set up to run
    with the compiler's kernels (`ExecutorKernel`s): the evaluator runs the IR it is given."""
    from fuser.runtime.kernel_binding import ExecutorKernel

    program = compiler.builder._programs[-1]
    text = edit(compiler.host_ir())
    _, edited = parse_module(text)
    kernels = {
        s.kernel_name: ExecutorKernel(e)
        for s, e in zip(program.lowering.segments, program.executors, strict=True)
    }
    evaluator = HostEvaluator(edited, kernels)
    evaluator.run(read_inputs_for(evaluator, inputs))
    return evaluator


def read_inputs_for(evaluator: HostEvaluator, inputs: list[FakeTorchTensor]) -> Call:
    from fuser.runtime.calls import InputLayout, read_inputs

    names = [f"input #{i}" for i in range(len(inputs))]
    return read_inputs(inputs, InputLayout(evaluator.name, names, evaluator.is_tensor))


def test_host_ir_launch_parameters_are_obeyed(
    rng: np.random.Generator, gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch edited in the printed host IR runs as edited: a grid replaced by constants is
    launched, more dynamic shared memory is asked for; a block or shared memory the kernel was
    not compiled for is refused, naming the launch."""
    compiler = FusionCompiler(chain3().fusion)
    kernels = [f"fuser_chain3_p0_s{k}_pointwise" for k in range(3)]
    gpu.params = {kernels[0]: 3, kernels[1]: 3, kernels[2]: 2}
    n = int(rng.integers(300, 5000))
    inputs = _torch_inputs(rng, n)
    compiler.execute(inputs)
    text = compiler.host_ir()
    assert text.count("host.grid @fuser_chain3_p0_s") == 3  # computed per call, in the IR
    computed = [e[2] for e in gpu.log if e[0] == "launch"]

    def fixed_grid(text: str) -> str:
        header, body = text.split("\n", 1)
        first = re.search(r"grid\((%\w+), (%\w+), (%\w+)\)", body)
        assert first is not None
        body = body.replace(first.group(0), "grid(%c7, %c3, %c1_edit)", 1)
        constants = "".join(
            f"  %{name} = arith.constant {v} : index\n"
            for name, v in (("c7", 7), ("c3", 3), ("c1_edit", 1))
        )
        return f"{header}\n{constants}{body}"

    start = len(gpu.log)
    _edited_run(compiler, fixed_grid, inputs)
    launches = [e for e in gpu.log[start:] if e[0] == "launch"]
    assert [e[2] for e in launches] == [(7, 3, 1), *computed[1:3]]
    assert computed[0] != (7, 3, 1)

    start = len(gpu.log)
    _edited_run(compiler, lambda t: t.replace("smem 0", "smem 4096", 1), inputs)
    assert [e[4] for e in gpu.log[start:] if e[0] == "launch"] == [4096, 0, 0]
    # the kernel is opted into the larger size first (static and dynamic may pass 48 KiB)
    assert [e[2] for e in gpu.log[start:] if e[0] == "allow_shared"] == [4096]

    with pytest.raises(CompilationError, match=r"block \[64, 1, 1\], but kernel .* compiled for"):
        _edited_run(compiler, lambda t: re.sub(r"block \[\d+", "block [64", t, count=1), inputs)
