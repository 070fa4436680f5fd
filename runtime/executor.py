"""Launching one compiled kernel, fast, for every input signature it meets.

`KernelExecutor` runs one `CompiledKernel` (nvFuser's CompiledKernel / KernelExecutor split): the
compiled kernel owns source and cubin; the executor owns what depends on the inputs of a call.

A call is described by its *signature*, a flat tuple of ints: for each tensor input (in input
order) its rank, shape, strides in elements, dtype code and pointer alignment (the largest power
of two <= 16 bytes dividing the data pointer), then `(-1, kind)` for each scalar input (kind: 1
bool, 2 int, 3 float, 0 anything else), then the device ordinal. The encoding is prefix-free, so
equal signatures mean equal metadata, and `decode_signature` recovers it.

Per signature the executor caches an *entry*: the launch configuration and output shapes (from
the `plan` callable the compiler supplies: the executor walks no IR), a packed argument buffer
holding the bytes of every kernel parameter, the slots in it where pointers and scalar values go,
and the `void*[]` array into it that `cuLaunchKernel` takes. A hit then only reads the inputs'
pointers, allocates the outputs, patches the buffer and launches.

`read_inputs` turns the user's inputs into a `Call` (signature, pointers, scalars, device,
stream, output allocator): torch tensors are read through their own attributes, everything else
through `arrays.view_of`. Outputs are allocated by the inputs' own framework: torch tensors in ->
`torch.empty` on the inputs' device and torch's current stream; cupy arrays -> `cupy.empty` on
cupy's current stream; numpy arrays -> copied to `DeviceArray`s, results copied back; anything
else -> `DeviceArray`s from the stream-ordered pool, launched on the stream of the first
`DeviceArray` input (the legacy default stream when there is none).

`ExecutorCache` maps the signatures of one fusion to entries (of whichever executor the compiler
chose for each) and is the hot path of `execute`: for torch inputs with a known signature it
reads, looks up, allocates, patches and launches in one generated function; anything else, and
every new signature, goes through `read_inputs` and the compiler's miss handler.
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from fuser.errors import CudaError, InputError

from . import driver
from .arrays import BFLOAT16, DeviceArray, TensorView, view_of
from .compiled_kernel import CompiledKernel, pack_tensor_param
from .dtypes import round_to_float
from .inputs import check_input_sequence

# --------------------------------------------------------------------------------------------
# Signatures

#: The dtype code of each dtype a fusion may take; every other dtype is code 0.
DTYPE_CODES: dict[np.dtype, int] = {
    np.dtype(np.float16): 1,
    BFLOAT16: 2,
    np.dtype(np.float32): 3,
    np.dtype(np.float64): 4,
    np.dtype(np.int32): 5,
    np.dtype(np.int64): 6,
    np.dtype(np.bool_): 7,
}
_DTYPES_BY_CODE = {code: dtype for dtype, code in DTYPE_CODES.items()}

_TORCH_NAMES = {
    "torch.float16": 1,
    "torch.bfloat16": 2,
    "torch.float32": 3,
    "torch.float64": 4,
    "torch.int32": 5,
    "torch.int64": 6,
    "torch.bool": 7,
}

SCALAR_BOOL, SCALAR_INT, SCALAR_FLOAT = 1, 2, 3
#: The kind code of each Python/numpy scalar type (0: not a number, rejected on a miss).
SCALAR_KINDS: dict[type, int] = {bool: SCALAR_BOOL, np.bool_: SCALAR_BOOL, int: SCALAR_INT}
SCALAR_KINDS.update({t: SCALAR_INT for t in (np.int8, np.int16, np.int32, np.int64)})
SCALAR_KINDS.update({t: SCALAR_INT for t in (np.uint8, np.uint16, np.uint32, np.uint64)})
SCALAR_KINDS.update({t: SCALAR_FLOAT for t in (float, np.float16, np.float32, np.float64)})
SCALAR_KINDS[BFLOAT16.type] = SCALAR_FLOAT

#: ALIGNMENT[ptr & 15]: the largest power of two <= 16 dividing ptr.
ALIGNMENT: tuple[int, ...] = tuple(16 if r == 0 else r & -r for r in range(16))

_SCALAR_MARK = -1


def dtype_code(dtype: Any) -> int:
    """The signature code of a numpy dtype (0 for a dtype no fusion takes)."""
    return DTYPE_CODES.get(np.dtype(dtype), 0)


def alignment_of(ptr: int) -> int:
    """The largest power of two, at most 16, that divides `ptr` (16 for a null pointer)."""
    return ALIGNMENT[ptr & 15]


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """C-order strides in elements."""
    strides: list[int] = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class InputMeta(NamedTuple):
    """A tensor input as a signature describes it (strides in elements, alignment in bytes)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype_code: int
    alignment: int


def tensor_signature(shape: Sequence[int], strides: Sequence[int], code: int, ptr: int) -> tuple:
    """One tensor's part of a signature."""
    return (len(shape), *shape, *strides, code, ALIGNMENT[ptr & 15])


def decode_signature(
    key: tuple[int, ...], is_tensor: Sequence[bool]
) -> tuple[tuple[InputMeta | None, ...], tuple[int, ...], int]:
    """(per input: InputMeta or None for a scalar, the scalar kinds, device) of a signature."""
    pos = 0
    tensors: list[InputMeta] = []
    for flag in is_tensor:
        if flag:
            rank = key[pos]
            shape = key[pos + 1 : pos + 1 + rank]
            strides = key[pos + 1 + rank : pos + 1 + 2 * rank]
            code, align = key[pos + 1 + 2 * rank], key[pos + 2 + 2 * rank]
            tensors.append(InputMeta(tuple(shape), tuple(strides), code, align))
            pos += 3 + 2 * rank
    kinds: list[int] = []
    for flag in is_tensor:
        if not flag:
            if key[pos] != _SCALAR_MARK:
                raise ValueError(f"malformed signature {key}")
            kinds.append(key[pos + 1])
            pos += 2
    if pos != len(key) - 1:
        raise ValueError(f"malformed signature {key}")
    it = iter(tensors)
    metas = tuple(next(it) if flag else None for flag in is_tensor)
    return metas, tuple(kinds), key[-1]


# --------------------------------------------------------------------------------------------
# Kernel parameters and launch plans


@dataclass(frozen=True)
class TensorParam:
    """A `Tensor<T, N>` kernel parameter: rank and element dtype."""

    rank: int
    dtype: np.dtype


@dataclass(frozen=True)
class ScalarParam:
    """A scalar kernel parameter of a numpy dtype (f16/bf16/f32/f64/i32/i64/bool)."""

    dtype: np.dtype


@dataclass(frozen=True)
class KernelParams:
    """The parameters of a generated kernel: the fusion's inputs, then its outputs."""

    inputs: tuple[TensorParam | ScalarParam, ...]
    outputs: tuple[TensorParam, ...]

    @property
    def is_tensor(self) -> tuple[bool, ...]:
        return tuple(isinstance(p, TensorParam) for p in self.inputs)


@dataclass(frozen=True)
class LaunchPlan:
    """What the compiler computes for a new signature: the launch and the output shapes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    output_shapes: tuple[tuple[int, ...], ...]


#: (input metas, device ordinal) -> LaunchPlan; called once per new signature.
Planner = Callable[[tuple[InputMeta | None, ...], int], LaunchPlan]


# --------------------------------------------------------------------------------------------
# Output allocation per input framework


Shapes = Sequence[tuple[int, ...]]


class Frontend:
    """How the outputs of a call are allocated and handed back, and which stream it runs on."""

    def stream_for(self, first: Any) -> int:
        """The stream to launch on, from the first tensor input: a DeviceArray's own stream,
        else the legacy default stream."""
        return driver.stream_handle(first.stream) if isinstance(first, DeviceArray) else 0

    def allocate(
        self, shapes: Shapes, dtypes: Sequence[np.dtype], device: int, stream: int
    ) -> tuple[list[Any], list[int]]:
        outs = [DeviceArray(s, d, stream) for s, d in zip(shapes, dtypes, strict=True)]
        return outs, [o.ptr for o in outs]

    def finish(self, outs: list[Any], stream: int) -> list[Any]:
        return outs


class _NumpyFrontend(Frontend):
    """numpy in: inputs are copied to the device, outputs copied back (synchronously)."""

    def stream_for(self, first: Any) -> int:
        return 0

    def finish(self, outs: list[Any], stream: int) -> list[Any]:
        return [o.numpy(stream) for o in outs]


def torch_sizes(shape: Sequence[int]) -> tuple[Any, ...]:
    """The positional arguments of `torch.empty` for a tensor of `shape`: the sizes one by one,
    which torch parses about 2 µs faster than one tuple on an H100 host (benchmarks/RESULTS.md
    run 16), or an empty tuple for a 0-d tensor."""
    return tuple(shape) if shape else ((),)


class _TorchFrontend(Frontend):
    """torch in: `torch.empty` outputs on the inputs' device, torch's current stream.

    torch is imported on first use (a torch tensor was given, so it is there). The current
    stream comes from `torch._C._cuda_getCurrentRawStream` where torch has it (a fraction of
    the cost of `torch.cuda.current_stream().cuda_stream`).
    """

    def __init__(self) -> None:
        self.types: set[type] = set()  # the torch tensor classes seen (the fast path's test)
        self.codes: dict[Any, int] = {}  # torch.dtype -> dtype code, filled as dtypes are seen
        self.dtypes: dict[np.dtype, Any] = {}  # numpy dtype -> torch.dtype
        self.raw_stream: Callable[[int], int] = self._setup_then_stream
        self.empty: Callable[..., Any] = self._setup_then_empty

    def code(self, torch_dtype: Any) -> int:
        code = self.codes.get(torch_dtype)
        if code is None:
            code = self.codes[torch_dtype] = _TORCH_NAMES.get(str(torch_dtype), 0)
        return code

    def _setup(self) -> None:
        import torch

        for name, code in _TORCH_NAMES.items():
            self.dtypes[_DTYPES_BY_CODE[code]] = getattr(torch, name.split(".", 1)[1])
        self.dtypes[np.dtype(np.uint8)] = torch.uint8  # raw bytes (a program's workspace)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None:  # a torch without it: the public (slower) query

            def raw(device: int) -> int:
                return torch.cuda.current_stream(device).cuda_stream

        self.raw_stream = raw
        self.empty = torch.empty

    def _setup_then_stream(self, device: int) -> int:
        self._setup()
        return self.raw_stream(device)

    def _setup_then_empty(self, *args: Any, **kwargs: Any) -> Any:
        self._setup()
        return self.empty(*args, **kwargs)

    def stream_for(self, first: Any) -> int:
        device = first.get_device()
        return self.raw_stream(device) if device >= 0 else 0

    def allocate(
        self, shapes: Shapes, dtypes: Sequence[np.dtype], device: int, stream: int
    ) -> tuple[list[Any], list[int]]:
        outs = []
        for s, d in zip(shapes, dtypes, strict=True):
            out = self.empty(*torch_sizes(s), dtype=self.dtypes[d], device=f"cuda:{device}")
            outs.append(out)
        return outs, [o.data_ptr() for o in outs]

    def prepare_entry(self, entry: Entry, dtypes: Sequence[np.dtype]) -> None:
        """Give an entry what the fast path allocates its outputs with."""
        import torch

        entry.torch_device = torch.device("cuda", entry.device)
        entry.torch_out = tuple(
            (torch_sizes(shape), slot, self.dtypes[d])
            for shape, slot, d in zip(entry.out_shapes, entry.out_slots, dtypes, strict=True)
        )


class _CupyFrontend(Frontend):
    """cupy in: `cupy.empty` outputs on cupy's current stream (bf16 outputs: DeviceArray, as
    cupy has no bfloat16)."""

    def stream_for(self, first: Any) -> int:
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)

    def allocate(
        self, shapes: Shapes, dtypes: Sequence[np.dtype], device: int, stream: int
    ) -> tuple[list[Any], list[int]]:
        import cupy

        outs: list[Any] = []
        ptrs: list[int] = []
        with cupy.cuda.Device(device):
            for s, d in zip(shapes, dtypes, strict=True):
                if d == BFLOAT16:
                    arr = DeviceArray(s, d, stream)
                    outs.append(arr)
                    ptrs.append(arr.ptr)
                else:
                    out = cupy.empty(s, dtype=d)
                    outs.append(out)
                    ptrs.append(int(out.data.ptr))
        return outs, ptrs


DEVICE_FRONTEND = Frontend()
NUMPY_FRONTEND = _NumpyFrontend()
TORCH_FRONTEND = _TorchFrontend()
CUPY_FRONTEND = _CupyFrontend()

_FRONTENDS: dict[type, Frontend] = {DeviceArray: DEVICE_FRONTEND, np.ndarray: NUMPY_FRONTEND}


def frontend_of(x: Any) -> Frontend:
    """The frontend of a tensor input's type (cached per type)."""
    cls = type(x)
    fe = _FRONTENDS.get(cls)
    if fe is None:
        module = cls.__module__
        if module.startswith("torch") and hasattr(x, "data_ptr"):
            fe = TORCH_FRONTEND
            TORCH_FRONTEND.types.add(cls)
        elif module.startswith("cupy"):
            fe = CUPY_FRONTEND
        elif isinstance(x, np.ndarray):
            fe = NUMPY_FRONTEND
        elif isinstance(x, DeviceArray):
            fe = DEVICE_FRONTEND
        else:
            return DEVICE_FRONTEND  # CAI / DLPack producers, or a wrong object (view_of says)
        _FRONTENDS[cls] = fe
    return fe


# --------------------------------------------------------------------------------------------
# Reading the inputs of a call


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
        s = t.shape
        key += (len(s), *s, *t.stride(), code, ALIGNMENT[p & 15])
        ptrs.append(p)
    if device < 0:
        return None  # CPU tensors: the generic path reports them
    scalars = [inputs[i] for i in layout.scalars]
    for v in scalars:
        key += (_SCALAR_MARK, SCALAR_KINDS.get(type(v), 0))
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
            key += (v.ndim, *v.shape, *contiguous_strides(v.shape), dtype_code(v.dtype), 16)
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
            key += tensor_signature(v.shape, v.strides, dtype_code(v.dtype), v.ptr)
            ptrs.append(v.ptr)
        if device == -1:  # no tensor inputs
            device = driver.current_device().ordinal if driver.gpu_available() else 0
    scalars = [inputs[i] for i in layout.scalars]
    for v in scalars:
        key += (_SCALAR_MARK, SCALAR_KINDS.get(type(v), 0))
    key += (device,)
    return Call(layout, inputs, key, ptrs, scalars, device, stream, fe, views)


# --------------------------------------------------------------------------------------------
# Scalar packing


def _float_setter(fmt: str) -> Callable[[Any, int, Any], None]:
    packer = struct.Struct(fmt).pack_into

    def pack(buffer: Any, offset: int, value: Any) -> None:
        try:
            packer(buffer, offset, value)
        except OverflowError:  # rounds to +-inf in the target type
            packer(buffer, offset, math.copysign(math.inf, float(value)))

    return pack


def _bf16_setter(buffer: Any, offset: int, value: Any) -> None:
    bits = round_to_float(np.float64(value), BFLOAT16).view(np.uint16)
    struct.pack_into("<H", buffer, offset, int(bits))


def _int_setter(fmt: str) -> Callable[[Any, int, Any], None]:
    packer = struct.Struct(fmt).pack_into

    def pack(buffer: Any, offset: int, value: Any) -> None:
        packer(buffer, offset, int(value))

    return pack


def _scalar_setter(dtype: np.dtype) -> Callable[[Any, int, Any], None]:
    if dtype == BFLOAT16:
        return _bf16_setter
    fmt = {"f2": "<e", "f4": "<f", "f8": "<d", "i4": "<i", "i8": "<q", "b1": "<?"}.get(
        f"{dtype.kind}{dtype.itemsize}"
    )
    if fmt is None:
        raise ValueError(f"unsupported scalar parameter dtype {dtype}")
    if dtype.kind == "f":
        return _float_setter(fmt)
    if dtype.kind == "b":
        packer = struct.Struct(fmt).pack_into
        return lambda buffer, offset, value: packer(buffer, offset, bool(value))
    return _int_setter(fmt)


# --------------------------------------------------------------------------------------------
# The executor


class Entry:
    """What one signature needs at launch: the configuration, the outputs, the packed
    arguments, and (once launched) the function loaded on the signature's device."""

    __slots__ = (
        "address",
        "block",
        "buffer",
        "device",
        "executor",
        "func",
        "graph",
        "grid",
        "in_slots",
        "out_shapes",
        "out_slots",
        "pointers",
        "scalar_slots",
        "shared_bytes",
        "skip",
        "slots",
        "torch_device",
        "torch_out",
    )

    def __init__(
        self,
        executor: KernelExecutor,
        plan: LaunchPlan,
        metas: Sequence[InputMeta | None],
        device: int,
    ) -> None:
        params = executor.params
        self.executor = executor
        self.device = device
        self.func: driver.Function | None = None
        self.graph: driver.LaunchGraph | None = None  # see launch()
        self.torch_device: Any = None
        self.torch_out: tuple[tuple[tuple[int, ...], int, Any], ...] | None = None
        self.grid = tuple(plan.grid)
        self.block = tuple(plan.block)
        self.shared_bytes = plan.shared_bytes
        self.out_shapes = tuple(tuple(s) for s in plan.output_shapes)
        # every parameter's bytes at an 8-byte aligned offset; pointers at 8-byte slots
        blobs: list[bytes] = []
        kinds: list[str] = []
        for p, meta in zip(params.inputs, metas, strict=True):
            if isinstance(p, TensorParam):
                assert meta is not None
                blobs.append(pack_tensor_param(0, meta.shape, meta.strides))
                kinds.append("in")
            else:
                blobs.append(bytes(p.dtype.itemsize))
                kinds.append("scalar")
        for shape in self.out_shapes:
            blobs.append(pack_tensor_param(0, shape, contiguous_strides(shape)))
            kinds.append("out")
        offsets: list[int] = []
        total = 0
        for blob in blobs:
            offsets.append(total)
            total += -(-len(blob) // 8) * 8
        self.buffer = ctypes.create_string_buffer(max(total, 8))
        for off, blob in zip(offsets, blobs, strict=True):
            ctypes.memmove(ctypes.addressof(self.buffer) + off, blob, len(blob))
        self.slots = (ctypes.c_uint64 * (max(total, 8) // 8)).from_buffer(self.buffer)
        self.in_slots = tuple(o // 8 for o, k in zip(offsets, kinds, strict=True) if k == "in")
        self.out_slots = tuple(o // 8 for o, k in zip(offsets, kinds, strict=True) if k == "out")
        scalar_params = [p for p in params.inputs if isinstance(p, ScalarParam)]
        scalar_offsets = [o for o, k in zip(offsets, kinds, strict=True) if k == "scalar"]
        self.scalar_slots = tuple(
            (_scalar_setter(p.dtype), off)
            for p, off in zip(scalar_params, scalar_offsets, strict=True)
        )
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(blobs), 1))(*(base + o for o in offsets))
        self.address = ctypes.addressof(self.pointers) if blobs else 0
        self.skip = 0 in self.grid or (
            bool(self.out_shapes) and all(math.prod(s) == 0 for s in self.out_shapes)
        )

    def set_function(self, func: driver.Function | None) -> None:
        """The loaded function this entry launches (None: load it again before the next
        launch); the graph of the one before is dropped."""
        self.func = func
        self.graph = None

    def launch(self, stream: int) -> None:
        """Launch the loaded function with the argument buffer as it is, as a one-node
        `driver.LaunchGraph` (cheaper on the host than `cuLaunchKernel`), built on the first
        launch with the entry's device current; the fast path launches `graph` directly. A
        failure is retried once with the device made current (another library may have
        switched this thread's context behind our back) and then raised."""
        try:
            if self.graph is None:
                assert self.func is not None, "launch() before load()"
                kernel = driver.KernelNode(
                    self.func, self.grid, self.block, self.shared_bytes, self.address, self.buffer
                )
                self.graph = driver.LaunchGraph([kernel])
            self.graph.launch(stream)
        except CudaError:
            _relaunch(self, stream)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def set_scalars(self, scalars: Sequence[Any], layout: InputLayout) -> None:
        """Write scalar input values into the argument buffer (InputError when out of range)."""
        buffer = self.buffer
        for i, ((setter, off), value) in enumerate(zip(self.scalar_slots, scalars, strict=True)):
            try:
                setter(buffer, off, value)
            except (struct.error, OverflowError, TypeError, ValueError) as e:
                index = layout.scalars[i]
                dtype = [p for p in self.executor.params.inputs if isinstance(p, ScalarParam)]
                raise InputError(
                    f"{layout.names[index]}: {value!r} is out of range for a scalar "
                    f"{dtype[i].dtype} parameter ({e})"
                ) from None


class KernelExecutor:
    """Runs one CompiledKernel for any signature (see the module docstring).

    `params` describes the kernel's parameters (the fusion's inputs, then its outputs); `plan`
    computes the launch and output shapes of a new signature. Launches of one executor are
    serialized by a lock (the argument buffers are shared), so threads may share it.
    """

    def __init__(self, kernel: CompiledKernel, params: KernelParams, plan: Planner) -> None:
        self.kernel = kernel
        self.params = params
        self.plan = plan
        self.is_tensor = params.is_tensor
        self.out_dtypes = tuple(p.dtype for p in params.outputs)
        self.entries: dict[tuple[int, ...], Entry] = {}
        self._functions: dict[int, driver.Function] = {}
        self._retired: list[driver.Function] = []
        self._shared_limit: dict[int, int] = {}
        self.lock = threading.Lock()

    # ---- entries ---------------------------------------------------------------------------

    def entry(self, key: tuple[int, ...]) -> Entry:
        """The entry of a signature (planned and cached on first sight)."""
        entry = self.entries.get(key)
        if entry is None:
            metas, _, device = decode_signature(key, self.is_tensor)
            plan = self.plan(metas, device)
            if len(plan.output_shapes) != len(self.params.outputs):
                raise AssertionError(
                    f"plan gave {len(plan.output_shapes)} output shapes for "
                    f"{len(self.params.outputs)} outputs"
                )
            entry = Entry(self, plan, metas, device)
            if self.kernel.ensure_block_size(entry.threads):
                # recompiled with a lower register cap: every entry loads the new function
                self._retired.extend(self._functions.values())
                self._functions.clear()
                for other in self.entries.values():
                    other.set_function(None)
            self.entries[key] = entry
        return entry

    def load(self, entry: Entry) -> driver.Function:
        """The kernel loaded on the entry's device (with the dynamic shared memory it needs)."""
        device = entry.device
        func = self._functions.get(device)
        if func is None:
            driver.get_device(device).make_current()
            module = driver.load_module(self.kernel.compile())
            func = module.get_function(self.kernel.kernel_name)
            self._functions[device] = func
            self._shared_limit[device] = 0
        if entry.shared_bytes > max(self._shared_limit.get(device, 0), 48 * 1024):
            driver.set_max_dynamic_shared_memory(func, entry.shared_bytes)
            self._shared_limit[device] = entry.shared_bytes
        entry.set_function(func)
        return func

    # ---- launching -------------------------------------------------------------------------

    def run(self, call: Call) -> list[Any]:
        """Launch `call` (planning its signature if new) and return its outputs."""
        entry = self.entries.get(call.key)
        if entry is None:
            entry = self.entry(call.key)
        return self.run_entry(entry, call)

    def run_entry(self, entry: Entry, call: Call) -> list[Any]:
        """Allocate the outputs, launch, and return the outputs (of the inputs' kind). Work
        for another device than the current one runs with that device's context current,
        and the previous one is made current again afterwards."""
        previous = driver.current_device()
        if previous.ordinal == entry.device:
            return self._run_entry(entry, call)
        driver.get_device(entry.device).make_current()
        try:
            return self._run_entry(entry, call)
        finally:
            previous.make_current()

    def _run_entry(self, entry: Entry, call: Call) -> list[Any]:
        device = entry.device
        if entry.func is None:
            self.load(entry)
        if call.needs_upload:
            call.upload()
        fe = call.frontend
        stream = call.stream
        outs, out_ptrs = fe.allocate(entry.out_shapes, self.out_dtypes, device, stream)
        if fe is TORCH_FRONTEND and entry.torch_out is None:
            TORCH_FRONTEND.prepare_entry(entry, self.out_dtypes)
        if not entry.skip:
            with self.lock:
                slots = entry.slots
                for s, p in zip(entry.in_slots, call.ptrs, strict=True):
                    slots[s] = p
                for s, p in zip(entry.out_slots, out_ptrs, strict=True):
                    slots[s] = p
                if entry.scalar_slots:
                    entry.set_scalars(call.scalars, call.layout)
                entry.launch(stream)
        return fe.finish(outs, stream)

    def prepare(self, call: Call) -> PreparedLaunch:
        """`call`'s launch with its outputs allocated once, for timing: each call of the result
        relaunches the kernel with the same arguments, overwriting the same outputs (device
        arrays, also for numpy inputs)."""
        entry = self.entry(call.key)
        driver.get_device(entry.device).make_current()
        func = self.load(entry)
        if call.needs_upload:
            call.upload()
        outs, out_ptrs = call.frontend.allocate(
            entry.out_shapes, self.out_dtypes, entry.device, call.stream
        )
        size = ctypes.sizeof(entry.buffer)
        buffer = ctypes.create_string_buffer(size)
        ctypes.memmove(buffer, entry.buffer, size)
        slots = (ctypes.c_uint64 * len(entry.slots)).from_buffer(buffer)
        for s, p in zip(entry.in_slots, call.ptrs, strict=True):
            slots[s] = p
        for s, p in zip(entry.out_slots, out_ptrs, strict=True):
            slots[s] = p
        for (setter, off), value in zip(entry.scalar_slots, call.scalars, strict=True):
            setter(buffer, off, value)
        shift = ctypes.addressof(buffer) - ctypes.addressof(entry.buffer)
        pointers = (ctypes.c_void_p * len(entry.pointers))(
            *((p or 0) + shift for p in entry.pointers)
        )
        return PreparedLaunch(self.kernel.kernel_name, func, entry, call, buffer, pointers, outs)

    def __repr__(self) -> str:
        return f"KernelExecutor({self.kernel.kernel_name!r}, {len(self.entries)} signature(s))"


class PreparedLaunch:
    """One kernel launch with fixed arguments and outputs (`KernelExecutor.prepare`)."""

    def __init__(
        self,
        name: str,
        func: driver.Function,
        entry: Entry,
        call: Call,
        buffer: Any,
        pointers: Any,
        outputs: list[Any],
    ) -> None:
        self.name = name
        self.outputs = outputs
        self._func = func
        self._entry = entry
        self._keep = (call, buffer, pointers)
        self._address = ctypes.addressof(pointers) if entry.address else 0
        self.stream = call.stream

    def __call__(self) -> None:
        e = self._entry
        if not e.skip:
            driver.launch(self._func, e.grid, e.block, e.shared_bytes, self.stream, self._address)

    def __repr__(self) -> str:
        return f"PreparedLaunch({self.name!r}, grid={self._entry.grid}, block={self._entry.block})"


# --------------------------------------------------------------------------------------------
# The per-fusion cache and its fast path

#: Called on a new signature with the read call; validates it and returns the executor whose
#: kernel serves it (compiling one if needed). Raises for inputs that do not fit.
MissHandler = Callable[[Call], KernelExecutor]


class ExecutorCache:
    """Signature -> entry, for one fusion: the hot path of `execute`.

    A call whose tensor inputs are all CUDA torch tensors on the current device, with a
    signature seen before, takes the fast path: read the metadata, look the entry up by its torch
    key (`torch_signature_prologue`), allocate with `torch.empty`, patch the pointers, launch the
    entry's graph (`Entry.launch` built it on the signature's first call) on torch's current
    stream.
    Every other call takes the general path (`read_inputs`, `miss` on a new signature,
    `run_entry`). `hits` and `misses` count lookups.

    The fast path is Python generated for the fusion's inputs (`fast_path_source`): with the
    loops over inputs unrolled it costs about half as much as the same code written as loops,
    and a launch must stay within a few microseconds of the driver's own cost.
    """

    def __init__(self, layout: InputLayout, miss: MissHandler) -> None:
        self.layout = layout
        self.entries: dict[tuple[int, ...], Entry] = {}
        self.hits = 0
        self.misses = 0
        self.last: Entry | None = None
        self._miss = miss
        self.fast_path_source = _fast_path_source(self.layout)
        self.execute: Callable[[Sequence[Any]], list[Any]] = self._general
        if self.fast_path_source:
            namespace = {
                "CACHE": self,
                "ENTRIES": self.entries,
                "BY_TORCH_KEY": {},
                "FE": TORCH_FRONTEND,
                "TYPES": TORCH_FRONTEND.types,
                "CODES": TORCH_FRONTEND.codes,
                "ALIGN": ALIGNMENT,
                "KINDS": SCALAR_KINDS,
                "LAYOUT": self.layout,
                "GENERAL": self._general,
                "driver": driver,
                "CudaError": CudaError,
                "relaunch": _relaunch,
            }
            exec(self.fast_path_source, namespace)  # our own generated code
            self.execute = namespace["execute"]

    def _general(self, inputs: Sequence[Any]) -> list[Any]:
        """The general path: any inputs, any signature."""
        call = read_inputs(inputs, self.layout)
        entry = self.lookup(call)
        self.last = entry
        return entry.executor.run_entry(entry, call)

    def lookup(self, call: Call) -> Entry:
        """The entry of a read call (a miss asks the compiler for the executor)."""
        entry = self.entries.get(call.key)
        if entry is None:
            self.misses += 1
            executor = self._miss(call)
            entry = executor.entry(call.key)
            self.entries[call.key] = entry
        else:
            self.hits += 1
        return entry


def _relaunch(entry: Entry, stream: int) -> None:
    """A launch that failed, retried with the entry's device made current (another library may
    have switched this thread's context behind our back)."""
    driver.get_device(entry.device).make_current()
    driver.launch(entry.func, entry.grid, entry.block, entry.shared_bytes, stream, entry.address)


def torch_signature_prologue(layout: InputLayout) -> tuple[list[str], str, str]:
    """The opening of a generated torch fast path, shared by the kernel and program caches:
    `def execute(inputs):` and, inside a `try:`, lines that bind `x<i>` (inputs), `p<i>` (data
    pointers), `s<i>` (shapes) and `device`. Returns those lines and two key expressions over
    them: the torch key (torch's own shape, stride and dtype objects, the pointers' low bits,
    the scalars' types: cheap to build and hash) and the signature key (the key `signature_of`
    builds on the general path, which the caches are keyed by). The fast paths keep a dict from
    torch keys to what the signature key found, so a steady call builds only the torch key.
    Needs tensor inputs."""
    tensors, scalars = layout.tensors, layout.scalars
    first = tensors[0]
    lines = [
        "def execute(inputs):",
        "    try:",
        f"        if len(inputs) != {layout.count}:",
        "            raise TypeError",
    ]
    lines += [f"        x{i} = inputs[{i}]" for i in (*tensors, *scalars)]
    lines += [f"        if type(x{first}) not in TYPES:", "            raise TypeError"]
    for i in tensors:
        lines += [f"        p{i} = x{i}.data_ptr()", f"        s{i} = x{i}.shape"]
    lines.append(f"        device = x{first}.get_device()")
    for i in tensors[1:]:
        lines += [f"        if x{i}.get_device() != device:", "            raise TypeError"]
    torch_parts = [f"s{i}, x{i}.stride(), x{i}.dtype, p{i} & 15" for i in tensors]
    torch_parts += [f"type(x{i})" for i in scalars]
    parts = [
        f"len(s{i}), *s{i}, *x{i}.stride(), CODES[x{i}.dtype], ALIGN[p{i} & 15]" for i in tensors
    ]
    parts += [f"-1, KINDS.get(type(x{i}), 0)" for i in scalars]
    return lines, f"({', '.join(torch_parts)}, device)", f"({', '.join(parts)}, device)"


def _fast_path_source(layout: InputLayout) -> str:
    """The source of the fast path for torch inputs of a fusion with this layout ("" for a
    fusion without tensor inputs). See ExecutorCache."""
    tensors, scalars = layout.tensors, layout.scalars
    if not tensors:
        return ""
    first = tensors[0]
    lines, torch_key, key = torch_signature_prologue(layout)
    lines += [
        f"        torch_key = {torch_key}",
        "        entry = BY_TORCH_KEY.get(torch_key)",
        "        if entry is None:",
        f"            entry = BY_TORCH_KEY[torch_key] = ENTRIES[{key}]",
        "        graph = entry.graph",
        "        alloc = entry.torch_out",
        "        if graph is None or alloc is None or driver.current_device().ordinal != device:",
        "            raise TypeError",
        "    except (AttributeError, TypeError, KeyError):",
        "        return GENERAL(inputs)",
        "    CACHE.hits += 1",
        "    CACHE.last = entry",
        "    stream = FE.raw_stream(device)",
        "    empty = FE.empty",
        "    tdev = entry.torch_device",
        "    slots = entry.slots",
        "    lock = entry.executor.lock",
        "    lock.acquire()",
        "    try:",
        "        outs = []",
        "        for sizes, slot, dtype in alloc:",
        "            out = empty(*sizes, dtype=dtype, device=tdev)",
        "            slots[slot] = out.data_ptr()",
        "            outs.append(out)",
    ]
    if len(tensors) == 1:
        lines.append(f"        slots[entry.in_slots[0]] = p{first}")
    else:
        names = ", ".join(f"i{i}" for i in tensors)
        lines.append(f"        {names} = entry.in_slots")
        lines += [f"        slots[i{i}] = p{i}" for i in tensors]
    if scalars:
        values = ", ".join(f"x{i}" for i in scalars)
        lines.append(f"        entry.set_scalars(({values},), LAYOUT)")
    lines += [
        "        try:",
        "            graph.launch(stream)",
        "        except CudaError:",
        "            relaunch(entry, stream)",
        "    finally:",
        "        lock.release()",
        "    return outs",
    ]
    return "\n".join(lines) + "\n"
