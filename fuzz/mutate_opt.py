"""A mutation fuzzer of `fuser-opt`: mutated lit tests must never end in an internal error.

`fuser-opt` promises that a user's mistake ends in a located error (exit 1) and that only a bug
of fuser ends in "internal error in fuser" (exit 2). The lit tests under `lit_tests/` are valid
and invalid inputs the project already has; this fuzzer takes each (split at `// -----`),
applies one to three random mutations of its text (lines deleted, duplicated or swapped,
numbers made huge, negative or zero, element types swapped, SSA values renamed, tensor dims
dropped or added, op names swapped for other fusion/kernel/host ops, the text truncated, a
number of a pass option changed...), and runs `fuser-opt` in process on it: plain (parse,
verify, print), with the pass pipeline and target of each of the file's RUN lines, or with
`--verify-diagnostics` where the chunk has `expected-error` annotations. A run that ends in
exit status 2, or in an exception `fuser-opt` lets escape, is a failure; its input and command
are written to `--out`.

    python fuzz/mutate_opt.py --seed 1 --count 20000 [--out DIR] [--verbose]

A case that runs longer than `--timeout` seconds is stopped and counted as slow (reported, not
failed: a mutated extent can ask for a very large kernel). `tests/test_mutation_fuzz.py` runs a
fixed seed of a few hundred cases.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import random
import re
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fuser.cli import EXIT_INTERNAL_ERROR, FuserOptMain, run_tool

LIT_TESTS = Path(__file__).resolve().parent.parent / "lit_tests"

# ---- the corpus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """One chunk of a lit test and the fuser-opt options (pipeline, target) to run it with."""

    source: str
    """`path:chunk` of the chunk, for reports."""
    text: str
    commands: tuple[tuple[str, ...], ...]
    """Option lists besides the input: `()` (parse, verify, print), those of its RUN lines, and
    `--verify-diagnostics` for a chunk with `expected-error` annotations."""


def run_line_options(line: str) -> tuple[str, ...] | None:
    """The `-p`/`-t` options of a `// RUN: fuser-opt %s ...` line, or None for another line."""
    match = re.search(r"RUN:\s*(?:not\s+)?fuser-opt\s+%s\b(.*)", line)
    if match is None:
        return None
    try:
        words = shlex.split(match.group(1).split("|", 1)[0])
    except ValueError:
        return None
    options: list[str] = []
    for flag, value in itertools.pairwise(words):
        if flag in ("-p", "--passes", "-t", "--target"):
            options += [flag, value]
    return tuple(options)


def load_corpus(root: Path = LIT_TESTS) -> list[Seed]:
    """Every chunk of every `.mlir` under `root`, with the options of its file's RUN lines."""
    seeds = []
    for path in sorted(root.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        commands = {()} | {
            o for o in (run_line_options(line) for line in text.splitlines()) if o is not None
        }
        ordered = tuple(sorted(commands))
        for i, chunk in enumerate(text.split("// -----")):
            if chunk.strip():
                checked = (("--verify-diagnostics",),) if "expected-error" in chunk else ()
                seeds.append(Seed(f"{path.relative_to(root)}:{i}", chunk, ordered + checked))
    return seeds


# ---- mutations -----------------------------------------------------------------------------

NUMBERS = (
    "0",
    "1",
    "-1",
    "-7",
    "2",
    "65536",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "1.0e+300",
    "-1.0e-300",
    "0.0",
    "nan",
)
TYPES = ("f16", "bf16", "f32", "f64", "i1", "i8", "i32", "i64", "index")
_NUMBER = re.compile(r"(?<![\w%#@.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])|(?<=x)\d+|\d+(?=x)")
_TYPE = re.compile(r"\b(?:f16|bf16|f32|f64|i1|i8|i32|i64|index)\b")
_VALUE = re.compile(r"%[\w.$-]+")
_OP_NAME = re.compile(r"\b(?:fusion|kernel|host)\.\w+")
_TENSOR_DIMS = re.compile(r"(tensor<)((?:(?:\d+|\?)x)*)")


def _op_names() -> tuple[str, ...]:
    from fuser.dialects import get_all_dialects

    names = []
    for factory in get_all_dialects().values():
        names += [op.name for op in factory().operations]
    return tuple(sorted(names))


OP_NAMES = _op_names()


def _replace_one(text: str, pattern: re.Pattern[str], rng: random.Random, new: str) -> str:
    found = list(pattern.finditer(text))
    if not found:
        return text
    m = rng.choice(found)
    return text[: m.start()] + new + text[m.end() :]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def delete_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "\n".join(lines)


def swap_lines(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def change_number(text: str, rng: random.Random) -> str:
    return _replace_one(text, _NUMBER, rng, rng.choice(NUMBERS))


def swap_type(text: str, rng: random.Random) -> str:
    return _replace_one(text, _TYPE, rng, rng.choice(TYPES))


def rename_value(text: str, rng: random.Random) -> str:
    names = sorted(set(_VALUE.findall(text))) or ["%x"]
    return _replace_one(text, _VALUE, rng, rng.choice([*names, "%undefined"]))


def change_dims(text: str, rng: random.Random) -> str:
    found = list(_TENSOR_DIMS.finditer(text))
    if not found:
        return text
    m = rng.choice(found)
    dims = m.group(2).split("x")[:-1]
    if dims and rng.random() < 0.5:
        del dims[rng.randrange(len(dims))]
    else:
        dims.insert(rng.randrange(len(dims) + 1), rng.choice(["?", "1", "0", "3", "4294967296"]))
    new = m.group(1) + "".join(f"{d}x" for d in dims)
    return text[: m.start()] + new + text[m.end() :]


def change_op_name(text: str, rng: random.Random) -> str:
    return _replace_one(text, _OP_NAME, rng, rng.choice(OP_NAMES))


def truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def delete_span(text: str, rng: random.Random) -> str:
    start = rng.randrange(len(text) + 1)
    return text[:start] + text[start + rng.randint(1, 12) :]


def insert_punctuation(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    return (
        text[:at]
        + rng.choice(["{", "}", "(", ")", "[", "]", ",", ":", "<", ">", "%", "^"])
        + text[at:]
    )


MUTATIONS: tuple[Callable[[str, random.Random], str], ...] = (
    delete_line,
    duplicate_line,
    swap_lines,
    change_number,
    change_number,
    swap_type,
    rename_value,
    change_dims,
    change_op_name,
    truncate,
    delete_span,
    insert_punctuation,
)
"""The mutations, drawn uniformly (a number change twice as often: the most fruitful)."""


# ---- running -------------------------------------------------------------------------------


class CaseTimeout(BaseException):
    """Raised by the alarm when a case runs too long (a BaseException, so that fuser-opt's
    handler of internal errors lets it through)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Case:
    """One mutated input and the options it runs with."""

    number: int
    seed: Seed
    mutations: tuple[str, ...]
    text: str
    options: tuple[str, ...]


@dataclass
class Outcome:
    """What a fuzz run found."""

    cases: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)


def draw_cases(seed: int, count: int, corpus: Sequence[Seed]) -> Iterator[Case]:
    rng = random.Random(seed)
    for number in range(count):
        base = rng.choice(corpus)
        text = base.text
        names = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            mutation = rng.choice(MUTATIONS)
            text = mutation(text, rng) if text else text
            names.append(mutation.__name__)
        options = rng.choice(base.commands)
        values = [i for i in range(1, len(options)) if options[i - 1] in ("-p", "-t")]
        if values and rng.random() < 0.25:  # a number of a pass option (shapes, arch, ...)
            i = rng.choice(values)
            mutated = change_number(options[i], rng)
            options = (*options[:i], mutated, *options[i + 1 :])
            names.append("change_option_number")
        yield Case(number, base, tuple(names), text, options)


def run_case(case: Case, path: Path, timeout: float) -> tuple[int | None, str]:
    """Runs fuser-opt on the case's text (written to `path`): its exit status (None for a
    timeout) and its stderr; an exception fuser-opt lets escape comes back as status -1."""
    path.write_text(case.text)
    args = [str(path), *case.options]
    stderr = io.StringIO()
    try:
        with (
            time_limit(timeout),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(stderr),
        ):
            status = run_tool(lambda: FuserOptMain(args=args), "fuser-opt", ["fuser-opt", *args])
    except CaseTimeout:
        return None, stderr.getvalue()
    except BaseException as e:  # an escape: what fuser-opt promises never to do
        return -1, f"{type(e).__name__} escaped fuser-opt: {e}"
    return status, stderr.getvalue()


def describe(case: Case, status: int | None, stderr: str) -> str:
    last = stderr.strip().splitlines()[-1:] or ["(no output)"]
    return (
        f"case {case.number} from {case.seed.source}, mutations {', '.join(case.mutations)}, "
        f"options {shlex.join(case.options) or '(none)'}: status {status}: {last[0]}"
    )


def fuzz(
    seed: int,
    count: int,
    out: Path | None = None,
    timeout: float = 10.0,
    log: Callable[[str], None] | None = None,
) -> Outcome:
    """Runs `count` mutated cases drawn with `seed`; failures (and slow cases) are described
    in the outcome, and their inputs written to `out` when given."""
    outcome = Outcome()
    corpus = load_corpus()
    with tempfile.TemporaryDirectory(prefix="fuser-mutate-") as work:
        path = Path(work) / "case.mlir"
        old_repro = os.environ.get("FUSER_REPRO_DIR")
        os.environ["FUSER_REPRO_DIR"] = str(Path(work) / "repro")
        try:
            for case in draw_cases(seed, count, corpus):
                status, stderr = run_case(case, path, timeout)
                outcome.cases += 1
                key = -2 if status is None else status
                outcome.by_status[key] = outcome.by_status.get(key, 0) + 1
                if status is None:
                    outcome.slow.append(describe(case, status, stderr))
                elif status in (EXIT_INTERNAL_ERROR, -1):
                    outcome.failures.append(describe(case, status, stderr))
                else:
                    continue
                if out is not None:
                    save(case, out)
                if log is not None:
                    log(outcome.failures[-1] if status is not None else outcome.slow[-1])
        finally:
            if old_repro is None:
                del os.environ["FUSER_REPRO_DIR"]
            else:
                os.environ["FUSER_REPRO_DIR"] = old_repro
    return outcome


def save(case: Case, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["fuser-opt", f"case{case.number}.mlir", *case.options])
    header = f"// from {case.seed.source}, {', '.join(case.mutations)}\n// {command}\n"
    (out / f"case{case.number}.mlir").write_text(header + case.text)


def main(argv: Sequence[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n\n", 1)[0]  # __doc__ is None under python -OO
    parser = argparse.ArgumentParser(description=summary)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="a folder for the inputs of failing cases")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case (10)")
    parser.add_argument("--verbose", action="store_true", help="print each failure as found")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    outcome = fuzz(args.seed, args.count, args.out, args.timeout, print if args.verbose else None)
    seconds = time.perf_counter() - start
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(outcome.by_status.items()))
    if not args.verbose:
        for line in outcome.failures + outcome.slow:
            print(line)
    print(
        f"{outcome.cases} cases in {seconds:.1f} s (exit status: count {{{statuses}}}; -2 = "
        f"slow): {len(outcome.failures)} failures, {len(outcome.slow)} slow"
    )
    return 1 if outcome.failures else 0


if __name__ == "__main__":
    sys.exit(main())
