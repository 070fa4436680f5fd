"""The frameworks a call's tensors come from, and what each means for the call's outputs.

A `Frontend` says how the outputs of a call are allocated and handed back, and which stream it
runs on: torch tensors in -> `torch.empty` on the inputs' device and torch's current stream;
cupy arrays -> `cupy.empty` on cupy's current stream; numpy arrays -> copied to `DeviceArray`s,
results copied back; anything else -> `DeviceArray`s from the stream-ordered pool, launched on the
stream of the first `DeviceArray` input (the legacy default stream when there is none).
`frontend_of` picks one by the type of the first tensor input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fuser.errors import InputError
from fuser.runtime import driver
from fuser.runtime.arrays import BFLOAT16, DeviceArray, host_view, view_of
from fuser.runtime.signature import DTYPES_BY_CODE, TORCH_DTYPE_CODES

Shape = tuple[int, ...]
Shapes = Sequence[Shape]


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

    def view(self, base: Any, shape: Shape, strides: Shape, offset: int) -> Any:
        """A view of the call's input `base`: an output the program returns as a view of an
        input, as nvFuser aliases it. `shape` and `strides` (in elements) describe it, its first
        element `offset` elements past `base`'s. Here (and for an input of another kind than
        the call's frontend) a `DeviceArray` viewing `base`'s memory, keeping `base` alive, on
        `base`'s stream where it is a DeviceArray."""
        v = view_of(base)
        ptr = v.ptr + offset * v.dtype.itemsize
        stream = base.stream if isinstance(base, DeviceArray) else None
        return DeviceArray.viewing(base, ptr, shape, strides, v.dtype, v.device, stream)

    def permuted(self, out: Any, dims: Sequence[int]) -> Any:
        """A view of `out` (an output of this frontend's kind) with its dims in the order
        `dims`, as torch's `permute` (`permute_outputs`); here a strided `DeviceArray`."""
        strides = out.element_strides
        shape, strides = [out.shape[d] for d in dims], [strides[d] for d in dims]
        return DeviceArray.viewing(
            out, out.ptr, shape, strides, out.dtype, out.device_id, out.stream
        )

    def check_writable(self, dst: Any, what: str) -> None:
        """InputError naming `what` where an output cannot be written into `dst` (an input the
        fusion aliases): here, a strided array (arrays of this kind are written whole)."""
        if not view_of(dst).is_contiguous():
            raise InputError(
                f"{what} must be contiguous: an output is written into it (add_output's "
                "alias_input), and fuser writes arrays of this kind whole"
            )

    def write_into(self, dst: Any, src: Any, what: str, first: Any) -> None:
        """Copies a call's output `src` (of this frontend's kind, contiguous) into `dst`, an
        input the fusion aliases (`fusion.output ... aliases`) that `check_writable` passed,
        after the call's kernels: a device copy on the stream they ran on (`stream_for(first)`,
        the first tensor input)."""
        view = view_of(dst)
        nbytes = view.numel * view.dtype.itemsize
        if nbytes:
            driver.memcpy_dtod_async(view.ptr, view_of(src).ptr, nbytes, self.stream_for(first))


class _NumpyFrontend(Frontend):
    """numpy in: inputs are copied to the device, outputs copied back (synchronously)."""

    def stream_for(self, first: Any) -> int:
        return 0

    def finish(self, outs: list[Any], stream: int) -> list[Any]:
        return [o.numpy(stream) for o in outs]

    def view(self, base: Any, shape: Shape, strides: Shape, offset: int) -> Any:
        """A numpy view of the input array (of a contiguous copy of it where it is strided: the
        program saw the contiguous device copy)."""
        return host_view(np.ascontiguousarray(base), shape, strides, offset)

    def permuted(self, out: Any, dims: Sequence[int]) -> Any:
        return out.transpose(dims)

    def check_writable(self, dst: Any, what: str) -> None:
        if not dst.flags.writeable:
            raise InputError(f"{what} is read-only: an output is written into it (alias_input)")

    def write_into(self, dst: Any, src: Any, what: str, first: Any) -> None:
        # the output came back to the host (the call is complete); the reference's, held in
        # float64 for an f32 input, is rounded
        np.copyto(dst, src, casting="unsafe")


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
        """The signature's dtype code of a torch dtype (cached in `codes`)."""
        code = self.codes.get(torch_dtype)
        if code is None:
            code = self.codes[torch_dtype] = TORCH_DTYPE_CODES.get(str(torch_dtype), 0)
        return code

    def _setup(self) -> None:
        import torch  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

        for code, dtype in DTYPES_BY_CODE.items():
            self.dtypes[dtype] = getattr(torch, dtype.name)
            self.codes[self.dtypes[dtype]] = code
        self.dtypes[np.dtype(np.uint8)] = torch.uint8  # raw bytes (a program's workspace)
        raw: Callable[[int], int] | None = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None:  # a torch without it: the public (slower) query

            def public_stream(device: int) -> int:
                return torch.cuda.current_stream(device).cuda_stream

            raw = public_stream
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

    def check_writable(self, dst: Any, what: str) -> None:
        if dst.requires_grad and dst.is_leaf:
            raise InputError(
                f"{what} requires grad: torch forbids writing an output into it (alias_input)"
            )
        _check_not_expanded(dst.shape, dst.stride(), what)

    def write_into(self, dst: Any, src: Any, what: str, first: Any) -> None:
        dst.copy_(src)  # on torch's current stream, the call's: any strides

    def permuted(self, out: Any, dims: Sequence[int]) -> Any:
        return out.permute(*dims)

    def view(self, base: Any, shape: Shape, strides: Shape, offset: int) -> Any:
        if frontend_of(base) is not self:  # a DeviceArray or cupy input beside torch ones
            return super().view(base, shape, strides, offset)
        return base.as_strided(shape, strides, base.storage_offset() + offset)

    def allocate(
        self, shapes: Shapes, dtypes: Sequence[np.dtype], device: int, stream: int
    ) -> tuple[list[Any], list[int]]:
        outs = []
        for s, d in zip(shapes, dtypes, strict=True):
            out = self.empty(*torch_sizes(s), dtype=self.dtypes[d], device=f"cuda:{device}")
            outs.append(out)
        return outs, [o.data_ptr() for o in outs]

    def output_specs(
        self, device: int, shapes: Shapes, dtypes: Sequence[np.dtype]
    ) -> tuple[Any, tuple[tuple[tuple[Any, ...], Any], ...]]:
        """What a fast path allocates outputs with: the torch device, and per output the
        positional sizes (`torch_sizes`) and torch dtype for `torch.empty`."""
        import torch  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

        if not self.dtypes:
            self._setup()
        specs = tuple(
            (torch_sizes(shape), self.dtypes[d]) for shape, d in zip(shapes, dtypes, strict=True)
        )
        return torch.device("cuda", device), specs


class _CupyFrontend(Frontend):
    """cupy in: `cupy.empty` outputs on cupy's current stream (bf16 outputs: DeviceArray, as
    cupy has no bfloat16)."""

    def stream_for(self, first: Any) -> int:
        import cupy  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

        return int(cupy.cuda.get_current_stream().ptr)

    def permuted(self, out: Any, dims: Sequence[int]) -> Any:
        return out.transpose(dims)

    def check_writable(self, dst: Any, what: str) -> None:
        _check_not_expanded(dst.shape, dst.strides, what)

    def write_into(self, dst: Any, src: Any, what: str, first: Any) -> None:
        dst[...] = src  # on cupy's current stream, the call's: any strides

    def view(self, base: Any, shape: Shape, strides: Shape, offset: int) -> Any:
        if frontend_of(base) is not self:  # a DeviceArray beside cupy inputs
            return super().view(base, shape, strides, offset)
        import cupy  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

        item = base.dtype.itemsize
        return cupy.ndarray(
            shape, base.dtype, base.data + offset * item, tuple(s * item for s in strides)
        )

    def allocate(
        self, shapes: Shapes, dtypes: Sequence[np.dtype], device: int, stream: int
    ) -> tuple[list[Any], list[int]]:
        import cupy  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)

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


def permute_outputs(outputs: list[Any], permutes: Sequence[tuple[int, Sequence[int]]]) -> list[Any]:
    """A call's outputs with each output k of `permutes` (`transforms.output_layouts`: the
    kernels wrote it row-major in another order of its dims) handed back as its view permuted
    by `dims`, in its own kind (`Frontend.permuted`)."""
    outputs = list(outputs)
    for k, dims in permutes:
        out = outputs[k]
        outputs[k] = frontend_of(out).permuted(out, dims)
    return outputs


def write_aliases(
    inputs: Sequence[Any],
    outputs: list[Any],
    aliases: Sequence[tuple[int, int]],
    names: Sequence[str],
    first_tensor: int,
) -> list[Any]:
    """A call's returned outputs: each aliased output (`(output, input)` in `aliases`) written
    into its input, in the input's framework, and left out. An output whose run-time shape is
    not its input's, or an input that cannot be written (`check_writable`), is an InputError
    naming it, raised before anything is written."""
    for o, i in aliases:
        got, into = tuple(outputs[o].shape), tuple(inputs[i].shape)
        if got != into:
            raise InputError(
                f"output #{o} has shape {list(got)} but is written into {names[i]} of shape "
                f"{list(into)} (add_output's alias_input): they must be equal"
            )
        frontend_of(inputs[i]).check_writable(inputs[i], names[i])
    for o, i in aliases:
        frontend_of(inputs[i]).write_into(inputs[i], outputs[o], names[i], inputs[first_tensor])
    hidden = {o for o, _ in aliases}
    return [out for k, out in enumerate(outputs) if k not in hidden]


def _check_not_expanded(shape: Sequence[int], strides: Sequence[int], what: str) -> None:
    """InputError where an array's elements share memory (a stride 0 along a dim of extent > 1,
    an expanded view): no output can be written into it."""
    if any(st == 0 and n > 1 for n, st in zip(shape, strides, strict=True)):
        raise InputError(
            f"{what} is an expanded view (a stride 0): its elements share memory, so an output "
            "cannot be written into it (alias_input)"
        )
