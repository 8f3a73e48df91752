"""Speed of the search-based trainer's hot path: `python -m colony_training.bench_zero`.

Prints, for each network (the zero quickstart model, the zero shipped model, and any
`--checkpoint`, also as its int8 copy, `quantize.int8_copy`):

* leaf evaluations per second, batched (all pending leaves of `--games` searches in one
  forward pass) and one at a time (a forward pass per leaf), and their ratio;
* simulations per second of the whole batched search (tree walks + evaluation) and of
  `--games` one-at-a-time searches;
* self-play moves per second and games per hour at `--simulations` per move (moves measured,
  games/hour = moves/s * 3600 / `--plies-per-game`, the mean game length of self-play);

then the options that could make the forward pass cheaper (torch threads, channels_last,
a frozen TorchScript trace, bf16 convolutions, int8 trunk, torch.compile), each timed on the same batch. For
each `--checkpoint`, what bf16 convolutions and an int8 trunk change in a trained network's answers: how often its
most likely move stays the same and how far its values move, with each evaluator's speed.
`--shape CxB` adds a randomly initialised network of C channels and B blocks to the timings (trunk
shapes compared at equal footing). Medians over `--repeats` runs, measured side by side in one
process; the load of the machine is printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

import colony_env as ce
from colony_env.agents.az import BatchedSearch, SearchConfig
from colony_env.observation import OBS_CHANNELS

from .agents import NetworkEvaluator
from .checkpoint import load_model
from .cli import console_script
from .model import PolicyValueNet
from .quantize import int8_copy

MODELS = {"zero quickstart (32x2)": (32, 2, False), "zero shipped (64x4)": (64, 4, False)}
WARMUP_PLIES = 24  # positions are taken a few random plies into a game (not the opening alone)


def positions(n: int, seed: int, max_plies: int = WARMUP_PLIES) -> list[ce.GameState]:
    """`n` positions, each up to `max_plies` random plies into a game, with more than one legal action."""
    out = []
    rng = np.random.default_rng(seed)
    while len(out) < n:
        s = ce.new_game(int(rng.integers(2**31)))
        for _ in range(int(rng.integers(max_plies))):
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
            if s.is_over:
                break
        if not s.is_over and len(ce.legal_actions(s)) > 1:
            out.append(s)
    return out


CPU_RATES: list[float] = []  # the CPU-time rate of each median_rate call, in order


def median_rate(fn: Callable[[], int], repeats: int) -> float:
    """Median of work per wall-clock second over `repeats` timed calls of fn (which returns its amount
    of work). The median per CPU-second of this process is appended to CPU_RATES: on a loaded
    machine it moves much less than the wall-clock rate."""
    rates, cpu_rates = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        work = fn()
        rates.append(work / (time.perf_counter() - t))
        cpu_rates.append(work / max(1e-9, time.process_time() - c))
    CPU_RATES.append(statistics.median(cpu_rates))
    return statistics.median(rates)


def leaf_batch(states: list[ce.GameState]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The evaluator's inputs for these positions, as the search builds them."""
    from colony_env.agents import _az

    n = len(states)
    packed = np.stack([s._a for s in states]).astype(np.int32)
    node_state = packed[:, None, :].copy()
    obs = np.zeros((n, *ce.observation.OBS_SHAPE), np.float32)
    ids = np.zeros((n, _az._core.MAX_LEGAL), np.int16)
    counts = np.zeros(n, np.int32)
    index = np.zeros(n, np.int64)
    st = np.zeros_like(packed)
    _az.leaf_inputs(np.ones(n, np.bool_), np.zeros(n, np.int64), node_state, index, st, obs, ids, counts)
    w = int(counts.max())
    ids = ids[:, :w].copy()
    ids[np.arange(w)[None, :] >= counts[:, None]] = 0
    return st, obs, ids, counts


def bench_model(name: str, model: PolicyValueNet, args: argparse.Namespace) -> None:
    ev = NetworkEvaluator(model)
    states = positions(args.games, args.seed)
    st, obs, ids, counts = leaf_batch(states)
    ev(st, obs, ids, counts)  # warm up
    batched = median_rate(lambda: (ev(st, obs, ids, counts), len(states))[1], args.repeats)
    batched_cpu = CPU_RATES[-1]

    def singles() -> int:
        for k in range(len(states)):
            ev(st[k: k + 1], obs[k: k + 1], ids[k: k + 1, : counts[k]], counts[k: k + 1])
        return len(states)

    single = median_rate(singles, args.repeats)
    single_cpu = CPU_RATES[-1]
    cfg = SearchConfig(simulations=args.simulations)
    rng = np.random.default_rng(args.seed)
    search_b = median_rate(lambda: (BatchedSearch(ev, cfg).search(states, rng), len(states) * args.simulations)[1],
                           args.repeats)
    few = states[: max(1, len(states) // 8)]
    search_1 = median_rate(lambda: (sum(len(BatchedSearch(ev, cfg).search([s], rng)) for s in few),
                                    len(few) * args.simulations)[1], args.repeats)
    moves = search_b / args.simulations
    print(f"{name}: leaf evals/s batched({len(states)}) {batched:9.0f}   one-at-a-time {single:7.0f}   "
          f"ratio {batched / single:5.1f}x")
    print(f"{'':{len(name)}}  per CPU-second: batched {batched_cpu:9.0f}   one-at-a-time {single_cpu:7.0f}   "
          f"ratio {batched_cpu / single_cpu:5.1f}x")
    print(f"{'':{len(name)}}  simulations/s batched {search_b:8.0f}   one-at-a-time {search_1:7.0f}   "
          f"self-play moves/s {moves:6.1f}   games/hour {moves * 3600 / args.plies_per_game:7.0f}")


def parse_shape(text: str) -> tuple[int, int, bool]:
    """(channels, blocks, global pooling) of a trunk shape written CHANNELSxBLOCKS, e.g. "48x4", with a "g"
    after it for KataGo's global pooling in every block ("32x2g"); ValueError in one line otherwise."""
    c, x, b = text.lower().partition("x")
    pool = b.endswith("g")
    b = b[:-1] if pool else b
    if not (x and c.isdigit() and b.isdigit() and int(c) >= 1 and int(b) >= 1):
        raise ValueError(f"--shape takes CHANNELSxBLOCKS with both >= 1, e.g. 48x4 (48x4g: with global pooling); got {text!r}")
    return int(c), int(b), pool


def bf16_copy(model: PolicyValueNet) -> PolicyValueNet:
    """The same network with its convolutions in bfloat16 under autocast (PPO's `precision: bf16`), in eval mode."""
    copy = model.blank_copy()
    copy.load_state_dict(model.state_dict())
    copy.bf16_trunk = True
    return copy.eval()


def fidelity(name: str, model: PolicyValueNet, args: argparse.Namespace) -> None:
    """bf16 convolutions and an int8 trunk (`quantize.int8_copy`, calibrated on other positions) against
    float32 on the same positions (up to 150 random plies into a game): the share of positions whose most
    likely legal move is unchanged, the values' mean and largest absolute change, and the leaf evaluations
    per second of each evaluator (float32 as the search runs it)."""
    states = positions(max(args.games, 256), args.seed + 2, max_plies=150)
    st, obs, ids, counts = leaf_batch(states)
    evs = {"float32": NetworkEvaluator(model), "bf16": NetworkEvaluator(bf16_copy(model)),
           "int8": NetworkEvaluator(int8_copy(model))}
    out = {k: ev(st, obs, ids, counts) for k, ev in evs.items()}
    valid = np.arange(ids.shape[1])[None, :] < counts[:, None]
    best = {k: np.where(valid, logits, -np.inf).argmax(1) for k, (logits, _) in out.items()}
    rates = {k: median_rate(lambda ev=ev: (ev(st, obs, ids, counts), len(states))[1], args.repeats)
             for k, ev in evs.items()}
    for k in ("bf16", "int8"):
        dv = np.abs(out[k][1] - out["float32"][1])
        print(f"{name}: {k} against float32 on {len(states)} positions: most likely move the same in "
              f"{(best[k] == best['float32']).mean():.1%}, value change mean {dv.mean():.4f} max {dv.max():.4f}; "
              f"leaf evals/s float32 {rates['float32']:.0f}, {k} {rates[k]:.0f} ({rates[k] / rates['float32']:.2f}x)")


def bench_options(model: PolicyValueNet, args: argparse.Namespace) -> None:
    states = positions(args.games, args.seed + 1)
    _, obs, ids, _ = leaf_batch(states)
    variants: list[tuple[str, Callable[[], object]]] = []
    obs_t = torch.from_numpy(obs)
    ids_t = torch.from_numpy(ids.astype(np.int64))

    def plain() -> object:
        with torch.inference_mode():
            return model(obs_t, ids_t)

    def no_grad() -> object:
        with torch.no_grad():
            return model(obs_t, ids_t)

    variants.append(("eager, inference_mode", plain))
    variants.append(("no_grad", no_grad))
    cl_model = model.blank_copy()
    cl_model.load_state_dict(model.state_dict())
    cl_model = cl_model.to(memory_format=torch.channels_last).eval()
    obs_cl = obs_t.contiguous(memory_format=torch.channels_last)

    def channels_last() -> object:
        with torch.inference_mode():
            return cl_model(obs_cl, ids_t)

    variants.append(("channels_last", channels_last))
    with torch.inference_mode():
        traced = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, (obs_t, ids_t), check_trace=False)))

    def use_traced() -> object:
        with torch.inference_mode():
            return traced(obs_t, ids_t)

    variants.append(("jit trace+freeze (used)", use_traced))
    bf_model = bf16_copy(model)

    def bf16() -> object:
        with torch.inference_mode():
            return bf_model(obs_t, ids_t)

    variants.append(("bf16 convolutions", bf16))
    q_model = int8_copy(model)

    def int8() -> object:
        with torch.inference_mode():
            return q_model(obs_t, ids_t)

    variants.append(("int8 trunk", int8))
    with warnings.catch_warnings():  # marked deprecated in favour of torchao, which torch does not ship
        warnings.simplefilter("ignore")
        dyn_model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)  # a copy

    def int8_dynamic() -> object:  # PyTorch's dynamic quantization converts only the Linear layers
        with torch.inference_mode():
            return dyn_model(obs_t, ids_t)

    variants.append(("int8 dynamic (Linear)", int8_dynamic))
    if not args.no_compile:
        try:
            compiled = torch.compile(model, dynamic=True)
            with torch.inference_mode():
                compiled(obs_t, ids_t)

            def use_compiled() -> object:
                with torch.inference_mode():
                    return compiled(obs_t, ids_t)

            variants.append(("torch.compile", use_compiled))
        except Exception as e:  # no compiler toolchain: say so, keep going
            print(f"  torch.compile unavailable: {str(e).splitlines()[0][:120]}")
    base_threads = torch.get_num_threads()
    for threads in sorted({1, 2}):
        torch.set_num_threads(threads)
        for label, fn in variants:
            fn()
            rate = median_rate(lambda fn=fn: (fn(), len(states))[1], args.repeats)
            print(f"  {label:<24} threads={threads}: {rate:9.0f} leaf evals/s (batch {len(states)})")
    torch.set_num_threads(base_threads)


@console_script
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m colony_training.bench_zero", description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=32, help="searches in flight (leaves per batched call)")
    p.add_argument("--simulations", type=int, default=32, help="simulations per move in the search timings")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats; the median is printed")
    p.add_argument("--threads", type=int, default=1, help="torch threads for the main timings")
    p.add_argument("--plies-per-game", type=float, default=220.0, help="mean self-play game length for games/hour")
    p.add_argument("--checkpoint", action="append", default=[], help="also time this checkpoint's network")
    p.add_argument("--shape", action="append", default=[], metavar="CxB",
                   help="also time a random network of C channels and B residual blocks, e.g. 48x4 (48x4g: with global pooling)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for key in ("games", "simulations", "repeats", "threads"):
        if getattr(args, key) < 1:
            p.error(f"--{key} must be >= 1")
    shapes = {}
    for text in args.shape:
        try:
            c, b, pool = parse_shape(text)
        except ValueError as e:
            p.error(str(e))
        shapes[f"shape {c}x{b}{'g' if pool else ''}"] = (c, b, pool)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    print(f"torch {torch.__version__}, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    models = {name: PolicyValueNet(OBS_CHANNELS, c, b, False, True, global_pool=pool).eval()
              for name, (c, b, pool) in {**MODELS, **shapes}.items()}
    for path in args.checkpoint:
        models[f"checkpoint {path}"] = load_model(path)[0]
        models[f"checkpoint {path} int8"] = int8_copy(models[f"checkpoint {path}"])  # the search end to end in int8
    for name, model in models.items():
        bench_model(name, model, args)
    for path in args.checkpoint:
        fidelity(f"checkpoint {path}", models[f"checkpoint {path}"], args)
    print("forward-pass options, zero shipped model:")
    bench_options(models["zero shipped (64x4)"], args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
