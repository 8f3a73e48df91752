"""Heuristic prior and kickstarting targets: slot order, agreement with the greedy agent, plumbing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import observation
from colony_env.agents.greedy import GreedyAgent
from colony_env.vector import ColonyVectorEnv
from colony_training.agents import load_policy_agent
from colony_training.checkpoint import save_checkpoint
from colony_training.model import PolicyValueNet
from colony_training.ppo.shaping import mover_potential
from colony_training.teacher import SCORE_CLIP, SCORE_SCALE, greedy_action_features, greedy_best_slots, teacher_weight


def _positions(n_steps: int = 120):
    env = ColonyVectorEnv(4, seed=3)
    vo = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(n_steps):
        vo, *_ = env.step(env.random_actions(rng))
    return env, vo


def test_features_follow_vector_env_slots_and_greedy_scores() -> None:
    env, vo = _positions()
    rows = np.arange(4)
    width = vo.legal_ids.shape[1]
    feats = greedy_action_features(np.ascontiguousarray(env.states), rows, width)
    best = greedy_best_slots(np.ascontiguousarray(env.states), rows, width)
    greedy = GreedyAgent()
    for i in range(4):
        s = env.state(i)
        legal, scores = greedy.scores(s)
        n = vo.legal_counts[i]
        assert n == len(legal)
        np.testing.assert_allclose(feats[i, :n], np.clip(scores, -SCORE_CLIP, SCORE_CLIP) * SCORE_SCALE, rtol=1e-5)
        assert not feats[i, n:].any() and not best[i, n:].any()
        assert list(np.flatnonzero(best[i, :n])) == list(np.flatnonzero(scores >= scores.max() - 1e-9))


def test_teacher_weight_decays_linearly() -> None:
    assert teacher_weight(1.0, 0, 100) == 1.0
    assert teacher_weight(1.0, 50, 100) == pytest.approx(0.5)
    assert teacher_weight(1.0, 150, 100) == 0.0
    assert teacher_weight(0.0, 0, 100) == 0.0


def test_prior_network_needs_features_and_agent_supplies_them(tmp_path: Path) -> None:
    net = PolicyValueNet(observation.OBS_CHANNELS, channels=4, blocks=1, heuristic_prior=True)
    obs = torch.zeros(1, observation.OBS_CHANNELS, 10, 10)
    with pytest.raises(ValueError, match="action_features"):
        net(obs, torch.zeros(1, 3, dtype=torch.long))
    path = save_checkpoint(tmp_path / "p.pt", net, {}, {})
    agent = load_policy_agent(path, greedy=True)
    rng = np.random.default_rng(0)
    s = ce.new_game(4)
    for _ in range(80):
        if s.is_over:
            break
        a = agent.act(s, rng)
        assert ce.is_legal(s, a)
        # An untrained prior network picks one of the greedy agent's best actions (its logits are ~0).
        legal, scores = GreedyAgent().scores(s)
        capped = np.clip(scores, -SCORE_CLIP, SCORE_CLIP)
        assert capped[list(legal).index(a)] >= capped.max() - 0.5
        s = ce.apply_action(s, a)


def test_potential_is_zero_sum_and_bounded() -> None:
    env, _ = _positions(200)
    states = np.ascontiguousarray(env.states)
    phi = mover_potential(states, 0.5)
    assert np.all(np.abs(phi) <= 0.5)
    swapped = states.copy()
    from colony_env.constants import I_TO_MOVE

    swapped[:, I_TO_MOVE] = 1 - swapped[:, I_TO_MOVE]
    np.testing.assert_allclose(mover_potential(swapped, 0.5), -phi)
    assert not mover_potential(states, 0.0).any()
