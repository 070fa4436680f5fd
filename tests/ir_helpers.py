"""IR helpers the CPU tests share: a context that knows fuser's dialects, and parsing a fusion.

(pytest puts this folder on `sys.path`, so test files import it as `ir_helpers`.)
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from fuser.dialects import fusion as fu
from fuser.dialects import get_all_dialects


def context() -> Context:
    """A context with builtin, arith and every dialect of fuser's."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Arith)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str) -> tuple[ModuleOp, fu.FusionOp]:
    """The verified module of `text` and its first `fusion.fusion`."""
    module = Parser(context(), text).parse_module()
    module.verify()
    return module, next(op for op in module.walk() if isinstance(op, fu.FusionOp))


def _op_names(base: type) -> list[str]:
    return [op.name.removeprefix("fusion.") for op in fu.Fusion.operations if issubclass(op, base)]


UNARY: list[str] = [
    name for name in _op_names(fu.UnaryOp) if name not in _op_names(fu.BitwiseNotOp)
]
"""Every unary op of the fusion dialect on floats but `gelu` (which has an approximation), by
name (`bitwise_not` takes integers and i1 only)."""
NUMERIC_UNARY: list[str] = _op_names(fu.NumericUnaryOp)
"""The unary ops that integers take too."""
