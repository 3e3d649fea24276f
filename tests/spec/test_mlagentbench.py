"""Task specs made from MLAgentBench folders (``mlagentbench:``): what comes from the folder, what the
spec may still say, and every error in a folder as a spec error that names the file and what to do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.spec.mlagentbench import PREPARE, SCORE, VARIANT, FolderTask, read_folder
from tests.mlagentbench_folder import PROBLEM, spec, write_folder
from tests.spec.support import Layout

LOCAL = "  folder: ../../benchmarks/tab\n"
SHA = "ab" * 32
URL = f"  url: https://example.org/bench.tar.gz\n  sha256: {SHA}\n  path: bench/tab\n"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    monkeypatch.chdir(tmp_path)  # messages show paths relative to the current directory
    layout = Layout(tmp_path)
    write_folder(tmp_path / "benchmarks" / "tab")
    return layout


def task_of(layout: Layout, text: str) -> FolderTask:
    layout.write("specs/tasks/tab.yaml", text)
    task = layout.task("specs/tasks/tab.yaml")
    assert isinstance(task, FolderTask)
    return task


def errors_of(layout: Layout, text: str) -> list[str]:
    layout.write("specs/tasks/tab.yaml", text)
    return layout.task_error("specs/tasks/tab.yaml").render().splitlines()


def test_a_local_folder_gives_the_problem_starter_read_only_files_data_and_grader(layout: Layout) -> None:
    task = task_of(layout, spec("tab", LOCAL))
    folder = layout.root / "benchmarks" / "tab"
    assert task.description == PROBLEM  # passed as it is, trailing newline included
    assert (task.starter, task.read_only) == ("train.py", ("data_description.txt",))
    assert [relative for _path, relative in task.env_files()] == ["data_description.txt", "train.py"]
    assert task.env_dir == folder / "env" and task.folder == folder
    assert list(task.data) == [VARIANT] and task.data[VARIANT].requires.network  # prepare.py may download
    assert str(task.data[VARIANT].prepare) == "the folder's scripts/prepare.py"  # its name in messages
    assert f"{task.data[VARIANT].prepare.file}:prepare" == PREPARE and f"{task.metric.grader.file}:score" == SCORE
    assert (task.metric.name, task.metric.direction, task.metric.submission) == ("mae", "minimize", "submission.csv")
    assert task.baseline == {VARIANT: 9.3573}
    assert task.assets == folder  # by default the folder itself: its reference/, if any, is the reference solution
    assert task.recipe_arguments(VARIANT)["folder"] == str(folder)
    assert task.with_prepared(layout.root / "anywhere") is task  # a local folder is read at collection


def test_the_recipe_arguments_change_when_a_script_of_the_folder_changes(layout: Layout) -> None:
    before = task_of(layout, spec("tab", LOCAL)).recipe_arguments(VARIANT)
    (layout.root / "benchmarks" / "tab" / "scripts" / "prepare.py").write_text("print('other data')\n")
    assert layout.task("specs/tasks/tab.yaml").recipe_arguments(VARIANT) != before  # a new session, new fingerprint


def test_a_folder_without_prepare_py_needs_no_network(layout: Layout) -> None:
    write_folder(layout.root / "benchmarks" / "plain", **{"scripts/prepare.py": None})
    task = task_of(layout, spec("tab", "  folder: ../../benchmarks/plain\n"))
    assert not task.data[VARIANT].requires.network


def test_the_spec_may_name_the_starter_add_read_only_files_and_its_own_assets(layout: Layout) -> None:
    (layout.root / "benchmarks" / "tab" / "env" / "run.py").write_text("print('run')\n")
    (layout.root / "mine" / "reference").mkdir(parents=True)
    task = task_of(layout, spec("tab", LOCAL, extra="starter: run.py\nread_only: ['*.txt']\nassets: mine\n"
                                                      "tags: [tabular]\nlimits: {max_steps: 7}\n"))
    assert (task.starter, task.read_only) == ("run.py", ("data_description.txt", "*.txt"))
    assert task.assets == layout.root / "mine" and task.env_dir == layout.root / "benchmarks" / "tab" / "env"
    assert (task.tags, task.limits.max_steps) == (("tabular",), 7)


@pytest.mark.parametrize(("problem", "scripts", "starter"), [
    ("Speed up inference.py.", ["inference.py"], "inference.py"),
    ("Run `inference.py` first", ["inference.py", "train.py"], "inference.py"),
    ("Edit processors.py, then run train.py.", ["processors.py", "train.py"], "train.py"),  # several: train.py
    ("Improve the model.", ["model.py", "train.py"], "train.py"),
    ("Improve my_train.py.", ["train.py", "my_train.py"], "my_train.py"),  # a name inside another is not it
])
def test_the_starter_is_the_one_script_the_problem_names_else_train_py(layout: Layout, problem: str,
                                                                      scripts: list[str], starter: str) -> None:
    folder = write_folder(layout.root / "benchmarks" / "named", **{"scripts/research_problem.txt": problem,
                                                                  "env/train.py": None})
    for script in scripts:
        (folder / "env" / script).write_text("print('hi')\n")
    assert task_of(layout, spec("tab", "  folder: ../../benchmarks/named\n")).starter == starter


def test_without_a_starter_the_spec_is_told_to_name_one(layout: Layout) -> None:
    folder = write_folder(layout.root / "benchmarks" / "tool", **{"env/train.py": None,
                          "scripts/research_problem.txt": "Write tool.py; call the LLM as in example.py."})
    for script in ("tool.py", "example.py"):
        (folder / "env" / script).write_text("")
    lines = errors_of(layout, spec("tab", "  folder: ../../benchmarks/tool\n"))
    assert lines == ["specs/tasks/tab.yaml:4: mlagentbench.folder: the folder '../../benchmarks/tool': no starter: "
                     "scripts/research_problem.txt names several of env/'s scripts (example.py, tool.py) and "
                     "env/train.py does not exist; name the starter in the spec with 'starter:'"]
    assert task_of(layout, spec("tab", "  folder: ../../benchmarks/tool\n", extra="starter: tool.py\n")).starter \
        == "tool.py"


def test_a_starter_the_folder_lacks_is_reported_at_the_starter_line(layout: Layout) -> None:
    lines = errors_of(layout, spec("tab", LOCAL, extra="starter: solve.py\n"))
    assert lines == ["specs/tasks/tab.yaml:7: starter: the folder '../../benchmarks/tab': the starter env/solve.py "
                     "does not exist; name a file of env/"]


def test_read_only_patterns_match_as_the_original_matches_them(layout: Layout) -> None:
    """A top-level file is './name' to the original; '*' crosses folders; only files there at the start count."""
    folder = write_folder(layout.root / "benchmarks" / "ro", **{
        "scripts/read_only_files.txt": "./notes.txt\nnotes2.txt\nlib/*\n*.json\n./*.md\n",
        "env/notes.txt": "", "env/notes2.txt": "", "env/lib/a/b.py": "", "env/cfg/x.json": "", "env/[b].md": ""})
    facts = read_folder(folder, "ro")
    assert facts.read_only == ("[[]b].md", "cfg/x.json", "lib/a/b.py", "notes.txt")  # notes2.txt: './notes2.txt'


def test_what_the_folder_decides_cannot_be_said_again(layout: Layout) -> None:
    lines = errors_of(layout, spec("tab", LOCAL, extra="description: Mine.\ndata:\n  mini: {prepare: 'p.py:m'}\n")
                      .replace("submission: submission.csv}", "grader: 'g.py:s', measure: {script: m.py}}"))
    assert lines == [
        "specs/tasks/tab.yaml:5: metric.grader: the grader is get_score of the folder's scripts/eval.py; "
        "remove 'metric.grader'",
        "specs/tasks/tab.yaml:5: metric.measure: the folder's scripts/eval.py scores the workspace itself; a "
        "measure step cannot be added to it: remove 'metric.measure'",
        "specs/tasks/tab.yaml:7: description: the research problem is the folder's scripts/research_problem.txt, "
        "passed as it is; remove 'description' (or edit that file)",
        "specs/tasks/tab.yaml:8: data: the data is what the folder's scripts/prepare.py makes; remove 'data'",
    ]


@pytest.mark.parametrize(("replace", "message"), [
    ({"scripts/research_problem.txt": None}, "scripts/research_problem.txt is missing; an MLAgentBench folder "
                                             "states its research problem there, the text the agent is given"),
    ({"scripts/research_problem.txt": "  \n"}, "scripts/research_problem.txt is empty; write the research "
                                               "problem in it"),
    ({"scripts/eval.py": None}, "scripts/eval.py is missing; an MLAgentBench folder scores a workspace with its "
                                "get_score(submission_folder)"),
    ({"scripts/eval.py": "def score(folder):\n    return 1\n"},
     "scripts/eval.py defines no get_score(submission_folder); the task is scored by that function, define it "
     "at the top level of eval.py"),
    ({"scripts/eval.py": "def get_score(folder)\n"}, "scripts/eval.py:1: cannot be parsed: expected ':'"),
    ({"env/train.py": None, "env/data_description.txt": None}, "env/ is missing; it holds the starter files every "
                                                               "workspace begins with"),
])
def test_each_error_in_a_folder_names_the_file_and_what_to_do(layout: Layout, replace: dict, message: str) -> None:
    write_folder(layout.root / "benchmarks" / "bad", **replace)
    lines = errors_of(layout, spec("tab", "  folder: ../../benchmarks/bad\n"))
    assert lines == [f"specs/tasks/tab.yaml:4: mlagentbench.folder: the folder '../../benchmarks/bad': {message}"]


def test_a_folder_that_is_not_there(layout: Layout) -> None:
    lines = errors_of(layout, spec("tab", "  folder: ../../benchmarks/gone\n", extra="limits: {max_steps: 0}\n"))
    assert lines == [
        "specs/tasks/tab.yaml:4: mlagentbench.folder: the folder '../../benchmarks/gone' is not a folder; point at "
        "a task folder in MLAgentBench's layout (env/, scripts/)",
        "specs/tasks/tab.yaml:7: limits.max_steps: 0 is less than the minimum of 1",  # the rest is checked too
    ]


@pytest.mark.parametrize(("source", "message"), [
    (LOCAL + URL, r"mlagentbench: .* is not valid: expected a task folder in MLAgentBench's layout: either folder, "
                  r"or url with sha256 \(and optionally path\)"),
    ("  url: https://example.org/a.zip\n", r"mlagentbench: .* is not valid: expected a task folder"),
    ("  folder: x\n  path: y\n", r"mlagentbench: .* is not valid: expected a task folder"),
    (f"  url: ftp://example.org/a.zip\n  sha256: {SHA}\n", r"mlagentbench.url: 'ftp://example.org/a.zip' is not "
                                                           r"valid: expected an http\(s\) address of a .tar.gz"),
    ("  url: https://example.org/a.zip\n  sha256: abc\n", r"mlagentbench.sha256: 'abc' is not valid: expected "
                                                          r"with url: the archive's SHA-256, 64 hex digits"),
    ("  folder: x\n  colour: red\n", r"mlagentbench.colour: unknown key 'colour'; allowed keys: folder, path, "
                                     r"sha256, url"),
])
def test_the_schema_says_what_a_folder_source_must_look_like(layout: Layout, source: str, message: str) -> None:
    lines = errors_of(layout, spec("tab", source))
    assert any(re.search(message, line) for line in lines), lines


def test_an_all_digit_sha256_without_quotes_is_told_to_be_quoted(layout: Layout) -> None:
    # YAML reads 64 digits as a number (64 zeros as 0): the checksum is lost, and only quotes keep it
    lines = errors_of(layout, spec("tab", f"  url: https://example.org/a.zip\n  sha256: {'0' * 64}\n"))
    assert lines == ["specs/tasks/tab.yaml:5: mlagentbench.sha256: 0 is not of type 'string': YAML reads a value "
                     "written as digits as a number; put it in quotes (sha256: \"...\") so that it stays text, "
                     "digit for digit"]
    assert task_of(layout, spec("tab", f"  url: https://example.org/a.zip\n  sha256: '{'0' * 64}'\n")).recipe[
        "sha256"] == "0" * 64


def test_a_task_spec_without_a_folder_still_needs_all_its_keys(layout: Layout) -> None:
    lines = errors_of(layout, "kind: Task\nname: tab\nmetric: {name: mae, direction: minimize}\n")
    assert lines == ["specs/tasks/tab.yaml:1: (top level): missing required keys 'description', 'assets', 'data'",
                     "specs/tasks/tab.yaml:3: metric: missing required key 'grader'"]
    assert errors_of(layout, f"kind: Task\nname: tab\nmlagentbench:\n{LOCAL}") == [
        "specs/tasks/tab.yaml:1: (top level): missing required key 'metric'"]


def test_a_url_folder_is_listed_before_it_is_fetched_and_read_once_prepared(layout: Layout) -> None:
    task = task_of(layout, spec("tab", URL))
    assert task.folder is None and task.data[VARIANT].requires.network  # fetched by the prepare step only
    # in messages: a wrong checksum stops it before prepare.py runs, so the name must not blame prepare.py
    assert str(task.data[VARIANT].prepare) == ("the folder at mlagentbench.url (fetched, checked, then its "
                                               "scripts/prepare.py)")
    assert task.recipe_arguments(VARIANT) == {"url": "https://example.org/bench.tar.gz", "sha256": SHA,
                                              "path": "bench/tab"}
    assert "https://example.org/bench.tar.gz" in task.description and task.env_files() == ()
    assert task.assets == layout.tasks  # by default the spec's folder: where reference/ is looked for
    prepared = write_folder(layout.root / "cache" / "hidden")  # what the prepare step leaves: env/ and scripts/
    ready = task.with_prepared(prepared)
    assert (ready.description, ready.starter, ready.read_only) == (PROBLEM, "train.py", ("data_description.txt",))
    assert ready.env_dir == prepared / "env" and ready.with_prepared(prepared) is ready


def test_a_url_spec_naming_its_starter_keeps_it_and_the_fetched_folder_is_checked(layout: Layout) -> None:
    task = task_of(layout, spec("tab", URL, extra="starter: go.py\n"))
    prepared = write_folder(layout.root / "cache" / "hidden")
    with pytest.raises(DataError, match=r"the starter env/go.py does not exist"):
        task.with_prepared(prepared)
    (prepared / "env" / "go.py").write_text("")
    assert task.with_prepared(prepared).starter == "go.py"


def test_a_folder_named_by_a_parent_spec_is_relative_to_the_parent(layout: Layout) -> None:
    layout.write("specs/bases/orig.yaml", spec("orig", "  folder: ../../benchmarks/tab\n"))
    layout.write("specs/tasks/tab.yaml", "kind: Task\nname: tab\nextends: orig\ntags: [copy]\n")
    project = layout.project()
    project.tasks.add(project.tasks.read(layout.root / "specs/bases/orig.yaml"))
    task = project.task_from_file(layout.root / "specs/tasks/tab.yaml")
    assert task.folder == layout.root / "benchmarks" / "tab" and task.tags == ("copy",)
