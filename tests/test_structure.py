"""The package's structure, read from its imports (every import statement, also those
inside functions): no import cycle inside ``pace_cert``, and the independent verifier
reaches no compressor code (driver, master problems, learners, settings, app)."""

from __future__ import annotations

import ast
from pathlib import Path

import pace_cert

ROOT = Path(pace_cert.__file__).parent
CLI = ROOT.parent / "cli"


def _module_name(path: Path) -> str:
    if path.is_relative_to(CLI):
        rel = ("cli", *path.relative_to(CLI).with_suffix("").parts)
    else:
        rel = path.relative_to(ROOT).with_suffix("").parts
    parts = [p for p in rel if p != "__init__"]
    return ".".join(["pace_cert", *parts])


def _graph() -> dict[str, set[str]]:
    """pace_cert module -> the pace_cert modules it imports."""
    files = [p for p in ROOT.rglob("*.py")]
    modules = {_module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                base = node.module
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    deps.add(full if full in modules else base)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        for d in graph.get(m, ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def test_no_import_cycle_inside_the_package():
    graph = _graph()
    cycles = sorted(m for m in graph if m in _reach(graph, m) and m != "pace_cert")
    assert cycles == []


def test_verify_reaches_no_compressor_code():
    reached = _reach(_graph(), "pace_cert.cert.verify")
    forbidden = ("pace_cert.driver", "pace_cert.master", "pace_cert.learners")
    bad = sorted(m for m in reached if m.startswith(forbidden))
    bad += sorted(m for m in reached if m in ("pace_cert.app", "pace_cert.settings"))
    assert bad == []
    assert "pace_cert.oracle.cpsat" in reached  # it does re-prove with its own CP-SAT models


def test_the_graph_sees_imports_inside_functions():
    """The checks above would pass vacuously if function-level imports were missed."""
    graph = _graph()
    assert "pace_cert.region.plausibility" in graph["pace_cert.driver.state"]


def test_every_package_is_installed():
    """pyproject's package list names every folder of pace_cert with Python modules
    (a wheel built from it must not lack one), and the CLI folder as pace_cert.cli."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["tool"]["setuptools"][
            "packages"
        ]
    )
    folders = {
        ".".join(("pace_cert", *p.relative_to(ROOT).parts))
        for p in [ROOT, *ROOT.rglob("*")]
        if p.is_dir() and (any(p.glob("*.py")) or p.name == "data") and p.name != "__pycache__"
    }
    assert listed == folders | {"pace_cert.cli"}
    assert (CLI / "main.py").exists()
