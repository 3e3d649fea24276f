"""pytest-mlab's own hooks, implemented by a conftest.py as a user would, and this repository's root
conftest.py, which makes the README's custom agent work under plain ``pytest``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest

from pytest_mlab.errors import UsageError
from pytest_mlab.llm import providers
from pytest_mlab.sandbox import registry
from tests.helpers import REPO, UNRELATED_PLUGINS, copy_toy_project

PLUGIN = textwrap.dedent('''
    """A user's extensions: an agent, an LLM provider and a sandbox backend."""
    from pytest_mlab.agents import Agent
    from pytest_mlab.llm.provider import offline_completion
    from pytest_mlab.sandbox.local import LocalSandbox


    class Echo:
        """``echo:TEXT`` answers TEXT to every prompt."""
        cacheable = False
        billed = False

        def __init__(self, model, task):
            self.text = model.partition(":")[2]

        def answer(self, request, errors):
            return offline_completion(request, self.text)


    class Logged(LocalSandbox):
        """The local sandbox, logging each command it runs."""
        name = "logged"

        def exec(self, argv, **kwargs):
            with open(LOG, "a") as log:
                log.write(" ".join(argv) + "\\n")
            return super().exec(argv, **kwargs)


    class AskThenSubmit(Agent):
        def run(self, env):
            env.step("Execute Script", {"script_name": "train.py"})
            answer = env.llm.complete("What is the sum?", purpose="the answer")
            env.step("Write File", {"file_name": "submission.txt", "content": answer})
            env.step("Final Answer", {"final_answer": answer})
    ''')

CONFTEST = textwrap.dedent('''
    import json
    from pathlib import Path

    import extensions

    HERE = Path(__file__).parent
    extensions.LOG = HERE / "commands.log"


    def pytest_mlab_run_finished(result, config):
        with open(HERE / "finished.jsonl", "a") as out:
            out.write(json.dumps({"run_id": result.run_id, "passed": result.passed, "rootdir": str(config.rootpath)}) + "\\n")


    def pytest_mlab_add_agents(config):
        return ["plugin_agents"]


    def pytest_mlab_llm_providers():
        return {"echo:": extensions.Echo}


    def pytest_mlab_sandbox_backends():
        return {"logged": extensions.Logged}
    ''')


@pytest.fixture
def extended(pytester: pytest.Pytester) -> Path:
    root = copy_toy_project(pytester.path)
    (root / "extensions.py").write_text(PLUGIN)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "plugin_agents").mkdir()
    (root / "plugin_agents" / "ask.yaml").write_text(
        "kind: Agent\nname: ask\nimplementation: extensions:AskThenSubmit\nllm: {main: 'echo:100'}\n"
        "actions: [Execute Script, Write File, Final Answer]\n")
    return root


@pytest.mark.slow
def test_a_conftest_adds_an_agent_a_provider_and_a_backend_and_hears_each_result(pytester, extended):
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                                           "--mlab-cache", str(extended / ".cache"), "--agent=ask,baseline",
                                           "--sandbox=logged", timeout=300)
    result.assert_outcomes(passed=2)
    finished = [json.loads(line) for line in (extended / "finished.jsonl").read_text().splitlines()]
    assert sorted((row["run_id"], row["passed"]) for row in finished) == [
        ("toy[mini-ask-echo_100-s0]", True), ("toy[mini-baseline-s0]", True)]
    assert {row["rootdir"] for row in finished} == {str(extended)}
    runs = {run["agent"]: run for run in json.loads((extended / "mlab-results/results.json").read_text())["runs"]}
    assert runs["ask"]["score"] == 0.0 and runs["ask"]["success"]  # the echo provider's answer was graded
    assert {run["sandbox"] for run in runs.values()} == {"logged"}
    assert (extended / "commands.log").read_text().count("train.py") == 2  # both runs' scripts went through it


@pytest.mark.slow
def test_a_failing_run_finished_hook_is_reported_and_the_results_are_kept(pytester, extended):
    (extended / "conftest.py").write_text(CONFTEST + "\n\ndef pytest_mlab_run_finished(result):\n"
                                          "    raise RuntimeError('dashboard down')\n")
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                                           "--mlab-cache", str(extended / ".cache"), "--agent=baseline",
                                           "--sandbox=local", timeout=300)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*pytest_mlab_run_finished hook failed on toy[[]mini-baseline-s0[]]: "
                                 "RuntimeError: dashboard down*"])
    assert (extended / "mlab-results/results.json").exists()


def test_added_names_may_not_replace_built_in_ones():
    with pytest.raises(UsageError, match="sandbox backend 'local' is already defined"):
        registry.add_backends({"local": object})
    with pytest.raises(UsageError, match="sandbox backend name 'Bad Name'"):
        registry.add_backends({"Bad Name": object})
    with pytest.raises(UsageError, match="LLM provider prefix 'scripted:' is already taken"):
        providers.add_providers({"scripted:": object})


def test_added_providers_answer_their_prefix_until_removed():
    made = []
    remove = providers.add_providers({"echo:": lambda model, task: made.append((model, task)) or "provider"})
    try:
        assert providers.make_provider("echo:hi", task="toy") == "provider" and made == [("echo:hi", "toy")]
        assert providers.unavailable({"main": "echo:hi"}, "toy") is None  # no API key needed
    finally:
        remove()
    assert "echo:" not in providers._ADDED


def test_added_backends_are_sandbox_kinds_until_removed():
    remove = registry.add_backends({"logged": lambda **kwargs: "sandbox"})
    try:
        assert "logged" in registry.SANDBOX_KINDS and registry.open_sandbox("logged") == "sandbox"
        assert registry.sandbox_unavailable("logged") is None
    finally:
        remove()
    assert list(registry.SANDBOX_KINDS) == ["auto", "local", "bwrap", "docker"]


def _readme_block(marker: str) -> str:
    """The README's code block that starts with the line ``marker``."""
    readme = (REPO / "README.md").read_text()
    found = re.search(rf"```\w*\n({re.escape(marker)}\n.*?)```", readme, re.DOTALL)
    assert found, f"README.md has no code block starting with {marker!r}"
    return found.group(1)


def plain_pytest(root: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    """The ``pytest`` command in ``root``, as a user types it: unlike ``python -m pytest`` and
    pytester's runs, it does not put the current folder on ``sys.path``."""
    command = [str(Path(sysconfig.get_path("scripts")) / "pytest"), "specs", "-p", "no:cacheprovider",
               *UNRELATED_PLUGINS, "--mlab-cache", str(root / ".cache"), *args]
    return subprocess.run(command, cwd=root, env=dict(os.environ), capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_the_readme_custom_agent_runs_under_plain_pytest_with_the_root_conftest(tmp_path):
    root = copy_toy_project(tmp_path)  # its pytest.ini sets no pythonpath
    (root / "my_agents.py").write_text(_readme_block("# my_agents.py"))
    (root / "agents" / "run-twice.yaml").write_text(_readme_block("# agents/run-twice.yaml"))

    without = plain_pytest(root, "--agent=run-twice", "--collect-only", timeout=120)
    assert without.returncode == pytest.ExitCode.USAGE_ERROR and "cannot import 'my_agents'" in without.stderr

    shutil.copy(REPO / "conftest.py", root / "conftest.py")
    ran = plain_pytest(root, "--agent=run-twice", "--sandbox=local", "--run-log=runs.jsonl", timeout=300)
    run = json.loads((root / "mlab-results/results.json").read_text())["runs"][0]
    assert run["agent"] == "run-twice" and run["end_reason"] == "final answer" and run["steps"] == 3, ran.stdout
    logged = [json.loads(line) for line in (root / "runs.jsonl").read_text().splitlines()]
    assert [row["run_id"] for row in logged] == ["toy[mini-run-twice-s0]"]  # the conftest's example hook
