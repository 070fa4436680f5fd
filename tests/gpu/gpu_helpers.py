"""Helpers the GPU tests share: moving arrays between numpy and torch (bf16 included), comparing
GPU outputs with the float64 reference, and parsing a fusion.

(pytest puts this folder on `sys.path`, so the test files here import it as `gpu_helpers`; it
puts tests/ there too, for tests/conftest.py, so this imports tests/ir_helpers.py's `context`.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from ir_helpers import context
from xdsl.parser import Parser

from fuser import DataType
from fuser.dialects import fusion as fu
from fuser.runtime.dtypes import BFLOAT16, numpy_dtype, round_to_float
from fuser.validation import host_array

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)

DTYPES = [DataType.Float, DataType.Half, DataType.BFloat16]
"""The float types a GPU test of an op runs in: f32 and the two storage types."""

TOL: dict[np.dtype, tuple[float, float]] = {
    F64: (1e-12, 1e-12),
    F32: (1e-5, 1e-6),
    F16: (1e-3, 1e-5),
    BFLOAT16: (1e-2, 1e-4),
}
"""(rtol, atol) of a GPU output against the float64 reference, by output dtype: a few ulps of
f32 for arithmetic; one ulp of f16/bf16 (a result computed in f32 may round to the neighbour)."""


def schedulers(fd: Any, inputs: Sequence[Any]) -> list[str]:
    """The scheduler of each kernel `fd` (a FusionDefinition) compiles to for `inputs`."""
    return [k.scheduler for k in fd.compile(list(inputs)).kernels]


def torch_of(torch: Any, a: np.ndarray) -> Any:
    """A CUDA torch tensor with the values of a numpy array (bf16 included)."""
    if a.dtype == BFLOAT16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def numpy_of(torch: Any, t: Any) -> np.ndarray:
    """A numpy array with the values of a torch tensor (bf16 included; `host_array`)."""
    return host_array(t)


def assert_close(
    actual: np.ndarray, expected: np.ndarray, what: str, tol: tuple[float, float] | None = None
) -> None:
    """`actual` (a GPU output) equals `expected` within `tol` (default: `TOL` of its dtype); NaN
    where the expected value is NaN; integers and bools exactly. `what` names it in messages."""
    assert isinstance(actual, np.ndarray), f"{what}: got {type(actual).__name__}, not an array"
    assert actual.shape == expected.shape, (
        f"{what}: shape {actual.shape}, the reference has {expected.shape}"
    )
    if actual.dtype.kind in "biu":
        bad = actual != expected.astype(actual.dtype)
        rtol = atol = 0.0
    else:
        rtol, atol = tol or TOL[actual.dtype]
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    n_bad = int(np.count_nonzero(bad))
    if n_bad:
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {n_bad} of {actual.size} elements differ (rtol={rtol:.3g}, "
            f"atol={atol:.3g}); first at {i}: got {actual[i]!r}, expected {expected[i]!r}"
        )


def assert_outputs_close(
    outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], n: int
) -> None:
    """Each output within its dtype's rounding of the reference (bf16: rtol 1.6e-2, atol 1e-2;
    others: rtol 1e-4, atol 1e-5), plus the accumulation error of a sum over up to `n` values
    (absolute, scaled by the output's magnitude); NaN where the reference has NaN."""
    assert len(outputs) == len(expected)
    for i, (out, ref) in enumerate(zip(outputs, expected, strict=True)):
        assert out.shape == ref.shape, f"output #{i}: shape {out.shape}, expected {ref.shape}"
        rtol, atol = (1.6e-2, 1e-2) if out.dtype == BFLOAT16 else (1e-4, 1e-5)
        scale = float(np.max(np.abs(ref.astype(np.float64)))) if ref.size else 1.0
        atol += 2e-6 * math.sqrt(n) * scale
        a, e = out.astype(np.float64), ref.astype(np.float64)
        bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if bad.any():
            j = tuple(int(k) for k in np.argwhere(bad)[0])
            raise AssertionError(
                f"output #{i}: {int(bad.sum())} of {out.size} elements differ (rtol={rtol}, "
                f"atol={atol:.3g}); first at {j}: got {out[j]!r}, expected {ref[j]!r}"
            )


def random_of(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Values around 0.5 (never all zeros) of a fuser DataType's dtype, rounded to it."""
    return round_to_float(rng.standard_normal(shape) + 0.5, numpy_dtype(dtype.element_type))


def check_against_reference(fd: Any, torch: Any, views: list[Any], hosts: list[np.ndarray]) -> None:
    """Every output of `fd` (a FusionDefinition) on the GPU views equals the float64 reference
    on the hosts, within the output dtype's `TOL` (integers and bools exactly)."""
    outs = fd.execute(views)
    refs = fd.reference(hosts, compute_dtype=np.float64)
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        got = numpy_of(torch, out)
        assert got.shape == ref.shape, f"{fd.name} output {i}: {got.shape} vs {ref.shape}"
        assert_close(got, ref, f"{fd.name} output {i}")


def parse_fusion(text: str) -> fu.FusionOp:
    """The first `fusion.fusion` of `text`, parsed (see `context`) and verified."""
    module = Parser(context(), text).parse_module()
    module.verify()
    return next(op for op in module.walk() if isinstance(op, fu.FusionOp))
