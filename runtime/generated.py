"""Python the runtime writes for its hot path, defined so that tracebacks and dumps show it.

The runtime generates a few functions at run time (the signature cache's `execute`, a program's
workspace allocation and launch closures): with the loops over a fusion's inputs unrolled they
cost about half as much per call as the same code written as loops. Code made with a bare
`exec` shows as `<string>` in a traceback and cannot be read anywhere. `define` gives each
generated function a file name of its own, registers its source with `linecache` (so a
traceback through it shows the generated line), and prints the source under
`FUSER_DUMP=fast_path`.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable
from typing import Any

from fuser import dump

_numbers = itertools.count()


def define(source: str, name: str, namespace: dict[str, Any], what: str) -> Callable[..., Any]:
    """The function `name` that `source` defines, run in `namespace` (which it may read as its
    globals). `what` says what it is for, e.g. "execute of @layer_norm": it names the
    generated file (`<fuser generated #3: execute of @layer_norm>`) and the dump."""
    filename = f"<fuser generated #{next(_numbers)}: {what}>"
    lines = source.splitlines(keepends=True)
    # (size, mtime None: never checked against a file, lines, name) keeps it in the cache
    linecache.cache[filename] = (len(source), None, lines, filename)
    dump.dump("fast_path", what, source)
    exec(compile(source, filename, "exec"), namespace)  # our own generated code
    return namespace[name]
