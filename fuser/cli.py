"""Command-line entry points: `fuser-opt`.

`fuser-opt` is xDSL's opt main with fuser's dialects, passes and targets registered beside all
of xDSL's. It adds what users of a compiler expect: every verifier failure is reported at the
`file:line:col` of the op that failed, and a user's mistake (malformed IR, a bad pass option)
ends in a one-line diagnostic and a non-zero exit, never a Python traceback.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import IO

from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.transforms import get_all_passes as xdsl_passes
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from fuser.codegen import get_all_targets
from fuser.dialects import get_all_dialects
from fuser.errors import FuserError
from fuser.transforms import get_all_passes


class LocatedParser(Parser):
    """A parser that remembers where each operation starts, for located diagnostics."""

    def __init__(self, *args, spans: dict[Operation, Span], line_offset: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.spans = spans
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = dataclasses.replace(self._current_token.span, line_offset=self.line_offset)
        op = super().parse_operation()
        self.spans[op] = start
        return op


def verify_located(module: ModuleOp, spans: dict[Operation, Span]) -> None:
    """Verifies `module` op by op, raising a VerifyException located at the failing op."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            message = str(e).strip()
            about = getattr(e, "op", None)  # an error about a nested op is reported there
            span = spans.get(about if isinstance(about, Operation) else op)
            if span is None:
                raise VerifyException(f"error: {message}") from None
            loc = span.get_location()
            line = span.input.content.splitlines()[loc.line - span.line_offset - 1]
            raise VerifyException(
                f"{loc.file}:{loc.line}:{loc.col}: error: {message}\n{line}\n"
                + " " * (loc.col - 1)
                + "^"
            ) from None


class FuserOptMain(xDSLOptMain):
    """xDSL's opt main with fuser's dialects, passes and targets, and located diagnostics."""

    def __init__(self, args: Sequence[str] | None = None):
        self.spans: dict[Operation, Span] = {}
        self.line_offset = 0
        super().__init__(description="fuser modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        for name, factory in (xdsl_dialects() | get_all_dialects()).items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in (xdsl_passes() | get_all_passes()).items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets.update(get_all_targets())

    def register_all_frontends(self) -> None:
        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatedParser(
                self.ctx,
                io.read().decode(),
                self.get_input_name(),
                spans=self.spans,
                line_offset=self.line_offset,
            )
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self.line_offset = start_offset  # --split-input-file: lines before this chunk
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp) -> None:
        if not self.args.disable_verify:
            verify_located(prog, self.spans)
        super().apply_passes(prog)


def _parse_error_message(e: ParseError) -> str:
    loc = e.span.get_location()
    context = e.span.print_with_context().split("\n", 1)[1].rstrip("\n")
    return f"{loc.file}:{loc.line}:{loc.col}: error: {e.msg}\n{context}"


def run_tool(make: Callable[[], xDSLOptMain], name: str) -> int:
    """Runs an xDSL tool, turning a user's mistake into a message on stderr and exit code 1."""
    try:
        tool = make()
    except (ValueError, Exception) as e:  # bad pass pipeline or option
        if isinstance(e, SystemExit):
            raise
        print(f"{name}: error: {e}", file=sys.stderr)
        return 1
    try:
        tool.run()
    except ParseError as e:
        print(_parse_error_message(e), file=sys.stderr)
        return 1
    except (DiagnosticException, FuserError) as e:
        text = str(e).strip()
        print(
            text if ": error: " in text.split("\n", 1)[0] else f"{name}: error: {text}",
            file=sys.stderr,
        )
        return 1
    except FileNotFoundError as e:
        print(f"{name}: error: {e.strerror}: {e.filename}", file=sys.stderr)
        return 1
    return 0


def opt_main(args: Sequence[str] | None = None) -> None:
    """The `fuser-opt` command."""
    sys.exit(run_tool(lambda: FuserOptMain(args=args), "fuser-opt"))
