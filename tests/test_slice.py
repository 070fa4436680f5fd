"""`slice` on the CPU: the frontend's IR and messages, the reference (torch's reading of the
bounds, checked against Python's `range`), the hoisting pass, and what the segmenter, the host
lowering and the evaluator make of a slice (a view between segments: strides times steps, the
pointer moved to the first element, its alignment what the offset leaves). The GPU results are
in tests/gpu/test_slice_gpu.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fuser import DataType, FusionDefinition
from fuser.dialects.common import op_text
from fuser.dialects.views import END, slice_range, slice_view
from fuser.errors import DefinitionError
from fuser.transforms.pipeline import Compilation, run_pipeline
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.segment import segment_calls

F32 = DataType.Float


def test_slice_range_reads_bounds_as_python_does() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5000):
        n = int(rng.integers(0, 12))
        start = int(rng.integers(-15, 15))
        stop = END if rng.random() < 0.2 else int(rng.integers(-15, 15))
        step = int(rng.integers(1, 5))
        first, count = slice_range(start, stop, step, n)
        kept = range(n)[slice(start, None if stop == END else stop, step)]
        assert count == len(kept) and (count == 0 or first == kept[0])


def test_slice_view_addresses_numpys_elements() -> None:
    """The extents, strides and offset of a slice of a strided tensor address the elements
    numpy's slicing picks (empty slices included)."""
    flat = np.arange(6 * 8 * 5)
    shape, strides = (5, 6, 8), (1, 40, 5)  # [6, 8, 5] transposed to [5, 6, 8]
    source = np.lib.stride_tricks.as_strided(flat, shape, [s * flat.itemsize for s in strides])
    cases = [
        ([1, -5, 0], [END, 7, -1], [2, 3, 1]),
        ([0, 0, 0], [5, 6, 8], [1, 1, 1]),
        ([4, 2, -3], [2, 9, END], [1, 2, 2]),
        ([-9, -1, 7], [9, END, 100], [3, 1, 4]),
    ]
    for starts, stops, steps in cases:
        extents, view, offset = slice_view(starts, stops, steps, shape, strides)
        index = offset + sum(np.indices(extents)[d] * view[d] for d in range(3))
        picked = source[
            tuple(
                slice(a, None if b == END else b, c)
                for a, b, c in zip(starts, stops, steps, strict=True)
            )
        ]
        np.testing.assert_array_equal(flat[index], picked)


def test_slice_in_the_ir_and_the_reference(rng: np.random.Generator) -> None:
    with FusionDefinition("sl") as fd:
        x = fd.define_tensor([-1, 64, 9], F32)
        fd.add_output(fd.ops.neg(fd.ops.slice(x, [0, 32, 0], [x.size(0), 64, 8], [1, 1, 2])))
        fd.add_output(fd.ops.neg(fd.ops.slice(x, [-3, -10, 0], [-1, -8, 100])))
        assert fd.ops.slice(x, [0, 0, 0], [x.size(0), 64, 9]) is x  # the whole tensor
    ir = fd.fusion_ir()
    assert "fusion.slice %t0 [:, 32:64, :8:2] : tensor<?x64x9xf32> -> tensor<?x32x4xf32>" in ir
    assert "fusion.slice %t0 [-3:-1, -10:-8, :100] : tensor<?x64x9xf32> -> tensor<?x2x9xf32>" in ir
    for rows in (0, 1, 5):
        a = rng.standard_normal((rows, 64, 9)).astype(np.float32)
        first, second = fd.reference([a])
        np.testing.assert_array_equal(first, -a[:, 32:64, 0:8:2])
        np.testing.assert_array_equal(second, -a[-3:-1, -10:-8, :100])


Bad = Callable[[FusionDefinition, Any], Any]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda fd, x: fd.ops.slice(x, [0], [2]), "'start_indices' has 1 entries; the operand has"),
        (lambda fd, x: fd.ops.slice(x, [0, 0], [2, 2], [1, 0]), "'strides': step 0 of dim 1 must"),
        (lambda fd, x: fd.ops.slice(x, [0, 0.5], [2, 2]), "'start_indices' entry 1 must be an int"),
        (lambda fd, x: fd.ops.slice(x, 0, [2, 2]), "'start_indices' must be a list of ints"),
        (
            lambda fd, x: fd.ops.slice(x, [0, 0], [x.size(1), 2]),
            "entry 0 must be an int or a constant Scalar (a run-time extent is an end only",
        ),
        (
            lambda fd, x: fd.ops.slice(x, [-1, 0], [2, 2], manual_normalization=True),
            "entry 0 is -1, but manual_normalization promises bounds in [0, extent]",
        ),
        (lambda fd, x: fd.ops.slice(fd.define_scalar(1.0), [0], [1]), "argument 'arg'"),
    ],
)
def test_slice_mistakes_name_the_op_and_argument(call: Bad, message: str) -> None:
    with pytest.raises(DefinitionError) as e, FusionDefinition("bad") as fd:
        x = fd.define_tensor([-1, -1], F32)
        call(fd, x)
    assert "fd.ops.slice" in str(e.value) and message in str(e.value)


def test_a_0d_tensor_has_nothing_to_slice() -> None:
    with (
        pytest.raises(DefinitionError, match="0-d tensor; there is no dim"),
        FusionDefinition("zero") as fd,
    ):
        fd.ops.slice(fd.define_tensor([], F32), [], [])


def _lowered(fd: FusionDefinition, metas: list[TensorMeta]) -> tuple[list[str], str]:
    c = Compilation(fd.fusion.clone(), FusionInfo(tuple(metas), DeviceInfo()))
    lowering = run_pipeline(c)
    return [s.scheduler.name for s in lowering.segments], op_text(lowering.program)


def rotary_halves() -> FusionDefinition:
    """q = permute(x) into heads; out = (q * c)[..., :32] - q[..., 32:]: the halves a rotary
    embedding rotates, before the cat that joins them."""
    with FusionDefinition("halves") as fd:
        x = fd.define_tensor([-1, -1, 8, 64], F32)  # [B, T, H, D]
        c = fd.define_tensor([-1, 8, -1, 64], F32)  # [B, H, T, D]
        q = fd.ops.permute(x, [0, 2, 1, 3])
        lo = fd.ops.slice(fd.ops.mul(q, c), [0, 0, 0, 0], [q.size(0), 8, q.size(2), 32])
        hi = fd.ops.slice(q, [0, 0, 0, 32], [q.size(0), 8, q.size(2), 64])
        fd.add_output(fd.ops.sub(lo, hi))
    return fd


def test_slices_of_a_permuted_chain_are_one_kernel_reading_views(
    rng: np.random.Generator,
) -> None:
    fd = rotary_halves()
    metas = [TensorMeta.contiguous((2, 5, 8, 64)), TensorMeta.contiguous((2, 8, 5, 64))]
    kernels, program = _lowered(fd, metas)
    assert len(kernels) == 1
    assert program.count("host.slice %t0 ") == 2 and program.count("host.slice %t1 ") == 1
    a = rng.standard_normal((2, 5, 8, 64)).astype(np.float32)
    c = rng.standard_normal((2, 8, 5, 64)).astype(np.float32)
    q = a.transpose(0, 2, 1, 3)
    np.testing.assert_allclose(fd.reference([a, c])[0], (q * c)[..., :32] - q[..., 32:], rtol=1e-6)
    assert len(fd.compile([a, c], arch="sm_90").kernels) == 1


def test_a_slice_offset_lowers_the_alignment_a_kernel_sees() -> None:
    """x[:, 1:] of an f16 input starts 2 bytes in: the segment sees 2-byte alignment (no
    vector loads), x[:, 8:] a 16-byte aligned view."""
    with FusionDefinition("shift") as fd:
        x = fd.define_tensor([-1, -1], DataType.Half)
        fd.add_output(fd.ops.neg(fd.ops.slice(x, [0, 1], [x.size(0), x.size(1)])))
        fd.add_output(fd.ops.neg(fd.ops.slice(x, [0, 8], [x.size(0), x.size(1)])))
    c = Compilation(fd.fusion.clone(), FusionInfo((TensorMeta.contiguous((4, 72)),), DeviceInfo()))
    run_pipeline(c)
    metas = [call.info.inputs[0] for call in segment_calls(c.fusion, c.info)]
    assert metas == [TensorMeta((4, 71), (72, 1), 2), TensorMeta((4, 64), (72, 1), 16)]


def test_a_reshape_of_a_slice_is_copied_where_strides_cannot_give_it() -> None:
    """x[:, :3] of a contiguous [6, 8] input has strides (8, 1): flattening it needs a copy;
    x[:, ::2] has strides (8, 2), which flatten (8 == 2 * 4): a view of a view."""
    with FusionDefinition("flat") as fd:
        x = fd.define_tensor([6, 8], F32)
        fd.add_output(fd.ops.exp(fd.ops.reshape(fd.ops.slice(x, [0, 0], [6, 3]), [18])))
        fd.add_output(fd.ops.exp(fd.ops.reshape(fd.ops.slice(x, [0, 0], [6, 8], [1, 2]), [24])))
    kernels, program = _lowered(fd, [TensorMeta.contiguous((6, 8))])
    assert program.count("outs(%t1_copy ") == 1 and len(kernels) == 3
    assert "host.reshape %t1_copy : tensor<6x3xf32> -> tensor<18xf32>" in program
    assert "host.reshape %t4 : tensor<6x4xf32> -> tensor<24xf32>" in program
    a = np.arange(48, dtype=np.float32).reshape(6, 8) / 48
    first, second = fd.reference([a])
    np.testing.assert_allclose(first, np.exp(a[:, :3].reshape(18)), rtol=1e-6)
    np.testing.assert_allclose(second, np.exp(a[:, ::2].reshape(24)), rtol=1e-6)


def test_a_slice_of_a_result_is_a_view_between_two_kernels() -> None:
    with FusionDefinition("rows") as fd:
        x = fd.define_tensor([-1, -1], F32)
        s = fd.ops.sum(x, [1])
        fd.add_output(fd.ops.exp(fd.ops.slice(s, [-3], [END], [2])))
    kernels, program = _lowered(fd, [TensorMeta.contiguous((7, 300))])
    assert kernels == ["reduction", "pointwise"]
    assert "host.slice %t1 [-3::2] : tensor<?xf32> -> tensor<?xf32>" in program
    a = np.arange(7 * 300, dtype=np.float32).reshape(7, 300) / 1e5
    np.testing.assert_allclose(fd.reference([a])[0], np.exp(a.sum(1)[-3::2]), rtol=1e-6)


def test_hoisting_slices_through_shared_operands_stays_linear() -> None:
    """A slice of y16 = y15 + y15 (...) of x, and of six stacked y * sigmoid(y): each operand
    read twice is sliced once, so the IR keeps its size (it doubled per level before)."""
    from fuser.transforms.hoist_views import hoist_views

    for depth, step in ((16, "add"), (6, "silu")):
        with FusionDefinition("deep") as fd:
            x = fd.define_tensor([8, 64], F32)
            y = x
            for _ in range(depth):
                y = fd.ops.add(y, y) if step == "add" else fd.ops.mul(y, fd.ops.sigmoid(y))
            fd.add_output(fd.ops.slice(y, [0, 0], [8, 32]))
        fusion = fd.fusion.clone()
        before = len(list(fusion.body.block.ops))
        hoist_views(fusion)
        ops = list(fusion.body.block.ops)
        assert len(ops) == before and sum(op.name == "fusion.slice" for op in ops) == 1
        assert ops[0].name == "fusion.slice"  # of x, first


def test_manual_normalization_as_nvfuser_prints_it() -> None:
    """nvFuser's printed definitions pass manual_normalization=0 (or 1); 2 is a mistake."""
    with FusionDefinition("printed") as fd:
        x = fd.define_tensor([4, 6], F32)
        fd.add_output(fd.ops.slice(x, [0, 2], [4, 6], [1, 1], manual_normalization=0))
        fd.add_output(fd.ops.slice(x, [1, 0], [3, 6], [1, 2], manual_normalization=1))
        assert fd.ops.slice(x, [np.int64(0), 0], [4, np.int32(6)]) is x  # numpy ints are ints
        with pytest.raises(DefinitionError, match="'manual_normalization' must be True or False"):
            fd.ops.slice(x, [0, 0], [4, 6], manual_normalization=2)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    first, second = fd.reference([a])
    np.testing.assert_array_equal(first, a[:, 2:])
    np.testing.assert_array_equal(second, a[1:3, ::2])
