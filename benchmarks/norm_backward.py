"""Layer norm and RMS norm backward (dx and the weight gradients) on one GPU: fuser against torch
eager, `torch.compile` and nvFuser in the same process.

    python benchmarks/norm_backward.py [--out DIR] [--no-compile]

Each case is the backward of a norm over the last dim of `[N, H]` with the forward's mean and
rstd saved (f32): RMS norm gives dx and dw, layer norm dx, dw and db, in the input dtype, computed
in f32. Times are CUDA-event medians with the L2 emptied before every run (`run.median_ms`); GB/s
counts each input read once and each output written once, "% copy" is against a 2 GiB
device-to-device copy in the same run. nvFuser (`nvfuser_direct`, loaded lazily as
`shared/notes/peers.md` says) runs the same definition; its column reads "n/a" where it does not
import. Writes `norm_backward.json` and `norm_backward.md` to DIR (default ./bench-out).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch  # first: torch must be imported before fuser initializes CUDA

sys.path.insert(0, str(Path(__file__).parent))

from new_shape import load_nvfuser
from run import copy_bandwidth, peer_markdown, peer_row, run_meta, write_results

from fuser import DataType, FusionDefinition

CASES = [
    ("RMS norm", "bfloat16", 16384, 4096),
    ("RMS norm", "float32", 16384, 4096),
    ("layer norm", "bfloat16", 16384, 4096),
    ("layer norm", "float32", 16384, 4096),
    ("RMS norm", "bfloat16", 2048, 12288),
    ("layer norm", "bfloat16", 2048, 12288),
]


def torch_backward(kind: str, h: int) -> Callable[..., tuple[Any, ...]]:
    """The backward in torch ops (f32 compute), for eager and `torch.compile`."""

    def rms(dy: Any, x: Any, rstd: Any, w: Any) -> tuple[Any, ...]:
        dyf, r = dy.float(), rstd[:, None]
        xhat = x.float() * r
        dxhat = dyf * w.float()
        c = (dxhat * xhat).sum(1, keepdim=True) / h
        return (r * (dxhat - xhat * c)).to(dy.dtype), (dyf * xhat).sum(0).to(dy.dtype)

    def layer(dy: Any, x: Any, mean: Any, rstd: Any, w: Any) -> tuple[Any, ...]:
        dyf, r = dy.float(), rstd[:, None]
        xhat = (x.float() - mean[:, None]) * r
        dxhat = dyf * w.float()
        c1 = dxhat.sum(1, keepdim=True) / h
        c2 = (dxhat * xhat).sum(1, keepdim=True) / h
        dx = r * (dxhat - c1 - xhat * c2)
        return dx.to(dy.dtype), (dyf * xhat).sum(0).to(dy.dtype), dyf.sum(0).to(dy.dtype)

    return rms if kind == "RMS norm" else layer


def fuser_backward(kind: str, dtype: str, h: int) -> FusionDefinition:
    """The same backward as a fuser definition (1/H a constant)."""
    dt = DataType.BFloat16 if dtype == "bfloat16" else DataType.Float
    with FusionDefinition(f"{kind.split()[0].lower()}_norm_backward") as fd:
        dy, x = fd.define_tensor([-1, -1], dt), fd.define_tensor([-1, -1], dt)
        mean = fd.define_tensor([-1], DataType.Float) if kind == "layer norm" else None
        rstd = fd.define_tensor([-1], DataType.Float)
        w = fd.define_tensor([-1], dt)

        def f32(t: Any) -> Any:
            return t if dt == DataType.Float else fd.ops.cast(t, DataType.Float)

        def back(t: Any) -> Any:
            return t if dt == DataType.Float else fd.ops.cast(t, dt)

        shape = x.shape()
        rb = fd.ops.broadcast_in_dim(rstd, shape, [0])
        dyf, xf = f32(dy), f32(x)
        centered = xf if mean is None else fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape, [0]))
        xhat = fd.ops.mul(centered, rb)
        dxhat = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(f32(w), shape, [1]))
        c2 = fd.ops.mul(fd.ops.sum(fd.ops.mul(dxhat, xhat), [1]), 1.0 / h)
        inner = fd.ops.sub(dxhat, fd.ops.mul(xhat, fd.ops.broadcast_in_dim(c2, shape, [0])))
        if mean is not None:
            c1 = fd.ops.mul(fd.ops.sum(dxhat, [1]), 1.0 / h)
            inner = fd.ops.sub(inner, fd.ops.broadcast_in_dim(c1, shape, [0]))
        fd.add_output(back(fd.ops.mul(rb, inner)))
        fd.add_output(back(fd.ops.sum(fd.ops.mul(dyf, xhat), [0])))
        if mean is not None:
            fd.add_output(back(fd.ops.sum(dyf, [0])))
    return fd


def nvfuser_backward(kind: str, dtype: str, h: int) -> Any:
    """The same backward for nvFuser's direct API."""
    from nvfuser_direct import DataType as NvType
    from nvfuser_direct import FusionDefinition as NvDefinition

    dt = NvType.BFloat16 if dtype == "bfloat16" else NvType.Float
    with NvDefinition() as fd:
        dy = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        mean = (
            fd.define_tensor(shape=[-1], contiguity=[True], dtype=NvType.Float)
            if kind == "layer norm"
            else None
        )
        rstd = fd.define_tensor(shape=[-1], contiguity=[True], dtype=NvType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)

        def f32(t: Any) -> Any:
            return t if dt == NvType.Float else fd.ops.cast(t, NvType.Float)

        def back(t: Any) -> Any:
            return t if dt == NvType.Float else fd.ops.cast(t, dt)

        shape = x.shape()
        rb = fd.ops.broadcast_in_dim(rstd, shape=shape, broadcast_dims=[0])
        dyf, xf = f32(dy), f32(x)
        if mean is not None:
            xf = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=shape, broadcast_dims=[0]))
        xhat = fd.ops.mul(xf, rb)
        dxhat = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(f32(w), shape=shape, broadcast_dims=[1]))
        c2 = fd.ops.mul(fd.ops.sum(fd.ops.mul(dxhat, xhat), dims=[1], keepdim=False), 1.0 / h)
        c2b = fd.ops.broadcast_in_dim(c2, shape=shape, broadcast_dims=[0])
        inner = fd.ops.sub(dxhat, fd.ops.mul(xhat, c2b))
        if mean is not None:
            c1 = fd.ops.mul(fd.ops.sum(dxhat, dims=[1], keepdim=False), 1.0 / h)
            inner = fd.ops.sub(inner, fd.ops.broadcast_in_dim(c1, shape=shape, broadcast_dims=[0]))
        fd.add_output(back(fd.ops.mul(rb, inner)))
        fd.add_output(back(fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0], keepdim=False)))
        if mean is not None:
            fd.add_output(back(fd.ops.sum(dyf, dims=[0], keepdim=False)))
    return fd


def inputs(kind: str, dtype: str, n: int, h: int) -> list[Any]:
    dt = getattr(torch, dtype)
    dy = torch.randn(n, h, device="cuda", dtype=dt)
    x = 0.5 + 2.0 * torch.randn(n, h, device="cuda", dtype=dt)
    w = 1.0 + 0.5 * torch.randn(h, device="cuda", dtype=dt)
    rstd = torch.rand(n, device="cuda") * 0.9 + 0.3
    if kind == "RMS norm":
        return [dy, x, rstd, w]
    mean = 0.5 + 0.1 * torch.randn(n, device="cuda")
    return [dy, x, mean, rstd, w]


def run_case(
    kind: str, dtype: str, n: int, h: int, copy_gbs: float, use_compile: bool, nvfuser: bool
) -> dict[str, Any]:
    return peer_row(
        f"{kind} backward {dtype} [{n}, {h}]",
        fuser_backward(kind, dtype, h),
        torch_backward(kind, h),
        inputs(kind, dtype, n, h),
        dtype,
        copy_gbs,
        use_compile,
        (lambda: nvfuser_backward(kind, dtype, h)) if nvfuser else None,
    )


def markdown(device: str, copy_gbs: float, rows: list[dict[str, Any]]) -> str:
    return peer_markdown(
        f"Norm backward on {device} (copy {copy_gbs:.0f} GB/s); ms (% of copy)", rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    torch.cuda.init()
    problem = load_nvfuser()
    if problem is not None:
        print(f"nvFuser not timed: {problem}")
    copy_gbs = copy_bandwidth()
    rows = [run_case(*case, copy_gbs, not args.no_compile, problem is None) for case in CASES]
    device = torch.cuda.get_device_name()
    write_results(
        args.out,
        "norm_backward",
        {"meta": run_meta(device, copy_gbs=copy_gbs), "rows": rows},
        markdown(device, copy_gbs, rows),
    )


if __name__ == "__main__":
    main()
