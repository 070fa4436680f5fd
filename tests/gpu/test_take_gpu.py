"""`embedding_fwd`, `index_select` and `select` on the GPU, against the float64 reference and
torch.

A take fuses into the pointwise kernel, which loads its input at the index it computed, clamped
into the dim (`iteration_space.Indexed`); compute-sanitizer runs these tests in the session that
changes them, with indices negative and past both ends. Covered:
- embeddings in f32, f16 and bf16 over 0, 1, 3, 127 and 4097 tokens, rows of 1, 3, 64 and 4097
  elements (vectors of 8, 4, 2 and 1), a strided (column-sliced) and a transposed weight, Int32
  ids; against `F.embedding` where the ids are in range;
- `max_norm` against torch's renormalization (p = 2 and 1), and nanoGPT's token plus position
  embedding (an iota's rows) in one kernel;
- `index_select` along every dim of a broadcast input, and along the innermost dim;
- takes through computations: a computed table and index, a take at a taken index, padded; a
  `select` at a run-time position.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from definitions import embedding, taken_through_computations
from gpu_helpers import DTYPES, check_against_reference, numpy_of, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition

pytestmark = pytest.mark.gpu

TOKENS = [0, 1, 3, 127, 4097]


@pytest.mark.parametrize("row", [64, 3, 1, 4097])
@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_embedding_rows(
    rng: np.random.Generator, torch: Any, dtype: DataType, tokens: int, row: int
) -> None:
    fd = embedding(dtype, ids_rank=2)
    w = random_of(rng, (50257 if row < 4097 else 33, row), dtype)
    ids = rng.integers(-w.shape[0] - 5, w.shape[0] + 5, (tokens, 2))  # some clamped
    views = [torch_of(torch, ids), torch_of(torch, w)]
    check_against_reference(fd, torch, views, [ids, w])
    assert schedulers(fd, views) == ["pointwise"]
    in_range = ids % w.shape[0]
    (got,) = fd.execute([torch_of(torch, in_range), views[1]])
    expected = torch.nn.functional.embedding(torch_of(torch, in_range), views[1])
    assert torch.equal(got, expected)


@pytest.mark.parametrize("layout", ["sliced", "transposed"])
def test_a_strided_weight_and_int32_ids(rng: np.random.Generator, torch: Any, layout: str) -> None:
    with FusionDefinition(f"embedding_{layout}") as fd:
        ids = fd.define_tensor([-1], DataType.Int32)
        w = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.embedding_fwd(ids, w))
    base = random_of(rng, (1000, 130), DataType.BFloat16)
    if layout == "sliced":
        w_host, w_view = base[:, 1:129], torch_of(torch, base)[:, 1:129]
    else:
        w_host, w_view = base.T, torch_of(torch, base).t()
    ids = rng.integers(0, w_host.shape[0], (300,)).astype(np.int32)
    check_against_reference(fd, torch, [torch_of(torch, ids), w_view], [ids, w_host])


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=lambda d: d.name)
def test_max_norm_as_torch_renormalizes(
    rng: np.random.Generator, torch: Any, dtype: DataType, norm_type: float
) -> None:
    fd = embedding(dtype, ids_rank=2, max_norm=4.0, norm_type=norm_type)
    w = random_of(rng, (999, 24), dtype) * rng.uniform(0.1, 1.0, (999, 1)).astype(np.float32)
    w = w.astype(random_of(rng, (1,), dtype).dtype)
    ids = rng.integers(0, 999, (7, 33))
    views = [torch_of(torch, ids), torch_of(torch, w)]
    check_against_reference(fd, torch, views, [ids, w])
    (got,) = fd.execute(views)
    # torch on the CPU (under compute-sanitizer's racecheck its CUDA renormalization differs),
    # on a copy: torch renormalizes its weight in place
    weight = views[1].cpu().clone()
    expected = torch.nn.functional.embedding(
        views[0].cpu(), weight, max_norm=4.0, norm_type=norm_type
    )
    tol = 1e-5 if dtype == DataType.Float else 1e-2
    torch.testing.assert_close(got.cpu(), expected, rtol=tol, atol=tol)


def test_token_and_position_embeddings_in_one_kernel(rng: np.random.Generator, torch: Any) -> None:
    """nanoGPT's `wte(idx) + wpe(arange(t))`, as Thunder's region has it (bf16)."""
    with FusionDefinition("wte_wpe") as fd:
        idx = fd.define_tensor([-1, -1], DataType.Int)
        wte = fd.define_tensor([-1, -1], DataType.BFloat16)
        wpe = fd.define_tensor([-1, -1], DataType.BFloat16)
        pos = fd.ops.iota(idx.size(1), 0, 1, DataType.Int)
        tok = fd.ops.cast(fd.ops.embedding_fwd(idx, wte), DataType.Float)
        at = fd.ops.cast(fd.ops.embedding_fwd(pos, wpe), DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.add(tok, at), DataType.BFloat16))
    ids = rng.integers(0, 50257, (4, 1024))
    a = random_of(rng, (50257, 768), DataType.BFloat16)
    b = random_of(rng, (1024, 768), DataType.BFloat16)
    views = [torch_of(torch, ids), torch_of(torch, a), torch_of(torch, b)]
    check_against_reference(fd, torch, views, [ids, a, b])
    assert schedulers(fd, views) == ["pointwise"]


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_index_select_along_each_dim_of_a_broadcast_input(
    rng: np.random.Generator, torch: Any, dtype: DataType, dim: int
) -> None:
    with FusionDefinition(f"index_select_{dim}_{dtype.name}") as fd:
        x = fd.define_tensor([-1, -1, -1], dtype)
        i = fd.define_tensor([-1], DataType.Int)
        fd.add_output(fd.ops.index_select(x, i, dim))
    base = random_of(rng, (33, 1, 129), dtype)
    host = np.broadcast_to(base, (33, 7, 129))
    view = torch_of(torch, base).expand(33, 7, 129)  # stride 0 along dim 1
    index = rng.integers(-40, 140, (127,))
    check_against_reference(fd, torch, [view, torch_of(torch, index)], [host, index])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_takes_through_computations(rng: np.random.Generator, torch: Any, dtype: DataType) -> None:
    fd = taken_through_computations(dtype)
    w = random_of(rng, (4097, 16), dtype)
    i = rng.integers(-4200, 4200, (127,)).astype(np.int32)
    j = rng.integers(-130, 130, (127,))
    for position in (5, -1, 5000, -5000):
        views = [torch_of(torch, w), torch_of(torch, i), torch_of(torch, j), position]
        check_against_reference(fd, torch, views, [w, i, j, position])
    (_, row) = fd.execute(views)
    np.testing.assert_array_equal(numpy_of(torch, row), w[0])  # -5000: clamped to 0
