"""`colony-distill`: expert iteration, one round: the search teaches the policy that steers it.

A trained policy steering a compiled search (`checkpoint:PATH:mcts:N`, see
`agents.load_search_agent`) plays better than the policy alone, and the search's
visit distribution at the root is a better policy than the network's own output. Expert
iteration (Anthony, Tian & Barber, "Thinking Fast and Slow with Deep Learning and Tree
Search", NeurIPS 2017; AlphaZero's policy target) turns that gap into training data:

1. **Generate.** The search agent plays `games` games from seeded random setups, a
   `greedy_share` of them against the greedy agent and the rest against itself. Every
   position where the search chose a move is stored as the packed engine state with the
   search's target over its legal actions (in increasing id order): the root's visit
   counts for `expert: mcts`, the improved policy of the Gumbel root for `expert: az`
   (`checkpoint:PATH:az:N:m=M`, the network's own priors and values at every node; its
   `shard_games` games are searched side by side, one network call per simulation step). Games are written
   in shards of `shard_games`, so an interrupted run keeps what it generated and
   `--resume` continues with the next shard (game seeds are fixed, so a resumed run
   produces the same data as an uninterrupted one).
2. **Fit.** Starting from the same weights, minimise the cross-entropy between the policy
   over the legal actions and the normalised targets, with symmetry augmentation;
   a held-out tenth of the games picks the best epoch (for `az`, shown in random board
   symmetries: its target holds the network's own identity-frame logits, which the
   untouched weights would match by construction). Only the policy is fitted: the
   value head gets no loss (the trunk it reads moves with the policy's fit).
3. **Write** `distilled.pt`, a checkpoint in the usual format (same architecture and
   config as the input, `meta["distill"]` saying how it was made), loadable everywhere a
   checkpoint is.

    colony-distill --init checkpoints/colony_ppo.pt --games 2400 --out runs/distill
    colony-distill --config distill_az --init RUN/checkpoints/latest.pt   # the az expert (configs/distill_az.yaml)

The fit is colony-zero's (`zero/fit.py`): the same policy cross-entropy and gradient step.
The settings are `DistillConfig` (config.py); the run directory holds `config.yaml`, `data/`,
`metrics.csv`, `distilled.pt` and `summary.json`.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import colony_env as ce
from colony_env import observation, symmetry
from colony_env.agents import GreedyAgent
from colony_env.agents.az import BatchedSearch
from colony_env.constants import STATE_LEN
from colony_env.engine import _wrap

from ..augment import AUG_SYMS, augment
from ..agents import load_az_agent, load_search_agent
from ..checkpoint import CheckpointError, build_model, read_checkpoint, save_checkpoint
from ..cli import console_script, report_error, terminate_workers
from ..config import ConfigError, config_help
from ..model import masked_log_probs
from ..runlog import RunDir, RunDirError, new_run_dir
from ..teacher import greedy_action_features
from ..zero.fit import gradient_step, policy_cross_entropy
from .config import DistillConfig, config_from_dict, load_config, split_overrides

DATA_FORMAT = "colony-distill-shard"
VALIDATION_SHARE = 0.1  # of the games, held out to choose the epoch
MAX_GRAD_NORM = 1.0
LOGS = {"metrics.csv": ("epoch", "train_ce", "val_ce", "val_agree")}
SEED_HIGH = 2**62


class DistillError(ValueError):
    """A bad option or input for `colony-distill`; the message says what is allowed."""


# --- 1. generation ----------------------------------------------------------------------------
_WORKER: dict = {}


def _init_worker(cfg: DistillConfig) -> None:
    torch.set_num_threads(1)
    if cfg.expert == "az":
        _WORKER["search"] = load_az_agent(cfg.init, cfg.simulations, max_considered=cfg.max_considered).search
    else:
        _WORKER["search"] = load_search_agent(cfg.init, cfg.simulations, cfg.prior_c)
    _WORKER["greedy"] = GreedyAgent()


def game_plan(cfg: DistillConfig, game: int) -> tuple[int, bool, int]:
    """(setup seed, against greedy?, colour of the searching side vs greedy) of game `game`; fixed by the seed."""
    rng = np.random.default_rng([cfg.seed, game])
    return int(rng.integers(SEED_HIGH)), bool(rng.random() < cfg.greedy_share), int(rng.integers(2))


def play_recorded(search, greedy, setup_seed: int, vs_greedy: bool, search_colour: int,
                  rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Play one game; (states, visit counts per sorted legal id) of the searched positions."""
    state = ce.new_game(setup_seed)
    states: list[np.ndarray] = []
    visits: list[np.ndarray] = []
    while not state.is_over:
        if vs_greedy and int(state.to_move) != search_colour:
            state = ce.apply_action(state, greedy.act(state, rng))
            continue
        legal = np.sort(ce.legal_actions(state))
        if len(legal) == 1:  # nothing to search for (often a forced pass)
            state = ce.apply_action(state, int(legal[0]))
            continue
        root = search.mcts_search(state, rng)
        counts = {c.action: c.explore_count for c in root.children}
        states.append(state._a.copy())
        visits.append(np.array([counts[int(a)] for a in legal], np.int32))
        state = ce.apply_action(state, max(root.children, key=lambda c: c.sort_key()).action)
    return states, visits


def play_batched(search: BatchedSearch, greedy, plans: list[tuple[int, int, bool, int]]
                 ) -> dict[int, tuple[list[np.ndarray], list[np.ndarray]]]:
    """Play the games of `plans` ((game, setup seed, against greedy?, colour of the searching side)) side by
    side, every searched position of all of them in one batched search; per game, (states, improved policy per
    sorted legal id) of the searched positions, as `play_recorded` gives them."""
    games = [{"game": g, "state": ce.new_game(seed), "greedy": vs, "colour": colour,
              "rng": np.random.default_rng([seed, g]), "states": [], "targets": []} for g, seed, vs, colour in plans]
    live = games
    while live:
        searched = []
        for g in live:  # greedy's moves and forced moves (often a pass) need no search
            while not g["state"].is_over:
                if g["greedy"] and int(g["state"].to_move) != g["colour"]:
                    g["state"] = ce.apply_action(g["state"], greedy.act(g["state"], g["rng"]))
                    continue
                legal = ce.legal_actions(g["state"])
                if len(legal) > 1:
                    searched.append(g)
                    break
                g["state"] = ce.apply_action(g["state"], int(legal[0]))
        if searched:
            for g, r in zip(searched, search.search([g["state"] for g in searched], [g["rng"] for g in searched])):
                g["states"].append(g["state"]._a.copy())
                g["targets"].append(r.policy.astype(np.float32))  # over the legal ids in increasing order
                g["state"] = r.next_state
        live = [g for g in live if not g["state"].is_over]
    return {g["game"]: (g["states"], g["targets"]) for g in games}


def _play_job(args: tuple[int, int, bool, int]) -> tuple[int, list[np.ndarray], list[np.ndarray]]:
    game, setup_seed, vs_greedy, colour = args
    rng = np.random.default_rng([setup_seed, game])
    return game, *play_recorded(_WORKER["search"], _WORKER["greedy"], setup_seed, vs_greedy, colour, rng)


def _play_shard_job(plans: list[tuple[int, int, bool, int]]) -> dict[int, tuple[list[np.ndarray], list[np.ndarray]]]:
    return play_batched(_WORKER["search"], _WORKER["greedy"], plans)


def write_shard(path: Path, games: list[int], per_game: dict[int, tuple[list[np.ndarray], list[np.ndarray]]]) -> None:
    """One `.npz` shard: states int32[N, STATE_LEN], the flat targets (visit counts or improved policy, float32;
    shards written before the az expert hold int32 counts) with offsets, the game of each position."""
    states, flat, offsets, game_of = [], [], [0], []
    for g in games:
        s, v = per_game[g]
        for st, cnt in zip(s, v):
            states.append(st)
            flat.append(cnt)
            offsets.append(offsets[-1] + len(cnt))
            game_of.append(g)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        tmp,
        format=np.array(DATA_FORMAT),
        states=np.asarray(states, np.int32).reshape(-1, STATE_LEN),
        visits=np.concatenate(flat).astype(np.float32) if flat else np.zeros(0, np.float32),
        offsets=np.asarray(offsets, np.int64),
        game=np.asarray(game_of, np.int64),
    )
    tmp.replace(path)


def generate(cfg: DistillConfig, out: Path, progress: bool = True) -> list[Path]:
    """Play the missing shards of `cfg` into `out/data/`; the paths of all shards."""
    data_dir = out / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    n_shards = -(-cfg.games // cfg.shard_games)
    paths = [data_dir / f"shard_{i:04d}.npz" for i in range(n_shards)]
    todo = [i for i, p in enumerate(paths) if not p.exists()]
    if not todo:
        return paths
    from tqdm import tqdm

    shard_plans = {i: [(g, *game_plan(cfg, g)) for g in range(i * cfg.shard_games,
                                                              min(cfg.games, (i + 1) * cfg.shard_games))]
                   for i in todo}
    bar = tqdm(total=sum(map(len, shard_plans.values())), desc="search games", unit="game", disable=not progress,
               dynamic_ncols=True)
    pending: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    positions = 0
    ctx = mp.get_context("spawn")  # torch in forked workers can hang; spawn as colony-eval does
    pool = cf.ProcessPoolExecutor(cfg.workers, mp_context=ctx, initializer=_init_worker, initargs=(cfg,))
    try:
        if cfg.expert == "az":  # a shard's games are searched side by side in one process
            finished = pool.map(_play_shard_job, list(shard_plans.values()), chunksize=1)
        else:  # one game per job; pool.map keeps their order
            finished = ({game: (s, v)} for game, s, v in
                        pool.map(_play_job, [p for i in todo for p in shard_plans[i]], chunksize=1))
        for done in finished:
            for game, (s, v) in done.items():
                pending[game] = (s, v)
                positions += len(s)
                bar.update(1)
            bar.set_postfix(positions=positions)
            for i in sorted({g // cfg.shard_games for g in done}):  # pool.map keeps order: shards complete in turn
                games = [p[0] for p in shard_plans[i]]
                if all(g in pending for g in games):
                    write_shard(paths[i], games, pending)
                    for g in games:
                        del pending[g]
    except BaseException:
        terminate_workers(pool)  # stopped (Ctrl-C, SIGTERM) or failed: not after the games in flight
        raise
    finally:
        pool.shutdown(cancel_futures=True)
    bar.close()
    return paths


@dataclass
class Dataset:
    """Searched positions: packed states, the search's targets (visit counts or improved policy) as ragged rows, and
    each position's game."""

    states: np.ndarray  # int32[N, STATE_LEN]
    visits: np.ndarray  # float32[total] (int32 counts in shards written before the az expert)
    offsets: np.ndarray  # int64[N + 1]
    game: np.ndarray  # int64[N]

    def __len__(self) -> int:
        return self.states.shape[0]


def load_shards(paths: list[Path]) -> Dataset:
    """Concatenate shards; `DistillError` for a file that is not one."""
    states, visits, offsets, game = [], [], [np.zeros(1, np.int64)], []
    base = 0
    for p in paths:
        try:
            with np.load(p) as z:
                if str(z["format"]) != DATA_FORMAT:
                    raise KeyError("format")
                s, v, o, g = z["states"], z["visits"], z["offsets"], z["game"]
        except (OSError, KeyError, ValueError) as e:
            raise DistillError(f"{str(p)!r} is not a {DATA_FORMAT} file ({type(e).__name__}: {e})") from None
        if s.shape[1:] != (STATE_LEN,) or o.shape != (s.shape[0] + 1,) or o[-1] != v.shape[0] or g.shape != (s.shape[0],):
            raise DistillError(f"{str(p)!r} is inconsistent: array shapes do not match")
        states.append(s)
        visits.append(v)
        offsets.append(o[1:] + base)
        game.append(g)
        base += int(v.shape[0])
    if not states:
        raise DistillError("no data shards to fit on")
    return Dataset(np.concatenate(states), np.concatenate(visits), np.concatenate(offsets), np.concatenate(game))


# --- 2. fitting --------------------------------------------------------------------------------
def encode_batch(data: Dataset, rows: np.ndarray, features: bool = True
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(obs, canonical ids, valid, heuristic features, target probabilities) of `rows`, padded to the widest row;
    without `features` (a network with no heuristic prior, which does not read them) they are zeros.

    Slot j of a row is the j-th legal id in increasing board-frame order, as in training and
    `PolicyAgent.policy`; the recorded visit counts use the same order.
    """
    counts = data.offsets[rows + 1] - data.offsets[rows]
    width = int(counts.max())
    n = len(rows)
    obs = np.empty((n, *observation.OBS_SHAPE), np.float32)
    ids = np.zeros((n, width), np.int64)
    target = np.zeros((n, width), np.float32)
    for k, r in enumerate(rows):
        state = _wrap(data.states[r].copy())
        colour = int(state.to_move)
        legal = np.sort(ce.legal_actions(state))
        if len(legal) != counts[k]:
            raise DistillError(f"position {r}: {counts[k]} visit counts for {len(legal)} legal actions (data from another engine?)")
        obs[k] = observation.encode_observation(state, colour)
        ids[k, : len(legal)] = symmetry.board_action_to_canonical(legal, colour)
        v = data.visits[data.offsets[r]: data.offsets[r + 1]].astype(np.float32)
        target[k, : len(legal)] = v / v.sum()
    valid = np.arange(width)[None, :] < counts[:, None]
    feats = (greedy_action_features(data.states[rows], np.arange(n, dtype=np.int64), width) if features
             else np.zeros((n, width), np.float32))
    return obs, ids, valid, feats, target


def cross_entropy(model, obs, ids, valid, feats, target) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean cross-entropy to the targets, share of rows whose argmax is the target's argmax)."""
    logits, _ = model(obs, ids, feats if model.heuristic_prior else None, valid=valid)
    ce_loss = policy_cross_entropy(logits, valid, target).mean()  # colony-zero's policy loss
    agree = (masked_log_probs(logits, valid).argmax(-1) == target.argmax(-1)).float().mean()
    return ce_loss, agree


def _tensors(batch, device) -> list[torch.Tensor]:
    return [torch.from_numpy(x).to(device) for x in batch]


def fit(cfg: DistillConfig, data: Dataset, out: Path, progress: bool = True) -> dict:
    """Fit the policy to the visit targets; write `distilled.pt` and `metrics.csv`; the summary."""
    ckpt = read_checkpoint(cfg.init)
    model = build_model(ckpt).train()
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    games = np.unique(data.game)
    held = rng.choice(games, size=max(1, round(VALIDATION_SHARE * len(games))), replace=False)
    is_val = np.isin(data.game, held)
    train_rows, val_rows = np.flatnonzero(~is_val), np.flatnonzero(is_val)
    if len(train_rows) == 0 or len(val_rows) == 0:
        raise DistillError(f"need positions from at least 2 games to fit and validate, got {len(games)} game(s)")
    device = torch.device("cpu")
    val_batch = encode_batch(data, val_rows, model.heuristic_prior)
    if cfg.expert == "az" and cfg.augment_symmetry:
        # The az target is softmax(the network's own logits + the search's Q terms), so at the identity the
        # untrained weights match part of it by construction, and no network is exactly symmetric: the held-out
        # positions are shown in a fixed random board symmetry each, as the training positions are.
        obs, ids = augment(val_batch[0], val_batch[1], rng.choice(AUG_SYMS, size=len(val_rows)))
        val_batch = (obs, ids, *val_batch[2:])
    val = _tensors(val_batch, device)
    train = encode_batch(data, train_rows, model.heuristic_prior)  # encoded once; the heuristic features cost most

    def val_scores() -> tuple[float, float]:
        model.eval()
        with torch.no_grad():
            loss, agree = cross_entropy(model, *val)
        model.train()
        return float(loss), float(agree)

    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    best_loss, best_agree = val_scores()
    history = [{"epoch": 0, "train_ce": float("nan"), "val_ce": best_loss, "val_agree": best_agree}]
    best_state = {k: v.clone() for k, v in model.state_dict().items()}
    best_epoch = 0
    from tqdm import tqdm

    for epoch in range(1, cfg.epochs + 1):
        order = rng.permutation(len(train_rows))
        losses = []
        for start in tqdm(range(0, len(order), cfg.batch_size), desc=f"epoch {epoch}", disable=not progress, leave=False):
            pick = order[start: start + cfg.batch_size]
            obs, ids, valid, feats, target = (x[pick] for x in train)
            width = int(valid.sum(1).max())
            ids, valid, feats, target = ids[:, :width], valid[:, :width], feats[:, :width], target[:, :width]
            if cfg.augment_symmetry:
                obs, ids = augment(obs, ids, rng.choice(AUG_SYMS, size=len(pick)))
            loss, _ = cross_entropy(model, *_tensors((obs, ids, valid, feats, target), device))
            gradient_step(model, opt, loss, MAX_GRAD_NORM)
            losses.append(loss.item())
        v_loss, v_agree = val_scores()
        history.append({"epoch": epoch, "train_ce": float(np.mean(losses)), "val_ce": v_loss, "val_agree": v_agree})
        print(f"epoch {epoch}: train ce {np.mean(losses):.4f}  val ce {v_loss:.4f}  val agreement {v_agree:.3f}", flush=True)
        if v_loss < best_loss:
            best_loss, best_agree, best_epoch = v_loss, v_agree, epoch
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    files = RunDir(out, LOGS, column="epoch")
    files.rewind(None)  # every epoch is fitted again on resume: the log starts afresh
    files.log("metrics.csv", history)
    summary = {
        "init": cfg.init, "positions": len(data), "train_positions": len(train_rows),
        "val_positions": len(val_rows), "games": len(games), "best_epoch": best_epoch,
        "val_ce_before": history[0]["val_ce"], "val_ce_after": best_loss,
        "val_agree_before": history[0]["val_agree"], "val_agree_after": best_agree,
        "expert": cfg.expert, "simulations": cfg.simulations, "greedy_share": cfg.greedy_share,
    }
    if cfg.expert == "az":
        summary["max_considered"] = cfg.max_considered
    meta = dict(ckpt["meta"])
    meta["distill"] = summary
    save_checkpoint(out / "distilled.pt", model.eval(), ckpt["config"], meta)
    return summary


# --- CLI ----------------------------------------------------------------------------------------
PROG = "colony-distill"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0] + " Any config key can be given: "
                                "--init CHECKPOINT --games 2400.", epilog=config_help(DistillConfig),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML config (keys of DistillConfig); optional, keys can be given one by one")
    p.add_argument("--out", type=Path, help="run directory; default: <out_dir>/<run_name>-<timestamp>")
    p.add_argument("--resume", type=Path, help="continue a run directory (its config.yaml decides everything)")
    p.add_argument("--no-augment", action="store_true", help="no symmetry augmentation (--augment-symmetry false)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _resume_config(run_dir: Path) -> DistillConfig:
    """The config of a run directory: `config.yaml`, or the `config.json` that runs before it wrote."""
    if (run_dir / "config.yaml").is_file():
        return load_config(run_dir / "config.yaml")
    if (run_dir / "config.json").is_file():
        try:
            values = json.loads((run_dir / "config.json").read_text())
        except (OSError, ValueError) as e:
            raise DistillError(f"--resume: {str(run_dir / 'config.json')!r} is not readable JSON: {e}") from None
        if not isinstance(values, dict):
            raise DistillError(f"--resume: {str(run_dir / 'config.json')!r} must hold a mapping of keys to values")
        return config_from_dict(values)
    raise DistillError(f"--resume {str(run_dir)!r} has no config.yaml and no config.json: not a colony-distill run "
                       "directory")


def _settings(argv: list[str] | None) -> tuple[argparse.Namespace, DistillConfig, Path]:
    """(options, config, run directory) of a command line; DistillError or ConfigError when refused."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        overrides = split_overrides(rest)
    except ConfigError as e:
        parser.error(str(e))  # an unknown option, as argparse reports its own
    if args.no_augment:
        overrides["augment_symmetry"] = False
    if args.resume is not None:
        given = [f"--{k.replace('_', '-')}" for k in overrides] + (["--config"] if args.config else []) + (
            ["--out"] if args.out else [])
        if given:
            raise DistillError(f"--resume takes every setting from the run's config file; drop {', '.join(given)}")
        return args, _resume_config(args.resume), args.resume
    if not args.config and "init" not in overrides:
        raise DistillError("give --init CHECKPOINT (or --config FILE, or --resume RUN_DIR)")
    cfg = load_config(args.config, overrides) if args.config else config_from_dict(overrides)
    return args, cfg, args.out or new_run_dir(cfg.out_dir, cfg.run_name)


@console_script
def main(argv: list[str] | None = None) -> int:
    try:
        args, cfg, out = _settings(argv)
        read_checkpoint(cfg.init)  # fail early, in one line
        RunDir(out, LOGS).write_config(cfg)
        t0 = time.time()
        paths = generate(cfg, out, progress=not args.no_progress)
        t1 = time.time()
        data = load_shards(paths)
        print(f"{len(data)} searched positions from {len(np.unique(data.game))} games "
              f"({t1 - t0:.0f} s generating); fitting", flush=True)
        summary = fit(cfg, data, out, progress=not args.no_progress)
        summary["generate_seconds"] = round(t1 - t0, 1)
        summary["fit_seconds"] = round(time.time() - t1, 1)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    except (DistillError, ConfigError, CheckpointError, RunDirError) as e:
        return report_error(PROG, str(e))
    print(f"wrote {out / 'distilled.pt'}: validation cross-entropy {summary['val_ce_before']:.4f} -> "
          f"{summary['val_ce_after']:.4f}, agreement with the search {summary['val_agree_before']:.3f} -> "
          f"{summary['val_agree_after']:.3f} (best epoch {summary['best_epoch']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
