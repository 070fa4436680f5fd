"""The README's layering, pinned: `transforms/`, `codegen/` and `runtime/` import `dialects/` and
fuser's leaf modules (`fuser.errors`, `fuser.options`, `fuser.dump`) but never each other, and
`dialects/` imports none of them: a pass cannot touch the GPU, the runtime cannot rewrite IR."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEAVES = {"fuser.errors", "fuser.options", "fuser.dump"}
LAYERS = {
    "dialects": {"fuser.dialects"},
    "transforms": {"fuser.dialects", "fuser.transforms"},
    "codegen": {"fuser.dialects", "fuser.codegen"},
    "runtime": {"fuser.dialects", "fuser.runtime"},
}


def _fuser_imports(path: Path) -> set[str]:
    """The `fuser.*` modules a file imports (at any depth, lazily or not)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("fuser")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "fuser":
                found |= {f"fuser.{a.name}" for a in node.names}
            elif node.module.startswith("fuser."):
                found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layers_import_down_only(layer: str) -> None:
    allowed = LAYERS[layer] | LEAVES
    wrong = {
        f"{path.relative_to(ROOT)}: {module}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for module in _fuser_imports(path)
        if not any(module == a or module.startswith(f"{a}.") for a in allowed)
    }
    assert not wrong, f"{layer}/ imports outside its layer: {sorted(wrong)}"


def test_the_compiler_imports_no_compile_side() -> None:
    """`fuser.compiler` (the dispatch side, all a stored signature needs) imports no pass,
    scheduler, emitter or `fuser.builder` until a signature must be compiled: a new process
    that runs stored runnables only never pays for them."""
    code = (
        "import sys, fuser.compiler, fuser.runtime.runnable_store\n"
        "heavy = ('fuser.builder', 'fuser.transforms', 'fuser.codegen')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
