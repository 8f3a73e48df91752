"""Colony with Stable-Baselines3: sb3-contrib's MaskablePPO against the random opponent, then a masked evaluation.

    pip install -e ".[sb3]"
    python examples/sb3_maskable_ppo.py --steps 20000 --eval-games 20

`colony_env.wrappers.ColonySingleAgentEnv` is a plain Gymnasium env: the learner plays one
colour (drawn per game) against an opponent policy, sees its canonical view as
`Box(0, 1, (30, 10, 10))`, acts in `Discrete(16001)` and exposes `action_masks()`, the
method MaskablePPO looks for, so no `ActionMasker` glue is needed.

**Masks and large action spaces.** Masked PPO on a large discrete space has a history of
NaN / "invalid values" crashes (sb3-contrib issues #81 and #247). Their causes, and why this
setup does not hit them (the test suite checks it):

1. A stale cached `probs` tensor after re-masking failed torch's `Simplex()` check once the
   float32 sum over ~1,000+ categories drifted past 1e-6 (sb3-contrib #322, with torch >= 2.9).
   sb3-contrib 2.9 drops the cache before re-initialising; the `sb3` extra requires it.
2. Masked logits of -1e8 in half precision become -inf, and `0 * -inf` is NaN in the
   entropy. SB3 runs the policy in float32 here and the observation is float32.
3. An all-False mask makes the masked distribution uniform over *illegal* actions. The
   wrapper's mask is never empty when the learner is to move (passing is legal exactly
   when nothing else is, R4.3); it is empty only after the episode has ended, when SB3
   has already reset the env. `check_mask` below asserts this for every decision.

So no reduced or reshaped action space is needed: the full R8 layout with masks trains
without NaNs (`tests/integrations/test_integrations_sb3.py` learns a few thousand steps and checks
parameters, losses and every masked prediction).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from colony_env.wrappers import ColonySingleAgentEnv  # noqa: E402


def make_env(max_plies: int = 400, opponent=None) -> ColonySingleAgentEnv:
    """The learner against `opponent` (default: the random agent), colour drawn per game."""
    return ColonySingleAgentEnv(opponent=opponent, learner_colour="random", max_plies=max_plies)


def check_mask(mask: np.ndarray) -> np.ndarray:
    """A mask MaskablePPO can use safely: bool, the full action space, at least one legal action."""
    mask = np.asarray(mask, bool)
    if mask.ndim != 1 or not mask.any():
        raise ValueError(f"unusable action mask: shape {mask.shape}, {int(mask.sum())} legal actions")
    return mask


def train(steps: int, max_plies: int = 400, seed: int = 0, n_steps: int = 512, batch_size: int = 128,
          n_epochs: int = 4, learning_rate: float = 3e-4, verbose: int = 0) -> MaskablePPO:
    """MaskablePPO with SB3's default MLP policy, `steps` learner decisions against random."""
    model = MaskablePPO(
        "MlpPolicy", make_env(max_plies), n_steps=n_steps, batch_size=batch_size, n_epochs=n_epochs,
        learning_rate=learning_rate, gamma=0.99, ent_coef=0.01, seed=seed, device="cpu", verbose=verbose,
    )  # fmt: skip
    model.learn(total_timesteps=steps)
    return model


def evaluate(model: MaskablePPO, games: int, max_plies: int = 400, seed: int = 1) -> dict[str, float]:
    """Greedy masked play against random: win/draw/loss rates, plus how often the greedy choice
    *without* the mask would have been illegal (why the mask matters)."""
    env = make_env(max_plies)
    wins = draws = losses = decisions = unmasked_illegal = 0
    for g in range(games):
        obs, _ = env.reset(seed=seed + g)
        done = False
        reward = 0.0
        while not done:
            mask = check_mask(env.action_masks())
            action, _ = model.predict(obs, action_masks=mask, deterministic=True)
            raw, _ = model.predict(obs, deterministic=True)
            decisions += 1
            unmasked_illegal += int(not mask[int(raw)])
            if not mask[int(action)]:
                raise AssertionError(f"masked prediction {int(action)} is illegal")
            obs, reward, terminated, truncated, _ = env.step(int(action))
            done = terminated or truncated
        wins += reward > 0
        draws += reward == 0
        losses += reward < 0
    return {
        "games": games, "win_rate": wins / games, "draw_rate": draws / games, "loss_rate": losses / games,
        "decisions": decisions, "unmasked_illegal_rate": unmasked_illegal / max(1, decisions),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20_000, help="learner decisions to train for (default 20000)")
    p.add_argument("--n-steps", type=int, default=512, help="rollout length per PPO update")
    p.add_argument("--eval-games", type=int, default=20, help="greedy games against random afterwards")
    p.add_argument("--max-plies", type=int, default=400, help="ply limit per game (R6.2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", help="write the trained model here (SB3 zip)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.n_steps < 2 or args.eval_games < 0 or args.max_plies < 2:
        p.error("need --steps >= 1, --n-steps >= 2, --eval-games >= 0, --max-plies >= 2")
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model = train(args.steps, args.max_plies, args.seed, n_steps=args.n_steps, batch_size=min(128, args.n_steps))
    print(f"trained {model.num_timesteps} steps in {time.perf_counter() - t0:.1f} s")
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    if args.eval_games:
        r = evaluate(model, args.eval_games, args.max_plies, seed=args.seed + 1)
        print(f"vs random over {r['games']} games: win {r['win_rate']:.2f} draw {r['draw_rate']:.2f} "
              f"loss {r['loss_rate']:.2f}; {r['decisions']} masked decisions, all legal; "
              f"without the mask {r['unmasked_illegal_rate']:.0%} of greedy choices would be illegal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
