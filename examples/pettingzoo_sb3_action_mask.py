"""PettingZoo's SB3 action-masking tutorial (connect four) on Colony: only the constructor changes.

    pip install -e ".[sb3]"
    python examples/pettingzoo_sb3_action_mask.py --steps 20480 --games 100

The tutorial ("SB3: Action Masked PPO for Connect Four" in PettingZoo's docs) wraps an AEC
env so that sb3-contrib's MaskablePPO can train one policy that plays every seat, then
scores it against random play. Below is the same program, structure and names kept; where
it calls `connect_four_v3.env(**env_kwargs)` it calls

    pettingzoo.make("aec", "colony_env/colony-v0", **env_kwargs)

instead, and nothing else is Colony-specific. `canonical=True` in `env_kwargs` gives each
agent its own view (player_1 mirrored, as chess_v6 does), which is what a policy shared by
both seats needs. The wrapper subclasses `gymnasium.Env` as well as PettingZoo's
`BaseWrapper`, as PettingZoo's current tutorial does: Gymnasium 1.x wrappers (sb3-contrib's
`ActionMasker`) accept only a `gymnasium.Env`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import gymnasium
import pettingzoo
import pettingzoo.utils
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.wrappers import ActionMasker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import colony_env  # noqa: E402,F401  (registers colony_env/colony-v0 with PettingZoo)
from colony_env.env import END_REASON_NAMES  # noqa: E402  (infos hold codes: names of the end reasons)

ENV_ID = "colony_env/colony-v0"


def make_env(**env_kwargs: Any) -> pettingzoo.AECEnv:
    """The one line that differs from the tutorial (`connect_four_v3.env(**env_kwargs)`)."""
    return pettingzoo.make("aec", ENV_ID, **env_kwargs)


class SB3ActionMaskWrapper(pettingzoo.utils.BaseWrapper, gymnasium.Env):
    """The AEC env as a single-agent Gymnasium env for whichever agent is to move."""

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed, options)
        # Every agent has the same spaces, so SB3 gets those of the first one (without the mask).
        self.observation_space = super().observation_space(self.possible_agents[0])["observation"]
        self.action_space = super().action_space(self.possible_agents[0])
        return self.observe(self.agent_selection), {}

    def step(self, action: int):
        """The observation is the next mover's; reward, termination and info are the mover's."""
        current_agent = self.agent_selection
        super().step(action)
        next_agent = self.agent_selection
        return (
            self.observe(next_agent),
            self._cumulative_rewards[current_agent],
            self.terminations[current_agent],
            self.truncations[current_agent],
            self.infos[current_agent],
        )

    def observe(self, agent: str):
        return super().observe(agent)["observation"]

    def action_mask(self):
        return super().observe(self.agent_selection)["action_mask"]


def mask_fn(env: SB3ActionMaskWrapper):
    return env.action_mask()


def train_action_mask(steps: int = 10_000, seed: int = 0, n_steps: int = 2048, **env_kwargs: Any) -> MaskablePPO:
    """One MaskablePPO policy trained on both seats' decisions (`n_steps`: SB3's rollout length)."""
    env = SB3ActionMaskWrapper(make_env(**env_kwargs))
    env.reset(seed=seed)  # defines the spaces
    env = ActionMasker(env, mask_fn)
    model = MaskablePPO(MaskableActorCriticPolicy, env, n_steps=n_steps, batch_size=min(64, n_steps), seed=seed, verbose=0)
    model.learn(total_timesteps=steps)
    env.close()
    return model


def eval_action_mask(model: MaskablePPO, num_games: int = 100, **env_kwargs: Any) -> dict[str, Any]:
    """The trained policy as player_1 against uniform random play as player_0, as the tutorial scores it."""
    env = make_env(**env_kwargs)
    scores = dict.fromkeys(env.possible_agents, 0)
    total_rewards = dict.fromkeys(env.possible_agents, 0.0)
    illegal = 0  # games ended by an illegal action (the wrapped env's rule); the masks keep this 0
    for i in range(num_games):
        env.reset(seed=i)
        env.action_space(env.possible_agents[0]).seed(i)
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            observation, action_mask = obs.values()
            if termination or truncation:
                if env.rewards[env.possible_agents[0]] != env.rewards[env.possible_agents[1]]:
                    winner = max(env.rewards, key=env.rewards.get)
                    scores[winner] += 1
                for a in env.possible_agents:
                    total_rewards[a] += env.rewards[a]
                illegal += END_REASON_NAMES[info["end_reason"]] == "illegal_action"
                break
            if agent == env.possible_agents[0]:
                act = env.action_space(agent).sample(action_mask)
            else:
                act = int(model.predict(observation, action_masks=action_mask, deterministic=True)[0])
            env.step(act)
    env.close()
    decided = sum(scores.values())
    winrate = scores[env.possible_agents[1]] / decided if decided else 0.0
    return {"scores": scores, "total_rewards": total_rewards, "winrate": winrate, "games": num_games, "illegal": illegal}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_480, help="training steps (both seats' decisions)")
    parser.add_argument("--games", type=int, default=100, help="evaluation games against random play")
    parser.add_argument("--max-plies", type=int, default=400, help="the ply limit of each game")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    env_kwargs = {"canonical": True, "max_plies": args.max_plies}
    model = train_action_mask(steps=args.steps, seed=args.seed, **env_kwargs)
    result = eval_action_mask(model, num_games=args.games, **env_kwargs)
    print(f"winrate of the trained policy as player_1: {result['winrate']:.2f}; scores {result['scores']}")
    return result


if __name__ == "__main__":
    main()
