"""Shared set-up of the test suite.

Tests are grouped by concern, one folder each (docs/development.md says which is which):
`engine/` (rules R1-R9, the compiled kernels), `envs/` (PettingZoo, Gymnasium, the self-play vector
env, rendering), `agents/` (search, network agents, checkpoints), `ppo/`, `zero/`, `distill/`, `eval/`,
`common/` (configs, run directories), `cluster/` (Ray on loopback), `integrations/` (SB3, RLlib,
TorchRL, OpenSpiel), `web/`; the tests of the repository as a whole (docs, import graph,
packaging) stay at the top. `helpers.py` holds the helpers they share (ASCII positions, random
games, examples as modules); `scripts/` holds commands run by hand (the long differential run,
mutation testing) and the reference engine they and `engine/test_differential.py` share.
"""

from __future__ import annotations

import sys
from pathlib import Path

# pytest puts this folder on sys.path (a rootdir conftest.py without __init__.py), so every test
# imports `helpers`; the scripts folder is added for the reference engine and the differential runner.
_SCRIPTS = str(Path(__file__).resolve().parent / "scripts")
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)
