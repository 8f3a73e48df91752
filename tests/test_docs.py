"""The documentation a clone carries: every cited rule number has a heading in docs/rules.md,
and every Markdown link resolves inside the repository (files and #anchors)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules.md"
# Files whose text can cite a rule: code, tests, docs, configs, the web app.
CITING_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".js", ".html", ".txt", ".cfg"}
# R4.2.4, R10, ... but not R2D2-like words or version strings such as 'CR1.2'.
RULE_REF = re.compile(r"(?<![\w.])R(\d{1,2}(?:\.\d+)*)(?![\w])")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
RULE_HEADING = re.compile(r"^R(\d{1,2}(?:\.\d+)*)\s")
# [text](target) and ![alt](target); a target may carry a "title"
MD_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
URL_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def repo_files() -> list[Path]:
    """Tracked files plus new ones not ignored: what a commit of the tree would hold."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:  # not a git checkout (an sdist): walk the tree instead
        return [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts]
    return [ROOT / line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(md: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    in_fence = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        m = None if in_fence else HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def rule_headings() -> set[str]:
    numbers = set()
    for line in RULES.read_text(encoding="utf-8").splitlines():
        m = HEADING.match(line)
        if m and (r := RULE_HEADING.match(m.group(1) + " ")):
            numbers.add(r.group(1))
    return numbers


def test_rules_book_has_every_top_level_rule() -> None:
    numbers = rule_headings()
    assert {str(n) for n in range(1, 12)} <= numbers
    assert {"4.2.1", "4.2.6", "6.2.4", "11.11"} <= numbers


def test_every_cited_rule_number_has_a_heading() -> None:
    numbers = rule_headings()
    missing: dict[str, list[str]] = {}
    for path in repo_files():
        if path.suffix not in CITING_SUFFIXES:
            continue
        for n in RULE_REF.findall(path.read_text(encoding="utf-8", errors="replace")):
            if n not in numbers:
                missing.setdefault(f"R{n}", []).append(str(path.relative_to(ROOT)))
    assert not missing, "rule numbers cited but not a heading in docs/rules.md: " + repr(missing)


def test_nothing_points_to_a_rule_book_outside_the_repository() -> None:
    """The rules live in docs/rules.md; the spec file the project started from is not in a clone."""
    outside = "RULES" + ".md"  # split so that this file does not match itself
    hits = [str(p.relative_to(ROOT)) for p in repo_files()
            if p.suffix in CITING_SUFFIXES and outside in p.read_text(encoding="utf-8", errors="replace")]
    assert not hits, f"these files cite {outside}, which a clone does not have; cite docs/rules.md: {hits}"


def test_docs_index_names_every_page() -> None:
    """docs/README.md links every page in docs/, so no page is lost to a reader."""
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in links(index)}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}
    assert not pages - linked, f"pages not in docs/README.md: {sorted(p.name for p in pages - linked)}"


# `colony_training.eval.agent_specs.make_agent`, `python -m colony_training.bench_zero`, ...
DOTTED = re.compile(r"(?<![\w.])((?:colony_env|colony_training|colony_web)(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
# files of the repository named in docs and code: training/ppo/train.py, docs/zero.md, configs/zero.yaml, ...
# (`git show COMMIT:path` names a file of an old commit, so a path after ':' is not checked)
REPO_PATH = re.compile(r"(?<![\w./:-])((?:colony_env|training|colony_web|tests|docs|configs|examples)"
                       r"/[\w/.-]*\w\.(?:py|md|yaml|pt|png|json|js|html|css))\b")
PACKAGE_FOLDERS = {"colony_env": "colony_env", "colony_training": "training", "colony_web": "colony_web",
                   "colony_training.checkpoints": "checkpoints", "colony_training.configs": "configs"}  # + package data


def _is_module(dotted: str) -> bool:
    if dotted in PACKAGE_FOLDERS:
        return (ROOT / PACKAGE_FOLDERS[dotted]).is_dir()
    first, *rest = dotted.split(".")
    base = ROOT / PACKAGE_FOLDERS[first] / Path(*rest)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _names_that_do_not_exist(text: str) -> set[str]:
    """Dotted names of the project's packages whose module, or whose first name after it, is not there."""
    import importlib

    bad = set()
    for dotted in set(DOTTED.findall(text)):
        parts = dotted.split(".")
        n = max((k for k in range(1, len(parts) + 1) if _is_module(".".join(parts[:k]))), default=0)
        if n == 0:
            bad.add(dotted)
            continue
        if n == len(parts) or parts[n].startswith("__"):
            continue
        name = re.sub(r"__mutmut_\d+$", "", parts[n].removeprefix("x_")).rstrip("_")  # mutmut's names of a kernel's mutants
        module = importlib.import_module(".".join(parts[:n]))
        if not hasattr(module, name) and not hasattr(module, parts[n]):
            bad.add(dotted)
    return bad


def test_docs_and_messages_name_only_modules_that_exist() -> None:
    """No doc, docstring or message names a module of ours (or a name in it) that is not there."""
    bad: dict[str, set[str]] = {}
    for path in repo_files():
        if path.suffix in {".py", ".md", ".yaml", ".toml", ".js", ".html"} and "tests/scripts" not in str(path):
            found = _names_that_do_not_exist(path.read_text(encoding="utf-8", errors="replace"))
            if found:
                bad[str(path.relative_to(ROOT))] = found
    assert not bad, f"names of modules that do not exist: {bad}"


def test_files_named_in_docs_and_code_exist() -> None:
    """A path of the repository named in a doc or in code (`training/ppo/train.py`) is there."""
    tracked = {str(p.relative_to(ROOT)) for p in repo_files()}
    bad: dict[str, set[str]] = {}
    for path in repo_files():
        if path.suffix in {".py", ".md", ".yaml", ".toml", ".js", ".html"} and path.parts[len(ROOT.parts)] != "tests":
            missing = {m for m in REPO_PATH.findall(path.read_text(encoding="utf-8", errors="replace"))
                       if m not in tracked and not (ROOT / m).exists()}
            if missing:
                bad[str(path.relative_to(ROOT))] = missing
    assert not bad, f"files named but not in the repository: {bad}"


def test_nothing_cites_files_outside_the_repository() -> None:
    """Design notes a clone does not have are not cited; the project's own are in docs/."""
    outside = ("ARCHITECTURE" + ".md", "STYLE" + ".md", "DEVELOPERS" + ".md")  # split: this file must not match
    hits = {str(p.relative_to(ROOT)): [o for o in outside if o in p.read_text(encoding="utf-8", errors="replace")]
            for p in repo_files() if p.suffix in CITING_SUFFIXES}
    assert not {k: v for k, v in hits.items() if v}


def test_illegal_action_messages_name_their_rule() -> None:
    from colony_env import notation

    no_rule = {code: why for code, why in notation._WHY.items() if not RULE_REF.search(why)}
    assert not no_rule


def links(md: Path) -> list[str]:
    text = md.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    text = re.sub(r"`[^`\n]*`", "", text)  # nor does inline code
    return MD_LINK.findall(text)


@pytest.mark.parametrize("md", sorted(p for p in repo_files() if p.suffix == ".md"), ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_links_stay_in_the_repository(md: Path) -> None:
    bad = []
    for target in links(md):
        if URL_SCHEME.match(target):  # a web address: not a file of some other checkout
            if target.startswith("file:"):
                bad.append(f"{target} (a local file outside the repository)")
            continue
        path_part, _, fragment = target.partition("#")
        dest = (md.parent / path_part).resolve() if path_part else md
        if ROOT not in dest.parents and dest != ROOT:
            bad.append(f"{target} (leaves the repository)")
        elif not dest.exists():
            bad.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            bad.append(f"{target} (no heading #{fragment} in {dest.relative_to(ROOT)})")
    assert not bad, f"{md.relative_to(ROOT)}: " + "; ".join(bad)


# --- the worked examples in docs/rules.md, re-computed by the engine ---------------------------
def _position(pieces: list[tuple[str, str]], **fields: object):
    import colony_env as ce

    rows = [[".."] * 10 for _ in range(10)]
    for cell, code in pieces:
        r, c = divmod(ce.parse_cell(cell), 10)
        rows[r][c] = code
    d = {"board": ["".join(row) for row in rows], "to_move": "red", "unlocked": True, "finished": None,
         "grace_left": 0, "ply": 10, "passes": 0, "max_plies": 400}
    d.update(fields)
    return ce.GameState.from_dict(d)


def test_r10_displacement_example() -> None:
    import colony_env as ce

    s = _position([("g6", "r1"), ("f5", "r2"), ("g5", "b3"), ("g4", "b1"), ("c4", "r4")])
    pushes = sorted(ce.action_to_str(int(a), s).split(">")[1] for a in ce.legal_actions(s) if 3200 <= a < 16000)
    assert pushes == sorted(["h5", "i6", "i4", "h3", "i2", "g2", "f3", "e2", "e4", "e6"])
    assert ce.parse_action("c4-g4>h3", s) == 11174
    with pytest.raises(ce.IllegalActionError, match=r"\(R4\.2\.4\)"):
        ce.apply_action(s, ce.parse_action("c4-g4>f4", s))
    with pytest.raises(ce.IllegalActionError, match=r"\(R4\.2\.3\)"):
        ce.apply_action(s, ce.parse_action("c4-g4>g5", s))
    after = ce.apply_action(s, 11174)
    assert [len(c.cells) for c in ce.colonies(after)] == [4]


def test_r7_tiebreak_example() -> None:
    import colony_env as ce

    a = [("b9", "r2"), ("c9", "b1"), ("d9", "r2")]
    c = [("c5", "r1"), ("d5", "b2"), ("e5", "r1")]
    s = _position(a + [("g9", "b2"), ("h9", "r1"), ("i9", "b3")] + c, passes=2, ply=120)
    totals = sorted((col.red_total + col.blue_total, str(col.controller)) for col in ce.colonies(s))
    assert totals == [(4, "None"), (5, "red"), (6, "blue")]
    assert s.end_reason == "passes" and s.winner == ce.RED and s.rewards() == (1.0, -1.0)
    assert "winner: red" in str(s)  # the text board once called every red win a draw (RED == 0 is falsy)
    draw = _position(a + [("g9", "b2"), ("h9", "r1"), ("i9", "b2")] + c, passes=2, ply=120)
    assert draw.winner is None and draw.rewards() == (0.0, 0.0) and "winner: draw" in str(draw)


def test_r8_and_r9_examples() -> None:
    import json

    import colony_env as ce

    s = ce.new_game(seed=0)
    ids = [ce.parse_action(t, s) for t in ("c10-d10", "c10-c7", "pass")]
    assert ids == [72, 82, 16000] and set(ids[:2]) <= set(ce.legal_actions(s).tolist())
    text = RULES.read_text(encoding="utf-8")
    block = text[text.index("```json") + len("```json"):]
    assert json.loads(block[: block.index("```")]) == s.to_dict()


def test_readme_is_a_short_guide() -> None:
    """The README is a user's guide of at most 250 lines; research notes and histories go to docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move details to docs/"
