"""Outputs that are views of fusion inputs (reshapes, slices, permutes), returned as views of
them as nvFuser aliases them, on the CPU: the segmenter leaves their ops between segments
(no kernel), the program takes them as `host.reshape`/`host.slice`/`host.permute` of the
argument, and the evaluator (over host memory) returns a view of the caller's array. Where a
view cannot be had (a permute a kernel also reads, a reshape the input's strides cannot give),
the output is computed as before. tests/gpu/test_returned_views_gpu.py runs them on the GPU
with torch tensors, DeviceArrays and numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_host_evaluator import one_device
from test_host_lowering import run_lowered

from fuser import DataType, FusionDefinition
from fuser.transforms.lower_to_host import lower_fusion
from fuser.transforms.schedulers.info import DeviceInfo, FusionInfo, TensorMeta
from fuser.transforms.segment import segment_fusion

pytestmark = pytest.mark.usefixtures(one_device.__name__)

F32 = DataType.Float


def lowered(fd: FusionDefinition, inputs: list[np.ndarray]) -> Any:
    """`fd`'s fusion segmented and lowered for the arrays' own strides."""
    fusion = fd.fusion.clone()
    metas = tuple(
        TensorMeta(a.shape, tuple(s // a.itemsize for s in a.strides), 16) for a in inputs
    )
    info = FusionInfo(metas, DeviceInfo())
    segment_fusion(fusion, info)
    return lower_fusion(fusion, info)


def heads_split(fd: FusionDefinition, x: Any) -> Any:
    v = fd.ops.reshape(x, new_shape=[2, 3, 4, 5])
    return fd.ops.permute(v, dims=[0, 2, 1, 3])


def test_a_heads_split_is_a_view_of_the_input(rng: np.random.Generator) -> None:
    with FusionDefinition("heads") as fd:
        x = fd.define_tensor([-1, -1, 20], F32)
        fd.add_output(heads_split(fd, x))
    a = rng.standard_normal((2, 3, 20)).astype(np.float32)
    lowering = lowered(fd, [a])
    assert lowering.segments == ()  # no kernel
    text = str(lowering.program)
    assert "host.reshape %t0" in text and "host.permute %t1 [0, 2, 1, 3]" in text
    (out,), _ = run_lowered(lowering, [a])
    expected = a.reshape(2, 3, 4, 5).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(out, expected)
    assert np.shares_memory(out, a) and out.strides == expected.strides
    a[1, 2, 7] = 42.0  # the output is a view: it sees the input change
    assert out[1, 1, 2, 2] == 42.0
    assert [k.scheduler for k in fd.compile([a], arch="sm_90").kernels] == []


def test_a_slice_and_a_computed_output(rng: np.random.Generator) -> None:
    """A slice of the input is returned as a view beside a kernel's output; a permute that
    the kernel also reads is read through by the kernel, and its output is computed."""
    with FusionDefinition("mixed") as fd:
        x = fd.define_tensor([-1, -1], F32)
        fd.add_output(fd.ops.slice(x, [1, 2], [4, 7]))
        p = fd.ops.permute(x, dims=[1, 0])
        fd.add_output(p)
        fd.add_output(fd.ops.exp(p))
    a = rng.standard_normal((5, 9)).astype(np.float32)
    lowering = lowered(fd, [a])
    assert [s.scheduler.name for s in lowering.segments] == ["pointwise"]
    got, _ = run_lowered(lowering, [a])
    np.testing.assert_array_equal(got[0], a[1:4, 2:7])
    assert np.shares_memory(got[0], a)
    np.testing.assert_array_equal(got[1], a.T)
    assert not np.shares_memory(got[1], a)  # written by the kernel
    np.testing.assert_allclose(got[2], np.exp(a.T), rtol=1e-6)


def test_a_reshape_no_strides_give_is_computed(rng: np.random.Generator) -> None:
    """A transposed input flattened: no strides view it, so a kernel copies it; with a
    contiguous input the same definition is a view."""
    with FusionDefinition("flat") as fd:
        x = fd.define_tensor([4, 6], F32)
        fd.add_output(fd.ops.reshape(x, new_shape=[24]))
    t = rng.standard_normal((6, 4)).astype(np.float32).T
    lowering = lowered(fd, [t])
    assert len(lowering.segments) == 1
    (out,), _ = run_lowered(lowering, [t])
    np.testing.assert_array_equal(out, t.reshape(24))
    assert not np.shares_memory(out, t)
    c = np.ascontiguousarray(t)
    lowering = lowered(fd, [c])
    assert lowering.segments == ()
    (out,), _ = run_lowered(lowering, [c])
    assert np.shares_memory(out, c)
    np.testing.assert_array_equal(out, c.reshape(24))


def test_zero_size_and_odd_extents(rng: np.random.Generator) -> None:
    with FusionDefinition("odd") as fd:
        x = fd.define_tensor([-1, -1, -1], F32)
        fd.add_output(fd.ops.permute(fd.ops.slice(x, [0, 1, 0], [x.size(0), 3, 3]), [2, 0, 1]))
    for shape in [(0, 3, 4), (1, 3, 3), (127, 5, 3)]:
        a = rng.standard_normal(shape).astype(np.float32)
        (out,), _ = run_lowered(lowered(fd, [a]), [a])
        np.testing.assert_array_equal(out, a[:, 1:3, :3].transpose(2, 0, 1))


def test_a_view_written_into_an_input_is_computed(rng: np.random.Generator) -> None:
    """`add_output(permute(x), alias_input=y)` writes the values into y after the run: they
    are a tensor of their own (a kernel writes them), also where the value is returned too."""
    with FusionDefinition("written") as fd:
        x = fd.define_tensor([-1, -1], F32)
        y = fd.define_tensor([-1, -1], F32)
        p = fd.ops.permute(x, dims=[1, 0])
        fd.add_output(p, alias_input=y)
        fd.add_output(p)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = np.zeros((5, 3), np.float32)
    lowering = lowered(fd, [a, b])
    assert [s.scheduler.name for s in lowering.segments] == ["pointwise"]
    assert "host.permute" not in str(lowering.program)


def test_a_view_of_an_input_written_into_is_computed(rng: np.random.Generator) -> None:
    """`add_output(x + 1, alias_input=x)` writes into x after the run: a view of x returned
    beside it would show the values written, so the kernel writes that output too."""
    with FusionDefinition("updated") as fd:
        x = fd.define_tensor([-1, -1], F32)
        fd.add_output(fd.ops.add(x, 1.0), alias_input=x)
        fd.add_output(fd.ops.permute(x, dims=[1, 0]))
    a = rng.standard_normal((3, 5)).astype(np.float32)
    lowering = lowered(fd, [a])
    assert "host.permute" not in str(lowering.program)
    assert any("fusion.permute" in str(s.fusion) for s in lowering.segments)


def test_an_unsegmented_fusion_is_a_view_only_where_strides_give_it() -> None:
    """`fuser-lower-host` on a fusion never segmented: a reshape output the input's strides
    give is a view (no segment); one they do not give is left to the schedulers, which name
    the reshape (the segmenter would have copied the input first)."""
    from fuser.transforms.schedulers.base import SchedulingError

    with FusionDefinition("flat") as fd:
        x = fd.define_tensor([4, 6], F32)
        fd.add_output(fd.ops.reshape(x, new_shape=[24]))
    contiguous = FusionInfo((TensorMeta.contiguous((4, 6)),), DeviceInfo())
    assert lower_fusion(fd.fusion.clone(), contiguous).segments == ()
    transposed = FusionInfo((TensorMeta((4, 6), (1, 4), 16),), DeviceInfo())
    with pytest.raises(SchedulingError, match=r"fusion\.reshape"):
        lower_fusion(fd.fusion.clone(), transposed)
