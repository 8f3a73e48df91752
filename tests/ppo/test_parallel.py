"""processes: 2 (training/ppo/parallel.py): the helper's half of each minibatch gives the update one process computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from colony_env.observation import OBS_CHANNELS
from colony_training.model import PolicyValueNet
from colony_training.ppo import parallel, train
from colony_training.ppo.config import load_config
from colony_training.ppo.loss import per_player_gae
from colony_training.ppo.opponents import OpponentPool
from tests.helpers import ROOT


@pytest.mark.parametrize(("lookahead", "ownership"), [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)])
def test_split_update_equals_one_process_update_and_rollouts_join(lookahead: float, ownership: float) -> None:
    cfg = load_config(ROOT / "configs" / "scratch_ppo.yaml", {
        "num_envs": 4, "channels": 4, "blocks": 1, "max_plies": 30 if ownership else 60, "update_epochs": 2,
        "num_minibatches": 2, "processes": 2, "target_kl": 0.0, "pool_share": 0.5,
        "lookahead_coef": lookahead, "lookahead_share": 0.5, "lookahead_margin": 0.0,
        "ownership_coef": ownership, "rollout_steps": 48 if ownership else 16})  # fmt: skip
    torch.manual_seed(0)
    model = PolicyValueNet(OBS_CHANNELS, 4, 1, False, True, ownership_head=ownership > 0)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    pool = OpponentPool(2)
    pool.add(model, 0)
    helper = parallel.Helper(cfg, model, seed=0, kit=train.HELPER_KIT)
    try:
        play = train.SelfPlay(cfg, model, torch.device("cpu"), seed=0, num_envs=helper.n_here)
        stats = train.GameStats()
        ro = parallel.collect(play, helper, pool, stats)
        assert ro.obs.shape[:2] == (cfg.rollout_steps, 4) and ro.bootstrap.shape == (4, 2)  # both halves, joined
        if ownership:  # targets where a game ended in the rollout, in both halves; none after a slot's last end
            assert ro.ownership.shape == (48, 4, 100) and ro.own_known[:, :2].any() and ro.own_known[:, 2:].any()
            assert not ro.own_known[-1].any() and not ro.ownership[~ro.own_known].any()  # (their content: test_ppo)
        else:
            assert ro.ownership is None and ro.own_known is None
        assert not ro.learner[:, 0].all() and not ro.learner[:, 2].all()  # each half plays its own pool game (env 0)
        if lookahead:  # targets at about half the learner's decisions of both halves, none at the pool's moves
            targeted = ro.kept.any(-1).numpy()
            assert not (targeted & ~ro.learner).any() and targeted[:, :2].any() and targeted[:, 2:].any()
            assert 0.25 < targeted.sum() / ro.learner.sum() < 0.75
            assert (ro.kept.sum(-1) <= ro.counts).all()
        else:
            assert ro.kept is None
        adv, ret = per_player_gae(ro.values + ro.phi, ro.movers, ro.dones, ro.rewards, ro.bootstrap, cfg.gamma,
                                  cfg.gae_lambda)
        results = []
        for h in (None, helper):
            model.load_state_dict(start)
            opt = torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-5)
            info, _ = train.ppo_update(cfg, model, opt, ro, adv, ret - ro.phi, torch.device("cpu"),
                                       np.random.default_rng(0), 0.0, h)
            results.append((info, {k: v.clone() for k, v in model.state_dict().items()}))
    finally:
        helper.close()
    (one, w_one), (two, w_two) = results
    assert not helper.proc.is_alive()
    assert abs(one.policy_loss - two.policy_loss) < 1e-5 and abs(one.approx_kl - two.approx_kl) < 1e-5
    assert (one.lookahead_ce > 0) == bool(lookahead) and (one.ownership_loss > 0) == bool(ownership)
    moved = max(float((w_one[k] - start[k]).abs().max()) for k in start)
    assert moved > 1e-3  # the update did something, and both ways did the same
    assert all(torch.allclose(w_one[k], w_two[k], atol=1e-5) for k in start)
