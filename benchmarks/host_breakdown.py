"""Where the host time of a steady-state `fd.execute` goes, piece by piece, on one GPU.

    python benchmarks/host_breakdown.py

Times (µs per call, interleaved rounds as `run.host_overhead`: median, fastest and slowest
round) the one-kernel and three-kernel fusions of `run.py`'s host-overhead rows, then the pieces
a call is made of: the driver's launch of one of those kernels, alone and as the one-node graph
the executor launches it with (its arguments unchanged since the last launch, as in a steady
loop, and changed before every launch), a stream-ordered pool allocation and free, `torch.empty`
(sizes one by one, as fuser calls it, and as one tuple), torch's current stream. It also reports
the GPU time per call of the three-kernel fusion (CUDA events around a batch): when it is close
to the host time, the loop is GPU-bound and host work does not show.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch  # first: torch must be imported before fuser initializes CUDA

sys.path.insert(0, str(Path(__file__).parent))

from run import interleaved_us
from workloads import host_overhead_fusions

from fuser.runtime import driver
from fuser.runtime.frontends import TORCH_FRONTEND


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
    spec = chain._fusion_compiler()._signatures.last
    launch = spec.launches[0]
    launch._load()
    entry = fd._fusion_compiler()._signatures.last
    graph = entry.graph
    stream = TORCH_FRONTEND.raw_stream(0)
    slot, inputs = entry.in_slots[0], (x.data_ptr(), y.data_ptr())
    calls = [0]

    def changed_launch() -> None:  # reads x, then y, then x...: new arguments every launch
        calls[0] += 1
        entry.slots[slot] = inputs[calls[0] & 1]
        graph.launch(stream)

    rows: dict[str, Callable[[], object]] = {
        "fd.execute, 1 kernel": lambda: fd.execute([x, y]),
        "fd.execute, 3 kernels": lambda: chain.execute([x, y]),
        "driver.launch (one kernel)": lambda: launch._launch(stream),
        "LaunchGraph.launch, 1 kernel, same arguments": lambda: graph.launch(stream),
        "LaunchGraph.launch, 1 kernel, new arguments": changed_launch,
        "driver.alloc + driver.free (8 KiB)": lambda: driver.free(
            driver.alloc(8192, stream), stream
        ),
        "torch.empty(8192, dtype=uint8)": lambda: torch.empty(
            8192, dtype=torch.uint8, device=x.device
        ),
        "torch.empty((8192,), dtype=uint8)": lambda: torch.empty(
            (8192,), dtype=torch.uint8, device=x.device
        ),
        "torch current raw stream": lambda: TORCH_FRONTEND.raw_stream(0),
        "torch eager a + b": lambda: x + y,
    }
    samples = interleaved_us(rows, rounds=11)
    three = gpu_us(lambda: chain.execute([x, y]))
    print("| piece | µs per call (median round) | fastest | slowest |\n|---|---|---|---|")
    for name, s in samples.items():
        print(f"| {name} | {statistics.median(s):.2f} | {min(s):.2f} | {max(s):.2f} |")
    print(f"| GPU time per 3-kernel call (CUDA events, 2000 calls) | {three:.2f} | | |")


if __name__ == "__main__":
    main()
