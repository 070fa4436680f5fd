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

import schedulers
from new_shape import load_nvfuser
from run import copy_bandwidth, peer_markdown, run_meta, write_results
from schedulers import Build, Case, Frontend

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


def backward(kind: str) -> Build:
    """The same backward in either frontend (1/H a constant): inputs dy, x, (mean,) rstd, w."""

    def build(f: Frontend, inputs: list[Any]) -> None:
        fd = f.fd
        dy, x, *stats, w = inputs
        shape = x.shape()

        def rows(t: Any) -> Any:
            return fd.ops.broadcast_in_dim(t, shape=shape, broadcast_dims=[0])

        def mean_of_rows(t: Any) -> Any:
            return fd.ops.mul(fd.ops.sum(t, dims=[1], keepdim=False), 1.0 / f.width)

        rb = rows(stats[-1])
        dyf, xf = f.up(dy), f.up(x)
        centered = xf if kind == "RMS norm" else fd.ops.sub(xf, rows(stats[0]))
        xhat = fd.ops.mul(centered, rb)
        dxhat = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(f.up(w), shape=shape, broadcast_dims=[1]))
        inner = fd.ops.sub(dxhat, fd.ops.mul(xhat, rows(mean_of_rows(fd.ops.mul(dxhat, xhat)))))
        if kind == "layer norm":
            inner = fd.ops.sub(inner, rows(mean_of_rows(dxhat)))
        fd.add_output(f.down(fd.ops.mul(rb, inner)))
        fd.add_output(f.down(fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0], keepdim=False)))
        if kind == "layer norm":
            fd.add_output(f.down(fd.ops.sum(dyf, dims=[0], keepdim=False)))

    return build


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
    case = Case(
        f"{kind} backward [{n}, {h}]",
        lambda: inputs(kind, dtype, n, h),
        backward(kind),
        torch_backward(kind, h),
        dtype,
    )
    return schedulers.run_case(case, copy_gbs, use_compile, nvfuser)


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
