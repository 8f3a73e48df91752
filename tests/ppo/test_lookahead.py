"""One-ply lookahead targets (training/ppo/lookahead.py) and their loss (`loss.kept_set_loss`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import symmetry
from colony_env.observation import OBS_CHANNELS, encode_observation
from colony_training.bench_zero import leaf_batch
from colony_training.model import MaskedCategorical, PolicyValueNet
from colony_training.ppo.lookahead import kept_slots
from colony_training.ppo.loss import kept_set_loss
from colony_training.ppo.shaping import mover_potential


def flat_value_net() -> PolicyValueNet:
    """A network whose value head answers 0 everywhere (the last layer zeroed)."""
    torch.manual_seed(0)
    net = PolicyValueNet(OBS_CHANNELS, 4, 1, False, True)
    with torch.no_grad():
        net.value_out.weight.zero_()
        net.value_out.bias.zero_()
    return net


def inputs(states: list[ce.GameState]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(packed board-frame states, canonical legal ids padded, counts) of `states` (`bench_zero.leaf_batch`)."""
    packed, _obs, ids, counts = leaf_batch(states)
    return packed, ids.astype(np.int64), counts.astype(np.int64)


def positions_with_a_winning_move(wanted: int) -> list[tuple[ce.GameState, set[int]]]:
    """Positions of random games where some legal move ends the game won by the mover (R7.4), with those moves'
    canonical ids."""
    found = []
    for seed in range(400):
        state, rng = ce.new_game(seed), np.random.default_rng(seed)
        while not state.is_over and len(found) < wanted:
            legal = ce.legal_actions(state)
            wins = {int(a) for a in legal
                    if (c := ce.apply_action(state, int(a))).is_over and c.winner == state.to_move}
            if wins and len(wins) < len(legal):
                canon = symmetry.board_action_to_canonical(np.array(sorted(wins)), state.to_move)
                found.append((state, {int(a) for a in canon}))
                break
            state = ce.apply_action(state, int(legal[rng.integers(len(legal))]))
        if len(found) >= wanted:
            break
    return found


def test_a_move_that_wins_the_game_is_the_only_one_kept_and_quiet_positions_keep_every_move() -> None:
    found = positions_with_a_winning_move(3)
    assert len(found) == 3 and {int(s.to_move) for s, _ in found} <= {0, 1}
    net = flat_value_net()
    packed, ids, counts = inputs([s for s, _ in found])
    kept = kept_slots(net, packed, np.arange(len(found)), ids, counts, 0.0, 0.1, torch.device("cpu"))
    for i, (_state, wins) in enumerate(found):
        assert {int(ids[i, j]) for j in np.flatnonzero(kept[i])} == wins  # exact +1 beats every value of 0
        assert not kept[i, counts[i]:].any()
    opening = ce.new_game(5)  # nothing ends the game, every value is 0 and Phi is 0: every move is kept
    packed, ids, counts = inputs([opening])
    assert mover_potential(packed, 0.5)[0] == 0
    kept = kept_slots(net, packed, np.arange(1), ids, counts, 0.5, 0.0, torch.device("cpu"))
    assert kept[0, : counts[0]].all()


def test_kept_slots_read_the_head_as_head_plus_phi_for_the_mover() -> None:
    """With shaping the head learnt V - Phi; a child's value for the parent's mover is +-(head + Phi of the child's
    mover), and the margin keeps what is that close to the best."""
    state, rng = ce.new_game(2), np.random.default_rng(2)
    while True:  # a middle game where the children's Phi differ
        state = ce.apply_action(state, int(rng.choice(ce.legal_actions(state))))
        packed, ids, counts = inputs([state])
        children = [ce.apply_action(state, int(a)) for a in ce.legal_actions(state)]
        if not any(c.is_over for c in children):
            phi = mover_potential(np.stack([c._a for c in children]).astype(np.int32), 0.5)
            if len(set(np.round(phi, 6))) >= 3:
                break
    torch.manual_seed(1)
    net = PolicyValueNet(OBS_CHANNELS, 4, 1, False, True)
    with torch.no_grad():
        obs = np.stack([encode_observation(c, c.to_move) for c in children]).astype(np.float32)
        head = net.value(torch.from_numpy(obs)).double().numpy()
    sign = np.array([1.0 if c.to_move == state.to_move else -1.0 for c in children])
    values = sign * np.clip(head + phi, -1, 1)  # board order of ce.legal_actions
    canon = symmetry.board_action_to_canonical(ce.legal_actions(state), state.to_move)
    by_id = dict(zip(canon.tolist(), values))
    for margin in (0.0, 0.05, 0.2):
        kept = kept_slots(net, packed, np.arange(1), ids, counts, 0.5, margin, torch.device("cpu"))[0]
        want = np.array([by_id[int(a)] >= values.max() - margin - 1e-6 for a in ids[0, : counts[0]]])
        np.testing.assert_array_equal(kept[: counts[0]], want)


def test_kept_set_loss_is_minus_log_of_the_kept_probability_and_zero_without_a_target() -> None:
    torch.manual_seed(0)
    logits = torch.randn(3, 5, requires_grad=True)
    valid = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)
    kept = torch.tensor([[1, 0, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.bool)
    dist = MaskedCategorical(logits, valid)
    per_row = kept_set_loss(dist.log_probs, kept)
    probs, values = dist.probs.detach(), per_row.detach()
    assert float(values[0]) == pytest.approx(float(-torch.log(probs[0, 0] + probs[0, 2])), abs=1e-6)
    assert float(values[1]) == 0.0 and float(values[2]) == pytest.approx(0.0, abs=1e-6)  # no target; all legal kept
    per_row.sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[1].abs().max() == 0
    assert logits.grad[0, 1] > 0 and logits.grad[0, 0] < 0  # mass moves from the dropped move to the kept ones
