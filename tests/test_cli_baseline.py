"""``pytest-mlab baseline``: the mean of the starter's runs and a tolerance from their spread,
recorded in a baselines file the spec reads, the spec updated in place without losing its comments."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_mlab.cli import main
from pytest_mlab.cli.baseline import MACHINE_KEYS, Measured, edit_baseline_mapping, record
from pytest_mlab.errors import MlabError
from pytest_mlab.spec.baselines import Measurement, write_baselines
from pytest_mlab.task_runtime.choice import describe
from tests.helpers import copy_toy_project, run_specs


def measured(spec: Path, variant: str, *scores: float, task: str = "t") -> Measured:
    return Measured(task, variant, Measurement(scores, "local", "2026-11-23T10:00:00+0000", "abc123",
                                               {"hostname": "here", "cpus": 2}), spec)


BLOCK = """kind: Task
name: t
baseline:   # the starter's score
  mini: 1.0
  tolerance: 0.05

success: {improvement: 0.10}
"""


def test_record_writes_the_baselines_file_and_points_the_spec_at_it(tmp_path):
    spec = tmp_path / "specs" / "tasks" / "t.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(BLOCK)
    written = record(measured(spec, "mini", 2.0, 2.0))
    assert written == tmp_path / "specs" / "tasks" / ".." / "baselines" / "t.yaml"
    # the hand-written value of the variant goes, the rest of the spec stays as it was
    assert spec.read_text() == BLOCK.replace("  mini: 1.0\n", "").replace(
        "tolerance: 0.05\n", "tolerance: 0.05\n  measured: ../baselines/t.yaml\n")
    data = yaml.safe_load(written.read_text())
    assert data["kind"] == "Baselines" and data["task"] == "t"
    assert data["variants"]["mini"] == {"mean": 2.0, "tolerance": 0.01, "relative_spread": 0.0, "scores": [2.0, 2.0],
                                        "sandbox": "local", "measured": "2026-11-23T10:00:00+0000",
                                        "commit": "abc123", "machine": {"hostname": "here", "cpus": 2}}
    assert written.read_text().startswith("# Measured by `pytest-mlab baseline`")
    record(measured(spec, "full", 3.5, 4.5))  # a second variant joins the file; the spec is unchanged
    assert spec.read_text().count("measured:") == 1
    assert set(yaml.safe_load(written.read_text())["variants"]) == {"mini", "full"}


def test_record_uses_the_file_the_spec_names(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\nbaseline: {measured: numbers/t-baselines.yaml, mini: 3}\nlimits: {}\n")
    written = record(measured(spec, "mini", 0.25, 0.25))
    assert written == tmp_path / "numbers" / "t-baselines.yaml" and written.is_file()
    assert spec.read_text() == "name: t\nbaseline: {measured: numbers/t-baselines.yaml}\nlimits: {}\n"


def test_the_spec_edit_handles_flow_block_and_missing_mappings(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\nbaseline: {mini: 1.0, full: 0.5}  # kept? no: rewritten\nlimits: {}\n")
    edit_baseline_mapping(spec, {"measured": "b.yaml"}, remove=("mini",))
    assert spec.read_text() == "name: t\nbaseline: {full: 0.5, measured: b.yaml}\nlimits: {}\n"
    spec.write_text("name: t\nlimits: {}")
    edit_baseline_mapping(spec, {"measured": "b.yaml"})
    assert spec.read_text() == "name: t\nlimits: {}\nbaseline:\n  measured: b.yaml\n"
    # a pinned block keeps its own entries: only the mapping's own level is edited
    spec.write_text("baseline:\n  pinned:\n    mini: 0.5\n  mini: 2\n")
    edit_baseline_mapping(spec, {"measured": "b.yaml"}, remove=("mini",))
    assert spec.read_text() == "baseline:\n  pinned:\n    mini: 0.5\n  measured: b.yaml\n"
    spec.write_text("baseline: {pinned: {full: 0.5}}\n")
    with pytest.raises(MlabError, match="block mapping or a one-line mapping of plain values"):
        edit_baseline_mapping(spec, {"measured": "b.yaml"})


@pytest.mark.slow
def test_the_command_measures_the_starter_and_the_written_baseline_then_passes(tmp_path, capsys, pytester,
                                                                                 mlab_cache):
    project = copy_toy_project(pytester.path)
    spec = project / "specs" / "tasks" / "toy.yaml"
    spec.write_text(spec.read_text().replace("baseline: {mini: 90.0, tolerance: 0.01}", "baseline: {mini: 1.0}"))
    assert main(["baseline", "toy", "--runs", "2", "--root", str(project), "--cache", str(mlab_cache),
                 "--write"]) == 0
    out = capsys.readouterr().out
    assert "toy (mini): 2 run(s) of the starter: 90, 90; mean 90, spread 0.00%; tolerance 0.01" in out
    assert "baseline: {measured: ../baselines/toy.yaml}" in spec.read_text()
    file = yaml.safe_load((project / "specs" / "baselines" / "toy.yaml").read_text())
    assert file["variants"]["mini"]["scores"] == [90.0, 90.0] and file["variants"]["mini"]["mean"] == 90.0
    result = run_specs(pytester, "--agent=baseline", cache_dir=mlab_cache)
    result.assert_outcomes(passed=1)
    # the spec reads the file: a different recorded mean is what the item checks against
    write_baselines(project / "specs" / "baselines" / "toy.yaml", "toy", {"mini": Measurement((80.0, 80.0))})
    result = run_specs(pytester, "--agent=baseline", cache_dir=mlab_cache)
    result.assert_outcomes(failed=1)
    assert "vs baseline 80" in result.stdout.str()


def test_a_pinned_variant_is_not_measured_over(tmp_path, capsys):
    project = copy_toy_project(tmp_path)
    spec = project / "specs" / "tasks" / "toy.yaml"
    spec.write_text(spec.read_text().replace("baseline: {mini: 90.0, tolerance: 0.01}", "baseline: {pinned: {mini: 1}}"))
    assert main(["baseline", "toy", "--write", "--root", str(project)]) == 2
    assert "task 'toy' pins its 'mini' baseline at 1" in capsys.readouterr().err
    assert not (project / "specs" / "baselines").exists()


def test_the_command_names_an_unknown_task_and_a_missing_variant(tmp_path, capsys):
    project = copy_toy_project(tmp_path)
    assert main(["baseline", "nope", "--root", str(project)]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["baseline", "toy", "--data", "huge", "--root", str(project)]) == 2
    assert "task 'toy' has no 'huge' data variant; it has: mini" in capsys.readouterr().err


def git_project(tmp_path: Path) -> Path:
    """The toy project as a git checkout with one commit, so `--add` can tell whether the task changed."""
    import subprocess

    project = copy_toy_project(tmp_path / "project")
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy"]):
        subprocess.run(["git", "-C", str(project), *command], check=True, capture_output=True)
    return project


def head(project: Path) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(project), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def recorded_here(project: Path, *scores: float, sandbox: str = "local", **machine_changes) -> Path:
    """The toy task's mini baseline recorded as if measured on this machine at the project's HEAD."""
    from pytest_mlab.results.environment import describe_environment

    where = describe_environment(project)
    machine = {key: where[key] for key in MACHINE_KEYS}
    machine.update(machine_changes)
    spec = project / "specs" / "tasks" / "toy.yaml"
    return record(Measured("toy", "mini", Measurement(scores, sandbox, "2026-11-23T10:00:00+0000", head(project),
                                                      machine), spec))


def fake_runs(monkeypatch, *scores: float) -> list:
    """Replace the starter's runs by ``scores``; returns the calls made, so a test sees whether any ran."""
    import pytest_mlab.cli.baseline as command
    from pytest_mlab.results.environment import describe_environment

    calls = []

    def measure(root, name, variant, runs, sandbox, cache, out, *, check=False):
        calls.append((name, variant, runs, sandbox))
        where = describe_environment(root)
        machine = {key: where[key] for key in MACHINE_KEYS}
        return Measured(name, variant, Measurement(scores[:runs], sandbox, "2026-11-24T10:00:00+0000", where["commit"],
                                                   machine), root / "specs" / "tasks" / f"{name}.yaml")

    monkeypatch.setattr(command, "measure", measure)
    return calls


def test_add_joins_new_runs_to_the_recorded_ones(tmp_path, capsys, monkeypatch):
    project = git_project(tmp_path)
    file = recorded_here(project, 0.5)
    calls = fake_runs(monkeypatch, 0.7, 0.6)
    assert main(["baseline", "toy", "--runs", "2", "--write", "--add", "--root", str(project)]) == 0
    assert calls == [("toy", "mini", 2, "local")]
    out = capsys.readouterr().out
    assert "with the 1 recorded run(s): toy (mini): 3 run(s) of the starter: 0.5, 0.7, 0.6; mean 0.6" in out
    entry = yaml.safe_load(file.read_text())["variants"]["mini"]
    assert entry["scores"] == [0.5, 0.7, 0.6] and entry["mean"] == 0.6
    assert entry["tolerance"] == Measurement((0.5, 0.7, 0.6)).tolerance > 0.01  # the spread of all three
    assert entry["measured"] == "2026-11-24T10:00:00+0000"  # when the latest part ran
    # and the spec reads the joined file without complaint
    from pytest_mlab.spec.baselines import read_baselines
    assert read_baselines(file, "toy", "toy.yaml")["mini"].scores == (0.5, 0.7, 0.6)


def test_add_ignores_changes_to_the_reference_solution(tmp_path, capsys, monkeypatch):
    """The baseline agent runs the starter, never reference/: a mended reference is no new task."""
    project = git_project(tmp_path)
    recorded_here(project, 0.5)
    reference = project / "task_assets" / "toy" / "reference"
    solution = next(path for path in reference.rglob("*") if path.is_file())
    solution.write_text(solution.read_text() + "\n# faster\n")
    (reference / "notes.txt").write_text("untracked\n")
    calls = fake_runs(monkeypatch, 0.7)
    assert main(["baseline", "toy", "--runs", "1", "--write", "--add", "--root", str(project)]) == 0, \
        capsys.readouterr().err
    assert calls == [("toy", "mini", 1, "local")]


def test_add_needs_write_and_a_recorded_baseline(tmp_path, capsys, monkeypatch):
    project = git_project(tmp_path)
    calls = fake_runs(monkeypatch, 1.0)
    assert main(["baseline", "toy", "--add", "--root", str(project)]) == 2
    assert "use it together with --write" in capsys.readouterr().err
    assert main(["baseline", "toy", "--add", "--write", "--root", str(project)]) == 2
    assert "task 'toy' has no baselines file yet" in capsys.readouterr().err
    recorded_here(project, 0.5)
    assert main(["baseline", "toy", "--add", "--write", "--data", "full", "--root", str(project)]) == 2
    assert "has no 'full' baseline to add to" in capsys.readouterr().err
    assert calls == []  # refused before any run


@pytest.mark.parametrize("change, message", [
    ("sandbox", "ran in the 'docker' sandbox, these would run in 'local'"),
    ("machine", "were measured on another machine (cpus 999 there"),
    ("task", "the task changed since the recorded runs"),
    ("untracked", "): task_assets/toy/extra.py; the starter may score differently"),
    ("spec", "): specs/tasks/toy.yaml; the starter may score differently"),
    ("commit", "name no commit to compare with"),
])
def test_add_refuses_runs_that_would_not_be_one_sample(tmp_path, capsys, monkeypatch, change, message):
    project = git_project(tmp_path)
    file = recorded_here(project, 0.5, sandbox="docker" if change == "sandbox" else "local",
                         **({"cpus": 999} if change == "machine" else {}))
    if change == "task":
        starter = project / "task_assets" / "toy" / "env" / "train.py"
        starter.write_text(starter.read_text() + "\n# tuned\n")
    if change == "spec":
        spec = project / "specs" / "tasks" / "toy.yaml"
        spec.write_text(spec.read_text().replace("max_steps: 10", "max_steps: 11"))
    if change == "untracked":
        (project / "task_assets" / "toy" / "extra.py").write_text("x = 1\n")
    if change == "commit":
        text = file.read_text()
        file.write_text(text.replace(f"commit: {head(project)}", "commit: unknown"))
    before = file.read_text()
    calls = fake_runs(monkeypatch, 1.0)
    assert main(["baseline", "toy", "--add", "--write", "--root", str(project)]) == 2
    assert message in capsys.readouterr().err
    assert calls == [] and file.read_text() == before


# --- --check: was each recorded baseline measured on the task as it is? -----------------------------


def test_check_says_a_baseline_is_current_until_the_task_changes(tmp_path, capsys):
    project = git_project(tmp_path)
    recorded_here(project, 0.5)
    assert main(["baseline", "--check", "--root", str(project)]) == 0
    assert f"toy (mini): current (1 run(s) at commit {head(project)[:12]}, local sandbox)" in capsys.readouterr().out
    starter = project / "task_assets" / "toy" / "env" / "train.py"
    starter.write_text(starter.read_text() + "\n# tuned\n")
    assert main(["baseline", "--check", "--root", str(project)]) == 1
    out = capsys.readouterr().out
    assert f"toy (mini): STALE (1 run(s) at commit {head(project)[:12]}, local sandbox); since then: " \
           "task_assets/toy/env/train.py" in out
    assert "measure it again: pytest-mlab baseline toy --data mini --runs 3 --sandbox local --write" in out


def test_check_says_a_baseline_is_stale_once_the_agents_python_changed(tmp_path, capsys):
    """A starter measured with another lock's packages (or pytest's own) may score differently now."""
    project = git_project(tmp_path)
    recorded_here(project, 0.5, agents_python="locked (requirements.lock 0123456789abcdef)")
    assert main(["baseline", "--check", "--root", str(project)]) == 1
    out = capsys.readouterr().out
    assert ("since then: the agents' Python (locked (requirements.lock 0123456789abcdef) then, "
            f"{describe()} now)") in out
    recorded_here(project, 0.5, agents_python=None)
    assert main(["baseline", "--check", "--root", str(project)]) == 1
    assert "the agents' Python (not recorded then" in capsys.readouterr().out


def test_check_ignores_what_cannot_move_the_baseline_agents_score(tmp_path, capsys):
    """The problem statement (the baseline agent never reads it) and the reference solution (it never
    runs it); a changed metric or limit does count."""
    project = git_project(tmp_path)
    recorded_here(project, 0.5)
    spec = project / "specs" / "tasks" / "toy.yaml"
    spec.write_text(spec.read_text().replace("Predict the sum", "Predict, as precisely as you can, the sum"))
    (project / "task_assets" / "toy" / "reference").mkdir(exist_ok=True)
    (project / "task_assets" / "toy" / "reference" / "better.py").write_text("x = 1\n")
    assert main(["baseline", "--check", "--root", str(project)]) == 0, capsys.readouterr().out
    spec.write_text(spec.read_text().replace("direction: minimize", "direction: maximize"))
    assert main(["baseline", "--check", "--root", str(project)]) == 1
    assert "since then: specs/tasks/toy.yaml" in capsys.readouterr().out


def test_check_ignores_where_a_task_file_imports_the_harness_from(tmp_path, capsys):
    """A grader that imports the same names from another module of pytest_mlab is the same grader;
    a different name imported, or any other line changed, is not."""
    project = git_project(tmp_path)
    recorded_here(project, 0.5)
    grader = project / "task_assets" / "toy" / "grader.py"
    original = grader.read_text()
    grader.write_text(original.replace("from pytest_mlab.task_api import InvalidSubmission",
                                       "from pytest_mlab.errors import (\n    InvalidSubmission,\n)"))
    assert main(["baseline", "--check", "--root", str(project)]) == 0, capsys.readouterr().out
    grader.write_text(original.replace("import InvalidSubmission", "import InvalidSubmission as Refused"))
    assert main(["baseline", "--check", "--root", str(project)]) == 1
    assert "since then: task_assets/toy/grader.py" in capsys.readouterr().out
    grader.write_text(original.replace("[:40]", "[:80]"))
    assert main(["baseline", "--check", "--root", str(project)]) == 1


def test_check_runs_nothing_and_names_a_task_without_a_record(tmp_path, capsys, monkeypatch):
    project = git_project(tmp_path)
    calls = fake_runs(monkeypatch, 1.0)
    assert main(["baseline", "toy", "--check", "--root", str(project)]) == 0
    assert "toy: no recorded baseline (specs/baselines/toy.yaml does not exist)" in capsys.readouterr().out
    assert main(["baseline", "toy", "--check", "--write", "--root", str(project)]) == 2
    assert "--check only reads the recorded baselines" in capsys.readouterr().err
    assert main(["baseline", "--root", str(project)]) == 2
    assert "name the tasks to measure" in capsys.readouterr().err
    assert calls == []


def test_every_baseline_this_project_records_was_measured_on_its_task_as_it_is(capsys):
    """A task whose starter, data recipe, grader or scored spec changed after its baseline was
    measured needs measuring again: the command the failure prints does it."""
    import subprocess

    from tests.helpers import REPO

    shallow = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True, check=False)
    if shallow.returncode != 0:
        pytest.skip("the project is not a git checkout here, so when a baseline was measured cannot be compared")
    if shallow.stdout.strip() == "true":
        pytest.skip("a shallow clone lacks the commits the baselines were measured at")
    code = main(["baseline", "--check", "--root", str(REPO)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "clrs (mini): current" in out  # the check did look at the catalogue


# --- authoring: a new task, or one that extends another, is measured after it is written ------------


def project_at(root: Path):
    """The project's specs, read afresh (a Project keeps the tasks it built)."""
    from pytest_mlab.spec.project import Project

    return Project(root, root / "specs" / "actions", root / "agents", root / "specs" / "tasks")


def new_task(project: Path, name: str = "my-task") -> Path:
    """The toy spec copied as a new task the way the authoring guide says: renamed, its baselines
    file named after it (not measured yet)."""
    spec = project / "specs" / "tasks" / f"{name}.yaml"
    toy = (project / "specs" / "tasks" / "toy.yaml").read_text()
    spec.write_text(toy.replace("name: toy", f"name: {name}").replace(
        "baseline: {mini: 90.0, tolerance: 0.01}", f"baseline: {{measured: ../baselines/{name}.yaml}}"))
    (project / "specs" / "tasks" / "toy.yaml").unlink()
    return spec


def test_a_new_tasks_runs_are_skipped_with_the_command_that_measures_its_baseline(pytester, toy_project, mlab_cache,
                                                                                   capsys, monkeypatch):
    from tests.helpers import output_of

    new_task(toy_project)
    command = "`pytest-mlab baseline my-task --data mini --write`"
    result = run_specs(pytester, "-rs", cache_dir=mlab_cache)
    result.assert_outcomes(skipped=2)  # the baseline and the reference run: each is graded against the baseline
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # nothing ran: CI must not go green on an unmeasured task
    out = output_of(result)
    assert f"pytest-mlab: no 'mini' baseline yet for 1 task(s): my-task; their runs are skipped (each is graded " \
           f"against it). Measure them: {command}" in out
    assert "task 'my-task' has no 'mini' baseline yet (specs/baselines/my-task.yaml does not exist): measure it " \
           f"with {command}" in out
    assert run_specs(pytester, "--mlab-allow-skips", cache_dir=mlab_cache).ret == pytest.ExitCode.OK
    fake_runs(monkeypatch, 42.0)
    assert main(["baseline", "my-task", "--runs", "1", "--write", "--root", str(toy_project)]) == 0
    assert yaml.safe_load((toy_project / "specs" / "baselines" / "my-task.yaml").read_text())["task"] == "my-task"
    result = run_specs(pytester, "--collect-only", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK and "no 'mini' baseline" not in output_of(result)


def test_a_task_that_extends_a_measured_one_and_changes_its_score_is_measured_into_its_own_file(tmp_path, capsys,
                                                                                                  monkeypatch):
    from pytest_mlab.spec.baselines import missing_baseline

    project = git_project(tmp_path)
    recorded_here(project, 90.0)
    same = project / "specs" / "tasks" / "same.yaml"
    same.write_text("kind: Task\nname: same\nextends: toy\ndescription: Add the numbers up.\n")
    child = project / "specs" / "tasks" / "child.yaml"
    child.write_text("kind: Task\nname: child\nextends: toy\nlimits: {execute_timeout: 1s}\n")
    tasks = project_at(project)
    assert tasks.task_from_file(same).baseline == {"mini": 90.0}
    assert "the baselines of 'toy' do not apply: this task changes limits" in \
        missing_baseline(tasks.task_from_file(child), "mini")
    fake_runs(monkeypatch, 85.0)
    assert main(["baseline", "child", "--runs", "1", "--write", "--root", str(project)]) == 0
    assert child.read_text().endswith("baseline:\n  measured: ../baselines/child.yaml\n")
    assert project_at(project).task_from_file(child).baseline == {"mini": 85.0}
    assert main(["baseline", "--check", "--root", str(project)]) == 1  # child's runs: at an uncommitted spec
    assert "toy (mini): current" in capsys.readouterr().out


@pytest.mark.slow
def test_the_copied_task_loop_ends_measure_then_run(pytester, toy_project, mlab_cache, capsys):
    """Collect a new task (skipped), run the command its skip names (the real starter), collect and
    run again: the runs are graded against the measured baseline."""
    new_task(toy_project)
    run_specs(pytester, cache_dir=mlab_cache).assert_outcomes(skipped=2)
    assert main(["baseline", "my-task", "--runs", "1", "--write", "--root", str(toy_project), "--cache",
                 str(mlab_cache)]) == 0
    assert "my-task (mini): 1 run(s) of the starter: 90" in capsys.readouterr().out
    run_specs(pytester, cache_dir=mlab_cache).assert_outcomes(passed=2)
