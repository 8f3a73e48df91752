"""Typed configuration of every trainer: one machinery for the config dataclasses (CleanRL style).

Each trainer's config is a dataclass beside its trainer (`ppo/config.py` TrainConfig,
`rllib/config.py` RllibConfig, `zero/config.py` ZeroConfig, `distill/config.py` DistillConfig).
Its fields are declared with `key(default, help, *checks)`: the meaning shown by `--help` and
the constraints checked on load live in the field's metadata, once per field. This module
holds what they share: YAML loading (by path or a built-in config's name), CLI overrides
(`--num-envs 16`), type coercion, the one validator (`validate`) and the one `--help` listing
(`config_help`). A bad value gives a one-line `ConfigError` naming the key and what is
allowed, because a typo in a config must never silently train the wrong thing for an hour.
"""

from __future__ import annotations

import dataclasses
import math
import re
import textwrap
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from colony_env.agents.az import MAX_LEGAL
from colony_env.agents.base import MAX_SIMULATIONS

from .runlog import is_file
from .shipped import builtin_configs

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16", "auto")
SEED_MAX = 2**32 - 1  # numpy and torch both accept seeds in 0..2**32-1
INT_MAX = 2**31 - 1  # no count in a config needs more; larger values are typos (1e30) that overflow later
# Agent specs a trainer's evaluation may play against (built by colony_training.eval.agent_specs):
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


def native_bf16(device) -> bool:
    """Whether `device` computes bfloat16 natively (a CPU with AVX512-BF16 or AMX, a CUDA GPU with bf16)."""
    import torch

    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    caps = torch.cpu.get_capabilities() if hasattr(torch.cpu, "get_capabilities") else {}
    return bool(caps.get("avx512_bf16") or caps.get("amx_bf16"))


def resolve_precision(name: str, device) -> bool:
    """Whether a config's `precision` (`fp32`, `bf16` or `auto`) runs the convolutions in bfloat16 on `device`."""
    return name == "bf16" or (name == "auto" and native_bf16(device))


# --- constraints, declared once per field ---------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One constraint of a config key: `ok(value, config)` must hold; `allowed` says what may be given.

    `each=True` checks every element of a list value and names the offending element.
    """

    ok: Callable[[Any, Any], bool]
    allowed: str
    each: bool = False


def at_least(low: int) -> Check:
    return Check(lambda v, c: v >= low, f"an integer >= {low}")


def number_at_least(low: float) -> Check:
    return Check(lambda v, c: v >= low, f"a number >= {low:g}")


def positive() -> Check:
    return Check(lambda v, c: 0 < v < math.inf, "a finite number > 0")


def share() -> Check:
    return Check(lambda v, c: 0.0 <= v <= 1.0, "a number in [0, 1]")


def one_of(choices: typing.Iterable[str]) -> Check:
    options = tuple(choices)
    return Check(lambda v, c: v in options, ", ".join(options))


def below(limit: int) -> Check:
    return Check(lambda v, c: 0 <= v <= limit, f"an integer in 0..{limit}")


def between(low: int, high: int) -> Check:
    return Check(lambda v, c: low <= v <= high, f"an integer in {low}..{high}")


SEED = below(SEED_MAX)
DEVICE = one_of(DEVICES)
PRECISION = one_of(PRECISIONS)
RUN_NAME = Check(lambda v, c: bool(re.fullmatch(r"[A-Za-z0-9_.-]+", v)), "letters, digits, '_', '.', '-'")
CHECKPOINT_OR_EMPTY = Check(lambda v, c: v == "" or is_file(v), '"" or the path of an existing checkpoint file')
CHECKPOINT_FILE = Check(lambda v, c: is_file(v), "the path of an existing checkpoint file")
LADDER_SPECS = Check(lambda v, c: isinstance(v, str) and bool(_SPEC_RE.match(v))
                     and (not v.startswith("mcts:") or int(v[5:]) <= MAX_SIMULATIONS),
                     f"agent specs: random, greedy, mcts:N (N in 1..{MAX_SIMULATIONS})", each=True)
SIMULATIONS = between(1, MAX_SIMULATIONS)
CONSIDERED = between(1, MAX_LEGAL)


def key(default: Any, help: str, *checks: Check) -> Any:  # noqa: A002 - `help` as argparse calls it
    """A config field: its default, its meaning (for `--help`) and its constraints (for `validate`)."""
    meta = {"help": " ".join(help.split()), "checks": checks}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


def derived() -> Any:
    """A field computed by `finalize` from the others; not a config key."""
    return field(default=0, init=False)


def validate(cfg: Any) -> None:
    """Check every key of config dataclass `cfg` against its declared constraints, in field order;
    the first that fails is a one-line ConfigError naming the key and what is allowed."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        for check in f.metadata.get("checks", ()):
            if not check.each:
                if not check.ok(value, cfg):
                    raise ConfigError(f"config key '{f.name}' = {value!r:.80} is invalid; allowed: {check.allowed}")
                continue
            for item in value:
                if not check.ok(item, cfg):
                    raise ConfigError(f"config key '{f.name}' has {item!r:.60}; allowed {check.allowed}")


class Config:
    """Base of the config dataclasses: `finalize` validates and derives, `to_dict` is what `config.yaml` holds."""

    def derive(self) -> None:
        """Compute the derived (`init=False`) fields; nothing by default."""

    def finalize(self) -> Any:
        """Check every key (`validate`), then compute the derived fields; returns self for chaining."""
        validate(self)
        self.derive()
        return self

    def to_dict(self) -> dict[str, Any]:
        """The configurable fields (no derived ones), as written to `config.yaml` of a run."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}


def config_keys(cls: type) -> tuple[str, ...]:
    """The configurable fields of a config dataclass (derived `init=False` fields excluded)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


HELP_WIDTH = 100  # columns of the key listing in --help


def field_docs(cls: type) -> dict[str, str]:
    """The meaning of each key of a config dataclass, as declared with `key(default, help)`."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls) if f.init}


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
    fields = {f.name: f for f in dataclasses.fields(cls)}
    defaults = cls()
    lines = ["config keys (in the YAML file, or on the command line as --key VALUE):"]
    for key in config_keys(cls):
        flag = "--" + key.replace("_", "-")
        lines.append(f"  {flag} {_type_name(hints[key]).upper()}  (default: {_default_text(getattr(defaults, key))})")
        meaning = docs.get(key, "")
        allowed = [c.allowed for c in fields[key].metadata.get("checks", ())]
        if allowed:
            meaning += f" Allowed: {'; '.join(allowed)}."
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


def config_from_dict(values: dict[str, Any], base: Any = None, cls: type | None = None) -> Any:
    """A validated config of dataclass `cls` (or the type of `base`): `base` (defaults if None)
    updated with `values`, then `finalize()`d."""
    cls = cls or type(base)
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


def load_config(path: str | Path, overrides: dict[str, Any] | None = None, cls: type | None = None) -> Any:
    """Read a YAML config file (or a built-in config by name, `resolve_config_path`), apply
    `overrides` (already parsed values) and validate as config dataclass `cls`."""
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
    return config_from_dict(data, cls=cls)


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


def parse_override(key: str, text: str, cls: type) -> tuple[str, Any]:
    """A CLI override: `--num-envs 16` -> ('num_envs', 16). The value is read as YAML (so 1e-4, true, [a, b])."""
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


def split_overrides(rest: list[str], cls: type, example: str = "--num-envs 16") -> dict[str, Any]:
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
