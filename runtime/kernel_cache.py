"""Cubins kept on disk, so that a new process skips NVRTC for the kernels compiled before.

NVRTC takes from a quarter of a second to seconds a kernel, and a program with dozens of fusions
pays it at every start (a persistent kernel cache is among what nvFuser's users ask for most). A
cubin is a function of NVRTC's version, the compile options (the target architecture and header
path among them), the kernel's name and its source, so a digest of those names its file.

- Where: `$FUSER_CACHE_DIR/kernels`, by default `$XDG_CACHE_HOME/fuser/kernels` or
  `~/.cache/fuser/kernels`; the runnable store (`fuser.runtime.runnable_store`) keeps its
  records there too, as `.run` files under the same rules. `FUSER_KERNEL_CACHE=0` turns the
  cache off (the test suite does, so that it compiles every kernel it checks).
- A file is written whole (a temporary file, then a rename: concurrent writers of one kernel
  leave one good file) and starts with a digest of the cubin; a file that does not match its
  digest is ignored and written again. Deleting the folder is safe.
- Size: after a process's first store, and after each further 1/32 of the cap it stores, the
  least recently used files (a hit refreshes a file's modification time) are removed until the
  folder holds at most `FUSER_CACHE_MAX_MB` megabytes (default `DEFAULT_MAX_MB`); a value
  that is not a positive number is reported once and the default used.
- A cache that cannot be written (a read-only home) costs a warning, once, never a failure.
- `pch_folder()` is where this process writes NVRTC's precompiled headers: a private folder
  under `$FUSER_CACHE_DIR/pch` (same default base as the kernels), made on first use and removed
  at exit, because a PCH file is valid only in the process that wrote it (see
  `fuser.runtime.nvrtc_pch`). Folders left by processes that died are removed after a day.
  `FUSER_PCH=1` / `0` turns precompiled headers on / off; by default they are on where the
  process may use at least `PCH_MIN_CPUS` CPUs, and always off with the kernel cache.
- Only a regular file of at most `MAX_FILE_BYTES` is read, opened without following a link and
  without blocking: a FIFO, a device or a link (to /dev/zero, say) where a cubin belongs would
  otherwise hang `compile` or fill memory. Anything else is a miss, and the fresh cubin replaces
  the entry (the rename replaces the link or FIFO itself, never what it points to).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

#: What a file of each kind starts with: `cubin` (a kernel's cubin), `run` and `kernel` (a stored
#: runnable and a kernel it names, `fuser.runtime.runnable_store`); the kind is its suffix.
_MAGIC = {"cubin": b"fuser-cubin 1\n", "run": b"fuser-run 1\n", "kernel": b"fuser-kernel 1\n"}
_DIGEST = hashlib.sha256().digest_size
#: The largest cache file read; cubins are kilobytes to a few megabytes.
MAX_FILE_BYTES = 64 * 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_warned: set[str] = set()
DEFAULT_MAX_MB = 1024.0
"""The kernel cache's size cap when `FUSER_CACHE_MAX_MB` does not set one."""
_EVICT_TO = 0.9
"""Eviction goes down to this share of the cap, so that the next stores do not evict again."""


def switched_off(variable: str) -> bool:
    """Whether the environment variable turns a cache off (`0`, `off`, `false`, `no`)."""
    return _is_off(os.environ.get(variable))


def _is_off(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "off", "false", "no")


#: The environment variables that place (or turn off) the cache.
_PLACE_VARIABLES = ("FUSER_KERNEL_CACHE", "FUSER_CACHE_DIR", "XDG_CACHE_HOME", "HOME")


def _base_dir() -> Path | None:
    """`$FUSER_CACHE_DIR`, else `$XDG_CACHE_HOME/fuser` or `~/.cache/fuser`; None when the
    cache is off or there is no home folder."""
    return _folders(tuple(map(os.environ.get, _PLACE_VARIABLES)))[0]


def base_dir() -> Path | None:
    """The cache's base folder (the kernels' folder and the multi-kernel choices are in it),
    or None when the cache is off."""
    return _folders(tuple(map(os.environ.get, _PLACE_VARIABLES)))[0]


def cache_dir() -> Path | None:
    """The folder cubins are kept in, or None when the cache is off."""
    return _folders(tuple(map(os.environ.get, _PLACE_VARIABLES)))[1]


@functools.lru_cache(maxsize=8)
def _folders(place: tuple[str | None, ...]) -> tuple[Path | None, Path | None]:
    """The base folder and the kernels' folder for the values of `_PLACE_VARIABLES` (kept: a
    new shape asks for them on every lookup of the runnable store)."""
    switch, chosen, xdg, _ = place
    if _is_off(switch):
        return None, None
    if chosen:
        base = Path(chosen)
    else:
        try:
            base = (Path(xdg) if xdg else Path.home() / ".cache") / "fuser"
        except RuntimeError:  # no home folder to be found: no cache
            return None, None
    return base, base / "kernels"


def cache_key(
    source: str,
    name: str,
    options: Sequence[str],
    nvrtc_version: tuple[int, int],
    headers: str = "",
) -> str:
    """The file name of a cubin: a digest of everything it depends on. `name` names its kernels,
    `headers` is a digest of the text of the headers the source may include."""
    h = hashlib.sha256()
    parts = (f"nvrtc {nvrtc_version[0]}.{nvrtc_version[1]}", f"headers {headers}", name)
    for part in (*parts, *options, source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


#: The fewest CPUs a process may run on for precompiled headers to be on by default: a PCH is
#: written on a thread beside the compiles, and with fewer cores that slows them more than the
#: PCH saves (five bf16 fusions on a 2-core machine: 890 ms with, 810 without).
PCH_MIN_CPUS = 4


def _pch_on() -> bool:
    if os.environ.get("FUSER_PCH", "").strip():
        return not switched_off("FUSER_PCH")
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return cpus >= PCH_MIN_CPUS


#: A left-behind PCH folder (its process died) older than this is removed.
STALE_PCH_SECONDS = 24 * 3600
_pch_lock = threading.Lock()
_pch_folders: dict[tuple[int, Path], Path | None] = {}  # (pid, base) -> folder, None: unusable


def pch_folder() -> Path | None:
    """This process's private folder for NVRTC's precompiled headers (made on first call for
    the cache folder in use, removed at exit), or None: PCH off (`FUSER_PCH`, too few CPUs or
    the cache off) or no folder could be made (then silently: they only save time)."""
    if not _pch_on():
        return None
    base = _base_dir()
    if base is None:
        return None
    key = (os.getpid(), base)  # a forked child makes its own
    if key not in _pch_folders:
        with _pch_lock:
            if key not in _pch_folders:
                _pch_folders[key] = _make_pch_folder(base / "pch")
    return _pch_folders[key]


def _make_pch_folder(root: Path) -> Path | None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove_stale(root)
        folder = Path(tempfile.mkdtemp(dir=root, prefix=f"{os.getpid()}-"))  # mode 0700
    except OSError:
        return None
    owner = os.getpid()
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))
    return folder


def _remove_stale(root: Path) -> None:
    """Remove the PCH folders of processes that ended without removing theirs."""
    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_PCH_SECONDS
        except OSError:
            continue
        if old and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)


def load(key: str, kind: str = "cubin") -> bytes | None:
    """The cached cubin (or other `kind` of file) of `key`, or None (cache off, nothing cached,
    or a damaged file)."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"{key}.{kind}"
    data = _read_regular_file(path)
    if data is None:
        return None
    magic = _MAGIC[kind]
    head = len(magic)
    digest, payload = data[head : head + _DIGEST], data[head + _DIGEST :]
    if not data.startswith(magic) or hashlib.sha256(payload).digest() != digest or not payload:
        return None
    with contextlib.suppress(OSError):  # recently used: the last to be evicted
        os.utime(path)
    return payload


def _read_regular_file(path: Path) -> bytes | None:
    """The bytes of `path` when it is a regular file (not a link) of at most MAX_FILE_BYTES;
    None otherwise, or when it cannot be read. Never blocks on a FIFO or a device."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:  # missing, unreadable, or a link (ELOOP)
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:  # the file may grow while it is read: stop past the bound
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= MAX_FILE_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def store(key: str, cubin: bytes, kind: str = "cubin") -> None:
    """Keep `cubin` (or another `kind` of file) under `key` (no-op when the cache is off; a
    warning when it can't be written)."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC[kind] + hashlib.sha256(cubin).digest() + cubin)
            os.replace(tmp, folder / f"{key}.{kind}")
        except BaseException:
            os.unlink(tmp)
            raise
        _evict_now_and_then(folder, len(cubin))
    except OSError as e:
        if str(folder) not in _warned:
            _warned.add(str(folder))
            warnings.warn(
                f"fuser: cannot write the kernel cache in {folder} ({e}); kernels will be "
                "compiled again in the next process (FUSER_CACHE_DIR moves the cache, "
                "FUSER_KERNEL_CACHE=0 turns it off)",
                stacklevel=2,
            )


_written: dict[str, int] = {}  # folder -> bytes this process stored there since it last evicted


def _evict_now_and_then(folder: Path, size: int) -> None:
    """`evict` on a process's first store in `folder`, then whenever it has stored another
    1/32 of the cap there: a scan of the folder costs about 1 ms per few hundred files, too much
    for every new shape's record, and the cap may be overshot by that 1/32 only."""
    limit = max_bytes()
    key = str(folder)
    written = _written.get(key)
    if written is not None and written + size < limit // 32:
        _written[key] = written + size
        return
    _written[key] = 0
    evict(folder, limit)


def max_bytes() -> int:
    """The cache's size cap in bytes: `FUSER_CACHE_MAX_MB` megabytes, or `DEFAULT_MAX_MB`."""
    text = os.environ.get("FUSER_CACHE_MAX_MB", "").strip()
    mb = DEFAULT_MAX_MB
    if text:
        try:
            mb = float(text)
        except ValueError:
            mb = -1.0
        if not mb > 0 or mb != mb or mb == float("inf"):
            if "FUSER_CACHE_MAX_MB" not in _warned:
                _warned.add("FUSER_CACHE_MAX_MB")
                warnings.warn(
                    f"fuser: FUSER_CACHE_MAX_MB={text!r} is not a positive number of megabytes; "
                    f"the kernel cache keeps at most {DEFAULT_MAX_MB:g} MB",
                    stacklevel=3,
                )
            mb = DEFAULT_MAX_MB
    return int(mb * 1024 * 1024)


def evict(folder: Path, limit: int) -> int:
    """Remove the least recently used files (cubins, stored runnables) of `folder` while it
    holds more than `limit` bytes (down to `_EVICT_TO` of it); returns how many were removed.
    Files another process removes meanwhile are skipped."""
    entries: list[tuple[float, int, str]] = []
    total = 0
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if not entry.name.endswith(tuple(f".{kind}" for kind in _MAGIC)):
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries.append((info.st_mtime, info.st_size, entry.path))
                total += info.st_size
    except OSError:
        return 0
    if total <= limit:
        return 0
    removed = 0
    for _, size, path in sorted(entries):
        if total <= limit * _EVICT_TO:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed
