"""Sharded fusions in nvFuser's spelling, shared by the simulated-world tests
(`test_multidevice.py`) and the GPU worker (`gpu/multidevice_worker.py`). Each builder takes
`sharded=False` for the same fusion without placements: the single-GPU fusion a sharded run is
compared with."""

from __future__ import annotations

from collections.abc import Sequence

from fuser import DataType, FusionDefinition, ParallelType
from fuser.multidevice import DeviceMesh


def pointwise(
    size: int, gather: bool, shape: Sequence[int] = (-1, -1), axis: int = 0, sharded: bool = True
) -> FusionDefinition:
    mesh = DeviceMesh(range(size))
    with FusionDefinition() as fd:
        x = fd.define_tensor(list(shape), dtype=DataType.Float)
        y = fd.ops.add(fd.ops.relu(x), x)
        fd.add_output(y)
        if sharded:
            x.set_device_mesh(mesh)
            x.axis(axis).parallelize(ParallelType.mesh_x)
            if gather:
                y.set_device_mesh(mesh)  # replicated: an allgather
    return fd


def rms_norm(
    size: int, hidden: int, dtype: DataType = DataType.Float, sharded: bool = True
) -> FusionDefinition:
    """RMS norm with the hidden axis split: a partial sum of squares, an allreduce, the local
    epilogue; the weight split alike."""
    mesh = DeviceMesh(range(size))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, hidden], dtype=dtype)
        w = fd.define_tensor([hidden], dtype=dtype)
        xf = fd.ops.cast(x, DataType.Float)
        ss = fd.ops.sum(fd.ops.mul(xf, xf), [1], keepdim=True)
        inv = fd.ops.rsqrt(fd.ops.add(fd.ops.div(ss, hidden), 1e-6))
        y = fd.ops.mul(fd.ops.mul(xf, inv), fd.ops.cast(w, DataType.Float))
        fd.add_output(fd.ops.cast(y, dtype))
        for t in (x, w) if sharded else ():
            t.set_device_mesh(mesh)
            t.axis(t.ndim - 1).parallelize(ParallelType.mesh_x)
    return fd


def layer_norm(
    size: int,
    hidden: int,
    split_weight: bool = True,
    sharded: bool = True,
    dtype: DataType = DataType.Float,
) -> FusionDefinition:
    """Layer norm with the hidden axis split, its statistics as two sums (one allreduce of both):
    mean = sum(x) / H, var = sum(x * x) / H - mean^2."""
    mesh = DeviceMesh(range(size))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, hidden], dtype=dtype)
        w = fd.define_tensor([hidden], dtype=dtype)
        b = fd.define_tensor([hidden], dtype=dtype)
        xf = fd.ops.cast(x, DataType.Float)
        s1 = fd.ops.sum(xf, [1], keepdim=True)
        s2 = fd.ops.sum(fd.ops.mul(xf, xf), [1], keepdim=True)
        mean = fd.ops.div(s1, hidden)
        var = fd.ops.sub(fd.ops.div(s2, hidden), fd.ops.mul(mean, mean))
        inv = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
        wf, bf = fd.ops.cast(w, DataType.Float), fd.ops.cast(b, DataType.Float)
        y = fd.ops.add(fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, mean), inv), wf), bf)
        fd.add_output(fd.ops.cast(y, dtype))
        if not sharded:
            return fd
        for t in (x, w, b):
            t.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
        if split_weight:
            w.axis(0).parallelize(ParallelType.mesh_x)
            b.axis(0).parallelize(ParallelType.mesh_x)
    return fd


def tp_mlp(
    size: int, k: int, n: int, dtype: DataType = DataType.Float, sharded: bool = True
) -> FusionDefinition:
    """Megatron's MLP: a column-parallel linear (w1 split along its rows), GELU, a row-parallel
    linear (w2 split along K): a partial sum, then an allreduce."""
    mesh = DeviceMesh(range(size))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, k], dtype=dtype)
        w1 = fd.define_tensor([n, k], dtype=dtype)
        w2 = fd.define_tensor([k, n], dtype=dtype)
        h = fd.ops.gelu(fd.ops.cast(fd.ops.linear(x, w1), DataType.Float), approximate="tanh")
        y = fd.ops.linear(fd.ops.cast(h, dtype), w2)
        fd.add_output(y)
        if not sharded:
            return fd
        for t in (x, w1, w2):
            t.set_device_mesh(mesh)
        w1.outer_split(0, size)
        w1.axis(0).parallelize(ParallelType.mesh_x)
        w2.axis(1).parallelize(ParallelType.mesh_x)
    return fd


def reduce_scatter_sum(size: int) -> FusionDefinition:
    """A sum over the split axis placed split along the kept one: a reduce-scatter."""
    mesh = DeviceMesh(range(size))
    with FusionDefinition() as fd:
        x = fd.define_tensor([8 * size, 6 * size], dtype=DataType.Float)
        s = fd.ops.sum(x, [1])
        fd.add_output(s)
        for t in (x, s):
            t.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
        s.axis(0).parallelize(ParallelType.mesh_x)
    return fd


def broadcast_from_one(size: int) -> FusionDefinition:
    """A tensor computed on device 0, then set onto every device: a broadcast."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([5, 7], dtype=DataType.Float)
        y = fd.ops.set(fd.ops.exp(x))
        fd.add_output(fd.ops.add(y, 1.0))
        x.set_device_mesh(DeviceMesh([0]))
        y.set_device_mesh(DeviceMesh(range(size)))
    return fd


def pipeline() -> FusionDefinition:
    """Device 0 computes, device 1 goes on from its result: a send and a recv."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([64, 32], dtype=DataType.Float)
        h = fd.ops.set(fd.ops.tanh(x))
        fd.add_output(fd.ops.mul(h, 2.0))
        x.set_device_mesh(DeviceMesh([0]))
        h.set_device_mesh(DeviceMesh([1]))
    return fd
