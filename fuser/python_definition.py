"""A FusionDefinition printed as the Python that defines it: `fd.python_definition()`,
`repr(fd)` and `FUSER_DUMP=python_definition`, as nvFuser prints its definitions.

The frontend records each call a user makes (every `fd.*` and `fd.ops.*` entry point, Python
operators included, as the `fd.ops` call they make; not the calls those make themselves) as a
`Call`: the entry point's name, its arguments as given and what it returned. Printing turns each
into one line, `T3 = fd.ops.add(T0, S1)`, naming a tensor or scalar by its name in the IR (`t3`
is `T3`) and an extent by `T0.size(1)`. Queries that return extents or plain values
(`fd.ops.size`, `fd.ops.shape`, `fd.define_vector`) print nothing: their values print where they
are used; so does a tensor `fd.ops.stride_order` gave a layout (the same IR value as its
operand, under the same name). `fd.from_pytorch` prints as the `fd.define_tensor` it makes, so
the text re-runs without the torch tensor. Running the text defines a FusionDefinition `fd` with
the same IR."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fuser.dtypes import DataType, ParallelType
from fuser.errors import DefinitionError

HEADER = "from fuser import DataType, FusionDefinition, ParallelType\n\n"
"""What the printed definition imports (the names its lines use)."""


@dataclass(frozen=True)
class Call:
    """One entry point a user called: `fd.ops.add`, its arguments as given, its result."""

    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    result: Any


def recorded(x: Any) -> Any:
    """An argument as it is when recorded: sequences copied (a list the caller changes later,
    or a `range`, prints as it was passed), element by element."""
    if isinstance(x, tuple):
        return tuple(recorded(e) for e in x)
    if isinstance(x, Sequence) and not isinstance(x, str):
        return [recorded(e) for e in x]
    return x


def printed(call: Call) -> str | None:
    """The line of `call`, or None for a query (its result is an extent or plain values)."""
    arguments = [python_text(a) for a in call.args]
    arguments += [f"{k}={python_text(v)}" for k, v in call.kwargs]
    text = f"{call.name}({', '.join(arguments)})"
    result = call.result
    if result is None:
        return text
    if getattr(result, "_stride_order", None) is not None:
        return None  # the same value in another layout: printed where used (`python_text`)
    if _is_handle(result):
        return f"{python_text(result)} = {text}"
    if isinstance(result, tuple | list) and result and all(_is_handle(r) for r in result):
        return f"{', '.join(python_text(r) for r in result)} = {text}"
    return None


def definition_text(name: str, options: Sequence[tuple[str, Any]], calls: Sequence[Call]) -> str:
    """The whole definition: the import, the `with` line (the non-default `options` of the
    FusionDefinition as keywords) and one line per recorded call."""
    given = "".join(f", {k}={python_text(v)}" for k, v in options)
    lines = [f"with FusionDefinition({name!r}{given}) as fd:"]
    lines += [f"    {line}" for call in calls if (line := printed(call)) is not None]
    header = HEADER
    if any("multidevice.DeviceMesh(" in line for line in lines):
        header = HEADER.replace("\n\n", "\nfrom fuser import multidevice\n\n")
    return header + "\n".join(lines) + "\n"


def python_text(x: Any) -> str:
    """`x` as Python source: a handle by its IR name in capitals, an extent as `T0.size(1)`,
    numbers exactly (`float("inf")`, other enums as their ints), DataType and ParallelType by
    member, sequences element by element."""
    from fuser.frontend import Extent  # the frontend imports this module
    from fuser.multidevice import DeviceMesh

    if _is_handle(x):
        order = getattr(x, "_stride_order", None)
        name = x.name.upper()
        return name if order is None else f"fd.ops.stride_order({name}, {list(order)})"
    if isinstance(x, Extent):
        return f"{python_text(x.tensor)}.size({x.axis})"
    if isinstance(x, DeviceMesh):
        return f"multidevice.DeviceMesh({list(x.devices)})"
    if isinstance(x, DataType | ParallelType):
        return f"{type(x).__name__}.{x.name}"
    if x is None or isinstance(x, bool | str):
        return repr(x)
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        value = float(x)
        if math.isnan(value):  # the sign of a NaN is kept (a constant holds its bits)
            return '-float("nan")' if math.copysign(1.0, value) < 0 else 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    if isinstance(x, list):
        return f"[{', '.join(python_text(e) for e in x)}]"
    if isinstance(x, tuple):
        inner = ", ".join(python_text(e) for e in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    raise DefinitionError(
        f"fd.python_definition: cannot print an argument of type {type(x).__name__} ({x!r})"
    )


def _is_handle(x: Any) -> bool:
    from fuser.frontend import Scalar, Tensor

    return isinstance(x, Tensor | Scalar)
