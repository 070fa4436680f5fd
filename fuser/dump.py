"""`FUSER_DUMP`: what the compiler prints to stderr as it works, stage by stage.

`FUSER_DUMP` is a comma-separated list of stage names (or `all`), read once per process, the
first time anything is dumped. Each stage is printed when it happens, under a header line
`===== FUSER_DUMP <stage>: <what> =====`:

- `python_definition`: a FusionDefinition as the Python that defines it, when its `with` block
  ends (`fd.python_definition()`);
- `fusion_ir`: the fusion as defined, when a new signature needs compiling;
- `segmenter_log`: the segmenter's log (each candidate merge, which scheduler accepted or
  rejected it and why, and whether each segment's Welford ops become two passes and why; for a
  fusion one kernel runs, that Welford decision alone);
- `segments`: the segmented fusion (or, for a fusion one kernel holds, its scheduler);
- `kernel_ir`: each kernel as `kernel` dialect IR;
- `cuda`: each kernel's CUDA source;
- `ptx`, `sass`, `ptxas_verbose`: when NVRTC compiles a kernel (not one the kernel cache or the
  runnable store holds: `FUSER_KERNEL_CACHE=0` recompiles), its PTX, its SASS (through nvdisasm),
  and ptxas's report of registers, spills and stack (the compile then passes
  `--ptxas-options=-v`, part of the cache key: the first run with it compiles again);
- `host_ir`: the host program of a segmented fusion;
- `launch_params`: each kernel's grid, block and dynamic shared memory for a new signature;
- `fast_path`: the Python the runtime generates for its hot path (`fuser.runtime.generated`):
  the signature cache's `execute` and a program's unrolled closures, as they are defined.

An unknown name is reported once on stderr (with the known ones) and otherwise ignored.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

STAGES: tuple[str, ...] = (
    "python_definition",
    "fusion_ir",
    "segmenter_log",
    "segments",
    "kernel_ir",
    "cuda",
    "ptx",
    "sass",
    "ptxas_verbose",
    "host_ir",
    "launch_params",
    "multi_kernel",
    "fast_path",
)
"""Every stage `FUSER_DUMP` may name, in the order a compilation reaches them."""

_stages: frozenset[str] | None = None
_WRITING = threading.Lock()


def configure(value: str | None) -> frozenset[str]:
    """Set the stages from a `FUSER_DUMP`-style string (None: read the environment); returns
    them. Called on first use; tests and embedders may call it again."""
    global _stages
    if value is None:
        value = os.environ.get("FUSER_DUMP", "")
    names = {n.strip() for n in value.split(",") if n.strip()}
    if "all" in names:
        names = (names - {"all"}) | set(STAGES)
    unknown = sorted(names - set(STAGES))
    if unknown:
        print(
            f"fuser: FUSER_DUMP: unknown stage(s) {', '.join(unknown)} (known: all, "
            f"{', '.join(STAGES)})",
            file=sys.stderr,
        )
    _stages = frozenset(names & set(STAGES))
    return _stages


def enabled(stage: str) -> bool:
    """Whether `FUSER_DUMP` names `stage`."""
    stages = _stages if _stages is not None else configure(None)
    return stage in stages


def dump(stage: str, what: str, text: str | Callable[[], str]) -> None:
    """Print `text` (or what the callable returns, computed only when the stage is on) under a
    header naming the stage and `what`, if `FUSER_DUMP` names the stage."""
    if not enabled(stage):
        return
    body = text() if callable(text) else text
    with _WRITING:  # kernels compile on a thread pool: one dump at a time
        sys.stderr.write(f"===== FUSER_DUMP {stage}: {what} =====\n{body.rstrip()}\n")
        sys.stderr.flush()
