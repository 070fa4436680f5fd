"""Host time of a new shape of a seen layer norm, RMS norm or softmax definition.

    python benchmarks/new_shape.py [--out DIR] [--rows N] [--cpu]

A definition is run once (compiled and warm) for [WARM_ROWS, hidden]; then each timed call is a
shape the process has not seen: `--rows` fresh row counts (new signatures that reuse the kernel),
then HIDDEN_STEPS new hidden sizes that reuse it too (same vector width and row sizing), and
last the same shape again (a signature-cache hit, for reference). A call is `fd.execute` on
torch CUDA tensors made beforehand, then `torch.cuda.synchronize()`; the row gives the first new
row count and the medians of the others. nvFuser (`nvfuser_direct`, loaded lazily as
benchmarks/../notes explain: `sys.setdlopenflags(os.RTLD_LAZY)` after `import torch`) runs the
same definitions beside it in the same process when it imports; its column reads "n/a" otherwise.

`--cpu` needs no GPU: the same sequence of shapes goes through `fd.compile(inputs,
arch="sm_90")` on numpy arrays (only their metadata is read), which runs the decision a new
signature takes in `execute` (Welford translation, scheduler, heuristics, kernel reuse) and each
kernel's launch configuration: the fuser part of a new shape up to the launch. It also records a
SHA-256 of each shape's CUDA source, so two trees can be compared kernel for kernel.

The RMS norm definition is the benchmark table's (`workloads.rms_norm`): it scales by 1 / the
warm hidden size, which other hidden sizes keep; the host time does not depend on it.

Writes `new_shape.json` and `new_shape.md` to DIR (default ./bench-out) and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

WARM_ROWS = 1024
HIDDEN = 4096
HIDDEN_STEPS = (4000, 3968, 4064, 3904)
"""Hidden sizes that keep the kernel of HIDDEN (multiples of 8 whose rows take the same threads
and chunks per thread, for f32 and bf16)."""
KINDS = ("layer norm", "RMS norm", "softmax")
DTYPES = ("float32", "bfloat16")
EPS = 1e-5


def fuser_definition(kind: str, dtype: str) -> Any:
    """The fuser definition of the benchmark table (benchmarks/workloads.py)."""
    from workloads import layer_norm, rms_norm, softmax

    if kind == "layer norm":
        return layer_norm(dtype)()
    if kind == "RMS norm":
        return rms_norm(dtype, HIDDEN)()
    return softmax(dtype)()


def nvfuser_definition(kind: str, dtype: str) -> Any:
    """The same definition for nvFuser's direct Python API."""
    from nvfuser_direct import DataType, FusionDefinition

    dt = DataType.Float if dtype == "float32" else DataType.BFloat16

    def to_float(fd: Any, t: Any) -> Any:
        return t if dtype == "float32" else fd.ops.cast(t, DataType.Float)

    def back(fd: Any, t: Any) -> Any:
        return t if dtype == "float32" else fd.ops.cast(t, DataType.BFloat16)

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        xf = to_float(fd, x)
        shape = x.shape()
        if kind == "softmax":
            m = fd.ops.broadcast_in_dim(
                fd.ops.max(xf, dims=[1], keepdim=False), shape=shape, broadcast_dims=[0]
            )
            e = fd.ops.exp(fd.ops.sub(xf, m))
            s = fd.ops.broadcast_in_dim(
                fd.ops.sum(e, dims=[1], keepdim=False), shape=shape, broadcast_dims=[0]
            )
            fd.add_output(back(fd, fd.ops.div(e, s)))
            return fd
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        wb = fd.ops.broadcast_in_dim(to_float(fd, w), shape=shape, broadcast_dims=[1])
        eps = fd.define_scalar(EPS, dtype=DataType.Double)
        if kind == "RMS norm":
            ms = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=False)
            scale = fd.define_scalar(1.0 / HIDDEN, dtype=DataType.Double)
            inv = fd.ops.rsqrt(fd.ops.add(fd.ops.mul(ms, scale), eps))
            ib = fd.ops.broadcast_in_dim(inv, shape=shape, broadcast_dims=[0])
            fd.add_output(back(fd, fd.ops.mul(fd.ops.mul(xf, ib), wb)))
            return fd
        b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        bb = fd.ops.broadcast_in_dim(to_float(fd, b), shape=shape, broadcast_dims=[1])
        var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
        invstd = fd.ops.rsqrt(fd.ops.add(var, eps))
        mb = fd.ops.broadcast_in_dim(mean, shape=shape, broadcast_dims=[0])
        ib = fd.ops.broadcast_in_dim(invstd, shape=shape, broadcast_dims=[0])
        y = fd.ops.add(fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, mb), ib), wb), bb)
        fd.add_output(back(fd, y))
    return fd


def shapes(rows: int) -> list[tuple[str, int, int]]:
    """(phase, rows, hidden) of each timed call, in order (the warm shape comes first)."""
    seq = [("warm", WARM_ROWS, HIDDEN)]
    seq += [("new rows", WARM_ROWS + 1 + i, HIDDEN) for i in range(rows)]
    seq += [("new hidden", WARM_ROWS + 1 + rows + i, h) for i, h in enumerate(HIDDEN_STEPS)]
    seq += [("hit", WARM_ROWS + rows + len(HIDDEN_STEPS), HIDDEN_STEPS[-1])] * 5
    return seq


def summarize(times: list[tuple[str, float]]) -> dict[str, float]:
    """First new row count, the median of the other new row counts, of the new hidden sizes,
    and of the hits (ms)."""
    rows = [t for phase, t in times if phase == "new rows"]
    hidden = [t for phase, t in times if phase == "new hidden"]
    hits = [t for phase, t in times if phase == "hit"]
    return {
        "first new rows": rows[0],
        "more new rows": statistics.median(rows[1:]) if len(rows) > 1 else rows[0],
        "new hidden": statistics.median(hidden),
        "hit": statistics.median(hits),
    }


def time_calls(
    run: Callable[[list[Any]], Any], make: Callable[[int, int], list[Any]], rows: int
) -> list[tuple[str, float]]:
    """(phase, ms) of each call after the warm one; inputs are made before each timed call."""
    times = []
    for phase, r, h in shapes(rows):
        inputs = make(r, h)
        t0 = time.perf_counter()
        run(inputs)
        elapsed = (time.perf_counter() - t0) * 1e3
        if phase != "warm":
            times.append((phase, elapsed))
    return times


def numpy_inputs(kind: str, dtype: str) -> Callable[[int, int], list[Any]]:
    import numpy as np

    if dtype == "bfloat16":
        import ml_dtypes

        dt: Any = ml_dtypes.bfloat16
    else:
        dt = np.float32
    params = {"layer norm": 2, "RMS norm": 1, "softmax": 0}[kind]
    return lambda r, h: [np.empty((r, h), dt), *(np.empty(h, dt) for _ in range(params))]


def cpu_case(kind: str, dtype: str, rows: int) -> dict[str, Any]:
    """The fuser part of each new shape up to the launch (`fd.compile` for sm_90), and a digest
    of each shape's CUDA source."""
    fd = fuser_definition(kind, dtype)
    digests: list[str] = []

    def run(inputs: list[Any]) -> None:
        compiled = fd.compile(inputs, arch="sm_90")
        digests.append(hashlib.sha256(compiled.cuda_code().encode()).hexdigest()[:16])

    times = time_calls(run, numpy_inputs(kind, dtype), rows)
    info = fd.cache_info() if hasattr(fd, "cache_info") else {}
    return {
        "fuser": summarize(times),
        "kernels": info.get("kernels"),
        "sources": digests,
    }


def gpu_case(kind: str, dtype: str, rows: int, nvfuser: bool) -> dict[str, Any]:
    import torch

    dt = getattr(torch, dtype)
    params = {"layer norm": 2, "RMS norm": 1, "softmax": 0}[kind]

    def make(r: int, h: int) -> list[Any]:
        x = torch.randn(r, h, device="cuda", dtype=dt)
        out = [x, *(torch.randn(h, device="cuda", dtype=dt) for _ in range(params))]
        torch.cuda.synchronize()
        return out

    result: dict[str, Any] = {}
    fd = fuser_definition(kind, dtype)

    def run_fuser(inputs: list[Any]) -> None:
        fd.execute(inputs)
        torch.cuda.synchronize()

    result["fuser"] = summarize(time_calls(run_fuser, make, rows))
    result["kernels"] = fd.cache_info()["kernels"]
    if nvfuser:
        try:
            nv = nvfuser_definition(kind, dtype)

            def run_nv(inputs: list[Any]) -> None:
                nv.execute(inputs)
                torch.cuda.synchronize()

            result["nvfuser"] = summarize(time_calls(run_nv, make, rows))
        except Exception as e:  # nvFuser's failure is reported, fuser's row stays
            result["nvfuser_error"] = f"{type(e).__name__}: {e}"
    return result


def load_nvfuser() -> str | None:
    """Imports nvFuser's direct API (lazily bound against this torch); None, or why not."""
    try:
        sys.setdlopenflags(os.RTLD_LAZY)
        import nvfuser_direct  # noqa: F401
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--rows", type=int, default=20, help="new row counts timed per case")
    parser.add_argument("--cpu", action="store_true", help="no GPU: fd.compile up to the launch")
    args = parser.parse_args()
    cases: list[dict[str, Any]] = []
    nv_problem = None
    if not args.cpu:
        import torch

        torch.cuda.init()
        nv_problem = load_nvfuser()
        if nv_problem is not None:
            print(f"nvFuser not timed: {nv_problem}")
    for kind in KINDS:
        for dtype in DTYPES:
            if args.cpu:
                r = cpu_case(kind, dtype, args.rows)
            else:
                r = gpu_case(kind, dtype, args.rows, nv_problem is None)
            cases.append({"case": f"{kind} {dtype}", **r})
    mode = "cpu (fd.compile for sm_90, up to the launch)" if args.cpu else "gpu (fd.execute)"
    phases = ("first new rows", "more new rows", "new hidden", "hit")
    lines = [
        f"Host ms per call for a new shape, {mode}; warm [{WARM_ROWS}, {HIDDEN}], "
        f"{args.rows} new row counts, hidden {', '.join(map(str, HIDDEN_STEPS))}",
        "",
        "| case | "
        + " | ".join(f"fuser {p}" for p in phases)
        + ("" if args.cpu else " | " + " | ".join(f"nvFuser {p}" for p in phases))
        + " | kernels |",
        "|---|" + "---|" * (len(phases) * (1 if args.cpu else 2) + 1),
    ]
    for c in cases:
        cells = [f"{c['fuser'][p]:.3f}" for p in phases]
        if not args.cpu:
            nv = c.get("nvfuser")
            cells += [f"{nv[p]:.3f}" if nv else "n/a" for p in phases]
        lines.append(f"| {c['case']} | " + " | ".join(cells) + f" | {c['kernels']} |")
    table = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "new_shape.json").write_text(
        json.dumps({"mode": mode, "nvfuser": nv_problem or "ok", "cases": cases}, indent=1)
    )
    (out / "new_shape.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
