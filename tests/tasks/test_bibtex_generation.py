"""The bibtex-generation task: fixtures and the automatic checks of its grader."""

from __future__ import annotations

import json
import pathlib

import pytest

from pytest_mlab.task_api import InvalidSubmission
from tests.tasks.support import ASSETS, edited_workspace, grade as grade_task, prepare, tree_digest

TASK = "bibtex-generation"
SCRIPT = "bibtex_generation.py"
CHECKS = 8


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("bibtex"))[1]


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    return grade_task(TASK, workspace, hidden)


def workspace(tmp_path: pathlib.Path, *replacements: tuple[str, str]) -> pathlib.Path:
    return edited_workspace(TASK, SCRIPT, tmp_path, *replacements)


def test_fixtures_are_deterministic_and_consistent(hidden, tmp_path):
    assert tree_digest(prepare(TASK, tmp_path)[1]) == tree_digest(hidden)
    titles = {p["title"] for p in json.loads((hidden / "papers.json").read_text())}
    for case in json.loads((hidden / "cases.json").read_text()):
        assert all(name in case["paragraph"] for name in case["cited"])
        assert set(case["titles"]) <= titles


def test_helpers_are_the_other_tool_tasks(tmp_path):
    for name in ("LLM.py", "papers.py", "../measure.py"):
        assert (ASSETS / TASK / "env" / name).read_text() == \
            (ASSETS / "literature-review-tool" / "env" / name).read_text()


def test_the_tool_gets_the_paragraphs_never_the_works_cited(hidden):
    tool = json.loads((hidden / "tool_cases.json").read_text())
    cases = json.loads((hidden / "cases.json").read_text())
    assert [case["files"] for case in tool["cases"]] == [{"paragraph.txt": case["paragraph"] + "\n"} for case in cases]
    public = (hidden / "tool_cases.json").read_text()
    assert not any(title in public for case in cases for title in case["titles"])


@pytest.mark.parametrize("replacements, failed", [
    ((), 0),
    ((("  year = {{{paper['year']}}},\\n", "  year = {{circa {paper['year']}}},\\n"),), 1),
    ((("for phrase in phrases(paragraph):", "for phrase in phrases(paragraph)[:1]:"),), 2),  # works left out
    ((('f"{match.group(0)} \\\\cite{{{key}}}"', 'f"{match.group(0)} \\\\cite{{{key}x}}"'),), 1),
    ((("handle.write(paragraph + \"\\n\")", "handle.write(paragraph.replace(' the ', ' ') + \"\\n\")"),), 1),
    ((('f"@article{{{key},\\n', 'f"@article{{{key}\\n'),), 5),  # no comma after the key: broken BibTeX
])
def test_checks_catch_what_is_wrong(hidden, tmp_path, replacements, failed):
    assert grade(workspace(tmp_path, *replacements), hidden) == pytest.approx(1.0 - failed / CHECKS)


def test_missing_tool_is_invalid(hidden, tmp_path):
    with pytest.raises(InvalidSubmission, match="bibtex_generation.py was not written"):
        grade(tmp_path, hidden)
