"""Fuzzing configs and CLI overrides (issue 13, item 10): every value is either a valid config
or a one-line `ConfigError` naming the key; nothing non-finite, out of range or ambiguous
reaches a run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colony_training.config import INT_MAX, SEED_MAX, ConfigError
from colony_training.ppo.config import CONFIG_KEYS, TrainConfig, load_config, split_overrides

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TEXTS = st.one_of(
    st.sampled_from(["-5", "1e30", "-1", "0", "1", "2147483648", "4294967295", "4294967296", "inf", "-inf", ".inf",
                     "nan", ".nan", "1e-300", "true", "null", "~", "[1, 2]", "{a: 1}", "'x'", "3.5", "0x10", "1_000",
                     "random,greedy", "mcts:0", "", "   ", "\x00", "é", "9" * 5000, "[" * 2000]),
    st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(repr),
)


@FUZZ
@given(key=st.sampled_from(CONFIG_KEYS), text=_TEXTS)
def test_any_override_gives_a_valid_config_or_a_one_line_error(key: str, text: str) -> None:
    try:
        cfg = load_config(_BASE, split_overrides([f"--{key.replace('_', '-')}", text]))
    except ConfigError as e:
        message = str(e)
        assert key in message and "\n" not in message and len(message) < 1500, message[:300]
        return
    for name in CONFIG_KEYS:
        value = getattr(cfg, name)
        if isinstance(value, float):
            assert math.isfinite(value), (name, value)
        elif isinstance(value, int) and not isinstance(value, bool):
            assert abs(value) <= max(INT_MAX, SEED_MAX), (name, value)
    assert 0 <= cfg.seed <= SEED_MAX and cfg.num_iterations >= 1


_BASE = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


@pytest.mark.parametrize(
    "override, match",
    [
        (["--seed", "-5"], r"'seed' = -5 is invalid; allowed: an integer in 0\.\.4294967295"),
        (["--seed", "1e30"], r"'seed' = 1e\+30 is out of range; allowed: an integer of at most 4294967295"),
        (["--seed", "-1"], r"'seed' = -1 is invalid"),
        (["--learning-rate", "inf"], r"'learning_rate' must be a finite number"),
        (["--ent-coef", "inf"], r"'ent_coef' must be a finite number"),
        (["--ent-coef", ".nan"], r"'ent_coef' must be a finite number"),
        (["--max-plies", "2147483648"], r"'max_plies' = 2147483648 is out of range"),
        (["--num-envs", "1e30"], r"'num_envs' = 1e\+30 is out of range"),
        (["--num-envs", "9" * 5000], r"'num_envs' must be an integer"),  # too long even for int()
        (["--total-steps", str(2**1200)], r"'total_steps' = an integer of 1201 bits is out of range"),
    ],
)
def test_reported_values_are_refused(override: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(_BASE, split_overrides(override))


def test_the_largest_seed_and_ply_limit_are_accepted() -> None:
    cfg = load_config(_BASE, split_overrides(["--seed", str(SEED_MAX), "--max-plies", str(2**31 - 1)]))
    assert cfg.seed == SEED_MAX and cfg.max_plies == 2**31 - 1


def test_a_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes("run_name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_config(f)


def test_duplicate_keys_are_refused_with_the_line(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("learning_rate: 3e-4\nnum_envs: 4\nlearning_rate: 1e-2\n")
    with pytest.raises(ConfigError, match=r"key 'learning_rate' appears twice \(line 3\)"):
        load_config(f)
    f.write_text("eval_opponents: [random, greedy]\nnum_envs: 4\n")  # no duplicates: fine
    assert load_config(f).num_envs == 4


@pytest.mark.parametrize("content", [b"\xff\xfe\x00", b"a: [1, 2", b"- 1\n- 2\n", b"{{{{", b"num_envs: !!python/object:os.system x"])
def test_broken_files_are_one_line_errors(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "bad.yaml"
    f.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert "\n" not in str(e.value)


def test_defaults_are_valid() -> None:
    assert TrainConfig().finalize().num_iterations >= 1
