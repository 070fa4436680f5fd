"""The fuzzers' command lines start without their module docstrings, as under `python -OO`, which
drops them (their `--help` summary is the docstring's first paragraph)."""

from __future__ import annotations

from types import ModuleType

import pytest

from fuser.fuzz import differential, mutate_opt


@pytest.mark.parametrize("module", [differential, mutate_opt], ids=lambda m: m.__name__)
def test_help_without_module_docstring(
    module: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(module, "__doc__", None)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    assert "--seed" in capsys.readouterr().out
