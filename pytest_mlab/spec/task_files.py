"""What task specs point at on disk, looked up once per session however many tasks share it."""

from __future__ import annotations

import ast
from pathlib import Path

from pytest_mlab.spec.memo import remembered


class TaskFiles:
    """Assets folders (resolved) and the top-level functions of code files (graders, data
    recipes), parsed once per version of a file (path, size, modification time)."""

    def __init__(self) -> None:
        self._assets: dict[tuple[Path, str], Path] = {}
        self._functions: dict[tuple[Path, int, int], frozenset[str] | SyntaxError] = {}

    def assets(self, root: Path, folder: str) -> Path:
        """``folder`` (as a spec writes it) resolved against the project root."""
        key = (root, folder)
        if key not in self._assets:
            self._assets[key] = (root / folder).resolve()
        return self._assets[key]

    def functions(self, file: Path) -> frozenset[str]:
        """Names of the functions ``file`` defines at top level; SyntaxError when it cannot be parsed."""
        stat = file.stat()
        key = (file, stat.st_size, stat.st_mtime_ns)
        return remembered(self._functions, key, lambda: top_level_functions(file), SyntaxError)


def top_level_functions(file: Path) -> frozenset[str]:
    """The functions ``file`` defines at top level: parsed, never imported."""
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    return frozenset(node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
