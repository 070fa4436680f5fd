"""Device memory fuser owns, and a uniform view of everyone else's tensors.

`DeviceArray` is a C-contiguous array in device memory taken from the stream-ordered pool and
returned to it (on its stream) when garbage-collected. It exports itself zero-copy through
`__cuda_array_interface__` (v3) and DLPack (`__dlpack__`), so torch, cupy and jax can use it.

`view_of` reads any tensor the executor is handed — a DeviceArray, a torch tensor, anything with
`__cuda_array_interface__` or `__dlpack__`, or a numpy array — into a `TensorView`: pointer,
shape, strides in elements, numpy dtype and device. torch is read directly (never imported here
unless the object already is a torch tensor), because its attribute calls are much cheaper than
building an interface dict or a DLPack capsule.

The DLPack structures are declared with ctypes from dlpack.h (legacy, unversioned
`DLManagedTensor`, capsule name "dltensor").
"""

from __future__ import annotations

import ctypes
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from fuser.dialects.views import contiguous_strides, is_contiguous
from fuser.errors import InputError
from fuser.runtime import driver

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

# ------------------------------------------------------------------------------------------------
# DLPack (dlpack.h) structures and constants

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13

KDL_INT = 0
KDL_UINT = 1
KDL_FLOAT = 2
KDL_BFLOAT = 4
KDL_COMPLEX = 5
KDL_BOOL = 6

_DLPACK_DEVICE_NAMES = {
    KDL_CPU: "kDLCPU",
    KDL_CUDA: "kDLCUDA",
    KDL_CUDA_HOST: "kDLCUDAHost",
    4: "kDLOpenCL",
    7: "kDLVulkan",
    8: "kDLMetal",
    10: "kDLROCM",
    KDL_CUDA_MANAGED: "kDLCUDAManaged",
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DLDeleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DLDeleter),
    ]


_CAPSULE_NAME = b"dltensor"

_PyCapsule_New = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))
_PyCapsule_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
# The capsule destructor gets a PyObject* whose refcount is already 0: it must not be wrapped
# as a py_object, hence these raw-pointer variants.
_PyCapsule_IsValidRaw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_PyCapsule_GetPointerRaw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)

# address of an exported DLManagedTensor -> what must stay alive until its deleter runs
_exports: dict[int, tuple[Any, ...]] = {}


def _release_export(managed_address: int | None) -> None:
    if managed_address:
        _exports.pop(managed_address, None)


_DELETER = _DLDeleter(_release_export)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int | None) -> None:
    # A consumer renames the capsule ("used_dltensor") and calls the deleter itself; an unconsumed
    # capsule still named "dltensor" must release the tensor here.
    if capsule and _PyCapsule_IsValidRaw(capsule, _CAPSULE_NAME):
        _release_export(_PyCapsule_GetPointerRaw(capsule, _CAPSULE_NAME))


def live_dlpack_exports() -> int:
    """How many DLPack exports a consumer still holds (their deleter has not run yet)."""
    return len(_exports)


def dlpack_dtype(dtype: np.dtype) -> tuple[int, int]:
    """(DLPack type code, bits) of a numpy dtype."""
    dtype = np.dtype(dtype)
    if dtype == BFLOAT16:
        return (KDL_BFLOAT, 16)
    code = {"b": KDL_BOOL, "i": KDL_INT, "u": KDL_UINT, "f": KDL_FLOAT, "c": KDL_COMPLEX}.get(
        dtype.kind
    )
    if code is None:
        raise TypeError(f"dtype {dtype} has no DLPack equivalent")
    return (code, dtype.itemsize * 8)


def numpy_dtype_of_dlpack(code: int, bits: int, lanes: int = 1) -> np.dtype:
    """The numpy dtype of a DLPack (code, bits, lanes)."""
    if lanes != 1:
        raise InputError(f"DLPack vector dtypes (lanes={lanes}) are not supported")
    if code == KDL_BFLOAT and bits == 16:
        return BFLOAT16
    kind = {KDL_BOOL: "b", KDL_INT: "i", KDL_UINT: "u", KDL_FLOAT: "f", KDL_COMPLEX: "c"}.get(code)
    if kind is None or bits % 8:
        raise InputError(f"unsupported DLPack dtype (code={code}, bits={bits})")
    if kind == "b":
        return np.dtype(np.bool_)
    return np.dtype(f"{kind}{bits // 8}")


def make_dlpack_capsule(
    ptr: int,
    shape: Sequence[int],
    strides: Sequence[int] | None,
    dtype: np.dtype,
    device: tuple[int, int],
    owner: Any,
) -> Any:
    """A "dltensor" PyCapsule describing memory at `ptr` that keeps `owner` alive.

    `strides` are in elements (None: C-contiguous); `device` is (DLPack device type, id). The
    memory stays referenced until the consumer calls the deleter, or until the capsule is
    collected unconsumed.
    """
    code, bits = dlpack_dtype(dtype)
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides) if strides is not None else None
    managed = DLManagedTensor()
    t = managed.dl_tensor
    t.data = ptr or None
    t.device = DLDevice(device[0], device[1])
    t.ndim = ndim
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    if strides_arr is not None:
        t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    managed.deleter = _DELETER
    address = ctypes.addressof(managed)
    managed.manager_ctx = address
    _exports[address] = (managed, shape_arr, strides_arr, owner)
    return _PyCapsule_New(address, _CAPSULE_NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


# ------------------------------------------------------------------------------------------------
# TensorView


@dataclass(slots=True)
class TensorView:
    """What the executor needs to know about a tensor argument.

    `strides` are in elements. `kind` is "cuda" (device-accessible memory on device `device`) or
    "host" (a numpy array; `device` is -1). `owner` keeps the memory alive while the view lives.
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    device: int
    kind: str
    owner: Any = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        """C-contiguous (size-1 dimensions may have any stride)."""
        return is_contiguous(self.shape, self.strides)


def _element_strides(byte_strides: Sequence[int], itemsize: int, what: str) -> tuple[int, ...]:
    out = []
    for s in byte_strides:
        if s % itemsize:
            raise InputError(
                f"{what} has a stride of {s} bytes, not a multiple of its item size {itemsize}"
            )
        out.append(s // itemsize)
    return tuple(out)


def torch_numpy_dtype(torch_dtype: Any) -> np.dtype | None:
    """The numpy dtype of a torch dtype, by name: torch names its dtypes as numpy does
    (`torch.float16`, `torch.uint8`, `torch.complex64`, `torch.bool`), with bf16 as ml_dtypes'
    `bfloat16`; None for one numpy lacks (`torch.float8_e4m3fn`, `torch.qint8`)."""
    name = str(torch_dtype).removeprefix("torch.")
    if name == BFLOAT16.name:
        return BFLOAT16
    try:
        dtype = np.dtype(name)
    except TypeError:
        return None
    return dtype if dtype.kind in "biufc" else None


def _view_of_torch(t: Any) -> TensorView:
    device = t.device
    if device.type != "cuda":
        raise InputError(f"expected a CUDA tensor, got a torch.Tensor on device '{device}'")
    dtype = torch_numpy_dtype(t.dtype)
    if dtype is None:
        raise InputError(f"unsupported torch dtype {t.dtype}")
    return TensorView(
        t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype, device.index or 0, "cuda", t
    )


def _view_of_numpy(a: np.ndarray) -> TensorView:
    if a.dtype.kind not in "biufc" and a.dtype != BFLOAT16:
        raise InputError(f"unsupported numpy dtype {a.dtype}")
    strides = _element_strides(a.strides, a.dtype.itemsize, "numpy array")
    return TensorView(a.ctypes.data, a.shape, strides, a.dtype, -1, "host", a)


def _dlpack_stream(stream: driver.StreamLike) -> int:
    """The DLPack/CAI stream number of a stream (1 is the legacy default stream)."""
    handle = driver.stream_handle(stream)
    return 1 if handle == 0 else handle


def _view_of_cai(obj: Any, cai: dict[str, Any], stream: driver.StreamLike) -> TensorView:
    name = type(obj).__name__
    if cai.get("mask") is not None:
        raise InputError(f"{name}: masked __cuda_array_interface__ arrays are not supported")
    ptr = int(cai["data"][0] or 0)
    shape = tuple(int(n) for n in cai["shape"])
    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError as e:
        raise InputError(f"{name}: unsupported typestr {cai['typestr']!r}") from e
    if dtype.kind not in "biufc":
        raise InputError(f"{name}: unsupported typestr {cai['typestr']!r}")
    raw_strides = cai.get("strides")
    strides = (
        contiguous_strides(shape)
        if raw_strides is None
        else _element_strides(raw_strides, dtype.itemsize, name)
    )
    device = -1
    if driver.gpu_available():
        producer_stream = cai.get("stream")
        if producer_stream is not None:
            _order_after(int(producer_stream), stream)
        device = driver.pointer_device(ptr) if ptr else driver.current_device().ordinal
    return TensorView(ptr, shape, strides, dtype, device, "cuda", obj)


def _order_after(producer: int, consumer: driver.StreamLike) -> None:
    """Make `consumer` wait for the work queued so far on the `producer` stream number."""
    if producer == _dlpack_stream(consumer):
        return
    event = driver.Event(timing=False).record(producer)
    driver.stream_wait_event(consumer, event)


def parse_dlpack_capsule(capsule: Any, owner: Any = None) -> TensorView:
    """Read an unconsumed "dltensor" capsule into a TensorView (the view keeps the capsule, so
    the producer's memory lives as long as the view). kDLCPU tensors become "host" views."""
    if not _PyCapsule_IsValid(capsule, _CAPSULE_NAME):
        raise InputError("expected an unconsumed DLPack capsule named 'dltensor'")
    managed = DLManagedTensor.from_address(_PyCapsule_GetPointer(capsule, _CAPSULE_NAME))
    t = managed.dl_tensor
    dev_type = t.device.device_type
    if dev_type in (KDL_CUDA, KDL_CUDA_MANAGED):
        kind, device = "cuda", int(t.device.device_id)
    elif dev_type == KDL_CPU:
        kind, device = "host", -1
    else:
        raise InputError(f"unsupported DLPack device {_device_name(dev_type)}")
    dtype = numpy_dtype_of_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    strides = tuple(t.strides[i] for i in range(ndim)) if t.strides else contiguous_strides(shape)
    ptr = (t.data or 0) + t.byte_offset
    return TensorView(ptr, shape, strides, dtype, device, kind, (capsule, owner))


def _device_name(dev_type: int) -> str:
    return _DLPACK_DEVICE_NAMES.get(dev_type, f"device type {dev_type}")


def _view_of_dlpack(obj: Any, stream: driver.StreamLike) -> TensorView:
    name = type(obj).__name__
    if hasattr(obj, "__dlpack_device__"):
        dev_type, _ = obj.__dlpack_device__()
        if dev_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
            raise InputError(
                f"expected a CUDA array, got a {name} on {_device_name(int(dev_type))}"
            )
        capsule = obj.__dlpack__(stream=_dlpack_stream(stream))
    else:
        capsule = obj.__dlpack__()
    view = parse_dlpack_capsule(capsule, obj)
    if view.kind != "cuda":
        raise InputError(f"expected a CUDA array, got a {name} in host memory")
    return view


class _HostView:
    """What `host_view` hands numpy: an array interface, and the array whose memory it is."""

    def __init__(self, interface: dict[str, Any], base: np.ndarray) -> None:
        self.__array_interface__ = interface
        self.base = base


def host_view(
    base: np.ndarray, shape: Sequence[int], strides: Sequence[int], offset: int
) -> np.ndarray:
    """A numpy view of `base`'s memory (any layout): these extents and strides (in elements),
    its first element `offset` elements past `base`'s."""
    item = base.itemsize
    interface = {
        **base.__array_interface__,
        "data": (base.ctypes.data + offset * item, not base.flags.writeable),
        "shape": tuple(shape),
        "strides": tuple(s * item for s in strides),
    }
    # (an extension dtype such as bfloat16 comes back as raw bytes of its size)
    return np.asarray(_HostView(interface, base)).view(base.dtype)


def view_of(obj: Any, stream: driver.StreamLike = None) -> TensorView:
    """A TensorView of `obj`: a DeviceArray, torch tensor, object with __cuda_array_interface__
    or __dlpack__ (device memory, kind "cuda"), or numpy array (kind "host").

    `stream` is the stream the caller will use the memory on: producers that declare a stream
    (CAI v3 "stream", DLPack) are ordered before it. Raises InputError for anything else,
    including CPU torch tensors and DLPack objects on a non-CUDA device.
    """
    if isinstance(obj, DeviceArray):
        return TensorView(
            obj.ptr, obj.shape, obj.element_strides, obj.dtype, obj.device_id, "cuda", obj
        )
    module = type(obj).__module__
    if module.startswith("torch") and hasattr(obj, "data_ptr"):
        return _view_of_torch(obj)
    if isinstance(obj, np.ndarray):
        return _view_of_numpy(obj)
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        cai = None
    if cai is not None:
        return _view_of_cai(obj, cai, stream)
    if hasattr(obj, "__dlpack__"):
        return _view_of_dlpack(obj, stream)
    raise InputError(
        f"expected a CUDA tensor (torch, cupy, DeviceArray, __cuda_array_interface__ or DLPack) "
        f"or a numpy array, got {type(obj).__module__}.{type(obj).__qualname__}"
    )


# ------------------------------------------------------------------------------------------------
# DeviceArray


def _check_dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind not in "biufc" and dt != BFLOAT16:
        raise TypeError(f"DeviceArray does not support dtype {dt}")
    return dt


class DeviceArray:
    """An array in device memory: C-contiguous memory from the stream-ordered pool, or a strided
    view of another tensor's memory (`viewing`: an output a fusion returns as a view of an
    input).

    Pool memory is allocated on `stream` and freed on it when the array is garbage-collected, so
    work on other streams that uses the array must be ordered before that (events). `strides` are
    in bytes (numpy convention); `element_strides` in elements.
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_owned",
        "device_id",
        "dtype",
        "nbytes",
        "ptr",
        "shape",
        "stream",
        "strides",
    )

    def __init__(self, shape: Sequence[int] | int, dtype: Any, stream: driver.StreamLike = None):
        self._owned = False
        self._base: Any = None
        shape_t = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
        if any(n < 0 for n in shape_t):
            raise ValueError(f"negative dimension in shape {shape_t}")
        self.shape: tuple[int, ...] = shape_t
        self.dtype: np.dtype = _check_dtype(dtype)
        self.stream = stream
        self.nbytes = math.prod(shape_t) * self.dtype.itemsize
        self.strides: tuple[int, ...] = tuple(
            s * self.dtype.itemsize for s in contiguous_strides(shape_t)
        )
        self.device_id = driver.current_device().ordinal
        self.ptr = driver.alloc(self.nbytes, stream) if self.nbytes else 0
        self._owned = self.ptr != 0

    # construction ---------------------------------------------------------------------------

    @classmethod
    def empty(cls, shape: Sequence[int] | int, dtype: Any, stream: driver.StreamLike = None):
        """An uninitialised array."""
        return cls(shape, dtype, stream)

    @classmethod
    def zeros(cls, shape: Sequence[int] | int, dtype: Any, stream: driver.StreamLike = None):
        arr = cls(shape, dtype, stream)
        if arr.nbytes:
            driver.memset_d8_async(arr.ptr, 0, arr.nbytes, stream)
        return arr

    @classmethod
    def viewing(
        cls,
        owner: Any,
        ptr: int,
        shape: Sequence[int],
        element_strides: Sequence[int],
        dtype: Any,
        device_id: int,
        stream: driver.StreamLike = None,
    ) -> DeviceArray:
        """A view of memory at `ptr` that `owner` holds (kept alive while the view lives), with
        these extents and (non-negative) strides in elements; it frees nothing."""
        arr = cls.__new__(cls)
        arr._owned = False
        arr._base = owner
        arr.shape = tuple(int(n) for n in shape)
        arr.dtype = _check_dtype(dtype)
        arr.stream = stream
        arr.nbytes = math.prod(arr.shape) * arr.dtype.itemsize
        arr.strides = tuple(int(s) * arr.dtype.itemsize for s in element_strides)
        arr.device_id = device_id
        arr.ptr = ptr
        return arr

    @classmethod
    def from_numpy(cls, array: Any, stream: driver.StreamLike = None) -> DeviceArray:
        """A device copy of a numpy array (any layout); returns when the copy is done."""
        host = np.ascontiguousarray(array)
        arr = cls(host.shape, host.dtype, stream)
        if arr.nbytes:
            driver.memcpy_htod(arr.ptr, host.ctypes.data, arr.nbytes, stream)
        return arr

    # properties -----------------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def element_strides(self) -> tuple[int, ...]:
        return tuple(s // self.dtype.itemsize for s in self.strides)

    def is_contiguous(self) -> bool:
        """C-contiguous (size-1 dimensions may have any stride)."""
        return is_contiguous(self.shape, self.element_strides)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"

    # copies ---------------------------------------------------------------------------------

    def numpy(self, stream: driver.StreamLike = None) -> np.ndarray:
        """A host copy, read after the work queued on the array's stream (or `stream`); a
        strided view reads the span of memory it covers and takes its elements on the host."""
        s = self.stream if stream is None else stream
        if not self.nbytes:
            return np.empty(self.shape, self.dtype)
        if self.is_contiguous():
            out = np.empty(self.shape, self.dtype)
            driver.memcpy_dtoh(out.ctypes.data, self.ptr, self.nbytes, s)
            return out
        span = 1 + sum((n - 1) * e for n, e in zip(self.shape, self.element_strides, strict=True))
        covered = np.empty(span, self.dtype)
        driver.memcpy_dtoh(covered.ctypes.data, self.ptr, covered.nbytes, s)
        return np.lib.stride_tricks.as_strided(covered, self.shape, self.strides).copy()

    def copy(self, stream: driver.StreamLike = None) -> DeviceArray:
        """A new contiguous device array with the same contents (ordered on `stream`, default
        its own); a strided view is copied through the host."""
        s = self.stream if stream is None else stream
        if not self.is_contiguous():
            return DeviceArray.from_numpy(self.numpy(s), s)
        out = DeviceArray(self.shape, self.dtype, s)
        if self.nbytes:
            driver.memcpy_dtod_async(out.ptr, self.ptr, self.nbytes, s)
        return out

    # interop --------------------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.dtype == BFLOAT16:
            raise AttributeError(
                "a bfloat16 DeviceArray cannot be described by __cuda_array_interface__ (it has "
                "no typestr for bfloat16): use DLPack (__dlpack__) instead"
            )
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None if self.is_contiguous() else self.strides,
            "version": 3,
            "stream": _dlpack_stream(self.stream),
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, self.device_id)

    def __dlpack__(
        self,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export as a "dltensor" capsule (legacy DLManagedTensor, whatever `max_version`).

        `stream` is the consumer's stream (None or 1: the legacy default, 2: per-thread default,
        -1: no synchronisation); work queued on the array's stream is ordered before it.
        """
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(
                f"DeviceArray lives on {self.__dlpack_device__()} and cannot be exported to "
                f"DLPack device {tuple(dl_device)}"
            )
        source = self.copy() if copy else self
        if stream != -1:
            consumer = 0 if stream in (None, 1) else int(stream)
            if consumer != driver.stream_handle(source.stream):
                event = driver.Event(timing=False).record(source.stream)
                driver.stream_wait_event(consumer, event)
        strides = None if source.is_contiguous() else source.element_strides
        return make_dlpack_capsule(
            source.ptr, source.shape, strides, source.dtype, self.__dlpack_device__(), source
        )

    # lifetime -------------------------------------------------------------------------------

    def __del__(self) -> None:
        if self._owned:
            self._owned = False
            try:
                driver.current_device()
                driver.free(self.ptr, self.stream)
            except Exception:
                if not sys.is_finalizing():
                    raise


def empty(shape: Sequence[int] | int, dtype: Any, stream: driver.StreamLike = None) -> DeviceArray:
    """An uninitialised DeviceArray."""
    return DeviceArray(shape, dtype, stream)


def from_numpy(array: Any, stream: driver.StreamLike = None) -> DeviceArray:
    return DeviceArray.from_numpy(array, stream)
