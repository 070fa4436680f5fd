"""Runnables kept on disk, so that a new process runs a signature it ran before without compiling.

A filled kernel cache spares NVRTC, but a first call would still import the passes, schedule,
segment, lower and emit CUDA only to learn which cubin to load: most of a first call once the
kernels are cached. The store keeps, per fusion and signature, what ran it, as data a process
can load with the runtime alone (nvFuser's serialized FusionExecutorCache does the same):

- **A kernel** (the signature's `Entry`): the kernel, and its launch for the signature (grid,
  block, dynamic shared memory, output shapes).
- **A program** (the signature's `Specialization`): the `host.program` as text, its kernels, and
  the launch of every executor entry the program asked for. The loaded program is parsed and
  run by the `HostEvaluator`, so what runs is still the IR.

A kernel is written once, as a blob (`.kernel`: its name, CUDA source, parameters and architecture
as JSON, then its cubin) named by its digest; a signature's record (`.run`) names its kernels' blobs
and holds the few numbers of its launches, so a new shape of a stored kernel adds a few hundred
bytes. A record's name is a digest of everything the runnable depends on: fuser's own code
(`build_id`: the size and modification time of each of its source files, so an edited checkout never
loads a record an older one wrote), the fusion's text and compile options (the `FusionCompiler`'s),
the device's architecture, SM count and shared memory limit, and the signature less its device
ordinal. Both kinds of file are kept by `kernel_cache` beside the cubins (same folder, switch, size
cap and LRU eviction, same digest check and no-follow reads). Records are written at exit (`flush`),
so a new shape does not wait for the disk. The store is off with the kernel cache
(`FUSER_KERNEL_CACHE=0`), and with `FUSER_RUNNABLE_STORE=0` alone.

Anything wrong with a record (unreadable, damaged, another format, an evicted kernel, a program
the evaluator refuses) makes `load` return None: the caller compiles as if nothing were stored,
and `save` replaces the record. Programs with `index` arguments (specialized by value) are not
stored.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from fuser.dialects.common import op_text
from fuser.errors import FuserError
from fuser.runtime import driver, kernel_cache
from fuser.runtime.compiled_kernel import CompiledKernel
from fuser.runtime.dispatch import Runnable
from fuser.runtime.executor import (
    Entry,
    KernelExecutor,
    KernelParams,
    LaunchPlan,
    ScalarParam,
    TensorParam,
)
from fuser.runtime.signature import DTYPE_CODES, DTYPES_BY_CODE, InputMeta, decode_signature

FORMAT = 2
"""The record layout's version; a record of another is ignored."""

#: The packages whose source files make up `build_id`.
_PACKAGES = ("fuser", "fuser.dialects", "fuser.transforms", "fuser.codegen", "fuser.runtime")


@cache
def build_id() -> str:
    """A digest of fuser's own source files (path, size and modification time of each
    `.py` and `.cuh`): changes with any edit or reinstall."""
    h = hashlib.sha256()

    def walk(folder: str, prefix: str) -> None:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                walk(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith((".py", ".cuh")):
                try:
                    info = entry.stat()
                except OSError:
                    continue
                h.update(f"{prefix}{entry.name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())

    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in spec.submodule_search_locations or () if spec is not None else ():
            walk(folder, f"{package}/")
    return h.hexdigest()


def enabled() -> bool:
    """Whether runnables are stored: with the kernel cache, unless `FUSER_RUNNABLE_STORE=0`."""
    if kernel_cache.switched_off("FUSER_RUNNABLE_STORE"):
        return False
    return kernel_cache.cache_dir() is not None


class RunnableStore:
    """The stored runnables of one fusion compiled with one set of options (see the module
    docstring). `describe()` gives the fusion's text and options; it is called once, on the
    first lookup. `num_streams` is the stream pool a loaded program runs with."""

    def __init__(
        self, describe: Callable[[], str], is_tensor: Sequence[bool], num_streams: int
    ) -> None:
        self._describe = describe
        self._digest: str | None = None
        self.is_tensor = tuple(is_tensor)
        self.num_streams = num_streams
        self.loaded = 0
        """Runnables this store loaded (each a signature that compiled nothing)."""
        self._executors: dict[str, KernelExecutor] = {}  # by kernel blob
        self._last_name: tuple[tuple[int, ...], str] | None = None

    def name(self, key: tuple[int, ...]) -> str:
        """The record name of a signature: see the module docstring (kept for the last
        signature asked about: a miss asks `load`, then `save`)."""
        last = self._last_name
        if last is not None and last[0] == key:
            return last[1]
        if self._digest is None:
            self._digest = hashlib.sha256(self._describe().encode()).hexdigest()
        dev = driver.get_device(key[-1])
        text = (
            f"{build_id()}\0{self._digest}\0{dev.arch}\0{dev.sm_count}\0"
            f"{dev.max_shared_memory_per_block_optin}\0{key[:-1]}"
        )
        name = hashlib.sha256(text.encode()).hexdigest()
        self._last_name = (key, name)
        return name

    # ---- loading ---------------------------------------------------------------------------

    def load(self, key: tuple[int, ...]) -> Runnable | None:
        """The stored runnable of a signature, ready to run on its device; None when nothing
        (usable) is stored."""
        if not enabled():
            return None
        data = kernel_cache.load(self.name(key), "run")
        if data is None:
            return None
        try:
            record = json.loads(data)
            if record.get("format") != FORMAT:
                return None
            runnable = self._runnable(record, key)
        except (FuserError, ValueError, KeyError, TypeError, IndexError):
            return None  # damaged or refused: compiled again, and the record replaced
        self.loaded += 1
        return runnable

    def _runnable(self, record: dict[str, Any], key: tuple[int, ...]) -> Runnable:
        device = key[-1]
        executors: dict[str, KernelExecutor] = {}
        entries: list[Entry] = []
        for blob, kernel_entries in record["kernels"]:
            executor = self._executor(blob)
            executors[executor.kernel.kernel_name] = executor
            for signature, grid, block, smem, out_shapes in kernel_entries:
                signature = (*signature, device)
                entry = executor.entries.get(signature)
                if entry is None:
                    plan = LaunchPlan(
                        tuple(grid), tuple(block), smem, tuple(tuple(s) for s in out_shapes)
                    )
                    metas, _, _ = decode_signature(signature, executor.is_tensor)
                    entry = Entry(executor, plan, signature, metas)
                    executor.entries[signature] = entry
                entries.append(entry)
        program = record.get("program")
        if program is None:
            (entry,) = entries
            return entry
        from fuser.runtime.host_evaluator import HostEvaluator, parse_program
        from fuser.runtime.kernel_binding import ExecutorKernel

        evaluator = HostEvaluator(
            parse_program(program),
            {name: ExecutorKernel(e) for name, e in executors.items()},
            num_streams=self.num_streams,
        )
        return evaluator.specialize(key)

    def _executor(self, blob: str) -> KernelExecutor:
        """The executor of a stored kernel, one per kernel for all the signatures loaded."""
        executor = self._executors.get(blob)
        if executor is None:
            data = kernel_cache.load(blob, "kernel")
            if data is None:
                raise ValueError(f"kernel {blob} is not stored (evicted)")
            head, _, cubin = data.partition(b"\n")
            executor = self._executors[blob] = _executor(json.loads(head), cubin)
        return executor

    # ---- saving ----------------------------------------------------------------------------

    def save(self, key: tuple[int, ...], runnable: Runnable) -> None:
        """Keep what runs a signature (a kernel's entry or a program's specialization); a
        program the store cannot describe is skipped. The record is taken now and written by
        `flush`, which runs at exit: writing a file costs a new shape more than the rest of its
        first call (about 0.5 ms on an H100 node, on a thread too, by the GIL's hand-offs)."""
        if not enabled():
            return
        record = _record(runnable)
        if record is not None:
            with _pending_lock:
                if not _pending:
                    _register_flush()
                _pending.append((self.name(key), record))
                full = len(_pending) >= MAX_PENDING
            if full:
                flush()


MAX_PENDING = 64
"""Records kept for the exit's `flush` at most: a process that meets more signatures writes
them 64 at a time (holding their kernels alive meanwhile)."""

_pending: list[tuple[str, dict[str, Any]]] = []
_pending_lock = threading.Lock()


@cache
def _register_flush() -> None:
    atexit.register(flush)


#: kernel -> (its cubin, the name of the blob written for them) in this process
_blobs: weakref.WeakKeyDictionary[CompiledKernel, tuple[bytes, str]] = weakref.WeakKeyDictionary()


def _blob(kernel: CompiledKernel, cubin: bytes, header: dict[str, Any]) -> str:
    """The name of a kernel's blob (its header as JSON, a newline, its cubin), written once."""
    known = _blobs.get(kernel)
    if known is not None and known[0] is cubin:
        return known[1]
    data = json.dumps(header).encode() + b"\n" + cubin
    name = hashlib.sha256(data).hexdigest()
    kernel_cache.store(name, data, "kernel")
    _blobs[kernel] = (cubin, name)
    return name


#: host evaluator -> its program as text, printed once in this process
_programs: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _write(name: str, record: dict[str, Any]) -> None:
    """Write a record: its kernels as blobs (once each) and its program as text (printed once),
    then the record naming them."""
    evaluator = record["program"]
    if evaluator is not None:
        text = _programs.get(evaluator)
        if text is None:
            text = _programs[evaluator] = op_text(evaluator.program)
        record["program"] = text
    record["kernels"] = [
        [_blob(kernel, cubin, header), entries]
        for kernel, cubin, header, entries in record["kernels"]
    ]
    kernel_cache.store(name, json.dumps(record).encode(), "run")


def flush() -> None:
    """Write every record saved so far (at exit, or when a caller wants them on disk now)."""
    with _pending_lock:
        records = list(_pending)
        _pending.clear()
    for name, record in records:
        _write(name, record)


def _unplanned(metas: tuple[InputMeta | None, ...], device: int) -> LaunchPlan:
    raise AssertionError("a stored kernel's executor plans no new signature")


def _executor(k: dict[str, Any], cubin: bytes) -> KernelExecutor:
    """A stored kernel's executor (its entries are added by the caller)."""
    inputs: list[TensorParam | ScalarParam] = []
    for rank, code in k["inputs"]:
        dtype = DTYPES_BY_CODE[code]
        inputs.append(ScalarParam(dtype) if rank is None else TensorParam(rank, dtype))
    outputs = tuple(TensorParam(rank, DTYPES_BY_CODE[code]) for rank, code in k["outputs"])
    kernel = CompiledKernel.from_cubin(
        k["source"], k["name"], cubin, arch=k["arch"], block_size=k["block_size"]
    )
    return KernelExecutor(kernel, KernelParams(tuple(inputs), outputs), _unplanned)


def _record(runnable: Runnable) -> dict[str, Any] | None:
    """A runnable's record, its kernels still objects (`_write` makes them blobs); None for a
    program with `index` arguments."""
    kernels: list[tuple[CompiledKernel, bytes, dict[str, Any], list[Any]]] = []

    def add(executor: KernelExecutor, used: list[Entry]) -> None:
        kernel = executor.kernel
        params = executor.params
        header = {
            "name": kernel.kernel_name,
            "source": kernel.source,
            "arch": kernel.arch,
            "block_size": kernel.block_size,
            "inputs": [
                [p.rank if isinstance(p, TensorParam) else None, DTYPE_CODES[p.dtype]]
                for p in params.inputs
            ],
            "outputs": [[p.rank, DTYPE_CODES[p.dtype]] for p in params.outputs],
        }
        entries = [
            [
                list(e.key[:-1]),
                list(e.grid),
                list(e.block),
                e.shared_bytes,
                [list(s) for s in e.out_shapes],
            ]
            for e in used
        ]
        kernels.append((kernel, kernel.compile(), header, entries))

    program: Any = None
    if isinstance(runnable, Entry):
        add(runnable.executor, [runnable])
    else:
        from fuser.runtime.host_evaluator import Specialization

        if not isinstance(runnable, Specialization) or runnable.evaluator.index_scalars:
            return None
        used: dict[KernelExecutor, list[Entry]] = {}
        for launcher in runnable.launches:
            executor = getattr(launcher, "executor", None)
            entry = getattr(launcher, "entry", None)
            if not isinstance(executor, KernelExecutor) or not isinstance(entry, Entry):
                return None
            if entry not in used.setdefault(executor, []):
                used[executor].append(entry)
        for executor, entries in used.items():
            add(executor, entries)
        program = runnable.evaluator  # printed by the writer, once
    return {"format": FORMAT, "kernels": kernels, "program": program}
