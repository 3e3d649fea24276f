"""The package map of docs/design-notes.md, enforced: each part of pytest_mlab imports only the
parts below it, and nothing outside the pytest glue imports pytest. Imports inside functions
count too: a deferred import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_mlab"

# Each part and what it may import, bottom up: data flows spec -> plan -> sandbox + environment ->
# agent -> trace -> grade -> result -> report, and no part reaches back up the chain.
GROUND = {"errors", "outcomes", "lazy"}  # every part may import these; they import no other part
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "outcomes": set(),
    "lazy": set(),
    "spec": {"errors", "outcomes"},
    "trace": {"errors", "outcomes", "spec"},
    "sandbox": {"errors", "outcomes", "spec"},
    "task_code": {"errors", "spec", "sandbox"},
    "data": {"errors", "spec", "task_code", "sandbox"},
    "llm": {"errors", "outcomes", "spec", "trace"},
    "env": {"errors", "outcomes", "spec", "trace", "sandbox", "llm"},
    "actions": {"errors", "outcomes", "spec", "trace", "sandbox", "llm", "env"},
    "agents": {"errors", "outcomes", "spec", "trace", "llm", "env", "actions"},
    "grading": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data"},
    "results": {"errors", "outcomes", "spec", "trace"},
    "runner": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "llm", "env", "actions",
               "agents", "grading", "results"},
    "cli": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "llm", "env", "actions",
            "agents", "grading", "results", "runner"},
    "plugin": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "llm", "env", "actions",
               "agents", "grading", "results", "runner"},
}
PYTEST_GLUE = {"plugin"}


def part_of(module: str) -> str:
    """``pytest_mlab.sandbox.local`` -> ``sandbox``; ``pytest_mlab`` itself -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_name(path: Path, package: Path) -> str:
    relative = path.relative_to(package.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, package: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, wherever it stands; relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path, package).split(".")
    if path.name != "__init__.py":
        here = here[:-1]  # the package the module is in
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
    return found


def violations(package: Path) -> list[str]:
    """Every import that breaks the rules, as ``file:line: part imports what``."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        part = part_of(module)
        if part not in ALLOWED:
            if part:
                problems.append(f"{path.relative_to(package.parent)}: '{part}' is not in the package map")
            continue
        for line, imported in imported_modules(path, package):
            top = imported.split(".")[0]
            if top in ("pytest", "_pytest", "pluggy", "xdist") and part not in PYTEST_GLUE:
                problems.append(f"{path.relative_to(package.parent)}:{line}: {part} imports {imported}; "
                                f"only the pytest glue (plugin/) may")
            if top != package.name:
                continue
            target = part_of(imported)
            if target and target != part and target not in ALLOWED[part] and not (
                    target in GROUND and part not in GROUND):
                problems.append(f"{path.relative_to(package.parent)}:{line}: {part} imports {imported}")
    return problems


def test_every_part_imports_only_what_the_map_allows():
    assert violations(PACKAGE) == []


def test_the_rules_catch_a_part_reaching_back_up_the_chain(tmp_path):
    package = tmp_path / "pytest_mlab"
    (package / "spec").mkdir(parents=True)
    (package / "results").mkdir()
    (package / "__init__.py").write_text("")
    (package / "spec" / "__init__.py").write_text("")
    (package / "spec" / "plan.py").write_text("def later():\n    from pytest_mlab.llm.providers import resolve\n")
    (package / "results" / "__init__.py").write_text("")
    (package / "results" / "junit.py").write_text("import pytest\nfrom ..grading import grader\n")
    assert violations(package) == [
        "pytest_mlab/results/junit.py:1: results imports pytest; only the pytest glue (plugin/) may",
        "pytest_mlab/results/junit.py:2: results imports pytest_mlab.grading",
        "pytest_mlab/spec/plan.py:2: spec imports pytest_mlab.llm.providers",
    ]
