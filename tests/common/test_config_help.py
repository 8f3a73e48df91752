"""`--help` lists every config key with its type, default and meaning (issue 11, item 5)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import pytest

from colony_training.config import TrainConfig, config_help, config_keys, field_docs


def _listed(text: str) -> dict[str, tuple[str, str, str]]:
    """key -> (TYPE, default, meaning) as the help prints them."""
    out: dict[str, tuple[str, str, str]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^  --([a-z0-9-]+) (\S+)  \(default: (.*)\)$", line)
        if m:
            meaning = []
            for nxt in lines[i + 1 :]:
                if not nxt.startswith(" " * 6):
                    break
                meaning.append(nxt.strip())
            out[m[1].replace("-", "_")] = (m[2], m[3], " ".join(meaning))
    return out


def test_colony_train_help_lists_every_key(capsys) -> None:
    from colony_training.ppo.train import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    listed = _listed(capsys.readouterr().out)
    assert list(listed) == list(config_keys(TrainConfig))  # every key, in the dataclass order
    defaults = TrainConfig()
    for key, (kind, default, meaning) in listed.items():
        assert kind == {int: "INT", float: "FLOAT", bool: "BOOL", str: "STR"}.get(type(getattr(defaults, key)), "LIST[STR]"), key
        assert meaning, f"config key {key!r} has no meaning in --help: add a docstring under the field"
    assert listed["learning_rate"][1] == "0.0003" and listed["anneal_lr"][1] == "true"
    assert listed["eval_opponents"][1] == "[random, greedy]" and listed["init_from"][1] == "''"


def test_every_train_config_field_is_documented() -> None:
    docs = field_docs(TrainConfig)
    assert [k for k in config_keys(TrainConfig) if not docs.get(k)] == []


def test_config_help_takes_any_config_dataclass() -> None:
    """The helper other entry points reuse (colony-train-rllib, colony-zero): derived fields
    (init=False) are left out, inherited fields keep their docstrings."""

    @dataclass
    class Base:
        seed: int = 3
        """The seed."""

    @dataclass
    class Child(Base):
        names: list[str] = field(default_factory=lambda: ["a b", "c"])
        """Names, one per game."""
        derived: int = field(default=0, init=False)

    text = config_help(Child)
    assert _listed(text) == {"seed": ("INT", "3", "The seed."), "names": ("LIST[STR]", "['a b', c]", "Names, one per game.")}
    assert "derived" not in text and dataclasses.is_dataclass(Child)
