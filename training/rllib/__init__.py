"""RLlib (Ray) self-play trainer (`colony-train-rllib`) and its export to project checkpoints.

The console scripts enter here, so that a missing `rllib` extra is one line (with the pip command)
even for `--help`, instead of an ImportError from `selfplay`'s imports of Ray.
"""

from __future__ import annotations

from ..cli import console_script, missing_extra


@console_script
def main(argv: list[str] | None = None) -> int:
    """`colony-train-rllib`: `selfplay.main` when Ray's RLlib is installed."""
    try:
        import ray.rllib  # noqa: F401
    except ImportError as e:
        return missing_extra("colony-train-rllib", "rllib", e)
    from .selfplay import main as selfplay_main

    return selfplay_main(argv)


@console_script
def export_main(argv: list[str] | None = None) -> int:
    """`colony-rllib-export`: `export.main` when Ray's RLlib is installed."""
    try:
        import ray.rllib  # noqa: F401
    except ImportError as e:
        return missing_extra("colony-rllib-export", "rllib", e)
    from .export import main as export

    return export(argv)
