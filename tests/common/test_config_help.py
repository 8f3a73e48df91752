"""`--help` lists every config key with its type, default and meaning (issue 11, item 5)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import pytest

from colony_training.config import LADDER_SPECS, Config, ConfigError, at_least, config_help, config_keys, field_docs, key, validate
from colony_training.ppo.config import TrainConfig


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
    for name, (kind, default, meaning) in listed.items():
        assert kind == {int: "INT", float: "FLOAT", bool: "BOOL", str: "STR"}.get(type(getattr(defaults, name)), "LIST[STR]"), name
        assert meaning, f"config key {name!r} has no meaning in --help: declare it with key(default, help)"
    assert listed["learning_rate"][1] == "0.0003" and listed["anneal_lr"][1] == "true"
    assert listed["eval_opponents"][1] == "[random, greedy]" and listed["init_from"][1] == "''"


def test_every_train_config_field_is_documented() -> None:
    docs = field_docs(TrainConfig)
    assert [k for k in config_keys(TrainConfig) if not docs.get(k)] == []


def test_config_help_takes_any_config_dataclass() -> None:
    """The one help generator every entry point uses (colony-train, colony-train-rllib, colony-zero,
    colony-distill): derived fields (init=False) are left out, inherited fields keep their meaning,
    which is declared with the field (`key`), not parsed from the source."""

    @dataclass
    class Base:
        seed: int = key(3, "The seed.")

    @dataclass
    class Child(Base):
        names: list[str] = key(["a b", "c"], "Names, one per game.")
        derived: int = field(default=0, init=False)

    text = config_help(Child)
    assert _listed(text) == {"seed": ("INT", "3", "The seed."), "names": ("LIST[STR]", "['a b', c]", "Names, one per game.")}
    assert "derived" not in text and dataclasses.is_dataclass(Child)
    assert Child().names == ["a b", "c"] and Child().names is not Child().names  # a fresh list per config


def test_a_fields_constraints_are_checked_and_shown_from_one_declaration() -> None:
    """`key(default, help, *checks)`: the same Check refuses a value (one-line error) and is listed in --help."""

    @dataclass
    class Small(Config):
        games: int = key(4, "Games to play.", at_least(2))
        names: list[str] = key(["random"], "Opponents.", LADDER_SPECS)

    assert _listed(config_help(Small))["games"][2] == "Games to play. Allowed: an integer >= 2."
    assert Small(games=2).finalize().games == 2
    with pytest.raises(ConfigError, match=r"^config key 'games' = 1 is invalid; allowed: an integer >= 2$"):
        Small(games=1).finalize()
    with pytest.raises(ConfigError, match=r"^config key 'names' has 'alphazero'; allowed agent specs: random, greedy"):
        validate(Small(names=["greedy", "alphazero"]))


@pytest.mark.parametrize("prog", ["colony-zero", "colony-distill"])
def test_every_trainer_lists_every_key_in_the_same_format(prog: str, capsys) -> None:
    from colony_training.distill import train as distill_train
    from colony_training.zero import train as zero_train

    main = {"colony-zero": zero_train.main, "colony-distill": distill_train.main}[prog]
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert prog in out and _listed(out) and all(meaning for _, _, meaning in _listed(out).values())
