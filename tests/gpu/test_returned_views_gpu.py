"""Outputs returned as views of inputs on the GPU, as nvFuser aliases them: no kernel runs, and
`execute` hands back a view of the caller's tensor. torch inputs give `as_strided` views of the
input's storage (a heads split in f32, f16 and bf16 over odd and zero extents, a slice at an
offset into a transposed input); `DeviceArray` inputs give strided `DeviceArray` views, read
back and passed on to another fusion; numpy inputs give numpy views. A transposed input
flattened cannot be viewed: a kernel copies it, as before. tests/test_returned_views.py has the
CPU side.

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_helpers import DTYPES, check_against_reference, numpy_of, random_of, schedulers, torch_of

from fuser import DataType, FusionDefinition
from fuser.runtime.arrays import DeviceArray

pytestmark = pytest.mark.gpu


def heads_split(dtype: DataType, b: int, t: int, h: int, d: int) -> FusionDefinition:
    """[b, t, h*d] -> [b, h, t, d]: a reshape and a permute, returned."""
    with FusionDefinition(f"heads_{dtype.name}_{t}") as fd:
        x = fd.define_tensor([-1, -1, h * d], dtype)
        fd.add_output(fd.ops.permute(fd.ops.reshape(x, [b, t, h, d]), [0, 2, 1, 3]))
    return fd


@pytest.mark.parametrize("t", [0, 1, 3, 127, 4097])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_a_heads_split_is_a_view_of_the_torch_input(
    rng: np.random.Generator, torch: Any, dtype: DataType, t: int
) -> None:
    b, h, d = 2, 3, 5
    fd = heads_split(dtype, b, t, h, d)
    x = random_of(rng, (b, t, h * d), dtype)
    view = torch_of(torch, x)
    check_against_reference(fd, torch, [view], [x])
    (out,) = fd.execute([view])
    expected = view.view(b, t, h, d).permute(0, 2, 1, 3)
    assert out.data_ptr() == view.data_ptr() and out.stride() == expected.stride()
    assert torch.equal(out, expected)
    assert schedulers(fd, [x]) == []
    if t:
        view[1, t - 1, 7] = 3.0  # the output sees the input change
        assert out[1, 1, t - 1, 2].item() == 3.0


def test_a_slice_of_a_transposed_input_at_an_offset(rng: np.random.Generator, torch: Any) -> None:
    with FusionDefinition("sliced") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.slice(x, [2, 1], [7, 4]))
        fd.add_output(fd.ops.exp(x))
    a = random_of(rng, (9, 13), DataType.Float)
    xt = torch_of(torch, a).t()  # [13, 9], strides (1, 13)
    check_against_reference(fd, torch, [xt], [a.T.copy()])
    sliced, _ = fd.execute([xt])
    assert sliced.data_ptr() == xt[2:7, 1:4].data_ptr() and sliced.stride() == (1, 13)
    np.testing.assert_array_equal(numpy_of(torch, sliced), a.T[2:7, 1:4])
    assert schedulers(fd, [xt]) == ["pointwise"]  # exp only


def test_device_array_inputs_give_strided_device_array_views(
    rng: np.random.Generator, stream: Any
) -> None:
    """On the input's own (non-blocking) stream: the view's reads are ordered after it."""
    b, t, h, d = 2, 127, 3, 5
    fd = heads_split(DataType.Float, b, t, h, d)
    x = random_of(rng, (b, t, h * d), DataType.Float)
    arr = DeviceArray.from_numpy(x, stream)
    (out,) = fd.execute([arr])
    expected = x.reshape(b, t, h, d).transpose(0, 2, 1, 3)
    assert isinstance(out, DeviceArray) and out.ptr == arr.ptr and out.stream is arr.stream
    assert out.strides == expected.strides and not out.is_contiguous()
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(out.copy().numpy(), expected)
    with FusionDefinition("after") as exp_fd:  # a strided DeviceArray as an input
        y = exp_fd.define_tensor([-1, -1, -1, -1], DataType.Float)
        exp_fd.add_output(exp_fd.ops.neg(y))
    (neg,) = exp_fd.execute([out])
    np.testing.assert_array_equal(neg.numpy(), -expected)


def test_numpy_inputs_give_numpy_views(rng: np.random.Generator) -> None:
    b, t, h, d = 2, 3, 3, 5
    fd = heads_split(DataType.Half, b, t, h, d)
    x = random_of(rng, (b, t, h * d), DataType.Half)
    (out,) = fd.execute([x])
    np.testing.assert_array_equal(out, x.reshape(b, t, h, d).transpose(0, 2, 1, 3))
    assert np.shares_memory(out, x)


@pytest.mark.parametrize("transposed_first", [True, False])
def test_a_transposed_input_flattened_is_copied(
    rng: np.random.Generator, torch: Any, transposed_first: bool
) -> None:
    """No strides view x^T flat: a kernel writes the output; a contiguous x is a view, in
    either order (a program is reused only for the same views)."""
    with FusionDefinition("flat") as fd:
        x = fd.define_tensor([-1, -1], DataType.Float)
        fd.add_output(fd.ops.reshape(x, [-1]))
    a = random_of(rng, (33, 129), DataType.Float)
    transposed = torch_of(torch, a).t()
    contiguous = torch_of(torch, a.T.copy())
    calls = [transposed, contiguous] if transposed_first else [contiguous, transposed]
    for view in calls + calls:
        (out,) = fd.execute([view])
        np.testing.assert_array_equal(numpy_of(torch, out), a.T.reshape(-1))
        assert (out.data_ptr() == view.data_ptr()) == (view is contiguous)
    assert len(schedulers(fd, [transposed])) == 1  # the copy
    assert schedulers(fd, [contiguous]) == []
