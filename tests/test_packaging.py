"""What the wheel carries: every package folder, under its installed name, with the shipped data.

The wheel itself is built and installed outside the clone by `.ci/run` (the user's view); these
checks keep pyproject's explicit package list in step with the tree.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder(package: str) -> Path:
    """The folder a package is built from, by pyproject's package-dir (longest mapped prefix)."""
    mapping = SETUPTOOLS.get("package-dir", {})
    parts = package.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in mapping:
            return ROOT / mapping[prefix] / Path(*parts[n:])
    return ROOT / Path(*parts)


def test_every_package_folder_is_listed() -> None:
    listed = {_folder(p).resolve() for p in SETUPTOOLS["packages"]}
    on_disk = {init.parent.resolve() for root in ("colony_env", "training", "colony_web")
               for init in (ROOT / root).rglob("__init__.py")}
    assert on_disk - listed == set(), "package folders missing from pyproject's [tool.setuptools] packages"
    assert all(_folder(p).is_dir() for p in SETUPTOOLS["packages"])


def test_no_top_level_training_package() -> None:
    """`training/` installs as `colony_training`: a generic top-level name collides with users' code."""
    assert "training" not in SETUPTOOLS["packages"]
    assert all(p.split(".")[0] in ("colony_env", "colony_training", "colony_web") for p in SETUPTOOLS["packages"])


def test_shipped_data_comes_from_the_one_copy_in_git() -> None:
    assert _folder("colony_training.checkpoints") == ROOT / "checkpoints"
    assert _folder("colony_training.configs") == ROOT / "configs"
    data = SETUPTOOLS["package-data"]
    assert data["colony_training.checkpoints"] == ["*.pt"] and data["colony_training.configs"] == ["*.yaml"]
    assert list((ROOT / "checkpoints").glob("*.pt")) and list((ROOT / "configs").glob("*.yaml"))
