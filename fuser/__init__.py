"""fuser: a fusion compiler for NVIDIA GPUs, built on xDSL.

The public Python API: `FusionDefinition` builds a fusion, `DataType` names element types,
the errors in `fuser.errors` report a user's mistakes.

`import fuser` loads the errors only; the frontend (and with it xDSL and the fusion dialect,
a fifth of a second) is loaded by the first use of a name that needs it, so tools that import a
submodule of fuser (`fuser-opt`, `fuser.runtime`) do not pay for what they do not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fuser.errors import (
    CompilationError,
    CudaError,
    DefinitionError,
    FuserError,
    InputError,
    ValidationError,
    VerificationError,
)

if TYPE_CHECKING:
    from fuser.dtypes import DataType, ParallelType
    from fuser.frontend import Extent, FusionDefinition, FusionOps, Scalar, Tensor

_LAZY = {
    "DataType": "fuser.dtypes",
    "ParallelType": "fuser.dtypes",
    "Extent": "fuser.frontend",
    "FusionDefinition": "fuser.frontend",
    "FusionOps": "fuser.frontend",
    "Scalar": "fuser.frontend",
    "Tensor": "fuser.frontend",
}
"""The public names loaded on first use, by the module that defines each."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fuser' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups find it directly
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "CompilationError",
    "CudaError",
    "DataType",
    "DefinitionError",
    "Extent",
    "FuserError",
    "FusionDefinition",
    "FusionOps",
    "InputError",
    "ParallelType",
    "Scalar",
    "Tensor",
    "ValidationError",
    "VerificationError",
]
