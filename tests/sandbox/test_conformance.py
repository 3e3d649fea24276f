"""One suite for every sandbox backend: each primitive action, driven through the Environment and
the repository's Action specs, must give the observation the local backend gives for the same
input, including every error case. Adding a backend is one entry in ``tests.sandbox.backends.BACKENDS``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlab.actions.registry import implementations
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import SnapshotStore, TraceWriter
from tests.env.support import ALL_ACTIONS, repo_project

REFERENCE = "local"
DATA = "id,value\n1,10\n2,20\n"


class Runner:
    """Plays the same scenario on a backend and on the reference, collecting observations."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.cache = tmp_path / "cache"
        self.cache.mkdir()
        (self.cache / "data.csv").write_text(DATA)
        self.opened: list[Environment] = []

    def environment(self, kind: str, limits: Limits) -> Environment:
        root = self.tmp_path / f"{kind}-{len(self.opened)}"
        root.mkdir()
        sandbox = open_sandbox(kind, options=SandboxOptions(label=f"conformance-{kind}"))
        assert sandbox.name == kind
        sandbox.copy_in(self.cache / "data.csv", "data.csv", link=True)
        sandbox.write("train.py", b"import pandas\nprint('rows', len(pandas.read_csv('data.csv')))\n")
        project = repo_project()
        specs = tuple(project.action(name) for name in ALL_ACTIONS)
        env = Environment(sandbox=sandbox, actions=specs, implementations=implementations(specs), limits=limits,
                          read_only=ReadOnlyRules(frozenset({"data.csv"})),
                          trace=TraceWriter(root / "trace.jsonl"), snapshots=SnapshotStore(root / "snapshots"),
                          research_problem="conformance")
        self.opened.append(env)
        return env

    def play(self, kind: str, steps: list[tuple[str, dict]], limits: Limits) -> list[str]:
        env = self.environment(kind, limits)
        observations = [_normalise(env.step(action, arguments), env) for action, arguments in steps]
        env.sandbox.sync_out()
        observations.append(_normalise(sorted(p.relative_to(env.sandbox.workspace).as_posix()
                                              for p in env.sandbox.workspace.rglob("*")), env))
        return observations

    def compare(self, kind: str, steps: list[tuple[str, dict]], limits: Limits | None = None) -> list[str]:
        """The backend's observations, after checking they equal the reference backend's."""
        limits = limits or Limits(max_steps=100, execute_timeout=20)
        observed = self.play(kind, steps, limits)
        if kind != REFERENCE:
            assert observed == self.play(REFERENCE, steps, limits)
        assert (self.cache / "data.csv").read_text() == DATA
        return observed

    def close(self) -> None:
        for env in self.opened:
            env.sandbox.close()
            env.trace.close()


def _normalise(observation, env: Environment):
    """Only the workspace's absolute location legitimately differs between backends."""
    if isinstance(observation, list):
        return [_normalise(item, env) for item in observation]
    text = str(observation)
    for root in {str(env.sandbox.workspace), str(Path(env.sandbox.workspace).resolve())}:
        text = text.replace(root, "<workspace>")
    return re.sub(r"mlab-ws-[\w-]+", "<workspace>", text)


@pytest.fixture
def runner(tmp_path):
    runner = Runner(tmp_path)
    yield runner
    runner.close()


def test_file_actions(kind, runner):
    observed = runner.compare(kind, [
        ("List Files", {"dir_path": "."}),
        ("Write File", {"file_name": "notes/a.py", "content": "x = 1\n"}),
        ("Append File", {"file_name": "notes/a.py", "content": "y = 2\n"}),
        ("Read File", {"file_name": "notes/a.py"}),
        ("Copy File", {"source": "notes/a.py", "destination": "b.py"}),
        ("Inspect Script Lines", {"script_name": "b.py", "start_line_number": 2, "end_line_number": 2}),
        ("Write File", {"file_name": "b.py", "content": "z = 3\n"}),
        ("Undo Edit Script", {"script_name": "b.py"}),
        ("Read File", {"file_name": "b.py"}),
        ("List Files", {"dir_path": "notes"}),
        ("Read File", {"file_name": "data.csv"}),
    ])
    assert observed[0] == "data.csv\ntrain.py"
    assert observed[3] == "x = 1\ny = 2\n" and observed[8] == "x = 1\ny = 2\n"
    assert "y = 2" in observed[5] and observed[10] == DATA
    assert observed[-1] == ['b.py', 'data.csv', 'notes', 'notes/a.py', 'train.py']


@pytest.mark.parametrize("action, arguments", [
    ("Read File", {"file_name": "missing.txt"}),
    ("List Files", {"dir_path": "nowhere"}),
    ("Read File", {"file_name": "../outside.txt"}),
    ("Read File", {"file_name": "/etc/passwd"}),
    ("Write File", {"file_name": "../../planted.py", "content": "x"}),
    ("Copy File", {"source": "missing.py", "destination": "b.py"}),
    ("Write File", {"file_name": "data.csv", "content": "forged"}),
    ("Append File", {"file_name": "data.csv", "content": "3,30\n"}),
    ("Execute Script", {"script_name": "nope.py"}),
    ("Execute Script", {"script_name": "data.csv"}),
    ("Inspect Script Lines", {"script_name": "train.py", "start_line_number": 5, "end_line_number": 2}),
    ("No Such Action", {}),
])
def test_errors_are_the_same_observation(kind, runner, action, arguments):
    observed = runner.compare(kind, [(action, arguments)])
    assert observed[0].startswith("EnvError:"), observed[0]
    assert "root:" not in observed[0]


def test_execute_script_output_and_files(kind, runner):
    script = ("import os\nprint(open('data.csv').read().count(chr(10)))\n"
              "open('out/result.txt', 'w').write('done') if os.path.isdir('out') else None\n")
    observed = runner.compare(kind, [
        ("Execute Script", {"script_name": "train.py"}),
        ("Write File", {"file_name": "out/keep.txt", "content": ""}),
        ("Write File", {"file_name": "probe.py", "content": script}),
        ("Execute Script", {"script_name": "probe.py"}),
        ("Read File", {"file_name": "out/result.txt"}),
    ])
    assert observed[0] == "The script has been executed. Here is the output:\nrows 2\n"
    assert observed[3] == "The script has been executed. Here is the output:\n3\n"
    assert observed[4] == "done"


def test_script_error_shows_the_same_traceback(kind, runner):
    observed = runner.compare(kind, [
        ("Write File", {"file_name": "bad.py", "content": "print('before')\nraise ValueError('bad shape')\n"}),
        ("Execute Script", {"script_name": "bad.py"}),
    ])
    assert observed[1].startswith("The script has been executed and failed with exit code 1.")
    assert 'File "<workspace>/bad.py", line 2' in observed[1] and "ValueError: bad shape" in observed[1]


def test_script_killed_by_a_signal(kind, runner):
    observed = runner.compare(kind, [
        ("Write File", {"file_name": "die.py", "content": "import os, signal\nprint('bye', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"}),
        ("Execute Script", {"script_name": "die.py"}),
    ])
    assert observed[1] == "The script has been executed and failed with exit code -9. Here is the output:\nbye\n"


def test_timeout(kind, runner):
    observed = runner.compare(kind, [
        ("Write File", {"file_name": "slow.py", "content": "import time\nprint('started', flush=True)\ntime.sleep(60)\n"}),
        ("Execute Script", {"script_name": "slow.py"}),
    ], Limits(max_steps=10, execute_timeout=1))
    assert observed[1] == "EnvError: the script was stopped after 1.0s (time limit); output before it was stopped:\nstarted\n"


def test_output_cap(kind, runner):
    source = "import sys\nsys.stdout.write('x' * 300000)\nprint('END')\n"
    observed = runner.compare(kind, [
        ("Write File", {"file_name": "loud.py", "content": source}),
        ("Execute Script", {"script_name": "loud.py"}),
    ], Limits(max_steps=10, execute_timeout=20, output_limit=4096))
    assert "bytes of output omitted" in observed[1] and observed[1].rstrip().endswith("END")
    assert len(observed[1]) < 8192


def test_final_answer_ends_the_run(kind, runner):
    observed = runner.compare(kind, [("Final Answer", {"final_answer": "done"}), ("List Files", {"dir_path": "."})])
    assert observed[1].startswith("EnvError: the run has ended")
