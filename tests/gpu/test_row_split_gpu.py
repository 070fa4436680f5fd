"""Sums of a few long rows on the GPU, against the float64 reference: `split-reductions` cuts
each row into runs (`partial_sum` over the last dim), one block per run (the reduction
scheduler's row split), and a second kernel sums the runs.

Covered: f32, f16 and bf16; 1-D vectors and 1, 3, 16 and 127 rows (0 rows: not split); rows
of odd length (scalar loads); runs that are not whole vectors, an empty last run, no rows or no
columns (`partial_sum` from IR); a row-sliced input (row stride wider than the row: still
split) and a transposed one (rows not the fastest dim: one kernel); a full-shape output beside
the sum (each element computed in the run that reads it); keepdim.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from definitions import row_sum
from gpu_helpers import assert_close, numpy_of, parse_fusion, schedulers

from fuser import DataType
from fuser.compiler import compiler_for
from fuser.runtime.dtypes import numpy_dtype, round_to_float
from fuser.runtime.reference import evaluate

pytestmark = pytest.mark.gpu

SPLIT = ["reduction", "reduction"]


def _tolerance(n: int) -> tuple[float, float]:
    return (2e-5, 1e-5 + 2e-5 * math.sqrt(n + 1))


@pytest.mark.parametrize(
    "shape",
    [(4194304,), (1, 1048576), (3, 1000003), (16, 4194304), (127, 131072), (0, 1048576)],
    ids=lambda s: "x".join(map(str, s)),
)
@pytest.mark.parametrize(
    "dtype", [DataType.Float, DataType.Half, DataType.BFloat16], ids=lambda d: d.name
)
def test_few_long_rows(rng: np.random.Generator, shape: tuple[int, ...], dtype: DataType) -> None:
    fd = row_sum(dtype, len(shape))
    x = round_to_float(rng.standard_normal(shape) + 0.5, numpy_dtype(dtype.element_type))
    (out,) = fd.execute([x])
    (ref,) = fd.reference([x], compute_dtype=np.float64)
    assert_close(out, ref, f"row sums {shape}", _tolerance(shape[-1]))
    assert schedulers(fd, [x]) == (SPLIT if math.prod(shape[:-1]) else ["reduction"])


@pytest.mark.parametrize(
    "shape", [(5, 65540), (2, 8), (3, 2), (0, 8), (4, 0)], ids=lambda s: f"{s[0]}x{s[1]}"
)
def test_partial_sums_of_runs(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    """`partial_sum` over the last dim into 3 runs, from IR: runs of 21847 (odd: one element
    at a time), of 3 in a row of 8 (vectors of 4 would straddle them), of 1 with an empty last
    run, and no rows or no columns. Each run's sum lands at [row, run]."""
    fusion = parse_fusion(
        """
fusion.fusion @runs(%x: tensor<?x?xf32>) -> (tensor<?x3xf32>) {
  %p = fusion.partial_sum %x [1] splits(3) : tensor<?x?xf32> -> tensor<?x3xf32>
  fusion.output %p : tensor<?x3xf32>
}
"""
    )
    x = rng.standard_normal(shape).astype(np.float32) + 0.5
    compiler = compiler_for(fusion)
    (out,) = compiler.execute([x])
    (ref,) = evaluate(fusion, [x], compute_dtype=np.float64)
    assert_close(out, ref, "partial sums", _tolerance(shape[1]))
    assert [k.scheduler for k in compiler.compile([x]).kernels] == ["reduction"]


def test_views(rng: np.random.Generator, torch: Any) -> None:
    """A row-sliced input (row stride 1048584) is split; a transposed one ([8, 1048576] with
    strides (1, 8): rows not its fastest dim) is not, though its 8 rows are as few, and both
    are right."""
    fd = row_sum(DataType.Float)
    base = torch.from_numpy(rng.standard_normal((8, 1048584)).astype(np.float32) + 0.5).cuda()
    sliced = base[:, :1048576]
    (out,) = fd.execute([sliced])
    ref = sliced.cpu().double().sum(1).numpy()  # (on the host: torch's GPU sum trips racecheck)
    assert_close(numpy_of(torch, out), ref, "sliced rows", _tolerance(1048576))
    assert schedulers(fd, [sliced]) == SPLIT
    transposed = base[:, :1048576].t().contiguous().t()  # [8, 1048576], strides (1, 8)
    assert transposed.stride() == (1, 8)
    (out,) = fd.execute([transposed])
    ref = transposed.cpu().double().sum(1).numpy()
    assert_close(numpy_of(torch, out), ref, "transposed rows", _tolerance(1048576))
    assert schedulers(fd, [transposed]) == ["reduction"]


def test_a_full_output_beside_the_sum_and_keepdim(rng: np.random.Generator) -> None:
    fd = row_sum(DataType.BFloat16, keepdim=True, squared=True)
    x = round_to_float(
        rng.standard_normal((4, 524288)) + 0.5, numpy_dtype(DataType.BFloat16.element_type)
    )
    out, squared = fd.execute([x])
    ref, ref_squared = fd.reference([x], compute_dtype=np.float64)
    assert out.shape == (4, 1)
    assert_close(out, ref, "row sums", _tolerance(x.shape[1]))
    assert_close(squared, ref_squared, "x * x")
    assert schedulers(fd, [x]) == SPLIT
