"""One rank of the multi-GPU test (`test_multidevice_gpu.py` starts it with `fuser-launch -n 2`).

`check` mode: each sharded fusion of `tests/multidevice_definitions.py` (and a few more, for each
resharding) runs on this rank's pieces of fresh random inputs (the same on every rank: one seed)
and its outputs are compared with this rank's pieces of (a) the same fusion without placements run
by fuser on one GPU and (b) the numpy reference in float64. Odd extents, extent 0, f32/bf16/f16,
a non-contiguous piece. Prints `rank r: N checks passed` and exits 0, or raises.

`fail` mode: rank 1 raises before its first collective, rank 0 enters an allreduce; the launcher
must stop rank 0 and name rank 1. `stall` mode: rank 1 never arrives at the allreduce; rank 0's
collective must time out (FUSER_COMM_TIMEOUT) with a CommunicationError.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multidevice_definitions import (
    broadcast_from_one,
    layer_norm,
    pipeline,
    pointwise,
    reduce_scatter_sum,
    rms_norm,
    tp_mlp,
)

from fuser import DataType, FusionDefinition
from fuser.multidevice import Communicator, DeviceMesh, shard_tensor

TORCH = {
    DataType.Float: torch.float32,
    DataType.BFloat16: torch.bfloat16,
    DataType.Half: torch.float16,
}


def _inputs(shapes: list[tuple[int, ...]], dtype: Any, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(s, generator=g) + 0.25).to(dtype) for s in shapes]


def _piece(t: torch.Tensor, s: Any, rank: int) -> torch.Tensor:
    if s is None or s.split_axis is None or rank not in s.devices:
        return t.cuda()
    return shard_tensor(t, s.split_axis, DeviceMesh(s.devices), rank)


class Checker:
    def __init__(self) -> None:
        self.comm = Communicator.instance()
        self.rank = self.comm.rank()
        self.count = 0

    def run(
        self,
        name: str,
        sharded: FusionDefinition,
        single: FusionDefinition | None,
        inputs: list[torch.Tensor],
        tol: float,
        non_contiguous: bool = False,
    ) -> None:
        from fuser.transforms.shard import plan_sharding

        plan = plan_sharding(sharded.fusion)
        pieces = [
            _piece(x, plan.placed.get(a), self.rank)
            for a, x in zip(sharded.fusion.inputs, inputs, strict=True)
        ]
        if non_contiguous:  # the same values through a transposed layout
            pieces[0] = pieces[0].t().contiguous().t()
            assert not pieces[0].is_contiguous() or min(pieces[0].shape) <= 1
        for _ in range(2):  # the first call compiles, the second runs cached
            outs = sharded.execute(pieces)
        torch.cuda.synchronize()
        expected = sharded.reference([_np(x) for x in inputs], compute_dtype=np.float64)
        singles = single.execute([x.cuda() for x in inputs]) if single is not None else None
        for i, (got, v) in enumerate(zip(outs, sharded.fusion.output_op.values, strict=True)):
            s = plan.placed[v]
            if self.rank not in s.devices:
                assert got.numel() == 0, f"{name} output #{i}: rank {self.rank} expected empty"
                continue
            want = torch.from_numpy(np.asarray(expected[i], dtype=np.float64))
            if s.split_axis is not None:
                want = shard_tensor(want, s.split_axis, DeviceMesh(s.devices), self.rank)
            # errors scale with the values: a row-parallel matmul's partial sums are rounded to
            # the output type before the allreduce adds them (as Megatron's are)
            scale = max(1.0, float(want.abs().max())) if want.numel() else 1.0
            torch.testing.assert_close(
                got.double().cpu(),
                want.double().cpu(),
                rtol=tol,
                atol=tol * scale,
                msg=lambda m, i=i: f"{name} #{i} vs the reference: {m}",
            )
            if singles is not None:
                one = singles[i]
                if s.split_axis is not None:
                    one = shard_tensor(one.cpu(), s.split_axis, DeviceMesh(s.devices), self.rank)
                torch.testing.assert_close(
                    got.double().cpu(),
                    one.double().cpu(),
                    rtol=tol,
                    atol=tol * scale,
                    msg=lambda m, i=i: f"{name} #{i} vs one GPU: {m}",
                )
            self.count += 1


def _np(x: torch.Tensor) -> Any:
    from fuser.runtime.dtypes import BFLOAT16

    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).numpy().view(BFLOAT16)
    return x.numpy()


def check() -> None:
    c = Checker()
    size = c.comm.size()
    seed = 1234
    for dtype, tol in ((DataType.Float, 1e-4), (DataType.BFloat16, 2e-2), (DataType.Half, 1e-2)):
        for rows in (0, 1, 127, 4097):
            hidden = 64 * size
            shapes = [(rows, hidden), (hidden,)]
            c.run(
                f"rms_norm {dtype.name} rows={rows}",
                rms_norm(size, hidden, dtype),
                rms_norm(size, hidden, dtype, sharded=False),
                _inputs(shapes, TORCH[dtype], seed := seed + 1),
                tol,
            )
        for split_weight in (True, False):
            hidden = 48 * size
            shapes = [(127, hidden), (hidden,), (hidden,)]
            c.run(
                f"layer_norm {dtype.name} split_weight={split_weight}",
                layer_norm(size, hidden, split_weight, dtype=dtype),
                layer_norm(size, hidden, split_weight, sharded=False, dtype=dtype),
                _inputs(shapes, TORCH[dtype], seed := seed + 1),
                tol,
            )
    for dtype, tol in ((DataType.Float, 1e-3), (DataType.BFloat16, 3e-2)):
        k, n = 64, 128 * size
        c.run(
            f"tp_mlp {dtype.name}",
            tp_mlp(size, k, n, dtype),
            tp_mlp(size, k, n, dtype, sharded=False),
            _inputs([(300, k), (n, k), (k, n)], TORCH[dtype], seed := seed + 1),
            tol,
        )
    for gather in (False, True):
        c.run(
            f"pointwise gather={gather}",
            pointwise(size, gather),
            pointwise(size, gather, sharded=False),
            _inputs([(size * 33, 17)], torch.float32, seed := seed + 1),
            1e-6,
            non_contiguous=True,
        )
    c.run(
        "reduce_scatter",
        reduce_scatter_sum(size),
        None,
        _inputs([(8 * size, 6 * size)], torch.float32, seed := seed + 1),
        1e-5,
    )
    c.run(
        "broadcast",
        broadcast_from_one(size),
        None,
        _inputs([(5, 7)], torch.float32, seed := seed + 1),
        1e-6,
    )
    c.run("send/recv", pipeline(), None, _inputs([(64, 32)], torch.float32, seed := seed + 1), 1e-6)
    torch.cuda.synchronize()
    print(f"rank {c.rank}: {c.count} checks passed", flush=True)


def fail(stall: bool) -> None:
    c = Checker()
    fd = rms_norm(c.comm.size(), 64 * c.comm.size())
    if c.rank == 1:
        if stall:
            time.sleep(120)
        raise ValueError("rank 1 fails on purpose before its first collective")
    x, w = _inputs([(8, 64 * c.comm.size()), (64 * c.comm.size(),)], torch.float32, 1)
    plan_inputs = [
        shard_tensor(x, 1, DeviceMesh(range(c.comm.size()))),
        shard_tensor(w, 0, DeviceMesh(range(c.comm.size()))),
    ]
    fd.execute(plan_inputs)
    torch.cuda.synchronize()
    print("rank 0 finished an allreduce that rank 1 never joined", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    assert os.environ.get("NCCL_NVLS_ENABLE") == "0", "fuser-launch must turn NVLink multicast off"
    if mode == "check":
        check()
    else:
        fail(stall=mode == "stall")
