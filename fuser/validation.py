"""Comparing a fusion's outputs with its reference: the tolerances by dtype that `fuser-run`
and `fd.validate` share, the comparison, and host copies of the arrays a call returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fuser.runtime.dtypes import BFLOAT16

TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (2e-3, 1e-3),
    BFLOAT16: (1.6e-2, 1e-2),
    np.dtype(np.float32): (2e-5, 2e-5),
    np.dtype(np.float64): (1e-9, 1e-12),
}
"""(rtol, atol) of a GPU output against the float64 reference, by output dtype."""


def compare(
    actual: np.ndarray,
    expected: np.ndarray,
    what: str,
    rtol: float | None = None,
    atol: float | None = None,
) -> str | None:
    """None when `actual` matches the reference `expected` within `rtol` and `atol` (each by
    default the one `TOLERANCES` gives its dtype), else a one-line description of the
    mismatch. NaNs must sit in the same places; integers and bools must be equal."""
    if actual.shape != expected.shape:
        return f"{what}: shape {actual.shape}, the reference has shape {expected.shape}"
    if actual.dtype.kind in "biu":
        bad = actual != expected.astype(actual.dtype)
        rtol = atol = 0.0
    else:
        default_rtol, default_atol = TOLERANCES.get(actual.dtype, (2e-5, 2e-5))
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        bad = ~close
    n_bad = int(np.count_nonzero(bad))
    if n_bad == 0:
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return (
        f"{what}: {n_bad} of {actual.size} elements differ from the reference (rtol={rtol}, "
        f"atol={atol}); first at {index}: got {actual[index]!r}, expected {expected[index]!r}"
    )


def host_array(x: Any) -> Any:
    """A numpy copy of an array a call takes or returns (numpy, torch, cupy, DeviceArray; bf16
    included); a Python or numpy number is returned as it is."""
    if isinstance(x, np.ndarray | np.generic | bool | int | float):
        return x
    if type(x).__module__.startswith("torch"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            import torch  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

            return t.contiguous().view(torch.int16).numpy().view(BFLOAT16)
        return t.numpy()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    numpy = getattr(x, "numpy", None)  # fuser.DeviceArray
    if callable(numpy):
        return numpy()
    return np.asarray(x)


def host_arrays(xs: Sequence[Any]) -> list[Any]:
    return [host_array(x) for x in xs]
