"""A fusion that needs two kernels: a row softmax numerator, a `segment_set`, then a scale.

    FUSER_DUMP=segments,host_ir python examples/segmented.py

prints the segmented fusion and the host program that launches its kernels. With a GPU it also
runs the fusion and checks it against the reference; without one it compiles for sm_90.
"""

import numpy as np

from fuser import DataType, FusionDefinition
from fuser.runtime.driver import gpu_available

with FusionDefinition("scaled_softmax") as fd:
    x = fd.define_tensor([-1, -1], DataType.Float)
    m = fd.ops.max(x, dims=[1], keepdim=True)
    e = fd.ops.exp(fd.ops.sub(x, fd.ops.broadcast_in_dim(m, x.shape(), [0, 1])))
    fd.add_output(fd.ops.mul(fd.ops.segment_set(e), 2.0))

xs = np.random.default_rng().standard_normal((8, 1000), dtype=np.float32)
if gpu_available():
    (out,) = fd.execute([xs])
    (ref,) = fd.reference([xs], compute_dtype=np.float64)
    print(f"max abs error {np.max(np.abs(out - ref)):.1e}")
else:
    fd.compile([xs], arch="sm_90")
for segment in fd.last_segments():
    print(segment)
