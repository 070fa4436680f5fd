"""The schedulers issue's workload classes on one GPU: fuser against torch eager, `torch.compile`
and nvFuser in the same process.

    python benchmarks/schedulers.py [--out DIR] [--only TEXT] [--no-compile]

Each case is written once, against the FusionDefinition API that fuser and nvFuser share
(`fd.ops.*`), and defined in both; torch's version is the same computation in torch ops. The
classes: softmax backward; softmax and logsumexp over large vocabularies (32k-128k); skinny sums
along both axes (few very long rows, many very short ones); a pointwise op on a transposed
input and one writing a transposed output (a permute); a causal-masked softmax (the mask from
iotas) and a cross-entropy forward (a take_along_axis); a rotary embedding (slices and a cat)
and a split into heads (a reshape and a permute); dropout and a residual add (random numbers);
running sums along rows of 4k and 128k (scans); the top 50 of rows of 32k (`topk`);
embeddings (a table's rows at token ids, counted as the rows read); decode-size norms (1-8
rows). Times are CUDA-event medians with the L2 emptied before every run (`run.median_ms`);
GB/s counts each input read once and each output written once, "% copy" is against a 2 GiB
device-to-device copy in the same run. nvFuser (`nvfuser_direct`, loaded lazily as
`shared/notes/peers.md` says) reads "n/a" where it fails or does not import.
Writes `schedulers.json` and `schedulers.md` to DIR (default ./bench-out).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch  # first: torch must be imported before fuser initializes CUDA

sys.path.insert(0, str(Path(__file__).parent))

from new_shape import load_nvfuser
from run import copy_bandwidth, peer_markdown, peer_row, run_meta, write_results

import fuser

EPS = 1e-5


@dataclass
class Frontend:
    """What a case's definition needs of the frontend it is defined in: the FusionDefinition,
    the frontend's f32 DataType and the case's storage DataType (f32 or bf16), and the width
    of the rows (the last extent of the first input)."""

    fd: Any
    f32: Any
    io: Any
    width: int
    i64: Any = None

    def up(self, t: Any) -> Any:
        """`t` (of the storage type) in f32."""
        return t if self.io == self.f32 else self.fd.ops.cast(t, self.f32)

    def down(self, t: Any) -> Any:
        """`t` (f32) in the storage type."""
        return t if self.io == self.f32 else self.fd.ops.cast(t, self.io)


Build = Callable[[Frontend, list[Any]], None]
"""Defines a case's computation on the fd's tensor inputs (defined from the torch tensors)."""


@dataclass
class Case:
    """One row of the table."""

    name: str
    make_inputs: Callable[[], list[Any]]
    build: Build
    torch_fn: Callable[..., Any]
    dtype: str
    shapes: tuple[tuple[int, ...], ...] | None = None
    """The inputs' shapes as fuser defines them (-1 dynamic), where not all dims are dynamic."""
    read_bytes: Callable[[list[Any]], int] | None = None
    """The bytes the case reads of its inputs, where it does not read them whole (an
    embedding reads the table's rows at its ids)."""
    validate: Callable[[list[Any], list[Any]], float] | None = None
    """For random numbers (whose streams differ from torch's): the error of the outputs for
    the arguments, in place of the comparison with torch's."""


def softmax_backward(f: Frontend, inputs: list[Any]) -> None:
    """dx = y * (dy - sum(dy * y, -1))."""
    fd, (y, dy) = f.fd, inputs
    yf, dyf = f.up(y), f.up(dy)
    s = fd.ops.sum(fd.ops.mul(dyf, yf), dims=[1], keepdim=False)
    sb = fd.ops.broadcast_in_dim(s, shape=y.shape(), broadcast_dims=[0])
    fd.add_output(f.down(fd.ops.mul(yf, fd.ops.sub(dyf, sb))))


def _row(f: Frontend, value: Any, like: Any) -> Any:
    return f.fd.ops.broadcast_in_dim(value, shape=like.shape(), broadcast_dims=[0])


def softmax(f: Frontend, inputs: list[Any]) -> None:
    fd, x = f.fd, inputs[0]
    xf = f.up(x)
    e = fd.ops.exp(fd.ops.sub(xf, _row(f, fd.ops.max(xf, dims=[1], keepdim=False), x)))
    s = fd.ops.sum(e, dims=[1], keepdim=False)
    fd.add_output(f.down(fd.ops.div(e, _row(f, s, x))))


def logsumexp(f: Frontend, inputs: list[Any]) -> None:
    fd, x = f.fd, inputs[0]
    xf = f.up(x)
    m = fd.ops.max(xf, dims=[1], keepdim=False)
    e = fd.ops.exp(fd.ops.sub(xf, _row(f, m, x)))
    fd.add_output(fd.ops.add(fd.ops.log(fd.ops.sum(e, dims=[1], keepdim=False)), m))


def row_sum(dim: int) -> Build:
    def build(f: Frontend, inputs: list[Any]) -> None:
        f.fd.add_output(f.fd.ops.sum(inputs[0], dims=[dim], keepdim=False))

    return build


def _gelu_bias(f: Frontend, x: Any, b: Any) -> Any:
    """gelu(x + b) in the storage type, tanh approximation, written out."""
    fd = f.fd
    bb = fd.ops.broadcast_in_dim(b, shape=x.shape(), broadcast_dims=[1])
    s = fd.ops.add(f.up(x), f.up(bb))
    cube = fd.ops.mul(fd.ops.mul(s, s), s)
    inner = fd.ops.mul(fd.ops.add(s, fd.ops.mul(cube, 0.044715)), 0.7978845608028654)
    return f.down(fd.ops.mul(fd.ops.mul(s, 0.5), fd.ops.add(fd.ops.tanh(inner), 1.0)))


def gelu_bias(f: Frontend, inputs: list[Any]) -> None:
    """gelu(x + b); x a transposed view."""
    f.fd.add_output(_gelu_bias(f, *inputs))


def gelu_bias_transposed_out(f: Frontend, inputs: list[Any]) -> None:
    """gelu(x + b) written transposed (a permute of the result: the output is [h, n])."""
    f.fd.add_output(f.fd.ops.permute(_gelu_bias(f, *inputs), [1, 0]))


def layer_norm(f: Frontend, inputs: list[Any]) -> None:
    fd, (x, w, b) = f.fd, inputs
    xf = f.up(x)
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    shape = x.shape()
    inv = _row(f, fd.ops.rsqrt(fd.ops.add(var, EPS)), x)
    wb = fd.ops.broadcast_in_dim(f.up(w), shape=shape, broadcast_dims=[1])
    bb = fd.ops.broadcast_in_dim(f.up(b), shape=shape, broadcast_dims=[1])
    y = fd.ops.add(fd.ops.mul(fd.ops.mul(fd.ops.sub(xf, _row(f, mean, x)), inv), wb), bb)
    fd.add_output(f.down(y))


def rms_norm(f: Frontend, inputs: list[Any]) -> None:
    fd, (x, w) = f.fd, inputs
    xf = f.up(x)
    ms = fd.ops.mul(fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=False), 1.0 / f.width)
    inv = _row(f, fd.ops.rsqrt(fd.ops.add(ms, EPS)), x)
    wb = fd.ops.broadcast_in_dim(f.up(w), shape=x.shape(), broadcast_dims=[1])
    fd.add_output(f.down(fd.ops.mul(fd.ops.mul(xf, inv), wb)))


def causal_softmax(f: Frontend, inputs: list[Any]) -> None:
    """softmax(where(i >= j, x, -inf)) over rows, the mask from two iotas (nanoGPT's causal
    attention as Thunder hands it over)."""
    fd, x = f.fd, inputs[0]
    integer = type(f.f32).Int
    n = fd.define_scalar(f.width, dtype=integer)
    zero, one = fd.define_scalar(0, dtype=integer), fd.define_scalar(1, dtype=integer)
    positions = fd.ops.iota(n, zero, one, dtype=integer)
    rows = fd.ops.broadcast_in_dim(positions, shape=x.shape(), broadcast_dims=[0])
    cols = fd.ops.broadcast_in_dim(positions, shape=x.shape(), broadcast_dims=[1])
    ninf = fd.define_scalar(float("-inf"), dtype=f.f32)
    xf = fd.ops.where(fd.ops.ge(rows, cols), f.up(x), ninf)
    e = fd.ops.exp(fd.ops.sub(xf, _row(f, fd.ops.max(xf, dims=[1], keepdim=False), x)))
    s = fd.ops.sum(e, dims=[1], keepdim=False)
    fd.add_output(f.down(fd.ops.div(e, _row(f, s, x))))


def cross_entropy(f: Frontend, inputs: list[Any]) -> None:
    """logsumexp(x) - x[target] per row (Thunder's cross-entropy forward, no reduction), as a
    [n, 1] column: the target's logit stays in the index's shape."""
    fd, (x, target) = f.fd, inputs
    xf = f.up(x)
    m = fd.ops.max(xf, dims=[1], keepdim=False)
    e = fd.ops.exp(fd.ops.sub(xf, _row(f, m, x)))
    lse = fd.ops.add(fd.ops.log(fd.ops.sum(e, dims=[1], keepdim=False)), m)
    picked = f.up(fd.ops.take_along_axis(x, target, 1))
    column = fd.ops.broadcast_in_dim(lse, shape=picked.shape(), broadcast_dims=[0])
    fd.add_output(fd.ops.sub(column, picked))


def rope(f: Frontend, inputs: list[Any]) -> None:
    """A rotary embedding over [tokens, heads, head_dim]: `x * cos + cat(-x2, x1) * sin`, the
    halves sliced from x and the tables [tokens, head_dim] broadcast over the heads (litGPT's
    `apply_rope` as Thunder hands it over)."""
    fd, (x, cos, sin) = f.fd, inputs
    shape = x.shape()
    half = f.width // 2
    xf = f.up(x)
    x1 = fd.ops.slice(xf, [0, 0, 0], [shape[0], shape[1], half])
    x2 = fd.ops.slice(xf, [0, 0, half], [shape[0], shape[1], f.width])
    rotated = fd.ops.cat([fd.ops.neg(x2), x1], dim=-1)
    c = fd.ops.broadcast_in_dim(f.up(cos), shape=shape, broadcast_dims=[0, 2])
    s = fd.ops.broadcast_in_dim(f.up(sin), shape=shape, broadcast_dims=[0, 2])
    fd.add_output(f.down(fd.ops.add(fd.ops.mul(xf, c), fd.ops.mul(rotated, s))))


HEADS_SPLIT = (8, 2048, 32)
"""Batch, sequence and heads of the heads-split row."""


def heads_split(f: Frontend, inputs: list[Any]) -> None:
    """[b, t, heads * head_dim] into [b, heads, t, head_dim]: a reshape and a permute. fuser
    and nvFuser return it as a view of the input (no kernel); the torch version writes it out
    (`.contiguous()`, as attention kernels that need it contiguous read it)."""
    fd, x = f.fd, inputs[0]
    b, t, heads = HEADS_SPLIT
    view = fd.ops.reshape(x, new_shape=[b, t, heads, f.width // heads])
    fd.add_output(fd.ops.permute(view, dims=[0, 2, 1, 3]))


DROPOUT_P = 0.1
"""The dropout probability of the dropout row."""


def dropout_residual(f: Frontend, inputs: list[Any]) -> None:
    """`dropout(x, p) + residual`, as Thunder hands a transformer block's dropout over: a
    uniform draw (seed and offset given, as Thunder's `uniform_philox`), `u >= p` kept and
    scaled by 1 / (1 - p), the residual added; one kernel in fuser."""
    fd, (x, residual) = f.fd, inputs
    seed, offset = fd.define_scalar(1234, f.i64), fd.define_scalar(8, f.i64)
    u = fd.ops.uniform(0.0, 1.0, x.shape(), rng_seed=seed, rng_offset=offset, dtype=f.f32)
    kept = fd.ops.where(fd.ops.ge(u, DROPOUT_P), fd.ops.mul(f.up(x), 1 / (1 - DROPOUT_P)), 0.0)
    fd.add_output(f.down(fd.ops.add(kept, f.up(residual))))


def _dropout_error(outs: list[Any], args: list[Any]) -> float:
    """Each element of `dropout(x) + residual` is `x / (1 - p) + residual` or `residual`
    (within bf16 rounding), and about 1 - p of them are the first: the share of elements that
    are neither, raising if the kept share is off."""
    x, residual = (a.float() for a in args)
    out = outs[0].float()
    kept = (x / (1 - DROPOUT_P) + residual).bfloat16().float()
    is_kept = torch.isclose(out, kept, rtol=1e-2, atol=1e-2)
    is_dropped = torch.isclose(out, residual.bfloat16().float(), rtol=1e-2, atol=1e-2)
    share = float(is_kept.float().mean())
    neither = float((~(is_kept | is_dropped)).float().mean())
    if abs(share - (1 - DROPOUT_P)) > 0.01 or neither > 1e-4:
        raise AssertionError(f"dropout kept {share:.4f} of the elements, {neither:.2e} neither")
    return neither


def cumsum(f: Frontend, inputs: list[Any]) -> None:
    """The running sum along each row (`cumsum`); f32 in and out."""
    f.fd.add_output(f.fd.ops.cumsum(inputs[0], -1))


TOPK = 50
"""The k of the top-k row."""


def topk(f: Frontend, inputs: list[Any]) -> None:
    """The `TOPK` largest values of each row and their indices (`topk`), sorted."""
    k = f.fd.define_scalar(TOPK, f.i64)  # (nvFuser takes k as a Val only)
    values, indices = f.fd.ops.topk(inputs[0], k, -1, True, True)
    f.fd.add_output(values)
    f.fd.add_output(indices)


def embedding(f: Frontend, inputs: list[Any]) -> None:
    """The rows of a [vocabulary, hidden] table at each token id (`embedding_fwd`)."""
    ids, table = inputs
    f.fd.add_output(f.fd.ops.embedding_fwd(ids, table, None, None, None, None, None))


def _rows_read(args: list[Any]) -> int:
    """An embedding's ids and the table rows at them."""
    ids, table = args
    return ids.numel() * (ids.element_size() + table.shape[1] * table.element_size())


def _randn(*shape: int, dtype: str = "float32") -> Any:
    return torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype))


def cases() -> list[Case]:
    f = torch.nn.functional

    def t_softmax_backward(y: Any, dy: Any) -> Any:
        yf, dyf = y.float(), dy.float()
        return (yf * (dyf - (dyf * yf).sum(-1, keepdim=True))).to(y.dtype)

    def t_softmax(x: Any) -> Any:
        return torch.softmax(x.float(), dim=-1).to(x.dtype)

    def t_logsumexp(x: Any) -> Any:
        return torch.logsumexp(x.float(), dim=-1)

    def t_gelu(x: Any, b: Any) -> Any:
        return f.gelu(x.float() + b.float(), approximate="tanh").to(x.dtype)

    def t_layer_norm(x: Any, w: Any, b: Any) -> Any:
        return f.layer_norm(x.float(), x.shape[-1:], w.float(), b.float(), EPS).to(x.dtype)

    def t_rms_norm(x: Any, w: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)

    def t_causal_softmax(x: Any) -> Any:
        keep = torch.ones(x.shape, dtype=torch.bool, device=x.device).tril()
        return torch.softmax(x.float().masked_fill(~keep, float("-inf")), dim=-1).to(x.dtype)

    def t_cross_entropy(x: Any, target: Any) -> Any:
        return f.cross_entropy(x.float(), target[:, 0], reduction="none")[:, None]

    def t_dropout_residual(x: Any, residual: Any) -> Any:
        return f.dropout(x, DROPOUT_P, training=True) + residual

    def t_rope(x: Any, cos: Any, sin: Any) -> Any:
        xf, half = x.float(), x.shape[-1] // 2
        rotated = torch.cat([-xf[..., half:], xf[..., :half]], dim=-1)
        return (xf * cos.float()[:, None] + rotated * sin.float()[:, None]).to(x.dtype)

    def t_embedding(ids: Any, table: Any) -> Any:
        return f.embedding(ids, table)

    def t_heads(x: Any) -> Any:
        b, t, heads = HEADS_SPLIT
        return x.view(b, t, heads, x.shape[-1] // heads).permute(0, 2, 1, 3).contiguous()

    def probs(n: int, h: int, dtype: str) -> list[Any]:
        return [
            torch.softmax(_randn(n, h), -1).to(getattr(torch, dtype)),
            _randn(n, h, dtype=dtype),
        ]

    def transposed(n: int, h: int, dtype: str) -> list[Any]:
        return [_randn(h, n, dtype=dtype).t(), _randn(h, dtype=dtype)]

    rows: list[Case] = []
    for dtype in ("float32", "bfloat16"):
        rows.append(
            Case(
                "softmax backward [16384, 4096]",
                lambda dtype=dtype: probs(16384, 4096, dtype),
                softmax_backward,
                t_softmax_backward,
                dtype,
            )
        )
    rows += [
        Case("softmax [4096, 50257]", lambda: [_randn(4096, 50257)], softmax, t_softmax, "float32"),
        Case(
            "softmax [2048, 131072]",
            lambda: [_randn(2048, 131072, dtype="bfloat16")],
            softmax,
            t_softmax,
            "bfloat16",
        ),
        Case(
            "logsumexp [8192, 32768]",
            lambda: [_randn(8192, 32768, dtype="bfloat16")],
            logsumexp,
            t_logsumexp,
            "bfloat16",
        ),
        Case(
            "logsumexp [4096, 50257]",
            lambda: [_randn(4096, 50257)],
            logsumexp,
            t_logsumexp,
            "float32",
        ),
        Case(
            "sum(-1) [16, 4194304]",
            lambda: [_randn(16, 4194304)],
            row_sum(1),
            lambda x: x.sum(-1),
            "float32",
        ),
        Case(
            "sum(-1) [4194304, 16]",
            lambda: [_randn(4194304, 16)],
            row_sum(1),
            lambda x: x.sum(-1),
            "float32",
        ),
        Case(
            "sum(0) [16, 4194304]",
            lambda: [_randn(16, 4194304)],
            row_sum(0),
            lambda x: x.sum(0),
            "float32",
        ),
        Case(
            "sum(0) [4194304, 16]",
            lambda: [_randn(4194304, 16)],
            row_sum(0),
            lambda x: x.sum(0),
            "float32",
        ),
    ]
    for dtype in ("float32", "bfloat16"):
        rows.append(
            Case(
                "gelu(x.t() + b) [8192, 8192]",
                lambda dtype=dtype: transposed(8192, 8192, dtype),
                gelu_bias,
                t_gelu,
                dtype,
            )
        )
    for dtype in ("float32", "bfloat16"):
        rows.append(
            Case(
                "gelu(x + b).t() [8192, 8192]",
                lambda dtype=dtype: [_randn(8192, 8192, dtype=dtype), _randn(8192, dtype=dtype)],
                gelu_bias_transposed_out,
                lambda x, b: t_gelu(x, b).t().contiguous(),
                dtype,
            )
        )
    for dtype in ("float32", "bfloat16"):
        rows.append(
            Case(
                "causal softmax [4096, 4096]",
                lambda dtype=dtype: [_randn(4096, 4096, dtype=dtype)],
                causal_softmax,
                t_causal_softmax,
                dtype,
            )
        )
        rows.append(
            Case(
                "cross-entropy [8192, 50257]",
                lambda dtype=dtype: [
                    _randn(8192, 50257, dtype=dtype),
                    torch.randint(0, 50257, (8192, 1), device="cuda"),
                ],
                cross_entropy,
                t_cross_entropy,
                dtype,
                ((-1, -1), (-1, 1)),  # the target a column, as Thunder defines it
            )
        )
    rows.append(
        Case(
            "RoPE [16384, 32, 128]",
            lambda: [
                _randn(16384, 32, 128, dtype="bfloat16"),
                _randn(16384, 128, dtype="bfloat16"),
                _randn(16384, 128, dtype="bfloat16"),
            ],
            rope,
            t_rope,
            "bfloat16",
            ((-1, -1, 128), (-1, 128), (-1, 128)),  # head_dim static, as Thunder defines it
        )
    )
    rows.append(
        Case(
            "heads split [8, 2048, 4096]",
            lambda: [_randn(*HEADS_SPLIT[:2], 4096, dtype="bfloat16")],
            heads_split,
            t_heads,
            "bfloat16",
            ((*HEADS_SPLIT[:2], 4096),),
        )
    )
    rows.append(
        Case(
            "dropout + residual [8192, 4096]",
            lambda: [_randn(8192, 4096, dtype="bfloat16"), _randn(8192, 4096, dtype="bfloat16")],
            dropout_residual,
            t_dropout_residual,
            "bfloat16",
            validate=_dropout_error,
        )
    )
    for n, h in ((8192, 4096), (256, 131072), (32, 131072)):
        rows.append(
            Case(
                f"cumsum [{n}, {h}]",
                lambda n=n, h=h: [_randn(n, h)],
                cumsum,
                lambda x: torch.cumsum(x, -1),
                "float32",
            )
        )
    for n in (1024, 8192):
        rows.append(
            Case(
                f"topk k={TOPK} [{n}, 32768]",
                lambda n=n: [_randn(n, 32768)],
                topk,
                lambda x: tuple(torch.topk(x, TOPK, -1)),
                "float32",
            )
        )
    for tokens, vocab, hidden in ((8192, 128256, 4096), (2048, 32064, 3072)):
        rows.append(
            Case(
                f"embedding [{tokens}] of [{vocab}, {hidden}]",
                lambda t=tokens, v=vocab, h=hidden: [
                    torch.randint(0, v, (t,), device="cuda"),
                    _randn(v, h, dtype="bfloat16"),
                ],
                embedding,
                t_embedding,
                "bfloat16",
                ((-1,), (-1, hidden)),
                _rows_read,
            )
        )
    for n, h in ((1, 4096), (8, 8192)):
        rows.append(
            Case(
                f"layer norm [{n}, {h}]",
                lambda n=n, h=h: [
                    _randn(n, h, dtype="bfloat16"),
                    _randn(h, dtype="bfloat16"),
                    _randn(h, dtype="bfloat16"),
                ],
                layer_norm,
                t_layer_norm,
                "bfloat16",
            )
        )
        rows.append(
            Case(
                f"RMS norm [{n}, {h}]",
                lambda n=n, h=h: [_randn(n, h, dtype="bfloat16"), _randn(h, dtype="bfloat16")],
                rms_norm,
                t_rms_norm,
                "bfloat16",
            )
        )
    return rows


def define_fuser(case: Case, args: list[Any]) -> Any:
    """The case in fuser: a tensor input of each argument's rank and dtype (dynamic extents,
    unless the case gives its shapes)."""
    dt = fuser.DataType
    io = dt.Float if case.dtype == "float32" else dt.BFloat16
    types = {
        torch.float32: dt.Float,
        torch.bfloat16: dt.BFloat16,
        torch.float16: dt.Half,
        torch.int64: dt.Int,
    }
    with fuser.FusionDefinition(case.name.split(" [")[0].replace(" ", "_")) as fd:
        shapes = case.shapes or tuple((-1,) * a.dim() for a in args)
        inputs = [
            fd.define_tensor(shape=list(s), dtype=types[a.dtype])
            for s, a in zip(shapes, args, strict=True)
        ]
        case.build(Frontend(fd, dt.Float, io, args[0].shape[-1], dt.Int), inputs)
    return fd


def define_nvfuser(case: Case, args: list[Any]) -> Any:
    """The case in nvFuser (`nvfuser_direct`): an input per argument (`from_pytorch`)."""
    from nvfuser_direct import DataType as NvType
    from nvfuser_direct import FusionDefinition as NvDefinition

    io = NvType.Float if case.dtype == "float32" else NvType.BFloat16
    with NvDefinition() as fd:
        inputs = [fd.from_pytorch(a) for a in args]
        case.build(Frontend(fd, NvType.Float, io, args[0].shape[-1], NvType.Int), inputs)
    return fd


def run_case(case: Case, copy_gbs: float, use_compile: bool, nvfuser: bool) -> dict[str, Any]:
    args = case.make_inputs()
    validate = case.validate
    return peer_row(
        f"{case.name} {case.dtype}",
        define_fuser(case, args),
        case.torch_fn,
        args,
        case.dtype,
        copy_gbs,
        use_compile,
        (lambda: define_nvfuser(case, args)) if nvfuser else None,
        None if case.read_bytes is None else case.read_bytes(args),
        None if validate is None else (lambda outs: validate(outs, args)),
    )


def markdown(device: str, copy_gbs: float, rows: list[dict[str, Any]]) -> str:
    return peer_markdown(
        f"Schedulers' workloads on {device} (copy {copy_gbs:.0f} GB/s); ms (% of copy)", rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    torch.cuda.init()
    problem = load_nvfuser()
    if problem is not None:
        print(f"nvFuser not timed: {problem}")
    copy_gbs = copy_bandwidth()
    rows = []
    for case in cases():
        if args.only and args.only not in case.name:
            continue
        rows.append(run_case(case, copy_gbs, not args.no_compile, problem is None))
        r = rows[-1]
        print(f"{r['case']}: {r['fuser_vs_best_peer']:.2f}x best peer, {r['kernels']}", flush=True)
        torch.cuda.empty_cache()
    device = torch.cuda.get_device_name()
    write_results(
        args.out,
        "schedulers",
        {"meta": run_meta(device, copy_gbs=copy_gbs), "rows": rows},
        markdown(device, copy_gbs, rows),
    )


if __name__ == "__main__":
    main()
