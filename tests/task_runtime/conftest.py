"""A fake uv for the build's tests: ``venv ... FOLDER`` makes FOLDER/bin/python, ``pip sync``
prints what uv prints (a summary and one line per package), or fails when FAIL_UV is set, after
FAKE_UV_SLEEP seconds. Each call is counted in a file. With FAKE_UV_MIRROR naming a real
virtual environment, the folder made is a working one: its pyvenv.cfg, and its lib/ a link to
the real one's, so scripts run with the real environment's packages."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from pytest_mlab.task_runtime import build

FAKE_UV = """#!{python}
import os, shutil, sys, time
argv = sys.argv[1:]
with open({calls!r}, "a") as calls:
    calls.write(" ".join(argv[:2]) + "\\n")
if argv[0] == "venv":
    folder = argv[-1]
    os.makedirs(os.path.join(folder, "bin"))
    mirror = os.environ.get("FAKE_UV_MIRROR")
    if mirror:
        shutil.copy(os.path.join(mirror, "pyvenv.cfg"), folder)
        os.symlink(os.path.join(mirror, "lib"), os.path.join(folder, "lib"))
    os.symlink(os.path.realpath({python!r}), os.path.join(folder, "bin", "python"))
else:
    time.sleep(float(os.environ.get("FAKE_UV_SLEEP", "0")))
    if os.environ.get("FAIL_UV"):
        print("error: Failed to fetch: `https://pypi.org/simple/xgboost-cpu/`", flush=True)
        sys.exit(2)
    print("Prepared 3 packages in 1.2s")
    print("Installed 3 packages in 10ms")
    print(" + numpy==2.4.6")
"""


@pytest.fixture
def fake_uv(tmp_path, monkeypatch) -> Path:
    """The fake in place of uv, runtimes built in a home of the test's own; returns the calls file."""
    calls = tmp_path / "uv-calls"
    uv = tmp_path / "uv"
    uv.write_text(FAKE_UV.format(python=sys.executable, calls=str(calls)))
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(build, "uv_binary", lambda: str(uv))
    monkeypatch.setattr(build, "pip_find_links", lambda: [])
    monkeypatch.setenv(build.HOME_VARIABLE, str(tmp_path / "home"))
    return calls
