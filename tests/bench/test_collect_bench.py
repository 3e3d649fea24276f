"""bench/collect.py keeps working: its quick mode runs in CI and prints its figures. Only that it
runs and what it prints are checked, never a time (timings belong to the bench itself)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO


@pytest.mark.slow
def test_the_collection_bench_runs_and_prints_its_figures():
    done = subprocess.run([sys.executable, str(REPO / "bench" / "collect.py"), "--specs", "20", "--runs", "1"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("collecting 20 Task specs") for line in lines), done.stdout
    for flavour in ("full", "extends"):
        assert any(line.split()[:1] == [flavour] and "specs/s" in line and "s CPU" in line for line in lines), done.stdout
    assert any(line.startswith("a run that collects no spec:") and "the plugin adds" in line for line in lines), \
        done.stdout
