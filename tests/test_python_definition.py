"""`fd.python_definition()`, `repr(fd)` and `FUSER_DUMP=python_definition`: a definition printed
as the Python that defines it. tests/conftest.py re-runs the printed form of every definition the
test suite completes and checks that it defines the same IR; these tests pin the text itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError
from fuser.python_definition import python_text

EXPECTED = """from fuser import DataType, FusionDefinition, ParallelType

with FusionDefinition('printed', streams=2) as fd:
    T0 = fd.define_tensor(shape=[-1, 3], dtype=DataType.BFloat16)
    S0 = fd.define_scalar(DataType.Float)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.add(T1, S0)
    T3, T4 = fd.ops.var_mean(T2, dims=[1])
    T5 = fd.ops.gt(T2, float("-inf"))
    T6 = fd.ops.where(T5, T2, -0.0)
    T7 = fd.ops.broadcast_in_dim(T3, shape=[T0.size(0), 3], broadcast_dims=[0])
    T8 = fd.ops.cat([T6, T7], dim=1)
    fd.add_output(T8)
"""


def printed() -> FusionDefinition:
    """Handles, an extent, a Scalar input, a tuple result, exact numbers, an operator."""
    with FusionDefinition("printed", streams=2) as fd:
        x = fd.define_tensor(shape=[-1, 3], dtype=DataType.BFloat16)
        s = fd.define_scalar(DataType.Float)
        y = fd.ops.cast(x, dtype=DataType.Float) + s
        var, _ = fd.ops.var_mean(y, dims=[1])
        fd.ops.shape(y)  # a query: prints nothing
        kept = fd.ops.where(y > float("-inf"), y, -0.0)
        spread = fd.ops.broadcast_in_dim(var, shape=[x.size(0), 3], broadcast_dims=[0])
        fd.add_output(fd.ops.cat([kept, spread], dim=1))
    return fd


def test_a_definition_prints_as_the_python_that_defines_it() -> None:
    fd = printed()
    assert fd.python_definition() == EXPECTED
    assert repr(fd) == EXPECTED
    namespace: dict[str, object] = {}
    exec(EXPECTED, namespace)
    again = namespace["fd"]
    assert isinstance(again, FusionDefinition) and again.fusion_ir() == fd.fusion_ir()


def test_repr_before_the_with_block_ends_and_python_definition_after() -> None:
    fd = FusionDefinition("open")
    assert repr(fd) == "FusionDefinition('open', new)"
    with fd:
        fd.add_output(fd.ops.neg(fd.define_tensor([-1], DataType.Float)))
        assert repr(fd) == "FusionDefinition('open', open)"
        with pytest.raises(DefinitionError, match="python_definition"):
            fd.python_definition()


def test_an_argument_python_cannot_print_is_a_named_error() -> None:
    with pytest.raises(DefinitionError, match=r"cannot print an argument of type object"):
        python_text(object())


def test_fuser_dump_prints_the_definition_when_its_with_block_ends() -> None:
    code = (
        "from fuser import DataType, FusionDefinition\n"
        "with FusionDefinition('dumped') as fd:\n"
        "    fd.add_output(fd.ops.exp(fd.define_tensor([-1], DataType.Float)))\n"
    )
    env = dict(os.environ, FUSER_DUMP="python_definition")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "===== FUSER_DUMP python_definition: @dumped =====" in done.stderr
    assert "    T1 = fd.ops.exp(T0)\n    fd.add_output(T1)" in done.stderr


def test_a_call_the_user_catches_leaves_nothing_behind() -> None:
    """A failing call erases what it built (ops, names, cached casts) before raising, so the
    definition and its printed form hold only the calls that succeeded."""
    with FusionDefinition("caught") as fd:
        b = fd.define_tensor([4, 3], DataType.Bool)
        c = fd.define_tensor([1, 3], DataType.Bool)
        with pytest.raises(DefinitionError, match="does not take Bool operands"):
            fd.ops.sub(b, c)  # after it broadcast c
        with pytest.raises(DefinitionError, match="does not fit"):
            fd.ops.where(c, b, 2**64)  # after it cast b
        fd.add_output(fd.ops.add(b, c))
    with FusionDefinition("caught") as clean:
        b = clean.define_tensor([4, 3], DataType.Bool)
        c = clean.define_tensor([1, 3], DataType.Bool)
        clean.add_output(clean.ops.add(b, c))
    assert fd.fusion_ir() == clean.fusion_ir()


def test_arguments_print_as_they_were_passed() -> None:
    """A list the caller changes afterwards, a `range`, a negative NaN and an IntEnum print as
    they were when passed."""
    import enum
    import math

    class Axis(enum.IntEnum):
        LAST = 1

    with FusionDefinition("passed") as fd:
        t = fd.define_tensor([2, 3], DataType.Float)
        shape = [2, 3]
        first = fd.ops.full(shape, 1.0, DataType.Float)
        shape[0] = 4
        fd.add_output(fd.ops.add(fd.ops.permute(t, range(1, -1, -1)), -math.nan))
        fd.add_output(fd.ops.sum(fd.ops.add(t, first), Axis.LAST))
    text = fd.python_definition()
    assert "fd.ops.full([2, 3], 1.0, DataType.Float)" in text
    assert "fd.ops.permute(T0, [1, 0])" in text and '-float("nan")' in text
    assert "fd.ops.sum(T4, 1)" in text


def test_a_handle_of_another_definition_is_a_named_error() -> None:
    with FusionDefinition("other") as other:
        o = other.define_tensor([2, 3], DataType.Float)
        other.add_output(o)
    with (
        pytest.raises(
            DefinitionError, match=r"argument .new_shape. .* is of another FusionDefinition"
        ),
        FusionDefinition("mixed") as fd,
    ):
        t = fd.define_tensor([6], DataType.Float)
        fd.add_output(fd.ops.reshape(t, [o.size(0), o.size(1)]))
