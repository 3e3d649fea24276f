"""Task specs made from a task folder in MLAgentBench's own layout (``mlagentbench:`` in a Task spec).

Such a folder holds ``env/`` (the workspace's starter files), ``scripts/research_problem.txt`` (the
problem, as the agent reads it), ``scripts/read_only_files.txt`` (fnmatch patterns, optional),
``scripts/prepare.py`` (makes the data, optional) and ``scripts/eval.py`` (``get_score``). The spec
names the folder, the metric and the baseline; the problem, starter, read-only files, data and
grader come from the folder, so the task stays the folder's. A local folder is read here, at
collection; a folder fetched from a url is read once the prepare step has fetched it
(:meth:`FolderTask.with_prepared`). The folder's scripts run as task code: prepare.py in
``pytest_mlab/data/mlagentbench.py``, eval.py in ``pytest_mlab/grading/mlagentbench.py``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import glob
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pytest_mlab.errors import DataError
from pytest_mlab.spec.models import FunctionRef, TaskSpec, shipped_files
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.task_files import top_level_functions

VARIANT = "full"  # the folder's prepare.py makes the real data: the full variant
_PACKAGE = Path(__file__).resolve().parent.parent
PREPARE = f"{_PACKAGE / 'data' / 'mlagentbench.py'}:prepare"  # the task code that runs the folder's scripts
SCORE = f"{_PACKAGE / 'grading' / 'mlagentbench.py'}:score"
BLOCK = ("mlagentbench",)
_NOT_FETCHED = ".mlagentbench-not-fetched"  # a folder nobody has: a fetched folder's env/ before it is fetched

# what the folder decides, so the spec may not say it too
FROM_THE_FOLDER = {
    ("description",): "the research problem is the folder's scripts/research_problem.txt, passed as it is; "
                      "remove 'description' (or edit that file)",
    ("data",): "the data is what the folder's scripts/prepare.py makes; remove 'data'",
    ("metric", "grader"): "the grader is get_score of the folder's scripts/eval.py; remove 'metric.grader'",
    ("metric", "measure"): "the folder's scripts/eval.py scores the workspace itself; a measure step cannot "
                           "be added to it: remove 'metric.measure'",
}


@dataclass(frozen=True)
class FolderFacts:
    """What a folder says of its task."""

    problem: str  # scripts/research_problem.txt as it is
    env_files: tuple[str, ...]  # the starter files, relative to env/
    read_only: tuple[str, ...]  # those of them read_only_files.txt names, as exact patterns
    prepares: bool  # scripts/prepare.py exists


def read_folder(folder: Path, name: str) -> FolderFacts:
    """The folder's facts; DataError names the file that is wrong and what to do. ``name``: how
    messages name the folder."""
    if not folder.is_dir():
        raise DataError(f"{name} is not a folder; point at a task folder in MLAgentBench's layout (env/, scripts/)")
    problem = _text(folder / "scripts" / "research_problem.txt", name, "an MLAgentBench folder states its "
                    "research problem there, the text the agent is given")
    if not problem.strip():
        raise DataError(f"{name}: scripts/research_problem.txt is empty; write the research problem in it")
    _check_grader(folder / "scripts" / "eval.py", name)
    if not (folder / "env").is_dir():
        raise DataError(f"{name}: env/ is missing; it holds the starter files every workspace begins with")
    env_files = tuple(relative for _path, relative in shipped_files(folder / "env"))
    patterns = folder / "scripts" / "read_only_files.txt"
    read_only = _read_only(env_files, _text(patterns, name, "") if patterns.is_file() else "")
    return FolderFacts(problem, env_files, read_only, (folder / "scripts" / "prepare.py").is_file())


def choose_starter(facts: FolderFacts, given: str | None, name: str) -> str:
    """The script the baseline agent runs: ``given`` (the spec's), else the one .py file of env/ the
    research problem names, else train.py."""
    if given is not None:
        if given not in facts.env_files:
            raise DataError(f"{name}: the starter env/{given} does not exist; name a file of env/")
        return given
    scripts = [relative for relative in facts.env_files if relative.endswith(".py")]
    named = [script for script in scripts if _names(facts.problem, script)]
    if len(named) == 1:
        return named[0]
    if "train.py" in facts.env_files:
        return "train.py"
    said = f"names several of env/'s scripts ({', '.join(named)})" if named else "names none of env/'s scripts"
    raise DataError(f"{name}: no starter: scripts/research_problem.txt {said} and env/train.py does not exist; "
                    f"name the starter in the spec with 'starter:'")


def scripts_digest(folder: Path) -> str:
    """Changes whenever a file directly in scripts/ changes: the data made from them is then made again."""
    digest = hashlib.sha256()
    scripts = folder / "scripts"
    for path in sorted(scripts.iterdir()) if scripts.is_dir() else ():
        if path.is_file():
            digest.update(f"{path.name}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class FolderScript(FunctionRef):
    """Task code of ours that runs one of the folder's scripts: messages name that script."""

    script: str = ""
    fetched: bool = False  # the folder comes from an archive, which is fetched and checked first

    def __str__(self) -> str:
        if self.fetched:  # a wrong checksum stops it before the script runs: the message must not blame it
            return f"the folder at mlagentbench.url (fetched, checked, then its scripts/{self.script})"
        return f"the folder's scripts/{self.script}"


@dataclass(frozen=True)
class FolderTask(TaskSpec):
    """A task made from an MLAgentBench folder: its starter files and problem are the folder's."""

    folder: Path | None = None  # the local folder, or the prepared copy of a fetched one; None until fetched
    recipe: dict[str, Any] = field(default_factory=dict)  # what the data recipe needs to find the folder
    starter_given: bool = False  # the spec names the starter
    own_read_only: tuple[str, ...] = ()  # the spec's read_only patterns, besides the folder's

    @property
    def env_dir(self) -> Path:
        """The folder's env/. A fetched folder's task has no starter files before its data is
        prepared (runs take :meth:`with_prepared`'s), so until then it points where there are none."""
        return (self.folder or self.assets / _NOT_FETCHED) / "env"

    def recipe_arguments(self, variant: str) -> dict[str, Any]:
        """The data recipe's arguments besides the folders and seed: where the folder is."""
        return dict(self.recipe)

    def with_prepared(self, hidden: Path) -> TaskSpec:
        """A fetched folder's task as its runs see it, read from the prepared copy in ``hidden``."""
        if self.folder is not None:
            return self
        name = f"the folder fetched for task '{self.name}'"
        facts = read_folder(hidden, name)
        starter = choose_starter(facts, self.starter if self.starter_given else None, name)
        return dataclasses.replace(self, folder=hidden, description=facts.problem, starter=starter,
                                   read_only=facts.read_only + self.own_read_only)


@dataclass(frozen=True)
class FolderSource:
    """Where a spec's folder is, and what was read from it at collection."""

    folder: Path | None  # a local folder; None when fetched from a url
    recipe: dict[str, Any]
    facts: FolderFacts | None  # a local folder's, when it could be read
    starter: str | None  # the spec's, or the one chosen in a local folder
    starter_given: bool
    own_read_only: tuple[str, ...]

    def task(self, built: TaskSpec) -> FolderTask:
        """``built`` (the spec completed by :func:`folder_spec`, then checked) as a :class:`FolderTask`."""
        values = {spec_field.name: getattr(built, spec_field.name) for spec_field in dataclasses.fields(TaskSpec)}
        if self.facts is not None:
            values["description"] = self.facts.problem  # as it is: the spec's check strips descriptions
        values["data"] = {name: dataclasses.replace(variant, prepare=_named(variant.prepare, "prepare.py",
                                                                            fetched=self.folder is None))
                          for name, variant in built.data.items()}
        values["metric"] = dataclasses.replace(built.metric, grader=_named(built.metric.grader, "eval.py"))
        return FolderTask(**values, folder=self.folder, recipe=self.recipe, starter_given=self.starter_given,
                          own_read_only=self.own_read_only)


def folder_spec(display: str, path: Path, data: dict[str, Any], problems: Problems, root: Path) -> FolderSource | None:
    """Complete ``data``, a Task spec with ``mlagentbench:``, in place with what its folder says, so
    that it is checked like any other; what is wrong is recorded in ``problems``. None for a spec
    without ``mlagentbench:``. ``display`` and ``path``: the spec file."""
    block = data.get("mlagentbench")
    if block is None:
        return None
    if not isinstance(block, dict) or not problems.usable(BLOCK):
        problems.raise_any()  # the schema has said what is wrong: no folder can be read
    for at, message in FROM_THE_FOLDER.items():
        holder = data.get(at[0]) if len(at) > 1 else data
        if isinstance(holder, dict) and at[-1] in holder:
            problems.add(at, message)
    given = data.get("starter") if isinstance(data.get("starter"), str) else None
    own = tuple(item for item in data.get("read_only", ()) if isinstance(item, str))
    base = _spec_folder(problems, display, path, (*BLOCK, "folder") if "folder" in block else BLOCK)
    if "folder" in block:
        source = _local((base / block["folder"]).resolve(), block["folder"], given, own, problems)
    else:
        recipe = {key: block[key] for key in ("url", "sha256", "path") if key in block}
        recipe["sha256"] = recipe["sha256"].lower()
        source = FolderSource(None, recipe, None, given, given is not None, own)
    _complete(data, source, base, root)
    return source


def _local(folder: Path, written: str, given: str | None, own: tuple[str, ...], problems: Problems) -> FolderSource:
    """A local folder, read now: what is wrong in it is a problem of the spec."""
    at, name = (*BLOCK, "folder"), f"the folder '{written}'"
    facts = problems.run(_as_problem(problems, at, lambda: read_folder(folder, name)), at)
    starter = None
    if facts is not None:
        starter_at = ("starter",) if given is not None else at
        starter = problems.run(_as_problem(problems, starter_at, lambda: choose_starter(facts, given, name)),
                               starter_at)
    recipe = {"folder": str(folder), "scripts_digest": scripts_digest(folder) if facts else ""}
    return FolderSource(folder, recipe, facts, starter, given is not None, own)


def _complete(data: dict[str, Any], source: FolderSource, base: Path, root: Path) -> None:
    """The keys the folder decides, as a spec without ``mlagentbench:`` would write them."""
    facts = source.facts
    data["description"] = facts.problem if facts else (f"The research problem of the MLAgentBench folder at "
                                                       f"{source.recipe.get('url')}, read once it is fetched.")
    data.setdefault("assets", os.path.relpath(source.folder if facts else base, root))  # a local folder's own
    downloads = source.folder is None or facts is None or facts.prepares  # prepare.py may download
    data["data"] = {VARIANT: {"prepare": PREPARE, **({"requires": {"network": True}} if downloads else {}),
                              "description": "made by the folder's scripts/prepare.py"}}
    if isinstance(data.get("metric"), dict):
        data["metric"]["grader"] = SCORE
    data["read_only"] = list((facts.read_only if facts else ()) + source.own_read_only)
    data["starter"] = source.starter or "train.py"


def _named(ref: FunctionRef, script: str, *, fetched: bool = False) -> FolderScript:
    return FolderScript(ref.file, ref.function, script, fetched)


def _spec_folder(problems: Problems, display: str, path: Path, at: tuple) -> Path:
    """The folder of the spec file that writes ``at`` (a spec extending another may not): a local
    folder is relative to it, and so is the assets folder by default."""
    file, _line = problems.lines.locate(at, display)
    return Path(os.path.abspath(file)).parent if file != display else path.resolve().parent


def _as_problem(problems: Problems, at: tuple, read: Callable[[], Any]) -> Callable[[], Any]:
    """``read``, whose DataError becomes a spec problem at ``at``: at collection, the folder is part of the spec."""
    def check() -> Any:
        try:
            return read()
        except DataError as exc:
            raise problems.error(at, str(exc)) from None
    return check


def _text(path: Path, name: str, why: str) -> str:
    relative = f"{path.parent.name}/{path.name}"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{name}: {relative} is missing; {why}") from None
    except UnicodeDecodeError:
        raise DataError(f"{name}: {relative} is not UTF-8 text; save it as UTF-8") from None


def _check_grader(eval_py: Path, name: str) -> None:
    """eval.py defines get_score at top level: parsed, never imported (it is task code)."""
    if not eval_py.is_file():
        raise DataError(f"{name}: scripts/eval.py is missing; an MLAgentBench folder scores a workspace with its "
                        f"get_score(submission_folder)")
    try:
        defined = top_level_functions(eval_py)
    except SyntaxError as exc:
        raise DataError(f"{name}: scripts/eval.py:{exc.lineno}: cannot be parsed: {exc.msg}") from None
    except UnicodeDecodeError:
        raise DataError(f"{name}: scripts/eval.py is not UTF-8 text; save it as UTF-8") from None
    if "get_score" not in defined:
        raise DataError(f"{name}: scripts/eval.py defines no get_score(submission_folder); the task is scored "
                        f"by that function, define it at the top level of eval.py")


def _read_only(env_files: tuple[str, ...], patterns: str) -> tuple[str, ...]:
    """The starter files the patterns name, matched as the original matches them (a file at the top
    of env/ as './name'), each as a pattern that names only that file. Data files are read-only anyway."""
    lines = [line.strip() for line in patterns.splitlines() if line.strip()]
    walked = {relative: relative if "/" in relative else f"./{relative}" for relative in env_files}
    return tuple(glob.escape(relative) for relative, seen in walked.items()
                 if any(fnmatch.fnmatch(seen, pattern) for pattern in lines))


def _names(problem: str, script: str) -> bool:
    """Whether the research problem names ``script`` as a word of its own (``train.py``, `train.py`)."""
    return re.search(rf"(?<![\w.-]){re.escape(script)}(?![\w-])", problem) is not None
