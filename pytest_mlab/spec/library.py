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
from typing import Any, Callable, Hashable, Mapping, TypeVar

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.agent_options import check_options, check_with_class, implementation_class
from pytest_mlab.spec.mlagentbench import folder_spec
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.refs import resolve_function
from pytest_mlab.spec.schemas import schema_problems
from pytest_mlab.spec.suffixes import SPEC_SUFFIXES
from pytest_mlab.spec.task_checks import COUNT_BOUNDS, DURATIONS, SIZES, limit_value, package_problem, tag_problem
from pytest_mlab.spec.yaml_lines import LineMap, load_yaml_with_lines

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

    def __init__(self, kind: str, folders: list[Path], homes: Mapping[str, Path] | None = None) -> None:
        self.kind = kind
        self.folders = [Path(folder) for folder in folders]
        self.homes = dict(homes or {})  # the folder of each kind, for hints
        self._files: dict[str, list[RawSpec]] | None = None
        self._unreadable: dict[Path, SpecError] = {}
        self._read: dict[str, RawSpec | SpecError] = {}

    def read(self, path: Path) -> RawSpec:
        """The spec in ``path``, parsed once however often it is asked for (errors too)."""
        key = os.path.abspath(path)  # with the current directory, this fixes the display path
        return remembered(self._read, key, lambda: read_raw(path, self.kind, self.homes), SpecError)

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
                        self._unreadable[path] = exc
                        continue
                    if raw.name is None:
                        self._unreadable[path] = nameless(raw)
                        continue
                    self._files.setdefault(raw.name, []).append(raw)
        return self._files

    def names(self) -> list[str]:
        return sorted(self._index())

    def entries(self, name: str) -> list[RawSpec]:
        """The files that define ``name`` (more than one is an error, see :meth:`check_unique`)."""
        return list(self._index().get(name, ()))

    def unreadable(self) -> list[SpecError]:
        """Files in the folders that could not be read as specs of this kind."""
        return list(self.unreadable_files().values())

    def unreadable_files(self) -> dict[Path, SpecError]:
        """The same, by file."""
        self._index()
        return dict(self._unreadable)

    def add(self, raw: RawSpec) -> None:
        """Make a file outside the folders (a task collected by pytest) known by name; one without
        a name is counted among the files that could not be read."""
        if raw.name is None:
            self._index()
            self._unreadable[raw.path] = nameless(raw)
            return
        entries = self._index().setdefault(raw.name, [])
        if not any(entry.real_path == raw.real_path for entry in entries):
            entries.append(raw)

    def raw(self, name: str, *, wanted_by: tuple[str, int | None, str] | None = None) -> RawSpec:
        entries = self._index().get(name)
        if not entries:
            raise self.unknown(name, wanted_by)
        self.check_unique(entries[0])
        return entries[0]

    def check_unique(self, raw: RawSpec) -> None:
        entries = self._index().get(raw.name, []) if raw.name else []
        others = [entry for entry in entries if entry.real_path != raw.real_path]
        if others:
            other = others[0]
            raise SpecError(raw.display, raw.lines.locate(("name",), raw.display)[1], "name",
                            f"duplicate {self.kind} name '{raw.name}': also defined in "
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
        data, lines, problems = self.checked(raw)
        problems.raise_any()
        return data, lines

    def checked(self, raw: RawSpec) -> tuple[dict[str, Any], LineMap, Problems]:
        """:meth:`merged`, with what the schema rejects recorded as problems (not raised yet)."""
        data, lines = self.merged(raw)
        problems = Problems(raw.display, lines)
        if raw.name is None:
            problems.reject((("name",),), nameless(raw))
        problems.reject_all(schema_problems(self.kind, data, lines, raw.display))
        return data, lines, problems

    def merged(self, raw: RawSpec) -> tuple[dict[str, Any], LineMap]:
        """Apply ``extends:`` chains (parents first), detecting cycles; the result is not validated."""
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


# ---------------------------------------------------------------- building typed specs
# Each builder records every problem of the spec before raising them together, so that a file
# is fixed in one round; the typed spec is made only from a spec without problems.


def build_action(raw: RawSpec, library: SpecLibrary) -> models.ActionSpec:
    """Validate an action, and that its function can be imported."""
    data, lines, problems = library.checked(raw)
    where = lines.locate(("implementation",), raw.display)
    problems.run(lambda: resolve_function(data["implementation"], source=where[0], line=where[1],
                                          purpose=f"action '{data.get('name')}'"), ("implementation",))
    problems.raise_any()
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
    """Validate an agent, that its actions exist, its class and its options against the class's
    options schema. Only what the class checks itself (``check_spec``) waits for a valid spec."""
    data, lines, problems = library.checked(raw)
    for key in ("actions", "accepts"):
        for index, action in enumerate(_items(data.get(key))):
            file, line = lines.locate((key, index), raw.display)
            problems.run(lambda: actions.raw(action, wanted_by=(file, line, f"{key}[{index}]")), (key, index))
    cls = problems.run(lambda: implementation_class(data["implementation"], data.get("name"), lines, raw.display),
                       ("implementation",))
    if cls is not None:
        problems.run(lambda: check_options(cls, data.get("options", {}), lines, raw.display), ("options",))
    problems.raise_any()
    agent = models.AgentSpec(name=data["name"], implementation=data["implementation"], actions=tuple(data["actions"]),
                             source=raw.display, description=data.get("description", "").strip(),
                             llm=dict(data.get("llm", {})), expect=data.get("expect", "success"),
                             default=data.get("default", False), options=dict(data.get("options", {})),
                             accepts=tuple(data.get("accepts", ())))
    check_with_class(cls, agent, lines)
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
    """Validate a task and check what the schema cannot: files, functions, cross-references,
    bounds, tags and package names. ``files``: what earlier tasks found on disk (a session passes
    the same one for every task)."""
    files = files or TaskFiles()
    data, lines, problems = library.checked(raw)
    folder = folder_spec(raw.display, raw.path, data, problems, root)  # mlagentbench: completed from the folder
    display = raw.display
    fail = problems.error
    problems.run(lambda: library.check_unique(raw), ("name",))
    assets = problems.run(lambda: _assets_folder(files, root, data["assets"], fail), ("assets",))
    in_assets = ("assets",)  # what the checks of files in the assets folder read besides their own value
    metric = _mapping(data.get("metric"))
    grader = problems.run(lambda: _function(assets, metric["grader"], fail, ("metric", "grader"), files),
                          ("metric", "grader"), in_assets)
    measure = _mapping(metric.get("measure"))
    if "script" in measure:
        problems.run(lambda: _measure_script(assets, measure["script"], fail), ("metric", "measure", "script"),
                     in_assets)
    measure_limits = _limits(measure, ("metric", "measure"), problems)
    timing = _mapping(measure.get("timing"))
    if isinstance(timing.get("max_repeats"), int) and isinstance(timing.get("repeats"), int) \
            and timing["max_repeats"] < timing["repeats"]:
        problems.add(("metric", "measure", "timing", "max_repeats"),
                     f"max_repeats ({timing['max_repeats']}) is below repeats ({timing['repeats']}): it is the most "
                     f"rounds a timed measurement may run, at least repeats; leave it out to always run {timing['repeats']}")
    prepares = {}
    for variant, variant_data in _mapping(data.get("data")).items():
        path = ("data", variant, "prepare")
        prepares[variant] = problems.run(lambda: _function(assets, variant_data["prepare"], fail, path, files),
                                         path, in_assets)
    baselines = _baselines(_mapping(data.get("baseline")), raw, prepares if isinstance(data.get("data"), dict) else None,
                           problems)
    starter = data.get("starter", "train.py")
    starter_at = ("starter",) if "starter" in data else ("assets",)
    if folder is None:  # a folder's starter is checked in the folder
        problems.run(lambda: _starter(assets, starter, fail, starter_at), starter_at, in_assets)
    limits = _limits(_mapping(data.get("limits")), ("limits",), problems)
    _check_names(problems, tag_problem, ("tags",), data.get("tags"))
    for at in [("requires",), *(("data", variant, "requires") for variant in prepares)]:
        _check_names(problems, package_problem, (*at, "packages"), _mapping(_lookup(data, at)).get("packages"))
    sandbox = _mapping(data.get("sandbox"))
    if "image" in sandbox and "dockerfile" in sandbox:
        problems.add(("sandbox",), "name either an image or a dockerfile, not both: the commands run in one image")
    dockerfile = None
    if "dockerfile" in sandbox:
        dockerfile = problems.run(lambda: _dockerfile(assets, sandbox["dockerfile"], fail),
                                  ("sandbox", "dockerfile"), in_assets)
    problems.raise_any()
    reference = data.get("reference", {})
    task = models.TaskSpec(
        name=data["name"], description=data["description"].strip(), source=display,
        line=lines.locate((), display)[1] or 1, assets=assets,
        metric=models.Metric(metric["name"], metric["direction"], grader, metric.get("submission"),
                             metric.get("unit", ""), _measure(measure, measure_limits) if measure else None),
        data={variant: models.DataVariant(variant, prepare,
                                          models.Requirements.from_dict(data["data"][variant].get("requires")))
              for variant, prepare in prepares.items()},
        starter=starter, tags=tuple(data.get("tags", ())),
        read_only=tuple(data.get("read_only", ())), **baselines,
        success_improvement=float(data.get("success", {}).get("improvement", models.DEFAULT_SUCCESS_IMPROVEMENT)),
        limits=models.Limits(**limits), requires=models.Requirements.from_dict(data.get("requires")),
        reference_script=reference.get("script"), reference_files=reference.get("files", "reference"),
        sandbox_image=sandbox.get("image"), sandbox_dockerfile=dockerfile,
    )
    return folder.task(task) if folder else task


def _baselines(baseline: dict[str, Any], raw: RawSpec, variants: Mapping[str, Any] | None,
               problems: Problems) -> dict[str, Any]:
    """The task's baseline per data variant, from the three places one can come from: written in the
    spec, pinned in it (``pinned:``), or measured (``measured:``, a file `pytest-mlab baseline`
    writes). A variant may have one of them, for a variant the task has."""
    written = {key: float(value) for key, value in baseline.items()
               if key not in ("tolerance", "measured", "pinned") and _is_number(value)}
    pinned = {key: float(value) for key, value in _mapping(baseline.get("pinned")).items() if _is_number(value)}
    measured: dict[str, Any] = {}
    if isinstance(baseline.get("measured"), str):
        from pytest_mlab.spec.baselines import read_baselines

        path = raw.path.parent / baseline["measured"]
        read = problems.run(lambda: read_baselines(path, raw.name or "", display_path(path)), ("baseline", "measured"))
        measured = read or {}
    origins: dict[str, tuple[str, ...]] = {}
    for place, found in (((), written), (("pinned",), pinned), (("measured",), measured)):
        for variant in found:
            at = ("baseline", *place, variant) if place != ("measured",) else ("baseline", "measured")
            if variants is not None and variant not in variants:
                problems.add(at, f"no data variant '{variant}'; the task has: {', '.join(variants)}")
            elif variant in origins:
                problems.add(at, f"the '{variant}' baseline is given twice (here and under "
                                 f"baseline.{'.'.join(origins[variant]) or variant}); keep one")
            origins.setdefault(variant, place or (variant,))
    values = {**written, **pinned, **{variant: m.written_mean for variant, m in measured.items()}}
    described = {**{variant: f"written in {raw.display}" for variant in written},
                 **{variant: f"pinned in {raw.display}" for variant in pinned},
                 **{variant: f"mean of {len(m.scores)} run(s) of the starter, {baseline['measured']}"
                    for variant, m in measured.items()}}
    return {"baseline": values,
            "baseline_tolerance": float(baseline.get("tolerance", models.DEFAULT_BASELINE_TOLERANCE)),
            # a tolerance written in the spec is the least a measured one may be: the task's author
            # may know the starter varies more across machines than across one machine's runs
            "baseline_tolerances": {variant: max(m.tolerance, float(baseline.get("tolerance", 0.0)))
                                    for variant, m in measured.items()},
            "baseline_pinned": frozenset(pinned), "baseline_origins": described}


def _is_number(value: Any) -> bool:
    """What the schema accepts as a number (the schema reports anything else)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one (the schema has said what is wrong)."""
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one (the schema has said what is wrong)."""
    return value if isinstance(value, list) else []


def _lookup(data: dict[str, Any], path: tuple) -> Any:
    for key in path:
        data = _mapping(data).get(key)
    return data


def _check_names(problems: Problems, problem_of: Callable[[str], str | None], at: tuple, names: Any) -> None:
    """Each string of the list ``names`` (found at ``at``) that ``problem_of`` objects to is a problem."""
    for index, name in enumerate(_items(names)):
        message = problem_of(name) if isinstance(name, str) else None
        if message:
            problems.add((*at, index), message)


def _limits(values: dict[str, Any], at: tuple, problems: Problems) -> dict[str, float | int]:
    """The limits among ``values`` (found at ``at``) as runs use them; each one out of bounds is a problem."""
    parsed = {}
    for key, value in values.items():
        if key in (*DURATIONS, *SIZES, *COUNT_BOUNDS):
            parsed[key] = problems.run(lambda: _limit((*at, key), value, problems.error), (*at, key))
    return parsed


def _limit(path: tuple, value: Any, fail) -> float | int:
    try:
        return limit_value(path[-1], value)
    except ValueError as exc:
        raise fail(path, str(exc)) from None


def _assets_folder(files: TaskFiles, root: Path, folder: str, fail) -> Path:
    assets = files.assets(root, folder)
    if not assets.is_dir():
        raise fail(("assets",), f"assets folder '{folder}' does not exist (looked in {display_path(assets)}); "
                                f"paths are relative to the project root {display_path(root)}")
    return assets


def _starter(assets: Path, starter: str, fail, at: tuple) -> None:
    if not (assets / "env" / starter).is_file():
        raise fail(at, f"starter script '{starter}' not found in {display_path(assets / 'env')}")


def _dockerfile(assets: Path, name: str, fail) -> Path:
    dockerfile = (assets / name).resolve()
    if not dockerfile.is_file() or not dockerfile.is_relative_to(assets):
        raise fail(("sandbox", "dockerfile"),
                   f"Dockerfile '{name}' not found in the assets folder {display_path(assets)}")
    return dockerfile


def _measure_script(assets: Path, script: str, fail) -> None:
    if not (assets / script).is_file():
        raise fail(("metric", "measure", "script"), f"'{script}' not found in the assets folder {display_path(assets)}")


def _measure(data: dict[str, Any], limits: dict[str, float | int]) -> models.Measure:
    """The measure step of a valid spec."""
    timing = data.get("timing")
    return models.Measure(script=data["script"], inputs=tuple(data.get("inputs", ())), **limits,
                          timing_repeats=timing["repeats"] if timing else None,
                          timing_max_repeats=timing.get("max_repeats", timing["repeats"]) if timing else None)


def _function(assets: Path, text: str, fail, path: tuple, files: TaskFiles) -> models.FunctionRef:
    """``FILE.py:FUNCTION``: the file exists and defines the function at top level (parsed, never imported)."""
    ref = models.FunctionRef.parse(text)
    file = assets / ref.file
    if not file.is_file():
        raise fail(path, f"'{ref.file}' not found in the assets folder {display_path(assets)}")
    try:
        defined = files.functions(file)
    except SyntaxError as exc:
        raise fail(path, f"{display_path(file)}:{exc.lineno}: cannot be parsed: {exc.msg}") from None
    if ref.function not in defined:
        guess = difflib.get_close_matches(ref.function, sorted(defined), n=1)
        defines = f"; it defines: {', '.join(sorted(defined))}" if defined else ""
        hint = f"; did you mean '{guess[0]}'?" if guess else defines
        raise fail(path, f"{display_path(file)} has no function '{ref.function}'{hint}")
    return ref
