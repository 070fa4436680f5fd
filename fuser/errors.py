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


class CommunicationError(FuserError):
    """A multi-GPU run failed between processes: a rendezvous, a collective that timed out, a
    rank that stopped; the message names the rank, the communication and the cause."""


class ShardingError(FuserError):
    """A sharded fusion cannot be split over its devices as written (a sharding the `fuser-shard`
    pass does not decompose, an extent the mesh does not divide); the message names the op."""
