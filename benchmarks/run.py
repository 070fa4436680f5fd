"""Times fuser against torch eager and torch.compile on one GPU, in one process.

    python benchmarks/run.py [--out DIR] [--only NAME] [--no-compile] [--l2-flush read|zero]

Each workload runs through `fd.execute` on torch CUDA tensors, torch eager and `torch.compile` on
the same inputs. Times are CUDA-event medians after warm-up, with the L2 emptied before every run
by reading a 256 MiB buffer (`--l2-flush zero`: `triton.testing.do_bench`'s flush, which leaves
dirty lines to write back inside the timed run; see L2_FLUSH); GB/s counts each input read once
and each output written once; "% copy" is
against a device-to-device copy of 2 GiB measured in the same run. The host-overhead rows time
steady-state `fd.execute` calls on the host. Writes `results.json` and `results.md` to `--out`
and prints the table last.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch  # first: torch must be imported before fuser initializes CUDA (see tests/gpu)
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).parent))

from workloads import Workload, all_workloads, host_overhead_fusions

L2_FLUSH = "read"
"""How the L2 cache is emptied before each timed run: "read" sums a 256 MiB buffer, leaving the
L2 full of clean lines; "zero" is `triton.testing.do_bench`'s own flush, which zeroes the buffer
and so leaves the L2 full of dirty lines, whose write-back (tens of MB) then lands inside the
timed run: against a workload of 100-300 MB that alone costs 5-15% (benchmarks/RESULTS.md,
run 6), and far less against the 2 GiB copy the table compares with."""


def median_ms(fn: Any, warmup_ms: float = 50, rep_ms: float = 300, agree: Any = None) -> float:
    """The median time of `fn` in ms over CUDA events, after warm-up; the L2 is emptied before
    every run (see L2_FLUSH). `agree` maps this process's estimate of one run to the one every
    process of a multi-GPU run uses (their slowest), so all run `fn` the same number of times
    and their collectives pair up."""
    if L2_FLUSH == "zero" and agree is None:  # (do_bench's counts are its own: one process)
        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    flush = torch.ones(256 * 2**20 // 4, device="cuda")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.sum()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    if agree is not None:
        estimate = agree(estimate)
    for _ in range(max(1, int(warmup_ms / estimate))):
        fn()
    samples = []
    for _ in range(max(5, int(rep_ms / estimate))):
        flush.sum()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        samples.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in samples)


def copy_bandwidth() -> float:
    n = 2**31 // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * src.numel() * 4 / (ms * 1e-3) / 1e9


def nbytes(tensors: list[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def check(outs: list[Any], refs: Any, dtype: str) -> float:
    """Largest relative error of fuser's outputs against torch's (in float64)."""
    refs = refs if isinstance(refs, (tuple, list)) else [refs]
    worst = 0.0
    for o, r in zip(outs, refs, strict=True):
        o64, r64 = o.double(), r.double()
        err = ((o64 - r64).norm() / r64.norm().clamp_min(1e-30)).item()
        worst = max(worst, err)
    limit = 1e-4 if dtype == "float32" else 1e-2
    if not math.isfinite(worst) or worst > limit:
        raise SystemExit(f"fuser's result differs from torch's: relative error {worst:.2e}")
    return worst


def run_workload(w: Workload, copy_gbs: float, use_compile: bool) -> dict[str, Any]:
    inputs = w.inputs(torch)
    fd = w.define()
    outs = fd.execute(inputs)
    refs = w.torch_fn(*inputs)
    err = check(outs, refs, w.dtype)
    row: dict[str, Any] = {
        "workload": w.name,
        "dtype": w.dtype,
        "shapes": [list(s) for s in w.shapes],
        "bytes": nbytes(inputs) + nbytes(outs),
        "rel_error_vs_torch": err,
    }
    time_peers(row, fd, w.torch_fn, inputs, copy_gbs, use_compile)
    return row


def time_peers(
    row: dict[str, Any],
    fd: Any,
    torch_fn: Callable[..., Any],
    args: list[Any],
    copy_gbs: float,
    use_compile: bool,
    nvfuser: Any = None,
) -> None:
    """Adds to `row` the median times of fuser's `fd`, torch eager (`torch_fn`), with
    `use_compile` `torch.compile` and, given, nvFuser's definition on `args`: each in ms, in
    GB/s over `row["bytes"]` and in % of copy; and the best peer's time over fuser's."""
    timings = {
        "fuser": median_ms(lambda: fd.execute(args)),
        "eager": median_ms(lambda: torch_fn(*args)),
    }
    if use_compile:
        compiled = torch.compile(torch_fn)
        compiled(*args)
        timings["compile"] = median_ms(lambda: compiled(*args))
    if nvfuser is not None:
        timings["nvfuser"] = median_ms(lambda: nvfuser.execute(args))
    for name, ms in timings.items():
        gbs = row["bytes"] / (ms * 1e-3) / 1e9
        row[name] = {"ms": ms, "gbs": gbs, "pct_copy": 100 * gbs / copy_gbs}
    row["fuser_vs_best_peer"] = (
        min(ms for k, ms in timings.items() if k != "fuser") / timings["fuser"]
    )


def peer_row(
    case: str,
    fd: Any,
    torch_fn: Callable[..., Any],
    args: list[Any],
    dtype: str,
    copy_gbs: float,
    use_compile: bool,
    make_nvfuser: Callable[[], Any] | None,
    read_bytes: int | None = None,
    validate: Callable[[list[Any]], float] | None = None,
) -> dict[str, Any]:
    """A row of `peer_markdown`: fuser's definition `fd` against torch eager (`torch_fn`, also
    the reference every result is checked against), `torch.compile` and nvFuser (defined by
    `make_nvfuser()`; a failure or a wrong result is recorded, fuser's row stays) on `args`:
    each a median time, in GB/s over the bytes read (`read_bytes`, default every input whole)
    and written, and % of copy, and the best peer's time over fuser's. A case of random
    numbers, whose streams differ from torch's, gives `validate(outputs)` instead (its error,
    raising where it is too large)."""
    outs = fd.execute(args)
    refs = torch_fn(*args)
    refs = list(refs) if isinstance(refs, (tuple, list)) else [refs]

    def checked(got: list[Any]) -> float:
        return check(got, refs, dtype) if validate is None else validate(list(got))

    row: dict[str, Any] = {
        "case": case,
        "bytes": (nbytes(args) if read_bytes is None else read_bytes) + nbytes(refs),
        "rel_error_vs_torch": checked(outs),
        "kernels": [k.scheduler for k in fd.compile(args).kernels],
    }
    nv = None
    if make_nvfuser is not None:
        try:
            nv = make_nvfuser()
            checked(nv.execute(args))
        except (Exception, SystemExit) as e:  # recorded; fuser's row stays
            row["nvfuser_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            nv = None
    time_peers(row, fd, torch_fn, args, copy_gbs, use_compile, nv)
    return row


def peer_markdown(title: str, rows: list[dict[str, Any]]) -> str:
    """A table of rows with fuser, eager, compile and nvFuser times (ms and % of copy), the
    best peer's ratio and the kernels, then nvFuser's failures."""
    lines = [
        title,
        "",
        "| case | fuser | eager | compile | nvFuser | fuser / best peer | kernels |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def cell(name: str, r: dict[str, Any] = r) -> str:
            t = r.get(name)
            return "n/a" if t is None else f"{t['ms']:.3f} ({t['pct_copy']:.0f}%)"

        lines.append(
            f"| {r['case']} | {cell('fuser')} | {cell('eager')} | {cell('compile')} | "
            f"{cell('nvfuser')} | {r['fuser_vs_best_peer']:.2f}x | {', '.join(r['kernels'])} |"
        )
    errors = [f"- {r['case']}: nvFuser {r['nvfuser_error']}" for r in rows if "nvfuser_error" in r]
    return "\n".join(lines + (["", *errors] if errors else [])) + "\n"


def host_us_per_call(fn: Any, calls: int = 20000, warmup: int = 1000) -> float:
    """Steady-state host time of `fn` in µs per call: the median of 5 batches after `warmup`
    calls, the GPU synchronized after each batch."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls // 5):
            fn()
        samples.append((time.perf_counter() - t0) / (calls // 5) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def interleaved_us(
    rows: dict[str, Callable[[], object]], rounds: int = 15, calls: int = 2000
) -> dict[str, list[float]]:
    """Host time in µs per call of each of `rows`: `rounds` interleaved rounds of `calls` calls
    each (after a warm-up; the GPU synchronized after each round), every round's figure per row.
    Interleaving makes a slow spell of a shared host (other tenants, frequency changes) fall on
    every row alike rather than on one of them."""
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for fn in rows.values():
        host_us_per_call(fn, calls, warmup=1000)
    for _ in range(rounds):
        for name, fn in rows.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls * 1e6)
            torch.cuda.synchronize()
    return samples


def host_overhead(rounds: int = 15, calls: int = 2000) -> list[dict[str, Any]]:
    """Steady-state host time per call of a one-kernel pointwise fusion on two [1024] inputs,
    of a three-kernel one (two segment_sets in a pointwise chain: a host program), and of torch
    eager's `a + b`, in interleaved rounds (`interleaved_us`), the median round per row."""
    fd, chain = host_overhead_fusions()
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    rows: dict[str, Callable[[], object]] = {
        "fuser fd.execute": lambda: fd.execute([x, y]),
        "fuser fd.execute, 3 kernels (two segment_sets)": lambda: chain.execute([x, y]),
        "torch eager a + b": lambda: x + y,
    }
    return [
        {
            "what": name,
            "us_per_call": statistics.median(s),
            "min_us": min(s),
            "max_us": max(s),
        }
        for name, s in interleaved_us(rows, rounds, calls).items()
    ]


def run_meta(device: str, **extra: Any) -> dict[str, Any]:
    """What a results file records about its run: the device, date and versions, and `extra`."""
    return {
        "device": device,
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        **extra,
    }


def write_results(out_dir: str, stem: str, results: dict[str, Any], table: str) -> None:
    """Writes `results` to `<out_dir>/<stem>.json` and `table` to `<out_dir>/<stem>.md`, then
    prints the table."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1))
    (out / f"{stem}.md").write_text(table)
    print(table)


def markdown(
    device: str, copy_gbs: float, rows: list[dict[str, Any]], host: list[dict[str, Any]]
) -> str:
    lines = [
        f"Device: {device}; device-to-device copy: {copy_gbs:.0f} GB/s",
        "",
        "| workload | dtype | shape | fuser ms | fuser GB/s | % copy | eager GB/s | compile GB/s "
        "| fuser / best peer |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        comp = f"{r['compile']['gbs']:.0f}" if "compile" in r else "-"
        shape = "x".join(map(str, r["shapes"][0]))
        lines.append(
            f"| {r['workload']} | {r['dtype']} | {shape} | {r['fuser']['ms']:.3f} | "
            f"{r['fuser']['gbs']:.0f} | {r['fuser']['pct_copy']:.1f}% | {r['eager']['gbs']:.0f} | "
            f"{comp} | {r['fuser_vs_best_peer']:.2f}x |"
        )
    lines += [
        "",
        "| host overhead, [1024] f32 a + b, steady state | µs per call (median round) "
        "| fastest round | slowest round |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {h['what']} | {h['us_per_call']:.1f} | {h['min_us']:.1f} | {h['max_us']:.1f} |"
        for h in host
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    global L2_FLUSH
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="folder for results.json and results.md")
    parser.add_argument("--only", default=None, help="run the workloads whose name contains this")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument(
        "--l2-flush", choices=("read", "zero"), default=L2_FLUSH, help="see L2_FLUSH"
    )
    args = parser.parse_args()
    L2_FLUSH = args.l2_flush
    device = torch.cuda.get_device_name()
    host = host_overhead()  # first: torch.compile's worker processes would disturb it
    copy_gbs = copy_bandwidth()
    rows = []
    for w in all_workloads(torch):
        if args.only and args.only not in w.name:
            continue
        rows.append(run_workload(w, copy_gbs, not args.no_compile))
        r = rows[-1]
        print(
            f"{w.name} {w.dtype}: fuser {r['fuser']['gbs']:.0f} GB/s, "
            f"best peer ratio {r['fuser_vs_best_peer']:.2f}",
            flush=True,
        )
    meta = run_meta(device, copy_gbs=copy_gbs, l2_flush=L2_FLUSH)
    results = {"meta": meta, "rows": rows, "host": host}
    write_results(args.out, "results", results, markdown(device, copy_gbs, rows, host))


if __name__ == "__main__":
    main()
