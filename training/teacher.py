"""Kickstarting (Schmitt et al. 2018, "Kickstarting Deep Reinforcement Learning") from the greedy agent.

Early in training the learner is nearly uniform over ~70 legal actions and Colony pays only
at the end, so self-play alone spends a long time finding out that connecting with
high-value satellites wins colonies. Kickstarting adds an auxiliary cross-entropy towards a
teacher's choice to the PPO loss, with a weight that decays to zero, so the learner starts
from the teacher's competence and then improves past it by self-play alone.

The teacher is `colony_env.agents.GreedyAgent`'s heuristic (one ply plus the opponent's
strongest reply, compiled); its targets are the *set* of its best-scoring actions (ties, e.g.
all quiet opening moves, share the target mass equally).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from colony_env import _core
from colony_env.agents._search import greedy_scores

TIE_TOLERANCE = 1e-9  # the heuristic's scores are sums of a few multiples of 0.5


@njit(cache=True)
def greedy_best_slots(states: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
    """bool[N, width]: for each game in `rows`, which slots of its legal-id list the greedy agent ranks best.

    Slot j is the j-th legal id in increasing board-frame order, which is the order of the
    vector env's `legal_ids` (blue's canonical ids are the images of that same order).
    """
    out = np.zeros((states.shape[0], width), np.bool_)
    for r in range(rows.shape[0]):
        i = rows[r]
        a = states[i]
        ids = _core.legal_ids(a)
        scores = greedy_scores(a, ids)
        best = scores.max()
        for j in range(ids.shape[0]):
            if scores[j] >= best - TIE_TOLERANCE:
                out[i, j] = True
    return out


def teacher_weight(coef: float, global_step: int, decay_steps: int) -> float:
    """The kickstarting loss weight: `coef` decaying linearly to 0 at `decay_steps`."""
    if coef <= 0.0 or decay_steps <= 0:
        return 0.0
    return coef * max(0.0, 1.0 - global_step / decay_steps)


# --- the heuristic as an input feature of the policy ------------------------------------------
SCORE_CLIP = 50.0  # game-ending moves score +-1000; clip so one feature cannot swamp the logits
SCORE_SCALE = 0.3  # one controlled colony (10 points) -> 3 nats of logit: the prior is near-greedy at first


@njit(cache=True)
def greedy_action_features(states: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
    """float32[N, width]: the greedy heuristic's score of each legal slot, clipped and scaled.

    With `ModelConfig.heuristic_prior` the policy adds `w * feature` to its logits (w learned),
    so an untrained network already plays like a softened greedy agent and training learns
    corrections on top of it. Slots follow the vector env's `legal_ids` order (see above).
    """
    out = np.zeros((states.shape[0], width), np.float32)
    for r in range(rows.shape[0]):
        i = rows[r]
        a = states[i]
        ids = _core.legal_ids(a)
        scores = greedy_scores(a, ids)
        for j in range(ids.shape[0]):
            out[i, j] = min(SCORE_CLIP, max(-SCORE_CLIP, scores[j])) * SCORE_SCALE
    return out
