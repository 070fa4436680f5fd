"""First-call time of a fusion in a new process, with the kernel cache on disk empty and filled.

    python benchmarks/cold_start.py [--out DIR]

Each case runs in a child process that imports torch (not timed), then fuser, builds the fusion,
makes its inputs and times its first `fd.execute` (import the compiler, segment, schedule, emit
CUDA, compile the kernels or load them from the kernel cache, or load the signature's runnable
from the runnable store; launch, synchronize) and its second. Every case runs three times, each
in a new process: with `FUSER_CACHE_DIR` a new, empty folder; over the same folder with the
runnable store off (`FUSER_RUNNABLE_STORE=0`: the kernels come from the kernel cache, the rest is
compiled); and over the same folder as it is (the stored runnable). `import + first call` adds
`import fuser`, the fusion's definition (which imports the frontend and xDSL) and the first call
of the last run: what a process pays from `import torch` to its first result. Writes
`cold_start.json` and `cold_start.md` to DIR (default ./bench-out) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: title -> (case, dtype): a workload of `workloads.all_workloads` by name and dtype, or "chain"
#: (the three-kernel fusion of the host-overhead rows) or "matmul"
CASES = {
    "layer norm bf16 [16384, 4096]": ("layer norm", "bfloat16"),
    "softmax f32 [8192, 8192]": ("softmax(-1)", "float32"),
    "three-kernel chain f32 [1024]": ("chain", "float32"),
    "matmul bf16 4096^3": ("matmul", "bfloat16"),
}


def child(case: str, dtype: str) -> dict[str, float]:
    """Run one case in this (new) process and return its times in ms."""
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    t0 = time.perf_counter()
    import fuser  # noqa: F401  (timed: part of a cold start)

    import_ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.init()  # (torch's CUDA context: not fuser's to pay)
    t0 = time.perf_counter()
    if case == "chain":
        from workloads import host_overhead_fusions

        fd = host_overhead_fusions()[1]
    elif case == "matmul":
        from matmul import matmul_definition

        fd = matmul_definition()
    else:
        from workloads import all_workloads

        (w,) = [w for w in all_workloads(torch) if w.name == case and w.dtype == dtype]
        fd = w.define()
    times = {"import fuser": import_ms, "define": (time.perf_counter() - t0) * 1e3}
    if case == "chain":
        inputs = [torch.randn(1024, device="cuda") for _ in range(2)]
    elif case == "matmul":
        inputs = [torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    else:
        inputs = w.inputs(torch)
    torch.cuda.synchronize()
    for call in ("first call", "second call"):
        t0 = time.perf_counter()
        fd.execute(inputs)
        torch.cuda.synchronize()
        times[call] = (time.perf_counter() - t0) * 1e3
    return times


def run_case(case: str, dtype: str, cache: str, store: bool = True) -> dict[str, float]:
    env = {**os.environ, "FUSER_CACHE_DIR": cache, "FUSER_KERNEL_CACHE": "1"}
    env["FUSER_RUNNABLE_STORE"] = "1" if store else "0"
    out = subprocess.run(
        [sys.executable, __file__, "--child", case, dtype],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"case {case!r} failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # case, dtype
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    rows: list[dict[str, Any]] = []
    for title, (case, dtype) in CASES.items():
        with tempfile.TemporaryDirectory() as cache:
            cold = run_case(case, dtype, cache)
            kernels = run_case(case, dtype, cache, store=False)
            warm = run_case(case, dtype, cache)
        rows.append({"case": title, "cold": cold, "kernels": kernels, "warm": warm})
    lines = [
        "| fusion | import fuser ms | define ms | first call, empty cache ms "
        "| first call, kernel cache ms | first call, stored runnable ms "
        "| import + first call, stored ms | second call ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cold, kernels, warm = r["cold"], r["kernels"], r["warm"]
        total = warm["import fuser"] + warm["define"] + warm["first call"]
        lines.append(
            f"| {r['case']} | {warm['import fuser']:.0f} | {warm['define']:.0f} | "
            f"{cold['first call']:.0f} | {kernels['first call']:.0f} | "
            f"{warm['first call']:.0f} | {total:.0f} | {warm['second call']:.2f} |"
        )
    table = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cold_start.json").write_text(json.dumps(rows, indent=1))
    (out / "cold_start.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
