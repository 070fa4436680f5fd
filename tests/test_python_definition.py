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
