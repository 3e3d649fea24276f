"""How LLM failures end a run, what the sandbox never sees, and the checks made before any run."""

from __future__ import annotations

import json
import sys

import pytest

from pytest_mlab.llm import BudgetExhausted, LLMError, ProviderError, TokenLimitExceeded
from pytest_mlab.outcomes import EndReason
from pytest_mlab.spec.models import ActionSpec
from pytest_mlab.trace import read_trace
from tests.env.support import make_environment
from tests.helpers import UNRELATED_PLUGINS
from tests.llm.support import SUBMIT, WRITE_ANSWER, llm_project, only_run, run_project


class FailingLLM:
    def __init__(self, error: Exception):
        self.error = error

    def complete(self, prompt, *, role="main", stop=(), purpose=""):
        raise self.error


def ask_llm(ctx) -> str:
    """A composite action in miniature: one call to the edit LLM."""
    return ctx.llm.complete("rewrite", role="edit", purpose="edit script")


ASK = ActionSpec(name="Ask", description="asks the LLM", arguments=(), returns="text",
                 implementation="tests.llm.test_wiring:ask_llm", source="test", primitive=False)


@pytest.mark.parametrize("error, observation", [
    (TokenLimitExceeded("prompt too long"), "EnvError: too long input for the tool (prompt too long)"),
    (LLMError("the model refused"), "LLMError: the model refused")])
def test_llm_failure_inside_an_action_is_an_observation_and_the_run_goes_on(tmp_path, error, observation):
    env = make_environment(tmp_path, actions=("List Files",))
    env.actions["Ask"] = ASK
    env.implementations["Ask"] = ask_llm
    env.llm = FailingLLM(error)
    assert env.step("Ask", {}) == observation
    assert not env.done and env.steps == 1
    assert env.step("List Files", {"dir_path": "."}).startswith("EnvError") is False
    env.trace.close()
    steps = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]
    assert steps[0]["error"] and steps[0]["observation"] == observation and steps[0]["ended"] is None


@pytest.mark.parametrize("error, reason", [(ProviderError("rate limited 5 times"), EndReason.PROVIDER_ERROR),
                                           (BudgetExhausted("budget spent"), EndReason.BUDGET_SPENT)])
def test_provider_or_budget_failure_inside_an_action_ends_the_run_with_the_step_recorded(tmp_path, error, reason):
    env = make_environment(tmp_path, actions=("List Files",))
    env.actions["Ask"] = ASK
    env.implementations["Ask"] = ask_llm
    env.llm = FailingLLM(error)
    with pytest.raises(type(error)):
        env.step("Ask", {})
    assert env.end_reason == reason and env.steps == 1 and reason.harness_failed
    env.trace.close()
    (step,) = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]
    assert step["ended"] == reason and step["error"]
    assert step["observation"] == f"{type(error).__name__}: {error}"


def test_api_keys_never_reach_the_agents_code(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    env = make_environment(tmp_path, files={"show.py": "import os\nprint(sorted(k for k in os.environ if 'KEY' in k))\n"
                                                      "print(os.environ.get('OPENAI_API_KEY'))\n"})
    observation = env.step("Execute Script", {"script_name": "show.py"})
    assert "[]" in observation and "None" in observation and "secret" not in observation


@pytest.fixture
def project(pytester):
    return llm_project(pytester.path)


def test_an_agent_spec_model_without_its_key_skips_before_any_run_naming_the_variable(pytester, project,
                                                                                      monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result, results = run_project(pytester, project, "-rs")  # the agent spec names gpt-4
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*model 'gpt-4' needs the environment variable OPENAI_API_KEY: export OPENAI_API_KEY=*"])
    assert not (project / "mlab-results" / "runs").exists() or not any((project / "mlab-results" / "runs").iterdir())


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_typed_model_without_its_key_is_a_usage_error_before_any_worker_starts(pytester, project, monkeypatch,
                                                                                  workers):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result, results = run_project(pytester, project, "--llm=gpt-4", "-n", workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and results == {}
    result.stderr.fnmatch_lines(["*--llm=gpt-4: model 'gpt-4' needs the environment variable OPENAI_API_KEY: "
                                 "export OPENAI_API_KEY=*"])
    assert "[gw" not in result.stdout.str()  # no worker started


def test_a_typed_model_no_agent_of_the_session_calls_needs_no_key(pytester, project, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result, _ = run_project(pytester, project, "--llm=gpt-4", "--agent=baseline", "--collect-only")
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_model_litellm_cannot_route_is_a_usage_error_before_any_run(pytester, project, workers):
    result, results = run_project(pytester, project, "--llm=nosuchprovider/xyz", "-n", workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and results == {}
    result.stderr.fnmatch_lines(["*--llm=nosuchprovider/xyz: litellm cannot tell which provider serves the model "
                                 "'nosuchprovider/xyz': name it with its provider, e.g. openai/xyz*"])


#: A conftest that records, in the file MLAB_PROBE, each question about a model (and which process
#: asked it) and the heavy libraries each process (controller or xdist worker) imported.
PROBE = """
import os, sys
import pytest_mlab.llm.keys as keys

_ask = keys.model_problem
WHO = os.environ.get("PYTEST_XDIST_WORKER", "controller")


def _write(line):
    with open(os.environ["MLAB_PROBE"], "a") as probe:
        probe.write(line + "\\n")


def model_problem(model):
    _write(f"asked {WHO} {model}")
    return _ask(model)


keys.model_problem = model_problem


def _imported(when):
    heavy = [name for name in ("litellm", "openai", "pandas", "matplotlib", "docker") if name in sys.modules]
    _write(f"{when} {WHO} imported {','.join(heavy) or '-'}")


def pytest_sessionstart(session):
    _imported("started")


def pytest_collection_finish(session):
    _imported("collected")


def pytest_unconfigure(config):
    if WHO != "controller":  # the controller writes results.csv and plots at the end: pandas, matplotlib
        _imported("ended")
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_key_check_is_asked_once_and_no_process_imports_litellm_without_a_call(pytester, project,
                                                                                  monkeypatch, workers):
    """The controller asks about each model once; workers use its answers. A process that makes no
    LLM call (the run here is the baseline agent's; the LLM agent's is deselected) imports neither
    litellm nor the other heavy libraries."""
    (project / "conftest.py").write_text(PROBE)
    probe = project / "probe.txt"
    monkeypatch.setenv("MLAB_PROBE", str(probe))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this test's own worker, under xdist
    result, _ = run_project(pytester, project, "--agent=tool,baseline", "-k", "baseline", "-n", workers)
    result.assert_outcomes(passed=1, deselected=0 if workers != "0" else 1)  # xdist does not count deselected
    workers = [f"gw{i}" for i in range(int(workers))]
    collecting = workers or ["controller"]  # under xdist, the workers collect
    expected = ["asked controller gpt-4", "started controller imported -",
                *(f"{when} {who} imported -" for who in workers for when in ("started", "ended")),
                *(f"collected {who} imported -" for who in collecting)]
    assert sorted(_without_report_libraries(probe.read_text().splitlines())) == sorted(expected)


def _without_report_libraries(lines: list[str]) -> list[str]:
    """The controller's lines with pandas and matplotlib left out once runs were collected: it
    imports them for its report in a background thread while the runs go on (results/report.py's
    warm_up); every other process, and the controller before collection, imports neither."""
    prefix = "collected controller imported "
    kept = []
    for line in lines:
        if line.startswith(prefix):
            rest = [name for name in line[len(prefix):].split(",") if name not in ("pandas", "matplotlib", "-")]
            line = prefix + (",".join(rest) or "-")
        kept.append(line)
    return kept


def test_an_agent_spec_naming_an_unroutable_model_skips_and_the_session_fails(pytester):
    project = llm_project(pytester.path, agent_llm="main: nosuchprovider/xyz")
    result, _ = run_project(pytester, project, "-rs")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # nothing ran: CI must not go green
    result.stdout.fnmatch_lines(["*litellm cannot tell which provider serves the model 'nosuchprovider/xyz'*"])


def test_human_under_xdist_is_a_usage_error(pytester, project):
    result, _ = run_project(pytester, project, "--llm=human", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llm=human reads your answers from the terminal*drop -n*"])


@pytest.mark.slow
def test_human_plays_the_agent_through_stdin(pytester, project):
    answers = "".join(f"{json.dumps(step)}\n.\n" for step in (WRITE_ANSWER, SUBMIT))
    result = pytester.run(sys.executable, "-m", "pytest", "specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                          "--mlab-cache", str(project / ".cache"), "--agent=tool", "--llm=human",
                          stdin=answers.encode(), timeout=300)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*LLM call 1: role main, next action*", "*Task: Predict the sum*",
                                 "*end it with a line holding only '.'*"])


@pytest.mark.slow
def test_token_limit_from_the_agents_call_ends_the_run_as_token_limit(pytester, project):
    trace = project / "recorded.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in (
        {"type": "run", "task": "toy"},
        {"type": "llm", "step": 1, "role": "main", "purpose": "next action", "completion": json.dumps(WRITE_ANSWER)},
        {"type": "llm", "step": 2, "role": "main", "purpose": "next action", "completion": None,
         "failure": "token limit", "message": "the prompt has 9000 tokens, more than the 8192 that gpt-4 accepts"})))
    result, results = run_project(pytester, project, f"--llm=replay:{trace}")
    result.assert_outcomes(passed=1)  # the submission written before the limit is graded, and it is exact
    run = only_run(results)
    assert run["end_reason"] == "token limit" and run["steps"] == 1
    ended = [r for r in read_trace(run["trace"]) if r["type"] == "ended"]
    assert ended and ended[-1]["reason"] == "token limit" and "8192" in ended[-1]["detail"]


@pytest.mark.slow
def test_token_limit_before_any_submission_fails_the_item(pytester, project):
    trace = project / "recorded.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in (
        {"type": "run", "task": "toy"},
        {"type": "llm", "step": 1, "role": "main", "purpose": "next action", "completion": None,
         "failure": "token limit", "message": "too long"})))
    result, results = run_project(pytester, project, f"--llm=replay:{trace}")
    result.assert_outcomes(failed=1)
    run = only_run(results)
    assert run["end_reason"] == "token limit" and run["steps"] == 0 and not run["passed"]
