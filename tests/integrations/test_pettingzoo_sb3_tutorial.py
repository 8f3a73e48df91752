"""PettingZoo's SB3 action-masking tutorial runs on Colony with `pettingzoo.make(...)` as its only change."""

from __future__ import annotations

import inspect

import torch

from helpers import load_example


def test_tutorial_trains_and_plays_legal_games() -> None:
    example = load_example("pettingzoo_sb3_action_mask.py")
    assert 'pettingzoo.make("aec", ENV_ID' in inspect.getsource(example.make_env)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = example.train_action_mask(steps=128, seed=0, n_steps=64, canonical=True, max_plies=30)
        result = example.eval_action_mask(model, num_games=2, canonical=True, max_plies=30)
    finally:
        torch.set_num_threads(threads)
    assert result["games"] == 2 and result["illegal"] == 0
    assert sum(result["total_rewards"].values()) == 0.0  # zero-sum (R7.4)
