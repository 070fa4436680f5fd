"""Command-line entry points: `fuser-opt`, and what `fuser-run` shares with it.

`fuser-opt` is xDSL's opt main with fuser's dialects, passes and targets registered beside all
of xDSL's. It adds what users of a compiler expect:

- every parse, verifier and pass error is reported at the `file:line:col` of the op it is about;
- exit status 0 on success, 1 for a user's mistake (malformed IR, a bad pass option or pipeline,
  an unreadable file: one located or one-line diagnostic), 2 for a bug in fuser: the message
  starts "internal error in fuser", names the stage (parsing, verification, pass NAME, target
  NAME) and the exception, and a reproducer (the input and the command line) is written to
  `$FUSER_REPRO_DIR` or a temporary directory instead of a traceback;
- `--verify-diagnostics` checks `// expected-error @+1 {{...}}` annotations against the
  diagnostics the input produces, as `mlir-opt` does;
- repeated `-p` are joined in order; `-` reads stdin; `--version` names fuser's version;
- `--help` lists fuser's passes and targets first, with their options.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import re
import shlex
import struct
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from io import BytesIO
from typing import IO, ClassVar, NoReturn

from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms import get_all_passes as xdsl_passes
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRLexer
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from fuser.codegen import get_all_targets
from fuser.dialects import get_all_dialects
from fuser.errors import FuserError
from fuser.transforms import get_all_passes

EXIT_USER_ERROR = 1
"""Exit status of a user's mistake (a located or one-line diagnostic)."""
EXIT_INTERNAL_ERROR = 2
"""Exit status of a bug in fuser ("internal error in fuser", a reproducer written)."""
EXIT_BROKEN_PIPE = 128 + 13
"""Exit status when the reader of stdout went away (`| head`), as a process killed by SIGPIPE."""

USER_ERRORS = (ParseError, DiagnosticException, FuserError)
"""The exceptions that report a user's mistake; any other exception is a bug in fuser."""


class CommandLineError(FuserError):
    """A mistake on the command line or in the input that has no place in the IR: a bad pass
    pipeline or target option, an unreadable file, an unmet `expected-error`."""


# --------------------------------------------------------------------------------------------
# Located diagnostics


def format_located(span: Span[str] | Span[bytes] | None, message: str) -> str:
    """`file:line:col: error: message`, the source line and a caret under the span's start
    (`error: message` without a span)."""
    if span is None:
        return f"error: {message}"
    loc = span.get_location()
    content = span.input.content
    text = content if isinstance(content, str) else content.decode(errors="replace")
    lines = text.splitlines() or [""]
    line = lines[min(loc.line - span.line_offset, len(lines)) - 1]
    return f"{loc.file}:{loc.line}:{loc.col}: error: {message}\n{line}\n{' ' * (loc.col - 1)}^"


def format_parse_error(e: ParseError) -> str:
    """A ParseError as a located diagnostic."""
    return format_located(e.span, e.msg)


class LocatedVerifyException(VerifyException):
    """A verifier error at the op it is about: `span` is where the op starts in the input (None
    for an op a pass built), `message` the verifier's message."""

    def __init__(self, message: str, span: Span | None):
        super().__init__(format_located(span, message))
        self.message = message
        self.span = span


def _lex_string_literals_without_backtracking() -> None:
    """xDSL 0.74's lexer matches a string literal with `"(?:[^"...]+|escape)*"`, which
    backtracks exponentially on a line with an unclosed `"` (a mutated input hangs for minutes).
    The same pattern with possessive quantifiers accepts the same literals in linear time (its
    alternatives start with different characters, so there is nothing to backtrack into)."""
    MLIRLexer._unescaped_characters_regex = re.compile(
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )


_lex_string_literals_without_backtracking()


class LocatedParser(Parser):
    """A parser that remembers where each operation starts, for located diagnostics, and that
    reports as ParseErrors what xDSL 0.74's parser lets escape: a number literal out of range
    for its type (`struct.error`, `OverflowError`), and an op whose operand is resolved only by
    a definition inside its own regions."""

    def __init__(self, *args, spans: dict[Operation, Span], line_offset: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.spans = spans
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except (struct.error, OverflowError) as e:
            kind = "a float" if isinstance(e, OverflowError) else "an integer"
            where = Span(start.start, max(start.end, self.pos), start.input)
            raise ParseError(where, f"{kind} in this op is out of range for its type") from None
        self._check_operands_resolved(op, start)
        self.spans[op] = dataclasses.replace(start, line_offset=self.line_offset)
        return op

    def _check_operands_resolved(self, op: Operation, start: Span) -> None:
        """A forward reference of `op` that is no longer pending was defined inside `op`'s own
        regions (`%x0` used by `fusion.segment` and defined as its block argument): in scope
        nowhere `op` can see it."""
        forward = [o for o in op.operands if isinstance(o, ForwardDeclaredValue)]
        if not forward:
            return
        pending = {id(v) for refs in self.forward_ssa_references.values() for v in refs.values()}
        for index, operand in enumerate(op.operands):
            if isinstance(operand, ForwardDeclaredValue) and id(operand) not in pending:
                raise ParseError(
                    start,
                    f"'{op.name}' operand #{index} is defined only inside the op's own region, "
                    "where the op cannot use it",
                )


def verify_located(module: ModuleOp, spans: dict[Operation, Span]) -> None:
    """Verifies `module` op by op, raising a LocatedVerifyException at the failing op (or at the
    op an error is about, when a verifier of an enclosing op found it and set `op` on it)."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            about = getattr(e, "op", None)
            span = spans.get(about if isinstance(about, Operation) else op)
            raise LocatedVerifyException(str(e).strip(), span) from None


# --------------------------------------------------------------------------------------------
# --verify-diagnostics


@dataclass(frozen=True)
class ReportedError:
    """A diagnostic of one input chunk: its line in the chunk (None when not located) and its
    message."""

    line: int | None
    message: str


@dataclass(frozen=True)
class ExpectedError:
    """An `expected-error` annotation: the chunk line it is written on, the line it expects the
    error at (None for `@unknown`) and the text the error's message must contain."""

    written_at: int
    line: int | None
    text: str


_EXPECTATION = re.compile(
    r"expected-(?P<kind>error|warning|remark|note)\s*"
    r"(?:@(?P<where>[+-]\d+|above|below|unknown))?\s*\{\{(?P<text>.*?)\}\}"
)


def expected_errors(chunk: str) -> list[ExpectedError]:
    """The `expected-error` annotations of `chunk`, as in mlir-opt: `@+N`/`@-N` (N lines below
    or above), `@above`/`@below` (the line above or below), `@unknown` (a diagnostic that has no
    location: a pass option), none (the annotation's own line). Raises CommandLineError for
    another kind (fuser emits errors only)."""
    found = []
    for number, line in enumerate(chunk.splitlines(), 1):
        for m in _EXPECTATION.finditer(line):
            if m["kind"] != "error":
                raise CommandLineError(
                    f"line {number}: expected-{m['kind']} is not supported: fuser reports "
                    "errors only"
                )
            where = m["where"] or "+0"
            target = {"above": number - 1, "below": number + 1, "unknown": None}.get(where)
            if where not in ("above", "below", "unknown"):
                target = number + int(where)
            found.append(ExpectedError(number, target, m["text"]))
    return found


def unmet_expectations(
    expected: Sequence[ExpectedError],
    reported: Sequence[ReportedError],
    file: str,
    line_offset: int,
) -> list[str]:
    """What differs between the errors a chunk expects and those it reported, one message per
    unmet expectation and per unexpected error (lines counted in the whole file)."""
    left = list(expected)
    problems = []
    for error in reported:
        match = next((x for x in left if x.line == error.line and x.text in error.message), None)
        if match is not None:
            left.remove(match)
            continue
        where = "(no location)" if error.line is None else f"{error.line + line_offset}"
        problems.append(f"{file}:{where}: unexpected error: {error.message}")
    for x in left:
        at = "a diagnostic without location" if x.line is None else f"line {x.line + line_offset}"
        problems.append(
            f"{file}:{x.written_at + line_offset}: expected error at {at} was not produced: "
            f'"{x.text}"'
        )
    return problems


# --------------------------------------------------------------------------------------------
# Internal errors


def write_reproducer(tool: str, command: Sequence[str], input_text: str | None) -> str:
    """Writes the input and the command line that made fuser fail into a file in
    `$FUSER_REPRO_DIR` (created if missing) or a new temporary directory; returns its path."""
    folder = os.environ.get("FUSER_REPRO_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)
    else:
        folder = tempfile.mkdtemp(prefix="fuser-repro-")
    fd, path = tempfile.mkstemp(prefix=f"{tool}-", suffix=".mlir", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(f"// reproducer of an internal error in fuser; run:\n// {shlex.join(command)}\n")
        f.write("// the traceback:\n")
        for line in traceback.format_exc().splitlines():
            f.write(f"//   {line}\n")
        f.write("// the input:\n")
        f.write(input_text if input_text is not None else "// (not read)\n")
    return path


def report_internal_error(
    tool: str, stage: str, e: BaseException, command: Sequence[str], input_text: str | None
) -> int:
    """Prints the one-line report of a bug in fuser (with the stage it happened in) and where
    its reproducer went; returns EXIT_INTERNAL_ERROR. Call inside the `except` block."""
    try:
        where = f"reproducer written to {write_reproducer(tool, command, input_text)}"
    except OSError as write_error:
        where = f"no reproducer written ({write_error})"
    message = str(e).strip().split("\n", 1)[0]
    print(
        f"{tool}: internal error in fuser during {stage}: {type(e).__name__}: {message} "
        f"({where}; please report it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL_ERROR


def quiet_broken_pipe() -> int:
    """After stdout's reader went away: point stdout at /dev/null (so the interpreter's final
    flush raises nothing) and return EXIT_BROKEN_PIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def user_error_text(tool: str, e: BaseException) -> str:
    """The message of a user's mistake: located diagnostics as they are, others after
    `tool: error:`."""
    if isinstance(e, ParseError):
        return format_parse_error(e)
    text = str(e).strip()
    first = text.split("\n", 1)[0]
    return text if re.search(r"(^|: )error: ", first) else f"{tool}: error: {text}"


def pipeline_error_text(e: ArgSpecParseError, spec: str) -> str:
    """xDSL's multi-line ArgSpecParseError as one line naming the spec and the column."""
    lines = [line for line in str(e).splitlines() if line.strip()]
    caret = next((line for line in lines if line.strip() == "^"), None)
    column = f" at column {caret.index('^') + 1}" if caret is not None else ""
    return f"bad pass pipeline or target {spec!r}: {lines[-1].strip()}{column}"


# --------------------------------------------------------------------------------------------
# fuser-opt


def _option_text(value: object) -> str:
    """A default as `-p` spells it: `sm_90`, `""`, `true`, `none`."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, str) and not re.fullmatch(r"[\w.-]+", value):
        return f'"{value}"'
    return str(value)


def _pass_summary(pass_class: type[ModulePass] | type[Target]) -> str:
    """`name{option=default ...}`, then the first sentence of the pass's (or target's) docstring."""
    options = " ".join(
        f"{f.name.replace('_', '-')}={_option_text(f.default)}"
        for f in dataclasses.fields(pass_class)
    )
    doc = " ".join((pass_class.__doc__ or "").split())
    doc = re.sub(r"\s*\(see the module docstring\)|^`[^`]*`:\s*", "", doc)
    first = re.split(r"(?<=\.)\s", doc, maxsplit=1)[0]
    head = f"{pass_class.name}{{{options}}}" if options else pass_class.name
    return f"  {head}\n      {first}"


def fuser_pass_help() -> str:
    """The `--help` text listing fuser's passes and targets, one per entry with its options."""
    passes = [_pass_summary(factory()) for factory in get_all_passes().values()]
    targets = [_pass_summary(factory()) for factory in get_all_targets().values()]
    return (
        "fuser's passes (-p 'a{option=value ...},b'; repeated -p are joined in order):\n"
        + "\n".join(passes)
        + "\n\nfuser's targets (-t):\n"
        + "\n".join(targets)
    )


class FuserOptMain(xDSLOptMain):
    """xDSL's opt main with fuser's dialects, passes and targets, located diagnostics, checked
    `expected-error` annotations, and the stage it is in for reports of internal errors."""

    version_format: ClassVar[str] = f"fuser-opt (fuser {version('fuser')}) on xDSL {{xdsl_version}}"

    def __init__(self, args: Sequence[str] | None = None):
        self.spans: dict[Operation, Span] = {}
        self.line_offset = 0
        self.stage = "reading the command line"
        self.input_text: str | None = None
        super().__init__(description="fuser's modular optimizer driver", args=args)

    # ---- registration and arguments ----------------------------------------------------------

    def register_all_dialects(self) -> None:
        for name, factory in (xdsl_dialects() | get_all_dialects()).items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in (xdsl_passes() | get_all_passes()).items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets.update(get_all_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        # the passes' summaries import every pass module (0.26 s): made only for --help
        arg_parser.description = "fuser's modular optimizer driver."
        format_help = arg_parser.format_help

        def format_help_with_passes() -> str:
            arg_parser.description = f"fuser's modular optimizer driver.\n\n{fuser_pass_help()}"
            return format_help()

        arg_parser.format_help = format_help_with_passes  # type: ignore[method-assign]
        xdsl_names = sorted(set(self.available_passes) - set(get_all_passes()))
        arg_parser.epilog = "xDSL's passes:\n" + textwrap.fill(
            ", ".join(xdsl_names),
            width=96,
            initial_indent="  ",
            subsequent_indent="  ",
            break_on_hyphens=False,
        )
        # replace xDSL's -p and --verify-diagnostics: argparse checks conflicts in the group
        # that holds the options (its `conflict_handler` is copied when the group is made)
        arg_parser._optionals.conflict_handler = "resolve"
        arg_parser.add_argument(
            "-p",
            "--passes",
            action="append",
            default=[],
            metavar="PIPELINE",
            help="a pass pipeline, e.g. 'fuser-schedule{shapes=\"4x8\"}'; repeated -p are "
            "joined in order (fuser's passes are listed above, xDSL's below)",
        )
        arg_parser.add_argument(
            "--verify-diagnostics",
            action="store_true",
            help="check the errors of each input (chunk) against its `// expected-error "
            "@+N {{text}}` annotations (@-N, @above, @below, @unknown, or none: that line); "
            "exit 1 naming each unmet expectation and each unexpected error",
        )

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":
            self.args.input_file = None
        stream, extension = super().get_input_stream()
        with stream:
            data = stream.read()
        self.input_text = data.decode(errors="replace")
        return BytesIO(data), extension

    # ---- the pipeline --------------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        self.stage = "reading the pass pipeline"
        spec = ",".join(p for p in self.args.passes if p.strip())
        self.args.passes = spec
        try:
            super().setup_pipeline()
        except ArgSpecParseError as e:
            raise CommandLineError(pipeline_error_text(e, spec)) from None
        except ValueError as e:  # an unknown pass, or an option it does not have
            raise CommandLineError(f"bad pass pipeline {spec!r}: {e}") from None
        self.target()  # a bad target option is reported before the input is read
        xdsl_callback = self.pipeline.callback

        def callback(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            if previous is not None and not self.args.disable_verify:
                self.stage = f"verification after pass {previous.name}"
                verify_located(module, self.spans)
            if xdsl_callback is not None:
                xdsl_callback(previous, module, following)
            if following is not None:
                self.stage = f"pass {following.name}"

        self.pipeline = PassPipeline(self.pipeline.passes, callback)

    def target(self) -> object:
        """The `-t` target with its options (CommandLineError if they are bad)."""
        try:
            spec = parse_spec(self.args.target)
        except ArgSpecParseError as e:
            raise CommandLineError(pipeline_error_text(e, self.args.target)) from None
        factory = self.available_targets.get(spec.name)
        if factory is None or inspect.signature(factory).parameters:  # unknown, or legacy
            return factory
        try:
            return factory().from_spec(spec)  # type: ignore[call-arg]
        except ValueError as e:
            raise CommandLineError(f"bad target {self.args.target!r}: {e}") from None

    def register_all_frontends(self) -> None:
        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatedParser(
                self.ctx,
                io.read().decode(errors="replace"),
                self.get_input_name(),
                spans=self.spans,
                line_offset=self.line_offset,
            )
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self.stage = "parsing"
        self.line_offset = start_offset  # --split-input-file: lines before this chunk
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp) -> None:
        if not self.args.disable_verify:
            self.stage = "verification"
            verify_located(prog, self.spans)
        super().apply_passes(prog)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        self.stage = f"target {parse_spec(self.args.target).name}"
        return super().output_resulting_program(prog)

    # ---- running -------------------------------------------------------------------------------

    def run(self) -> None:
        if self.args.verify_diagnostics:
            self.run_verifying_diagnostics()
        else:
            super().run()

    def run_verifying_diagnostics(self) -> None:
        """Runs each chunk and compares its errors with its `expected-error` annotations;
        raises CommandLineError listing every difference."""
        chunks, file_extension = self.prepare_input()
        output = self.prepare_output()
        problems: list[str] = []
        try:
            for i, (chunk, offset) in enumerate(chunks):
                text = chunk.read().decode(errors="replace")
                chunk.close()
                expected = expected_errors(text)
                reported: list[ReportedError] = []
                if i > 0:
                    output.write("// -----\n")
                try:
                    module = self.parse_chunk(BytesIO(text.encode()), file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        result = self.output_resulting_program(module)
                        output.write(result)
                except USER_ERRORS as e:
                    reported.append(self.reported_error(e, offset))
                problems += unmet_expectations(expected, reported, self.get_input_name(), offset)
        finally:
            if output is not sys.stdout:
                output.close()
        if problems:
            raise CommandLineError(
                "--verify-diagnostics: " + "\n".join(problems)
                if len(problems) == 1
                else f"--verify-diagnostics: {len(problems)} problems:\n" + "\n".join(problems)
            )

    def reported_error(self, e: BaseException, line_offset: int) -> ReportedError:
        """The chunk line and message of a user's error (the line None when not located)."""
        if isinstance(e, ParseError):
            return ReportedError(e.span.get_location().line, e.msg)
        if isinstance(e, LocatedVerifyException):
            span = e.span
            line = None if span is None else span.get_location().line - line_offset
            return ReportedError(line, e.message)
        about = getattr(e, "op", None)
        span = self.spans.get(about) if isinstance(about, Operation) else None
        line = None if span is None else span.get_location().line - line_offset
        return ReportedError(line, str(e).strip())


# --------------------------------------------------------------------------------------------
# Running a tool


def run_tool(
    make: Callable[[], xDSLOptMain], name: str, command: Sequence[str] | None = None
) -> int:
    """Runs an xDSL tool: 0 on success, EXIT_USER_ERROR with a message on stderr for a user's
    mistake, EXIT_INTERNAL_ERROR with a report and a reproducer for a bug in fuser."""
    command = list(command) if command is not None else [name, *sys.argv[1:]]
    tool: xDSLOptMain | None = None
    try:
        tool = make()
        tool.run()
    except ArgSpecParseError as e:
        print(f"{name}: error: {pipeline_error_text(e, '')}", file=sys.stderr)
        return EXIT_USER_ERROR
    except USER_ERRORS as e:
        print(user_error_text(name, e), file=sys.stderr)
        return EXIT_USER_ERROR
    except SystemExit as e:  # argparse: --help, --version (0) and usage errors (2)
        return EXIT_USER_ERROR if e.code == 2 else int(e.code or 0)
    except BrokenPipeError:
        return quiet_broken_pipe()
    except OSError as e:
        print(f"{name}: error: {e.strerror}: {e.filename}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as e:
        stage = getattr(tool, "stage", "reading the command line")
        input_text = getattr(tool, "input_text", None)
        return report_internal_error(name, stage, e, command, input_text)
    return 0


def opt_main(args: Sequence[str] | None = None) -> NoReturn:
    """The `fuser-opt` command."""
    command = None if args is None else ["fuser-opt", *args]
    sys.exit(run_tool(lambda: FuserOptMain(args=args), "fuser-opt", command))
