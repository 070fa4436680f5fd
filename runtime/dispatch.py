"""One fusion's dispatch: the signature -> runnable cache and the generated fast path of `execute`.

What runs a signature is a *runnable*: a program's `Specialization` (`fuser.runtime.
host_evaluator`), or, for a signature that one kernel serves, that kernel's `Entry`
(`fuser.runtime.executor`), a program of one launch (as in nvFuser's FusionKernelRuntime, where a
single kernel is a one-segment runtime). `SignatureCache` keeps one dict from signatures to
runnables and calls one miss handler, the compiler's, for a signature it has not seen.

`SignatureCache.execute` is the hot path. For a call whose tensor inputs are all CUDA torch
tensors on the current device, with a known signature, it is Python generated for the fusion's
inputs (`fast_path_source`, defined through `fuser.runtime.generated`: tracebacks show it and
`FUSER_DUMP=fast_path` prints it). It reads the inputs' metadata and looks the runnable up by a
*torch key* built from torch's own shape, stride and dtype objects (cheap to build and hash),
which maps to what the signature found the first time. An entry's launch it makes itself:
allocate the outputs with `torch.empty`, patch the pointers, launch the entry's one-node graph
on torch's current stream (its second launch builds the graph: `Entry.launch`). A specialization
it runs with the pointers and scalars it read.
Every other call takes the general path: `read_inputs`, the miss handler on a new signature,
`runnable.run(call)`. With the loops over inputs unrolled the fast path costs about half as much
as the same code written as loops, and a launch must stay within a few microseconds of the
driver's own cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fuser.errors import CudaError
from fuser.runtime import driver
from fuser.runtime.calls import Call, InputLayout, read_inputs
from fuser.runtime.executor import relaunch
from fuser.runtime.frontends import TORCH_FRONTEND
from fuser.runtime.generated import define
from fuser.runtime.signature import NAMESPACE, SCALAR_PART, TENSOR_PART


class Runnable(Protocol):
    """What runs one signature: an `Entry` (one launch) or a `Specialization` (a program)."""

    one_launch: bool
    """True for an `Entry`, whose launch the fast path makes itself."""

    def run(self, call: Call) -> list[Any]:
        """Run a read call of this signature; outputs come back as the inputs' kind."""
        ...


#: Called on a signature the cache has not seen, with the read call: validates it and returns
#: the runnable for it (compiling what it needs). Raises for inputs that do not fit.
MissHandler = Callable[[Call], Runnable]


class SignatureCache:
    """Signature -> runnable, for one fusion (see the module docstring). `hits` and `misses`
    count lookups; `last` is the runnable of the last call."""

    def __init__(self, layout: InputLayout, miss: MissHandler) -> None:
        self.layout = layout
        self.entries: dict[tuple[int, ...], Runnable] = {}
        self.hits = 0
        self.misses = 0
        self.last: Runnable | None = None
        self._miss = miss
        self.fast_path_source = fast_path_source(layout)
        self.execute: Callable[[Sequence[Any]], list[Any]] = self.general
        if self.fast_path_source:
            namespace = {
                **NAMESPACE,
                "CACHE": self,
                "RUNNABLES": self.entries,
                "BY_TORCH_KEY": {},
                "FE": TORCH_FRONTEND,
                "TYPES": TORCH_FRONTEND.types,
                "CODES": TORCH_FRONTEND.codes,
                "LAYOUT": layout,
                "GENERAL": self.general,
                "driver": driver,
                "CudaError": CudaError,
                "relaunch": relaunch,
            }
            self.execute = define(
                self.fast_path_source, "execute", namespace, f"execute of @{layout.fusion_name}"
            )

    def general(self, inputs: Sequence[Any]) -> list[Any]:
        """The general path: any inputs, any signature."""
        call = read_inputs(inputs, self.layout)
        runnable = self.lookup(call)
        self.last = runnable
        return runnable.run(call)

    def lookup(self, call: Call) -> Runnable:
        """The runnable of a read call (a miss asks the compiler for it)."""
        runnable = self.entries.get(call.key)
        if runnable is None:
            self.misses += 1
            runnable = self._miss(call)
            self.entries[call.key] = runnable
        else:
            self.hits += 1
        return runnable


def fast_path_source(layout: InputLayout) -> str:
    """The source of `execute` for torch inputs of a fusion with this layout ("" for a fusion
    without tensor inputs): see the module docstring. It binds `x<i>` (inputs), `p<i>` (data
    pointers) and `s<i>` (shapes); the signature comes from the templates of
    `fuser.runtime.signature`."""
    tensors, scalars = layout.tensors, layout.scalars
    if not tensors:
        return ""
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
        TENSOR_PART.format(
            shape=f"s{i}", strides=f"x{i}.stride()", code=f"CODES[x{i}.dtype]", ptr=f"p{i}"
        )
        for i in tensors
    ]
    parts += [SCALAR_PART.format(value=f"x{i}") for i in scalars]
    ptrs = "".join(f"p{i}, " for i in tensors)
    values = "".join(f"x{i}, " for i in scalars)
    lines += [
        f"        torch_key = ({', '.join(torch_parts)}, device)",
        "        runnable = BY_TORCH_KEY.get(torch_key)",
        "        if runnable is None:",
        f"            runnable = RUNNABLES[({', '.join(parts)}, device)]",
        "            BY_TORCH_KEY[torch_key] = runnable",
        "        if driver.current_device().ordinal != device:",
        "            raise TypeError",
        "        if runnable.one_launch:",
        "            graph = runnable.graph  # None until the entry's second launch builds it",
        "            alloc = runnable.torch_out",
        "            if alloc is None:",
        "                raise TypeError",
        "        elif runnable.torch_device is None:",
        "            raise TypeError",
        "    except (AttributeError, TypeError, KeyError):",
        "        return GENERAL(inputs)",
        "    CACHE.hits += 1",
        "    CACHE.last = runnable",
        "    stream = FE.raw_stream(device)",
        "    if not runnable.one_launch:  # a program",
        f"        return runnable.execute(inputs, ({ptrs}), ({values}), stream, FE)",
        "    empty = FE.empty",
        "    tdev = runnable.torch_device",
        "    slots = runnable.slots",
        "    lock = runnable.executor.lock",
        "    lock.acquire()",
        "    try:",
        "        outs = []",
        "        for sizes, slot, dtype in alloc:",
        "            out = empty(*sizes, dtype=dtype, device=tdev)",
        "            slots[slot] = out.data_ptr()",
        "            outs.append(out)",
    ]
    if len(tensors) == 1:
        lines.append(f"        slots[runnable.in_slots[0]] = p{first}")
    else:
        names = ", ".join(f"i{i}" for i in tensors)
        lines.append(f"        {names} = runnable.in_slots")
        lines += [f"        slots[i{i}] = p{i}" for i in tensors]
    if scalars:
        lines.append(f"        runnable.set_scalars(({values}), LAYOUT)")
    lines += [
        "        if graph is None:",
        "            runnable.launch(stream)",
        "        else:",
        "            try:",
        "                graph.launch(stream)",
        "            except CudaError:",
        "                relaunch(runnable, stream)",
        "    finally:",
        "        lock.release()",
        "    return outs",
    ]
    return "\n".join(lines) + "\n"
