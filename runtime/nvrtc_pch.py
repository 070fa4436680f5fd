"""NVRTC's precompiled headers (PCH) for the kernels of this process: which to write, which to use.

A generated kernel's source starts with its `#include` lines (`fuser.codegen.preamble` prints
them sorted, so kernels that use the same headers share the same prefix). Once a prefix that
includes a CUDA header (`cuda_bf16.h`, ...) has been compiled `WRITE_AFTER` times in a process,
a thread writes NVRTC's PCH of the prefix, and later compiles of the prefix load it: they skip
parsing those headers (about a quarter of a bf16 pointwise kernel's compile). Writing costs about
as much as one such kernel's compile and slows down any compile running beside it, so it waits
for a prefix that recurs, and starts after a compile, never before one; fuser's own headers get
no PCH, they parse in less time than a PCH takes to load.

What NVRTC does with PCH files decides the rest:
- A PCH file is valid only in the process that wrote it: NVRTC maps it at the address of its
  process-wide PCH heap and refuses it in another process (warning 20282). So nothing is shared
  between processes; each one writes its files into a private folder of its own
  (`kernel_cache.pch_folder()`, removed at exit).
- Loading a damaged PCH file (cut short, bytes changed) crashes the process. So a file is used
  only if this process wrote it and its size, modification time and inode are unchanged since.
- The heap is process-wide: one compile at a time writes or uses a PCH (`heap`); a compile that
  finds it taken goes without one.
- Writing a PCH takes a core beside the compiles: `kernel_cache.pch_folder()` turns PCH off by
  default on machines with few CPUs.
- Anything that goes wrong (no folder, a failed write, a file NVRTC refuses) means compiling
  without PCH for that prefix from then on, which gives the same cubin; it never fails a compile.

The NVRTC calls themselves (the `Writer`) are `fuser.runtime.compiled_kernel`'s.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fuser.runtime import kernel_cache

#: NVRTC options of every compile that writes or uses a PCH: no log line for a PCH used or
#: written, and a log line saying why when NVRTC refuses a file.
PCH_LOG_OPTIONS = ("--pch-messages=false", "--pch-verbose=true")
#: Compiles of a prefix without a PCH after which its PCH is written.
WRITE_AFTER = 2
_INCLUDE_LINE = re.compile(r"#include\s+[<\"][^>\"\n]+[>\"][ \t]*\n?")

#: Writes the PCH of the `#include` lines `prefix` compiled with `options` to `path`; True when
#: NVRTC wrote it.
Writer = Callable[[str, list[str], Path], bool]


def split_includes(source: str) -> tuple[str, str]:
    """(the `#include` lines a source starts with, the rest); blank lines between them count
    with the includes. A PCH covers the first part."""
    pos = 0
    end = 0
    while True:
        while pos < len(source) and source[pos] in " \t\n":
            pos += 1
        m = _INCLUDE_LINE.match(source, pos)
        if m is None:
            return source[:end], source[end:]
        pos = end = m.end()


@dataclass(frozen=True)
class PchUse:
    """A compile's use of a PCH: its key and the NVRTC options that load it. The compile holds
    the PCH heap until it calls `PchCache.done`."""

    key: str
    options: tuple[str, ...]


@dataclass
class PchCache:
    """This process's precompiled headers, by key (a digest of the prefix, the options and
    `salt`: NVRTC's version and the headers' text). `compiled` counts the compiles of each key
    without a PCH, `files` holds each written file with its (size, mtime, inode) when written,
    `pending` the keys being written, `refused` those that could not be written or used."""

    heap: threading.Lock = field(default_factory=threading.Lock)
    state: threading.Lock = field(default_factory=threading.Lock)
    compiled: dict[str, int] = field(default_factory=dict)
    files: dict[str, tuple[Path, tuple[int, int, int]]] = field(default_factory=dict)
    pending: dict[str, threading.Thread] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)

    def use(self, source: str, options: Sequence[str], salt: str) -> PchUse | None:
        """How to compile `source` with its PCH, holding the heap; or None: no PCH written for
        its prefix, the heap taken, or the file changed since it was written."""
        found = _prefix_key(source, options, salt)
        if found is None:
            return None
        key = found[0]
        with self.state:
            known = self.files.get(key)
        if known is None:
            return None
        path, identity = known
        if not self.heap.acquire(blocking=False):
            return None
        if _file_identity(path) != identity:  # never handed to NVRTC, which would crash
            self.heap.release()
            self.refuse(key)
            return None
        return PchUse(key, (f"--use-pch={path}", *PCH_LOG_OPTIONS))

    def done(self, use: PchUse) -> None:
        """The compile that `use` was for is over: the heap is free."""
        self.heap.release()

    def refuse(self, key: str) -> None:
        """Never use or write the PCH of `key` again in this process."""
        with self.state:
            self.refused.add(key)
            self.files.pop(key, None)

    def start_writing(self, source: str, options: Sequence[str], salt: str, write: Writer) -> None:
        """After `source` compiled without a PCH: write the PCH of its prefix on a thread if
        this was its `WRITE_AFTER`th such compile, unless it is written, being written or
        refused."""
        found = _prefix_key(source, options, salt)
        if found is None:
            return
        key, prefix, folder = found
        with self.state:
            if key in self.files or key in self.pending or key in self.refused:
                return
            self.compiled[key] = self.compiled.get(key, 0) + 1
            if self.compiled[key] < WRITE_AFTER:
                return
            writer = threading.Thread(
                target=self._write,
                args=(key, prefix, list(options), folder / f"{key}.pch", write),
                name="fuser-nvrtc-pch",
                daemon=True,
            )
            self.pending[key] = writer
            writer.start()

    def _write(self, key: str, prefix: str, options: list[str], path: Path, write: Writer) -> None:
        try:
            with self.heap:
                written = write(prefix, [*options, f"--create-pch={path}", *PCH_LOG_OPTIONS], path)
        except Exception:  # a PCH only saves time: none is made
            written = False
        identity = _file_identity(path) if written else None
        with self.state:
            del self.pending[key]
            if identity is None:
                self.refused.add(key)
            else:
                self.files[key] = (path, identity)

    def wait(self) -> None:
        """Until every PCH being written is done (for tests and benchmarks)."""
        while True:
            with self.state:
                writers = list(self.pending.values())
            if not writers:
                return
            for writer in writers:
                writer.join()


PCH = PchCache()
"""The precompiled headers of this process."""


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _prefix_key(source: str, options: Sequence[str], salt: str) -> tuple[str, str, Path] | None:
    """(key, prefix, folder) of the PCH `source` would use, or None: its prefix includes no CUDA
    header (`<...>`), or there is no PCH folder."""
    prefix, _ = split_includes(source)
    if "<" not in prefix:
        return None
    folder = kernel_cache.pch_folder()
    if folder is None:
        return None
    h = hashlib.sha256()
    for part in (salt, *options, prefix):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40], prefix, folder
