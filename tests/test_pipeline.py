"""One pipeline: `fuser-opt -p fuser-compile` and `execute` run the same stages (`PIPELINE`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import test_cli
from test_host_evaluator import _fusion

from fuser.compiler import FusionCompiler
from fuser.dialects import fusion as fu
from fuser.transforms import get_all_passes
from fuser.transforms.pipeline import PIPELINE, CompilePass

opt = test_cli.opt  # the fixture: fuser-opt in process

CHAIN = """
fusion.fusion @chain3(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %x = fusion.add %a, %b : tensor<?xf32>
  %xs = fusion.segment_set %x : tensor<?xf32>
  %y = fusion.mul %xs, %a : tensor<?xf32>
  %ys = fusion.segment_set %y : tensor<?xf32>
  %z = fusion.exp %ys : tensor<?xf32>
  fusion.output %z : tensor<?xf32>
}
"""


def test_every_stage_is_a_pass_of_fuser_opt() -> None:
    passes = get_all_passes()
    assert [name for name, _ in PIPELINE] == [
        "fuser-decompose",
        "fuser-hoist-views",
        "split-k",
        "split-reductions",
        "fuser-segment",
        "fuser-lower-host",
        "lower-stream-parallel",
        "fuser-plan-memory",
    ]
    assert all(name in passes for name, _ in PIPELINE)
    assert passes["fuser-compile"]() is CompilePass


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_fuser_opt_prints_the_program_execute_runs(opt: Any, n: int) -> None:
    """The host program of `fuser-opt -p fuser-compile` is, to the kernels' names, the one
    `execute` (here `compile`, which takes the same path without a GPU) builds and runs."""
    status, printed, err = opt(["FILE", "-p", f'fuser-compile{{shapes="{n},{n}"}}'], CHAIN)
    assert status == 0, err
    fusion = _fusion(CHAIN)
    assert isinstance(fusion, fu.FusionOp)
    compiler = FusionCompiler(fusion)
    x = np.ones(n, np.float32)
    compiler.compile([x, x], arch="sm_90")
    executed = compiler.host_ir().replace("fuser_chain3_p0_", "chain3_")
    program = printed[printed.index("host.program") : printed.index("kernel.func")]
    program = "\n".join(line.removeprefix("  ") for line in program.rstrip().splitlines())
    assert "host.workspace" in executed and "host.grid" in executed
    assert program.strip() == executed.strip()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("streams=0", "fuser-compile: streams must be at least 1, got 0"),
        ("splits=0", "fuser-compile: splits must be at least 1"),
        ("merge=sometimes", "fuser-compile: unknown merge rule 'sometimes'"),
        ('shapes="5"', "fuser-compile"),
    ],
)
def test_bad_options_name_the_pass(opt: Any, options: str, message: str) -> None:
    status, _, err = opt(["FILE", "-p", f"fuser-compile{{{options}}}"], CHAIN)
    assert status == 1 and message in err and "Traceback" not in err
