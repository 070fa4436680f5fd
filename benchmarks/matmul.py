"""Times fuser's bf16 matmuls against torch.matmul (cuBLAS) on one GPU, in one process.

    python benchmarks/matmul.py [--out DIR] [--only MxKxN] [--sweep]

Shapes: [256, 65536] x [65536, 256] and [128, 32768] x [32768, 128] (too few output tiles to
fill the GPU: split-K's shapes) and [4096, 4096] x [4096, 4096]. Each runs through `fd.execute`
of a plain matmul fusion on torch CUDA tensors twice when `fuser.transforms.split_k` exists:
with split-K as the compiler decides and with it off (`split_k=1`: the matmul scheduler's one
kernel), and once otherwise; torch.matmul runs on the same inputs. Times are CUDA-event medians
after warm-up with the L2 emptied before every run (`run.median_ms`); TFLOP/s counts 2 M N K.
Every result is checked against torch's first (relative Frobenius error below 1e-2).

`--sweep` also times the matmul kernel alone (launched directly, outside `fd.execute`) for
several tile configurations per shape (split-K partials of several factors for the skinny
shapes, with torch's sum over the splits after them), to tune `matmul_tiles`, `WGMMA_SHAPES`
and `MMA_SHAPES`.

Writes `matmul.json` and `matmul.md` to `--out` and prints the table last.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch  # first: torch must be imported before fuser initializes CUDA (see tests/gpu)

sys.path.insert(0, str(Path(__file__).parent))

from run import median_ms

from fuser import DataType, FusionDefinition
from fuser.codegen.cuda import emit_cuda
from fuser.compiler import FusionCompiler
from fuser.dialects import kernel
from fuser.dialects.fusion import BF16, FusionOp
from fuser.runtime.compiled_kernel import RtcKernel, pack_tensor_param
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.schedulers.matmul import MatmulParams, MatmulScheduler

SHAPES = [(4096, 4096, 4096), (256, 65536, 256), (128, 32768, 128)]
"""(M, K, N)."""

# (engine, tile, warps, stages, splits) candidates of --sweep; splits None: the plain matmul
Sweep = tuple[str, tuple[int, int, int], tuple[int, int], int, int | None]
SWEEP: dict[tuple[int, int, int], list[Sweep]] = {
    (4096, 4096, 4096): [
        ("wgmma", (128, 256, 64), (8, 1), 4, None),
        ("wgmma", (128, 256, 64), (8, 1), 3, None),
        ("wgmma", (128, 128, 64), (8, 1), 4, None),
        ("wgmma", (128, 128, 64), (8, 1), 3, None),
        ("mma", (128, 256, 32), (2, 4), 5, None),
    ],
    (256, 65536, 256): [
        ("wgmma", (64, 128, 64), (4, 1), 4, 32),
        ("wgmma", (64, 128, 64), (4, 1), 5, 32),
        ("wgmma", (64, 64, 64), (4, 1), 5, 32),
        ("wgmma", (128, 128, 64), (8, 1), 4, 64),
        ("mma", (64, 128, 32), (2, 2), 4, 32),
    ],
    (128, 32768, 128): [
        ("wgmma", (64, 64, 64), (4, 1), 4, 64),
        ("wgmma", (64, 64, 64), (4, 1), 5, 64),
        ("wgmma", (64, 64, 64), (4, 1), 6, 64),
        ("mma", (64, 64, 64), (2, 2), 4, 64),
    ],
}
"""Earlier sweeps of mma.sync tiles (benchmarks/RESULTS.md runs 11-13): for 256x65536x256 every
tile, warp layout and factor took 33-40 us for the partials, bound by shared-memory traffic."""


def tflops(m: int, k: int, n: int, ms: float) -> float:
    return 2 * m * k * n / (ms * 1e-3) / 1e12


def rel_error(out: Any, ref: Any) -> float:
    o, r = out.double(), ref.double()
    return ((o - r).norm() / r.norm().clamp_min(1e-30)).item()


def checked(out: Any, ref: Any, what: str) -> float:
    err = rel_error(out, ref)
    if not err < 1e-2:  # NaN fails too
        raise SystemExit(f"{what}: fuser's result differs from torch's: relative error {err:.2e}")
    return err


def matmul_definition() -> FusionDefinition:
    with FusionDefinition("matmul_bf16") as fd:
        a = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.matmul(a, b))
    return fd


def has_split_k() -> bool:
    try:
        import fuser.transforms.split_k  # noqa: F401
    except ImportError:
        return False
    return True


def compilers(fusion: FusionOp) -> dict[str, FusionCompiler]:
    """`fuser` (split-K as the compiler decides) and, with split-K, `fuser (no split)`."""
    if not has_split_k():
        return {"fuser": FusionCompiler(fusion)}
    return {
        "fuser": FusionCompiler(fusion),
        "fuser (no split)": FusionCompiler(fusion, split_k=1),  # type: ignore[call-arg]
    }


def describe(comp: FusionCompiler, inputs: list[Any]) -> str:
    """The kernels fuser compiled for `inputs`: scheduler, grid and heuristics' tile."""
    compiled = comp.compile(inputs)
    parts = []
    for k in compiled.kernels:
        tile = getattr(k.heuristics, "tile", None)
        extra = f" tile {tile}" if tile else ""
        parts.append(f"{k.scheduler} grid {list(k.launch.grid)}{extra}")
    return "; ".join(parts)


def run_shape(m: int, k: int, n: int) -> dict[str, Any]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ref = torch.matmul(a, b)
    row: dict[str, Any] = {"shape": [m, k, n]}
    row["torch"] = {"ms": median_ms(lambda: torch.matmul(a, b))}
    fd = matmul_definition()
    for name, comp in compilers(fd.fusion).items():
        (out,) = comp.execute([a, b])
        err = checked(out, ref, f"{name} {m}x{k}x{n}")
        ms = median_ms(lambda comp=comp: comp.execute([a, b]))
        row[name] = {"ms": ms, "rel_error": err, "kernels": describe(comp, [a, b])}
    for key in [x for x in row if isinstance(row[x], dict)]:
        row[key]["tflops"] = tflops(m, k, n, row[key]["ms"])
    return row


# --------------------------------------------------------------------------------------------
# --sweep: tile configurations, launched directly


def partial_fusion(splits: int) -> FusionOp:
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser

    from fuser.dialects.fusion import Fusion

    t = "tensor<?x?xbf16>"
    p = f"tensor<{splits}x?x?xf32>"
    text = f"""fusion.fusion @part(%a: {t}, %b: {t}) -> ({p}) {{
  %p = fusion.matmul %a, %b splits({splits}) : {t}, {t} -> {p}
  fusion.output %p : {p}
}}"""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Fusion)
    return next(op for op in Parser(ctx, text).parse_module().ops if isinstance(op, FusionOp))


def meta(t: Any) -> TensorMeta:
    return TensorMeta(tuple(t.shape), tuple(t.stride()), 16 if t.data_ptr() % 16 == 0 else 2)


def sweep_shape(m: int, k: int, n: int) -> list[dict[str, Any]]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ref = torch.matmul(a.double(), b.double())
    scheduler = MatmulScheduler()
    rows = []
    for engine, tile, warps, stages, splits in SWEEP.get((m, k, n), []):
        fusion = matmul_definition().fusion if splits is None else partial_fusion(splits)
        info = FusionInfo((meta(a), meta(b)), DeviceInfo())
        config = kernel.MatmulConfigAttr(
            kernel.MatmulEngine(engine),
            BF16,
            tile,
            warps,
            stages,
            kernel.MatmulLoad.K_ASYNC,
            kernel.MatmulLoad.MN_ASYNC,
        )
        config.verify()
        p: MatmulParams = dataclasses.replace(
            scheduler.heuristics(fusion, info),
            engine=engine,
            tile=tile,
            warps=warps,
            stages=stages,
            block=(config.threads, 1, 1),
            shared_bytes=config.shared_bytes(),
        )
        name = "sweep_" + "_".join(map(str, (engine, *tile, *warps, stages, splits or 0)))
        func = scheduler.emit(fusion, p, name)
        launch = scheduler.launch_config(fusion, p, info)
        compiled = RtcKernel(emit_cuda(func), name, block_size=config.threads)
        out_shape = (m, n) if splits is None else (splits, m, n)
        out = torch.empty(
            out_shape, device="cuda", dtype=torch.bfloat16 if splits is None else torch.float32
        )
        args = [pack_tensor_param(t.data_ptr(), t.shape, t.stride()) for t in (a, b, out)]

        def fn(compiled=compiled, launch=launch, args=args, out=out, splits=splits) -> Any:
            compiled.launch(launch.grid, launch.block, args, launch.shared_bytes)
            return out if splits is None else out.sum(0).to(torch.bfloat16)

        def kernel_only(compiled=compiled, launch=launch, args=args) -> None:
            compiled.launch(launch.grid, launch.block, args, launch.shared_bytes)

        err = checked(fn(), ref, name)
        ms_kernel = median_ms(kernel_only)
        ms = ms_kernel if splits is None else median_ms(fn)
        rows.append(
            {
                "shape": [m, k, n],
                "engine": engine,
                "tile": list(tile),
                "warps": list(warps),
                "stages": stages,
                "splits": splits,
                "grid": list(launch.grid),
                "kernel_ms": ms_kernel,
                "ms": ms,
                "tflops": tflops(m, k, n, ms),
                "rel_error": err,
            }
        )
        r = rows[-1]
        print(
            f"sweep {m}x{k}x{n} {engine} tile {tile} warps {warps} stages {stages} "
            f"splits {splits}: kernel {ms_kernel:.4f} ms, total {ms:.4f} ms, "
            f"{r['tflops']:.0f} TFLOP/s",
            flush=True,
        )
    return rows


def markdown(device: str, rows: list[dict[str, Any]], sweep: list[dict[str, Any]]) -> str:
    names = [k for k in ("torch", "fuser", "fuser (no split)") if any(k in r for r in rows)]
    head = " | ".join(f"{n} ms | {n} TFLOP/s" for n in names)
    lines = [
        f"Device: {device}",
        "",
        f"| bf16 M x K x N | {head} | fuser / torch time |",
        "|---|" + "---|---|" * len(names) + "---|",
    ]
    for r in rows:
        cells = " | ".join(
            f"{r[n]['ms']:.3f} | {r[n]['tflops']:.0f}" if n in r else "- | -" for n in names
        )
        ratio = r["fuser"]["ms"] / r["torch"]["ms"]
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {cells} | {ratio:.2f}x |")
    lines.append("")
    for r in rows:
        for n in names[1:]:
            if n in r:
                lines.append(f"- {'x'.join(map(str, r['shape']))} {n}: {r[n]['kernels']}")
    if sweep:
        lines += [
            "",
            "| sweep M x K x N | engine | tile | warps | stages | splits | grid | kernel ms | "
            "total ms | TFLOP/s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for s in sweep:
            lines.append(
                f"| {'x'.join(map(str, s['shape']))} | {s['engine']} | "
                f"{'x'.join(map(str, s['tile']))} | "
                f"{'x'.join(map(str, s['warps']))} | {s['stages']} | {s['splits'] or '-'} | "
                f"{s['grid']} | {s['kernel_ms']:.4f} | {s['ms']:.4f} | {s['tflops']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="folder for matmul.json and matmul.md")
    parser.add_argument("--only", default=None, help="run one shape, MxKxN")
    parser.add_argument("--sweep", action="store_true", help="also time tile configurations")
    args = parser.parse_args()
    shapes = [s for s in SHAPES if args.only in (None, "x".join(map(str, s)))]
    device = torch.cuda.get_device_name()
    rows, sweep = [], []
    for m, k, n in shapes:
        rows.append(run_shape(m, k, n))
        r = rows[-1]
        summary = ", ".join(
            f"{key} {r[key]['ms']:.4f} ms ({r[key]['tflops']:.0f} TFLOP/s)"
            for key in r
            if isinstance(r[key], dict)
        )
        print(f"{m}x{k}x{n}: {summary}", flush=True)
        if args.sweep:
            sweep += sweep_shape(m, k, n)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta_info = {
        "device": device,
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "split_k": has_split_k(),
    }
    (out / "matmul.json").write_text(
        json.dumps({"meta": meta_info, "rows": rows, "sweep": sweep}, indent=1)
    )
    table = markdown(device, rows, sweep)
    (out / "matmul.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
