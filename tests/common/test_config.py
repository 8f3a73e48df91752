"""Training configs: the shipped YAML files load, and bad values fail with a message naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from colony_training.config import ConfigError
from colony_training.ppo.config import CONFIG_KEYS, TrainConfig, config_from_dict, load_config, parse_override

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["quickstart.yaml", "selfplay_ppo.yaml", "scratch_ppo.yaml"])
def test_shipped_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / name)
    assert cfg.batch_size == cfg.num_envs * cfg.rollout_steps
    assert cfg.num_iterations * cfg.batch_size >= cfg.total_steps


def test_derived_fields() -> None:
    cfg = config_from_dict({"num_envs": 4, "rollout_steps": 8, "num_minibatches": 2, "total_steps": 100})
    assert (cfg.batch_size, cfg.minibatch_size, cfg.num_iterations) == (32, 16, 4)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"num_envz": 3}, r"unknown config key 'num_envz'; allowed keys: .*num_envs"),
        ({"num_envs": 0}, r"'num_envs' = 0 is invalid; allowed: an integer >= 1"),
        ({"num_envs": "many"}, r"'num_envs' must be an integer"),
        ({"num_envs": 2.5}, r"'num_envs' must be an integer"),
        ({"device": "tpu"}, r"'device' = 'tpu' is invalid; allowed: auto, cpu, cuda"),
        ({"precision": "fp16"}, r"'precision' = 'fp16' is invalid; allowed: fp32, bf16, auto"),
        ({"gamma": 1.5}, r"'gamma' = 1.5 is invalid; allowed: a number in \[0, 1\]"),
        ({"anneal_lr": "yes"}, r"'anneal_lr' must be true or false"),
        ({"eval_opponents": ["random", "alphazero"]}, r"'eval_opponents' has 'alphazero'; allowed agent specs"),
        ({"learning_rate": -1}, r"'learning_rate' = -1.0 is invalid"),
        ({"pool_share": 0.5, "greedy_share": 0.75}, r"'greedy_share' = 0.75 is invalid; allowed: a number in \[0, 1 - pool_share\]"),
        ({"init_from": "/nonexistent/x.pt"}, r"'init_from' = '/nonexistent/x.pt' is invalid; allowed: \"\" or the path"),
    ],
)
def test_bad_values_name_the_key(values: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_dict(values)


def test_yaml_scientific_notation_and_overrides(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("learning_rate: 3e-4\ntotal_steps: 1e5\n")
    cfg = load_config(p, overrides=dict([parse_override("num-envs", "16"), parse_override("run_name", "007")]))
    assert cfg.learning_rate == pytest.approx(3e-4)
    assert cfg.total_steps == 100_000
    assert cfg.num_envs == 16
    assert cfg.run_name == "007"


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_envs: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(listy)
    with pytest.raises(ConfigError, match="unknown config key 'bogus'"):
        parse_override("bogus", "1")


def test_every_field_is_documented_in_keys() -> None:
    assert set(CONFIG_KEYS) == set(TrainConfig().to_dict())
    assert "batch_size" not in CONFIG_KEYS  # derived, not configurable


def test_precision_auto_follows_the_cpus_native_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """`auto` is bf16 only where the CPU computes it natively (AVX512-BF16 or AMX); fp32 and bf16 are what they say."""
    import torch

    from colony_training.config import resolve_precision

    cpu = torch.device("cpu")
    for caps, native in (({"avx512_bf16": True}, True), ({"amx_bf16": True}, True),
                         ({"avx512_bf16": False, "avx2": True}, False), ({}, False)):
        monkeypatch.setattr(torch.cpu, "get_capabilities", lambda caps=caps: caps)
        assert resolve_precision("auto", cpu) is native
        assert resolve_precision("fp32", cpu) is False and resolve_precision("bf16", cpu) is True
