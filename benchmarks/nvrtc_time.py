"""NVRTC's share of a first call: compile time per kernel, with and without precompiled headers,
a program's kernels compiled together or one by one, and a sequence of fusions in a new process.

    python benchmarks/nvrtc_time.py [--reps N]

Needs no GPU (kernels for sm_90). The kernels are those of `cold_start.py`'s cases plus a
pointwise f32 and a pointwise bf16 kernel; each time is the CPU time of the compiling thread
(`time.thread_time`: it moves little when other processes share the machine), the fastest of N:
- `no PCH`: one `nvrtc_compile` with precompiled headers off;
- `PCH`: the same compile once its prefix's precompiled header is written (`nvrtc_pch`; none
  for kernels that include no CUDA header), and the CPU time spent writing it, on its thread;
- the three-kernel chain: `compile_together` (one NVRTC program) against three compiles;
- `sequence`: five bf16 fusions compiled one after another in a new process with an empty
  kernel cache (wall ms of `fd.compile`), with precompiled headers on and off.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from workloads import host_overhead_fusions, layer_norm, softmax

from fuser import DataType, FusionDefinition
from fuser.compiler import KernelSummary
from fuser.runtime import compiled_kernel as ck
from fuser.runtime.nvrtc_pch import PCH

BF16 = ml_dtypes.bfloat16


def gelu_bf16() -> FusionDefinition:
    with FusionDefinition("gelu_bf16") as fd:
        x = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1], DataType.BFloat16)
        bb = fd.ops.broadcast_in_dim(b, x.shape(), [1])
        fd.add_output(fd.ops.gelu(fd.ops.add(x, bb), approximate="tanh"))
    return fd


def matmul_bf16() -> FusionDefinition:
    with FusionDefinition("matmul_bf16") as fd:
        a = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.matmul(a, b))
    return fd


def cases() -> dict[str, tuple[FusionDefinition, list[np.ndarray]]]:
    add, chain = host_overhead_fusions()
    return {
        "pointwise f32": (add, [np.ones(1 << 20, np.float32)] * 2),
        "pointwise bf16": (gelu_bf16(), [np.ones((1024, 4096), BF16), np.ones(4096, BF16)]),
        "layer norm bf16": (
            layer_norm("bfloat16")(),
            [np.ones((16384, 4096), BF16), np.ones(4096, BF16), np.ones(4096, BF16)],
        ),
        "softmax f32": (softmax("float32")(), [np.ones((8192, 8192), np.float32)]),
        "matmul bf16": (matmul_bf16(), [np.ones((4096, 4096), BF16)] * 2),
        "chain3 f32": (chain, [np.ones(1024, np.float32)] * 2),
    }


def kernels_of(fd: FusionDefinition, inputs: list[np.ndarray]) -> list[KernelSummary]:
    os.environ["FUSER_KERNEL_CACHE"] = "0"  # compiles: the cubins are not what is measured
    try:
        return list(fd.compile(inputs, arch="sm_90").kernels)
    finally:
        os.environ["FUSER_KERNEL_CACHE"] = "1"


def cpu_ms(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best * 1e3


def extra_options(k: KernelSummary) -> list[str]:
    regs = ck.register_cap(k.launch.threads_per_block)
    return [f"--maxrregcount={regs}"] if regs is not None else []


def per_kernel(reps: int) -> None:
    os.environ["FUSER_CACHE_DIR"] = tempfile.mkdtemp()
    os.environ["FUSER_KERNEL_CACHE"] = "1"  # precompiled headers live beside the cache
    ck.nvrtc_compile('extern "C" __global__ void warm() {}', "warm", "sm_90")
    print(f"{'kernel (sm_90)':18s} {'no PCH':>8s} {'PCH':>8s} {'writing it':>11s}   (CPU ms)")
    for title, (fd, inputs) in cases().items():
        ks = kernels_of(fd, inputs)
        if len(ks) != 1:
            chain(ks, reps)
            continue
        (k,) = ks

        def compile_it(k: KernelSummary = k) -> None:
            ck.nvrtc_compile(k.source, k.name, "sm_90", extra_options(k))

        os.environ["FUSER_PCH"] = "0"
        plain = cpu_ms(compile_it, reps)
        os.environ["FUSER_PCH"] = "1"
        p0 = time.process_time()
        spent = sum(cpu_ms(compile_it, 1) for _ in range(2))  # a prefix's PCH is written once
        PCH.wait()  # it recurs
        writing = (time.process_time() - p0) * 1e3 - spent
        with_pch = cpu_ms(compile_it, reps)
        written = f"{writing:11.0f}" if writing > 1 else f"{'none':>11s}"
        print(f"{title:18s} {plain:8.0f} {with_pch:8.0f} {written}")


def chain(ks: list[KernelSummary], reps: int) -> None:
    os.environ["FUSER_KERNEL_CACHE"] = "0"

    def objects() -> list[ck.CompiledKernel]:
        return [
            ck.CompiledKernel(k.source, k.name, arch="sm_90", block_size=k.launch.threads_per_block)
            for k in ks
        ]

    def separate() -> None:
        for k in objects():
            k.compile()

    def joint() -> None:
        ck.compile_together(objects())

    timed = {}
    for name, fn in (("one by one", separate), ("together", joint)):
        w0 = time.perf_counter()
        timed[name] = (cpu_ms(fn, reps), (time.perf_counter() - w0) * 1e3 / reps)
    os.environ["FUSER_KERNEL_CACHE"] = "1"
    print(
        f"three-kernel chain f32: together {timed['together'][0]:.0f} CPU ms "
        f"({timed['together'][1]:.0f} wall), one by one {timed['one by one'][0]:.0f} CPU ms "
        f"({timed['one by one'][1]:.0f} wall)"
    )


def sequence_child() -> None:
    """Five bf16 fusions compiled in a row in this (new) process; prints wall ms."""
    fusions = [
        (gelu_bf16(), [np.ones((1024, 4096), BF16), np.ones(4096, BF16)]),
        (layer_norm("bfloat16")(), [np.ones((16384, 4096), BF16)] + [np.ones(4096, BF16)] * 2),
        (softmax("bfloat16")(), [np.ones((8192, 8192), BF16)]),
        (gelu_bf16(), [np.ones((64, 1000), BF16), np.ones(1000, BF16)]),
        (layer_norm("bfloat16")(), [np.ones((64, 1024), BF16)] + [np.ones(1024, BF16)] * 2),
    ]
    each = []
    for fd, inputs in fusions:
        t0 = time.perf_counter()
        fd.compile(inputs, arch="sm_90")
        each.append((time.perf_counter() - t0) * 1e3)
    print(" ".join(f"{t:.0f}" for t in each))


def sequence(reps: int) -> None:
    for pch in ("1", "0"):
        totals = []
        for _ in range(reps):
            env = {**os.environ, "FUSER_CACHE_DIR": tempfile.mkdtemp(), "FUSER_PCH": pch}
            env["FUSER_KERNEL_CACHE"] = "1"
            out = subprocess.run(
                [sys.executable, __file__, "--sequence-child"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            totals.append([float(t) for t in out.stdout.split()])
        best = min(totals, key=sum)
        print(
            f"sequence of 5 bf16 fusions, PCH {'on' if pch == '1' else 'off'}: "
            f"{sum(best):.0f} ms wall (fastest of {reps}: {', '.join(f'{t:.0f}' for t in best)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sequence-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sequence_child:
        sequence_child()
        return
    per_kernel(args.reps)
    sequence(max(1, args.reps // 2))


if __name__ == "__main__":
    main()
