"""Why a setup.py beside pyproject.toml: fuser installs several source folders as one package.

`fuser/` is the package `fuser`, and each other top-level source folder is a subpackage of it
(`dialects/` is `fuser.dialects`, `fuzz/` is `fuser.fuzz`). pyproject.toml cannot say "find every
package under this folder and install it under that name", and a hand-written package list went
stale once already (the wheel lacked `fuser.transforms.schedulers`). So the mapping lives here,
once, and every folder below a mapped folder that holds an `__init__.py` is installed with it.
"""

from pathlib import Path

from setuptools import find_packages, setup

# Installed package name -> source folder, relative to this file.
PACKAGE_FOLDERS = {
    "fuser": "fuser",
    "fuser.dialects": "dialects",
    "fuser.transforms": "transforms",
    "fuser.codegen": "codegen",
    "fuser.runtime": "runtime",
    "fuser.fuzz": "fuzz",
}


def installed_packages(root: Path) -> list[str]:
    """Every package that the wheel holds: each mapped folder and each package folder below it."""
    packages = []
    for package, folder in PACKAGE_FOLDERS.items():
        if not (root / folder).exists():
            continue  # a folder that a checkout does not have yet installs nothing
        if not (root / folder / "__init__.py").is_file():
            raise SystemExit(f"setup.py: {folder}/ is mapped to {package} but has no __init__.py")
        packages.append(package)
        packages += [f"{package}.{sub}" for sub in find_packages(str(root / folder))]
    return packages


if __name__ == "__main__":
    setup(packages=installed_packages(Path(__file__).parent), package_dir=PACKAGE_FOLDERS)
