"""Attacks through the workspace snapshot, as an agent that wants a high score would try them: a
submission that is a symlink or a hard link to the hidden answers, a symlink to a credential
file whose content a careless grader would quote, a submission that is a fifo, and files that
blow up the run (a 2 GiB sparse file, 100,000 tiny files, files over the size and byte caps).

Each runs for real: Write File and Execute Script through the Environment over every sandbox
backend that can run here, then the final snapshot is graded as the runner grades it. The attack
must fail, the score must be the honest one, and no canary may appear in anything the run leaves
(grade, observations, trace, snapshot store)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.actions.registry import implementations
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.grading.grader import Grade, grade_snapshot
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.spec.models import FunctionRef, Limits, Metric, TaskSpec
from pytest_mlab.trace import SnapshotStore, TraceWriter
from tests.env.support import repo_project

MiB = 1 << 20
TRUTH = [3.0, 5.0, 7.0, 9.0]
HONEST = "1\n1\n1\n1\n"
HONEST_MAE = sum(abs(1.0 - t) for t in TRUTH) / len(TRUTH)
# A careless grader, like many real ones: it quotes what it could not parse.
GRADER = '''
import pathlib
from pytest_mlab.task_api import InvalidSubmission

def score(workspace, answers):
    text = (pathlib.Path(workspace) / "submission.csv").read_text()
    try:
        predictions = [float(line) for line in text.split()]
    except ValueError:
        raise InvalidSubmission(f"submission.csv holds something other than numbers: {text[:300]!r}")
    truth = [float(line) for line in (pathlib.Path(answers) / "answers.csv").read_text().split()]
    if len(predictions) != len(truth):
        raise InvalidSubmission(f"submission.csv has {len(predictions)} rows, expected {len(truth)}")
    return sum(abs(p - t) for p, t in zip(predictions, truth)) / len(truth)
'''


@dataclass
class Run:
    env: Environment
    data: PreparedData
    task: TaskSpec
    root: Path
    canary: str
    credentials: Path
    kind: str
    observations: list[str]

    @property
    def answers(self) -> Path:
        return self.data.hidden / "answers.csv"

    def execute(self, source: str) -> str:
        self.observations.append(self.env.step("Write File", {"file_name": "attack.py", "content": source}))
        self.observations.append(self.env.step("Execute Script", {"script_name": "attack.py"}))
        return self.observations[-1]

    def write(self, name: str, content: str) -> str:
        self.observations.append(self.env.step("Write File", {"file_name": name, "content": content}))
        return self.observations[-1]

    def grade(self) -> Grade:
        final = self.env.final_snapshot()
        return grade_snapshot(self.task, self.env.snapshots, final, self.data, sandbox=self.kind,
                              options=SandboxOptions(label=f"grade-{self.kind}"))

    def assert_canary_nowhere(self, grade: Grade) -> None:
        needle = self.canary.encode()
        assert self.canary not in (grade.invalid_reason or "")
        assert not any(self.canary in text for text in self.observations)
        self.env.trace.close()
        for path in self.root.rglob("*"):
            if path.is_file() and not path.is_symlink() and path != self.credentials:
                assert needle not in path.read_bytes(), f"the canary leaked into {path}"


@pytest.fixture
def run(tmp_path: Path, kind):  # noqa: F811  (kind is the backend fixture)
    """``run(limits=None)``: an Environment over a sandbox of each backend, with public data linked
    in as the runner links it and hidden answers where no sandboxed process can name them."""
    opened: list[Environment] = []

    def build(limits: Limits | None = None) -> Run:
        canary = f"CANARY-{uuid.uuid4().hex}"
        public, hidden, assets = tmp_path / "data" / "public", tmp_path / "data" / "hidden", tmp_path / "assets"
        for folder in (public, hidden, assets):
            folder.mkdir(parents=True)
        (public / "train.csv").write_text("x,y\n1,3\n2,5\n")
        (hidden / "answers.csv").write_text("".join(f"{value}\n" for value in TRUTH))
        credentials = tmp_path / "home" / ".netrc"
        credentials.parent.mkdir()
        credentials.write_text(f"machine api.example.com password {canary}\n")
        (assets / "grader.py").write_text(GRADER)
        task = TaskSpec(name="mae-task", description="predict", source=str(tmp_path / "task.yaml"), line=1,
                        assets=assets, data={},
                        metric=Metric(name="mae", direction="minimize", grader=FunctionRef("grader.py", "score"),
                                      submission="submission.csv"))
        data = PreparedData(public, hidden)
        limits = limits or Limits(max_steps=100, execute_timeout=300)
        sandbox = open_sandbox(kind, options=SandboxOptions(label=f"snapshot-attack-{kind}", disk=limits.disk))
        for relative in data.public_files():
            sandbox.copy_in(public / relative, relative, link=True)
        project = repo_project()
        root = tmp_path / "run"
        actions = (project.action("Write File"), project.action("Execute Script"))
        env = Environment(sandbox=sandbox, actions=actions,
                          implementations=implementations(actions),
                          limits=limits,
                          read_only=ReadOnlyRules(frozenset(data.public_files())),
                          trace=TraceWriter(root / "trace.jsonl"), snapshots=SnapshotStore(root / "snapshots"),
                          research_problem="predict y")
        opened.append(env)
        return Run(env, data, task, tmp_path, canary, credentials, kind, [])

    yield build
    for env in opened:
        env.sandbox.close()
        env.trace.close()


def linking(target: Path, how: str) -> str:
    """The agent's script: make submission.csv a ``how`` ("symlink" or "link") to ``target``."""
    return (f"import os\ntry:\n    os.{how}({str(target)!r}, 'submission.csv')\n"
            f"except OSError as exc:\n    print('refused:', exc)\nprint('done')\n")


# ---------------------------------------------------------------------- links to hidden content


def test_a_submission_symlinked_to_the_hidden_answers_is_not_graded(run):
    attack = run()
    assert "done" in attack.execute(linking(attack.answers, "symlink"))
    assert (attack.env.sandbox.workspace / "submission.csv").is_symlink()
    grade = attack.grade()
    assert grade.score is None, "the grader must never follow the agent's link to the answers"
    assert "symbolic link" in grade.invalid_reason


def test_a_submission_symlinked_to_a_credential_file_leaks_nothing(run):
    attack = run()
    attack.execute(linking(attack.credentials, "symlink"))
    grade = attack.grade()
    assert grade.score is None and "symbolic link" in grade.invalid_reason
    attack.assert_canary_nowhere(grade)


def test_a_submission_hard_linked_to_the_hidden_answers_is_left_out(run):
    """Where the agent can name the answers (the local backend), the link is made and then left
    out of the snapshot; elsewhere it cannot even be made."""
    attack = run()
    observation = attack.execute(linking(attack.answers, "link"))
    submission = attack.env.sandbox.workspace / "submission.csv"
    if submission.exists():
        assert "submission.csv (a hard link to a file outside the workspace)" in observation
    else:
        assert "refused:" in observation
    grade = attack.grade()
    assert grade.score is None and "was not written" in grade.invalid_reason
    assert "submission.csv" not in attack.env.snapshots.manifest(attack.env.last_snapshot)["files"]


def test_a_hard_link_to_a_credential_file_leaks_nothing(run):
    attack = run()
    attack.execute(linking(attack.credentials, "link"))
    attack.assert_canary_nowhere(attack.grade())


def test_a_fifo_submission_neither_hangs_the_grader_nor_scores(run):
    attack = run()
    attack.execute("import os\nos.mkfifo('submission.csv')\nprint('done')\n")
    grade = attack.grade()
    assert grade.score is None and "was not written" in grade.invalid_reason


def test_an_honest_submission_beside_the_tricks_gets_its_honest_score(run):
    attack = run()
    attack.execute(f"import os\nos.symlink({str(attack.answers)!r}, 'answers.csv')\n"
                   f"os.symlink({str(attack.credentials)!r}, 'notes.txt')\n")
    attack.write("submission.csv", HONEST)
    grade = attack.grade()
    assert grade.score == pytest.approx(HONEST_MAE)
    attack.assert_canary_nowhere(grade)


# ---------------------------------------------------------------------- files that blow up the run


def test_a_2gib_sparse_file_is_refused_and_the_run_graded(run):
    attack = run()
    attack.write("submission.csv", HONEST)
    observation = attack.execute("with open('weights.bin', 'wb') as fh:\n    fh.truncate(2 << 30)\nprint('done')\n")
    assert "weights.bin (a sparse file: 2 GiB long but" in observation
    assert attack.env.snapshots.stored_bytes() < 1 * MiB
    assert attack.grade().score == pytest.approx(HONEST_MAE)


def test_a_file_over_the_size_cap_is_refused_with_a_note(run):
    attack = run(Limits(max_steps=100, execute_timeout=300, snapshot_file_size=4 * MiB))
    attack.write("submission.csv", HONEST)
    observation = attack.execute("import os\nopen('huge.bin', 'wb').write(os.urandom(6 << 20))\nprint('done')\n")
    assert "huge.bin (6 MiB, over the 4 MiB file size limit)" in observation
    assert "will not be graded" in observation
    assert attack.env.snapshots.stored_bytes() < 1 * MiB
    assert attack.grade().score == pytest.approx(HONEST_MAE)


def test_the_run_byte_cap_bounds_what_many_steps_can_store(run):
    attack = run(Limits(max_steps=100, execute_timeout=300, snapshot_bytes=8 * MiB))
    attack.write("submission.csv", HONEST)
    for step in range(5):
        attack.execute(f"import os\nopen('ckpt{step}.bin', 'wb').write(os.urandom(3 << 20))\n")
    assert attack.env.snapshots.stored_bytes() < 8 * MiB + 64 * 1024
    records = [json.loads(line) for line in attack.env.trace.path.read_text().splitlines()]
    omitted = {path for record in records for path, _ in record.get("omitted", {}).get("files", [])}
    assert {"ckpt2.bin", "ckpt3.bin", "ckpt4.bin"} <= omitted
    assert attack.grade().score == pytest.approx(HONEST_MAE)


def test_tiny_files_past_the_file_cap_are_left_out_and_the_run_completes(run):
    """The attack of a workspace flooded with tiny files, at a tenth of its scale: the cap is lowered
    to 2,000 files so that every backend runs it in seconds; the default cap is checked below."""
    attack = run(Limits(max_steps=100, execute_timeout=600, snapshot_files=2_000))
    attack.write("submission.csv", HONEST)
    observation = attack.execute(
        "import os\nos.mkdir('junk')\nfor i in range(10_000):\n"
        "    open(f'junk/{i:06}.txt', 'w').write(str(i))\nprint('done')\n")
    assert "done" in observation
    # attack.py and submission.csv come first (a folder's files before its subfolders); data is not counted
    assert "Note: 8,002 files were not saved in the workspace snapshot" in observation
    assert "junk/001998.txt (over the limit of 2,000 files in one snapshot)" in observation
    snapshot = attack.env.snapshots.manifest(attack.env.last_snapshot)["files"]
    assert len([path for path in snapshot if path.startswith("junk/")]) == 1_998
    assert attack.grade().score == pytest.approx(HONEST_MAE)


def test_a_run_keeps_at_most_20000_files_per_snapshot_unless_its_task_says_otherwise():
    """The default the test above lowers: the environment takes its caps from the run's limits."""
    assert Limits().snapshot_files == 20_000
