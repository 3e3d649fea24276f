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
    assert "OPENAI_API_KEY" not in os.environ
    assert secrets.api_key("openai") == {canary!r}
'''


@pytest.mark.slow
def test_no_worker_shows_the_api_keys_in_its_environment(pytester: pytest.Pytester, toy_project: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    (toy_project / "test_probe.py").write_text(PROBE.format(canary=CANARY))
    result = pytester.runpytest_subprocess("test_probe.py", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, output_of(result)
