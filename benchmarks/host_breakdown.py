"""Where the host time of a steady-state `fd.execute` goes, piece by piece, on one GPU.

    python benchmarks/host_breakdown.py

Times (µs per call, median of 5 batches after warm-up) the one-kernel and three-kernel fusions
of `run.py`'s host-overhead rows, then the pieces a call is made of: the driver's launch of one
of those kernels, alone and as the one-node graph the executor launches it with, a
stream-ordered pool allocation and free, `torch.empty`, torch's current stream. It also reports
the GPU time per call of the three-kernel fusion (CUDA events around a batch): when it is close
to the host time, the loop is GPU-bound and host work does not show.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import torch  # first: torch must be imported before fuser initializes CUDA

sys.path.insert(0, str(Path(__file__).parent))

from run import host_us_per_call as per_call_us
from workloads import host_overhead_fusions

from fuser.runtime import driver
from fuser.runtime.executor import TORCH_FRONTEND


def gpu_us(fn: Callable[[], object], calls: int = 2000) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls * 1e3


def main() -> None:
    fd, chain = host_overhead_fusions()
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    fd.execute([x, y])
    chain.execute([x, y])
    spec = chain._fusion_compiler()._program_cache.last
    launch = spec.launches[0]
    launch._load()
    graph = fd._fusion_compiler()._cache.last.graph
    stream = TORCH_FRONTEND.raw_stream(0)
    rows = {
        "fd.execute, 1 kernel": per_call_us(lambda: fd.execute([x, y])),
        "fd.execute, 3 kernels": per_call_us(lambda: chain.execute([x, y])),
        "  GPU time per 3-kernel call": gpu_us(lambda: chain.execute([x, y])),
        "driver.launch (one kernel)": per_call_us(lambda: launch._launch(stream)),
        "driver.LaunchGraph.launch (one kernel)": per_call_us(lambda: graph.launch(stream)),
        "driver.alloc + driver.free (8 KiB)": per_call_us(
            lambda: driver.free(driver.alloc(8192, stream), stream)
        ),
        "torch.empty(8192, uint8)": per_call_us(
            lambda: torch.empty((8192,), dtype=torch.uint8, device=x.device)
        ),
        "torch current raw stream": per_call_us(lambda: TORCH_FRONTEND.raw_stream(0)),
        "torch eager a + b": per_call_us(lambda: x + y),
    }
    print("| piece | µs per call |\n|---|---|")
    for name, us in rows.items():
        print(f"| {name} | {us:.2f} |")


if __name__ == "__main__":
    main()
