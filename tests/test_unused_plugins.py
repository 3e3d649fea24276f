"""Installed pytest plugins that no item uses stay out of a session (pyproject.toml's addopts):
each would cost every pytest process, the controller and each xdist worker, its imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNUSED = ("hypothesis", "trio")  # what hypothesis's and anyio's plugins import

SESSION = ("import sys, pytest\n"
           "pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'specs/tasks/diabetes.yaml'])\n"
           f"print('IMPORTED', sorted(name for name in {UNUSED!r} if name in sys.modules))\n")


def test_a_session_of_specs_imports_neither_hypothesis_nor_trio():
    completed = subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert "IMPORTED []" in completed.stdout, completed.stdout[-2000:]
