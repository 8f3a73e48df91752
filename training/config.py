"""Typed configuration of a self-play PPO run (one dataclass, CleanRL style).

A run is described by a YAML file (`configs/quickstart.yaml`, `configs/selfplay_ppo.yaml`)
whose keys are exactly the fields of `TrainConfig`; any key can be overridden on the command
line (`colony-train --config X.yaml --num-envs 16 --learning-rate 1e-4`). Everything is
validated on load and a bad value gives a one-line `ConfigError` naming the key and what is
allowed, because a typo in a config must never silently train the wrong thing for an hour.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import textwrap
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .runlog import atomic_write_text, is_file
from .shipped import builtin_configs

DEVICES = ("auto", "cpu", "cuda")
SEED_MAX = 2**32 - 1  # numpy and torch both accept seeds in 0..2**32-1
INT_MAX = 2**31 - 1  # no count in a config needs more; larger values are typos (1e30) that overflow later
# Agent specs understood by the evaluation module (colony_env.agents / colony_training.eval.agent_specs):
# `random`, `greedy`, `mcts:N` (N rollouts per move).
_SPEC_RE = re.compile(r"^(random|greedy|mcts:[1-9][0-9]*)$")


class ConfigError(ValueError):
    """A config file or override that does not describe a valid run; the message names the key."""


def resolve_device(name: str):
    """The torch device a config's `device` key names; ConfigError when CUDA is asked for and absent."""
    import torch  # this module stays importable without torch (config files are checked before training)

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' was requested but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(name)


@dataclass
class TrainConfig:
    """Everything that defines a training run. Every field can be set from YAML or the CLI."""

    # --- run bookkeeping ---
    run_name: str = "run"
    """Prefix of the run directory `<out_dir>/<run_name>-<timestamp>`."""
    out_dir: str = "runs"
    """Where run directories are created."""
    seed: int = 0
    """Seeds the game setups, the sampling generators and the network initialisation."""
    device: str = "auto"
    """`auto` (cuda if available), `cpu` or `cuda`."""
    torch_threads: int = 2
    """torch intra-op threads on CPU (the reference machine has 2 cores)."""

    # --- budget ---
    total_steps: int = 200_000
    """Environment steps (single moves, both colours) to train for."""
    num_envs: int = 32
    """Games played in parallel by the vector env; inference is batched over them."""
    rollout_steps: int = 64
    """Steps per env per PPO iteration (batch = num_envs * rollout_steps)."""
    max_plies: int = 400
    """Ply limit per game (R6.2.4)."""

    # --- network ---
    channels: int = 32
    """Width of the residual trunk."""
    blocks: int = 2
    """Residual blocks in the trunk."""

    heuristic_prior: bool = False
    """Add the greedy heuristic's score of each legal action, times a learned weight, to the policy logits (training/teacher.py)."""

    policy_target_features: bool = False
    """Add a per-plane projection of the trunk features at each action's landing cell to its logit (model.py); off in old checkpoints."""

    # --- PPO ---
    learning_rate: float = 3e-4
    """Adam step size at the start of the run."""
    anneal_lr: bool = True
    """Linearly decay the learning rate to 0 over the run."""
    gamma: float = 0.995
    """Discount per own decision of a colour."""
    gae_lambda: float = 0.95
    """GAE's lambda: 0 bootstraps after one step, 1 uses the whole return."""
    update_epochs: int = 3
    """Passes over each rollout batch per PPO update."""
    num_minibatches: int = 4
    """Minibatches per epoch (minibatch size = batch / num_minibatches)."""
    clip_coef: float = 0.2
    """PPO's clipping range for the probability ratio."""
    clip_vloss: bool = True
    """Clip the value loss around the old value estimates, as the policy ratio is clipped."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus (over the legal actions)."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    norm_adv: bool = True
    """Normalise the advantages within each minibatch."""
    target_kl: float = 0.0
    """Stop the epochs of one update early when the approximate KL exceeds this; 0 disables it."""

    shaping_scale: float = 0.5
    """Scale of the potential-based shaping (training/ppo/shaping.py); 0 trains on the terminal reward alone."""

    teacher_coef: float = 0.0
    """Kickstarting (training/teacher.py): initial weight of the cross-entropy towards the greedy agent's choices; 0 disables it."""
    teacher_steps: int = 0
    """Env steps over which the kickstarting weight decays linearly to 0."""

    # --- self-play ---
    pool_share: float = 0.25
    """Share of the games in which one colour is played by a past snapshot from the pool."""
    pool_size: int = 8
    """Past snapshots kept in the opponent pool (oldest dropped first)."""
    greedy_share: float = 0.0
    """Share of the games in which one colour is played by the greedy agent (a fixed, competent
    opponent whose replies punish loose play; its moves are not trained on)."""
    snapshot_every: int = 10
    """Iterations between snapshots added to the pool."""
    augment_symmetry: bool = True
    """Feed each decision in a random one of the 4 board symmetries that keep the canonical view."""

    init_from: str = ""
    """Start a new run from this checkpoint's weights (same architecture); "" starts from scratch."""

    # --- evaluation, checkpoints, logging ---
    eval_every: int = 50
    """Iterations between evaluations (0 disables periodic evaluation; the final one always runs)."""
    eval_games: int = 40
    """Games per opponent in a periodic evaluation (half with each colour)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """Agent specs to evaluate against: `random`, `greedy`, `mcts:N`."""
    final_eval_games: int = 100
    """Games per opponent in the evaluation at the end of the run (0 disables it)."""
    checkpoint_every: int = 20
    """Iterations between checkpoints (the latest is always `checkpoints/latest.pt`)."""
    keep_checkpoints: int = 5
    """Numbered checkpoints kept besides `latest.pt` (older ones are deleted)."""

    # --- derived (set by `finalize`, not configurable) ---
    batch_size: int = field(default=0, init=False)
    minibatch_size: int = field(default=0, init=False)
    num_iterations: int = field(default=0, init=False)

    def finalize(self) -> "TrainConfig":
        """Check ranges and compute the derived fields; returns self for chaining."""
        _check_ranges(self)
        self.batch_size = self.num_envs * self.rollout_steps
        self.minibatch_size = max(1, self.batch_size // self.num_minibatches)
        self.num_iterations = max(1, math.ceil(self.total_steps / self.batch_size))
        return self

    def to_dict(self) -> dict[str, Any]:
        """The configurable fields (no derived ones), as written to `config.yaml` of a run."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}




def _check_ranges(c: TrainConfig) -> None:
    def need(ok: bool, key: str, allowed: str) -> None:
        if not ok:
            raise ConfigError(f"config key '{key}' = {getattr(c, key)!r:.80} is invalid; allowed: {allowed}")

    need(0 <= c.seed <= SEED_MAX, "seed", f"an integer in 0..{SEED_MAX}")
    if c.device not in DEVICES:
        raise ConfigError(f"config key 'device' = {c.device!r:.40} is invalid; allowed: {', '.join(DEVICES)}")
    for key in ("total_steps", "num_envs", "rollout_steps", "max_plies", "channels", "blocks", "update_epochs",
                "num_minibatches", "torch_threads", "pool_size", "snapshot_every", "checkpoint_every",
                "eval_games"):
        need(getattr(c, key) >= 1, key, "an integer >= 1")
    for key in ("eval_every", "final_eval_games", "keep_checkpoints", "teacher_steps"):
        need(getattr(c, key) >= 0, key, "an integer >= 0")
    need(c.learning_rate > 0, "learning_rate", "a number > 0")
    for key in ("gamma", "gae_lambda", "pool_share", "greedy_share", "shaping_scale"):
        need(0.0 <= getattr(c, key) <= 1.0, key, "a number in [0, 1]")
    need(c.pool_share + c.greedy_share <= 1.0, "greedy_share", "a number in [0, 1 - pool_share]")
    need(c.init_from == "" or is_file(c.init_from), "init_from", '"" or the path of an existing checkpoint file')
    for key in ("clip_coef", "ent_coef", "vf_coef", "max_grad_norm", "target_kl", "teacher_coef"):
        need(getattr(c, key) >= 0, key, "a number >= 0")
    need(c.num_minibatches <= c.num_envs * c.rollout_steps, "num_minibatches", "at most num_envs * rollout_steps")
    need(bool(re.fullmatch(r"[A-Za-z0-9_.-]+", c.run_name)), "run_name", "letters, digits, '_', '.', '-'")
    for spec in c.eval_opponents:
        if not isinstance(spec, str) or not _SPEC_RE.match(spec):
            raise ConfigError(
                f"config key 'eval_opponents' has {spec!r:.60}; allowed agent specs: random, greedy, mcts:N (N >= 1)"
            )


def config_keys(cls: type) -> tuple[str, ...]:
    """The configurable fields of a config dataclass (derived `init=False` fields excluded)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


CONFIG_KEYS: tuple[str, ...] = config_keys(TrainConfig)
HELP_WIDTH = 100  # columns of the key listing in --help


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a config dataclass (CleanRL style), one line
    each; inherited fields included. Read from the source, as these strings are not kept at runtime."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):  # no source (e.g. a class made at runtime): no meanings to show
            continue
        body = tree.body[0].body
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):  # fmt: skip
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _default_text(value: Any) -> str:
    """A default as it would be written in the YAML file (or after --key on the command line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if value == "" or value.strip() != value or " " in value else value
    if isinstance(value, list):
        return "[" + ", ".join(_default_text(v) for v in value) + "]"
    return repr(value)


def config_help(cls: type) -> str:
    """Every configurable key of config dataclass `cls`, with its type, default and meaning, for
    an argparse epilog (use `formatter_class=argparse.RawDescriptionHelpFormatter`)."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    defaults = cls()
    lines = ["config keys (in the YAML file, or on the command line as --key VALUE):"]
    for key in config_keys(cls):
        flag = "--" + key.replace("_", "-")
        lines.append(f"  {flag} {_type_name(hints[key]).upper()}  (default: {_default_text(getattr(defaults, key))})")
        meaning = docs.get(key, "")
        lines.extend(textwrap.wrap(meaning, HELP_WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return "\n".join(lines)


def _coerce(cls: type, key: str, value: Any) -> Any:
    """Check `value` against the field's annotated type; ints are accepted where floats are expected."""
    want = typing.get_type_hints(cls)[key]
    origin = typing.get_origin(want)
    if origin in (list,):
        if isinstance(value, str):  # CLI: "random,greedy" or a YAML list
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"config key '{key}' must be a list of strings, got {value!r:.80}")
        return list(value)
    if origin in (typing.Union, types.UnionType):
        raise AssertionError(f"unsupported union type for {key}")  # no config uses one
    if want is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"config key '{key}' must be true or false, got {value!r:.60}")
    if want in (int, float) and isinstance(value, str):
        try:  # PyYAML (YAML 1.1) reads "3e-4" and "1e6" as strings
            value = float(value)
        except ValueError:
            pass
    if want is int:
        if isinstance(value, float) and value.is_integer():  # YAML reads 1e6 as a float
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            limit = SEED_MAX if key == "seed" or key.endswith("_seed") else INT_MAX
            if abs(value) > limit:
                bits = value.bit_length()
                shown = str(value) if bits <= 64 else f"{float(value):.3g}" if bits < 1000 else f"an integer of {bits} bits"
                raise ConfigError(f"config key '{key}' = {shown} is out of range; allowed: an integer of at most {limit}")
            return value
        raise ConfigError(f"config key '{key}' must be an integer, got {value!r:.60}")
    if want is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(f"config key '{key}' must be a finite number, got {value!r}")
            return float(value)
        raise ConfigError(f"config key '{key}' must be a number, got {value!r:.60}")
    if want is str:
        if value is None:  # `key:` with nothing after it in YAML
            return ""
        if isinstance(value, str):
            return value
        raise ConfigError(f"config key '{key}' must be a string, got {value!r:.60}")
    raise AssertionError(f"unhandled type {want} for {key}")


def _unknown(cls: type, key: str) -> ConfigError:
    return ConfigError(f"unknown config key '{key[:60]}'; allowed keys: {', '.join(config_keys(cls))}")


def config_from_dict(values: dict[str, Any], base: Any = None, cls: type = None) -> Any:
    """A validated config of dataclass `cls` (default `TrainConfig`, or the type of `base`):
    `base` (defaults if None) updated with `values`, then `finalize()`d."""
    cls = cls or (type(base) if base is not None else TrainConfig)
    cfg = dataclasses.replace(base) if base is not None else cls()
    keys = config_keys(cls)
    for key, value in values.items():
        if key not in keys:
            raise _unknown(cls, str(key))
        setattr(cfg, key, _coerce(cls, key, value))
    return cfg.finalize()


def resolve_config_path(name_or_path: str | Path) -> Path:
    """A config file, or the built-in config of that name (`quickstart` -> the shipped quickstart.yaml).

    A path that exists wins; a bare name (no folder, no `.yaml`) is looked up among the configs the
    package ships (`colony-config list`), so `--config quickstart` works from any folder."""
    p = Path(name_or_path)
    if is_file(p):
        return p
    text = str(name_or_path)
    builtin = builtin_configs()
    if "/" not in text and "\\" not in text and not text.endswith((".yaml", ".yml")):
        if text in builtin:
            return builtin[text]
        raise ConfigError(f"no built-in config named {text[:200]!r} and no such file; built-in configs: "
                          f"{', '.join(builtin)} (colony-config list), or give the path of a YAML file")
    raise ConfigError(f"config file {text[:200]!r} does not exist; give the path of a YAML file or the name "
                      f"of a built-in config: {', '.join(builtin)}")


def load_config(path: str | Path, overrides: dict[str, Any] | None = None, cls: type = None) -> Any:
    """Read a YAML config file (or a built-in config by name, `resolve_config_path`), apply
    `overrides` (already parsed values) and validate as `cls` (default `TrainConfig`)."""
    p = resolve_config_path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {str(p)!r} is not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except OSError as e:
        raise ConfigError(f"config file {str(p)!r} cannot be read: {e.strerror or e}") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader) or {}
    except (yaml.YAMLError, ValueError, RecursionError) as e:  # ValueError: an integer too long to convert
        raise ConfigError(f"config file {str(p)!r} is not valid YAML: {' '.join(str(e).split())[:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold a mapping of keys to values, got {type(data).__name__}")
    data.update(overrides or {})
    return config_from_dict(data, cls=cls or TrainConfig)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error.

    Plain PyYAML keeps the last value silently, so `learning_rate:` written twice in a long
    config would train with whichever came last.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: let PyYAML report it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice (line {key_node.start_mark.line + 1})", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


def parse_override(key: str, text: str, cls: type = None) -> tuple[str, Any]:
    """A CLI override: `--num-envs 16` -> ('num_envs', 16). The value is read as YAML (so 1e-4, true, [a, b])."""
    cls = cls or TrainConfig
    name = key.replace("-", "_")
    if name not in config_keys(cls):
        raise _unknown(cls, name)
    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: an integer too long to convert
        value = text
    if typing.get_type_hints(cls)[name] is str and not isinstance(value, str):
        value = text  # a run name like "001" stays a string
    return name, value


def split_overrides(rest: list[str], cls: type = None, example: str = "--num-envs 16") -> dict[str, Any]:
    """The `--key value` / `--key=value` pairs left over by argparse, for any field of `cls`."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(rest):
        tok = rest[i]
        if not tok.startswith("--"):
            raise ConfigError(f"unexpected argument {tok!r}; overrides look like {example}")
        key, eq, val = tok[2:].partition("=")
        if not eq:
            if i + 1 >= len(rest):
                raise ConfigError(f"option --{key} needs a value")
            val = rest[i + 1]
            i += 1
        name, value = parse_override(key, val, cls)
        out[name] = value
        i += 1
    return out
