"""mypy over Parla's packages, each file under the name Python imports it by.

The packages live in top-level folders that pyproject.toml maps into `parla` (package-dir); mypy
names a module by its folders and reads no such mapping, so this hands it every file of the
packages `[tool.mypy] packages` lists, with its module name from the mapping, and checks them with
the rest of `[tool.mypy]`. Arguments go to mypy (`--no-incremental`, say); the exit status is
mypy's.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent


def package_folders() -> dict[str, Path]:
    """Each package of pyproject.toml's package-dir mapping with its folder."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {name: ROOT / folder for name, folder in config["tool"]["setuptools"]["package-dir"].items()}


def sources(packages: list[str]) -> list[BuildSource]:
    folders = package_folders()
    found: list[BuildSource] = []
    for package in packages:
        folder = folders[package]
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(BuildSource(str(path.relative_to(ROOT)), ".".join((package, *parts))))
    return found


def main(args: list[str]) -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # options from pyproject.toml (and the arguments); the file named here is only there to be named
    _, options = process_options(["--config-file", str(ROOT / "pyproject.toml"), *args, __file__])
    try:
        result = build.build(sources(config["tool"]["mypy"]["packages"]), options)
    except CompileError as e:
        print("\n".join(e.messages), file=sys.stderr)
        return 2
    for line in result.errors:
        print(line)
    if result.errors:
        print(f"Found {sum(': error:' in line for line in result.errors)} errors", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
