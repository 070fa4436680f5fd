"""Outputs in another layout than row-major (nvFuser's `add_output(t, stride_order=)` and
`fd.ops.stride_order`) on the GPU: every permutation of a rank-3 output, of a pointwise result
and of a reduction's, over odd and zero extents, f32, f16 and bf16, from a transposed input; the
values are the reference's and the strides follow the order (dense). torch outputs are permuted
views of what the kernels wrote, `DeviceArray` outputs strided views, numpy outputs transposed
arrays. tests/test_nvfuser_api.py has the CPU side (the IR and the definition's text).

Every test here is marked `gpu` and skipped (see conftest.py) where no device is present.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from gpu_helpers import DTYPES, assert_close, numpy_of, random_of, torch_of

from fuser import DataType, FusionDefinition
from fuser.fuzz.differential import dense_strides
from fuser.runtime.arrays import DeviceArray

pytestmark = pytest.mark.gpu

ORDERS = list(itertools.permutations(range(3)))


def _layouts(dtype: DataType, order: tuple[int, ...], through_op: bool) -> FusionDefinition:
    """exp(x) + 1 in `order` (by `fd.ops.stride_order` or `add_output`), a sum over dim 1 in the
    reversed order of the other two dims, and exp(x) + 1 again row-major."""
    with FusionDefinition(f"layouts_{dtype.name}_{''.join(map(str, order))}_{through_op}") as fd:
        x = fd.define_tensor([-1, -1, -1], dtype)
        y = fd.ops.add(fd.ops.exp(x), 1.0)
        if through_op:
            fd.add_output(fd.ops.stride_order(y, list(order)))
        else:
            fd.add_output(y, stride_order=list(order))
        fd.add_output(fd.ops.sum(x, [1]), stride_order=[0, 1])
        fd.add_output(y)
    return fd


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "".join(map(str, o)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 127, 33), (4, 0, 3), (1, 1, 4097)])
def test_outputs_come_back_in_their_stride_order(
    rng: np.random.Generator, torch: Any, dtype: DataType, order: tuple[int, ...], shape: Any
) -> None:
    fd = _layouts(dtype, order, through_op=order[0] % 2 == 0)
    a = random_of(rng, shape[::-1], dtype).transpose(2, 1, 0)  # read through its strides
    view = torch_of(torch, np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    first, summed, plain = fd.execute([view])
    refs = fd.reference([np.ascontiguousarray(a)], compute_dtype=np.float64)
    for i, (out, ref) in enumerate(zip((first, summed, plain), refs, strict=True)):
        assert_close(numpy_of(torch, out), ref, f"{fd.name} output {i}")
    assert first.stride() == dense_strides(shape, order)
    assert summed.stride() == dense_strides((shape[0], shape[2]), (0, 1))
    assert plain.is_contiguous()


@pytest.mark.parametrize("order", [(3, 2, 1, 0), (0, 1, 2, 3), (3, 1, 2, 0)])
def test_a_view_of_an_input_in_a_stride_order_is_a_dense_copy(
    rng: np.random.Generator, torch: Any, order: tuple[int, ...]
) -> None:
    """Thunder's `stride_order(permute(x), [3, 2, 1, 0])`: without the order the permute is a
    view of the caller's tensor; with any order (row-major included) a dense tensor of its own
    in that order. The input itself, asked for an order, is copied too."""
    with FusionDefinition(f"heads_{''.join(map(str, order))}") as fd:
        x = fd.define_tensor([-1, -1, -1, -1], DataType.BFloat16)
        fd.add_output(fd.ops.stride_order(fd.ops.permute(x, [0, 2, 1, 3]), list(order)))
        fd.add_output(x, stride_order=[0, 1, 2, 3])
    a = random_of(rng, (2, 127, 3, 8), DataType.BFloat16)
    view = torch_of(torch, a)
    heads, same = fd.execute([view])
    expected = a.transpose(0, 2, 1, 3)
    assert heads.stride() == dense_strides(expected.shape, order)
    assert same.stride() == dense_strides(a.shape, (0, 1, 2, 3))
    assert heads.data_ptr() != view.data_ptr() and same.data_ptr() != view.data_ptr()
    np.testing.assert_array_equal(numpy_of(torch, heads), expected)
    np.testing.assert_array_equal(numpy_of(torch, same), a)


def test_device_array_and_numpy_outputs(rng: np.random.Generator, stream: Any) -> None:
    """DeviceArray inputs give strided DeviceArray outputs, which read back and feed another
    fusion; numpy inputs give transposed numpy arrays."""
    fd = _layouts(DataType.Float, (0, 2, 1), through_op=False)
    a = random_of(rng, (3, 129, 5), DataType.Float)
    expected = fd.reference([a], compute_dtype=np.float64)
    first, summed, plain = fd.execute([DeviceArray.from_numpy(a, stream)])
    assert isinstance(first, DeviceArray) and not first.is_contiguous()
    assert first.element_strides == dense_strides(a.shape, (0, 2, 1))
    for out, ref in zip((first, summed, plain), expected, strict=True):
        assert_close(out.numpy(), ref, "DeviceArray output")
    with FusionDefinition("after") as neg:  # a strided DeviceArray as an input
        y = neg.define_tensor([-1, -1, -1], DataType.Float)
        neg.add_output(neg.ops.neg(y))
    (negated,) = neg.execute([first])
    assert_close(negated.numpy(), -expected[0], "a permuted output read again")
    outs = fd.execute([a])
    assert outs[0].strides == tuple(s * 4 for s in dense_strides(a.shape, (0, 2, 1)))
    for out, ref in zip(outs, expected, strict=True):
        assert_close(out, ref, "numpy output")
