"""The fusible regions of a nanoGPT/litGPT transformer block's forward as Lightning Thunder hands
them to nvFuser, written in the form its nvFuser executor emits (`define_tensor(shape=,
contiguity=, dtype=, is_cpu=, stride_order=)`, constants through `define_scalar(value, dtype=)`,
keyword arguments, static shapes): RMSNorm, the q/k/v split of a fused projection into heads,
the causal-masked softmax with its mask from iotas, SwiGLU, the heads merge (its permute put
row-major with `stride_order`, as Thunder does), and a
cross-entropy forward through `take_along_axis`, the rotary embedding (its slice-rotate-cat
forward, and its backward through two pads), and a residual add after dropout.

Each region is a function of (dtype, sizes) returning the FusionDefinition and a numpy function
of the same inputs that computes what it must (float64), so the CPU test checks the reference
interpreter against numpy and the GPU test the kernels against the reference.

(pytest puts tests/ on `sys.path`: the GPU tests import this as `thunder_regions`.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special
from xdsl.dialects.builtin import TensorType

from fuser import DataType, FusionDefinition
from fuser.dialects.fusion import row_major_order
from fuser.runtime import philox

Region = tuple[FusionDefinition, Callable[..., list[np.ndarray]]]
"""A region's definition, and numpy (float64) computing its outputs from the same inputs."""

EPS = 1e-5


def _tensor(fd: FusionDefinition, shape: list[int], dtype: DataType) -> Any:
    """A contiguous input, as Thunder defines one."""
    return fd.define_tensor(
        shape=shape,
        contiguity=[True] * len(shape),
        dtype=dtype,
        is_cpu=False,
        stride_order=list(row_major_order(len(shape))),
    )


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64)


def rms_norm(dtype: DataType, b: int, t: int, c: int) -> Region:
    with FusionDefinition(f"rms_norm_{dtype.name}") as fd:
        x = _tensor(fd, [b, t, c], dtype)
        w = _tensor(fd, [c], dtype)
        xf = fd.ops.cast(x, dtype=DataType.Float)
        ms = fd.ops.sum(fd.ops.mul(xf, xf), dims=[2], keepdim=True)
        s0 = fd.define_scalar(float(c), dtype=DataType.Double)
        s1 = fd.define_scalar(EPS, dtype=DataType.Double)
        inv = fd.ops.rsqrt(fd.ops.add(fd.ops.div(ms, s0), s1))
        wb = fd.ops.broadcast_in_dim(w, shape=[b, t, c], broadcast_dims=[2])
        y = fd.ops.mul(fd.ops.mul(xf, inv), fd.ops.cast(wb, dtype=DataType.Float))
        fd.add_output(fd.ops.cast(y, dtype=dtype))

    def expected(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        xf = _f64(x)
        return [xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + EPS) * _f64(w)]

    return fd, expected


def qkv_heads(dtype: DataType, b: int, t: int, heads: int, hs: int) -> Region:
    """q, k and v of a fused projection [b, t, 3 * heads * hs], each into [b, heads, t, hs]."""
    c = heads * hs
    with FusionDefinition(f"qkv_heads_{dtype.name}") as fd:
        qkv = _tensor(fd, [b, t, 3 * c], dtype)
        for k in range(3):
            part = fd.ops.slice(
                qkv,
                start_indices=[0, 0, k * c],
                end_indices=[b, t, (k + 1) * c],
                strides=[1, 1, 1],
                manual_normalization=0,
            )
            heads_view = fd.ops.reshape(part, new_shape=[b, t, heads, hs])
            fd.add_output(fd.ops.permute(heads_view, dims=[0, 2, 1, 3]))

    def expected(qkv: np.ndarray) -> list[np.ndarray]:
        parts = np.split(_f64(qkv), 3, axis=-1)
        return [p.reshape(b, t, heads, hs).transpose(0, 2, 1, 3) for p in parts]

    return fd, expected


def causal_softmax(dtype: DataType, b: int, heads: int, t: int) -> Region:
    """softmax(where(i >= j, att * scale, -inf)) over the last dim, the mask from iotas."""
    scale = 0.125
    with FusionDefinition(f"causal_softmax_{dtype.name}") as fd:
        att = _tensor(fd, [b, heads, t, t], dtype)
        s0 = fd.define_scalar(t, dtype=DataType.Int)
        s1 = fd.define_scalar(0, dtype=DataType.Int)
        s2 = fd.define_scalar(1, dtype=DataType.Int)
        positions = fd.ops.iota(s0, s1, s2, dtype=DataType.Int)
        rows = fd.ops.broadcast_in_dim(positions, shape=[t, t], broadcast_dims=[0])
        cols = fd.ops.broadcast_in_dim(positions, shape=[t, t], broadcast_dims=[1])
        keep = fd.ops.broadcast_in_dim(
            fd.ops.ge(rows, cols), shape=[b, heads, t, t], broadcast_dims=[2, 3]
        )
        scaled = fd.ops.mul(
            fd.ops.cast(att, dtype=DataType.Float), fd.define_scalar(scale, dtype=DataType.Double)
        )
        ninf = fd.define_scalar(float("-inf"), dtype=DataType.Double)
        masked = fd.ops.where(keep, scaled, ninf)
        m = fd.ops.max(masked, dims=[3], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(masked, m))
        s = fd.ops.sum(e, dims=[3], keepdim=True)
        fd.add_output(fd.ops.cast(fd.ops.div(e, s), dtype=dtype))

    def expected(att: np.ndarray) -> list[np.ndarray]:
        a = np.where(np.tril(np.ones((t, t), bool)), _f64(att) * scale, -np.inf)
        return [np.exp(a - scipy.special.logsumexp(a, -1, keepdims=True))]

    return fd, expected


def swiglu(dtype: DataType, b: int, t: int, inner: int) -> Region:
    with FusionDefinition(f"swiglu_{dtype.name}") as fd:
        a = _tensor(fd, [b, t, inner], dtype)
        g = _tensor(fd, [b, t, inner], dtype)
        af = fd.ops.cast(a, dtype=DataType.Float)
        silu = fd.ops.div(af, fd.ops.add(fd.ops.exp(fd.ops.neg(af)), 1.0))
        fd.add_output(fd.ops.cast(fd.ops.mul(silu, fd.ops.cast(g, dtype=DataType.Float)), dtype))

    def expected(a: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
        af = _f64(a)
        return [af / (1 + np.exp(-af)) * _f64(g)]

    return fd, expected


def heads_merge(dtype: DataType, b: int, heads: int, t: int, hs: int) -> Region:
    """[b, heads, t, hs] back to [b, t, heads * hs] (after attention)."""
    with FusionDefinition(f"heads_merge_{dtype.name}") as fd:
        y = _tensor(fd, [b, heads, t, hs], dtype)
        permuted = fd.ops.permute(y, dims=[0, 2, 1, 3])
        ordered = fd.ops.stride_order(permuted, stride_order=[3, 2, 1, 0])  # as Thunder emits it
        fd.add_output(fd.ops.reshape(ordered, new_shape=[b, t, heads * hs]))

    def expected(y: np.ndarray) -> list[np.ndarray]:
        return [_f64(y).transpose(0, 2, 1, 3).reshape(b, t, heads * hs)]

    return fd, expected


def cross_entropy(dtype: DataType, n: int, vocab: int) -> Region:
    """logsumexp(logits) - logits[target] per row (the loss before its mean)."""
    with FusionDefinition(f"cross_entropy_{dtype.name}") as fd:
        logits = _tensor(fd, [n, vocab], dtype)
        target = _tensor(fd, [n], DataType.Int)
        xf = fd.ops.cast(logits, dtype=DataType.Float)
        m = fd.ops.max(xf, dims=[1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(xf, m))
        lse = fd.ops.add(fd.ops.log(fd.ops.sum(e, dims=[1], keepdim=True)), m)
        column = fd.ops.broadcast_in_dim(target, shape=[n, 1], broadcast_dims=[0])
        picked = fd.ops.cast(fd.ops.take_along_axis(logits, column, 1), dtype=DataType.Float)
        fd.add_output(fd.ops.squeeze(fd.ops.sub(lse, picked), dims=[1]))

    def expected(logits: np.ndarray, target: np.ndarray) -> list[np.ndarray]:
        x = _f64(logits)
        return [scipy.special.logsumexp(x, 1) - x[np.arange(n), target]]

    return fd, expected


def _halves(fd: FusionDefinition, x: Any, shape: list[int]) -> tuple[Any, Any]:
    """`x[..., :d/2]` and `x[..., d/2:]` as Thunder slices them."""
    half = shape[-1] // 2
    lead = [0] * (len(shape) - 1)
    lo = fd.ops.slice(
        x,
        start_indices=[*lead, 0],
        end_indices=[*shape[:-1], half],
        strides=[1] * len(shape),
        manual_normalization=0,
    )
    hi = fd.ops.slice(
        x,
        start_indices=[*lead, half],
        end_indices=shape,
        strides=[1] * len(shape),
        manual_normalization=0,
    )
    return lo, hi


def rope(dtype: DataType, b: int, t: int, heads: int, hs: int) -> Region:
    """litGPT's rotary embedding of q split into heads: `x * cos + cat(-x2, x1) * sin`, the
    halves x1, x2 sliced from the permuted heads, cos and sin [t, hs] broadcast over b and
    heads."""
    shape = [b, heads, t, hs]
    with FusionDefinition(f"rope_{dtype.name}") as fd:
        q = _tensor(fd, [b, t, heads * hs], dtype)
        cos = _tensor(fd, [t, hs], dtype)
        sin = _tensor(fd, [t, hs], dtype)
        heads_view = fd.ops.reshape(q, new_shape=[b, t, heads, hs])
        x = fd.ops.permute(heads_view, dims=[0, 2, 1, 3])
        x1, x2 = _halves(fd, x, shape)
        minus_x2 = fd.ops.cast(fd.ops.neg(fd.ops.cast(x2, dtype=DataType.Float)), dtype=dtype)
        rotated = fd.ops.cat([minus_x2, x1], dim=-1, manual_padding=0)
        c = fd.ops.broadcast_in_dim(cos, shape=shape, broadcast_dims=[2, 3])
        s = fd.ops.broadcast_in_dim(sin, shape=shape, broadcast_dims=[2, 3])
        xc = fd.ops.mul(fd.ops.cast(x, dtype=DataType.Float), fd.ops.cast(c, dtype=DataType.Float))
        rs = fd.ops.mul(
            fd.ops.cast(rotated, dtype=DataType.Float), fd.ops.cast(s, dtype=DataType.Float)
        )
        fd.add_output(fd.ops.cast(fd.ops.add(xc, rs), dtype=dtype))

    def expected(q: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> list[np.ndarray]:
        x = _f64(q).reshape(b, t, heads, hs).transpose(0, 2, 1, 3)
        x1, x2 = np.split(x, 2, axis=-1)
        rotated = np.concatenate([-x2, x1], axis=-1)
        return [x * _f64(cos) + rotated * _f64(sin)]

    return fd, expected


def rope_backward(dtype: DataType, b: int, t: int, heads: int, hs: int) -> Region:
    """The rotary embedding's backward as Thunder writes it: the gradient of `cat(-x2, x1)` as
    two pads, `dx = g * cos + pad(gs[..., d/2:], [0, d/2]) + pad(-gs[..., :d/2], [d/2, 0])`
    with gs = g * sin, then the heads merged back into [b, t, heads * hs]."""
    shape = [b, heads, t, hs]
    half = hs // 2
    with FusionDefinition(f"rope_backward_{dtype.name}") as fd:
        g = _tensor(fd, shape, dtype)
        cos = _tensor(fd, [t, hs], dtype)
        sin = _tensor(fd, [t, hs], dtype)
        gf = fd.ops.cast(g, dtype=DataType.Float)
        c = fd.ops.cast(
            fd.ops.broadcast_in_dim(cos, shape=shape, broadcast_dims=[2, 3]), DataType.Float
        )
        s = fd.ops.cast(
            fd.ops.broadcast_in_dim(sin, shape=shape, broadcast_dims=[2, 3]), DataType.Float
        )
        gs = fd.ops.mul(gf, s)
        lo, hi = _halves(fd, gs, shape)
        zero = fd.define_scalar(0.0, dtype=DataType.Double)
        from_x1 = fd.ops.pad(hi, [0, half, 0, 0, 0, 0, 0, 0], zero)
        from_x2 = fd.ops.pad(fd.ops.neg(lo), [half, 0, 0, 0, 0, 0, 0, 0], zero)
        dx = fd.ops.add(fd.ops.add(from_x1, from_x2), fd.ops.mul(gf, c))
        merged = fd.ops.permute(fd.ops.cast(dx, dtype=dtype), dims=[0, 2, 1, 3])
        merged = fd.ops.stride_order(merged, stride_order=[3, 2, 1, 0])
        fd.add_output(fd.ops.reshape(merged, new_shape=[b, t, heads * hs]), stride_order=[2, 1, 0])

    def expected(g: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> list[np.ndarray]:
        gs = _f64(g) * _f64(sin)
        lo, hi = np.split(gs, 2, axis=-1)
        dx = np.concatenate([hi, -lo], axis=-1) + _f64(g) * _f64(cos)
        return [dx.transpose(0, 2, 1, 3).reshape(b, t, heads * hs)]

    return fd, expected


P_DROP = 0.125
"""The dropout probability of the dropout region: 1 - p = 0.875 is exact in f32, so a draw on the
threshold is kept or dropped alike by the GPU (comparing in f32) and the float64 oracle (whose
casts to f32 do not round; with p = 0.1 a draw of exactly 0.9f told them apart about once in 90
runs)."""


def dropout_residual(dtype: DataType, b: int, t: int, c: int) -> Region:
    """`x + dropout(y)` in training, as Thunder hands it over once `replace_uniform` has made
    the draw a `uniform_philox` (its seed and offset fusion inputs): `y * (u < 1 - p) / (1 - p)`."""
    with FusionDefinition(f"dropout_residual_{dtype.name}") as fd:
        x = _tensor(fd, [b, t, c], dtype)
        y = _tensor(fd, [b, t, c], dtype)
        seed = fd.define_scalar(dtype=DataType.Int)
        offset = fd.define_scalar(dtype=DataType.Int)
        s0 = fd.define_scalar(0.0, dtype=DataType.Double)
        s1 = fd.define_scalar(1.0, dtype=DataType.Double)
        u = fd.ops.uniform(
            s0, s1, shape=[b, t, c], rng_seed=seed, rng_offset=offset, dtype=DataType.Float
        )
        keep = fd.ops.lt(u, fd.define_scalar(1 - P_DROP, dtype=DataType.Double))
        yf = fd.ops.cast(y, dtype=DataType.Float)
        scale = fd.define_scalar(1 / (1 - P_DROP), dtype=DataType.Double)
        dropped = fd.ops.mul(fd.ops.mul(yf, keep), scale)
        fd.add_output(fd.ops.cast(fd.ops.add(fd.ops.cast(x, dtype=DataType.Float), dropped), dtype))

    def expected(x: np.ndarray, y: np.ndarray, seed: int, offset: int) -> list[np.ndarray]:
        u = philox.random((b, t, c), np.dtype(np.float32), seed, offset, normal=False)
        return [_f64(x) + _f64(y) * (u < 1 - P_DROP) / (1 - P_DROP)]

    return fd, expected


def inputs_of(rng: np.random.Generator, fd: FusionDefinition) -> list[Any]:
    """Random inputs for a region (its inputs' shapes and dtypes; targets in range; a seed and
    an offset of random numbers as ints)."""
    from fuser.runtime.dtypes import numpy_dtype, round_to_float

    arrays: list[Any] = []
    for arg in fd.fusion.inputs:
        if not isinstance(arg.type, TensorType):
            arrays.append(int(rng.integers(0, 2**31)))
            continue
        shape, el = tuple(arg.type.get_shape()), arg.type.element_type
        dtype = numpy_dtype(el)
        if dtype.kind == "i":  # a cross-entropy's targets, in the vocabulary
            arrays.append(rng.integers(0, fd.fusion.inputs[0].type.get_shape()[-1], shape))
        else:
            arrays.append(round_to_float(rng.standard_normal(shape) + 0.25, dtype))
    return arrays


KERNELS = {
    "rms_norm": ["persistent"],
    "qkv_heads": [],  # the three outputs are views of the input (as nvFuser returns them)
    "causal_softmax": ["persistent"],
    "swiglu": ["pointwise"],
    "heads_merge": ["pointwise"],  # writing the output in its merged shape
    "cross_entropy": ["pointwise", "persistent"],  # the target pick, loaded at its index
    "rope": ["pointwise"],  # the halves are views of q; the cat reads them shifted
    "rope_backward": ["pointwise"],  # the pads read views of g and sin, shifted
    "dropout_residual": ["pointwise"],  # the numbers drawn where they are read
}
"""The kernels each region compiles to, in launch order (the CPU and GPU tests check them)."""

REGIONS: dict[str, Callable[[DataType], Region]] = {
    "rms_norm": lambda d: rms_norm(d, 2, 127, 768),
    "qkv_heads": lambda d: qkv_heads(d, 2, 127, 12, 64),
    "causal_softmax": lambda d: causal_softmax(d, 2, 4, 127),
    "swiglu": lambda d: swiglu(d, 2, 127, 1536),
    "heads_merge": lambda d: heads_merge(d, 2, 12, 127, 64),
    "cross_entropy": lambda d: cross_entropy(d, 254, 4097),
    "rope": lambda d: rope(d, 2, 127, 4, 64),
    "rope_backward": lambda d: rope_backward(d, 2, 127, 4, 64),
    "dropout_residual": lambda d: dropout_residual(d, 2, 127, 768),
}
"""Each region at small odd sizes (t = 127), by name."""
