"""Attacks on the digests of read-only data that runs remember across processes (data_digests.py),
as an agent that wants the harness to record a wrong digest would try them: plant an entry in
the digests file beside the data cache, chmod and touch the linked data file, open it for writing.

Each runs for real, through the Environment over every sandbox backend that can run here, in a
run set up as the runner sets one up; then a second run, with no lease left over from the first,
snapshots the same data. The digest it records must be the file's real one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import blake3
import pytest

from pytest_mlab.actions.registry import implementations
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import SnapshotStore, TraceWriter
from pytest_mlab.trace.snapshots import data_digests
from tests.env.support import repo_project
from tests.trace.support import count_hashed_bytes

DATA = 1 << 20
WRONG = "0" * 64

ATTACK = '''
import json, os
data, digests = "train.csv", {digests!r}  # the data as linked into the workspace; the cache's own file
st = os.stat(data)
for what, attempt in [
    ("plant", lambda: open(digests, "w").write(json.dumps({{"format": {format!r}, "entries": [
        [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, {wrong!r}]]}}))),
    ("chmod", lambda: os.chmod(data, 0o644)),
    ("touch", lambda: os.utime(data, (st.st_atime, st.st_mtime))),
    ("write", lambda: os.close(os.open(data, os.O_WRONLY | os.O_NONBLOCK))),
]:
    try:
        attempt()
        print(what, "done")
    except OSError as exc:
        print(what, "refused:", type(exc).__name__)
'''


@pytest.fixture(autouse=True)
def no_leases(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(data_digests, "_held", type(data_digests._held)())
    yield
    data_digests.settle(None)


def one_run(kind: str, root: Path, public: Path, digests: Path, script: str | None) -> str:
    """A run as the runner makes one: vouch, link the data in, steps, then settle once the
    workspace is gone. Returns the digest its first snapshot recorded for the data file."""
    project = repo_project()
    actions = (project.action("Write File"), project.action("Execute Script"))
    with SnapshotStore(root / "snapshots", data_digests=digests) as store:
        data_digests.vouch([public / "train.csv"], digests)
        with open_sandbox(kind, options=SandboxOptions(label=f"digest-attack-{kind}")) as sandbox:
            sandbox.copy_in(public / "train.csv", "train.csv", link=True)
            env = Environment(sandbox=sandbox, actions=actions, implementations=implementations(actions),
                              limits=Limits(max_steps=10, execute_timeout=120),
                              read_only=ReadOnlyRules(frozenset({"train.csv"})),
                              trace=TraceWriter(root / "trace.jsonl"), snapshots=store, research_problem="x")
            try:
                env.step("Write File", {"file_name": "note.txt", "content": "hi"})
                first = env.last_snapshot
                if script is not None:
                    env.step("Write File", {"file_name": "attack.py", "content": script})
                    observation = env.step("Execute Script", {"script_name": "attack.py"})
                    root.joinpath("observation.txt").write_text(observation)
                env.final_snapshot()
            finally:
                env.trace.close()
    entry = store.file_entry(first, "train.csv")
    assert entry is not None
    return entry["blake3"]


def test_an_agent_cannot_make_a_later_run_record_a_wrong_digest(tmp_path: Path, kind: str,  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    public = tmp_path / "cache" / "task" / "mini" / "public"
    public.mkdir(parents=True)
    data = public / "train.csv"
    data.write_bytes(os.urandom(DATA))
    then = time.time() - 3600
    os.utime(data, (then, then))
    data.chmod(0o444)
    digests = public.parent / "data-digests.json"
    truth = blake3.blake3(data.read_bytes()).hexdigest()
    hashed = count_hashed_bytes(monkeypatch)

    script = ATTACK.format(digests=str(digests), format=data_digests.FORMAT, wrong=WRONG)
    assert one_run(kind, tmp_path / "run1", public, digests, script) == truth
    observation = (tmp_path / "run1" / "observation.txt").read_text()
    if kind != "local":  # the data is bound read-only, the cache folder is not there
        for what in ("plant", "chmod", "touch", "write"):
            assert f"{what} refused" in observation, observation
    else:  # the agent has the user's rights, but the harness's lease refuses the write
        assert "write refused: BlockingIOError" in observation, observation
    assert WRONG not in digests.read_text(), "the run's end rewrote the planted entry"

    assert one_run(kind, tmp_path / "run2", public, digests, None) == truth
    assert data.read_bytes() and blake3.blake3(data.read_bytes()).hexdigest() == truth
    if kind != "local":
        assert hashed.count(DATA) == 1, "the second run trusted the first run's entry"
