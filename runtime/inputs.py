"""The container of a call's inputs, checked once for every entry point that takes one.

`FusionDefinition.reference`, `execute` and `compile` all take "a list of arrays"; this module is
where "a list" is defined, so that `None`, a lone array or a string ends in one `InputError`
naming the argument instead of a `TypeError` from `len()` deep inside the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fuser.errors import InputError


def check_input_sequence(inputs: Any) -> Sequence[Any]:
    """`inputs` when it is a list, tuple or other sequence of inputs; InputError otherwise."""
    if type(inputs) is list or type(inputs) is tuple:  # the common case, checked cheaply
        return inputs
    if isinstance(inputs, Sequence) and not isinstance(inputs, str | bytes | bytearray):
        return inputs
    what = "None" if inputs is None else type(inputs).__name__
    hint = " (wrap a single array in a list: [x])" if hasattr(inputs, "shape") else ""
    raise InputError(f"inputs must be a sequence of arrays (a list or tuple), got {what}{hint}")
