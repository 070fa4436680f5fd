"""Matmuls on the GPU against the float64 reference: the matmul scheduler's kernels (tensor cores
for f16/bf16: Hopper's wgmma tiles, and mma.sync's as on earlier GPUs; SIMT for f32) on square,
skinny and odd shapes (M, N, K from {1, 17, 128, 1000, 4096}, K up to 65536), both operand
layouts (K- or MN-contiguous, through strides), misaligned operands, fused epilogues (bias +
gelu/relu + cast), batched matmuls and split-K partials, and `fd.execute` end to end (where
split-K may cut a matmul in two kernels).

Tolerances: the error of a product of bf16/f16 operands accumulated in f32 grows with
`sqrt(K) * max|a| * max|b|` (`scale`); each output may also be off by one rounding of its type,
relative to the larger of the output and the plain product, and behind an epilogue by one more
of the matmul's own half-precision result (rounded from f32 here, from float64 by the
reference: near a tie the two round apart, as seen on an H100 for 13 of 16M outputs). A wrong
index or a lost k tile moves an element by at least `max|a| * max|b| ~ scale / sqrt(K)`, far
beyond `1e-4 * scale`.

Outputs land in memory that held NaN just before (torch's allocator hands the freed block back),
so an element the kernel does not write fails. Kernels are shared across shapes through one
compiler per fusion, as a user's would be, which keeps NVRTC time down.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fuser import DataType, FusionDefinition
from fuser.compiler import FusionCompiler
from fuser.dialects.fusion import FusionOp
from fuser.runtime.arrays import BFLOAT16
from fuser.runtime.dtypes import round_to_float

pytestmark = pytest.mark.gpu

DTYPES = {
    DataType.BFloat16: BFLOAT16,
    DataType.Half: np.dtype(np.float16),
    DataType.Float: np.dtype(np.float32),
}
ROUNDING = {BFLOAT16: 2.0**-7, np.dtype(np.float16): 2.0**-10, np.dtype(np.float32): 2.0**-21}
"""Output rounding (one ulp, relative), a little generous."""

_COMPILERS: dict[Any, FusionCompiler] = {}


def compiler(key: Any, define: Callable[[], FusionOp], split_k: int | None = 1) -> FusionCompiler:
    """One compiler per fusion for the whole module (kernels are reused across tests)."""
    if key not in _COMPILERS:
        _COMPILERS[key] = FusionCompiler(define(), split_k=split_k)
    return _COMPILERS[key]


# --------------------------------------------------------------------------------------------
# Fusions


def plain(dtype: DataType, rank: int = 2) -> FusionOp:
    with FusionDefinition("mm") as fd:
        a = fd.define_tensor([-1] * rank, dtype)
        b = fd.define_tensor([-1] * rank, dtype)
        fd.add_output(fd.ops.matmul(a, b))
    return fd.fusion


def linear(dtype: DataType, act: str, out: DataType, rank: int = 2) -> FusionOp:
    """`act(a @ b + bias)` computed in f32, stored as `out`."""
    with FusionDefinition("linear") as fd:
        a = fd.define_tensor([-1] * rank, dtype)
        b = fd.define_tensor([-1] * rank, dtype)
        bias = fd.define_tensor([-1], dtype)
        c = fd.ops.matmul(a, b)
        cf = c if dtype == DataType.Float else fd.ops.cast(c, DataType.Float)
        bf = bias if dtype == DataType.Float else fd.ops.cast(bias, DataType.Float)
        s = fd.ops.add(cf, fd.ops.broadcast_in_dim(bf, c.shape(), [rank - 1]))
        y = fd.ops.gelu(s, approximate="tanh") if act == "gelu" else fd.ops.relu(s)
        fd.add_output(y if out == DataType.Float else fd.ops.cast(y, out))
    return fd.fusion


def partial(el: str, splits: int) -> FusionOp:
    """A split-K partial `[s, M, N]` in f32 (written by `split-k`; parsed here)."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser

    from fuser.dialects.fusion import Fusion

    t = f"tensor<?x?x{el}>"
    text = f"""
fusion.fusion @part(%a: {t}, %b: {t}) -> (tensor<{splits}x?x?xf32>) {{
  %p = fusion.matmul %a, %b splits({splits}) : {t}, {t} -> tensor<{splits}x?x?xf32>
  fusion.output %p : tensor<{splits}x?x?xf32>
}}"""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Fusion)
    return next(op for op in Parser(ctx, text).parse_module().ops if isinstance(op, FusionOp))


# --------------------------------------------------------------------------------------------
# Data and checks


def host_random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return round_to_float(rng.standard_normal(shape), dtype)


def to_torch(torch: Any, a: np.ndarray, contiguous_dims: str = "k", operand: str = "a") -> Any:
    """A CUDA tensor with `a`'s values whose last two dims are stored with `contiguous_dims`
    fastest: "k" (A row-major, B transposed) or "mn" (A transposed, B row-major)."""
    transpose = (contiguous_dims == "mn") == (operand == "a")
    stored = np.ascontiguousarray(np.swapaxes(a, -1, -2) if transpose else a)
    if stored.dtype == BFLOAT16:
        t = torch.from_numpy(stored.view(np.int16)).view(torch.bfloat16).cuda()
    else:
        t = torch.from_numpy(stored).cuda()
    return t.transpose(-1, -2) if transpose else t


def to_numpy(torch: Any, t: Any) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).cpu().numpy().view(BFLOAT16)
    return t.cpu().numpy()


def poison(torch: Any, shapes: list[tuple[int, ...]], dtype: Any) -> None:
    """Fill the memory the next allocations of these sizes get with NaN."""
    blocks = [torch.full(s, float("nan"), dtype=dtype, device="cuda") for s in shapes]
    torch.cuda.synchronize()
    del blocks


def run(torch: Any, comp: FusionCompiler, inputs: list[Any], out_dtype: Any) -> list[np.ndarray]:
    shapes = [tuple(s) for s in comp.output_shapes(comp.info_for(inputs))]
    poison(torch, shapes, out_dtype)
    outs = comp.execute(inputs)
    torch.cuda.synchronize()
    return [to_numpy(torch, o) for o in outs]


def check(
    out: np.ndarray,
    ref: np.ndarray,
    product: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    epilogue: bool = False,
) -> None:
    """`out` within the tolerance of the module docstring of `ref`; `product` is a @ b in float64.
    With `epilogue`, the matmul's own result was rounded to the operand type before the
    epilogue (whose slope is at most 1.13: relu, gelu): one more rounding of `product`."""
    assert out.shape == ref.shape, (out.shape, ref.shape)
    k = a.shape[-1]
    amax = float(np.abs(a.astype(np.float64)).max(initial=0.0))
    bmax = float(np.abs(b.astype(np.float64)).max(initial=0.0))
    scale = math.sqrt(max(k, 1)) * amax * bmax
    accumulate = 1e-5 if a.dtype == np.float32 else 1e-4
    o, r = out.astype(np.float64), np.asarray(ref, np.float64)
    bound = ROUNDING[out.dtype] * np.maximum(np.abs(r), np.abs(product)) + accumulate * scale
    if epilogue and a.dtype != np.float32:
        bound += 1.13 * ROUNDING[a.dtype] * np.abs(product)
    err = np.abs(o - r)
    bad = ~(err <= bound)  # NaN fails
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        raise AssertionError(
            f"{int(bad.sum())} of {out.size} elements off (K={k}, scale={scale:.3g}); first at "
            f"{i}: got {out[i]!r}, expected {r[i]!r} (bound {bound[i]:.3g})"
        )


def product64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


# --------------------------------------------------------------------------------------------
# Shapes


SHAPES = {
    DataType.BFloat16: [
        (128, 128, 128),
        (1000, 1000, 1000),
        (2048, 1024, 1000),
        (1, 4096, 4096),
        (4096, 1, 1000),
        (17, 17, 17),
        (1, 1, 1),
        (17, 1000, 4096),
        (1000, 17, 128),
        (128, 128, 65536),
        (17, 128, 65536),
    ],
    DataType.Half: [(128, 128, 128), (1000, 1000, 1000), (17, 4096, 1000), (1, 1, 1)],
    DataType.Float: [(128, 128, 128), (1000, 1000, 1000), (17, 17, 17), (1, 4096, 4096)],
}
CASES = [(dt, s) for dt, shapes in SHAPES.items() for s in shapes]


@pytest.mark.parametrize(
    ("dtype", "mnk"), CASES, ids=[f"{d.name}-{'x'.join(map(str, s))}" for d, s in CASES]
)
def test_matmul_shapes(
    rng: np.random.Generator, torch: Any, dtype: DataType, mnk: tuple[int, int, int]
) -> None:
    m, n, k = mnk
    a, b = host_random(rng, (m, k), DTYPES[dtype]), host_random(rng, (k, n), DTYPES[dtype])
    comp = compiler(("plain", dtype), lambda: plain(dtype))
    (out,) = run(
        torch,
        comp,
        [to_torch(torch, a), to_torch(torch, b, operand="b")],
        _torch_dtype(torch, dtype),
    )
    (ref,) = _reference(comp.fusion, [a, b])
    check(out, ref, ref, a, b)


LAYOUT_SHAPES = [(1000, 333, 4096), (17, 100, 1000)]
SMALL_SHAPES = [(16, 2, 1), (2, 16, 1), (3, 5, 7), (7, 9, 3), (65, 129, 17), (129, 2, 66)]
"""M, N or K under one 16-byte chunk or one tile: the operand's edge chunks are loaded element by
element. Under `SANITIZE=1` (memcheck, torch's caching allocator off, so each operand is its own
allocation) a 16-byte copy past an operand's end is reported."""
LAYOUT_CASES = [
    *[(dtype, s) for dtype in (DataType.BFloat16, DataType.Float) for s in LAYOUT_SHAPES],
    *[(dtype, s) for dtype in (DataType.Half, DataType.BFloat16) for s in SMALL_SHAPES],
]


@pytest.mark.parametrize(
    ("dtype", "mnk"),
    LAYOUT_CASES,
    ids=[f"{d.name}-{'x'.join(map(str, s))}" for d, s in LAYOUT_CASES],
)
@pytest.mark.parametrize("layout_b", ["k", "mn"])
@pytest.mark.parametrize("layout_a", ["k", "mn"])
def test_operand_layouts(
    rng: np.random.Generator,
    torch: Any,
    dtype: DataType,
    layout_a: str,
    layout_b: str,
    mnk: tuple[int, int, int],
) -> None:
    comp = compiler(("plain", dtype), lambda: plain(dtype))
    check_layouts(rng, torch, comp, dtype, mnk, layout_a, layout_b)


def check_layouts(
    rng: np.random.Generator,
    torch: Any,
    comp: FusionCompiler,
    dtype: DataType,
    mnk: tuple[int, int, int],
    layout_a: str,
    layout_b: str,
) -> None:
    """`comp` (a plain matmul of `dtype`) on fresh operands stored with the given contiguous
    dims (see `to_torch`), against the reference."""
    m, n, k = mnk
    a, b = host_random(rng, (m, k), DTYPES[dtype]), host_random(rng, (k, n), DTYPES[dtype])
    ta, tb = to_torch(torch, a, layout_a, "a"), to_torch(torch, b, layout_b, "b")
    # (torch may give an extent-1 dim any stride: only a dim of two or more says the layout)
    assert min(m, k) < 2 or (ta.stride(-1) == 1) == (layout_a == "k")
    assert min(k, n) < 2 or (tb.stride(-2) == 1) == (layout_b == "k")
    (out,) = run(torch, comp, [ta, tb], _torch_dtype(torch, dtype))
    (ref,) = _reference(comp.fusion, [a, b])
    check(out, ref, ref, a, b)


def test_misaligned_and_sliced_operands(rng: np.random.Generator, torch: Any) -> None:
    """An operand one element into its storage (not 16-byte aligned) and one sliced out of a
    wider tensor (a leading stride that is not a multiple of 8) load element by element."""
    m, n, k = 100, 96, 200
    a, b = host_random(rng, (m, k), BFLOAT16), host_random(rng, (k, n), BFLOAT16)
    wide_a = np.zeros((m, k + 3), BFLOAT16)
    wide_a[:, 1 : k + 1] = a
    ta = to_torch(torch, wide_a)[:, 1 : k + 1]
    flat_b = np.zeros(k * n + 1, BFLOAT16)
    flat_b[1:] = b.reshape(-1)
    tb = to_torch(torch, flat_b)[1:].view(k, n)
    assert ta.data_ptr() % 16 and tb.data_ptr() % 16 and ta.stride(0) == k + 3
    comp = compiler(("plain", DataType.BFloat16), lambda: plain(DataType.BFloat16))
    (out,) = run(torch, comp, [ta, tb], torch.bfloat16)
    (ref,) = _reference(comp.fusion, [a, b])
    check(out, ref, product64(a, b), a, b)


# --------------------------------------------------------------------------------------------
# Epilogues, batches, partials


EPILOGUES = [
    (DataType.BFloat16, "gelu", DataType.BFloat16, (1000, 4096, 1000)),
    (DataType.BFloat16, "relu", DataType.BFloat16, (17, 33, 100)),
    (DataType.Half, "relu", DataType.Float, (333, 1000, 4096)),
    (DataType.Float, "gelu", DataType.Float, (257, 129, 1000)),
]


@pytest.mark.parametrize(
    ("dtype", "act", "out", "mnk"),
    EPILOGUES,
    ids=[f"{d.name}-{a}-{o.name}-{'x'.join(map(str, s))}" for d, a, o, s in EPILOGUES],
)
def test_fused_epilogue(
    rng: np.random.Generator,
    torch: Any,
    dtype: DataType,
    act: str,
    out: DataType,
    mnk: tuple[int, int, int],
) -> None:
    m, n, k = mnk
    npd = DTYPES[dtype]
    a, b, bias = (
        host_random(rng, (m, k), npd),
        host_random(rng, (k, n), npd),
        host_random(rng, (n,), npd),
    )
    comp = compiler(("linear", dtype, act, out), lambda: linear(dtype, act, out))
    inputs = [to_torch(torch, a), to_torch(torch, b, "mn", "b"), to_torch(torch, bias[None])[0]]
    (got,) = run(torch, comp, inputs, _torch_dtype(torch, out))
    assert got.dtype == DTYPES[out]
    (ref,) = _reference(comp.fusion, [a, b, bias])
    check(got, ref, product64(a, b) + bias.astype(np.float64), a, b, epilogue=True)


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float], ids=lambda d: d.name)
def test_batched(rng: np.random.Generator, torch: Any, dtype: DataType) -> None:
    npd = DTYPES[dtype]
    a, b = host_random(rng, (3, 1000, 129), npd), host_random(rng, (3, 129, 700), npd)
    comp = compiler(("batched", dtype), lambda: plain(dtype, 3))
    # B transposed in memory per batch
    inputs = [to_torch(torch, a), to_torch(torch, b, "k", "b")]
    (out,) = run(torch, comp, inputs, _torch_dtype(torch, dtype))
    (ref,) = _reference(comp.fusion, [a, b])
    check(out, ref, product64(a, b), a, b)


@pytest.mark.parametrize(
    ("el", "splits", "mnk"),
    [("bf16", 4, (256, 256, 4096)), ("bf16", 3, (100, 37, 1000)), ("f32", 2, (65, 33, 301))],
)
def test_split_k_partials(
    rng: np.random.Generator, torch: Any, el: str, splits: int, mnk: tuple[int, int, int]
) -> None:
    m, n, k = mnk
    npd = BFLOAT16 if el == "bf16" else np.dtype(np.float32)
    a, b = host_random(rng, (m, k), npd), host_random(rng, (k, n), npd)
    comp = compiler(("partial", el, splits), lambda: partial(el, splits))
    (out,) = run(torch, comp, [to_torch(torch, a), to_torch(torch, b, operand="b")], torch.float32)
    chunk = -(-k // splits)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = np.stack(
        [
            a64[:, j * chunk : (j + 1) * chunk] @ b64[j * chunk : (j + 1) * chunk]
            for j in range(splits)
        ]
    )
    for j in range(splits):
        part = slice(j * chunk, (j + 1) * chunk)
        check(out[j], ref[j], ref[j], a[:, part], b[part])
    check(out.sum(0), product64(a, b), product64(a, b), a, b)


# --------------------------------------------------------------------------------------------
# mma.sync, the tensor-core engine before Hopper, on this GPU


@pytest.fixture
def mma_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler's pre-Hopper tiles (mma.sync, k tiles of 32) on this GPU: every test above
    runs Hopper's wgmma tiles, the ones an H100 gets."""
    from fuser.transforms.schedulers import matmul, matmul_tiles

    monkeypatch.setattr(matmul, "has_wgmma", lambda arch: False)
    monkeypatch.setattr(matmul_tiles, "has_wgmma", lambda arch: False)


MMA_CASES = [
    (DataType.BFloat16, (1000, 333, 4096), "k", "mn"),
    (DataType.BFloat16, (2048, 1024, 1000), "mn", "k"),
    (DataType.Half, (17, 100, 1000), "k", "k"),
    (DataType.Half, (100, 17, 333), "mn", "mn"),
    (DataType.BFloat16, (128, 128, 65536), "k", "mn"),
]


@pytest.mark.parametrize(
    ("dtype", "mnk", "layout_a", "layout_b"),
    MMA_CASES,
    ids=[f"{d.name}-{'x'.join(map(str, s))}-{la}-{lb}" for d, s, la, lb in MMA_CASES],
)
def test_mma_sync_tiles(
    rng: np.random.Generator,
    torch: Any,
    mma_sync: None,
    dtype: DataType,
    mnk: tuple[int, int, int],
    layout_a: str,
    layout_b: str,
) -> None:
    comp = FusionCompiler(plain(dtype), split_k=1)  # not the module's: its kernels are wgmma's
    check_layouts(rng, torch, comp, dtype, mnk, layout_a, layout_b)
    assert "fuser::mm::Mma<" in comp.last_cuda_code()


# --------------------------------------------------------------------------------------------
# fd.execute end to end


EXECUTE = [(256, 256, 65536), (128, 128, 32768), (4096, 4096, 4096), (17, 1000, 333)]


@pytest.mark.parametrize("mnk", EXECUTE, ids=["x".join(map(str, s)) for s in EXECUTE])
def test_fd_execute(rng: np.random.Generator, torch: Any, mnk: tuple[int, int, int]) -> None:
    """A linear layer through `FusionDefinition.execute` on torch tensors (split-K decides)."""
    m, n, k = mnk
    with FusionDefinition("linear_bf16") as fd:
        ta_ = fd.define_tensor([-1, -1], DataType.BFloat16)
        tb_ = fd.define_tensor([-1, -1], DataType.BFloat16)
        bias_ = fd.define_tensor([-1], DataType.BFloat16)
        c = fd.ops.cast(fd.ops.matmul(ta_, tb_), DataType.Float)
        s = fd.ops.add(
            c, fd.ops.broadcast_in_dim(fd.ops.cast(bias_, DataType.Float), c.shape(), [1])
        )
        fd.add_output(fd.ops.cast(fd.ops.relu(s), DataType.BFloat16))
    a, b = host_random(rng, (m, k), BFLOAT16), host_random(rng, (k, n), BFLOAT16)
    bias = host_random(rng, (n,), BFLOAT16)
    poison(torch, [(m, n)], torch.bfloat16)
    (out,) = fd.execute(
        [to_torch(torch, a), to_torch(torch, b, operand="b"), to_torch(torch, bias[None])[0]]
    )
    (ref,) = fd.reference([a, b, bias], compute_dtype=np.float64)
    check(to_numpy(torch, out), ref, product64(a, b) + bias.astype(np.float64), a, b, epilogue=True)


def _torch_dtype(torch: Any, dtype: DataType) -> Any:
    return {DataType.BFloat16: torch.bfloat16, DataType.Half: torch.float16}.get(
        dtype, torch.float32
    )


def _reference(fusion: FusionOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    from fuser.runtime.reference import evaluate

    return [np.asarray(x) for x in evaluate(fusion, inputs, compute_dtype=np.float64)]


# --------------------------------------------------------------------------------------------
# fd.ops.linear and fd.ops.matmul of ranks 1-4


LINEARS = [
    (DataType.BFloat16, [127, 4096], 33, True),
    (DataType.BFloat16, [2, 1000, 512], 1024, True),  # a's rows one matrix (a view)
    (DataType.Half, [64], 17, True),  # a 1-D input
    (DataType.Float, [257, 129], 1000, False),
    (DataType.BFloat16, [1, 4096], 4096, True),  # decode: one row
]


@pytest.mark.parametrize(
    ("dtype", "a_shape", "n", "bias"),
    LINEARS,
    ids=[f"{d.name}-{'x'.join(map(str, a))}-{n}-{b}" for d, a, n, b in LINEARS],
)
def test_linear_against_torch(
    rng: np.random.Generator, torch: Any, dtype: DataType, a_shape: list[int], n: int, bias: bool
) -> None:
    """`linear(a, w, bias)` reads `w` ([N, K], contiguous as torch keeps a weight) transposed in
    place: a matmul kernel with the bias in its epilogue (split-K where M is short), against the
    float64 product and torch."""
    from definitions import linear_layer

    fd = linear_layer(dtype, a_shape, n, bias)
    npd = DTYPES[dtype]
    a, w = host_random(rng, tuple(a_shape), npd), host_random(rng, (n, a_shape[-1]), npd)
    b = host_random(rng, (n,), npd)
    inputs = [to_torch(torch, a), to_torch(torch, w), *([to_torch(torch, b)] if bias else [])]
    (got,) = fd.execute(inputs)
    # the weight is read in place: no kernel copies it (a split-K reduction may follow)
    assert [k.scheduler for k in fd.compile(inputs).kernels][:1] == ["matmul"]
    assert "transpose" not in [k.scheduler for k in fd.compile(inputs).kernels]
    product = a.astype(np.float64) @ w.astype(np.float64).T
    (ref,) = fd.reference([a, w, *([b] if bias else [])], compute_dtype=np.float64)
    expected = product + (b.astype(np.float64) if bias else 0)
    check(to_numpy(torch, got), ref, expected, a.reshape(-1, a_shape[-1]), w.T, epilogue=bias)
    weight = to_torch(torch, w)
    torch_out = torch.nn.functional.linear(inputs[0], weight, inputs[2] if bias else None)
    # compared on the host: compute-sanitizer's initcheck does not see cuBLAS's (TMA) stores,
    # so a kernel reading torch's output on the device is reported as reading uninitialized memory
    np.testing.assert_allclose(
        to_numpy(torch, got).astype(np.float64),
        to_numpy(torch, torch_out).astype(np.float64),
        rtol=2e-2,
        atol=2e-2 * a_shape[-1] ** 0.5,
    )


RANKS = [
    ([4097], [4097]),
    ([127, 4097], [4097]),
    ([4097], [4097, 33]),
    ([3, 127, 64], [64, 129]),
    ([127, 64], [3, 64, 129]),
    ([2, 1, 127, 64], [4, 64, 33]),
    ([2, 3, 17, 64], [2, 3, 64, 17]),
]


@pytest.mark.parametrize(
    ("a_shape", "b_shape"), RANKS, ids=[f"{a}@{b}".replace(" ", "") for a, b in RANKS]
)
def test_matmul_of_ranks_against_torch(
    rng: np.random.Generator, torch: Any, a_shape: list[int], b_shape: list[int]
) -> None:
    from definitions import matmul_of_ranks

    fd = matmul_of_ranks(a_shape, b_shape)
    a = host_random(rng, tuple(a_shape), np.dtype(np.float32))
    b = host_random(rng, tuple(b_shape), np.dtype(np.float32))
    ta, tb = to_torch(torch, a), to_torch(torch, b)
    (got,) = fd.execute([ta, tb])
    expected = torch.matmul(ta.double(), tb.double())
    assert tuple(got.shape) == tuple(expected.shape)
    k = a_shape[-1]
    torch.testing.assert_close(got.double(), expected, rtol=1e-4, atol=1e-5 * k)
