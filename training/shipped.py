"""What the package ships: the trained networks of `checkpoints/` and the configs of `configs/`.

Both folders have one copy in git, at the top of the repository; the wheel carries them as
package data (`colony_training/checkpoints/`, `colony_training/configs/`, see pyproject.toml).
So a file is looked up beside the installed package first, then beside the `training/` folder
of a clone (an editable install), and a user's code finds them from any working directory.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped_dir(kind: str) -> Path:
    """The folder of shipped `kind` ("checkpoints" or "configs"): in the installed package or the clone."""
    if kind not in ("checkpoints", "configs"):
        raise ValueError(f"unknown kind of shipped file {kind!r}: use 'checkpoints' or 'configs'")
    for candidate in (_PACKAGE / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"this installation of colony-rl has no {kind}/ folder (looked beside {_PACKAGE})")


def shipped_checkpoint(filename: str) -> Path:
    """The path of a shipped network, e.g. `shipped_checkpoint("colony_zero.pt")`."""
    return shipped_dir("checkpoints") / filename


def builtin_configs() -> dict[str, Path]:
    """Built-in config name (the file name without `.yaml`) -> its file, sorted by name."""
    return {p.stem: p for p in sorted(shipped_dir("configs").glob("*.yaml"))}
