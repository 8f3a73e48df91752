"""A command whose optional extra is missing says so in one line, with the pip command that works
for an installed package, `--help` included; exit status 2, no traceback."""

from __future__ import annotations

import sys

import pytest

import colony_web
from colony_training import rllib


@pytest.mark.parametrize(
    "entry, prog, extra, blocked",
    [(rllib.main, "colony-train-rllib", "rllib", "ray"), (rllib.export_main, "colony-rllib-export", "rllib", "ray"),
     (colony_web.main, "colony-web", "web", "starlette")],
)
@pytest.mark.parametrize("argv", [["--help"], []])
def test_missing_extra_is_one_line(entry, prog: str, extra: str, blocked: str, argv: list[str],
                                   monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in [m for m in sys.modules if m == blocked or m.startswith(blocked + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, blocked, None)  # `import ray` now raises ImportError, as without the extra
    assert entry(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert lines[0].startswith(f"{prog}: error: ") and f'pip install "colony-rl[{extra}]"' in lines[0]
    assert "-e" not in lines[0].split("pip install")[1] and "Traceback" not in captured.err


def test_openspiel_module_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "colony_env.openspiel", raising=False)
    monkeypatch.setitem(sys.modules, "pyspiel", None)
    with pytest.raises(ImportError) as err:
        import colony_env.openspiel  # noqa: F401
    assert 'pip install "colony-rl[openspiel]"' in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("brk", list("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"))
def test_report_error_keeps_a_quoted_line_break_on_its_one_line(capsys, brk):
    """A message quoting a user's text (a record field, a path) stays one `prog: error:` line."""
    from colony_training.cli import report_error

    assert report_error("colony-replay", f"the record says {brk} by ply_limit") == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("colony-replay: error: the record says \\")
    assert repr(brk)[1:-1] in err  # shown escaped, so the reader sees what the file held
