"""Multi-GPU benchmarks (issue: sharded fusions over NCCL), one process per GPU:

    fuser-launch -n 2 benchmarks/multidevice.py --out DIR

- **Sharded norms.** RMS norm and layer norm (bf16) with the hidden axis split over the GPUs: a
  stage of partial statistics, one allreduce of them, a stage of the local epilogue. Target:
  within 5% of (the same norm on one GPU, unsharded, / the GPU count + one allreduce of the
  statistics alone), all three measured here.
- **Tensor-parallel MLP** (bf16): a column-parallel linear, tanh GELU, a row-parallel linear and
  an allreduce. Target: at least the speed of the same computation written with
  torch.distributed and torch.matmul (cuBLAS), measured in the same run.

Every time is the median over CUDA events after warm-up, the L2 emptied before each run
(`run.median_ms`, every rank running the same number of runs); each rank times its own runs
(collectives keep them in step) and the table gives the slowest rank's median.
Rank 0 writes DIR/multidevice.md and .json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from multidevice_definitions import layer_norm, rms_norm, tp_mlp
from run import median_ms

from fuser import DataType
from fuser.multidevice import Communicator, DeviceMesh, shard_tensor


def host_us(fn: Any, calls: int = 200) -> float:
    """The host's time per call of `fn`, in µs, over `calls` calls issued back to back (the
    same count on every rank)."""
    fn()
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(calls):
        fn()
    spent = time.perf_counter() - began
    torch.cuda.synchronize()
    return spent / calls * 1e6


def host_profile(fn: Any, calls: int = 200) -> str:
    """cProfile's 20 most expensive functions (cumulative) over `calls` calls of `fn`."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        fn()
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(20)
    return text.getvalue()


def slowest(ms: float) -> float:
    """The largest of every rank's `ms`."""
    t = torch.tensor([ms], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def bench_norm(
    kind: str, rows: int, hidden: int, size: int, profile: bool = False
) -> dict[str, Any]:
    mesh = DeviceMesh(range(size))
    g = torch.Generator().manual_seed(7)
    x = torch.randn(rows, hidden, generator=g).to(torch.bfloat16).cuda()
    w = (torch.randn(hidden, generator=g) + 1).to(torch.bfloat16).cuda()
    b = torch.randn(hidden, generator=g).to(torch.bfloat16).cuda()
    if kind == "rms":
        sharded = rms_norm(size, hidden, DataType.BFloat16)
        single = rms_norm(size, hidden, DataType.BFloat16, sharded=False)
        full = [x, w]
        stats = 1
    else:
        sharded = layer_norm(size, hidden, True, dtype=DataType.BFloat16)
        single = layer_norm(size, hidden, True, sharded=False, dtype=DataType.BFloat16)
        full = [x, w, b]
        stats = 2
    pieces = [shard_tensor(t, t.dim() - 1, mesh) for t in full]
    (y,) = sharded.execute(pieces)
    (y1,) = single.execute(full)
    block = shard_tensor(y1, 1, mesh)
    err = (y.float() - block.float()).abs().max().item()
    statistic = torch.empty(rows * stats, device="cuda", dtype=torch.float32)
    t_sharded = slowest(median_ms(lambda: sharded.execute(pieces), agree=slowest))
    t_single = slowest(median_ms(lambda: single.execute(full), agree=slowest))
    t_allreduce = slowest(median_ms(lambda: dist.all_reduce(statistic), agree=slowest))
    target = t_single / size + t_allreduce
    host = {
        "host_us_sharded": host_us(lambda: sharded.execute(pieces)),
        "host_us_single": host_us(lambda: single.execute(full)),
        "host_us_allreduce_and_wait": host_us(
            lambda: dist.all_reduce(statistic, async_op=True).wait()  # type: ignore[union-attr]
        ),
    }
    if profile:  # every rank profiles (the same collectives); rank 0 prints
        text = host_profile(lambda: sharded.execute(pieces))
        if dist.get_rank() == 0:
            print(text, flush=True)
    return {
        "case": f"{'RMS' if kind == 'rms' else 'layer'} norm bf16 [{rows}, {hidden}], hidden split",
        "sharded_ms": t_sharded,
        "single_gpu_ms": t_single,
        "allreduce_ms": t_allreduce,
        "target_ms": target,
        "sharded_over_target": t_sharded / target,
        "max_abs_diff_vs_one_gpu": err,
        **host,
    }


def bench_mlp(rows: int, hidden: int, ffn: int, size: int) -> dict[str, Any]:
    mesh = DeviceMesh(range(size))
    g = torch.Generator().manual_seed(8)
    x = (torch.randn(rows, hidden, generator=g) / 4).to(torch.bfloat16).cuda()
    w1 = (torch.randn(ffn, hidden, generator=g) / hidden**0.5).to(torch.bfloat16)
    w2 = (torch.randn(hidden, ffn, generator=g) / ffn**0.5).to(torch.bfloat16)
    w1_piece, w2_piece = shard_tensor(w1, 0, mesh), shard_tensor(w2, 1, mesh)
    del w1, w2
    fd = tp_mlp(size, hidden, ffn, DataType.BFloat16)

    def fuser_mlp() -> Any:
        return fd.execute([x, w1_piece, w2_piece])

    def torch_mlp() -> Any:
        h = torch.nn.functional.gelu(torch.matmul(x, w1_piece.t()), approximate="tanh")
        y = torch.matmul(h, w2_piece.t())
        dist.all_reduce(y)
        return y

    def torch_mlp_chunked(chunks: int = 4) -> Any:
        """The same with the output's allreduce in row chunks, each issued as soon as its
        matmul is done, so the next chunk's matmul runs beside it (overlap, by hand)."""
        h = torch.nn.functional.gelu(torch.matmul(x, w1_piece.t()), approximate="tanh")
        y = torch.empty(rows, hidden, dtype=x.dtype, device=x.device)
        step = rows // chunks
        works = []
        for c in range(chunks):
            part = y[c * step : (c + 1) * step]
            torch.matmul(h[c * step : (c + 1) * step], w2_piece.t(), out=part)
            works.append(dist.all_reduce(part, async_op=True))
        for w in works:
            w.wait()  # type: ignore[union-attr]
        return y

    (y,) = fuser_mlp()
    ref = torch_mlp()
    err = (y.float() - ref.float()).abs().max().item()
    t_fuser = slowest(median_ms(fuser_mlp, rep_ms=1000, agree=slowest))
    t_torch = slowest(median_ms(torch_mlp, rep_ms=1000, agree=slowest))
    t_chunked = slowest(median_ms(torch_mlp_chunked, rep_ms=1000, agree=slowest))
    allreduce = torch.empty(rows, hidden, dtype=x.dtype, device=x.device)
    t_allreduce = slowest(median_ms(lambda: dist.all_reduce(allreduce), agree=slowest))
    return {
        "case": f"TP MLP bf16 x [{rows}, {hidden}], ffn {ffn} split over {size}",
        "fuser_ms": t_fuser,
        "torch_ms": t_torch,
        "torch_over_fuser": t_torch / t_fuser,
        "torch_chunked_overlap_ms": t_chunked,
        "output_allreduce_ms": t_allreduce,
        "max_abs_diff_vs_torch": err,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu-out/multidevice")
    parser.add_argument("--only", default="", help="run the cases whose name holds this")
    parser.add_argument(
        "--profile", action="store_true", help="print rank 0's host profile of each sharded norm"
    )
    args = parser.parse_args()
    comm = Communicator.instance()
    size, rank = comm.size(), comm.rank()
    rows: list[dict[str, Any]] = []
    cases = [
        ("rms", lambda: bench_norm("rms", 16384, 8192, size, args.profile)),
        ("layer", lambda: bench_norm("layer", 16384, 8192, size, args.profile)),
        ("rms small", lambda: bench_norm("rms", 4096, 4096, size, args.profile)),
        ("mlp", lambda: bench_mlp(8192, 8192, 4 * 8192, size)),
    ]
    for name, case in cases:
        if args.only in name:
            comm.barrier()
            rows.append(case())
            if rank == 0:
                print(json.dumps(rows[-1]), flush=True)
    if rank == 0:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        device = torch.cuda.get_device_name()
        (out / "multidevice.json").write_text(
            json.dumps({"device": device, "ranks": size, "rows": rows}, indent=1)
        )
        lines = [f"{size} x {device}", ""]
        for r in rows:
            lines.append(
                " | ".join(
                    f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
                )
            )
        (out / "multidevice.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
