"""Reading the imports of a Python file, for the package map's rules (tests/test_import_rules.py) and
the task-author API's (tests/task_api/test_task_api.py)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_mlab"

#: The calls that import a module named by a string (a literal one is read like an import
#: statement) or load a file as a module.
IMPORT_CALLS = ("import_module", "__import__", "spec_from_file_location")


def module_name(path: Path, package: Path) -> str:
    relative = path.relative_to(package.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str, package: Path) -> bool:
    """Whether ``name`` is a module or subpackage of ``package`` (a file of it, not an attribute)."""
    parts = name.split(".")
    if parts[0] != package.name:
        return False
    path = package.parent.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(path: Path, package: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, wherever it stands: relative imports resolved
    (in a file of ``package``), ``from a import b`` as ``a.b`` where ``b`` is a module of the
    package, and the calls of :data:`IMPORT_CALLS` that name a module by a literal string."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path, package).split(".") if path.is_relative_to(package) else []
    if path.name != "__init__.py":
        here = here[:-1]  # the package the module is in
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join((here[:len(here) - node.level + 1] if node.level else []) +
                            ([node.module] if node.module else []))
            names = {f"{base}.{alias.name}" for alias in node.names}
            found.extend((node.lineno, name) for name in sorted(names) if is_module(name, package))
            if not all(is_module(name, package) for name in names):
                found.append((node.lineno, base))
        elif (isinstance(node, ast.Call) and _literal_module(node) is not None
              and _called(node) != "spec_from_file_location"):
            found.append((node.lineno, _literal_module(node)))
    return found


def _called(call: ast.Call) -> str:
    """The name of the function a call calls: ``importlib.import_module(...)`` -> ``import_module``."""
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""


def _literal_module(call: ast.Call) -> str | None:
    """The module an import call names by string literals (a relative name with a literal
    package resolved), else None."""
    if _called(call) not in IMPORT_CALLS or not call.args:
        return None
    name, *rest = call.args
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    if not name.value.startswith("."):
        return name.value
    anchor = rest[0] if rest else next((k.value for k in call.keywords if k.arg == "package"), None)
    if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
        return importlib.util.resolve_name(name.value, anchor.value)
    return None
