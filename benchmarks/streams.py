"""Times stream parallelism: slices of a tensor on 1 and on 4 CUDA streams, against no streams.

    python benchmarks/streams.py [--out DIR] [--slices 64] [--rows 256] [--cols 4096]
                                 [--streams 4]

The fusion is `s = sum(exp(x) * x, -1)` on x of [slices, rows, cols] f32 (64 x [256, 4096] by
default: each slice too small to fill an H100 alone), segmented with a merge rule that refuses
every merge, so each slice runs a pointwise kernel (`exp(x) * x`) and then a reduction (the row
sums):

- **no streams**: the same two kernels on the whole tensor, on the caller's stream;
- **1 stream**: the product and the sum stream-parallel along axis 0, the slices on one stream;
- **N streams** (`--streams`, default 4): the same, slice i on stream i mod N;
- for reference, **one kernel**: the whole fusion as the schedulers merge it (one reduction
  kernel with an exp prologue), without streams.

Times are CUDA-event medians on the caller's stream (the program ends with the caller's stream
waiting for every stream it used, so the events bracket all of its work), after warm-up, with
the L2 emptied before every run by reading a 256 MiB buffer, as `benchmarks/run.py` does; GB/s
counts x read once and s written once. "ms" is a call end to end: when the host issues the
slices more slowly than the GPU runs them, it is the host's time. "GPU ms, queued" takes the host
out: a spin kernel on the caller's stream keeps the GPU busy while the host issues the whole
program, and the events bracket only what runs after it (needs `torch.cuda._sleep`). "host µs"
is the host time of one `execute` in steady state (median of 5 batches, the GPU synchronized
after each batch). Results are checked against torch. Writes `streams.json` and `streams.md` to
`--out` and prints the table last.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch  # first: torch must be imported before fuser initializes CUDA (see tests/gpu)

sys.path.insert(0, str(Path(__file__).parent))

from run import host_us_per_call, median_ms, run_meta, write_results

from fuser import DataType, FusionDefinition, ParallelType
from fuser.compiler import FusionCompiler
from fuser.transforms.segment_rules import never_merge


def define(stream_parallel: bool) -> FusionDefinition:
    """`s = sum(exp(x) * x, -1)`, with the product and the sum stream-parallel along axis 0 or
    not (`exp` of the input is recomputed in the product's kernel, and sliced with it)."""
    with FusionDefinition("pointwise_sum") as fd:
        x = fd.define_tensor([-1, -1, -1], DataType.Float)
        p = fd.ops.mul(fd.ops.exp(x), x)
        s = fd.ops.sum(p, [2])
        if stream_parallel:
            fd.parallelize(p, axis=0, ptype=ParallelType.Stream)
            fd.parallelize(s, axis=0, ptype=ParallelType.Stream)
        fd.add_output(s)
    return fd


def queued_ms(fn: Any, host_us: float, reps: int = 21) -> float | None:
    """The median GPU time of `fn` in ms with all of its work queued before any of it runs
    (behind a spin kernel longer than the host needs to issue it), or None without
    `torch.cuda._sleep`."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    flush = torch.ones(256 * 2**20 // 4, device="cuda")
    cycles = int(max(3 * host_us * 1e-3, 1.0) * 2.0e6)  # 3x the host's time, at <= 2 GHz
    samples = []
    for _ in range(reps):
        flush.sum()
        sleep(cycles)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="folder for streams.json and streams.md")
    parser.add_argument("--slices", type=int, default=64)
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--streams", type=int, default=4, help="streams of the parallel run")
    args = parser.parse_args()
    shape = (args.slices, args.rows, args.cols)
    x = torch.randn(*shape, device="cuda")
    reference = (torch.exp(x.double()) * x.double()).sum(-1)
    variants: list[tuple[str, FusionCompiler, int]] = [
        ("no streams", FusionCompiler(define(False).fusion, should_merge=never_merge), 0),
        ("1 stream", FusionCompiler(define(True).fusion, should_merge=never_merge, streams=1), 1),
        (
            f"{args.streams} streams",
            FusionCompiler(define(True).fusion, should_merge=never_merge, streams=args.streams),
            args.streams,
        ),
        ("one kernel (schedulers' merge)", FusionCompiler(define(False).fusion), 0),
    ]
    moved = x.numel() * 4 + args.slices * args.rows * 4
    rows: list[dict[str, Any]] = []
    for name, compiler, streams in variants:
        (out,) = compiler.execute([x])
        torch.cuda.synchronize()
        err = ((out.double() - reference).norm() / reference.norm()).item()
        if not err < 1e-5:
            raise SystemExit(f"{name}: result differs from torch's: relative error {err:.2e}")
        ms = median_ms(lambda compiler=compiler: compiler.execute([x]))
        us = host_us_per_call(lambda compiler=compiler: compiler.execute([x]), 200, warmup=1)
        queued = queued_ms(lambda compiler=compiler: compiler.execute([x]), us)
        rows.append(
            {
                "variant": name,
                "streams": streams,
                "kernels": [s.scheduler for s in compiler.last_segments()],
                "ms": ms,
                "gbs": moved / (ms * 1e-3) / 1e9,
                "gpu_ms_queued": queued,
                "host_us": us,
                "rel_error_vs_torch": err,
            }
        )
        print(f"{name}: {ms:.3f} ms, queued {queued} ms, host {us:.0f} µs per call", flush=True)
    base, base_queued = rows[0]["ms"], rows[0]["gpu_ms_queued"]
    lines = [
        f"Device: {torch.cuda.get_device_name()}; sum(exp(x) * x, -1) on x of "
        f"{'x'.join(map(str, shape))} f32 ({args.slices} slices of "
        f"[{args.rows}, {args.cols}]), a pointwise kernel then a reduction",
        "",
        "| variant | ms | GB/s | vs no streams | GPU ms, queued | vs no streams "
        "| host µs per call |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = r["gpu_ms_queued"]
        queued_cells = (
            f"{q:.3f} | {base_queued / q:.2f}x" if q is not None and base_queued else "- | -"
        )
        lines.append(
            f"| {r['variant']} | {r['ms']:.3f} | {r['gbs']:.0f} | {base / r['ms']:.2f}x | "
            f"{queued_cells} | {r['host_us']:.0f} |"
        )
    table = "\n".join(lines) + "\n"
    meta = run_meta(torch.cuda.get_device_name(), shape=list(shape))
    write_results(args.out, "streams", {"meta": meta, "rows": rows}, table)


if __name__ == "__main__":
    main()
