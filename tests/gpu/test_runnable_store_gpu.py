"""The runnable store on the GPU: a signature run in one process is run by the next from the
store, without the builder (no scheduler, segmenter or emitter imported, nothing compiled), with
the results of the first process and of the float64 reference.

Each case runs two child processes over one fresh cache folder: a layer norm in bf16 (one
persistent kernel, numpy inputs of odd sizes) and a three-kernel segmented chain (a program:
its host IR is what the second process runs) on a strided torch input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from fuser import DataType, FusionDefinition
    from fuser.runtime.dtypes import BFLOAT16

    HEAVY = ("fuser.builder", "fuser.transforms", "fuser.codegen")
    case, out_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(7)
    if case == "layer_norm":
        with FusionDefinition("ln") as fd:
            x = fd.define_tensor([-1, -1], DataType.BFloat16)
            w = fd.define_tensor([-1], DataType.BFloat16)
            xf = fd.ops.cast(x, DataType.Float)
            var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
            invstd = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
            shape = x.shape()
            mb = fd.ops.broadcast_in_dim(mean, shape=shape, broadcast_dims=[0])
            ib = fd.ops.broadcast_in_dim(invstd, shape=shape, broadcast_dims=[0])
            wb = fd.ops.broadcast_in_dim(
                fd.ops.cast(w, DataType.Float), shape=shape, broadcast_dims=[1]
            )
            y = fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, mb), ib), wb)
            fd.add_output(fd.ops.cast(y, DataType.BFloat16))
        inputs = [rng.standard_normal((127, 4097)).astype(BFLOAT16),
                  rng.standard_normal(4097).astype(BFLOAT16)]
        outs = fd.execute(inputs)
        loaded = sorted(m for m in sys.modules if m.startswith(HEAVY))
    else:
        import torch
        with FusionDefinition("chain") as fd:
            a = fd.define_tensor([-1], DataType.Float)
            b = fd.define_tensor([-1], DataType.Float)
            s = fd.ops.segment_set(fd.ops.add(a, b))
            t = fd.ops.segment_set(fd.ops.mul(s, a))
            fd.add_output(fd.ops.exp(fd.ops.neg(fd.ops.abs(t))))
        base = torch.from_numpy(rng.standard_normal(2 * 4097).astype(np.float32)).cuda()
        inputs = [base[::2], torch.from_numpy(rng.standard_normal(4097).astype(np.float32)).cuda()]
        outs = [o.cpu().numpy() for o in fd.execute(inputs)]
        loaded = sorted(m for m in sys.modules if m.startswith(HEAVY))
        inputs = [i.cpu().numpy() for i in inputs]
    (ref,) = fd.reference(inputs, compute_dtype=np.float64)
    got = np.asarray(outs[0], dtype=np.float64)
    err = float(np.max(np.abs(got - np.asarray(ref, dtype=np.float64))))
    info = fd.cache_info()
    json.dump({"err": err, "info": info, "loaded": loaded, "out": got.ravel()[:64].tolist()},
              open(out_path, "w"))
    """
)


def _run(case: str, cache: Path, out: Path) -> dict:
    env = {**os.environ, "FUSER_KERNEL_CACHE": "1", "FUSER_CACHE_DIR": str(cache)}
    env.pop("FUSER_RUNNABLE_STORE", None)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("case, kernels, tolerance", [("layer_norm", 1, 0.05), ("chain", 3, 1e-6)])
def test_a_new_process_runs_a_stored_signature_without_the_builder(
    case: str, kernels: int, tolerance: float, tmp_path: Path
) -> None:
    if case == "chain":
        pytest.importorskip("torch")
    first = _run(case, tmp_path / "cache", tmp_path / "first.json")
    assert first["info"]["kernels"] == kernels and first["info"]["stored"] == 0
    assert first["err"] <= tolerance
    assert list((tmp_path / "cache" / "kernels").glob("*.run"))
    second = _run(case, tmp_path / "cache", tmp_path / "second.json")
    assert second["info"]["stored"] == 1 and second["info"]["kernels"] == 0, second["info"]
    assert second["loaded"] == [], second["loaded"]  # no pass, scheduler or emitter imported
    assert second["out"] == first["out"] and second["err"] == first["err"]
