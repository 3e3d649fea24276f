"""Find, load, merge (``extends:``), validate and type-check specs.

A :class:`SpecLibrary` holds every spec of one kind found in some folders. It reads files lazily
and remembers failures per file, so one broken spec never stops the others from loading.
"""

from __future__ import annotations

import ast
import difflib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Hashable, TypeVar

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.suffixes import SPEC_SUFFIXES
from pytest_mlab.spec.agent_options import check_agent_options
from pytest_mlab.spec.schemas import validate
from pytest_mlab.spec.units import parse_duration, parse_size
from pytest_mlab.spec.yaml_lines import LineMap, dotted, load_yaml_with_lines

T = TypeVar("T")


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


def read_raw(path: Path, kind: str) -> RawSpec:
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
        raise SpecError(display, where, "kind", f"expected 'kind: {kind}', found {found!r}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(display, lines.locate(("name",), display)[1], "name", "every spec needs a 'name:' string")
    return RawSpec(data, lines, display, path)


def remembered(cache: dict, key: Hashable, compute: Callable[[], T], errors: type[Exception]) -> T:
    """``compute()`` once per ``key``; an error of type ``errors`` is kept and raised again, like a result."""
    if key not in cache:
        try:
            cache[key] = compute()
        except errors as exc:
            cache[key] = exc
    found = cache[key]
    if isinstance(found, errors):
        raise found
    return found


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


class SpecLibrary:
    """Every spec of one ``kind`` in ``folders``, by name."""

    def __init__(self, kind: str, folders: list[Path]) -> None:
        self.kind = kind
        self.folders = [Path(folder) for folder in folders]
        self._files: dict[str, list[RawSpec]] | None = None
        self._unreadable: list[SpecError] = []
        self._read: dict[str, RawSpec | SpecError] = {}

    def read(self, path: Path) -> RawSpec:
        """The spec in ``path``, parsed once however often it is asked for (errors too)."""
        key = os.path.abspath(path)  # with the current directory, this fixes the display path
        return remembered(self._read, key, lambda: read_raw(path, self.kind), SpecError)

    def _index(self) -> dict[str, list[RawSpec]]:
        if self._files is None:
            self._files = {}
            for folder in self.folders:
                if not folder.is_dir():
                    continue
                for path in sorted(folder.iterdir()):
                    if path.suffix not in SPEC_SUFFIXES or not path.is_file():
                        continue
                    try:
                        raw = self.read(path)
                    except SpecError as exc:
                        self._unreadable.append(exc)
                        continue
                    self._files.setdefault(raw.data["name"], []).append(raw)
        return self._files

    def names(self) -> list[str]:
        return sorted(self._index())

    def unreadable(self) -> list[SpecError]:
        """Files in the folders that could not be read as specs of this kind."""
        self._index()
        return list(self._unreadable)

    def add(self, raw: RawSpec) -> None:
        """Make a file outside the folders (a task collected by pytest) known by name."""
        entries = self._index().setdefault(raw.data["name"], [])
        if not any(entry.real_path == raw.real_path for entry in entries):
            entries.append(raw)

    def raw(self, name: str, *, wanted_by: tuple[str, int | None, str] | None = None) -> RawSpec:
        entries = self._index().get(name)
        if not entries:
            raise self.unknown(name, wanted_by)
        self.check_unique(entries[0])
        return entries[0]

    def check_unique(self, raw: RawSpec) -> None:
        entries = self._index().get(raw.data["name"], [])
        others = [entry for entry in entries if entry.real_path != raw.real_path]
        if others:
            other = others[0]
            raise SpecError(raw.display, raw.lines.locate(("name",), raw.display)[1], "name",
                            f"duplicate {self.kind} name '{raw.data['name']}': also defined in "
                            f"{other.display}:{other.lines.locate(('name',), other.display)[1]}; names must be unique")

    def unknown(self, name: str, wanted_by: tuple[str, int | None, str] | None) -> SpecError:
        known = self.names()
        guess = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean '{guess[0]}'? " if guess else ""
        folders = ", ".join(display_path(folder) for folder in self.folders)
        message = f"unknown {self.kind.lower()} '{name}'; {hint}known: {', '.join(known) or 'none'} (from {folders})"
        broken = self.unreadable()
        if broken:
            message += "; these files could not be read: " + "; ".join(err.render_one() for err in broken)
        if wanted_by:
            return SpecError(wanted_by[0], wanted_by[1], wanted_by[2], message)
        return SpecError(folders, None, "", message)

    def resolve(self, raw: RawSpec) -> tuple[dict[str, Any], LineMap]:
        """Apply ``extends:`` chains (parents first), detecting cycles, then validate the result."""
        chain = [raw]
        seen = {raw.real_path}
        while "extends" in chain[-1].data:
            child = chain[-1]
            parent_name = child.data["extends"]
            where = (child.display, child.lines.locate(("extends",), child.display)[1], "extends")
            if not isinstance(parent_name, str):
                raise SpecError(*where, f"must be the name of another {self.kind}, not {parent_name!r}")
            parent = self.raw(parent_name, wanted_by=where)
            if parent.real_path in seen:
                names = " -> ".join(spec.data["name"] for spec in chain + [parent])
                raise SpecError(*where, f"'extends' makes a cycle: {names}")
            seen.add(parent.real_path)
            chain.append(parent)
        data: dict[str, Any] = {}
        lines = LineMap()
        for spec in reversed(chain):
            _merge_into(data, spec.data)
            lines = lines.merged_with(spec.lines)
        data.pop("extends", None)
        data["name"] = raw.data["name"]
        validate(self.kind, data, lines, raw.display)
        return data, lines


# ---------------------------------------------------------------- building typed specs


def build_action(raw: RawSpec, library: SpecLibrary) -> models.ActionSpec:
    data, _lines = library.resolve(raw)
    arguments = tuple(
        models.ArgumentSpec(name=name, type=arg["type"], description=arg["description"],
                            default=arg.get("default"), required="default" not in arg)
        for name, arg in data.get("arguments", {}).items()
    )
    return models.ActionSpec(name=data["name"], description=data["description"].strip(), arguments=arguments,
                             returns=data["returns"].strip(), implementation=data["implementation"],
                             source=raw.display, primitive=data.get("primitive", True),
                             ends_run=data.get("ends_run", False))


def build_agent(raw: RawSpec, library: SpecLibrary, actions: SpecLibrary) -> models.AgentSpec:
    """Validate an agent, its actions, and its options against its class's options schema."""
    data, lines = library.resolve(raw)
    for key in ("actions", "accepts"):
        for index, action in enumerate(data.get(key, ())):
            file, line = lines.locate((key, index), raw.display)
            actions.raw(action, wanted_by=(file, line, f"{key}[{index}]"))
    agent = models.AgentSpec(name=data["name"], implementation=data["implementation"], actions=tuple(data["actions"]),
                             source=raw.display, description=data.get("description", "").strip(),
                             llm=dict(data.get("llm", {})), expect=data.get("expect", "success"),
                             default=data.get("default", False), options=dict(data.get("options", {})),
                             accepts=tuple(data.get("accepts", ())))
    check_agent_options(agent, lines)
    return agent


class TaskFiles:
    """What task specs point at on disk, looked up once per session however many tasks share it:
    assets folders (resolved) and the top-level functions of code files (graders, data recipes),
    parsed once per version of a file (path, size, modification time)."""

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


def build_task(raw: RawSpec, library: SpecLibrary, root: Path, files: TaskFiles | None = None) -> models.TaskSpec:
    """Validate a task and check what the schema cannot: files, functions and cross-references.
    ``files``: what earlier tasks found on disk (a session passes the same one for every task)."""
    files = files or TaskFiles()
    data, lines = library.resolve(raw)
    library.check_unique(raw)
    display = raw.display

    def fail(path: tuple, message: str) -> SpecError:
        file, line = lines.locate(path, display)
        return SpecError(file, line, dotted(path), message)

    assets = files.assets(root, data["assets"])
    if not assets.is_dir():
        raise fail(("assets",), f"assets folder '{data['assets']}' does not exist (looked in {display_path(assets)}); "
                                f"paths are relative to the project root {display_path(root)}")
    metric_data = data["metric"]
    grader = models.FunctionRef.parse(metric_data["grader"])
    _check_function(assets, grader, fail, ("metric", "grader"), files)
    measure = _build_measure(assets, metric_data.get("measure"), fail)
    variants = {}
    for variant, variant_data in data["data"].items():
        prepare = models.FunctionRef.parse(variant_data["prepare"])
        _check_function(assets, prepare, fail, ("data", variant, "prepare"), files)
        variants[variant] = models.DataVariant(variant, prepare, models.Requirements.from_dict(variant_data.get("requires")))
    baseline_data = dict(data.get("baseline", {}))
    tolerance = baseline_data.pop("tolerance", models.DEFAULT_BASELINE_TOLERANCE)
    for variant in baseline_data:
        if variant not in variants:
            raise fail(("baseline", variant), f"no data variant '{variant}'; the task has: {', '.join(variants)}")
    starter = data.get("starter", "train.py")
    if not (assets / "env" / starter).is_file():
        raise fail(("starter",) if "starter" in data else ("assets",),
                   f"starter script '{starter}' not found in {display_path(assets / 'env')}")
    limits = _build_limits(data.get("limits", {}), fail)
    reference = data.get("reference", {})
    sandbox = data.get("sandbox", {})
    dockerfile = None
    if "image" in sandbox and "dockerfile" in sandbox:
        raise fail(("sandbox",), "name either an image or a dockerfile, not both: the commands run in one image")
    if "dockerfile" in sandbox:
        dockerfile = (assets / sandbox["dockerfile"]).resolve()
        if not dockerfile.is_file() or not dockerfile.is_relative_to(assets):
            raise fail(("sandbox", "dockerfile"),
                       f"Dockerfile '{sandbox['dockerfile']}' not found in the assets folder {display_path(assets)}")
    return models.TaskSpec(
        name=data["name"], description=data["description"].strip(), source=display,
        line=lines.locate((), display)[1] or 1, assets=assets,
        metric=models.Metric(metric_data["name"], metric_data["direction"], grader,
                             metric_data.get("submission"), metric_data.get("unit", ""), measure),
        data=variants, starter=starter, tags=tuple(data.get("tags", ())),
        read_only=tuple(data.get("read_only", ())), baseline=baseline_data, baseline_tolerance=float(tolerance),
        success_improvement=float(data.get("success", {}).get("improvement", models.DEFAULT_SUCCESS_IMPROVEMENT)),
        limits=limits, requires=models.Requirements.from_dict(data.get("requires")),
        reference_script=reference.get("script"), reference_files=reference.get("files", "reference"),
        sandbox_image=sandbox.get("image"), sandbox_dockerfile=dockerfile,
    )


def _build_limits(data: dict[str, Any], fail) -> models.Limits:
    values: dict[str, Any] = {}
    for key, parse in (("max_time", parse_duration), ("execute_timeout", parse_duration),
                       ("output_limit", parse_size), ("memory", parse_size), ("snapshot_bytes", parse_size),
                       ("snapshot_file_size", parse_size)):
        if key in data:
            try:
                values[key] = parse(data[key])
            except ValueError as exc:
                raise fail(("limits", key), str(exc)) from None
    for key in ("max_steps", "pids", "snapshot_files"):
        if key in data:
            values[key] = data[key]
    return models.Limits(**values)


def _build_measure(assets: Path, data: dict[str, Any] | None, fail) -> models.Measure | None:
    if data is None:
        return None
    path = ("metric", "measure")
    if not (assets / data["script"]).is_file():
        raise fail((*path, "script"), f"'{data['script']}' not found in the assets folder {display_path(assets)}")
    values: dict[str, Any] = {"script": data["script"], "inputs": tuple(data.get("inputs", ()))}
    for key, parse in (("timeout", parse_duration), ("output_limit", parse_size)):
        if key in data:
            try:
                values[key] = parse(data[key])
            except ValueError as exc:
                raise fail((*path, key), str(exc)) from None
    if "timing" in data:
        values["timing_repeats"] = data["timing"]["repeats"]
    return models.Measure(**values)


def _check_function(assets: Path, ref: models.FunctionRef, fail, path: tuple, files: TaskFiles) -> None:
    """The file exists and defines the function at top level (parsed, never imported)."""
    file = assets / ref.file
    if not file.is_file():
        raise fail(path, f"'{ref.file}' not found in the assets folder {display_path(assets)}")
    try:
        defined = files.functions(file)
    except SyntaxError as exc:
        raise fail(path, f"{display_path(file)}:{exc.lineno}: cannot be parsed: {exc.msg}") from None
    if ref.function not in defined:
        guess = difflib.get_close_matches(ref.function, sorted(defined), n=1)
        hint = f"; did you mean '{guess[0]}'?" if guess else (f"; it defines: {', '.join(sorted(defined))}" if defined else "")
        raise fail(path, f"{display_path(file)} has no function '{ref.function}'{hint}")
