"""Export an RLlib checkpoint of `colony-train-rllib` to the project's checkpoint format.

    colony-rllib-export RUN_DIR/rllib/iter_000010 agent.pt     # one RLlib checkpoint
    colony-rllib-export RUN_DIR agent.pt                       # the newest one of a run
    colony-eval checkpoint:agent.pt random --games 100         # then use it like any checkpoint

`colony-train-rllib` already exports every checkpoint it saves to `RUN_DIR/checkpoints/latest.pt`;
this command is for an RLlib checkpoint saved elsewhere (a cluster's storage, an older
iteration, a snapshot module such as `main_v3`). It needs no running Ray instance.

The RLModule (`ColonyRLModule`) holds the project's `PolicyValueNet` as `net`, so export is
a rename of its weights; the result is a plain-data file that `torch.load(weights_only=True)`
reads. Reading the RLlib checkpoint itself unpickles RLlib's files, so only export
checkpoints you trust (the exported file is the safe one to share).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointError, save_checkpoint
from ..cli import console_script, report_error

MODULE_DIR = Path("learner_group") / "learner" / "rl_module"  # as colony_training.rllib.selfplay.MODULE_DIR (no ray needed here)


def find_rllib_checkpoint(path: str | Path) -> Path:
    """`path` if it is an RLlib checkpoint, else the newest `rllib/iter_*` of a run directory."""
    p = Path(path)
    if (p / MODULE_DIR).is_dir():
        return p
    candidates = sorted((p / "rllib").glob("iter_*")) if p.is_dir() else []
    candidates = [c for c in candidates if (c / MODULE_DIR).is_dir()]
    if not candidates:
        raise CheckpointError(
            f"{str(p)!r} is neither an RLlib checkpoint (no {MODULE_DIR}/) nor a colony-train-rllib run directory "
            "(no rllib/iter_*/)"
        )
    return candidates[-1]


def export_rllib_checkpoint(rllib_checkpoint: str | Path, out: str | Path, module_id: str = "main") -> Path:
    """Write the `PolicyValueNet` of module `module_id` of an RLlib checkpoint as a project checkpoint."""
    import json

    from colony_env.observation import OBS_CHANNELS

    from .selfplay import ColonyRLModule, net_from_module_state

    ckpt = find_rllib_checkpoint(rllib_checkpoint)
    module_dir = ckpt / MODULE_DIR / module_id
    if not module_dir.is_dir():
        have = sorted(d.name for d in (ckpt / MODULE_DIR).iterdir() if d.is_dir())
        raise CheckpointError(f"RLlib checkpoint {str(ckpt)!r} has no module {module_id!r}; it has: {', '.join(have)}")
    from ray.rllib.core.rl_module.rl_module import RLModule

    try:
        module = RLModule.from_checkpoint(str(module_dir.resolve()))
    except Exception as e:  # RLlib raises many kinds for a broken directory; report one line
        raise CheckpointError(f"cannot read RLlib module {str(module_dir)!r}: {type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    if not isinstance(module, ColonyRLModule):
        raise CheckpointError(f"module {module_id!r} is a {type(module).__name__}, not a ColonyRLModule from colony-train-rllib")
    net = module.net
    net = net_from_module_state(module.state_dict(), net.channels, net.blocks, OBS_CHANNELS)
    config: dict[str, Any] = {"trainer": "rllib"}
    meta: dict[str, Any] = {"trainer": "rllib", "rllib_checkpoint": str(ckpt), "module_id": module_id}
    run_dir = ckpt.parent.parent
    if (run_dir / "config.yaml").is_file():
        import yaml

        config.update(yaml.safe_load((run_dir / "config.yaml").read_text()) or {})
    if (ckpt / "rllib_checkpoint.json").is_file():
        meta["ray_version"] = json.loads((ckpt / "rllib_checkpoint.json").read_text()).get("ray_version")
    if ckpt.name.startswith("iter_") and ckpt.name[5:].isdigit():
        meta["iteration"] = int(ckpt.name[5:])
    return save_checkpoint(out, net, config=config, meta=meta)


@console_script
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="colony-rllib-export", description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", help="an RLlib checkpoint directory, or a colony-train-rllib run directory (newest)")
    p.add_argument("out", help="the project checkpoint file to write (e.g. agent.pt)")
    p.add_argument("--module", default="main", help="module to export: main (default) or a snapshot main_vN")
    args = p.parse_args(argv)
    try:
        path = export_rllib_checkpoint(args.checkpoint, args.out, args.module)
    except CheckpointError as e:
        return report_error("colony-rllib-export", str(e))
    print(f"exported {args.module} -> {path}  (use it as checkpoint:{path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
