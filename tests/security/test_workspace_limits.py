"""Workspaces built to break the harness, as an agent that is failing would build them: a folder
chain thousands deep, a flood of tiny files, a file or files bigger than the disk quota. Each must
end the run as the agent's own failure (``workspace limit``: never graded, never an
infrastructure failure, so --mlab-resume keeps it), and leave nothing that breaks the clean-up,
the leftover sweep or ``pytest-mlab clean`` of a later session.

The in-sandbox attacks run for real through the Environment over every backend that can run here
(the ``run`` fixture of test_snapshot_attacks.py); limits are lowered where that keeps them cheap."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.verdict import judge
from pytest_mlab.outcomes import EndReason, Failure
from pytest_mlab.sandbox import leftovers
from pytest_mlab.spec.models import Limits
from tests.helpers import folder_chain
from tests.security.test_containment import dead_owner
from tests.security.test_snapshot_attacks import HONEST, run  # noqa: F401  (run: the fixture)

MiB = 1 << 20
DEEP_CHAIN = ("import os\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
              "open('bottom.txt', 'w').write('x')\nprint('done')\n")


def ended_by_workspace_limit(attack, observation: str, words: str) -> None:  # noqa: ANN001
    env = attack.env
    assert f"The run has ended: {words}" in observation
    assert env.end_reason == EndReason.WORKSPACE_LIMIT and env.done
    assert env.final_snapshot() is None, "a workspace beyond its limits is never graded"
    verdict = judge(attack.task, 1.0, Grade(None, env.over_limits), env.end_reason, "success", env.over_limits)
    assert verdict.failure == Failure.WORKSPACE_LIMIT and not verdict.passed


# ---------------------------------------------------------------------- in the sandbox


def test_a_3000_deep_chain_ends_the_run_as_the_agents_failure_and_is_cleaned_up(run):  # noqa: F811
    attack = run()
    attack.write("submission.csv", HONEST)
    observation = attack.execute(DEEP_CHAIN)
    ended_by_workspace_limit(attack, observation, "the workspace has folders nested more than 100 deep")
    workspace = attack.env.sandbox.workspace
    attack.env.sandbox.close()
    assert not os.path.lexists(workspace), "clean-up must remove the chain"


def test_a_flood_of_files_is_stopped_at_the_file_cap(run):  # noqa: F811
    """100,000 tiny files at a thirtieth of the scale, with the cap lowered to 1,000 so every backend
    runs it in seconds: the scan stops at the cap instead of reading every file."""
    attack = run(Limits(max_steps=100, execute_timeout=600, workspace_files=1_000))
    observation = attack.execute("import os\nos.mkdir('junk')\nfor i in range(3_000):\n"
                                 "    open(f'junk/{i:06}.txt', 'w').write(str(i))\nprint('done')\n")
    ended_by_workspace_limit(attack, observation, "the workspace holds more than 1,000 files, folders and links")


def test_an_8gib_fallocate_fails_inside_the_sandbox(run):  # noqa: F811
    attack = run(Limits(max_steps=100, execute_timeout=300, disk=64 * MiB))
    observation = attack.execute(
        "import os\nfd = os.open('big.bin', os.O_CREAT | os.O_WRONLY)\ntry:\n"
        "    os.posix_fallocate(fd, 0, 8 << 30)\n    print('allocated')\nexcept OSError as exc:\n"
        "    print('refused', exc.errno)\nprint(os.path.getsize('big.bin'))\n")
    assert "refused 27" in observation and "allocated" not in observation  # EFBIG
    assert (attack.env.sandbox.workspace / "big.bin").stat().st_blocks == 0
    assert not attack.env.done


def test_files_that_together_pass_the_disk_quota_fail_inside_or_end_the_run(run):  # noqa: F811
    """bwrap and docker as root write the workspace on a file system of the quota's size (quota_mount.py):
    the write past it fails inside with ENOSPC and the run goes on. Elsewhere the check after the
    step ends the run as the agent's failure."""
    attack = run(Limits(max_steps=100, execute_timeout=300, disk=8 * MiB))
    observation = attack.execute("import os\nfor i in range(3):\n"
                                 "    open(f'part{i}.bin', 'wb').write(os.urandom(4 << 20))\nprint('done')\n")
    if attack.kind in ("bwrap", "docker") and os.geteuid() == 0:
        assert "No space left on device" in observation and "done" not in observation
        assert not attack.env.done
        return
    assert "done" in observation
    ended_by_workspace_limit(attack, observation, "the workspace's files take more than its disk quota of 8 MiB")


# ---------------------------------------------------------------------- a later session


def test_the_sweep_removes_a_deep_chain_of_a_dead_owner(tmp_path):
    """3,000 deep (the chain of the attack above, past the recursion limit and the default limit of
    open files); the 10,000-deep chain below goes through the same sweep, by ``pytest-mlab clean``."""
    dead = tmp_path / f"mlab-ws-{dead_owner()}-deep"
    folder_chain(dead, 3_000)
    (dead / "d").chmod(0o500)  # and the agent took away the write bit at the top
    assert leftovers.sweep_temp_folders(tmp_path) == [dead]
    assert not os.path.lexists(dead)


def test_pytest_mlab_clean_removes_a_10000_deep_chain(capsys):
    """The sweep every session runs at its start, through the command (about 10 s: the file system
    removes 10,000 folders one at a time, as ``rm -rf`` does)."""
    dead = Path(tempfile.gettempdir()) / f"mlab-ws-{dead_owner()}-deep"
    folder_chain(dead, 10_000)
    assert main(["clean"]) == 0
    assert not os.path.lexists(dead)
    assert "temp folder(s)" in capsys.readouterr().out
