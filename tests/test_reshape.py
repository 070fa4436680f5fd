"""`reshape` on the CPU: the frontend's IR and messages, the reference, the view rule (against
numpy's), the hoisting pass, and what the segmenter and the host lowering make of a reshape
(a view between segments; a copy where strides cannot give it). The GPU results are in
tests/gpu/test_reshape_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX

from fuser import DataType, FusionDefinition
from fuser.dialects.common import op_text
from fuser.dialects.views import ReshapeError, reshape_extents, view_strides
from fuser.errors import DefinitionError, InputError
from fuser.transforms.pipeline import Compilation, run_pipeline
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.segment import NotAViewError, segment_calls

F32 = DataType.Float


def _values(rng: np.random.Generator, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    return [rng.standard_normal(s).astype(np.float32) + 0.5 for s in shapes]


def test_reshape_in_the_ir_and_the_reference(rng: np.random.Generator) -> None:
    with FusionDefinition("rs") as fd:
        x = fd.define_tensor([-1, 768], F32)
        s = fd.define_tensor([4, 6], F32)
        fd.add_output(fd.ops.neg(fd.ops.reshape(x, [-1, 12, 64])))
        fd.add_output(fd.ops.neg(fd.ops.reshape(s, [2, -1])))
        fd.add_output(fd.ops.neg(fd.ops.reshape(s, [4, 6], [3, 8])))  # nvFuser's older form
        assert fd.ops.reshape(s, [4, -1]) is s
    ir = fd.fusion_ir()
    assert "fusion.reshape %t0 : tensor<?x768xf32> -> tensor<?x12x64xf32>" in ir
    assert "fusion.reshape %t1 : tensor<4x6xf32> -> tensor<2x12xf32>" in ir  # -1 inferred
    assert "fusion.reshape %t1 : tensor<4x6xf32> -> tensor<3x8xf32>" in ir
    a, b = _values(rng, (5, 768), (4, 6))
    heads, halves, thirds = fd.reference([a, b])
    np.testing.assert_array_equal(heads, -a.reshape(5, 12, 64))
    np.testing.assert_array_equal(halves, -b.reshape(2, 12))
    np.testing.assert_array_equal(thirds, -b.reshape(3, 8))

    with FusionDefinition("misfit") as fd:
        x = fd.define_tensor([-1, -1], F32)
        fd.add_output(fd.ops.neg(fd.ops.reshape(x, [-1, 4])))
    with pytest.raises(InputError, match=r"'fusion.reshape'.*cannot reshape \[3, 5\] \(15 el"):
        fd.reference(_values(rng, (3, 5)))


Bad = Callable[[FusionDefinition, Any], Any]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.reshape(x, [-1, -1]), "argument 'new_shape' [-1, -1] has more"),
        (lambda fd, x: fd.ops.reshape(x, [5, 5]), "cannot reshape [4, 6] (24 elements) to [5,"),
        (lambda fd, x: fd.ops.reshape(x, [5, -1]), "24 is not a multiple of 5"),
        (lambda fd, x: fd.ops.reshape(x, [-2, 12]), "entry 0 is -2; use -1 or an extent"),
        (lambda fd, x: fd.ops.reshape(x, 24), "argument 'new_shape' must be a list of ints"),
        (
            lambda fd, x: fd.ops.reshape(x, [2.0, 12]),
            "entry 0 must be an int or a constant Int Scalar, got 2.0",
        ),
        (
            lambda fd, x: fd.ops.reshape(x, [fd.define_scalar(DataType.Int), 12]),
            "entry 0 must be an int or a constant Int Scalar, got Scalar(s0",
        ),
        (lambda fd, x: fd.ops.reshape(x, [4, 7], [24]), "'original_shape' entry 1 is 7"),
        (lambda fd, x: fd.ops.reshape(x, [4], [24]), "'original_shape' has 1 entries"),
    ],
)
def test_reshape_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([4, 6], F32)
        call(fd, x)
    assert "fd.ops.reshape" in str(e.value) and message in str(e.value)


def test_a_shape_of_constant_int_scalars_as_thunder_writes_it(rng: np.random.Generator) -> None:
    """`new_shape=[S0, S1, S2]` with each `define_scalar(n, dtype=DataType.Int)`."""
    with FusionDefinition("scalars") as fd:
        x = fd.define_tensor([4, 6], F32)
        sizes = [fd.define_scalar(n, dtype=DataType.Int) for n in (2, 2, 6)]
        fd.add_output(fd.ops.reshape(x, new_shape=sizes))
    a = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(fd.reference([a])[0], a.reshape(2, 2, 6))


def test_the_legacy_form_takes_the_operands_own_extents(rng: np.random.Generator) -> None:
    with FusionDefinition("legacy") as fd:
        x = fd.define_tensor([-1, 6], F32)
        fd.add_output(fd.ops.neg(fd.ops.reshape(x, x.shape(), [-1, 2, 3])))
    (a,) = _values(rng, (4, 6))
    np.testing.assert_array_equal(fd.reference([a])[0], -a.reshape(4, 2, 3))


def test_run_time_extents_of_the_operand_are_kept(rng: np.random.Generator) -> None:
    """`reshape(x, [x.size(0), x.size(1), 32, -1])` (nvFuser's spelling with a symbolic
    batch): the operand's own run-time extents at their dims are kept (`fusion.reshape ...
    kept [0, 1]`), one -1 is inferred; the heads merge back through `z.size(0), z.size(1)`; the
    host program's views carry the kept dims, and the extents follow each new shape."""
    with FusionDefinition("kept") as fd:
        x = fd.define_tensor([-1, -1, 4096], F32)
        y = fd.ops.reshape(x, [x.size(0), x.size(1), 32, -1])
        z = fd.ops.exp(y)
        fd.add_output(fd.ops.permute(y, [0, 2, 1, 3]))
        fd.add_output(fd.ops.reshape(z, [z.size(0), z.size(1), -1]))
    text = str(fd.fusion)  # the dims besides the kept ones are static: so is their reshape
    assert "fusion.reshape %t0 kept [0, 1] : tensor<?x?x4096xf32> -> tensor<?x?x32x128xf32>" in text
    for shape in [(2, 3, 4096), (1, 5, 4096), (0, 2, 4096)]:
        (a,) = _values(rng, shape)
        heads, merged = fd.reference([a])
        np.testing.assert_array_equal(heads, a.reshape(shape[0], shape[1], 32, 128).swapaxes(1, 2))
        np.testing.assert_allclose(merged, np.exp(a), rtol=1e-6)
        assert fd.compile([a], arch="sm_90").kernels
    assert "host.reshape %t0 kept [0, 1]" in str(fd._fusion_compiler().host_ir())


def test_a_kept_reshape_moves_up_a_pointwise_chain(rng: np.random.Generator) -> None:
    """Split, exp, merge, sum with run-time batch and sequence: the reshapes move to the input
    and fold away (`fuser-hoist-views`), so one reduction kernel reads the input, as with
    static extents."""
    with FusionDefinition("kept_chain") as fd:
        x = fd.define_tensor([-1, -1, 64], F32)
        y = fd.ops.reshape(x, [x.size(0), x.size(1), 8, -1])
        e = fd.ops.exp(y)
        fd.add_output(fd.ops.sum(fd.ops.reshape(e, [e.size(0), e.size(1), -1]), [2]))
    for shape in [(2, 3, 64), (0, 3, 64), (1, 1, 64)]:
        (a,) = _values(rng, shape)
        assert [k.scheduler for k in fd.compile([a], arch="sm_90").kernels] == ["reduction"]
        np.testing.assert_allclose(fd.reference([a])[0], np.exp(a).sum(2), rtol=1e-5)


@pytest.mark.parametrize(
    ("new_shape", "message"),
    [
        (lambda x: [x.size(1), -1], "entry 0 is Extent(t0[1] = ?), a run-time extent of dim 1"),
        (lambda x: [x.size(0), -1, -1], "has more than one -1"),
    ],
)
def test_a_run_time_extent_elsewhere_is_refused_with_advice(new_shape: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("dyn") as fd:
        x = fd.define_tensor([-1, -1], F32)
        fd.ops.reshape(x, new_shape(x))
    assert message in str(e.value)
    with (
        pytest.raises(DefinitionError, match="not the operand's own at that dim"),
        FusionDefinition("other") as f2,
    ):
        a = f2.define_tensor([-1, -1], F32)
        b = f2.define_tensor([-1, 4], F32)
        f2.ops.reshape(a, [b.size(0), -1])
    with (  # the other dims static: checked at definition
        pytest.raises(DefinitionError, match=r"keeping dims \[0\] of \[\?, 6\], the others"),
        FusionDefinition("static_rest") as f3,
    ):
        c = f3.define_tensor([-1, 6], F32)
        f3.ops.reshape(c, [c.size(0), 4])


def test_reshape_extents_infers_and_checks() -> None:
    assert reshape_extents([DYNAMIC_INDEX, 4], [6, 2]) == (3, 4)
    assert reshape_extents([DYNAMIC_INDEX, 5], [0, 5]) == (0, 5)
    with pytest.raises(ReshapeError, match="beside a zero extent the \\? could be any"):
        reshape_extents([0, DYNAMIC_INDEX], [0, 5])
    with pytest.raises(ReshapeError, match="infers more than one"):
        reshape_extents([DYNAMIC_INDEX, DYNAMIC_INDEX], [4])
    with pytest.raises(ReshapeError, match="12 elements"):
        reshape_extents([5], [3, 4])


def test_view_strides_agree_with_numpy(rng: np.random.Generator) -> None:
    """Random strided tensors (sliced, permuted) and random reshapes: strides exist exactly
    where numpy reshapes without a copy, and they address the same elements."""
    checked = 0
    for _ in range(2000):
        shape = tuple(int(e) for e in rng.choice([1, 2, 3, 4, 6], size=int(rng.integers(1, 5))))
        big = np.arange(int(np.prod([2 * e for e in shape]))).reshape([2 * e for e in shape])
        steps = tuple(
            slice(0, e * s, s) for e, s in zip(shape, rng.choice([1, 2], len(shape)), strict=True)
        )
        a = big[steps].transpose(rng.permutation(len(shape)))
        n, new = a.size, []
        while n > 1 and len(new) < 4:
            f = int(rng.choice([d for d in range(1, n + 1) if n % d == 0]))
            new.append(f)
            n //= f
        new += [n] if n > 1 else []
        if rng.random() < 0.3:
            new.insert(int(rng.integers(0, len(new) + 1)), 1)
        strides = view_strides(a.shape, [s // a.itemsize for s in a.strides], new)
        view = a.view()
        try:
            view.shape = new  # numpy refuses where a copy is needed
        except AttributeError:
            assert strides is None, (a.shape, a.strides, new)
            continue
        assert strides is not None, (a.shape, a.strides, new)
        made = np.lib.stride_tricks.as_strided(a, new, [s * a.itemsize for s in strides])
        np.testing.assert_array_equal(made, a.reshape(new))
        checked += 1
    assert checked > 500


def _lowered(fd: FusionDefinition, metas: list[TensorMeta]) -> tuple[list[str], str]:
    c = Compilation(fd.fusion.clone(), FusionInfo(tuple(metas), DeviceInfo()))
    lowering = run_pipeline(c)
    return [s.scheduler.name for s in lowering.segments], op_text(lowering.program)


def test_a_reshaped_pointwise_chain_is_one_kernel() -> None:
    with FusionDefinition("chain") as fd:
        a = fd.define_tensor([-1, -1], F32)
        b = fd.define_tensor([-1, -1], F32)
        g = fd.ops.reshape(fd.ops.exp(fd.ops.add(a, b)), [-1, 3, 7])
        fd.add_output(fd.ops.sum(g, [2]))
    metas = [TensorMeta.contiguous((127, 21))] * 2
    kernels, program = _lowered(fd, metas)
    assert kernels == ["reduction"]
    assert program.count("host.reshape") == 2


def flatten() -> FusionDefinition:
    with FusionDefinition("flatten") as fd:
        x = fd.define_tensor([-1, -1], F32)
        fd.add_output(fd.ops.neg(fd.ops.reshape(x, [-1])))
    return fd


def test_a_transposed_input_is_copied_before_its_view() -> None:
    fd = flatten()
    kernels, program = _lowered(fd, [TensorMeta((6, 8), (1, 6))])
    assert kernels == ["pointwise", "pointwise"]
    assert "host.reshape %t0_copy" in program
    kernels, program = _lowered(fd, [TensorMeta.contiguous((6, 8))])
    assert kernels == ["pointwise"] and "host.reshape %t0 :" in program


def test_a_program_that_views_is_not_reused_for_strides_that_need_a_copy() -> None:
    fd = flatten()
    c = Compilation(fd.fusion.clone(), FusionInfo((TensorMeta.contiguous((6, 8)),), DeviceInfo()))
    run_pipeline(c)
    assert len(segment_calls(c.fusion, FusionInfo((TensorMeta.contiguous((8, 6)),), DeviceInfo())))
    with pytest.raises(NotAViewError, match="no strides give it"):
        segment_calls(c.fusion, FusionInfo((TensorMeta((6, 8), (1, 6)),), DeviceInfo()))
    fd.compile([np.ones((6, 8), np.float32)], arch="sm_90")
    (program,) = fd._fusion_compiler().builder._programs
    device = DeviceInfo(arch=program.arch)
    assert program.heuristics_hold(FusionInfo((TensorMeta.contiguous((6, 8)),), device))
    assert not program.heuristics_hold(FusionInfo((TensorMeta((6, 8), (1, 6)),), device))


def test_views_of_a_strided_input_copy_each_tensor_once() -> None:
    """Two reshapes of one transposed input that strides cannot give share one copy of it;
    a chain whose first link is a view (a unit dim added) copies where the second is not."""
    with FusionDefinition("chain") as fd:
        x = fd.define_tensor([-1, -1], F32)
        r = fd.ops.reshape(x, [6, 8, 1])
        fd.add_output(fd.ops.neg(r))
        fd.add_output(fd.ops.neg(fd.ops.reshape(r, [48])))
        fd.add_output(fd.ops.exp(fd.ops.reshape(x, [48])))
        fd.add_output(fd.ops.exp(fd.ops.reshape(x, [4, 12])))
    kernels, program = _lowered(fd, [TensorMeta((6, 8), (1, 6))])
    assert "host.reshape %t0 : tensor<?x?xf32> -> tensor<6x8x1xf32>" in program
    assert program.count("outs(%t0_copy ") == 1 and program.count("host.reshape %t0_copy") == 2
    assert "host.reshape %t1_copy : tensor<6x8x1xf32> -> tensor<48xf32>" in program
    assert len(kernels) == 6  # two copies, a kernel per output


def test_hoisting_stops_at_an_input_that_would_need_a_copy() -> None:
    """reshape(a + b) into an output with a transposed: one kernel writing the output in
    place, not a copy of a and a kernel on views."""
    with FusionDefinition("tr") as fd:
        a = fd.define_tensor([-1, -1], F32)
        b = fd.define_tensor([-1, -1], F32)
        fd.add_output(fd.ops.reshape(fd.ops.add(a, b), [-1]))
    transposed = TensorMeta((6, 8), (1, 6))
    assert _lowered(fd, [transposed, TensorMeta.contiguous((6, 8))])[0] == ["pointwise"]


def test_a_reshape_read_only_for_its_extent() -> None:
    """r.size(0) of a reshaped sum sizes a broadcast: the sum's kernel and the broadcast's
    stay apart (the second reads the view for its extent)."""
    with FusionDefinition("sz") as fd:
        x = fd.define_tensor([-1, -1], F32)
        y = fd.define_tensor([-1], F32)
        r = fd.ops.reshape(fd.ops.sum(x, [1]), [-1, 1])
        fd.add_output(fd.ops.tanh(fd.ops.broadcast_in_dim(y, [r.size(0), r.size(1)], [1])))
    a, b = np.ones((3, 5), np.float32), np.ones((1,), np.float32)
    kernels = fd.compile([a, b], arch="sm_90").kernels
    assert [k.scheduler for k in kernels] == ["reduction", "pointwise"]
    np.testing.assert_allclose(fd.reference([a, b])[0], np.tanh(np.ones((3, 1))))


def test_an_inferred_extent_is_arithmetic_the_memory_plan_can_clone() -> None:
    """The ? a reshape infers is the element count over the static extents (no host.dim of
    the view), so the intermediate it sizes is planned in the workspace."""
    with FusionDefinition("inf") as fd:
        x = fd.define_tensor([-1, -1], F32)
        s = fd.ops.sum(x, [1])
        t = fd.ops.sum(fd.ops.reshape(s, [-1, 2]), [1])
        fd.add_output(fd.ops.sum(t, [0]))
    _, program = _lowered(fd, [TensorMeta.contiguous((6, 8))])
    assert "arith.divui %t0_d0, %c2" in program
    assert "host.allocate(%" not in program and program.count("host.workspace_view") == 2


def test_an_output_that_views_a_result_is_written_in_place() -> None:
    """permute then reshape into an output: the permuting kernel's result is the output."""
    with FusionDefinition("merge") as fd:
        x = fd.define_tensor([2, 12, 16, 64], F32)
        fd.add_output(fd.ops.reshape(fd.ops.permute(x, [0, 2, 1, 3]), [2, 16, 768]))
    kernels, program = _lowered(fd, [TensorMeta.contiguous((2, 12, 16, 64))])
    assert len(kernels) == 1
    assert "host.reshape %t1 : tensor<2x16x12x64xf32> -> tensor<2x16x768xf32>" in program
    assert "host.deallocate" not in program
