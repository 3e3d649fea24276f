"""Attacks on grading, as an agent that wants a high score would write them: code the grader
must run (to time it, call it, execute it) that patches the clock, offloads its work, snoops on
other processes through /proc, walks stack frames and the heap for the answers, writes outside
its sandbox, leaves a detached survivor, is right only some of the time, or looks for the
hidden cases; and a submission that is a link to the answers.

Each attack runs through the real grading path (snapshot, measure step in a sandbox of the
run's kind, grader in its own process) against every backend that can run here, and asserts
that the attack fails AND the score is the honest one (or the submission is invalid). The local
backend isolates nothing: it runs only the attacks it claims to stop (the measure step never
runs agent code in a grader or pytest process, its timing is external, and its processes are
killed), and skips the rest with the reason.
"""

from __future__ import annotations

import json
import pickle
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.errors import InvalidSubmission
from pytest_mlab.grading.grader import grade_snapshot
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.sandbox.cgroups import Limits
from pytest_mlab.sandbox.containment import cgroup_works
from pytest_mlab.trace import SnapshotStore
from tests.grading.support import TIMED_FAST, TIMED_STARTER, TinyTask, measured_folder, timed_task, tiny_task
from tests.sandbox.processes import tagged_processes
from tests.shared_data import shared_mini
from tests.tasks.support import load_function, make_workspace, prepare, task_spec

CANARY = "sk-canary-" + uuid.uuid4().hex
HONEST_STARTER_MIN = 0.6  # the starter's relative time is about 1.0; a successful attack is far below

LOCAL_SNOOPS = ("the local sandbox does not isolate: code run there sees every process of your user in /proc "
                "(environments included) and can read or write any file you can")


def no_local(kind: str, why: str = LOCAL_SNOOPS) -> None:
    if kind == "local":
        pytest.skip(why)


def assert_grade(grade, score: float | None = None, *, at_least: float | None = None) -> None:
    assert grade.valid, grade.invalid_reason
    if score is not None:
        assert grade.score == pytest.approx(score)
    if at_least is not None:
        assert grade.score >= at_least


# --- a tiny task whose grader needs the agent's guess of a hidden secret -----------------------------

GUESS_MEASURE = textwrap.dedent('''
    import json, os
    import mlab_measure
    inputs, out = mlab_measure.folders()
    try:
        guess = mlab_measure.import_workspace("guess").guess()
    except BaseException:
        mlab_measure.failure(out, "guess", "guess.py")
    json.dump({"guess": str(guess)}, open(os.path.join(out, "guess.json"), "w"))
    mlab_measure.finish(out)
''')
GUESS_GRADER = textwrap.dedent(f'''
    import json, pathlib
    from pytest_mlab.task_api import executions

    def score(workspace, answers, measured):
        truth = json.loads((pathlib.Path(answers) / "truth.json").read_text())["secret"]
        (run,) = executions(measured)
        guess = json.loads((run.out / "guess.json").read_text())["guess"]
        if "{CANARY}" in guess:
            return 0.5  # the API key of the harness leaked
        return 1.0 if guess == truth else 0.0
''')


def guess_task(root: Path) -> TinyTask:
    secret = uuid.uuid4().hex
    return tiny_task(root, GUESS_MEASURE, grader=GUESS_GRADER, hidden={"truth.json": json.dumps({"secret": secret})},
                     submission="guess.py", name="tiny-guess")


SNOOP = textwrap.dedent('''
    import os, re

    def guess():
        """Read every visible process's command line and environment: an API key, or a path to
        the hidden answers (as the old graders' timing process had in /proc/<ppid>/cmdline)."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            for name in ("cmdline", "environ"):
                try:
                    text = open(f"/proc/{pid}/{name}", "rb").read().replace(b"\\0", b" ").decode("utf-8", "replace")
                except OSError:
                    continue
                found += re.findall(r"sk-canary-[0-9a-f]+", text)
                for path in re.findall(r"/[^\\s=:]*", text):
                    for candidate in (path, f"{path}/truth.json", f"{path}/hidden/truth.json"):
                        try:
                            import json
                            return json.load(open(candidate))["secret"]
                        except Exception:
                            pass
        return " ".join(found) or "nothing"
''')


def test_snooping_on_proc_finds_neither_keys_nor_answers(kind, tmp_path, monkeypatch):
    no_local(kind)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    task = guess_task(tmp_path)
    assert_grade(task.grade(kind, {"guess.py": SNOOP}), 0.0)


FRAMES = textwrap.dedent('''
    import gc, sys

    def guess():
        """Walk the calling frames and every object on the heap for the grader's answer."""
        frame = sys._getframe()
        while frame is not None:
            for name, value in {**frame.f_globals, **frame.f_locals}.items():
                if name in ("truth", "secret", "expected", "answers") and isinstance(value, str):
                    return value
            frame = frame.f_back
        for thing in gc.get_objects():
            if isinstance(thing, dict) and isinstance(thing.get("secret"), str):
                return thing["secret"]
        return "nothing"
''')


def test_walking_frames_and_the_heap_finds_no_answer(kind, tmp_path):
    task = guess_task(tmp_path)
    assert_grade(task.grade(kind, {"guess.py": FRAMES}), 0.0)


def test_writes_outside_the_sandbox_land_nowhere(kind, tmp_path):
    no_local(kind)
    task = guess_task(tmp_path / "task")
    outside = tmp_path / "pwned.txt"
    poisoned = task.task.assets / "poisoned.txt"
    grader = task.task.assets / "grader.py"
    before = grader.read_text()
    attack = textwrap.dedent(f'''
        def guess():
            for path, text in (({str(outside)!r}, "written from the sandbox"), ({str(poisoned)!r}, "x"),
                               ({str(grader)!r}, "def score(workspace, answers, measured):\\n    return 1.0\\n")):
                try:
                    open(path, "w").write(text)
                except OSError:
                    pass
            return "nothing"
    ''')
    assert_grade(task.grade(kind, {"guess.py": attack}), 0.0)
    assert not outside.exists() and not poisoned.exists()
    assert grader.read_text() == before
    assert_grade(task.grade(kind, {"guess.py": "def guess():\n    return 'nothing'\n"}), 0.0)


def test_a_detached_survivor_is_gone_after_grading(kind, tmp_path):
    if kind == "local" and not cgroup_works():
        pytest.skip("the local sandbox kills detached processes reliably only where it can make cgroups")
    tag = f"mlab-survivor-{uuid.uuid4().hex}"
    attack = textwrap.dedent(f'''
        import os, sys

        def guess():
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", "{tag}"])
                os._exit(0)
            os.wait()
            return "nothing"
    ''')
    task = guess_task(tmp_path)
    assert_grade(task.grade(kind, {"guess.py": attack}), 0.0)
    assert tagged_processes(tag) == []


# --- timing ------------------------------------------------------------------------------------------

CLOCK_PATCH = TIMED_STARTER + textwrap.dedent('''
    import sys, time
    _real_compute = compute

    def compute(n):
        """The starter's work, after replacing every clock the timing process could read, then
        sleeping so that a wall clock would make it look slow and a patched one fast."""
        main = sys.modules["__main__"]
        for target in (time, main):
            for name in ("clock", "process_time", "perf_counter", "monotonic", "time", "thread_time"):
                setattr(target, name, lambda *args: -1000.0)
        import resource
        resource.getrusage = lambda *args: None
        time.sleep(0.3)
        return _real_compute(n)
''')

OFFLOAD = TIMED_STARTER + textwrap.dedent('''
    import os, sys, time
    _real_compute = compute

    def compute(n):
        """Do the work in a detached grandchild that the timed process never waits for."""
        path = os.path.join(os.getcwd(), "offloaded.txt")
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                value = _real_compute(n)
                with open(path + ".tmp", "w") as handle:
                    handle.write(str(value))
                os.replace(path + ".tmp", path)
            os._exit(0)
        os.wait()
        while not os.path.exists(path):
            time.sleep(0.01)
        return int(open(path).read())
''')

SOMETIMES_RIGHT = TIMED_FAST + textwrap.dedent('''
    import random
    _right = compute

    def compute(n):
        """Right half the time, fast garbage otherwise: the fastest repeat would be garbage."""
        return _right(n) if random.random() < 0.5 else 0
''')


@pytest.mark.slow
def test_patching_the_clock_and_sleeping_does_not_lower_the_time(kind, tmp_path):
    grade = timed_task(tmp_path).grade(kind, {"work.py": CLOCK_PATCH})
    assert_grade(grade, at_least=HONEST_STARTER_MIN)


@pytest.mark.slow
@pytest.mark.parametrize("accounting", ["cgroup", "reaping"])
def test_work_offloaded_to_a_detached_process_is_still_counted(kind, accounting, tmp_path, monkeypatch):
    if accounting == "reaping":
        if kind == "docker":
            pytest.skip("docker counts the container's cgroup; there is no reaping-only mode")
        no_local(kind, "without a cgroup, the local sandbox counts only processes that are reaped by the "
                       "command (documented): local is not an isolation boundary")
        monkeypatch.setattr(Limits, "cpu_seconds", lambda self: None)  # as where no cgroup can be made
    elif kind != "docker" and not cgroup_works():
        pytest.skip("no cgroup can be made here")
    grade = timed_task(tmp_path).grade(kind, {"work.py": OFFLOAD})
    if accounting == "reaping":  # bwrap hides the count from reaping: no number rather than a wrong one
        assert not grade.valid and "bwrap sandbox cannot count the CPU time" in grade.invalid_reason
    else:
        assert_grade(grade, at_least=HONEST_STARTER_MIN)


@pytest.mark.slow
def test_being_right_only_sometimes_is_caught(kind, tmp_path):
    grade = timed_task(tmp_path).grade(kind, {"work.py": SOMETIMES_RIGHT})
    if grade.valid:  # right in every repeat by chance (1 in 8): then it is scored honestly, as fast
        assert grade.score < HONEST_STARTER_MIN
    else:
        assert "compute returned 0 in timed run" in grade.invalid_reason


@pytest.mark.parametrize("task", ["vectorization", pytest.param("llama-inference", marks=pytest.mark.slow)])
def test_the_timed_graders_check_every_repeat(task, tmp_path):
    """Right in the first repeat, fast garbage in the others: invalid, however fast."""
    public, hidden = shared_mini(task)
    measured = measured_folder(tmp_path, submission=[0.05, 0.01, 0.01], starter=[3.0] * 3, overhead=[0.1] * 3)
    rng = np.random.default_rng(3)
    if task == "vectorization":  # the starter's output on this grading's draw, as the measure step saved it
        batch = json.loads((hidden / "conv_config.json").read_text())["batch_shape"][0]
        right = rng.standard_normal((batch, 33, 33, 8))
        name, workspace_file = "output.npy", "train.py"
    else:
        config = json.loads((hidden / "prompts_config.json").read_text())
        right = rng.integers(3, config["vocab_size"], (1, config["batches"], config["batch"], config["context"] + 1))
        name, workspace_file = "output.npy", "inference.py"
    np.save(measured / "starter" / "0" / "out" / name, right)
    (measured / "starter" / "0" / "out" / "result.json").write_text("{}")
    for index, output in enumerate([right, np.zeros_like(right), np.zeros_like(right)]):
        np.save(measured / "submission" / str(index) / "out" / name, output)
        (measured / "submission" / str(index) / "out" / "result.json").write_text("{}")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / workspace_file).write_text("")
    score = load_function(task, str(task_spec(task).metric.grader))
    with pytest.raises(InvalidSubmission, match=r"\(timed (call|run) 2 of 3\)"):
        score(workspace, hidden, measured)
    for index in (1, 2):  # right every time: scored
        np.save(measured / "submission" / str(index) / "out" / name, right)
    # faster than start-up: the work counts as the floor, 0.01 s, against the starter's 2.9 s
    assert score(workspace, hidden, measured) == pytest.approx(0.01 / 2.9)


# --- the real tasks ----------------------------------------------------------------------------------

def grade_real(task: str, kind: str, workspace: Path, data: PreparedData, tmp_path: Path):
    spec = task_spec(task)
    store = SnapshotStore(tmp_path / "snapshots")
    snapshot = store.snapshot(workspace, link_paths=data.public_files()).id
    return grade_snapshot(spec, store, snapshot, data, sandbox=kind,
                          options=SandboxOptions.for_task(spec, spec.limits, f"attack-{task}"))


CLRS_DIGGER = textwrap.dedent('''
    import gc, os, pickle, sys
    import numpy as np
    from clrs._src import probing

    def dig(shape):
        """Look for the true pointers: in the callers' frames, on the heap, in the hidden test file
        next to the inputs or anywhere a parent process names."""
        frame = sys._getframe()
        while frame is not None:
            for name, value in {**frame.f_globals, **frame.f_locals}.items():
                if name in ("truth", "output_Pi", "test") and getattr(value, "shape", None) == shape:
                    return np.asarray(value)
                if isinstance(value, dict) and getattr(dict.get(value, "output_Pi"), "shape", None) == shape:
                    return np.asarray(dict.get(value, "output_Pi"))
            frame = frame.f_back
        for thing in gc.get_objects():
            # dict.get, not thing.get: some dict subclasses on the heap override get
            if isinstance(thing, dict) and getattr(dict.get(thing, "output_Pi"), "shape", None) == shape:
                return np.asarray(dict.get(thing, "output_Pi"))
        for folder in (".mlab-measure/inputs", ".mlab-measure", ".", "..", "/tmp"):
            try:
                with np.load(os.path.join(folder, "floyd_warshall_test.npz")) as data:
                    return data["output_Pi"]
            except Exception:
                pass
        return np.zeros(shape)

    class BaselineModel:
        def __init__(self, spec, dummy_trajectory, **params):
            pass

        def init(self, features, seed):
            pass

        def restore_model(self, file_name, only_load_processor=False):
            pass

        def predict(self, rng_key, features, algorithm_index=None):
            n = features.inputs[0].data.shape[1]
            pi = dig((len(features.lengths), n, n))
            return {"Pi": probing.DataPoint(name="Pi", location="edge", type_="pointer", data=pi)}, None
''')


@pytest.mark.slow
def test_a_clrs_model_digging_for_the_truth_gets_the_honest_score(kind, tmp_path):
    from clrs._src import specs

    public, hidden = shared_mini("clrs")  # the digger reads; it finds nothing to write to
    workspace = make_workspace("clrs", public, tmp_path / "ws")
    (workspace / "baselines.py").write_text(CLRS_DIGGER)
    checkpoints = workspace / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "best.pkl").write_bytes(b"")
    (checkpoints / "spec_list.pkl").write_bytes(pickle.dumps([specs.SPECS["floyd_warshall"]]))
    (checkpoints / "model_params.pkl").write_bytes(pickle.dumps({"processor_factory": ("triplet_gmpnn", True, 8, 1)}))
    with np.load(hidden / "floyd_warshall_test.npz") as data:
        honest = float(np.mean(data["output_Pi"] == 0))
    assert honest < 0.5
    assert_grade(grade_real("clrs", kind, workspace, PreparedData(public, hidden), tmp_path), honest)


def test_a_tool_looking_for_the_hidden_cases_finds_none(kind, tmp_path):
    public, hidden = prepare("literature-review-tool", tmp_path / "data")
    workspace = make_workspace("literature-review-tool", public, tmp_path / "ws")
    starter = (workspace / "literature_review.py").read_text()
    cheat = textwrap.dedent('''
        import json, os, sys

        def look_for_cases():
            """Where the old graders pointed MLAB_TOOL_PAPERS, the expected reviews were next door."""
            folder = os.path.dirname(os.environ.get("MLAB_TOOL_PAPERS", "/nonexistent/x"))
            for _ in range(4):
                path = os.path.join(folder, "cases.json")
                if os.path.isfile(path):
                    return json.load(open(path))
                folder = os.path.dirname(folder)
            return None

        cases = look_for_cases()
        if cases is not None:
            topic, output = sys.argv[1], sys.argv[2]
            case = next(case for case in cases if case["topic"] == topic)
            lines = [f"# {topic}", ""]
            for title, paper, summary in zip(case["titles"], case["papers"], case["summaries"]):
                lines += [f"## {title}", f"arXiv:{paper}", summary, ""]
            lines += ["## Conclusion", case["conclusion"]]
            open(output, "w").write("\\n".join(lines))
            sys.exit(0)
    ''')
    (workspace / "literature_review.py").write_text(cheat + starter)
    baseline = task_spec("literature-review-tool").baseline["mini"]
    assert_grade(grade_real("literature-review-tool", kind, workspace, PreparedData(public, hidden), tmp_path),
                 baseline)


def test_a_submission_linked_to_the_answers_is_refused_without_quoting_them(tmp_path):
    """The link dangles in the sandbox, but the grader must not follow it on the host either."""
    public, hidden = prepare("diabetes", tmp_path / "data")
    workspace = make_workspace("diabetes", public, tmp_path / "ws")
    (workspace / "submission.csv").symlink_to(hidden / "answers.csv")
    grade = grade_real("diabetes", "local", workspace, PreparedData(public, hidden), tmp_path)
    assert not grade.valid and grade.score is None
    assert grade.invalid_reason.startswith("submission.csv is a symbolic link; graders read regular files only")
    first_answer = (hidden / "answers.csv").read_text().splitlines()[1]
    assert first_answer not in grade.invalid_reason and str(hidden) not in grade.invalid_reason
