"""The measure step (pytest_mlab/grading/measure.py): a fresh sandbox per execution, populated like
the run's workspace, an allow-listed environment, plain data brought back safely, and the
interleaved timing of submission, starter and start-up."""

from __future__ import annotations

import json
import os
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_mlab.grading.measure import MEASURE_DIR, copy_regular_tree
from pytest_mlab.grading.measured import executions
from pytest_mlab.grading.timing import SLOW_BOUND, relative_time
from tests.grading.support import timed_task, tiny_task

HEADER = "import json, os, sys\nimport mlab_measure\ninputs, out = mlab_measure.folders()\n"


def script(body: str) -> str:
    return HEADER + textwrap.dedent(body) + "\nmlab_measure.finish(out)\n"


def saved(measured: Path, name: str, subject: str = "submission", index: int = 0):
    return json.loads((measured / subject / str(index) / "out" / name).read_text())


def test_one_execution_writes_its_record_and_brings_its_output_back(tmp_path):
    task = tiny_task(tmp_path, script('''
        os.makedirs(os.path.join(out, "deep", "er"))
        open(os.path.join(out, "deep", "er", "value.txt"), "w").write("42")
        print("to stdout"); print("to stderr", file=sys.stderr)
    '''))
    measured = task.measure("local", {"train.py": "x = 1\n"})
    (run,) = executions(measured)
    assert run.returncode == 0 and not run.timed_out and run.truncated_reason is None
    assert run.cpu_time is not None and run.cpu_time > 0
    assert "to stdout" in run.output_tail and "to stderr" in run.output_tail
    assert (run.out / "deep" / "er" / "value.txt").read_text() == "42"
    assert run.result() == {}
    assert not (measured / "timing.json").exists()


def test_the_environment_is_the_allow_list_and_names_no_hidden_path(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-measure")
    task = tiny_task(tmp_path, script('''
        json.dump({"env": dict(os.environ), "argv": sys.argv, "cwd": os.getcwd(),
                   "inputs": sorted(os.listdir(inputs))}, open(os.path.join(out, "seen.json"), "w"))
    '''), hidden={"given.txt": "input", "answers.txt": "the answers"}, inputs=("given.txt",))
    seen = saved(task.measure(kind, {"train.py": ""}), "seen.json")
    assert seen["env"]["MLAB_MEASURE_PHASE"] == "run"
    text = json.dumps(seen)
    assert "sk-canary-measure" not in text and "OPENAI_API_KEY" not in text
    assert str(task.data.hidden) not in text and str(task.root) not in text
    assert seen["argv"][1:] == [f"{MEASURE_DIR}/inputs", f"{MEASURE_DIR}/out"]
    assert seen["inputs"] == ["given.txt"], "only the declared inputs, never the rest of the hidden folder"


def test_every_execution_gets_a_fresh_sandbox(kind, tmp_path):
    """Nothing an execution leaves (workspace files, /tmp, HOME) is seen by the next one."""
    task = tiny_task(tmp_path, script('''
        import tempfile
        places = ["left_behind.txt", os.path.join(tempfile.gettempdir(), "left_behind.txt"),
                  os.path.join(os.path.expanduser("~"), "left_behind.txt")]
        found = [place for place in places if os.path.exists(place)]
        for place in places:
            open(place, "w").write("from an earlier execution")
        json.dump(found, open(os.path.join(out, "found.json"), "w"))
    '''), starter={"work.py": ""}, repeats=2)
    measured = task.measure(kind, {"work.py": "# mine\n"})
    for subject in ("submission", "starter"):
        for index in range(2):
            assert saved(measured, "found.json", subject, index) == []


def test_subjects_get_their_own_files_and_the_overhead_execution_nothing(kind, tmp_path):
    task = tiny_task(tmp_path, script('''
        files = sorted(os.path.relpath(os.path.join(d, f), ".") for d, _, fs in os.walk(".") for f in fs)
        json.dump({"files": files, "phase": os.environ["MLAB_MEASURE_PHASE"]}, open(os.path.join(out, "ws.json"), "w"))
    '''), starter={"work.py": "# the starter\n", "helper.py": ""}, public={"data/table.csv": "a\n1\n"}, repeats=1)
    measured = task.measure(kind, {"work.py": "# the submission\n", "notes.txt": "mine"})
    measure_files = [f"{MEASURE_DIR}/measure.py", f"{MEASURE_DIR}/mlab_measure.py"]
    submission, starter, overhead = (saved(measured, "ws.json", name) for name in ("submission", "starter", "overhead"))
    assert submission == {"files": sorted(["data/table.csv", "notes.txt", "work.py", *measure_files]), "phase": "run"}
    assert starter == {"files": sorted(["data/table.csv", "helper.py", "work.py", *measure_files]), "phase": "run"}
    assert overhead == {"files": sorted(measure_files), "phase": "overhead"}


def test_timed_executions_are_interleaved_in_rotating_order_starter_first(tmp_path):
    task = tiny_task(tmp_path, script(""), starter={"work.py": ""}, repeats=4)
    measured = task.measure("local", {"work.py": ""})
    timing = json.loads((measured / "timing.json").read_text())
    assert timing["order"] == [["starter", "submission", "overhead"], ["submission", "overhead", "starter"],
                               ["overhead", "starter", "submission"], ["starter", "submission", "overhead"]]
    assert timing["unit"] == "cpu_seconds" and timing["repeats"] == 4 and timing["complete"] and not timing["slow"]
    for name in ("submission", "starter", "overhead"):
        assert len(timing[name]) == 4 and all(value > 0 for value in timing[name])
        assert [run.index for run in executions(measured, name)] == [0, 1, 2, 3]


def scripted_cpu_times(monkeypatch, **times: list[float]) -> None:
    """Every execution of the measure step returns the next CPU time of its subject."""
    from pytest_mlab.grading import measure as measure_module
    from pytest_mlab.sandbox.base import ExecResult

    left = {name: iter(values) for name, values in times.items()}

    def run(self, subject, index, *, phase="run", timeout=None):
        return ExecResult(returncode=0, stdout="", stderr="", timed_out=False, duration=1.0,
                          cpu_time=next(left[subject.name]))

    monkeypatch.setattr(measure_module._Runner, "run", run)


@pytest.mark.parametrize("submission", [
    [2.6, 2.9, 3.1, 2.0, 2.05],  # noisy: once more rounds would have been added until it settled
    [2.0, 2.02, 2.9, 9.0, 9.0],
])
def test_a_timed_measurement_runs_its_fixed_rounds_whatever_the_times(tmp_path, monkeypatch, submission):
    scripted_cpu_times(monkeypatch, submission=submission, starter=[2.0] * 5, overhead=[0.1] * 5)
    task = tiny_task(tmp_path, script(""), starter={"work.py": ""}, repeats=3)
    timing = json.loads((task.measure("local", {"work.py": ""}) / "timing.json").read_text())
    assert (timing["repeats"], timing["complete"], timing["slow"]) == (3, True, False)
    assert timing["submission"] == submission[:3] and len(timing["order"]) == 3
    assert "settled" not in timing and "max_repeats" not in timing


def test_a_submission_beyond_the_slow_bound_in_cpu_time_is_timed_once_and_scored_at_the_bound(tmp_path, monkeypatch):
    scripted_cpu_times(monkeypatch, submission=[SLOW_BOUND * 2.0 + 0.1] + [1.0] * 4, starter=[2.0] * 5,
                       overhead=[0.1] * 5)
    task = tiny_task(tmp_path, script(""), starter={"work.py": ""}, repeats=3)
    measured = task.measure("local", {"work.py": ""})
    timing = json.loads((measured / "timing.json").read_text())
    assert (timing["slow"], timing["complete"], timing["order"]) == (True, True, [["starter", "submission"]])
    assert relative_time(measured, "work.py") == SLOW_BOUND


@pytest.mark.parametrize("submission, relative", [(SLOW_BOUND * 2.0 - 0.1, SLOW_BOUND), (6.0, 5.9 / 1.9)])
def test_a_submission_inside_the_slow_bound_is_measured_in_full_and_capped_at_it(tmp_path, monkeypatch, submission,
                                                                                  relative):
    """Whole executions, start-up included, are compared: a work ratio of 4.1 runs every round, and
    its score is capped at the bound, never worse than a submission stopped there."""
    scripted_cpu_times(monkeypatch, submission=[submission] * 3, starter=[2.0] * 3, overhead=[0.1] * 3)
    task = tiny_task(tmp_path, script(""), starter={"work.py": ""}, repeats=3)
    measured = task.measure("local", {"work.py": ""})
    timing = json.loads((measured / "timing.json").read_text())
    assert not timing["slow"] and len(timing["submission"]) == 3
    assert relative_time(measured, "work.py") == pytest.approx(relative)


def test_a_submission_that_outlasts_the_slow_bound_is_stopped_once_and_graded_slow(tmp_path, monkeypatch):
    """Stopped at SLOW_BOUND times the starter's wall-clock time (plus a grace), not the task's own
    time-out, and never run again: a slow submission does not hold the grading for every round."""
    from pytest_mlab.grading import measure as measure_module

    monkeypatch.setattr(measure_module, "SLOW_GRACE_S", 1.0)
    timed = timed_task(tmp_path, repeats=3)
    grade = timed.grade("local", {"work.py": "import time\ndef compute(n):\n    time.sleep(600)\n"})
    assert grade.valid and grade.score == SLOW_BOUND
    assert grade.timing["slow"] and grade.timing["order"] == [["starter", "submission"]]


def test_a_submission_cannot_make_the_starter_look_slow(kind, tmp_path):
    """The bound and the paired ratios read the starter's executions; the submission's code never
    runs in them, and nothing it starts outlives its own sandbox to load the starter's: a process
    left behind to burn the CPU (or to write a file the starter's sandbox could see) is gone."""
    marker = tmp_path / "still-running"
    task = tiny_task(tmp_path / "task", script(f'''
        if os.path.exists("attack"):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    import time
                    time.sleep(1.0)
                    try:
                        open({str(marker)!r}, "w").write("alive")
                    except OSError:
                        pass
                    while True:
                        pass
                os._exit(0)
        json.dump({{"seen": os.path.exists({str(marker)!r})}}, open(os.path.join(out, "seen.json"), "w"))
    '''), starter={"work.py": ""}, repeats=2)
    measured = task.measure(kind, {"attack": "", "work.py": ""})
    time.sleep(1.5)  # past the moment a survivor would write
    assert not marker.exists()
    for index in range(2):
        assert saved(measured, "seen.json", "starter", index) == {"seen": False}


def test_the_grade_carries_a_timed_measurement_and_nothing_otherwise(tmp_path):
    timed = tiny_task(tmp_path / "timed", script(""), starter={"work.py": ""}, repeats=2)
    grade = timed.grade("local", {"work.py": ""})
    assert grade.valid and grade.timing is not None
    assert grade.timing["repeats"] == 2 and len(grade.timing["submission"]) == 2 and grade.timing["complete"]
    untimed = tiny_task(tmp_path / "untimed", script(""), starter={"work.py": ""})
    assert untimed.grade("local", {"work.py": ""}).timing is None


def test_a_rescore_leaves_its_own_measurement_in_the_run_folder(tmp_path):
    """``pytest-mlab rescore`` measures a timed task again; the run folder then explains the new
    score, not the run's first one."""
    from pytest_mlab.grading.rescore import regrade_final

    timed = tiny_task(tmp_path / "run", script(""), starter={"work.py": ""}, repeats=2)
    _, snapshot = timed.snapshot({"work.py": ""})
    run_dir = timed.root  # the snapshots are in run/snapshots, as a run keeps them
    (run_dir / "trace.jsonl").write_text(json.dumps({"type": "result", "snapshot": snapshot}) + "\n")
    (run_dir / "timing.json").write_text('{"repeats": 7}')
    grade, _, _ = regrade_final(timed.task, run_dir, timed.data, sandbox="local", label="test-tiny", variant="mini",
                                end_reason="final answer", expect="success", message="")
    kept = json.loads((run_dir / "timing.json").read_text())
    assert kept == dict(grade.timing) and kept["repeats"] == 2 and kept["complete"]


GPU_REPORT = HEADER + textwrap.dedent('''
    if mlab_measure.overhead_phase():
        mlab_measure.finish(out)
    sys.path.insert(0, os.getcwd())
    import work
    mlab_measure.finish(out, **work.REPORT)
''')


@pytest.mark.parametrize("starter, on_gpu", [("REPORT = {'on_gpu': True}\n", True), ("REPORT = {}\n", False)])
def test_the_starter_alone_says_whether_wall_clock_seconds_are_compared(tmp_path, starter, on_gpu):
    """The starter's first execution decides; start-up is timed either way, and the harness's
    wall-clock seconds of every execution are recorded beside the CPU seconds."""
    task = tiny_task(tmp_path, GPU_REPORT, starter={"work.py": starter}, repeats=3)
    measured = task.measure("local", {"work.py": "REPORT = {'on_gpu': True, 'gpu_seconds': 1e-9}\n"})
    timing = json.loads((measured / "timing.json").read_text())
    assert timing["on_gpu"] is on_gpu and timing["complete"]
    for name in ("submission", "starter", "overhead"):
        assert len(timing[name]) == len(timing["wall_seconds"][name]) == 3
        assert all(wall > 0 for wall in timing["wall_seconds"][name])
        assert [run.result() is not None for run in executions(measured, name)] == [True] * 3


def test_every_grading_draws_its_own_seed_and_passes_it_to_every_execution(tmp_path):
    """The same seed for the starter and the submission (their outputs are compared), a new one at
    the next grading, recorded in timing.json once graded, and in no file the subjects are given."""
    task = tiny_task(tmp_path, script('''
        if not mlab_measure.overhead_phase():
            json.dump({"seed": mlab_measure.grading_seed(), "files": sorted(os.listdir("."))},
                      open(os.path.join(out, "seed.json"), "w"))
    '''), starter={"work.py": ""}, repeats=2)
    seeds = []
    for _ in range(2):
        measured = task.measure("local", {"work.py": ""})
        timing = json.loads((measured / "timing.json").read_text())
        seen = {saved(measured, "seed.json", name, index)["seed"] for name in ("submission", "starter")
                for index in range(2)}
        assert seen == {timing["inputs_seed"]}
        files = saved(measured, "seed.json")["files"]
        assert files == [".mlab-measure", "work.py"]
        seeds.append(timing["inputs_seed"])
    assert seeds[0] != seeds[1]


def test_timing_stops_at_the_first_failed_execution(tmp_path):
    task = tiny_task(tmp_path, script('''
        if os.path.exists("broken"):
            sys.exit(5)
    '''), starter={"work.py": ""}, repeats=3)
    measured = task.measure("local", {"broken": ""})
    timing = json.loads((measured / "timing.json").read_text())
    assert not timing["complete"] and len(timing["submission"]) == 1 and len(timing["starter"]) == 1
    assert [run.returncode for run in executions(measured)] == [5]
    assert not (measured / "overhead").exists()


def test_links_of_the_snapshot_and_a_prefilled_measure_folder_never_reach_the_sandbox(kind, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    task = tiny_task(tmp_path / "task", script('''
        json.dump({"link": os.path.lexists("secret.txt"), "listed": sorted(os.listdir(out)),
                   "script": open(sys.argv[0]).read().startswith("import json")},
                  open(os.path.join(out, "seen.json"), "w"))
    '''))
    measured = task.measure(kind, {f"{MEASURE_DIR}/out/result.json": '{"forged": true}',
                                   f"{MEASURE_DIR}/measure.py": "print('replaced')", "train.py": ""},
                            links={"secret.txt": str(secret)})
    assert saved(measured, "seen.json") == {"link": False, "listed": [], "script": True}
    assert executions(measured)[0].result() == {}


def test_only_regular_files_come_back_and_only_up_to_the_limit(kind, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("host file")
    task = tiny_task(tmp_path / "task", script(f'''
        os.symlink({str(outside)!r}, os.path.join(out, "link.txt"))
        os.symlink("/", os.path.join(out, "root"))
        os.mkfifo(os.path.join(out, "fifo"))
        open(os.path.join(out, "a_small.txt"), "w").write("ok")
        open(os.path.join(out, "big.bin"), "wb").write(b"x" * 5000)
    '''), output_limit=4096)
    (run,) = executions(task.measure(kind, {"train.py": ""}))
    assert sorted(p.name for p in run.out.iterdir()) == ["a_small.txt"]
    assert "4096 bytes" in run.truncated_reason and "big.bin" in run.truncated_reason
    assert run.result() is None and "more output files than a measurement may" in run.failure("it")


def test_an_output_folder_swapped_for_a_link_brings_nothing_back(kind, tmp_path):
    task = tiny_task(tmp_path, script('''
        import shutil
        shutil.rmtree(out)
        os.symlink("/etc", out)
    '''))
    (run,) = executions(task.measure(kind, {"train.py": ""}))
    assert list(run.out.iterdir()) == [] and "is not a folder" in run.truncated_reason


def test_data_files_are_linked_read_only(tmp_path):
    task = tiny_task(tmp_path, script('''
        try:
            open("data.csv", "a").write("tampered")
            result = "written"
        except OSError as error:
            result = type(error).__name__
        json.dump(result, open(os.path.join(out, "write.json"), "w"))
    '''), public={"data.csv": "a\n1\n"})
    for backend in ("bwrap", "docker"):
        from pytest_mlab.sandbox.registry import sandbox_unavailable

        if sandbox_unavailable(backend):
            continue
        assert saved(task.measure(backend, {"train.py": ""}), "write.json") != "written"
    assert (task.data.public / "data.csv").read_text() == "a\n1\n"


def test_the_copy_back_counts_files(tmp_path):
    source = tmp_path / "root" / "out"
    source.mkdir(parents=True)
    for index in range(5):
        (source / f"f{index}").write_text("x")
    copied = copy_regular_tree(tmp_path / "root", "out", tmp_path / "dest", max_bytes=1 << 20, max_files=3)
    assert copied.files == 3 and copied.truncated == "more than 3 files"
    assert sorted(os.listdir(tmp_path / "dest")) == ["f0", "f1", "f2"]


def test_a_timed_out_execution_is_recorded(tmp_path):
    task = tiny_task(tmp_path, script("import time\ntime.sleep(60)\n"), timeout=1)
    (run,) = executions(task.measure("local", {"train.py": ""}))
    assert run.timed_out and run.returncode is None and run.result() is None
    assert run.failure("the measurement") == "the measurement did not finish within 1 s"


@pytest.mark.parametrize("submission, link, message", [
    ("train.py", "train.py", "train.py is a symbolic link; graders read regular files only"),
    ("checkpoints/params.npz", "checkpoints", "checkpoints/params.npz lies under checkpoints, a symbolic link; "
                                              "graders read regular files only"),
])
def test_a_symlinked_submission_is_invalid_and_nothing_behind_it_is_quoted(tmp_path, submission, link, message):
    secret = tmp_path / "private"
    secret.mkdir()
    (secret / "params.npz").write_text("token=very-secret-value\n")
    task = tiny_task(tmp_path / "task", script(""), submission=submission)
    grade = task.grade("local", {}, links={link: str(secret / "params.npz" if link == submission else secret)})
    assert not grade.valid and grade.score is None
    assert grade.invalid_reason.startswith(message)
    assert "very-secret-value" not in grade.invalid_reason and str(secret) not in grade.invalid_reason
    elsewhere = task.grade("local", {submission: "mine"}, links={"other": str(secret)})
    assert elsewhere.valid and elsewhere.score == 1.0  # a link elsewhere is left out, not an error


def test_a_script_runs_and_ends_while_a_timed_measurement_is_in_progress(tmp_path):
    """No lock between them: an Execute Script step of another run starts and finishes while the
    first execution of a timed measurement is still running (it waits for the file the step
    writes, at most a minute); a measurement never makes another item's step wait."""
    from tests.env.support import make_environment

    started, release = tmp_path / "started", tmp_path / "release"
    task = tiny_task(tmp_path / "task", script(f'''
        import time
        open({str(started)!r}, "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists({str(release)!r}) and time.monotonic() < deadline:
            time.sleep(0.05)
        json.dump({{"released": os.path.exists({str(release)!r})}}, open(os.path.join(out, "seen.json"), "w"))
    '''), starter={"work.py": ""}, repeats=1)
    (tmp_path / "run").mkdir()
    env = make_environment(tmp_path / "run", files={"step.py": f"open({str(release)!r}, 'w').close()\nprint('done')"})
    with ThreadPoolExecutor(1) as pool:
        measuring = pool.submit(task.measure, "local", {"work.py": ""})
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the measurement did not start"
        observation = env.step("Execute Script", {"script_name": "step.py"})
        still_measuring = not measuring.done()  # behind a lock, the step would have waited for the end
        measured = measuring.result()
    assert observation.endswith("done\n") and still_measuring
    first = json.loads((measured / "timing.json").read_text())["order"][0][0]
    assert saved(measured, "seen.json", first) == {"released": True}
