"""No import cycles in `colony_env`, `colony_training` or `colony_web`, and the packages depend one way (docs/architecture.md).

The graph is built from the source with `ast`, counting every import a module can run,
including the ones inside functions (a lazy import hides a cycle, it does not remove it).
Imports under `if TYPE_CHECKING:` never run and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# installed package name -> its folder in the repository (`training/` installs as `colony_training`)
FOLDERS = {"colony_env": "colony_env", "colony_training": "training", "colony_web": "colony_web"}
PACKAGES = tuple(FOLDERS)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = {folder: pkg for pkg, folder in FOLDERS.items()}[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for folder in FOLDERS.values() for p in sorted((ROOT / folder).rglob("*.py"))}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in `tree`, in source order, except those under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            if _is_type_checking_block(child):
                for stmt in child.orelse:  # type: ignore[attr-defined]
                    visit(stmt)
            else:
                visit(child)

    visit(tree)
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted `name` that is one of our modules."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports.

    `from pkg import name` points at `pkg.name` when that is a module, else at `pkg`.
    A module does not count as importing its own parent packages: Python runs those
    first whatever the module says, so they cannot close a cycle through it.
    """
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            for name in names:
                target = _resolve(name, modules)
                if target is not None and target != mod and not mod.startswith(target + "."):
                    targets.add(target)
        graph[mod] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None when the graph is acyclic."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = GREY
        path.append(node)
        for nxt in sorted(graph[node]):
            if colour[nxt] == GREY:
                return path[path.index(nxt) :] + [nxt]
            if colour[nxt] == WHITE and (cycle := visit(nxt)):
                return cycle
        path.pop()
        colour[node] = BLACK
        return None

    for start in sorted(graph):
        if colour[start] == WHITE and (cycle := visit(start)):
            return cycle
    return None


def test_finder_sees_a_cycle_and_a_lazy_import() -> None:
    """The checker itself: a two-module cycle through a function-level import is found."""
    tree = ast.parse("import os\nif TYPE_CHECKING:\n    from .a import X\ndef f():\n    from .b import y\n")
    assert [type(n).__name__ for n in _imports(tree)] == ["Import", "ImportFrom"]
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_graph_covers_both_packages() -> None:
    graph = import_graph()
    assert "colony_env.engine" in graph and "colony_training.checkpoint" in graph
    # a known edge, so an empty graph cannot pass the acyclicity check below
    assert "colony_env.engine" in graph["colony_env.env"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    graph = import_graph()
    sub = {m: {t for t in ts if t.split(".")[0] == package} for m, ts in graph.items() if m.split(".")[0] == package}
    cycle = find_cycle(sub)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_colony_env_never_imports_training() -> None:
    graph = import_graph()
    offenders = {m: sorted(t for t in ts if not t.startswith("colony_env")) for m, ts in graph.items() if m.startswith("colony_env")}
    assert not {m: ts for m, ts in offenders.items() if ts}


def test_training_never_imports_the_web_app() -> None:
    """The web app is an application on the toolkit: it imports colony_training, never the other way round."""
    graph = import_graph()
    offenders = {m: sorted(t for t in ts if t.startswith("colony_web")) for m, ts in graph.items() if m.startswith("colony_training")}
    assert not {m: ts for m, ts in offenders.items() if ts}


def _source_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def _imports_by_string(tree: ast.AST) -> list[int]:
    """Lines of `tree` that import importlib or call `import_module` / `__import__`."""
    lines = []
    for node in ast.walk(tree):
        named = [a.name for a in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else []
        if isinstance(node, ast.ImportFrom) and node.module == "importlib":
            named = ["importlib"]
        called = isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id in ("__import__", "import_module"))
        )
        if called or any(n == "importlib" or n.startswith("importlib.") for n in named):
            lines.append(node.lineno)
    return lines


def test_no_import_by_string() -> None:
    """Every edge is an import statement the graph above sees: no `importlib.import_module` /
    `__import__` in the toolkit or the web app (issue 29: agent_specs and the web worker loaded
    the network agents by string)."""
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path in _source_files(FOLDERS["colony_training"], FOLDERS["colony_web"])
                 for line in _imports_by_string(ast.parse(path.read_text(), str(path)))]
    assert offenders == []


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize("package", ["colony_training.zero", "colony_training.eval", "colony_training.ppo"])
def test_zero_eval_and_ppo_do_not_import_the_rllib_package(package: str) -> None:
    """Ray plumbing both distributed paths need is `colony_training.cluster`; the RLlib trainer is
    only RLlib's (`colony_training.rllib`), so a zero, eval or PPO run never imports it."""
    graph = import_graph()
    offenders = {m: sorted(t for t in _reaches(graph, m) if t.startswith("colony_training.rllib"))
                 for m in graph if m == package or m.startswith(package + ".")}
    assert not {m: ts for m, ts in offenders.items() if ts}


TRAINERS = ("colony_training.rllib.selfplay", "colony_training.zero.train", "colony_training.zero.refit",
            "colony_training.distill.train")


def test_no_trainer_imports_the_ppo_trainer() -> None:
    """What trainers share (run directory, configs, evaluation, agents) lives in shared modules, not in
    `ppo/train.py`: no other trainer, nor anything they import, imports it."""
    graph = import_graph()
    assert set(TRAINERS) <= set(graph)  # the names above are real modules
    offenders = {t: True for t in TRAINERS if "colony_training.ppo.train" in _reaches(graph, t)}
    assert offenders == {}
    direct = sorted(m for m, ts in graph.items() if "colony_training.ppo.train" in ts and not m.startswith("colony_training.ppo"))
    assert direct == []


def test_the_bar_checks_see_a_violation() -> None:
    """The checkers themselves: a transitive edge is found, and an importlib call is spotted."""
    assert _reaches({"a": {"b"}, "b": {"c"}, "c": set()}, "a") == {"b", "c"}
    assert _imports_by_string(ast.parse("import importlib\nm = importlib.import_module('x')\n")) == [1, 2]
    assert _imports_by_string(ast.parse("from importlib import import_module\nimport_module('x')\n__import__('y')")) == [1, 2, 3]
    assert _imports_by_string(ast.parse("import os\ndef f():\n    from . import agents\n")) == []
