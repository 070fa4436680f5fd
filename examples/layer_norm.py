"""Layer norm through the Python API: the fusion of examples/layer_norm.mlir, checked with numpy.

Run it: python examples/layer_norm.py
It prints the fusion IR, evaluates it with fuser's numpy reference on fresh random bf16 inputs,
compares against a float64 numpy layer norm and exits non-zero when the results disagree.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from fuser import DataType, FusionDefinition

EPS = 1e-5


def define_layer_norm() -> FusionDefinition:
    """y = (x - mean) * invstd * w + b over the last dim of a bf16 [N, D] tensor."""
    with FusionDefinition("layer_norm") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        xf = fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
        invstd = fd.ops.rsqrt(var + EPS)
        mean_b = fd.ops.broadcast_in_dim(mean, shape=x.shape(), broadcast_dims=[0])
        invstd_b = fd.ops.broadcast_in_dim(invstd, shape=x.shape(), broadcast_dims=[0])
        normed = (xf - mean_b) * invstd_b
        wf = fd.ops.cast(w, DataType.Float)
        bf = fd.ops.cast(b, DataType.Float)
        w_b = fd.ops.broadcast_in_dim(wf, shape=x.shape(), broadcast_dims=[1])
        b_b = fd.ops.broadcast_in_dim(bf, shape=x.shape(), broadcast_dims=[1])
        y = fd.ops.cast(normed * w_b + b_b, DataType.BFloat16)
        fd.add_output(y)
        fd.add_output(mean)
        fd.add_output(invstd)
    return fd


def numpy_layer_norm(
    x: np.ndarray, w: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same layer norm in float64."""
    x, w, b = (a.astype(np.float64) for a in (x, w, b))
    mean = x.mean(axis=1)
    var = ((x - mean[:, None]) ** 2).mean(axis=1)
    invstd = 1.0 / np.sqrt(var + EPS)
    return (x - mean[:, None]) * invstd[:, None] * w + b, mean, invstd


def main() -> int:
    fd = define_layer_norm()
    print(fd.fusion_ir())

    seed = np.random.SeedSequence().entropy
    rng = np.random.default_rng(seed)
    n, d = 127, 1000
    x = (rng.standard_normal((n, d)) * 2.0 + 0.5).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal(d).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(d).astype(ml_dtypes.bfloat16)

    y, mean, invstd = fd.reference([x, w, b])
    y_ref, mean_ref, invstd_ref = numpy_layer_norm(x, w, b)

    # y is rounded once to bf16 (8 significant bits): allow one bf16 ulp relative, plus a
    # small absolute term for values near zero. mean and invstd are f32.
    checks = [
        ("y", y.astype(np.float64), y_ref, 2.0**-7, 1e-3),
        ("mean", mean.astype(np.float64), mean_ref, 1e-5, 1e-6),
        ("invstd", invstd.astype(np.float64), invstd_ref, 1e-5, 1e-6),
    ]
    failed = False
    errors = []
    for name, got, want, rtol, atol in checks:
        if got.shape != want.shape:
            print(f"FAIL: {name} has shape {got.shape}, expected {want.shape}")
            failed = True
            continue
        err = np.abs(got - want)
        errors.append(f"{name} {err.max():.3g}")
        if not np.all(err <= atol + rtol * np.abs(want)):
            worst = np.unravel_index(np.argmax(err - rtol * np.abs(want)), err.shape)
            print(
                f"FAIL: {name}[{', '.join(map(str, worst))}] = {got[worst]}, expected "
                f"{want[worst]} (rtol {rtol}, atol {atol}; seed {seed})"
            )
            failed = True
    if failed:
        return 1
    print(
        f"PASS: layer_norm {n}x{d} bf16 matches float64 numpy; max abs error: {', '.join(errors)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
