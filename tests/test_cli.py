"""`fuser-opt` and `fuser-run` end every user's mistake in a one-line or located error (exit 1),
every bug of fuser in "internal error in fuser" with a reproducer (exit 2), never a traceback;
`--verify-diagnostics` checks `expected-error` annotations as mlir-opt does."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from fuser.cli import FuserOptMain, run_tool
from fuser.dialects import get_all_dialects
from fuser.run import main as run_main
from fuser.run import parse_shapes as run_parse_shapes
from fuser.transforms.schedulers.base import SchedulingError
from fuser.transforms.schedulers.info import parse_shapes

ROOT = Path(__file__).resolve().parent.parent
PY = Path(sys.executable).parent

ADD = """fusion.fusion @f(%x: tensor<?xf32>, %y: tensor<?xf32>) -> (tensor<?xf32>) {
  %z = fusion.add %x, %y : tensor<?xf32>
  fusion.output %z : tensor<?xf32>
}
"""
EXP4 = """fusion.fusion @e(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %y = fusion.exp %x : tensor<4xf32>
  fusion.output %y : tensor<4xf32>
}
"""


def fuser_opt(
    args: list[str],
    text: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> tuple[int, str, str]:
    """Runs fuser-opt in process on `text` (written to `in.mlir`, the `FILE` of `args`)."""
    path = tmp_path / "in.mlir"
    path.write_text(text)
    args = [str(path) if a == "FILE" else a for a in args]
    monkeypatch.setenv("FUSER_REPRO_DIR", str(tmp_path / "repro"))
    status = run_tool(lambda: FuserOptMain(args=args), "fuser-opt", ["fuser-opt", *args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def opt(capsys, monkeypatch, tmp_path):
    return lambda args, text: fuser_opt(args, text, capsys, monkeypatch, tmp_path)


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---- 1. pipelines and target options --------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "spec", "says"),
    [
        ("-p", "fuser-schedule{", "Expected argument name here at column 16"),
        ("-p", "builtin.module(cse)", "Unknown token at column 8"),
        ("-t", "cuda{preambl=false}", '["preambl"] not found'),
        ("-p", "fuser-schedule{shapes=4 nope=1}", "nope"),
    ],
)
def test_bad_pass_pipeline_or_target_option_is_a_one_line_error(opt, flag, spec, says):
    status, _, err = opt(["FILE", flag, spec], "builtin.module {}\n")
    line = one_line_error(err)
    assert status == 1 and line.startswith("fuser-opt: error: ") and says in line


def test_usage_error_exits_1_not_argparse_2(opt):
    status, _, err = opt(["FILE", "-t", "no-such-target"], "builtin.module {}\n")
    assert status == 1 and "invalid choice: 'no-such-target'" in err


# ---- 2. out-of-range literals ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "kind"),
    [
        ("%s = fusion.sum %x [9223372036854775808] : tensor<4xf32> -> tensor<f32>", "an integer"),
        ("%c = fusion.constant 1.0e+300 : f32", "a float"),
    ],
)
def test_out_of_range_literal_is_a_located_parse_error(opt, op, kind):
    text = f"fusion.fusion @f(%x: tensor<4xf32>) -> () {{\n  {op}\n  fusion.output\n}}\n"
    status, _, err = opt(["FILE"], text)
    assert status == 1 and "Traceback" not in err
    assert "in.mlir:2:3: error: " + kind + " in this op is out of range for its type" in err


# ---- 3. SSA dominance -----------------------------------------------------------------------


def test_op_using_its_own_result_is_a_located_verifier_error(opt):
    text = EXP4.replace("fusion.exp %x", "fusion.exp %y")
    status, _, err = opt(["FILE", "-p", "fuser-schedule"], text)
    assert status == 1
    assert "in.mlir:2:3: error: 'fusion.exp' operand #0 (%y) is its own result" in err


def test_kernel_store_of_a_value_loaded_later_is_a_located_verifier_error(opt):
    text = """kernel.func @k(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  %i = arith.constant 0 : i64
  kernel.store %v, %y[%i] : f32, !kernel.tensor<f32, 1>, i64
  %v = kernel.load %x[%i] : !kernel.tensor<f32, 1>, i64 -> f32
  kernel.return
}
"""
    status, _, err = opt(["FILE", "-t", "cuda"], text)
    assert status == 1
    assert "in.mlir:3:3: error: 'kernel.store' operand #0 (%v) is used before its definition" in err


def test_python_api_verification_rejects_use_before_definition():
    ctx = Context()
    for name, factory in (xdsl_dialects() | get_all_dialects()).items():
        ctx.register_dialect(name, factory)
    text = EXP4.replace(
        "%y = fusion.exp %x", "%z = fusion.neg %y : tensor<4xf32>\n  %y = fusion.exp %x"
    )
    module = Parser(ctx, text).parse_module()
    with pytest.raises(VerifyException, match=r"'fusion.neg' operand #0 \(%y\) is used before"):
        module.verify()


def test_value_of_a_nested_region_is_not_visible_after_it(opt):
    text = """fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %r = fusion.segment "pointwise" (%x) : (tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%x0: tensor<4xf32>):
    %e = fusion.exp %x0 : tensor<4xf32>
    fusion.yield %e : tensor<4xf32>
  }
  fusion.output %e : tensor<4xf32>
}
"""
    status, _, err = opt(["FILE"], text)
    assert status == 1 and "Traceback" not in err and "in.mlir:" in err


# ---- 4. an operand spelled like the op's own block argument ----------------------------------


def test_segment_operand_spelled_like_its_block_argument_is_a_located_error(opt):
    text = """fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %r = fusion.segment "reduction" (%x0) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
  ^bb0(%x0: tensor<?x?xf32>):
    %sum = fusion.sum %x0 [0] : tensor<?x?xf32> -> tensor<?xf32>
    fusion.yield %sum : tensor<?xf32>
  }
  fusion.output %r : tensor<?xf32>
}
"""
    status, _, err = opt(["FILE"], text)
    assert status == 1
    assert "in.mlir:2:3: error: 'fusion.segment' operand #0 is defined only inside" in err


# ---- 5. stream axis of a broadcast with too many dims ---------------------------------------


def test_stream_axis_of_broadcast_with_dims_unlike_its_rank_is_a_verifier_error(opt):
    text = """fusion.fusion @f(%b: tensor<?xf32>, %x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %bb = fusion.broadcast_in_dim %b [1, 0] sizes(%n) {fusion.stream_axis = 0 : i64}
      : tensor<?xf32> -> tensor<?x?xf32>
  fusion.output %bb : tensor<?x?xf32>
}
"""
    status, _, err = opt(["FILE"], text)
    assert status == 1
    assert "in.mlir:3:3: error: 'fusion.broadcast_in_dim' needs one broadcast dim per" in err


# ---- 6. grids over CUDA's limits ------------------------------------------------------------


def test_pointwise_grid_over_cuda_limits_is_a_scheduling_error(opt):
    big = "tensor<4294967296x4294967296xf32>"
    status, _, err = opt(["FILE", "-p", "fuser-schedule"], EXP4.replace("tensor<4xf32>", big))
    line = one_line_error(err)
    assert status == 1
    assert "fusion @e: the pointwise grid" in line and "over CUDA's grid limits" in line


def test_matmul_grid_over_cuda_limits_is_a_scheduling_error(opt):
    text = """fusion.fusion @mm(%a: tensor<?x?xf16>, %b: tensor<?x?xf16>) -> (tensor<?x?xf16>) {
  %c = fusion.matmul %a, %b : tensor<?x?xf16>, tensor<?x?xf16> -> tensor<?x?xf16>
  fusion.output %c : tensor<?x?xf16>
}
"""
    args = ["FILE", "-p", 'fuser-schedule{shapes="16777216x8,8x16777216"}']
    status, _, err = opt(args, text)
    line = one_line_error(err)
    assert status == 1
    assert line.startswith("fuser-opt: error: fusion @mm: the matmul (")
    assert "over CUDA's grid" in line


def test_compile_of_2_pow_60_elements_ends_in_scheduling_error():
    from fuser import DataType, FusionDefinition

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
    huge = np.broadcast_to(np.zeros(1, np.float32), (2**30, 2**30))
    with pytest.raises(SchedulingError, match="over CUDA's grid limits"):
        fd.compile([huge], arch="sm_90")


# ---- 7. shapes that the fusion's ops cannot combine -----------------------------------------


def test_lower_host_shapes_the_ops_cannot_combine_is_an_option_error(opt):
    status, _, err = opt(["FILE", "-p", 'fuser-lower-host{shapes="4,5"}'], ADD)
    line = one_line_error(err)
    assert status == 1
    assert "fuser-lower-host: the input shapes do not fit fusion @f: 'fusion.add'" in line


# ---- 8. a closed pipe -----------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["fuser-opt", "fuser-run"])
def test_output_into_a_closed_pipe_exits_quietly(tool, tmp_path):
    path = tmp_path / "e.mlir"
    path.write_text(EXP4)
    args = [str(PY / tool), str(path)] + (["--compile-only"] if tool == "fuser-run" else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the tool writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


# ---- 9. --verify-diagnostics ----------------------------------------------------------------

BAD_ADD = """fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<5xf32>) -> (tensor<4xf32>) {
  %z = fusion.add %x, %y : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  fusion.output %z : tensor<4xf32>
}
"""
MESSAGE = "'fusion.add' operand #1 has shape [5]"


@pytest.mark.parametrize(
    ("where", "line"),
    [("@+1", 1), ("@-1", 2), ("@above", 2), ("@below", 1), ("", None)],
)
def test_verify_diagnostics_accepts_an_error_where_it_is_expected(opt, where, line):
    lines = BAD_ADD.splitlines()
    annotation = f"// expected-error {where} {{{{{MESSAGE}}}}}"
    if line is None:  # on the line of the error itself
        lines[1] += " " + annotation
    else:
        lines.insert(line, annotation)
    status, _, err = opt(["FILE", "--verify-diagnostics"], "\n".join(lines) + "\n")
    assert (status, err) == (0, "")


def test_verify_diagnostics_fails_on_an_error_at_another_line(opt):
    text = BAD_ADD.replace(
        "fusion.fusion", f"// expected-error @+1 {{{{{MESSAGE}}}}}\nfusion.fusion"
    )
    status, _, err = opt(["FILE", "--verify-diagnostics"], text)
    assert status == 1
    assert "in.mlir:3: unexpected error: " + MESSAGE in err
    assert f'in.mlir:1: expected error at line 2 was not produced: "{MESSAGE}"' in err


def test_verify_diagnostics_fails_on_a_missing_error(opt):
    text = "// expected-error @+1 {{does not verify}}\n" + EXP4
    status, _, err = opt(["FILE", "--verify-diagnostics"], text)
    assert status == 1
    assert 'in.mlir:1: expected error at line 2 was not produced: "does not verify"' in err


def test_verify_diagnostics_fails_on_an_unexpected_error(opt):
    status, _, err = opt(["FILE", "--verify-diagnostics"], BAD_ADD)
    assert status == 1 and "in.mlir:2: unexpected error: " + MESSAGE in err


def test_verify_diagnostics_checks_each_chunk_of_a_split_file(opt):
    good = BAD_ADD.replace("  %z", f"  // expected-error @+1 {{{{{MESSAGE}}}}}\n  %z")
    text = good + "// -----\n" + BAD_ADD + "// -----\n" + EXP4
    status, out, err = opt(["FILE", "--verify-diagnostics", "--split-input-file"], text)
    assert status == 1
    assert err.count("unexpected error") == 1 and "in.mlir:8: unexpected error" in err
    assert "fusion.exp" in out  # the chunk without errors is printed


def test_verify_diagnostics_matches_a_parse_error(opt):
    text = (
        "fusion.fusion @f() -> () {\n  // expected-error @+1 {{a float in this op is out of "
        "range}}\n  %c = fusion.constant 1.0e+300 : f32\n  fusion.output\n}\n"
    )
    status, _, err = opt(["FILE", "--verify-diagnostics"], text)
    assert (status, err) == (0, "")


def test_verify_diagnostics_matches_an_unlocated_pass_error_with_unknown(opt):
    text = "// expected-error @unknown {{shapes gives 2 shape(s)}}\n" + EXP4
    args = ["FILE", "--verify-diagnostics", "-p", 'fuser-schedule{shapes="4,4"}']
    status, _, err = opt(args, text)
    assert (status, err) == (0, "")


# ---- 10. the command line -------------------------------------------------------------------


def test_repeated_p_are_joined_in_order(opt):
    status, out, _ = opt(["FILE", "-p", "fuser-segment", "-p", "fuser-lower-host"], EXP4)
    assert status == 0 and "host.program @e" in out and "kernel.func" in out


def test_dash_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EXP4.encode())))
    status = run_tool(lambda: FuserOptMain(args=["-"]), "fuser-opt")
    assert status == 0 and "fusion.exp" in capsys.readouterr().out


def test_version_names_fuser_and_xdsl(opt):
    status, out, _ = opt(["--version"], "")
    assert status == 0
    assert out.startswith("fuser-opt (fuser 0.1.0) on xDSL 0.74.0")


def test_cuda_target_on_a_module_without_kernels_is_an_error(opt):
    status, _, err = opt(["FILE", "-t", "cuda"], EXP4)
    line = one_line_error(err)
    assert status == 1 and "has none" in line and "fuser-schedule" in line


def test_arch_below_the_minimum_is_rejected_by_passes_and_fuser_run(opt, capsys, tmp_path):
    status, _, err = opt(["FILE", "-p", "fuser-schedule{arch=sm_1}"], EXP4)
    assert status == 1 and "arch sm_1 is not supported: fuser compiles for sm_75" in err
    path = tmp_path / "e.mlir"
    path.write_text(EXP4)
    assert run_main([str(path), "--arch", "sm_1"]) == 1
    assert "arch sm_1 is not supported: fuser compiles for sm_75" in capsys.readouterr().err


def test_rank0_shape_grammar_is_shared_by_fuser_run_and_pass_options(opt):
    assert parse_shapes("4x8,(),8") == [(4, 8), (), (8,)]
    assert parse_shapes("4x8,,8") == [(4, 8), (), (8,)]  # the older spelling
    assert run_parse_shapes("(), 2X3") == [(), (2, 3)]
    with pytest.raises(ValueError, match="an extent is over 2\\^63 - 1"):
        parse_shapes("4x9223372036854775808")
    text = """fusion.fusion @s(%x: tensor<f32>, %y: tensor<?xf32>) -> (tensor<?xf32>) {
  %n = fusion.dim %y[0] : tensor<?xf32>
  %b = fusion.broadcast_in_dim %x [] sizes(%n) : tensor<f32> -> tensor<?xf32>
  %z = fusion.add %b, %y : tensor<?xf32>
  fusion.output %z : tensor<?xf32>
}
"""
    status, out, err = opt(["FILE", "-p", 'fuser-segment{shapes="(),8"}'], text)
    assert status == 0, err
    assert 'fuser.shapes = "(),8"' in out


def test_help_lists_fuser_passes_with_options_before_xdsl_passes(opt):
    status, out, _ = opt(["--help"], "")
    assert status == 0
    ours = out.index('fuser-schedule{shapes="" arch=sm_90 sm-count=132 comments=true}')
    assert ours < out.index("xDSL's passes:") < out.index("convert-linalg-to-loops")
    assert "  cuda{preamble=true}" in out


# ---- 11. internal errors --------------------------------------------------------------------


def test_internal_error_in_a_pass_exits_2_with_the_stage_and_a_reproducer(
    opt, monkeypatch, tmp_path
):
    from fuser.transforms.schedule import ScheduleFusionPass

    def broken(self, ctx, op):
        raise RuntimeError("boom")

    monkeypatch.setattr(ScheduleFusionPass, "apply", broken)
    status, _, err = opt(["FILE", "-p", "fuser-schedule"], EXP4)
    line = one_line_error(err)
    assert status == 2
    assert line.startswith(
        "fuser-opt: internal error in fuser during pass fuser-schedule: RuntimeError: boom"
    )
    (repro,) = (tmp_path / "repro").iterdir()
    assert str(repro) in line
    text = repro.read_text()
    assert "-p fuser-schedule" in text and EXP4 in text and "RuntimeError: boom" in text


def test_internal_error_in_fuser_run_exits_2_with_the_stage(monkeypatch, tmp_path, capsys):
    import fuser.run

    def broken(*args, **kwargs):
        raise KeyError("lost")

    monkeypatch.setattr(fuser.run, "FusionCompiler", broken)
    monkeypatch.setenv("FUSER_REPRO_DIR", str(tmp_path / "repro"))
    path = tmp_path / "e.mlir"
    path.write_text(EXP4)
    assert run_main([str(path), "--compile-only"]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert line.startswith("fuser-run: internal error in fuser during compiling: KeyError: 'lost'")
    (repro,) = (tmp_path / "repro").iterdir()
    assert EXP4 in repro.read_text()


def test_start_up_imports_only_the_passes_it_runs(tmp_path: Path) -> None:
    """fuser-opt's `--help` text summarizes every pass, which imports every pass module (a
    quarter of a second): it is made only when help is asked for, so printing a file imports no
    pass."""
    source = tmp_path / "add.mlir"
    source.write_text(
        "fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {\n"
        "  %y = fusion.add %x, %x : tensor<4xf32>\n"
        "  fusion.output %y : tensor<4xf32>\n}\n"
    )
    probe = (
        "import sys\n"
        "from fuser.cli import run_tool, FuserOptMain\n"
        "status = run_tool(lambda: FuserOptMain(args=sys.argv[1:]), 'fuser-opt')\n"
        "print(status, sorted(m for m in sys.modules if m.startswith('fuser.transforms.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(source)], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "0 []", out
