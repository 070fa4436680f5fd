"""TensorView reading (numpy, fake torch, __cuda_array_interface__, DLPack) without a GPU."""

from __future__ import annotations

import gc
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from fuser.errors import CudaError, InputError
from fuser.runtime import arrays, driver
from fuser.runtime.arrays import (
    BFLOAT16,
    KDL_CPU,
    DeviceArray,
    TensorView,
    dlpack_dtype,
    make_dlpack_capsule,
    numpy_dtype_of_dlpack,
    parse_dlpack_capsule,
    view_of,
)

DTYPES = [
    np.dtype(np.float16),
    BFLOAT16,
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.uint32),
    np.dtype(np.bool_),
    np.dtype(np.complex64),
]


def _random(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(
            dtype
        )
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _element_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


# --------------------------------------------------------------------------------------------
# numpy


@pytest.mark.parametrize("shape", [(1,), (3,), (127,), (3, 127), (1, 3, 5)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_view_of_contiguous_numpy(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype
) -> None:
    a = _random(shape, dtype, rng)
    v = view_of(a)
    assert v.kind == "host" and v.device == -1
    assert v.ptr == a.ctypes.data
    assert v.shape == shape and v.dtype == dtype
    assert v.strides == _element_strides(a)
    assert v.is_contiguous() and v.numel == a.size and v.ndim == len(shape)
    assert v.owner is a


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[:, ::2],
        lambda a: a.T,
        lambda a: a[::-1, 1:],
        lambda a: a[1:2, 3::5],
        lambda a: np.broadcast_to(a[:1], a.shape),
    ],
    ids=["step", "transpose", "reversed", "offset", "broadcast"],
)
def test_view_of_non_contiguous_numpy(rng: np.random.Generator, make: Any) -> None:
    base = rng.standard_normal((7, 127)).astype(np.float32)
    a = make(base)
    v = view_of(a)
    assert v.ptr == a.ctypes.data
    assert v.shape == a.shape
    assert v.strides == _element_strides(a)
    assert not v.is_contiguous()
    # the view addresses exactly the numpy elements
    flat = np.lib.stride_tricks.as_strided(
        base.reshape(-1)[(v.ptr - base.ctypes.data) // 4 :],
        shape=v.shape,
        strides=tuple(s * 4 for s in v.strides),
    )
    np.testing.assert_array_equal(flat, a)


def test_view_of_numpy_rejects_unaligned_strides() -> None:
    records = np.zeros(5, dtype=[("x", "<f4"), ("tag", "u1")])
    with pytest.raises(InputError, match="stride of 5 bytes"):
        view_of(records["x"])
    with pytest.raises(InputError, match="unsupported numpy dtype"):
        view_of(records)


# --------------------------------------------------------------------------------------------
# __cuda_array_interface__


class FakeCai:
    """An object in the style of cupy/numba arrays: only __cuda_array_interface__."""

    def __init__(self, interface: dict[str, Any]) -> None:
        self.__cuda_array_interface__ = interface


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read interfaces without asking the driver which device a (fake) pointer is on."""
    monkeypatch.setattr(driver, "gpu_available", lambda: False)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != BFLOAT16], ids=str)
def test_view_of_cai_strided(rng: np.random.Generator, no_gpu: None, dtype: np.dtype) -> None:
    ptr = int(rng.integers(1, 1 << 40)) * 512
    shape = (3, 127)
    strides = (int(rng.integers(200, 300)) * dtype.itemsize, 2 * dtype.itemsize)
    obj = FakeCai(
        {
            "shape": shape,
            "typestr": dtype.str,
            "data": (ptr, False),
            "strides": strides,
            "version": 3,
        }
    )
    v = view_of(obj)
    assert (v.ptr, v.shape, v.dtype, v.kind) == (ptr, shape, dtype, "cuda")
    assert v.strides == (strides[0] // dtype.itemsize, 2)
    assert v.owner is obj


def test_view_of_cai_contiguous(rng: np.random.Generator, no_gpu: None) -> None:
    ptr = int(rng.integers(1, 1 << 40)) * 256
    obj = FakeCai({"shape": (1, 3, 5), "typestr": "<f2", "data": (ptr, True), "version": 2})
    v = view_of(obj)
    assert v.strides == (15, 5, 1) and v.dtype == np.float16 and v.is_contiguous()


def test_view_of_cai_errors(no_gpu: None) -> None:
    base = {"shape": (4,), "typestr": "<f4", "data": (4096, False), "version": 3}
    with pytest.raises(InputError, match="masked"):
        view_of(FakeCai({**base, "mask": object()}))
    with pytest.raises(InputError, match="unsupported typestr"):
        view_of(FakeCai({**base, "typestr": "<V2"}))
    with pytest.raises(InputError, match="stride of 6 bytes"):
        view_of(FakeCai({**base, "strides": (6,)}))


# --------------------------------------------------------------------------------------------
# torch, faked: the torch path must not import torch


class _FakeTorchDevice:
    def __init__(self, type_: str, index: int | None) -> None:
        self.type = type_
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


class _FakeTorchDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class Tensor:
    """Looks like torch.Tensor to view_of (its module is "torch")."""

    __module__ = "torch"

    def __init__(
        self,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: str,
        device: _FakeTorchDevice,
    ) -> None:
        self._ptr, self.shape, self._strides = ptr, shape, strides
        self.dtype, self.device = _FakeTorchDtype(dtype), device

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._strides


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("float32", np.float32), ("bfloat16", ml_dtypes.bfloat16), ("bool", np.bool_)],
)
def test_view_of_torch_cuda_tensor(rng: np.random.Generator, name: str, dtype: Any) -> None:
    ptr = int(rng.integers(1, 1 << 40)) * 256
    t = Tensor(ptr, (3, 127), (1, 3), name, _FakeTorchDevice("cuda", 1))
    had_torch = "torch" in sys.modules
    v = view_of(t)
    assert ("torch" in sys.modules) == had_torch
    assert v == TensorView(ptr, (3, 127), (1, 3), np.dtype(dtype), 1, "cuda", t)


def test_view_of_cpu_torch_tensor_is_an_input_error() -> None:
    t = Tensor(4096, (3,), (1,), "float32", _FakeTorchDevice("cpu", None))
    with pytest.raises(InputError, match=r"torch\.Tensor on device 'cpu'"):
        view_of(t)
    t = Tensor(4096, (3,), (1,), "float8_e4m3fn", _FakeTorchDevice("cuda", 0))
    with pytest.raises(InputError, match=r"unsupported torch dtype torch\.float8_e4m3fn"):
        view_of(t)


def test_view_of_unknown_object() -> None:
    with pytest.raises(InputError, match=r"got builtins\.list"):
        view_of([1.0, 2.0])


# --------------------------------------------------------------------------------------------
# DLPack


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dlpack_dtype_round_trip(dtype: np.dtype) -> None:
    code, bits = dlpack_dtype(dtype)
    assert bits == dtype.itemsize * 8
    assert numpy_dtype_of_dlpack(code, bits) == dtype


def test_dlpack_dtype_codes() -> None:
    assert dlpack_dtype(BFLOAT16) == (arrays.KDL_BFLOAT, 16)
    assert dlpack_dtype(np.dtype(np.bool_)) == (arrays.KDL_BOOL, 8)
    assert dlpack_dtype(np.dtype(np.float16)) == (arrays.KDL_FLOAT, 16)
    with pytest.raises(InputError, match="lanes=4"):
        numpy_dtype_of_dlpack(arrays.KDL_FLOAT, 32, 4)
    with pytest.raises(InputError, match="unsupported DLPack dtype"):
        numpy_dtype_of_dlpack(3, 64)


@pytest.mark.parametrize(
    "make", [lambda a: a, lambda a: a[:, 1::3], lambda a: a.T], ids=["contig", "step", "T"]
)
def test_parse_numpy_dlpack_capsule(rng: np.random.Generator, make: Any) -> None:
    a = make(rng.standard_normal((3, 127)))
    v = parse_dlpack_capsule(a.__dlpack__())
    assert (v.ptr, v.shape, v.strides, v.dtype) == (
        a.ctypes.data,
        a.shape,
        _element_strides(a),
        a.dtype,
    )
    assert v.kind == "host" and v.device == -1


class HostExporter:
    """A DLPack producer built on make_dlpack_capsule, pointed at host memory (kDLCPU)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CPU, 0)

    def __dlpack__(
        self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None
    ) -> Any:
        a = self.array
        return make_dlpack_capsule(
            a.ctypes.data, a.shape, _element_strides(a), a.dtype, (KDL_CPU, 0), a
        )


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != BFLOAT16], ids=str)
def test_exported_capsule_consumed_by_numpy(rng: np.random.Generator, dtype: np.dtype) -> None:
    gc.collect()
    start = arrays.live_dlpack_exports()
    base = _random((5, 127), dtype, rng)
    a = base[1:, ::3]
    out = np.from_dlpack(HostExporter(a))
    assert out.ctypes.data == a.ctypes.data  # zero-copy
    np.testing.assert_array_equal(out, a)
    assert arrays.live_dlpack_exports() == start + 1
    del out
    gc.collect()
    assert arrays.live_dlpack_exports() == start  # numpy called the deleter


def test_exported_capsule_round_trip_and_release(rng: np.random.Generator) -> None:
    gc.collect()
    start = arrays.live_dlpack_exports()
    base = _random((3, 7, 5), BFLOAT16, rng)
    a = base.transpose(2, 0, 1)[1:]
    capsule = HostExporter(a).__dlpack__()
    assert arrays.live_dlpack_exports() == start + 1
    v = parse_dlpack_capsule(capsule)
    del capsule
    assert (v.ptr, v.shape, v.strides, v.dtype) == (
        a.ctypes.data,
        a.shape,
        _element_strides(a),
        BFLOAT16,
    )
    assert arrays.live_dlpack_exports() == start + 1  # the view keeps the capsule
    del v
    gc.collect()
    assert arrays.live_dlpack_exports() == start  # unconsumed capsule released on collection


def test_contiguous_export_has_no_strides(rng: np.random.Generator) -> None:
    a = _random((3, 5), np.dtype(np.int32), rng)
    capsule = make_dlpack_capsule(a.ctypes.data, a.shape, None, a.dtype, (KDL_CPU, 0), a)
    v = parse_dlpack_capsule(capsule)
    assert v.strides == (5, 1)
    np.testing.assert_array_equal(np.from_dlpack(HostExporter(a)), a)


def test_view_of_host_dlpack_object_is_an_input_error() -> None:
    with pytest.raises(InputError, match="HostExporter on kDLCPU"):
        view_of(HostExporter(np.ones(3)))


def test_consumed_capsule_is_rejected() -> None:
    a = np.arange(4.0)
    capsule = a.__dlpack__()
    np.from_dlpack(
        type(
            "Wrap",
            (),
            {"__dlpack__": lambda self, **kw: capsule, "__dlpack_device__": lambda self: (1, 0)},
        )()
    )
    with pytest.raises(InputError, match="unconsumed"):
        parse_dlpack_capsule(capsule)


# --------------------------------------------------------------------------------------------
# DeviceArray without a GPU


@pytest.mark.skipif(driver.gpu_available(), reason="checks the behaviour without a GPU")
def test_device_array_needs_a_gpu() -> None:
    with pytest.raises(CudaError, match="no CUDA device"):
        DeviceArray((3,), np.float32)


def test_device_array_rejects_bad_dtype_before_allocating() -> None:
    with pytest.raises(TypeError, match="does not support dtype"):
        DeviceArray((3,), np.dtype("U4"))
    with pytest.raises(ValueError, match="negative dimension"):
        DeviceArray((3, -1), np.float32)
