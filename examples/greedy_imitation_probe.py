"""How well can a policy network learn `greedy`'s own choices? A ceiling for "one CPU-hour against greedy".

    python examples/greedy_imitation_probe.py --shape 32x2 --games 1500 --minutes 12 --out DIR
    colony-eval checkpoint:DIR/imitation.pt greedy --games 200 --seed 9101 --workers 1

A diagnostic, not a trainer (it feeds the greedy heuristic to the network as labels, which a
from-scratch run may not): it plays `--games` games in which each move is `greedy`'s (one of its
best-scored moves, ties at random) or, with probability `--eps`, a uniformly random legal move,
labels every position with `greedy`'s best set (uniform over the tied best moves), and fits a fresh
network's policy to those labels with colony-zero's own fitting step (`zero.fit.fit`: the same
loss, batches, symmetry augmentation and optimiser) until `--minutes` of CPU time or `--steps`
steps are spent. Then the policy alone plays `greedy` (`--eval-games`, paired seeds from
`--eval-seed`) and the network is saved as `DIR/imitation.pt` for `colony-eval`.

Last, it says where the copy goes wrong: on the positions of `--check-games` other games of the same
kind, how often the policy's most likely move is in greedy's best set, by how much of the legal list
that set is (all of it: nothing to learn; most of it: greedy rules a few moves out; a few moves: one
move wins something), next to how often a uniformly random move would be; and, where the set is not
the whole list, how often the network's value after one of greedy's best moves is above its value
after one of the others (0.5: blind). `--check CHECKPOINT` runs that part alone on any saved network:

    python examples/greedy_imitation_probe.py --check DIR/imitation.pt --check-games 60

`--check-playouts N` adds the same ranking for the mean of N uniformly random playouts after each move (the
quick start's value target, `value_rollouts`); without `--check` or `--out` it runs alone:

    python examples/greedy_imitation_probe.py --check-playouts 16 --check-games 60

If even this supervised copy of `greedy` scores well under 0.5 against it, no self-play recipe
with the same network and budget can be expected to do better through its policy alone.
docs/zero.md ("One CPU-hour from scratch") has the runs of it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

import colony_env as ce
from colony_env.agents._search import rollout_mover_means
from colony_env.agents.greedy import TIE_TOLERANCE, GreedyAgent
from colony_env.constants import I_TO_MOVE, N_CELLS
from colony_env.frame import to_frame
from colony_env.observation import OBS_CHANNELS
from colony_training.agents import NetworkEvaluator, PolicyAgent, ValueReading
from colony_training.bench_zero import leaf_batch, parse_shape
from colony_training.checkpoint import CheckpointError, load_model, save_checkpoint
from colony_training.eval.evaluate import evaluate
from colony_training.model import PolicyValueNet
from colony_training.zero.config import ZeroConfig
from colony_training.zero.fit import fit
from colony_training.zero.selfplay import GameData

FIT_CHUNK = 200  # steps between progress lines


def greedy_labelled_positions(games: int, eps: float, max_plies: int, rng: np.random.Generator,
                              skip_ties: bool = False) -> GameData:
    """Positions of `games` games of greedy play (eps-random), each labelled with greedy's best set; with
    `skip_ties`, only those where that set is not every legal move (the others teach "be uniform")."""
    greedy = GreedyAgent()
    states, ids, probs, offsets = [], [], [], [0]
    for _ in range(games):
        state = ce.new_game(int(rng.integers(2**31)), max_plies=max_plies)
        while not state.is_over:
            legal, scores = greedy.scores(state)
            best = scores >= scores.max() - TIE_TOLERANCE
            if skip_ties and best.all():  # the same draws as below (any move is a tied best): the same games
                rng.random()
                state = ce.apply_action(state, int(legal[rng.integers(len(legal))]))
                continue
            packed = state.to_array()
            transposed = int(packed[I_TO_MOVE]) == 1  # blue sees the transposed board (canonical frame)
            states.append(packed)
            ids.append(np.array([to_frame(int(a), transposed) for a in legal], np.int16))
            probs.append((best / best.sum()).astype(np.float32))
            offsets.append(offsets[-1] + len(legal))
            if rng.random() < eps:
                action = int(legal[rng.integers(len(legal))])
            else:
                tied = np.flatnonzero(best)
                action = int(legal[tied[rng.integers(len(tied))]])
            state = ce.apply_action(state, action)
    n = len(states)
    zeros = np.zeros(n, np.float32)
    return GameData(states=np.stack(states).astype(np.int32), target_ids=np.concatenate(ids),
                    target_probs=np.concatenate(probs), offsets=np.array(offsets, np.int64), outcome=zeros,
                    root_value=zeros, game_lengths=np.zeros(1, np.int32), game_reasons=np.zeros(1, np.int8),
                    game_winners=np.zeros(1, np.int8), ownership=np.zeros((n, N_CELLS), np.int8),
                    rollout_value=zeros, full_search=np.ones(n, np.uint8))


CHECK_SEED = 12345  # the check's games: not the fitting's (--seed) nor the evaluation's
BEST_SET_BUCKETS = (("all legal moves", 1.0), ("over half of them", 0.5), ("10-50%", 0.1), ("10% or fewer", 0.0))


def bucket(share: float) -> str:
    """The BEST_SET_BUCKETS name of a best set that is this share of the legal moves."""
    return next(name for name, low in BEST_SET_BUCKETS if share > low or share == low == 1.0)


def check_positions(games: int, eps: float, max_plies: int) -> list[tuple[ce.GameState, np.ndarray, np.ndarray]]:
    """(position, its legal actions, greedy's best set as a mask over them) for the positions with more than one
    legal move of `games` greedy games (eps-random) from CHECK_SEED: the labels of `greedy_labelled_positions`,
    which list the legal actions in the engine's order."""
    data = greedy_labelled_positions(games, eps, max_plies, np.random.default_rng(CHECK_SEED))
    out = []
    for p, packed in enumerate(data.states):
        best = data.target_probs[data.offsets[p]:data.offsets[p + 1]] > 0
        if len(best) > 1:
            state = ce.GameState.from_array(packed)
            out.append((state, ce.legal_actions(state), best))
    return out


def best_set_agreement(agent: PolicyAgent, positions: list) -> list[tuple[str, int, float, float]]:
    """(bucket, positions, share where the policy's move is in greedy's best set, the same for a uniformly random
    move) over `check_positions`, bucketed by the best set's share of the legal moves (BEST_SET_BUCKETS). The
    policy plays as `colony-eval` plays it (most likely move, near-ties at random)."""
    rng = np.random.default_rng(CHECK_SEED + 1)
    counts = {name: [0, 0, 0.0] for name, _ in BEST_SET_BUCKETS}
    for state, legal, best in positions:
        row = counts[bucket(float(best.mean()))]
        row[0] += 1
        row[1] += int(best[np.flatnonzero(legal == agent.act(state, rng))[0]])
        row[2] += float(best.mean())
    return [(name, n, hit / n, uniform / n) for name, (n, hit, uniform) in counts.items() if n]


def mover_values(mover: int, children: list, value_of: Callable[[list], np.ndarray]) -> np.ndarray:
    """The values of the positions `children` for colour `mover`: a finished game scored exactly (R7.4), the others
    by `value_of` (a list of positions -> their values for each one's colour to move), with the sign turned where
    the other colour moves next (in grace the same colour may move again, R6.3)."""
    values = np.array([c.rewards()[mover] if c.is_over else 0.0 for c in children])
    ongoing = [i for i, c in enumerate(children) if not c.is_over]
    if ongoing:
        sign = np.array([1.0 if children[i].to_move == mover else -1.0 for i in ongoing])
        values[ongoing] = sign * np.asarray(value_of([children[i] for i in ongoing]), dtype=float)
    return values


def share_above(good: np.ndarray, bad: np.ndarray) -> float:
    """The share of pairs (one of `good`, one of `bad`) where the good value is above the bad one, ties half."""
    return float((good[:, None] > bad[None, :]).mean() + 0.5 * (good[:, None] == bad[None, :]).mean())


def value_ranking(model: PolicyValueNet, positions: list, reading: ValueReading = ValueReading()
                  ) -> list[tuple[str, int, float]]:
    """(bucket, positions, ranking) over the `check_positions` where greedy's best set is not every legal move:
    how often the network's value of the position after one of greedy's best moves is above its value after one
    of the others (a pair drawn at random; ties count half; 0.5 = the value cannot tell them apart), averaged over
    positions. Values are for the position's mover (`mover_values`), the head read by `reading` (its trainer's way)."""
    evaluator = NetworkEvaluator(model.eval(), trace=False, reading=reading)
    sums: dict[str, list[float]] = {}
    for state, legal, best in positions:
        if best.all():
            continue
        children = [ce.apply_action(state, int(a)) for a in legal]
        values = mover_values(int(state.to_move), children, lambda ongoing: evaluator(*leaf_batch(ongoing))[1])
        sums.setdefault(bucket(float(best.mean())), []).append(share_above(values[best], values[~best]))
    return [(name, len(sums[name]), float(np.mean(sums[name]))) for name, _ in BEST_SET_BUCKETS if name in sums]


def playout_ranking(positions: list, playouts: int) -> list[tuple[str, int, float]]:
    """`value_ranking` for the mean result of `playouts` uniformly random playouts (colony-zero's `value_rollouts`
    target) instead of a network's value, on one pair per position (a best move and another, drawn at random)."""
    rng = np.random.default_rng(CHECK_SEED + 2)

    def playout_means(ongoing: list) -> np.ndarray:
        return np.array([rollout_mover_means(c.to_array()[None], playouts, int(rng.integers(2**31)))[0]
                         for c in ongoing])

    sums: dict[str, list[float]] = {}
    for state, legal, best in positions:
        if best.all():
            continue
        pair = (rng.choice(np.flatnonzero(best)), rng.choice(np.flatnonzero(~best)))
        children = [ce.apply_action(state, int(legal[i])) for i in pair]
        values = mover_values(int(state.to_move), children, playout_means)
        sums.setdefault(bucket(float(best.mean())), []).append(share_above(values[:1], values[1:]))
    return [(name, len(sums[name]), float(np.mean(sums[name]))) for name, _ in BEST_SET_BUCKETS if name in sums]


def run_check(model: PolicyValueNet | None, games: int, eps: float, max_plies: int, playouts: int = 0,
              reading: ValueReading = ValueReading()) -> None:
    """Print `best_set_agreement` and `value_ranking` of a network (if any) and `playout_ranking` (if `playouts`)
    on the positions of `games` check games."""
    positions = check_positions(games, eps, max_plies)
    if model is not None:
        print(f"the policy's move in greedy's best set, positions of {games} other games, "
              "by the best set's share of the legal moves:")
        for name, n, hit, uniform in best_set_agreement(PolicyAgent(model, name="policy"), positions):
            print(f"  {name:18s} {n:6d} positions: {hit:.3f} (a uniformly random move: {uniform:.3f})", flush=True)
        print("the value after one of greedy's best moves above the value after one of the others (0.5: blind):")
        for name, n, ranking in value_ranking(model, positions, reading):
            print(f"  {name:18s} {n:6d} positions: {ranking:.3f}", flush=True)
    if playouts:
        print(f"the mean of {playouts} random playouts after one of greedy's best moves above it after one of the "
              "others:")
        for name, n, ranking in playout_ranking(positions, playouts):
            print(f"  {name:18s} {n:6d} positions: {ranking:.3f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="32x2", help="trunk CHANNELSxBLOCKS, e.g. 32x2, or 32x2g with global pooling (target features on, as colony-zero's)")
    ap.add_argument("--planes", type=int, default=OBS_CHANNELS,
                    help=f"observation planes the network reads, the first N of the encoder's {OBS_CHANNELS}")
    ap.add_argument("--games", type=int, default=1500, help="games of greedy play to label")
    ap.add_argument("--eps", type=float, default=0.3, help="share of random moves in those games")
    ap.add_argument("--max-plies", type=int, default=150, help="ply limit of those games (R6.2.4)")
    ap.add_argument("--minutes", type=float, default=12.0, help="CPU minutes of fitting (with --steps: whichever ends first)")
    ap.add_argument("--steps", type=int, default=0, help="fitting steps (0: no limit but --minutes)")
    ap.add_argument("--skip-ties", action="store_true",
                    help="fit only positions where greedy's best set is not every legal move")
    ap.add_argument("--learning-rate", type=float, default=2e-3)
    ap.add_argument("--eval-games", type=int, default=200, help="policy-alone games against greedy (even)")
    ap.add_argument("--eval-seed", type=int, default=9101)
    ap.add_argument("--seed", type=int, default=0, help="seed of the games, the batches and the weights")
    ap.add_argument("--out", type=Path, help="folder for imitation.pt (needed unless --check)")
    ap.add_argument("--check-games", type=int, default=60,
                    help="games whose positions the agreement check uses (0: none)")
    ap.add_argument("--check", type=Path, metavar="CHECKPOINT", help="only the agreement check, on this saved network")
    ap.add_argument("--check-playouts", type=int, default=0, metavar="N",
                    help="also rank greedy's best moves by the mean of N random playouts (alone without --check/--out)")
    args = ap.parse_args()
    checking = args.check or args.check_playouts
    if args.check_games < 0 or (checking and args.check_games < 1) or args.check_playouts < 0:
        ap.error("--check-games takes an integer >= 0 (>= 1 with --check or --check-playouts), --check-playouts >= 0")
    if args.check or (args.check_playouts and args.out is None):
        torch.set_num_threads(1)
        model, reading = None, ValueReading()
        if args.check:
            try:
                model, data = load_model(args.check)
            except (CheckpointError, OSError) as e:
                ap.error(f"--check {str(args.check)!r}: {e}")
            reading = ValueReading.of_checkpoint(data)  # a PPO head with shaping learns V - Phi
        run_check(model, args.check_games, args.eps, args.max_plies, args.check_playouts, reading)
        return
    if args.out is None:
        ap.error("--out is required (the folder for imitation.pt), unless --check or --check-playouts")
    try:
        channels, blocks, pool = parse_shape(args.shape)
    except ValueError as e:
        ap.error(str(e))
    if not 1 <= args.planes <= OBS_CHANNELS:
        ap.error(f"--planes takes an integer in [1, {OBS_CHANNELS}]")
    if args.games < 1 or args.max_plies < 1 or args.steps < 0 or not args.minutes > 0 or not 0.0 <= args.eps <= 1.0:
        ap.error("--games and --max-plies take integers >= 1, --steps >= 0, --minutes > 0, --eps a share in [0, 1]")
    if args.eval_games < 2 or args.eval_games % 2:
        ap.error("--eval-games takes an even number >= 2 (each setup is played with both colours)")
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.process_time()
    data = greedy_labelled_positions(args.games, args.eps, args.max_plies, rng, args.skip_ties)
    print(f"{data.n_positions} labelled positions from {args.games} games in {time.process_time() - t0:.0f} CPU s", flush=True)
    model = PolicyValueNet(args.planes, channels, blocks, target_features=True, global_pool=pool)
    cfg = ZeroConfig(batch_size=256, learning_rate=args.learning_rate, value_loss_coef=0.0)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    t1, steps = time.process_time(), 0
    while time.process_time() - t1 < args.minutes * 60 and (not args.steps or steps < args.steps):
        chunk = FIT_CHUNK if not args.steps else min(FIT_CHUNK, args.steps - steps)
        losses = fit(model, opt, data, chunk, cfg, rng, torch.device("cpu"))
        steps += chunk
        print(f"step {steps} ({steps * cfg.batch_size / data.n_positions:.1f} epochs, {time.process_time() - t1:.0f} CPU s): "
              f"policy loss {losses['policy_loss']:.3f}, target entropy {losses['target_entropy']:.3f}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = save_checkpoint(args.out / "imitation.pt", model, cfg.to_dict(),
                           {"probe": "greedy_imitation", "shape": args.shape, "games": args.games, "steps": steps})
    pair = evaluate([PolicyAgent(model.eval(), name=f"imitation {args.shape}"), "greedy"], games=args.eval_games,
                    seed=args.eval_seed, workers=1, schedule="gauntlet", progress=False).pairs[0]
    print(f"imitation {args.shape} ({steps} steps) against greedy: {pair.wins} / {pair.draws} / {pair.losses}, "
          f"score {pair.score:.3f}; wrote {path}", flush=True)
    if args.check_games:
        run_check(model, args.check_games, args.eps, args.max_plies, args.check_playouts)


if __name__ == "__main__":
    main()
