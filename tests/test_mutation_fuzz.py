"""The mutation fuzzer of `fuser-opt` (`fuzz/mutate_opt.py`) at a fixed seed: a few hundred
mutated lit tests, none of which may end in an internal error or an escaped exception; and the
regressions it found, each pinned by its input."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fuser.cli import FuserOptMain, run_tool
from fuser.fuzz.mutate_opt import Case, Seed, draw_cases, fuzz, load_corpus, run_case

SEED = 20261126
COUNT = 400


def test_fixed_seed_mutations_of_the_lit_tests_end_without_internal_errors():
    start = time.perf_counter()
    outcome = fuzz(SEED, COUNT, timeout=5.0)
    seconds = time.perf_counter() - start
    assert outcome.cases == COUNT
    assert not outcome.failures, "\n".join(outcome.failures)
    assert not outcome.slow, "\n".join(outcome.slow)
    assert outcome.by_status.get(0, 0) > 0 and outcome.by_status.get(1, 0) > 0
    assert seconds < 40, f"{COUNT} cases took {seconds:.1f} s"


def test_corpus_holds_every_lit_test_chunk_with_its_run_line_options():
    corpus = load_corpus()
    sources = {s.source.rsplit(":", 1)[0] for s in corpus}
    assert "dialects/fusion/invalid.mlir" in sources and len(sources) >= 60
    schedule = [s for s in corpus if s.source.startswith("transforms/schedule/")]
    assert any(("-p", "fuser-schedule") in {c[:2] for c in s.commands} for s in schedule)
    assert all(() in s.commands for s in corpus)


def test_same_seed_draws_the_same_cases():
    corpus = load_corpus()
    first = [(c.text, c.options) for c in draw_cases(7, 30, corpus)]
    assert first == [(c.text, c.options) for c in draw_cases(7, 30, corpus)]


def test_an_internal_error_counts_as_a_failure(monkeypatch, tmp_path):
    """The fuzzer would see the bugs it hunts: a pass that raises a non-diagnostic error."""
    from fuser.transforms.schedule import ScheduleFusionPass

    def broken(self, ctx, op):
        raise KeyError("lost value")

    monkeypatch.setattr(ScheduleFusionPass, "apply", broken)
    monkeypatch.setenv("FUSER_REPRO_DIR", str(tmp_path / "repro"))
    seed = Seed("x:0", "builtin.module {}\n", ((),))
    case = Case(0, seed, (), seed.text, ("-p", "fuser-schedule"))
    assert run_case(case, tmp_path / "case.mlir", timeout=5.0)[0] == 2


# ---- regressions the fuzzer found ---------------------------------------------------------

REGRESSIONS = {
    # xDSL's string-literal regex backtracked exponentially on an unclosed quote (minutes)
    "unclosed_string_literal_is_a_quick_parse_error": (
        '%x, %i, %v = "tes -> (!kernel.tensor<i32, 1>, i32, i64)\n',
        (),
        "End of file reached before closing string literal",
    ),
    # xDSL's default parameter parsing built a !host.stream with two parameters (ValueError)
    "parameters_of_host_stream_are_a_parse_error": (
        "kernel.func @s(%out: !host.stream<f32, 1>) {\n  kernel.return\n}\n",
        (),
        "!host.stream takes no parameters",
    ),
    # an scf.if with a result and an empty else branch: the yield printer's zip failed (a
    # ValueError), and an empty else was not printed at all, leaving the result unassigned
    "scf_if_branch_yielding_nothing_is_a_cuda_emission_error": (
        "kernel.func @k(%x: f64, %out: !kernel.tensor<f64, 1>) {\n"
        "  %c0 = arith.constant 0 : i32\n  %t = arith.constant true\n"
        "  %r = scf.if %t -> (f64) {\n    scf.yield %x : f64\n  } else {\n  }\n"
        "  kernel.store %r, %out[%c0] : f64, !kernel.tensor<f64, 1>, i32\n"
        "  kernel.return\n}\n",
        ("-t", "cuda{preamble=false}"),
        "it yields 0 values for the 1 results of its 'scf.if'",
    ),
    # the shapes fuser-segment records on a fusion were read without a check (ValueError)
    "malformed_recorded_shapes_are_an_option_error": (
        "fusion.fusion @f(%x: tensor<?xf32>) -> (tensor<?xf32>) "
        'attributes {fuser.shapes = "-1x-7"} {\n'
        "  %y = fusion.exp %x : tensor<?xf32>\n  fusion.output %y : tensor<?xf32>\n}\n",
        ("-p", "fuser-lower-host"),
        "fuser-lower-host: bad shape '-1x-7' in fuser.shapes = \"-1x-7\" of fusion @f",
    ),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_fuzzer_regression(name, tmp_path, capsys):
    text, options, message = REGRESSIONS[name]
    path = tmp_path / "in.mlir"
    path.write_text(text)
    args = [str(path), *options]
    start = time.perf_counter()
    status = run_tool(lambda: FuserOptMain(args=args), "fuser-opt")
    err = capsys.readouterr().err
    assert status == 1, err
    assert message in err and "internal error" not in err
    assert time.perf_counter() - start < 5


LIT_TESTS = Path(__file__).resolve().parent.parent / "lit_tests"
SUM_ROWS = """fusion.fusion @sum_rows(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}
"""
RMS_NORM = (LIT_TESTS / "transforms/schedule/persistent_rms_norm.mlir").read_text()


@pytest.mark.parametrize(
    ("text", "shapes"),
    [(SUM_ROWS, "4294967296x16384"), (RMS_NORM, "2147483648x4096,4096")],
    ids=["reduction", "persistent"],
)
def test_fuzzer_regression_reduction_grid_over_cuda_limits_is_a_user_error(
    text, shapes, tmp_path, capsys
):
    path = tmp_path / "in.mlir"
    path.write_text(text)
    args = [str(path), "-p", f'fuser-schedule{{shapes="{shapes}"}}']
    status = run_tool(lambda: FuserOptMain(args=args), "fuser-opt")
    err = capsys.readouterr().err
    assert status == 1, err
    assert "grid" in err and "internal error" not in err
