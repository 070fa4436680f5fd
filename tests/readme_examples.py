"""The README's code blocks, read from README.md itself: what is checked is what a reader sees.

`tests/test_readme.py` runs them under pytest; `make wheel-check` runs this file as a script with
the Python of a fresh venv that holds only the installed wheel, from outside the source tree, so
the README's Python example is proven against the installed package rather than the checkout.
"""

import contextlib
import io
import re
import sys
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent
README = SOURCE_ROOT / "README.md"


def blocks(language: str) -> list[str]:
    """The bodies of README.md's fenced code blocks of one language, in order."""
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.DOTALL)


def python_examples_without_gpu() -> list[str]:
    """The README's Python blocks that run on any machine (those calling `execute` need a GPU)."""
    return [block for block in blocks("python") if "execute" not in block]


def main() -> None:
    """Run every GPU-free Python example; fail if `fuser` came from the source tree."""
    examples = python_examples_without_gpu()
    if not examples:
        raise SystemExit("README.md has no Python example to run")
    for example in examples:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(example, str(README), "exec"), {})
    import fuser

    location = Path(fuser.__file__).resolve()
    if location.is_relative_to(SOURCE_ROOT):
        raise SystemExit(f"fuser was imported from the source tree ({location}), not the install")
    print(f"README: {len(examples)} Python example(s) ran with fuser from {location.parent}")


if __name__ == "__main__":
    sys.exit(main())
