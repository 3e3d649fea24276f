"""The literature-review-tool task: fixtures and the automatic checks of its grader, with the tool
run by the measure step in a sandbox (tests.tasks.support.grade)."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from pytest_mlab.task_api import InvalidSubmission
from tests.tasks.support import ASSETS, edited_workspace, grade as grade_task, load_spec, prepare, tree_digest

TASK = "literature-review-tool"
SCRIPT = "literature_review.py"
CHECKS = 8


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("review"))[1]


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    return grade_task(TASK, workspace, hidden)


def workspace(tmp_path: pathlib.Path, *replacements: tuple[str, str]) -> pathlib.Path:
    return edited_workspace(TASK, SCRIPT, tmp_path, *replacements)


def test_fixtures_are_deterministic_and_consistent(hidden, tmp_path):
    assert tree_digest(prepare(TASK, tmp_path)[1]) == tree_digest(hidden)
    papers = {p["id"]: p for p in json.loads((hidden / "papers.json").read_text())}
    cases = json.loads((hidden / "cases.json").read_text())
    assert len(cases) == 2 and cases[0]["topic"] != cases[1]["topic"]
    for case in cases:
        assert [papers[i]["title"] for i in case["papers"]] == case["titles"]
        assert not set(case["titles"]) & set(case["unrelated"])
    import yaml

    rules = yaml.safe_load((hidden / "llm_script.yaml").read_text())["rules"]
    assert len(rules) == 1 + len(papers) + len(cases)


def test_the_tool_gets_the_topics_never_what_the_review_must_hold(hidden):
    spec = load_spec(TASK)["metric"]["measure"]
    tool = json.loads((hidden / "tool_cases.json").read_text())
    cases = json.loads((hidden / "cases.json").read_text())
    assert "cases.json" not in spec["inputs"] and all((hidden / name).is_file() for name in spec["inputs"])
    assert [case["args"] for case in tool["cases"]] == [[case["topic"], "review.md"] for case in cases]
    public = (hidden / "tool_cases.json").read_text()
    assert not any(title in public for case in cases for title in case["titles"] + case["summaries"])
    assert (hidden / "LLM.py").read_text() == (ASSETS / TASK / "env" / "LLM.py").read_text()


def test_the_paper_index_answers_a_topic_with_its_papers(hidden, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("papers_helper", ASSETS / TASK / "env" / "papers.py")
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    monkeypatch.setenv("MLAB_TOOL_PAPERS", str(hidden / "papers.json"))
    for case in json.loads((hidden / "cases.json").read_text()):
        assert sorted(p["id"] for p in helper.search_papers(case["topic"], max_results=5)) == sorted(case["papers"])


@pytest.mark.parametrize("replacements, failed", [
    ((), 0),
    ((('f"arXiv:{paper[\'id\']} ({paper[\'url\']})"', '"arXiv:2401.99999"'),), 1),  # made-up ids, listed without theirs
    ((("MAX_PAPERS = 5", "MAX_PAPERS = 14"),), 1),  # unrelated papers listed too
    ((('"## Conclusion"', '"## Outlook"'),), 1),
    ((("summaries = [summarise(paper) for paper in found]", "summaries = ['' for paper in found]"),), 1),
])
def test_checks_catch_what_is_wrong(hidden, tmp_path, replacements, failed):
    score = grade(workspace(tmp_path, *replacements), hidden)
    assert score == pytest.approx(1.0 - failed / CHECKS)


def test_a_crashing_or_hanging_tool_scores_zero(hidden, tmp_path):
    crash = workspace(tmp_path / "a", ("    found = papers.search_papers", "    raise RuntimeError('boom')\n    found = papers.search_papers"))
    assert grade(crash, hidden) == 0.0
    impatient = tmp_path / "data" / "hidden"  # the same fixtures, with a 2 s timeout per topic
    shutil.copytree(hidden, impatient)
    tool = json.loads((impatient / "tool_cases.json").read_text())
    (impatient / "tool_cases.json").write_text(json.dumps({**tool, "timeout": 2}))
    hang = workspace(tmp_path / "b", ("    found = papers.search_papers", "    import time; time.sleep(600)\n    found = papers.search_papers"))
    assert grade(hang, impatient) == 0.0


def test_missing_tool_is_invalid(hidden, tmp_path):
    with pytest.raises(InvalidSubmission, match="literature_review.py was not written"):
        grade(tmp_path, hidden)
