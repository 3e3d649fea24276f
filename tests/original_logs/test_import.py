"""``pytest-mlab import``: runs of the original MLAgentBench, in its exact log layout (written by
tests/original_logs/writer.py), become rows that the report, the paper's rule and the gate use like
our own; a run that cannot be imported is named by its file and the others still are."""

from __future__ import annotations

import json
import tarfile
import tempfile
from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.results.paper import paper_count
from pytest_mlab.results.store import load_results
from pytest_mlab.trace import read_trace
from tests.helpers import copy_toy_project
from tests.original_logs.writer import OriginalRunFolder, final_answer_run

STEP_LIMIT = [("List Files", {"dir_path": "."}, "train.py\n")] * 10  # the toy task's max_steps


@pytest.fixture
def project(tmp_path) -> Path:
    return copy_toy_project(tmp_path / "project")


def run_import(project: Path, *paths: Path, out: Path, extra: tuple[str, ...] = ()) -> int:
    return main(["import", *map(str, paths), "--out", str(out), "--root", str(project), "--data", "mini",
                 "--cache", str(project / ".cache"), "--sandbox", "local", *extra])


def rows(out: Path) -> dict[str, object]:
    return {run.run_id.split("imported-")[1].rstrip("]"): run for run in load_results(out / "results.json")["runs"]}


def four_runs(logs: Path) -> Path:
    final_answer_run(run="answered").write(logs)
    final_answer_run(run="limit", steps=STEP_LIMIT, final_files={"submission.txt": "10\n"}, log="").write(logs)
    OriginalRunFolder(run="timeout", steps=STEP_LIMIT[:3], step_files={0: {"train.py": "x = 1\n"}},
                      error="Traceback (most recent call last):\n  File \"runner.py\", line 30, in run\n"
                            "MLAgentBench.environment.TimeoutException: Timed out!\n").write(logs)
    final_answer_run(run="oom", main_log="RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB").write(logs)
    return logs


def test_a_folder_of_runs_imports_with_our_grades_and_the_papers_rule(project, tmp_path, capsys):
    out = tmp_path / "imported"
    assert run_import(project, four_runs(tmp_path / "logs"), out=out) == 0
    found = rows(out)
    assert sorted(found) == ["answered", "limit", "oom", "timeout"]
    answered, limit, timeout, oom = (found[name] for name in ("answered", "limit", "timeout", "oom"))
    assert (answered.end_reason, answered.score, answered.success) == ("final answer", 0.0, True)
    assert answered.score_source.startswith("regraded") and answered.agent == "research-no-retrieval"
    assert answered.llm == "claude-v1" and answered.variant == "mini" and answered.sandbox == "imported"
    assert answered.imported_from.endswith("logs/no_retrieval/toy/answered")
    assert (limit.end_reason, limit.score, limit.success) == ("step limit", 90.0, False)
    assert (timeout.end_reason, timeout.score, timeout.success) == ("timeout", None, False)
    assert "step_final_files" in timeout.invalid_reason
    assert oom.success and oom.log_errors == ["CUDA out of memory"]
    # the paper's rule: the timed-out run left error.txt, the other wrote "CUDA out of memory"
    assert paper_count(timeout).counted is False and paper_count(oom).counted is False
    assert paper_count(answered).counted and paper_count(limit).counted
    summary = json.loads((out / "results.json").read_text())["aggregate"]
    group = next(row for row in summary["groups"] if row["agent"] == "research-no-retrieval")
    assert (group["runs"], group["paper_runs"], group["paper_success_rate"]) == (4, 2, 0.5)
    assert "imported 4 run(s) of 4 found" in capsys.readouterr().out


def test_the_trace_holds_every_step_each_steps_files_and_the_llms_text(project, tmp_path):
    out = tmp_path / "imported"
    final_answer_run(run="answered").write(tmp_path / "logs")
    assert run_import(project, tmp_path / "logs", out=out) == 0
    records = read_trace(Path(rows(out)["answered"].trace))
    steps = [record for record in records if record["type"] == "step"]
    assert [step["action"] for step in steps] == ["List Files", "Edit Script (AI)", "Execute Script", "Final Answer"]
    assert steps[1]["arguments"]["edit_instruction"] == "predict 100" and steps[2]["observation"].endswith("100.0\n")
    assert all(step["snapshot"] for step in steps)
    calls = [record for record in records if record["type"] == "llm"]
    assert [(call["step"], call["model"], call["completion"]) for call in calls] == [(1, "claude-v1",
                                                                                      "Action: List Files")]
    assert calls[0]["prompt"] == "You are a helpful research assistant."
    assert records[-1]["type"] == "result" and records[-1]["imported_from"]


def test_an_archive_imports_like_the_folder(project, tmp_path):
    logs = four_runs(tmp_path / "logs")
    archive = tmp_path / "runs.tar.gz"
    with tarfile.open(archive, "w:gz") as bundle:
        bundle.add(logs, arcname="final_exp_logs")
    out = tmp_path / "imported"
    assert run_import(project, archive, out=out) == 0
    assert sorted(rows(out)) == ["answered", "limit", "oom", "timeout"]
    assert rows(out)["answered"].imported_from.startswith(f"{archive}/final_exp_logs/no_retrieval/toy/")


def test_bad_runs_are_named_by_file_and_the_others_still_import(project, tmp_path, capsys):
    logs = tmp_path / "logs"
    final_answer_run(run="good").write(logs)
    truncated = final_answer_run(run="truncated").write(logs) / "env_log" / "trace.json"
    truncated.write_text(truncated.read_text()[:200])
    final_answer_run(task="mystery", benchmark_folder="mystery", run="unknown").write(logs)
    final_answer_run(task="toy-fork", benchmark_folder="toy-fork", run="forked").write(logs)
    no_files = final_answer_run(run="nofiles", step_files={}).write(logs)
    nothing = tmp_path / "empty"
    nothing.mkdir()
    out = tmp_path / "imported"
    assert run_import(project, logs, nothing, tmp_path / "missing", out=out) == 1
    err = capsys.readouterr().err
    assert f"{logs}/no_retrieval/toy/truncated/env_log/trace.json: not valid JSON at line" in err
    assert "the file may be truncated" in err
    assert "task 'mystery' is not a task of this project" in err and "--task-map mystery=TASK" in err
    assert f"{nothing}: no run of the original MLAgentBench here" in err
    assert f"{tmp_path / 'missing'}: no such file or folder" in err
    imported = rows(out)
    assert sorted(imported) == ["good", "nofiles"]
    assert "no saved files for step 0" in imported["nofiles"].message and imported["nofiles"].success
    assert (no_files / "env_log" / "trace.json").exists()
    # a fork's renamed task, mapped
    again = tmp_path / "again"
    assert run_import(project, logs / "no_retrieval" / "toy-fork", out=again, extra=("--task-map", "toy-fork=toy")) == 0
    assert rows(again)["forked"].task == "toy"


def test_a_run_whose_final_workspace_is_gone_keeps_the_originals_recorded_score(project, tmp_path):
    logs = tmp_path / "logs"
    final_answer_run(run="recorded", final_files=None, step_files={}).write(logs)
    final_answer_run(run="minus-one", final_files=None, step_files={}).write(logs)
    scores = tmp_path / "eval.json"
    scores.write_text(json.dumps({
        "/lfs/logs/no_retrieval/toy/recorded/env_log/trace.json": {"final_score": 3.0, "error": ""},
        "/lfs/logs/no_retrieval/toy/minus-one/env_log/trace.json": {"final_score": -1, "error": ""}}))
    out = tmp_path / "imported"
    assert run_import(project, logs, out=out, extra=("--scores", str(scores))) == 0
    recorded, minus_one = rows(out)["recorded"], rows(out)["minus-one"]
    assert recorded.score == 3.0 and recorded.success and recorded.score_source.startswith("recorded")
    assert minus_one.score is None and not minus_one.success and "recorded -1" in minus_one.invalid_reason


def test_the_report_shows_imported_runs_beside_our_own(project, tmp_path, capsys):
    out = tmp_path / "imported"
    final_answer_run(run="answered").write(tmp_path / "logs")
    assert run_import(project, tmp_path / "logs", out=out) == 0
    (out / "results.json").unlink()  # rebuilt from the run folders alone, as for our own
    assert main(["report", str(out)]) == 0
    assert "1 run(s)" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    assert "imported" in page


def test_the_gate_takes_imported_results_as_its_reference(project, tmp_path, pytester):
    out = tmp_path / "imported"
    logs = tmp_path / "logs"
    for name in ("a", "b", "c"):
        final_answer_run(run=name).write(logs)
    assert run_import(project, logs, out=out, extra=("--agent", "reference")) == 0
    pytester.chdir()
    copy_toy_project(pytester.path)
    result = pytester.runpytest_subprocess("specs", "--agent=reference", "--sandbox=local", "--mlab-cache",
                                           str(project / ".cache"), "--mlab-compare", str(out / "results.json"),
                                           "-p", "no:cacheprovider", timeout=300)
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text
    assert "toy / reference / mini" in text


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_an_archive_whose_member_would_land_outside_is_refused_and_writes_nothing_there(project, tmp_path, capsys,
                                                                                         kind):
    """An attack on the importer: a member named ../something (or an absolute path) in the archive."""
    import zipfile

    archive = tmp_path / f"evil.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as bundle:
            bundle.writestr("../../escaped.txt", "x")
    else:
        source = tmp_path / "payload.txt"
        source.write_text("x")
        with tarfile.open(archive, "w") as bundle:
            bundle.add(source, arcname="../../escaped.txt")
    assert run_import(project, archive, out=tmp_path / "imported") == 2
    err = capsys.readouterr().err
    assert f"{archive}:" in err and ("outside" in err or "cannot unpack" in err)
    # the archive is unpacked in a scratch folder under the temp folder: ../../ is the temp folder itself
    assert not (Path(tempfile.gettempdir()) / "escaped.txt").exists()
