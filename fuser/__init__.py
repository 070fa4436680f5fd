"""fuser: a fusion compiler for NVIDIA GPUs, built on xDSL.

The public Python API: `FusionDefinition` builds a fusion, `DataType` names element types,
the errors in `fuser.errors` report a user's mistakes.
"""

from fuser.dtypes import DataType, ParallelType
from fuser.errors import (
    CompilationError,
    CudaError,
    DefinitionError,
    FuserError,
    InputError,
    VerificationError,
)
from fuser.frontend import Extent, FusionDefinition, FusionOps, Scalar, Tensor

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
    "VerificationError",
]
