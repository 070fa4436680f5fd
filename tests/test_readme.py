"""The README is the front door: every `mlir` block in it parses and verifies, and every `python`
block that needs no GPU runs."""

import pytest
from readme_examples import README, blocks, python_examples_without_gpu
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf
from xdsl.parser import Parser

from fuser.dialects.fusion import Fusion
from fuser.dialects.host import Host
from fuser.dialects.kernel import Kernel


@pytest.mark.parametrize("text", blocks("mlir"))
def test_mlir_examples_verify(text: str) -> None:
    ctx = Context()
    for dialect in (Builtin, Arith, Math, Scf, Fusion, Kernel, Host):
        ctx.load_dialect(dialect)
    Parser(ctx, text, str(README)).parse_module().verify()


@pytest.mark.parametrize("text", python_examples_without_gpu())
def test_python_examples_run(text: str) -> None:
    exec(compile(text, str(README), "exec"), {})


def test_readme_has_examples() -> None:
    assert len(blocks("mlir")) >= 3 and blocks("python")
