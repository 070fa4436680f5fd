"""A call's inputs, read into a `Call`: signature, pointers, scalars, device, stream, frontend.

`read_inputs` is the general path of every `execute` and `compile` (the torch fast path of
`fuser.runtime.dispatch` reads known signatures itself): torch tensors are read through their
own attributes, everything else through `arrays.view_of`; the signature is encoded by
`fuser.runtime.signature` and the outputs will be allocated by the inputs' frontend
(`fuser.runtime.frontends`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fuser.dialects.views import contiguous_strides
from fuser.errors import CudaError, InputError
from fuser.runtime import driver
from fuser.runtime.arrays import DeviceArray, TensorView, view_of
from fuser.runtime.frontends import (
    DEVICE_FRONTEND,
    NUMPY_FRONTEND,
    TORCH_FRONTEND,
    Frontend,
    frontend_of,
)
from fuser.runtime.inputs import check_input_sequence
from fuser.runtime.signature import dtype_code, scalar_part, tensor_part


class InputLayout:
    """Which inputs of a fusion are tensors, and how messages name them (`names`: "input #0
    (%t0)"; `short_names`: "%t0", for the count message)."""

    __slots__ = ("count", "fusion_name", "is_tensor", "names", "scalars", "short_names", "tensors")

    def __init__(
        self,
        fusion_name: str,
        names: Sequence[str],
        is_tensor: Sequence[bool],
        short_names: Sequence[str] = (),
    ) -> None:
        self.fusion_name = fusion_name
        self.names = tuple(names)
        self.is_tensor = tuple(is_tensor)
        self.short_names = tuple(short_names)
        self.count = len(self.is_tensor)
        self.tensors = tuple(i for i, t in enumerate(self.is_tensor) if t)
        self.scalars = tuple(i for i, t in enumerate(self.is_tensor) if not t)


class Call:
    """One call's inputs, read: signature, tensor pointers, scalar values, device, stream."""

    __slots__ = (
        "device",
        "frontend",
        "inputs",
        "key",
        "layout",
        "ptrs",
        "scalars",
        "stream",
        "uploads",
        "views",
    )

    def __init__(
        self,
        layout: InputLayout,
        inputs: Sequence[Any],
        key: tuple[int, ...],
        ptrs: list[int],
        scalars: list[Any],
        device: int,
        stream: int,
        frontend: Frontend,
        views: list[TensorView] | None = None,
    ) -> None:
        self.layout = layout
        self.inputs = inputs
        self.key = key
        self.ptrs = ptrs
        self.scalars = scalars
        self.device = device
        self.stream = stream
        self.frontend = frontend
        self.views = views
        self.uploads: list[DeviceArray] | None = None

    @property
    def needs_upload(self) -> bool:
        """Whether the tensors are host (numpy) arrays still to be copied to the device."""
        return self.frontend is NUMPY_FRONTEND and self.uploads is None

    def tensor_views(self) -> list[TensorView]:
        """A TensorView of each tensor input (read on demand: the torch fast path skips them)."""
        if self.views is None:
            self.views = [
                _view(self.inputs[i], self.stream, self.layout.names[i])
                for i in self.layout.tensors
            ]
        return self.views

    def upload(self) -> None:
        """Copy host (numpy) tensor inputs to the device; the call then uses the copies."""
        if not self.needs_upload:
            return
        if self.layout.tensors and not driver.gpu_available():
            raise CudaError("no CUDA device is available to run the fusion on")
        arrays = [DeviceArray.from_numpy(self.inputs[i], self.stream) for i in self.layout.tensors]
        self.uploads = arrays
        self.ptrs = [a.ptr for a in arrays]


def _count_error(layout: InputLayout, got: int) -> InputError:
    shown = f" ({', '.join(layout.short_names)})" if layout.short_names else ""
    return InputError(f"@{layout.fusion_name} takes {layout.count} input(s){shown}, got {got}")


def _view(x: Any, stream: int, name: str) -> TensorView:
    if isinstance(x, bool | int | float | complex) or x is None:
        raise InputError(f"{name}: expected a tensor, got {type(x).__name__}")
    try:
        return view_of(x, stream)
    except InputError as e:
        raise InputError(f"{name}: {e}") from None


def read_inputs(inputs: Sequence[Any], layout: InputLayout, with_stream: bool = True) -> Call:
    """Read a call's inputs (see the module docstring). Raises InputError for a wrong count,
    an object that is not a tensor where a tensor goes, a CPU torch tensor, tensors on two
    devices, or host (numpy) and device tensors mixed.

    `with_stream=False` reads metadata only (no stream is looked up, the stream is 0): for
    signatures and compilation, not for launching."""
    inputs = check_input_sequence(inputs)
    if len(inputs) != layout.count:
        raise _count_error(layout, len(inputs))
    tensors = layout.tensors
    if tensors:
        first = inputs[tensors[0]]
        if frontend_of(first) is TORCH_FRONTEND:
            try:
                call = _read_torch(inputs, layout, with_stream)
            except (AttributeError, TypeError):
                call = None
            if call is not None:
                return call
    return _read_generic(inputs, layout, with_stream)


def _read_torch(inputs: Sequence[Any], layout: InputLayout, with_stream: bool) -> Call | None:
    """The fast path: every tensor input a CUDA torch tensor on one device (else None)."""
    fe = TORCH_FRONTEND
    codes = fe.codes
    key: tuple[int, ...] = ()
    ptrs: list[int] = []
    device = -2
    for i in layout.tensors:
        t = inputs[i]
        p = t.data_ptr()
        d = t.get_device()
        if d != device:
            if device != -2:
                return None
            device = d
        dt = t.dtype
        code = codes.get(dt)
        if code is None:
            code = fe.code(dt)
        key += tensor_part(t.shape, t.stride(), code, p)
        ptrs.append(p)
    if device < 0:
        return None  # CPU tensors: the generic path reports them
    scalars = [inputs[i] for i in layout.scalars]
    for v in scalars:
        key += scalar_part(v)
    key += (device,)
    stream = fe.raw_stream(device) if with_stream else 0
    return Call(layout, inputs, key, ptrs, scalars, device, stream, fe)


def _read_generic(inputs: Sequence[Any], layout: InputLayout, with_stream: bool) -> Call:
    names = layout.names
    tensors = layout.tensors
    frontends = [frontend_of(inputs[i]) for i in tensors]
    fe = frontends[0] if frontends else DEVICE_FRONTEND
    host = [fe_i is NUMPY_FRONTEND for fe_i in frontends]
    if any(host) and not all(host):
        h = tensors[host.index(True)]
        d = tensors[host.index(False)]
        raise InputError(
            f"{names[h]} is a numpy array (host memory) but {names[d]} is a device tensor; "
            "pass every tensor as a device tensor, or every tensor as a numpy array"
        )
    stream = 0
    if fe is TORCH_FRONTEND:
        first = inputs[tensors[0]]
        _view(first, 0, names[tensors[0]])  # a CPU tensor: InputError naming it
        if with_stream:
            stream = fe.stream_for(first)
    elif fe is not NUMPY_FRONTEND and tensors and with_stream:
        stream = fe.stream_for(inputs[tensors[0]])
    views = [_view(inputs[i], stream, names[i]) for i in tensors]
    key: tuple[int, ...] = ()
    ptrs: list[int] = []
    if fe is NUMPY_FRONTEND:
        # the signature of the device copies the arrays become: contiguous, pool-aligned
        device = driver.current_device().ordinal if driver.gpu_available() else 0
        for v in views:
            key += tensor_part(v.shape, contiguous_strides(v.shape), dtype_code(v.dtype), 0)
    else:
        device = -1
        for i, v in zip(tensors, views, strict=True):
            if device == -1:
                device, first_index = v.device, i
            elif v.device != device:
                raise InputError(
                    f"{names[i]} is on cuda:{v.device} but {names[first_index]} is on "
                    f"cuda:{device}; all tensor inputs must be on one device"
                )
            key += tensor_part(v.shape, v.strides, dtype_code(v.dtype), v.ptr)
            ptrs.append(v.ptr)
        if device == -1:  # no tensor inputs
            device = driver.current_device().ordinal if driver.gpu_available() else 0
    scalars = [inputs[i] for i in layout.scalars]
    for v in scalars:
        key += scalar_part(v)
    key += (device,)
    return Call(layout, inputs, key, ptrs, scalars, device, stream, fe, views)
