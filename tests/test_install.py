"""What the wheel installs, checked without building it: every package folder of the source tree
is one of the packages that setup.py hands to setuptools (the wheel once lacked
`fuser.transforms.schedulers`). `make wheel-check` proves the same end to end with a real install.
"""

import runpy
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent
NOT_SHIPPED = {"build", "tests", "benchmarks", "lit_tests", "examples"}  # and hidden folders


def source_package_folders() -> set[Path]:
    """Every folder holding an `__init__.py`, but for those that are not part of the package."""
    folders = {init.parent.relative_to(SOURCE_ROOT) for init in SOURCE_ROOT.rglob("__init__.py")}
    return {
        folder
        for folder in folders
        if folder.parts[0] not in NOT_SHIPPED and not folder.parts[0].startswith(".")
    }


def test_setup_installs_every_package_folder() -> None:
    setup_py = runpy.run_path(str(SOURCE_ROOT / "setup.py"), run_name="setup_under_test")
    folders = setup_py["PACKAGE_FOLDERS"]
    installed = setup_py["installed_packages"](SOURCE_ROOT)
    assert "fuser.transforms.schedulers" in installed

    def folder_of(package: str) -> Path:
        top = max((p for p in folders if package == p or package.startswith(p + ".")), key=len)
        return Path(folders[top], *package[len(top) :].split(".")[1:])

    assert {folder_of(package) for package in installed} == source_package_folders()
