"""Reading one spec file, and merging a spec with the specs it ``extends:``.

What a merged spec still needs is checked against its kind's schema here too; the checks the
schema cannot make belong to the builders (builders.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.schemas import schema_problems
from pytest_mlab.spec.yaml_lines import LineMap, load_yaml_with_lines

WantedBy = tuple[str, int | None, str]  # file, line and key of what names another spec


def display_path(path: Path) -> str:
    """Path as the user should see it in messages: relative to the current directory when inside."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


@dataclass
class RawSpec:
    """One file's parsed content before ``extends`` is resolved."""

    data: dict[str, Any]
    lines: LineMap
    display: str
    path: Path

    @cached_property
    def real_path(self) -> Path:
        """The file itself (symlinks resolved): what tells two specs apart."""
        return self.path.resolve()

    @property
    def name(self) -> str | None:
        """The spec's name; None when it has none usable (the schema says why)."""
        name = self.data.get("name")
        return name if isinstance(name, str) and name else None


def read_raw(path: Path, kind: str, homes: Mapping[str, Path] | None = None) -> RawSpec:
    """The file's data, when it is a spec of ``kind``. ``homes``: the folder of each kind, for the
    hint that moves a spec of another kind where it belongs."""
    display = display_path(path)
    data, lines = load_yaml_with_lines(path, display)
    if not isinstance(data, dict):
        raise SpecError(display, lines.locate((), display)[1], "", f"a {kind} spec must be a mapping of keys, not {type(data).__name__}")
    found = data.get("kind")
    if "kind" not in data:
        raise SpecError(display, lines.locate((), display)[1], "kind",
                        f"the 'kind:' line is missing; a {kind} spec starts with 'kind: {kind}'")
    if found != kind:
        where = lines.locate(("kind",), display)[1]
        home = (homes or {}).get(found) if isinstance(found, str) else None
        hint = f"; this is {'an' if found[0] in 'AEIOU' else 'a'} {found} spec: move it to {display_path(home)}/" \
            if home is not None else ""
        raise SpecError(display, where, "kind", f"expected 'kind: {kind}', found {found!r}{hint}")
    return RawSpec(data, lines, display, path)


def nameless(raw: RawSpec) -> SpecError:
    """A spec without a name cannot be found by name: what a library says of its file."""
    line = raw.lines.locate(("name",), raw.display)[1]
    return SpecError(raw.display, line, "name", "every spec needs a 'name:' string")


def merge_extends(raw: RawSpec, kind: str, find: Callable[[str, WantedBy], RawSpec]) -> tuple[dict[str, Any], LineMap]:
    """Apply ``extends:`` chains (parents first), detecting cycles; the result is not validated.
    ``find``: the spec of ``kind`` a name stands for, or the SpecError at the line that names it."""
    chain = [raw]
    seen = {raw.real_path}
    while "extends" in chain[-1].data:
        child = chain[-1]
        parent_name = child.data["extends"]
        where = (child.display, child.lines.locate(("extends",), child.display)[1], "extends")
        if not isinstance(parent_name, str):
            raise SpecError(*where, f"must be the name of another {kind}, not {parent_name!r}")
        parent = find(parent_name, where)
        if parent.real_path in seen:
            names = " -> ".join(spec.name or spec.display for spec in chain + [parent])
            raise SpecError(*where, f"'extends' makes a cycle: {names}")
        seen.add(parent.real_path)
        chain.append(parent)
    data: dict[str, Any] = {}
    lines = LineMap()
    for spec in reversed(chain):
        _merge_into(data, spec.data)
        lines = lines.merged_with(spec.lines)
    data.pop("extends", None)
    if "name" in raw.data:
        data["name"] = raw.data["name"]
    else:
        data.pop("name", None)  # a name is never inherited
    return data, lines


def schema_checked(raw: RawSpec, kind: str, data: dict[str, Any], lines: LineMap) -> Problems:
    """What the schema of ``kind`` rejects in the merged ``data``, recorded as problems (not raised yet)."""
    problems = Problems(raw.display, lines)
    if raw.name is None:
        problems.reject((("name",),), nameless(raw))
    problems.reject_all(schema_problems(kind, data, lines, raw.display))
    return problems


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; lists and scalars in ``override`` replace those in ``base``."""
    return _merge_into(_copy_data(base), override)


def _merge_into(target: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """:func:`deep_merge` into ``target`` itself, which must be a copy nothing else holds."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = _copy_data(value)
    return target


def _copy_data(value: Any) -> Any:
    """A deep copy of loaded YAML: only its mappings and lists can change, every scalar it holds
    (str, numbers, bool, None, dates, bytes) is immutable. Several times faster than deepcopy."""
    if isinstance(value, dict):
        return {key: _copy_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_data(item) for item in value]
    return value
