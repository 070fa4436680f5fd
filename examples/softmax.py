"""Softmax over the last dim with FusionDefinition, run on the GPU.

    python examples/softmax.py

Builds the fusion, runs it with `fd.execute` on a numpy input (copied to the GPU and back),
checks it against the numpy reference interpreter in float64 and prints the kernel that ran.
Without a GPU it compiles the kernel for sm_90 and says so.
"""

import sys

import numpy as np

from fuser import DataType, FusionDefinition
from fuser.runtime.driver import gpu_available

with FusionDefinition("softmax") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    m = fd.ops.broadcast_in_dim(fd.ops.max(x, dims=[1]), shape=x.shape(), broadcast_dims=[0])
    e = fd.ops.exp(x - m)
    s = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), shape=x.shape(), broadcast_dims=[0])
    fd.add_output(e / s)

xs = np.random.default_rng().standard_normal((1000, 4097), dtype=np.float32)
if not gpu_available():
    print(fd.compile([xs], arch="sm_90").summary())
    print("no GPU found: compiled the kernel for sm_90; nothing was run")
    sys.exit(0)

(out,) = fd.execute([xs])
(ref,) = fd.reference([xs], compute_dtype=np.float64)
err = float(np.max(np.abs(out - ref)))
print(
    f"softmax of a {xs.shape[0]}x{xs.shape[1]} f32 tensor: rows sum to "
    f"{out.sum(axis=1).min():.6f}..{out.sum(axis=1).max():.6f}, max abs error {err:.1e}"
)
print(fd.compile([xs]).summary())
sys.exit(0 if err < 1e-6 else 1)
