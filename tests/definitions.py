"""Fusion definitions more than one test file builds (CPU and GPU tests alike): each is written
once here, so a scheduler's CPU test and its GPU test check the same fusion.

(pytest puts tests/ on `sys.path`, so test files, the GPU ones included, import this as
`definitions`.)
"""

from __future__ import annotations

import functools
from typing import Any

from fuser import DataType, FusionDefinition


def to_f32(fd: FusionDefinition, t: Any) -> Any:
    """`t` in f32 (a cast unless it is f32 or f64 already)."""
    return t if t.dtype in (DataType.Float, DataType.Double) else fd.ops.cast(t, DataType.Float)


def back(fd: FusionDefinition, t: Any, dtype: DataType) -> Any:
    """`t` cast back to `dtype` (nothing where it is already)."""
    return t if dtype == t.dtype else fd.ops.cast(t, dtype)


@functools.cache
def softmax(dtype: DataType) -> FusionDefinition:
    """Softmax over dim 1 of a 2-D tensor, computed in f32."""
    with FusionDefinition(f"softmax_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1], dtype)
        xf = to_f32(fd, x)
        m = fd.ops.broadcast_in_dim(fd.ops.max(xf, [1]), x.shape(), [0])
        e = fd.ops.exp(fd.ops.sub(xf, m))
        total = fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), x.shape(), [0])
        fd.add_output(back(fd, fd.ops.div(e, total), dtype))
    return fd


def logsumexp_bf16() -> FusionDefinition:
    """logsumexp over dim 1 of a bf16 matrix (f32 result): at 32768 columns the persistent
    kernel fills a 1024-thread block and multi-kernel times the looped one against it."""
    with FusionDefinition("lse") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        xf = fd.ops.cast(x, DataType.Float)
        m = fd.ops.max(xf, [1])
        e = fd.ops.exp(fd.ops.sub(xf, fd.ops.broadcast_in_dim(m, x.shape(), [0])))
        fd.add_output(fd.ops.add(fd.ops.log(fd.ops.sum(e, [1])), m))
    return fd


def attention_softmax() -> FusionDefinition:
    """Attention's softmax: over the last dim of [batch, heads, queries, keys], in f32."""
    with FusionDefinition("attention_softmax") as fd:
        x = fd.define_tensor([-1, -1, -1, -1], DataType.Float)
        m = fd.ops.broadcast_in_dim(fd.ops.max(x, [3]), x.shape(), [0, 1, 2])
        e = fd.ops.exp(fd.ops.sub(x, m))
        s = fd.ops.broadcast_in_dim(fd.ops.sum(e, [3]), x.shape(), [0, 1, 2])
        fd.add_output(fd.ops.div(e, s))
    return fd


@functools.cache
def row_sum(
    dtype: DataType, rank: int = 2, keepdim: bool = False, squared: bool = False
) -> FusionDefinition:
    """The sum over the last dim of a 1-D or 2-D tensor, in f32 (for a few long rows,
    `split-reductions`' row split); `squared` adds `x * x` as a full-shape output beside it."""
    with FusionDefinition(f"row_sum_{dtype.name}_{rank}_{keepdim}_{squared}") as fd:
        x = fd.define_tensor([-1] * rank, dtype)
        fd.add_output(fd.ops.sum(to_f32(fd, x), [rank - 1], keepdim=keepdim))
        if squared:
            fd.add_output(fd.ops.mul(x, x))
    return fd


def rotate(dtype: DataType, d: int) -> FusionDefinition:
    """`x * c + cat(-x[..., d/2:], x[..., :d/2]) * s`, a rotary embedding's core, c and s
    broadcast over the rows (the pad/cat tests, CPU and GPU)."""
    f32 = DataType.Float
    with FusionDefinition(f"rotate_{dtype.name}_{d}") as fd:
        x = fd.define_tensor([-1, -1, d], dtype)
        c = fd.define_tensor([-1, d], dtype)
        s = fd.define_tensor([-1, d], dtype)
        shape = [x.size(0), x.size(1), d]
        xf = fd.ops.cast(x, f32)
        lo = fd.ops.slice(xf, [0, 0, 0], [x.size(0), x.size(1), d // 2])
        hi = fd.ops.slice(xf, [0, 0, d // 2], [x.size(0), x.size(1), d])
        rotated = fd.ops.cat([fd.ops.neg(hi), lo], -1)
        cf = fd.ops.cast(fd.ops.broadcast_in_dim(c, shape=shape, broadcast_dims=[1, 2]), f32)
        sf = fd.ops.cast(fd.ops.broadcast_in_dim(s, shape=shape, broadcast_dims=[1, 2]), f32)
        fd.add_output(fd.ops.cast(fd.ops.add(fd.ops.mul(xf, cf), fd.ops.mul(rotated, sf)), dtype))
    return fd


def permuted_beside_source() -> FusionDefinition:
    """Two outputs of the space's shape, `exp(x).T` and `exp(x)`: each stored at its own
    offsets (a regression: the pointwise kernel's dense offset once ignored an output's map)."""
    with FusionDefinition("perm") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        w = fd.ops.exp(x)
        fd.add_output(fd.ops.permute(w, [1, 0]))
        fd.add_output(w)
    return fd


def embedding(dtype: DataType, ids_rank: int = 2, **options: Any) -> FusionDefinition:
    """`embedding_fwd(ids, weight, **options)`: ids Int of `ids_rank` dims, weight
    [num_embeddings, embedding_dim] of `dtype`."""
    with FusionDefinition(f"embedding_{dtype.name}_{ids_rank}") as fd:
        ids = fd.define_tensor([-1] * ids_rank, DataType.Int)
        weight = fd.define_tensor([-1, -1], dtype)
        fd.add_output(fd.ops.embedding_fwd(ids, weight, **options))
    return fd


def taken_through_computations(dtype: DataType) -> FusionDefinition:
    """Takes that fuse with what they read and what reads them: rows of exp(w) at i + 1, a
    take at an index itself taken (w[i[j]]), padded; a select at a run-time position."""
    with FusionDefinition(f"computed_takes_{dtype.name}") as fd:
        w = fd.define_tensor([-1, 16], dtype)
        i = fd.define_tensor([-1], DataType.Int32)
        j = fd.define_tensor([-1], DataType.Int)
        s = fd.define_scalar(DataType.Int)
        rows = fd.ops.index_select(fd.ops.exp(to_f32(fd, w)), fd.ops.add(i, 1), 0)
        nested = to_f32(fd, fd.ops.index_select(w, fd.ops.index_select(i, j, 0), 0))
        fd.add_output(back(fd, fd.ops.pad(fd.ops.add(rows, nested), [2, 1]), dtype))
        fd.add_output(fd.ops.select(w, s, 0))
    return fd


def cpu_scalar_scale() -> FusionDefinition:
    """A bf16 tensor times a CPU scalar tensor (Thunder's `is_cpu=True` input), and the scalar
    plus one (a 0-d output from it alone)."""
    with FusionDefinition("cpu_scale") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        s = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(fd.ops.mul(x, s))
        fd.add_output(fd.ops.add(s, 1.0))
    return fd


def running_mean_update() -> FusionDefinition:
    """Batch norm's running mean updated in place (`add_output`'s `alias_input`) beside the batch
    mean it returns: the aliased input is read by the fusion too."""
    with FusionDefinition("running_mean") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        running = fd.define_tensor([-1], DataType.Float)
        _, mean = fd.ops.var_mean(x, [0])
        fd.add_output(
            fd.ops.add(fd.ops.mul(running, 0.9), fd.ops.mul(mean, 0.1)), alias_input=running
        )
        fd.add_output(mean)
    return fd


def linear_layer(
    dtype: DataType, a_shape: list[int], n: int, bias: bool = True
) -> FusionDefinition:
    """`fd.ops.linear(a, w, bias)`: `a` of `a_shape` (-1 dynamic), `w` [n, K] with K static as
    `a`'s last extent, `bias` [n]."""
    with FusionDefinition(f"linear_{dtype.name}_{len(a_shape)}{'_bias' if bias else ''}") as fd:
        a = fd.define_tensor(a_shape, dtype)
        w = fd.define_tensor([n, a_shape[-1]], dtype)
        b = fd.define_tensor([n], dtype) if bias else None
        fd.add_output(fd.ops.linear(a, w, b))
    return fd


def matmul_of_ranks(a_shape: list[int], b_shape: list[int]) -> FusionDefinition:
    """`fd.ops.matmul(a, b)` of f32 operands of the given shapes (-1 dynamic, 1 a broadcast)."""
    with FusionDefinition("matmul_ranks") as fd:
        a = fd.define_tensor(a_shape, DataType.Float)
        b = fd.define_tensor(b_shape, DataType.Float)
        fd.add_output(fd.ops.matmul(a, b))
    return fd
