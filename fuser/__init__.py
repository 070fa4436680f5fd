"""fuser: a fusion compiler for NVIDIA GPUs, built on xDSL.

The public Python API: `FusionDefinition` builds a fusion, `DataType` names element types,
the errors in `fuser.errors` report a user's mistakes.
"""

from fuser.errors import (
    CompilationError,
    CudaError,
    DefinitionError,
    FuserError,
    InputError,
    VerificationError,
)

__all__ = [
    "CompilationError",
    "CudaError",
    "DefinitionError",
    "FuserError",
    "InputError",
    "VerificationError",
]
