"""The shipped networks by name (`zero`, `ppo`, with any checkpoint suffix), from any folder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import colony_env as ce
from colony_training.eval.agent_specs import SHIPPED_AGENTS, AgentSpecError, make_agent, parse_agent_spec
from colony_training.shipped import shipped_checkpoint


@pytest.mark.parametrize("name", sorted(SHIPPED_AGENTS))
def test_every_shipped_name_has_its_file(name: str) -> None:
    path = shipped_checkpoint(SHIPPED_AGENTS[name])
    assert path.is_file() and path.stat().st_size > 100_000


@pytest.mark.parametrize(
    "spec, sims, az, greedy",
    [("zero", 0, 0, True), ("ZERO:az:8", 0, 8, True), ("zero:sample", 0, 0, False), ("ppo:mcts:12", 12, 0, True),
     ("ppo", 0, 0, True)],
)
def test_names_expand_to_the_shipped_checkpoint(spec: str, sims: int, az: int, greedy: bool) -> None:
    parsed = parse_agent_spec(spec)
    name = spec.split(":")[0].lower()
    assert parsed.kind == "checkpoint" and parsed.path == str(shipped_checkpoint(SHIPPED_AGENTS[name]))
    assert (parsed.search_simulations, parsed.az_simulations, parsed.greedy) == (sims, az, greedy)
    assert parsed.text == spec[: len(name)].lower() + spec[len(name):]  # named as typed, not as the installed path


@pytest.mark.parametrize("spec, words", [("zero:", "ends with ':'"), ("ppo:foo", "unknown suffix 'foo'"),
                                          ("zero:az:x", "'zero:az:x'"), ("zero:mcts:0", "an integer in 1..1000000, got 0")])
def test_bad_suffixes_are_one_line_in_the_users_words(spec: str, words: str) -> None:
    with pytest.raises(AgentSpecError) as err:
        parse_agent_spec(spec)
    message = str(err.value)
    assert words in message and "\n" not in message
    assert str(shipped_checkpoint("")) not in message  # the installed path is not what the user typed


def test_shipped_agents_play_from_another_folder(tmp_path: Path) -> None:
    """The lookup does not depend on the working directory (the package carries the files)."""
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        state = ce.new_game(3)
        for spec in ("zero", "zero:az:4", "ppo"):
            agent = make_agent(spec)
            action = agent.act(state, np.random.default_rng(0))
            assert action in set(ce.legal_actions(state).tolist()) and agent.name == spec
    finally:
        os.chdir(here)
