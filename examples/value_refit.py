"""Refit only a colony-zero network's value head to the positions of recorded games.

    python examples/value_refit.py checkpoints/colony_zero.pt --records RUN_A/games.jsonl RUN_B/games.jsonl \
        --held-out RUN_C/games.jsonl --anchor checkpoints/resume/zero-pcr-int8.pt --epochs 5 --out DIR

A network trained by self-play judges the positions of its own games well and others' less well
(docs/zero.md, "Why the network misjudges late positions"). This fits the value head (its
convolution and two linear layers) to the positions of `colony-eval` game records, e.g. games
against `mcts:1000`, with the stem, the trunk and the policy head frozen: the policy stays exactly
the start's, so what a search of the result gains or loses comes from the values alone.

Each position of `--records` with a choice (more than one legal action) gets the value target of
`configs/zero_pcr.yaml`: `1 - --mix` times the game's result for its mover and `--mix` times the
mean of `--playouts` uniformly random playouts from it (seeded by the position). `--anchor` adds a
colony-zero resume point's replay sample (its run's own self-play positions, their stored targets
mixed the same way), so that the head keeps fitting the positions its search reaches. After every
epoch the network is written to `DIR/epoch_K.pt`, and the table of `--held-out` records' positions
(every third, each judged against its game's result) is printed: mean squared error and how often
the sign is right, by connected satellites, and below it the mean value and result of those positions
by the agent to move (up to 16 connected): in games where one colour is always the same agent a head
can gain by rating that agent's positions apart from what is on the board. `DIR/best.pt` is the epoch
with the lowest held-out error over all phases; pick it on records that play no part in the evaluation
that follows. docs/zero.md ("The candidate's search, and the value head refitted to games against
`mcts:1000`") has one run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

import colony_env as ce
from colony_env.agents._search import position_seeds, rollout_mover_means_seeded
from colony_env.observation import OBS_SHAPE

PHASES = ((0, 10), (11, 16), (17, 19), (20, 21), (22, 23))  # connected satellites, both colours (inclusive)
VALUE_PARTS = ("value_conv", "value_fc", "value_out")  # the value head's parameters (training/model.py)
SEED_SALT = 7  # playout seeds: position_seeds(states, SEED_SALT)


def record_positions(paths: list[str], every: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(packed states int32[P, L], the game's result for each mover float32[P], connected satellites int[P], the
    mover's agent as the record names it str[P]) at every `every`-th ply of the records where the mover has a choice."""
    from colony_training.eval.records import RecordError, replayed_games

    states, results, connected, movers = [], [], [], []
    try:
        for rec, replay in replayed_games(paths):
            for ply, s in enumerate(replay[:-1]):
                if ply % every or len(ce.legal_actions(s)) < 2:
                    continue
                mover = ("red", "blue")[int(s.to_move)]
                results.append(0.0 if rec.result not in ("red", "blue") else (1.0 if rec.result == mover else -1.0))
                states.append(s.to_array())
                connected.append(sum(ce.connected_counts(s)))
                movers.append(rec.agents[mover])
    except RecordError as e:
        raise SystemExit(f"value_refit: {e}") from None
    if not states:
        raise SystemExit(f"value_refit: no position with a choice in {' '.join(paths)}")
    return (np.stack(states).astype(np.int32), np.asarray(results, np.float32), np.asarray(connected),
            np.asarray(movers))


def observations(states: np.ndarray) -> np.ndarray:
    """The canonical planes of each packed state for its mover (as the network reads them)."""
    from colony_training.zero.replay import encode_batch

    out = np.empty((len(states), *OBS_SHAPE), np.float32)
    encode_batch(np.ascontiguousarray(states), out)
    return out


def head_values(model, obs: np.ndarray, batch: int = 512) -> np.ndarray:
    """tanh of the value head (colony-zero's reading) for each row of planes."""
    with torch.no_grad():
        return np.concatenate([torch.tanh(model.value(torch.from_numpy(obs[i:i + batch]))).numpy()
                               for i in range(0, len(obs), batch)])


def phase_table(values: np.ndarray, results: np.ndarray, connected: np.ndarray) -> list[tuple[str, int, float, float]]:
    """(phase, positions, MSE against the results, share with the result's sign) for every phase present."""
    rows = []
    for lo, hi in PHASES:
        m = (connected >= lo) & (connected <= hi)
        if m.any():
            rows.append((f"{lo}-{hi}", int(m.sum()), float(np.mean((values[m] - results[m]) ** 2)),
                         float(np.mean(np.sign(values[m]) == results[m]))))
    return rows


def by_mover(values: np.ndarray, results: np.ndarray, connected: np.ndarray, movers: np.ndarray,
             up_to: int = 16) -> list[tuple[str, int, float, float]]:
    """(mover's agent, positions, mean value, mean result) over the positions with at most `up_to` connected
    satellites: whether a head rates one agent's positions apart from the positions themselves."""
    rows = []
    for name in sorted(set(movers.tolist())):
        m = (movers == name) & (connected <= up_to)
        if m.any():
            rows.append((str(name), int(m.sum()), float(values[m].mean()), float(results[m].mean())))
    return rows


def freeze_all_but_value_head(model) -> list[torch.nn.Parameter]:
    """Stop gradients everywhere but the value head; its parameters."""
    params = []
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith(VALUE_PARTS))
        if p.requires_grad:
            params.append(p)
    return params


def fit_epoch(model, opt: torch.optim.Optimizer, states: np.ndarray, targets: np.ndarray, batch: int,
              rng: np.random.Generator) -> float:
    """One pass's worth of minibatches (drawn with replacement), each position in a random board symmetry;
    the mean squared error of tanh(head) against the targets."""
    from colony_training.augment import AUG_SYMS, augment_planes

    model.train()
    total, steps = 0.0, max(1, len(states) // batch)
    for _ in range(steps):
        idx = rng.integers(len(states), size=batch)
        obs = augment_planes(observations(states[idx]), rng.choice(AUG_SYMS, size=batch))
        loss = ((torch.tanh(model.value(torch.from_numpy(obs))) - torch.from_numpy(targets[idx])) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += float(loss.detach())
    model.eval()
    return total / steps


def _print_table(tag: str, values: np.ndarray, results: np.ndarray, connected: np.ndarray, movers: np.ndarray) -> float:
    """One line of the held-out table and one of the means by mover; the MSE over all held-out positions."""
    mse = float(np.mean((values - results) ** 2))
    rows = phase_table(values, results, connected)
    print(f"{tag:<22} all {mse:.3f} | " + " | ".join(f"{p}: {m:.3f} / {s:.3f}" for p, _, m, s in rows), flush=True)
    print(f"{'':<22} up to 16 connected, mean value / result by mover: " + " | ".join(
        f"{name} ({n}): {v:+.3f} / {z:+.3f}" for name, n, v, z in by_mover(values, results, connected, movers)))
    return mse


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="value_refit", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="a colony-zero checkpoint (value head read as tanh)")
    ap.add_argument("--records", nargs="+", required=True, help="colony-eval games.jsonl files to fit")
    ap.add_argument("--held-out", nargs="+", required=True, help="games.jsonl files to judge each epoch on")
    ap.add_argument("--anchor", help="a colony-zero resume point whose replay sample is fitted beside the records")
    ap.add_argument("--mix", type=float, default=0.5, help="share of the playouts' mean in the target (0..1)")
    ap.add_argument("--playouts", type=int, default=16, help="random playouts per record position (>= 1)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--out", required=True, help="a new or empty folder for the networks")
    args = ap.parse_args(argv)
    for name, ok, allowed in (("--mix", 0.0 <= args.mix <= 1.0, "a number in [0, 1]"),
                              ("--playouts", args.playouts >= 1, "a whole number >= 1"),
                              ("--epochs", args.epochs >= 1, "a whole number >= 1"),
                              ("--lr", args.lr > 0, "a number > 0"),
                              ("--batch", args.batch >= 1, "a whole number >= 1"),
                              ("--threads", args.threads >= 1, "a whole number >= 1")):
        if not ok:
            raise SystemExit(f"value_refit: {name} {getattr(args, name[2:].replace('-', '_'))!r} is out of range: "
                             f"{allowed}")
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SystemExit(f"value_refit: --out {str(out)!r} exists and is not an empty folder; give a new one")
    return run(args, out)


def run(args: argparse.Namespace, out: Path) -> int:
    from colony_training.checkpoint import CheckpointError, load_model, save_checkpoint

    torch.set_num_threads(args.threads)
    try:
        model, data = load_model(args.checkpoint)
    except (CheckpointError, OSError) as e:
        raise SystemExit(f"value_refit: {e}") from None
    if (data.get("meta") or {}).get("value_head") != "tanh":
        raise SystemExit(f"value_refit: {args.checkpoint} is not a colony-zero network (its value head is not read "
                         f"as tanh); give a colony-zero checkpoint")
    model.eval()
    t0 = time.time()
    states, results, _, _ = record_positions(args.records)
    playouts = rollout_mover_means_seeded(states, args.playouts, position_seeds(states, SEED_SALT)).astype(np.float32)
    targets = (1.0 - args.mix) * results + args.mix * playouts
    anchor = 0
    if args.anchor:
        from colony_training.zero.resume_point import ResumePointError, replay_sample_of

        try:
            sample = replay_sample_of(args.anchor)
        except (ResumePointError, OSError) as e:
            raise SystemExit(f"value_refit: {e}") from None
        anchor = sample.n_positions
        states = np.concatenate([states, sample.states.astype(np.int32)])
        targets = np.concatenate([targets, (1.0 - args.mix) * sample.outcome + args.mix * sample.rollout_value])
    h_states, h_results, h_connected, h_movers = record_positions(args.held_out, every=3)
    h_obs = observations(h_states)
    print(f"fitting {len(states) - anchor} record positions + {anchor} of the anchor's sample; held out "
          f"{len(h_states)} positions ({time.time() - t0:.0f} s to prepare)", flush=True)
    print("held-out positions, by connected satellites: MSE against the results / sign right", flush=True)
    v = head_values(model, h_obs)
    best = (_print_table("start", v, h_results, h_connected, h_movers), -1)
    params = freeze_all_but_value_head(model)
    opt = torch.optim.Adam(params, lr=args.lr, weight_decay=1e-4)
    rng = np.random.default_rng(args.seed)
    out.mkdir(parents=True, exist_ok=True)
    meta = dict(data.get("meta") or {})
    for epoch in range(args.epochs):
        loss = fit_epoch(model, opt, states, targets.astype(np.float32), args.batch, rng)
        v = head_values(model, h_obs)
        mse = _print_table(f"epoch {epoch} (fit {loss:.3f})", v, h_results, h_connected, h_movers)
        meta["value_refit"] = {"start": str(args.checkpoint), "records": list(args.records), "anchor": args.anchor,
                               "mix": args.mix, "playouts": args.playouts, "epoch": epoch, "held_out_mse": mse}
        save_checkpoint(out / f"epoch_{epoch}.pt", model, data.get("config") or {}, meta)
        best = min(best, (mse, epoch))
    if best[1] < 0:
        print("no epoch judged the held-out positions better than the start; no best.pt written")
        return 0
    shutil.copyfile(out / f"epoch_{best[1]}.pt", out / "best.pt")
    print(f"best: epoch {best[1]} (held-out MSE {best[0]:.3f}) -> {out / 'best.pt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
