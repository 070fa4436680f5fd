"""lit configuration: each .mlir file under lit_tests/ is a test of fuser-opt and filecheck."""

import os
import sys

import lit.formats

config.name = "fuser"  # noqa: F821
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["lit.cfg.py", "Output"]  # noqa: F821

# lit scrubs PATH: put the tools of the running Python (the project's venv) first.
config.environment["PATH"] = os.pathsep.join(  # noqa: F821
    [os.path.dirname(sys.executable), config.environment.get("PATH", "")]  # noqa: F821
)
# the tests compile their kernels with NVRTC and write nothing to the user's kernel cache
config.environment["FUSER_KERNEL_CACHE"] = "0"  # noqa: F821
config.substitutions.append(  # noqa: F821
    (
        "FUSER_ROUNDTRIP",
        "fuser-opt %s --split-input-file | fuser-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(  # noqa: F821
    (
        "FUSER_GENERIC_ROUNDTRIP",
        "fuser-opt %s --print-op-generic --split-input-file | fuser-opt --split-input-file"
        " | filecheck %s",
    )
)
