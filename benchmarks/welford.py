"""Times the Welford translation: each workload with its Welford ops as two passes
(`FusionCompiler(..., welford="always")`) and as the in-kernel Welford (`welford="never"`).

    python benchmarks/welford.py [--out DIR] [--rounds N] [--l2-flush read|zero]

Workloads (benchmarks/workloads.py): layer norm f32 [8192, 8192], layer norm bf16
[16384, 4096], var_mean(-1) f32 [16384, 4096]; then var_mean(-1) bf16 [16384, 4096] and layer
norm f32 [65536, 1024] (short rows). Each path runs on the same torch CUDA inputs and
its outputs are checked against torch; times are CUDA-event medians after warm-up with the L2
emptied before every run (`run.median_ms`), the two paths alternating for `--rounds` rounds (the
table gives the median of the rounds' medians, so clock drift hits both). GB/s counts each input
read once and each output written once; "% copy" is against a device-to-device copy measured in
the same run. The table also says which path `welford=auto` takes for the shape.

The default is `AUTO_TRANSLATE` in transforms/translate_welford.py (by the scheduler that takes
the fusion untranslated: `persistent` for layer norm, `reduction` for var_mean); set each entry
from these numbers. Writes `welford.json` and `welford.md` to `--out` and prints the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch  # first: torch must be imported before fuser initializes CUDA (see tests/gpu)

sys.path.insert(0, str(Path(__file__).parent))

import run  # benchmarks/run.py: timing, copy bandwidth, checks
import workloads as wl
from workloads import Workload, all_workloads

from fuser.compiler import FusionCompiler
from fuser.transforms.translate_welford import AUTO_TRANSLATE

CASES = (("layer norm", "float32"), ("layer norm", "bfloat16"), ("var_mean(-1)", "float32"))
"""(workload name, dtype) of the workloads of benchmarks/workloads.py timed here."""

PATHS = {"two-pass": "always", "Welford": "never"}
"""Each path and the `welford` mode that forces it."""


def workloads() -> list[Workload]:
    """The workloads of CASES, then the same fusions at other dtypes and widths (short rows,
    bf16 statistics), which the defaults also cover."""
    chosen = [w for w in all_workloads(torch) if (w.name, w.dtype) in CASES]
    assert len(chosen) == len(CASES), "a workload of CASES is missing from workloads.py"
    by_name = {(w.name, w.dtype): w for w in chosen}
    ln, vm = by_name["layer norm", "float32"], by_name["var_mean(-1)", "float32"]
    return [
        *chosen,
        Workload(vm.name, [(16384, 4096)], "bfloat16", wl.var_mean("bfloat16"), vm.torch_fn),
        Workload(ln.name, [(65536, 1024), (1024,), (1024,)], "float32", ln.define, ln.torch_fn),
    ]


def uses_welford(compiler: FusionCompiler, inputs: list[Any]) -> tuple[bool, list[str]]:
    """Whether the compiled kernels for `inputs` reduce with Welford, and their schedulers."""
    kernels = compiler.compile(inputs).kernels
    welford = any("reduce fusion.var_mean" in k.source for k in kernels)
    return welford, [k.scheduler for k in kernels]


def time_workload(w: Workload, copy_gbs: float, rounds: int) -> dict[str, Any]:
    inputs = w.inputs(torch)
    refs = w.torch_fn(*inputs)
    fd = w.define()
    row: dict[str, Any] = {"workload": w.name, "dtype": w.dtype, "shapes": w.shapes}
    compilers = {path: FusionCompiler(fd.fusion, welford=mode) for path, mode in PATHS.items()}
    for path, compiler in compilers.items():
        outs = compiler.execute(inputs)
        welford, schedulers = uses_welford(compiler, inputs)
        assert welford == (path == "Welford"), f"{w.name} {w.dtype}: {path} path did not run"
        row[path] = {
            "schedulers": schedulers,
            "rel_error_vs_torch": run.check(outs, refs, w.dtype),
            "bytes": run.nbytes(inputs) + run.nbytes(outs),
        }
    samples: dict[str, list[float]] = {path: [] for path in PATHS}
    for _ in range(rounds):
        for path, compiler in compilers.items():
            samples[path].append(run.median_ms(lambda c=compiler: c.execute(inputs)))
    for path in PATHS:
        ms = statistics.median(samples[path])
        gbs = row[path]["bytes"] / (ms * 1e-3) / 1e9
        row[path] |= {"ms": ms, "rounds_ms": samples[path], "gbs": gbs}
        row[path]["pct_copy"] = 100 * gbs / copy_gbs
    auto = FusionCompiler(fd.fusion)
    auto.execute(inputs)
    row["auto"] = "Welford" if uses_welford(auto, inputs)[0] else "two-pass"
    row["faster"] = min(PATHS, key=lambda p: row[p]["ms"])
    row["two_pass_over_welford"] = row["two-pass"]["ms"] / row["Welford"]["ms"]
    return row


def markdown(device: str, copy_gbs: float, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"Device: {device}; device-to-device copy: {copy_gbs:.0f} GB/s; "
        f"AUTO_TRANSLATE = {AUTO_TRANSLATE}",
        "",
        "| workload | dtype | shape | two-pass ms | GB/s | % copy | kernels | Welford ms | GB/s "
        "| % copy | kernels | two-pass / Welford | auto takes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, f = r["two-pass"], r["Welford"]
        shape = "x".join(map(str, r["shapes"][0]))
        lines.append(
            f"| {r['workload']} | {r['dtype']} | {shape} | {t['ms']:.3f} | {t['gbs']:.0f} | "
            f"{t['pct_copy']:.1f}% | {'+'.join(t['schedulers'])} | {f['ms']:.3f} | "
            f"{f['gbs']:.0f} | {f['pct_copy']:.1f}% | {'+'.join(f['schedulers'])} | "
            f"{r['two_pass_over_welford']:.3f} | {r['auto']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="folder for welford.json and welford.md")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per path")
    parser.add_argument(
        "--l2-flush", choices=("read", "zero"), default=run.L2_FLUSH, help="see run.L2_FLUSH"
    )
    args = parser.parse_args()
    run.L2_FLUSH = args.l2_flush
    device = torch.cuda.get_device_name()
    copy_gbs = run.copy_bandwidth()
    rows = []
    for w in workloads():
        rows.append(time_workload(w, copy_gbs, max(1, args.rounds)))
        r = rows[-1]
        print(
            f"{w.name} {w.dtype}: two-pass {r['two-pass']['ms']:.3f} ms, "
            f"Welford {r['Welford']['ms']:.3f} ms, auto takes {r['auto']}",
            flush=True,
        )
    meta = run.run_meta(
        device,
        copy_gbs=copy_gbs,
        l2_flush=run.L2_FLUSH,
        auto_translate=dict(AUTO_TRANSLATE),
    )
    results = {"meta": meta, "rows": rows}
    run.write_results(args.out, "welford", results, markdown(device, copy_gbs, rows))


if __name__ == "__main__":
    main()
