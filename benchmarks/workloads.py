"""The benchmark workloads: each a fuser FusionDefinition, the same computation in torch, and the
bytes it must move (each input read once, each output written once).

The definitions are written as a user of nvFuser would write them; the torch functions are what a
user of torch eager or `torch.compile` would write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fuser import DataType, FusionDefinition

EPS = 1e-5


@dataclass
class Workload:
    """One row of the benchmark table."""

    name: str
    shapes: list[tuple[int, ...]]
    dtype: str  # "float32" or "bfloat16"
    define: Callable[[], FusionDefinition]
    torch_fn: Callable[..., Any]

    def inputs(self, torch: Any) -> list[Any]:
        dt = getattr(torch, self.dtype)
        g = torch.Generator(device="cuda").manual_seed(0)
        return [torch.randn(s, device="cuda", dtype=dt, generator=g) for s in self.shapes]


def _dt(dtype: str) -> DataType:
    return DataType.Float if dtype == "float32" else DataType.BFloat16


def _to_float(fd: FusionDefinition, t: Any, dtype: str) -> Any:
    return t if dtype == "float32" else fd.ops.cast(t, DataType.Float)


def _from_float(fd: FusionDefinition, t: Any, dtype: str) -> Any:
    return t if dtype == "float32" else fd.ops.cast(t, DataType.BFloat16)


def gelu_bias(dtype: str) -> Callable[[], FusionDefinition]:
    def define() -> FusionDefinition:
        with FusionDefinition("gelu_bias") as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=_dt(dtype))
            b = fd.define_tensor(shape=[-1], dtype=_dt(dtype))
            bb = fd.ops.broadcast_in_dim(b, shape=x.shape(), broadcast_dims=[1])
            s = fd.ops.add(_to_float(fd, x, dtype), _to_float(fd, bb, dtype))
            fd.add_output(_from_float(fd, fd.ops.gelu(s, approximate="tanh"), dtype))
        return fd

    return define


def softmax(dtype: str) -> Callable[[], FusionDefinition]:
    def define() -> FusionDefinition:
        with FusionDefinition("softmax") as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=_dt(dtype))
            xf = _to_float(fd, x, dtype)
            m = fd.ops.max(xf, dims=[1], keepdim=False)
            mb = fd.ops.broadcast_in_dim(m, shape=x.shape(), broadcast_dims=[0])
            e = fd.ops.exp(fd.ops.sub(xf, mb))
            s = fd.ops.sum(e, dims=[1], keepdim=False)
            sb = fd.ops.broadcast_in_dim(s, shape=x.shape(), broadcast_dims=[0])
            fd.add_output(_from_float(fd, fd.ops.div(e, sb), dtype))
        return fd

    return define


def layer_norm(dtype: str) -> Callable[[], FusionDefinition]:
    def define() -> FusionDefinition:
        with FusionDefinition("layer_norm") as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=_dt(dtype))
            w = fd.define_tensor(shape=[-1], dtype=_dt(dtype))
            b = fd.define_tensor(shape=[-1], dtype=_dt(dtype))
            xf = _to_float(fd, x, dtype)
            var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
            invstd = fd.ops.rsqrt(fd.ops.add(var, EPS))
            shape = x.shape()
            mb = fd.ops.broadcast_in_dim(mean, shape=shape, broadcast_dims=[0])
            ib = fd.ops.broadcast_in_dim(invstd, shape=shape, broadcast_dims=[0])
            wb = fd.ops.broadcast_in_dim(_to_float(fd, w, dtype), shape=shape, broadcast_dims=[1])
            bb = fd.ops.broadcast_in_dim(_to_float(fd, b, dtype), shape=shape, broadcast_dims=[1])
            y = fd.ops.add(fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, mb), ib), wb), bb)
            fd.add_output(_from_float(fd, y, dtype))
        return fd

    return define


def rms_norm(dtype: str, width: int) -> Callable[[], FusionDefinition]:
    def define() -> FusionDefinition:
        with FusionDefinition("rms_norm") as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=_dt(dtype))
            w = fd.define_tensor(shape=[-1], dtype=_dt(dtype))
            xf = _to_float(fd, x, dtype)
            ms = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=False)
            inv = fd.ops.rsqrt(fd.ops.add(fd.ops.mul(ms, 1.0 / width), EPS))
            shape = x.shape()
            ib = fd.ops.broadcast_in_dim(inv, shape=shape, broadcast_dims=[0])
            wb = fd.ops.broadcast_in_dim(_to_float(fd, w, dtype), shape=shape, broadcast_dims=[1])
            fd.add_output(_from_float(fd, fd.ops.mul(fd.ops.mul(xf, ib), wb), dtype))
        return fd

    return define


def var_mean(dtype: str) -> Callable[[], FusionDefinition]:
    def define() -> FusionDefinition:
        with FusionDefinition("var_mean") as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=_dt(dtype))
            var, mean = fd.ops.var_mean(_to_float(fd, x, dtype), dims=[1], correction=1)
            fd.add_output(var)
            fd.add_output(mean)
        return fd

    return define


def reduction_sum(dtype: str, dim: int) -> Callable[[], FusionDefinition]:
    def define() -> FusionDefinition:
        with FusionDefinition(f"sum_dim{dim}") as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=_dt(dtype))
            fd.add_output(fd.ops.sum(x, dims=[dim], keepdim=False))
        return fd

    return define


def all_workloads(torch: Any) -> list[Workload]:
    """The workloads of the results table, in its order (the schedulers issue added the tall,
    narrow column sum)."""
    f = torch.nn.functional

    def t_gelu(x: Any, b: Any) -> Any:
        return f.gelu(x + b, approximate="tanh")

    def t_softmax(x: Any) -> Any:
        return torch.softmax(x, dim=-1)

    def t_layer_norm(x: Any, w: Any, b: Any) -> Any:
        return f.layer_norm(x, x.shape[-1:], w, b, EPS)

    def t_rms_norm(x: Any, w: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)

    def t_var_mean(x: Any) -> Any:
        return torch.var_mean(x, dim=-1, correction=1)

    return [
        Workload(
            "gelu(x+b) tanh", [(8192, 8192), (8192,)], "float32", gelu_bias("float32"), t_gelu
        ),
        Workload(
            "gelu(x+b) tanh", [(8192, 8192), (8192,)], "bfloat16", gelu_bias("bfloat16"), t_gelu
        ),
        Workload("softmax(-1)", [(8192, 8192)], "float32", softmax("float32"), t_softmax),
        Workload("softmax(-1)", [(32768, 1024)], "bfloat16", softmax("bfloat16"), t_softmax),
        Workload(
            "layer norm",
            [(8192, 8192), (8192,), (8192,)],
            "float32",
            layer_norm("float32"),
            t_layer_norm,
        ),
        Workload(
            "layer norm",
            [(16384, 4096), (4096,), (4096,)],
            "bfloat16",
            layer_norm("bfloat16"),
            t_layer_norm,
        ),
        Workload(
            "RMS norm", [(16384, 4096), (4096,)], "bfloat16", rms_norm("bfloat16", 4096), t_rms_norm
        ),
        Workload("var_mean(-1)", [(16384, 4096)], "float32", var_mean("float32"), t_var_mean),
        Workload(
            "sum(-1)",
            [(16384, 16384)],
            "float32",
            reduction_sum("float32", 1),
            lambda x: x.sum(-1),
        ),
        Workload(
            "sum(0)",
            [(16384, 16384)],
            "float32",
            reduction_sum("float32", 0),
            lambda x: x.sum(0),
        ),
        Workload(
            "sum(0) tall narrow",
            [(1048576, 64)],
            "float32",
            reduction_sum("float32", 0),
            lambda x: x.sum(0),
        ),
    ]


def host_overhead_fusions() -> tuple[FusionDefinition, FusionDefinition]:
    """The fusions of the host-overhead rows: `a + b` (one kernel) and a pointwise chain with
    two `segment_set`s (three kernels: a host program)."""
    with FusionDefinition("add") as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.add(a, b))
    with FusionDefinition("chain3") as chain:
        a = chain.define_tensor(shape=[-1], dtype=DataType.Float)
        b = chain.define_tensor(shape=[-1], dtype=DataType.Float)
        s = chain.ops.segment_set(chain.ops.add(a, b))
        t = chain.ops.segment_set(chain.ops.mul(s, a))
        chain.add_output(chain.ops.sub(t, b))
    return fd, chain
