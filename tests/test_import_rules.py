"""The package map of docs/design-notes.md, enforced: each part of pytest_mlab imports only the
parts below it, and nothing outside the pytest glue imports pytest. Imports inside functions
count too: a deferred import is still a dependency. So does every way of writing one:
``from pytest_mlab import runner`` and ``from .. import grading`` name the part imported, and
``importlib.import_module("pytest_mlab.x")`` is an import of ``pytest_mlab.x``. An import whose
module is named only at run time cannot be checked here, so each must be declared, with why, in
:data:`DYNAMIC_IMPORTS`."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.imports import IMPORT_CALLS, PACKAGE, _called, _literal_module, imported_modules, module_name

# Each part and what it may import, bottom up: data flows spec -> plan -> sandbox + environment ->
# agent -> trace -> grade -> result -> report, and no part reaches back up the chain.
GROUND = {"errors", "outcomes", "lazy", "cache_home", "turns"}  # every part may import these; they import no other part
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "outcomes": set(),
    "lazy": set(),
    "cache_home": set(),
    "turns": set(),
    "in_sandbox": set(),
    # the agents' own Python (task_runtime/): which one, and building the locked one
    "task_runtime": {"errors"},
    "spec": {"errors", "outcomes"},
    "trace": {"errors", "outcomes", "spec"},
    "sandbox": {"errors", "outcomes", "spec", "task_runtime"},
    "task_code": {"errors", "spec", "sandbox"},
    "data": {"errors", "spec", "task_code", "sandbox", "trace"},  # trace: the data files' digests (data_digests.py)
    "llm": {"errors", "outcomes", "spec", "trace"},
    "env": {"errors", "outcomes", "spec", "trace", "sandbox", "llm"},
    "actions": {"errors", "outcomes", "spec", "trace", "sandbox", "llm", "env", "in_sandbox"},
    "agents": {"errors", "outcomes", "spec", "trace", "llm", "env", "actions"},
    "grading": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "in_sandbox"},
    "task_api": {"errors", "data", "grading"},  # what task code imports; nothing of ours imports it
    "results": {"errors", "outcomes", "spec", "trace", "task_runtime"},  # task_runtime: named in results.json
    # Ray placement (--mlab-ray): it runs what the runner hands it, so it imports no runner
    "cluster": {"errors", "outcomes", "spec", "trace", "sandbox", "results"},
    # runs of the original imported: read, written as our run folders, graded, given result rows
    "original_logs": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "grading", "results"},
    "runner": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "llm", "env", "actions",
               "agents", "grading", "results", "cluster"},
    "cli": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "llm", "env", "actions",
            "agents", "grading", "results", "runner", "cluster", "task_runtime", "original_logs"},
    "plugin": {"errors", "outcomes", "spec", "trace", "sandbox", "task_code", "data", "llm", "env", "actions",
               "agents", "grading", "results", "runner", "cluster", "task_runtime"},
}
PYTEST_GLUE = {"plugin"}
#: Parts whose code runs inside a run's sandbox, where pytest_mlab is not importable: they import
#: the standard library only (not even the ground parts).
IN_SANDBOX = {"in_sandbox"}

#: Imports whose module is named only at run time, keyed by (importing module, the call as
#: written), each with why it is no edge back up the map. An undeclared one fails the rules.
DYNAMIC_IMPORTS: dict[tuple[str, str], str] = {
    ("pytest_mlab.lazy", "importlib.import_module(f'{package}.{home}')"):
        "a package's own submodules: every package passes its own __name__ to lazy_attributes "
        "(test_lazy_attributes_stay_inside_their_package)",
    ("pytest_mlab.sandbox.registry", "importlib.import_module(module)"):
        "the sandbox part's own backend modules, loaded when a backend is first used (every built-in "
        "entry of the registry's table names a module of pytest_mlab.sandbox: "
        "test_the_built_in_backends_live_in_the_sandbox_part)",
    ("pytest_mlab.spec.refs", "importlib.import_module(module_name)"):
        "the 'module:attr' a spec names (an action's function, an agent's class): the spec's author "
        "picks it, and the part that asked for the object uses it; spec/ depends on none of them",
    ("pytest_mlab.task_code", "importlib.util.spec_from_file_location(f'mlab_task_{path.stem}', path)"):
        "a task's own file (its grader, its data recipe), in the contained process that calls it",
    ("pytest_mlab.grading.mlagentbench", "importlib.util.spec_from_file_location('eval', scripts / 'eval.py')"):
        "an MLAgentBench folder's scripts/eval.py, the grader of tasks made from such folders",
    ("pytest_mlab.in_sandbox.mlab_measure", "importlib.import_module(name)"):
        "the agent's module, imported by a measure script inside the sandbox: not part of this package",
}


def part_of(module: str) -> str:
    """``pytest_mlab.sandbox.local`` -> ``sandbox``; ``pytest_mlab`` itself -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def dynamic_imports(path: Path) -> list[tuple[int, str]]:
    """(line, call as written) of every import in the file whose module is named at run time,
    and of every file it loads as a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _called(node) in IMPORT_CALLS
            and (_literal_module(node) is None or _called(node) == "spec_from_file_location")]


def violations(package: Path, declared: dict[tuple[str, str], str] = DYNAMIC_IMPORTS) -> list[str]:
    """Every import that breaks the rules, as ``file:line: part imports what``."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        part = part_of(module)
        shown = path.relative_to(package.parent)
        if part not in ALLOWED:
            if part:
                problems.append(f"{shown}: '{part}' is not in the package map")
            continue
        for line, imported in imported_modules(path, package):
            top = imported.split(".")[0]
            if top in ("pytest", "_pytest", "pluggy", "xdist") and part not in PYTEST_GLUE:
                problems.append(f"{shown}:{line}: {part} imports {imported}; only the pytest glue (plugin/) may")
            if part in IN_SANDBOX and top not in sys.stdlib_module_names and top != "__future__":
                problems.append(f"{shown}:{line}: {part} imports {imported}; code that runs inside the sandbox "
                                f"imports the standard library only")
                continue
            if top != package.name:
                continue
            target = part_of(imported)
            if target and target != part and target not in ALLOWED[part] and not (
                    target in GROUND and part not in GROUND):
                problems.append(f"{shown}:{line}: {part} imports {imported}")
        for line, call in dynamic_imports(path):
            if (module, call) not in declared:
                problems.append(f"{shown}:{line}: {part} imports a module named at run time, {call}; "
                                f"declare it in DYNAMIC_IMPORTS with why it is no back edge")
    return problems


def test_every_part_imports_only_what_the_map_allows():
    assert violations(PACKAGE) == []


def test_every_declared_dynamic_import_is_still_there():
    present = {(module_name(path, PACKAGE), call) for path in PACKAGE.rglob("*.py")
               for _line, call in dynamic_imports(path)}
    assert sorted(set(DYNAMIC_IMPORTS) - present) == []


def test_lazy_attributes_stay_inside_their_package():
    """What :data:`DYNAMIC_IMPORTS` says of ``pytest_mlab.lazy``: each caller names itself."""
    callers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _called(node) == "lazy_attributes":
                callers.append((path.name, ast.unparse(node.args[0])))
    assert callers and all(first == "__name__" for _name, first in callers), callers


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``pytest_mlab`` under ``tmp_path`` with these files (and their ``__init__.py``)."""
    package = tmp_path / "pytest_mlab"
    for relative, text in files.items():
        path = package / relative
        for folder in [package, *reversed(path.relative_to(package).parents[:-1])]:
            (package / folder).mkdir(parents=True, exist_ok=True)
            (package / folder / "__init__.py").touch()
        path.write_text(text)
    return package


def test_the_rules_catch_a_part_reaching_back_up_the_chain(tmp_path):
    package = _package(tmp_path, {
        "spec/plan.py": "def later():\n    from pytest_mlab.llm.providers import resolve\n",
        "results/junit.py": "import pytest\nfrom ..grading import grader\n",
        "grading/grader.py": "",
        "in_sandbox/helper.py": "import json\nimport numpy\nfrom pytest_mlab.errors import MlabError\n",
    })
    assert violations(package) == [
        "pytest_mlab/in_sandbox/helper.py:2: in_sandbox imports numpy; code that runs inside the sandbox imports "
        "the standard library only",
        "pytest_mlab/in_sandbox/helper.py:3: in_sandbox imports pytest_mlab.errors; code that runs inside the "
        "sandbox imports the standard library only",
        "pytest_mlab/results/junit.py:1: results imports pytest; only the pytest glue (plugin/) may",
        "pytest_mlab/results/junit.py:2: results imports pytest_mlab.grading.grader",
        "pytest_mlab/spec/plan.py:2: spec imports pytest_mlab.llm.providers",
    ]


def test_the_rules_see_every_way_of_writing_an_import(tmp_path):
    package = _package(tmp_path, {
        "runner.py": "",
        "grading/grader.py": "",
        "llm/providers.py": "",
        "spec/package_level.py": "from pytest_mlab import runner, __version__\n",
        "spec/relative.py": "from .. import grading\n",
        "spec/literal.py": "import importlib\nimportlib.import_module('pytest_mlab.llm.providers')\n",
        "spec/literal_relative.py": "from importlib import import_module\nimport_module('..llm', 'pytest_mlab.spec')\n",
        "spec/dynamic.py": "import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n",
        "spec/by_path.py": "import importlib.util\nimportlib.util.spec_from_file_location('x', 'x.py')\n",
        "spec/allowed.py": "from pytest_mlab import errors\nfrom . import plan\nfrom pytest_mlab.spec import plan\n",
        "spec/plan.py": "",
    })
    assert violations(package) == [
        "pytest_mlab/spec/by_path.py:2: spec imports a module named at run time, "
        "importlib.util.spec_from_file_location('x', 'x.py'); declare it in DYNAMIC_IMPORTS with why it is no "
        "back edge",
        "pytest_mlab/spec/dynamic.py:4: spec imports a module named at run time, importlib.import_module(name); "
        "declare it in DYNAMIC_IMPORTS with why it is no back edge",
        "pytest_mlab/spec/literal.py:2: spec imports pytest_mlab.llm.providers",
        "pytest_mlab/spec/literal_relative.py:2: spec imports pytest_mlab.llm",
        "pytest_mlab/spec/package_level.py:1: spec imports pytest_mlab.runner",
        "pytest_mlab/spec/relative.py:1: spec imports pytest_mlab.grading",
    ]
    declared = {("pytest_mlab.spec.dynamic", "importlib.import_module(name)"): "a test's reason",
                ("pytest_mlab.spec.by_path", "importlib.util.spec_from_file_location('x', 'x.py')"): "likewise"}
    assert not [problem for problem in violations(package, declared) if "run time" in problem]


def test_the_built_in_backends_live_in_the_sandbox_part():
    from pytest_mlab.sandbox import registry

    # an entry is "module:Class" until its backend is first used, then the class itself
    table = vars(registry)["_BACKENDS"]
    modules = [entry.partition(":")[0] if isinstance(entry, str) else entry.__module__
               for name, entry in table.items() if name in ("local", "bwrap", "docker")]
    assert len(modules) == 3 and all(module.startswith("pytest_mlab.sandbox.") for module in modules), modules
