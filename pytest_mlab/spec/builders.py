"""Typed specs (Task, Action, Agent) built from the files a :class:`SpecLibrary` holds, with the
checks a schema cannot make: files, functions and classes that must exist, cross-references,
bounds, tags and package names.

Each builder records every problem of the spec before raising them together, so that a file is
fixed in one round; the typed spec is made only from a spec without problems.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Callable

from pytest_mlab.spec import models
from pytest_mlab.spec.agent_options import check_options, check_with_class, implementation_class
from pytest_mlab.spec.baselines import baselines_source, task_baselines
from pytest_mlab.spec.library import SpecLibrary
from pytest_mlab.spec.mlagentbench import folder_spec
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.reading import RawSpec, display_path
from pytest_mlab.spec.refs import resolve_function
from pytest_mlab.spec.shapes import as_list, as_mapping
from pytest_mlab.spec.task_checks import COUNT_BOUNDS, DURATIONS, SIZES, limit_value, package_problem, tag_problem
from pytest_mlab.spec.task_files import TaskFiles


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
        for index, action in enumerate(as_list(data.get(key))):
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
    metric = as_mapping(data.get("metric"))
    grader = problems.run(lambda: _function(assets, metric["grader"], fail, ("metric", "grader"), files),
                          ("metric", "grader"), in_assets)
    measure = as_mapping(metric.get("measure"))
    if "script" in measure:
        problems.run(lambda: _measure_script(assets, measure["script"], fail), ("metric", "measure", "script"),
                     in_assets)
    measure_limits = _limits(measure, ("metric", "measure"), problems)
    prepares = {}
    for variant, variant_data in as_mapping(data.get("data")).items():
        path = ("data", variant, "prepare")
        prepares[variant] = problems.run(lambda: _function(assets, variant_data["prepare"], fail, path, files),
                                         path, in_assets)
    source = baselines_source(data, raw, library)
    baselines = task_baselines(as_mapping(data.get("baseline")), raw, prepares if isinstance(data.get("data"), dict) else None,
                               problems, source)
    starter = data.get("starter", "train.py")
    starter_at = ("starter",) if "starter" in data else ("assets",)
    if folder is None:  # a folder's starter is checked in the folder
        problems.run(lambda: _starter(assets, starter, fail, starter_at), starter_at, in_assets)
    limits = _limits(as_mapping(data.get("limits")), ("limits",), problems)
    _check_names(problems, tag_problem, ("tags",), data.get("tags"))
    for at in [("requires",), *(("data", variant, "requires") for variant in prepares)]:
        _check_names(problems, package_problem, (*at, "packages"), as_mapping(_lookup(data, at)).get("packages"))
    sandbox = as_mapping(data.get("sandbox"))
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


def _lookup(data: dict[str, Any], path: tuple) -> Any:
    for key in path:
        data = as_mapping(data).get(key)
    return data


def _check_names(problems: Problems, problem_of: Callable[[str], str | None], at: tuple, names: Any) -> None:
    """Each string of the list ``names`` (found at ``at``) that ``problem_of`` objects to is a problem."""
    for index, name in enumerate(as_list(names)):
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
                          timing_repeats=timing["repeats"] if timing else None)


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
