"""Which Python agents' scripts run with: --mlab-runtime / $MLAB_TASK_RUNTIME."""

from __future__ import annotations

import sys

import pytest

from pytest_mlab.errors import TaskRuntimeError
from pytest_mlab.sandbox.local import LocalSandbox
from pytest_mlab.task_runtime import choice


@pytest.fixture
def chosen(monkeypatch):
    """Set $MLAB_TASK_RUNTIME for one test; the cached choice is forgotten before and after."""
    def choose(value: str) -> None:
        monkeypatch.setenv(choice.VARIABLE, value)
        choice.task_python.cache_clear()

    yield choose
    choice.task_python.cache_clear()


def test_host_runs_agents_scripts_with_pytests_own_python(chosen):
    chosen("host")
    with LocalSandbox() as sandbox:
        assert sandbox.python == sys.executable


def test_a_python_of_ones_own_is_used_as_given_not_resolved(chosen, tmp_path):
    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)  # a virtual environment's python is a link out of it
    chosen(str(link))
    with LocalSandbox() as sandbox:
        assert sandbox.python == str(link)


def test_a_path_that_is_no_interpreter_is_refused_with_what_the_option_takes(chosen, tmp_path):
    chosen(str(tmp_path / "no-such-python"))
    with pytest.raises(TaskRuntimeError, match=r"neither 'locked', 'host' nor an executable Python interpreter"):
        choice.task_python()


def test_the_option_with_a_bad_value_is_a_usage_error_naming_it(pytester, monkeypatch):
    monkeypatch.delenv(choice.VARIABLE, raising=False)
    result = pytester.runpytest("--mlab-runtime=/no/such/python", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mlab-runtime*'/no/such/python'*neither 'locked', 'host' nor an executable*"])


def test_the_option_reaches_this_process_and_what_it_starts(pytester, monkeypatch):
    monkeypatch.setenv(choice.VARIABLE, choice.LOCKED)  # restored after the test
    pytester.makepyfile(test_probe="import os\ndef test_probe():\n"
                                   f"    assert os.environ[{choice.VARIABLE!r}] == 'host'\n")
    result = pytester.runpytest("--mlab-runtime=host", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    choice.task_python.cache_clear()
