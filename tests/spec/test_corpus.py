"""Every file of ``tests/spec/corpus`` is a realistic mistake; loading it through the real code path
must raise a SpecError that points at the right ``file:line`` and says what is wrong.

Header comments of a corpus file (before the YAML):

``# load-as: Agent``            the kind to load it as (default: Task)
``# expect-file: other.yaml``   the file the error points at (default: the corpus file itself)
``# expect-line: 12``           the line the error points at
``# expect: text``              must appear in the rendered error; the first one on the located line
``# expect-not: text``          must not appear anywhere in the rendered error
``# xfail: reason``             a known weakness of the package, listed for the lead to fix
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import ACTIONS_DIR, AGENTS_DIR, REPO, UNRELATED_PLUGINS, output_of
from pytest_mlab.errors import SpecError
from pytest_mlab.spec import schemas, yaml_lines
from pytest_mlab.spec.project import Project

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CORPUS_TASKS = HERE / "corpus_tasks"  # valid parents for 'extends:' and the other half of a cycle


@dataclass
class Case:
    path: Path
    kind: str = "Task"
    file: str = ""
    line: int | None = None
    expect: list[str] = field(default_factory=list)
    expect_not: list[str] = field(default_factory=list)
    xfail: str | None = None


def read_case(path: Path) -> Case:
    case = Case(path, file=path.name)
    for raw in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#\s*(load-as|expect-file|expect-line|expect-not|expect|xfail):\s?(.*)$", raw)
        if not match:
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "load-as":
            case.kind = value
        elif key == "expect-file":
            case.file = value
        elif key == "expect-line":
            case.line = int(value)
        elif key == "expect":
            case.expect.append(value)
        elif key == "expect-not":
            case.expect_not.append(value)
        else:
            case.xfail = value
    return case


def corpus_files() -> list[Path]:
    return sorted(path for path in CORPUS.iterdir() if path.suffix in (".yaml", ".yml"))


def corpus_params():
    for path in corpus_files():
        case = read_case(path)
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        yield pytest.param(case, id=path.stem, marks=marks)


def spec_name(path: Path) -> str:
    """The ``name:`` the file declares, read as text so that unreadable files have one too."""
    match = re.search(r"^name:\s*(.+?)\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1).strip("'\"") if match else path.stem


def load(case: Case, tmp_path: Path) -> object:
    """The code path a pytest session takes for this kind of spec."""
    if case.kind == "Task":
        # root is tests/spec, so 'assets: corpus_assets/...' resolves as it would in a project
        project = Project(HERE, ACTIONS_DIR, AGENTS_DIR, CORPUS_TASKS)
        return project.task_from_file(case.path)
    # an Agent or Action is found by name in its folder: give it a folder of its own
    folder = tmp_path / ("agents" if case.kind == "Agent" else "actions")
    folder.mkdir()
    shutil.copy(case.path, folder / case.path.name)
    if case.kind == "Agent":
        project = Project(tmp_path, ACTIONS_DIR, folder, tmp_path / "tasks")
        return project.agent(spec_name(case.path))
    if case.kind == "Action":
        project = Project(tmp_path, folder, AGENTS_DIR, tmp_path / "tasks")
        return project.action(spec_name(case.path))
    raise AssertionError(f"{case.path.name}: unknown load-as kind {case.kind!r}")


@pytest.mark.parametrize("case", list(corpus_params()))
def test_corpus_file_gives_located_error(case: Case, tmp_path: Path) -> None:
    assert case.line is not None and case.expect, f"{case.path.name} has no expect-line/expect header"
    with pytest.raises(SpecError) as excinfo:
        load(case, tmp_path)
    text = excinfo.value.render()
    assert str(excinfo.value) == text
    location = f"{case.file}:{case.line}:"
    located = [line for line in text.splitlines() if location in line]
    assert located, f"expected {location!r} in:\n{text}"
    assert any(case.expect[0] in line for line in located), f"expected {case.expect[0]!r} on a {location} line:\n{text}"
    for expected in case.expect[1:]:
        assert expected in text, f"expected {expected!r} in:\n{text}"
    for unwanted in case.expect_not:
        assert unwanted not in text, f"did not expect {unwanted!r} in:\n{text}"
    assert "Traceback" not in text


def test_corpus_is_large_enough() -> None:
    files = corpus_files()
    assert len(files) >= 25
    kinds = {read_case(path).kind for path in files}
    assert kinds == {"Task", "Agent", "Action"}


def test_every_corpus_file_has_a_header() -> None:
    for path in corpus_files():
        case = read_case(path)
        assert case.line is not None and case.expect, f"{path.name}: missing '# expect-line:' or '# expect:'"
        assert case.kind in ("Task", "Agent", "Action"), path.name


def test_corpus_parents_are_valid() -> None:
    """The parent the corpus extends is itself fine, so errors in children are the children's."""
    project = Project(HERE, ACTIONS_DIR, AGENTS_DIR, CORPUS_TASKS)
    task = project.task_from_file(CORPUS_TASKS / "base.yaml")
    assert task.name == "base-task"
    assert task.metric.grader.function == "score"


def test_corpus_and_fixtures_are_not_collected(pytester: pytest.Pytester) -> None:
    """tests/conftest.py keeps Task-looking data out of this suite's own collection: collecting the
    corpus and the fixture projects with the repository's configuration finds nothing at all."""
    folders = [HERE / "corpus", CORPUS_TASKS, HERE / "corpus_assets", REPO / "tests" / "fixtures"]
    result = pytester.runpytest_subprocess("--rootdir", str(REPO), "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                                           "--collect-only", "-q",
                                           *map(str, folders))
    output = output_of(result)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, output
    assert "error" not in output.lower(), output
    assert ".yaml::" not in output


@pytest.mark.parametrize("case", [read_case(path) for path in corpus_files()], ids=lambda case: case.path.stem)
def test_the_fast_paths_give_the_same_result(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libyaml and the compiled schema check only make loading faster: every error reads the same."""

    def outcome() -> str:
        try:
            return f"loaded: {load(case, tmp_path)!r}"
        except SpecError as exc:
            return f"error: {exc.render()}"
        finally:
            for folder in ("agents", "actions"):
                shutil.rmtree(tmp_path / folder, ignore_errors=True)

    fast = outcome()
    with monkeypatch.context() as patch:
        patch.setattr(yaml_lines, "FAST_LOADER", None)
        patch.setattr(schemas, "fast_check", lambda kind: None)
        slow = outcome()
    assert fast == slow
