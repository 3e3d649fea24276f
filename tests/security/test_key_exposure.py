"""API keys read through /proc/PID/environ, as code running under the local backend would read
them (it sees every process of the user): a session started with OPENAI_API_KEY set takes it out
of its environment before any worker starts (llm/secrets.py), so the workers' /proc/PID/environ
holds no key, while each worker still holds the key for litellm. The controller's own entry still
shows it (the environment it was started with): that is the documented limit."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.helpers import output_of

CANARY = "sk-canary-" + uuid.uuid4().hex

PROBE = '''
import os
from pytest_mlab.llm import secrets

def environ(pid):
    with open(f"/proc/{{pid}}/environ", "rb") as handle:
        return handle.read().decode("utf-8", "replace")

def test_worker_environment():
    assert {canary!r} not in environ(os.getpid())
    if {uses_mlab!r}:  # the controller that started this worker was started with the key
        assert {canary!r} not in environ(os.getppid())
    if {uses_mlab!r}:  # the worker holds the key for litellm, out of its environment
        assert "OPENAI_API_KEY" not in os.environ
        assert secrets.api_key("openai") == {canary!r}
    else:  # a project's own tests: the key is back where they read it
        assert os.environ["OPENAI_API_KEY"] == {canary!r}
'''


@pytest.mark.slow
@pytest.mark.parametrize("uses_mlab", [True, False], ids=["mlab-session", "plain-tests"])
def test_no_worker_shows_the_api_keys_in_its_environment(pytester: pytest.Pytester, toy_project: Path,
                                                          monkeypatch: pytest.MonkeyPatch, uses_mlab: bool) -> None:
    """With a pytest-mlab option given (here --seeds=1) the session uses pytest-mlab from its
    start; without one and without specs, it is a project's own test suite, whose tests get the
    key back in os.environ, though no worker's /proc/PID/environ ever held it."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    (toy_project / "test_probe.py").write_text(PROBE.format(canary=CANARY, uses_mlab=uses_mlab))
    result = pytester.runpytest_subprocess("test_probe.py", "-n", "2", "-p", "no:cacheprovider",
                                           *(["--seeds=1"] if uses_mlab else []))
    assert result.ret == pytest.ExitCode.OK, output_of(result)


ERASED = """
import os, sys
from pytest_mlab.llm import secrets

def environ():
    with open("/proc/self/environ", "rb") as handle:
        return handle.read()

assert sys.argv[1].encode() in environ()
secrets.take_from_environment()
shown = environ()
assert sys.argv[1].encode() not in shown, "the start block still shows the key"
assert b"OPENAI_API_KEY=" in shown and b"MLAB_NEIGHBOUR=kept" in shown, "only the value is erased"
assert os.environ["MLAB_NEIGHBOUR"] == "kept" and "OPENAI_API_KEY" not in os.environ
assert secrets.api_key("openai") == sys.argv[1] and secrets.api_key("gemini") == "AIza-" + sys.argv[1]
print("erased")
"""


def test_the_process_that_takes_the_keys_erases_them_from_its_start_environment() -> None:
    """/proc/PID/environ reads the memory the environment was started in: unsetenv alone leaves
    the key there, readable by any process of the user (the local backend's agent code)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENAI_API_KEY": CANARY, "GEMINI_API_KEY": "AIza-" + CANARY, "MLAB_NEIGHBOUR": "kept"}
    done = subprocess.run([sys.executable, "-c", ERASED, CANARY], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "erased", done.stderr
