"""The errors fuser raises for a user's mistake.

Every error a user can cause ends in one of these classes, so the CLI and the Python API can
report it as a message (naming the op, argument or location) instead of a traceback. A bug in
fuser itself is any other exception.
"""

from __future__ import annotations


class FuserError(Exception):
    """Base class of every error fuser reports to a user."""


class DefinitionError(FuserError):
    """A FusionDefinition was built wrongly (bad dims, wrong arity, foreign tensor, ...)."""


class VerificationError(FuserError):
    """The IR of a fusion does not verify."""


class InputError(FuserError):
    """Inputs given to `execute` or `reference` do not match the fusion's signature."""


class ValidationError(FuserError):
    """`fd.validate` found an output that differs from the reference."""


class CompilationError(FuserError):
    """A kernel could not be generated or compiled (NVRTC log attached)."""


class CudaError(FuserError):
    """A CUDA driver call failed; the message names the call and the CUDA error."""
