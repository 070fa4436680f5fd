"""`permute`, `squeeze`, `broadcast` and `expand` on the CPU: the frontend's IR and messages, the
reference's values, and what the schedulers and the segmenter make of the ops that renumber dims
(kernels index their operand through them; none is a copy). The GPU results are in
tests/gpu/test_renumber_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fuser import DataType, FusionDefinition, dump
from fuser.errors import DefinitionError

F32 = DataType.Float


def _values(rng: np.random.Generator, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    return [rng.standard_normal(s).astype(np.float32) + 0.5 for s in shapes]


def test_permute_and_squeeze_in_the_ir_and_the_reference(rng: np.random.Generator) -> None:
    with FusionDefinition("renumber") as fd:
        x = fd.define_tensor([-1, 1, -1, 3], F32)
        s = fd.ops.squeeze(x, [1])
        p = fd.ops.permute(s, [2, -3, 1])
        fd.add_output(p)
        fd.add_output(fd.ops.neg(s))
    ir = fd.fusion_ir()
    assert "fusion.squeeze %t0 [1] : tensor<?x1x?x3xf32> -> tensor<?x?x3xf32>" in ir
    assert "fusion.permute %t1 [2, 0, 1] : tensor<?x?x3xf32> -> tensor<3x?x?xf32>" in ir
    (a,) = _values(rng, (4, 1, 5, 3))
    permuted, negated = fd.reference([a])
    np.testing.assert_array_equal(permuted, a[:, 0].transpose(2, 0, 1))
    np.testing.assert_array_equal(negated, -a[:, 0])


@pytest.mark.parametrize(
    ("flags", "expected"),
    [([True, False], (1, 5)), ([False, True], (5, 1)), ([True, False, True], (1, 5, 1))],
)
def test_broadcast_adds_dims_of_extent_one(
    rng: np.random.Generator, flags: list[bool], expected: tuple[int, ...]
) -> None:
    with FusionDefinition("bcast") as fd:
        v = fd.define_tensor([-1], F32)
        fd.add_output(fd.ops.set(fd.ops.broadcast(v, flags)))
    (a,) = _values(rng, (5,))
    (out,) = fd.reference([a])
    np.testing.assert_array_equal(out, a.reshape(expected))


def test_expand_takes_extents_and_minus_one(rng: np.random.Generator) -> None:
    with FusionDefinition("expand") as fd:
        m = fd.define_tensor([-1, -1], F32)
        r = fd.define_tensor([1, -1], F32)
        c = fd.define_tensor([-1, 1], F32)
        fd.add_output(fd.ops.add(m, fd.ops.expand(r, [m.size(0), -1])))
        fd.add_output(fd.ops.mul(m, fd.ops.expand(c, m.shape())))
    a, b, d = _values(rng, (4, 6), (1, 6), (4, 1))
    added, multiplied = fd.reference([a, b, d])
    np.testing.assert_allclose(added, a + b)
    np.testing.assert_allclose(multiplied, a * d)


Bad = Callable[[FusionDefinition, Any], Any]
"""A mistaken call on a FusionDefinition."""


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.permute(x, [0, 1]), "fd.ops.permute: argument 'dims' has 2 entries"),
        (lambda fd, x: fd.ops.permute(x, [0, 2, -1]), "argument 'dims' [0, 2, -1] names a dim"),
        (lambda fd, x: fd.ops.permute(x, [0, 1, 3]), "has dim 3, out of range for rank 3"),
        (lambda fd, x: fd.ops.permute(x, 1), "argument 'dims' must be a list of ints, got 1"),
        (lambda fd, x: fd.ops.squeeze(x, [0]), "fd.ops.squeeze: dim 0 has extent dynamic"),
        (lambda fd, x: fd.ops.squeeze(x, [2]), "dim 2 has extent 4; only dims of extent 1"),
        (lambda fd, x: fd.ops.squeeze(x, [1], squeeze_expanded=1), "must be True or False"),
        (lambda fd, x: fd.ops.broadcast(x, [True]), "has 0 False entries; it needs one for each"),
        (lambda fd, x: fd.ops.broadcast(x, [1, 0, 0, 0]), "must be a list of bools"),
        (lambda fd, x: fd.ops.expand(x, [3, 3]), "fd.ops.expand: argument 'shape' has rank 2"),
        (
            lambda fd, x: fd.ops.expand(x, [-1, -1, 5]),
            "entry 2 is 5 but operand dim 2 has extent 4",
        ),
    ],
)
def test_renumbering_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([-1, 1, 4], F32)
        call(fd, x)
    assert message in str(e.value)


def test_squeeze_of_no_dims_is_the_operand() -> None:
    with FusionDefinition("same") as fd:
        x = fd.define_tensor([-1, 1], F32)
        assert fd.ops.squeeze(x, []) is x
        fd.add_output(fd.ops.neg(x))


def transposed_gelu() -> FusionDefinition:
    with FusionDefinition("gelu_t") as fd:
        x = fd.define_tensor([-1, -1], F32)
        b = fd.define_tensor([-1], F32)
        xt = fd.ops.permute(x, [1, 0])
        fd.add_output(fd.ops.gelu(fd.ops.add(xt, fd.ops.broadcast_in_dim(b, xt.shape(), [1]))))
    return fd


@pytest.mark.parametrize(
    ("shape", "scheduler"), [((2048, 4096), "transpose"), ((8, 4096), "pointwise")]
)
def test_a_permute_that_moves_the_innermost_dim_is_read_in_place(
    rng: np.random.Generator, shape: tuple[int, int], scheduler: str
) -> None:
    """The kernel reads x itself (one kernel, x its parameter): the transpose scheduler where
    both transposed dims are at least a tile long, else the pointwise one."""
    fd = transposed_gelu()
    compiled = fd.compile(_values(rng, shape, shape[:1]), arch="sm_90")
    assert [k.scheduler for k in compiled.kernels] == [scheduler]
    assert f"_{scheduler}_0(Tensor<float, 2> t0, Tensor<float, 1> t1, Tensor<float, 2>" in (
        compiled.kernels[0].source
    )


def test_a_permuted_input_is_read_through_by_each_segment(
    rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """A permute of an input is forwarded: every segment that reads it indexes the input
    through it, and no segment writes the permuted tensor."""
    with FusionDefinition("two_uses") as fd:
        x = fd.define_tensor([-1, -1], F32)
        xt = fd.ops.permute(x, [1, 0])
        s = fd.ops.sum(xt, [1], keepdim=True)
        fd.add_output(fd.ops.div(xt, fd.ops.expand(s, xt.shape())))
    try:
        dump.configure("segmenter_log")
        compiled = fd.compile(_values(rng, (512, 256)), arch="sm_90")
    finally:
        dump.configure("")
    log = capsys.readouterr().err
    assert "forwarded (recomputed in each consumer segment): permute %t1" in log
    signatures = [
        next(line for line in k.source.splitlines() if "__global__" in line)
        for k in compiled.kernels
    ]
    # each reads the input t0 itself; no kernel takes or writes the permuted t1
    assert [s.split("(", 2)[2] for s in signatures] == [
        "Tensor<float, 2> t0, Tensor<float, 2> t2) {",
        "Tensor<float, 2> t0, Tensor<float, 2> t2, Tensor<float, 2> t4) {",
    ]
    assert [k.scheduler for k in compiled.kernels] == ["reduction", "transpose"]


def test_a_matmul_epilogue_takes_no_permute_of_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The matmul kernel writes each element of its result where it computed it: a permute of
    the result is a kernel of its own (the differential fuzzer found the matmul scheduler
    taking it as pointwise and writing the product untransposed)."""
    with FusionDefinition("mm_t") as fd:
        a = fd.define_tensor([-1, -1], DataType.BFloat16)
        b = fd.define_tensor([-1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.permute(fd.ops.matmul(a, b), [1, 0]))
    x, y = np.ones((64, 32), np.float32), np.ones((32, 48), np.float32)
    try:
        dump.configure("segmenter_log")
        compiled = fd.compile([x.astype("bfloat16"), y.astype("bfloat16")], arch="sm_90")
    finally:
        dump.configure("")
    assert [k.scheduler for k in compiled.kernels] == ["matmul", "transpose"]
    assert "matmul: the epilogue reads the result of 'fusion.matmul' (%t2) through a permute" in (
        capsys.readouterr().err
    )
