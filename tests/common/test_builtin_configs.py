"""Built-in configs by name (`--config quickstart`) and `colony-config list|show|write`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from colony_training.config import ConfigError, load_config, resolve_config_path
from colony_training.ppo.config import TrainConfig
from colony_training.config_cli import main as config_main
from colony_training.shipped import builtin_configs

REPO_CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_builtin_configs_are_the_repositorys_configs() -> None:
    """One copy in git: the names are exactly the YAML files of configs/."""
    assert set(builtin_configs()) == {p.stem for p in REPO_CONFIGS.glob("*.yaml")}
    assert {"quickstart", "zero_quickstart", "rllib_ppo"} <= set(builtin_configs())


def test_a_name_loads_from_any_folder(tmp_path: Path) -> None:
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        cfg = load_config("quickstart", cls=TrainConfig)
    finally:
        os.chdir(here)
    assert cfg.run_name == "quickstart"
    assert cfg == load_config(REPO_CONFIGS / "quickstart.yaml", cls=TrainConfig)


def test_an_existing_file_wins_over_a_name(tmp_path: Path) -> None:
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        Path("quickstart").write_text((REPO_CONFIGS / "quickstart.yaml").read_text().replace("run_name: quickstart",
                                                                                             "run_name: mine"))
        assert load_config("quickstart", cls=TrainConfig).run_name == "mine"
    finally:
        os.chdir(here)


@pytest.mark.parametrize("given, words", [("quickstrat", "no built-in config named 'quickstrat'"),
                                          ("nope/x.yaml", "does not exist")])
def test_unknown_names_list_the_builtin_ones(given: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_config_path(given)
    assert words in str(err.value) and "quickstart" in str(err.value) and "\n" not in str(err.value)


def test_list_show_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert config_main(["list"]) == 0
    rows = capsys.readouterr().out.splitlines()
    commands = {r.split()[0]: r.split()[1] for r in rows}
    assert commands["quickstart"] == "colony-train" and commands["zero_quickstart"] == "colony-zero"
    assert commands["rllib_ppo"] == "colony-train-rllib" and len(rows) == len(builtin_configs())

    assert config_main(["show", "zero_quickstart"]) == 0
    assert capsys.readouterr().out == (REPO_CONFIGS / "zero_quickstart.yaml").read_text()

    target = tmp_path / "mine.yaml"
    assert config_main(["write", "quickstart", str(target)]) == 0
    assert target.read_text() == (REPO_CONFIGS / "quickstart.yaml").read_text()
    assert f"colony-train --config {target}" in capsys.readouterr().out
    target.write_text("run_name: edited\n")
    assert config_main(["write", "quickstart", str(target)]) == 2  # never overwritten
    assert target.read_text() == "run_name: edited\n"
    err = capsys.readouterr().err.strip()
    assert err.startswith("colony-config: error: ") and "exists" in err and "\n" not in err
    assert config_main(["show", "nope"]) == 2
    assert "no built-in config named 'nope'" in capsys.readouterr().err
