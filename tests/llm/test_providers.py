"""Offline providers (scripted, replay, human), the key check, role resolution and lazy import."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mlab.llm import BudgetExhausted, LLMError, ProviderError, TimeLimitReached, TokenLimitExceeded
from pytest_mlab.llm.human import Console, HumanProvider
from pytest_mlab.llm.provider import Request
from pytest_mlab.llm.providers import resolve_paths, unavailable
from pytest_mlab.llm.replay import ReplayProvider
from pytest_mlab.llm.scripted import ScriptedProvider, load_script
from pytest_mlab.spec.models import AgentSpec
from pytest_mlab.spec.plan import Settings, role_models


def ask(provider, role="main", purpose="step", prompt="p", stop=()):
    return provider.answer(Request("m", role, prompt, tuple(stop), purpose), []).text


# ---------------------------------------------------------------- scripted

def test_scripted_answers_in_order_and_checks_roles(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("- first\n- role: fast\n  text: summary\n- 42\n")
    provider = ScriptedProvider(path)
    assert ask(provider) == "first"
    assert ask(provider, role="fast") == "summary"
    assert ask(provider, role="edit") == "42"
    with pytest.raises(LLMError, match=r"s.yaml: ran out of scripted responses: call 4 \(main, step\) .* only 3"):
        ask(provider)


def test_scripted_role_mismatch_names_the_line_and_both_roles(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("- one\n- role: edit\n  text: code\n")
    provider = ScriptedProvider(path)
    ask(provider)
    with pytest.raises(LLMError, match=r"s.yaml:2: response 2 is for role 'edit', but call 2 came from role 'main'"):
        ask(provider)


@pytest.mark.parametrize("text, message", [
    ("", "must be a non-empty YAML list"),
    ("answer: 1\n", "must be a non-empty YAML list"),
    ("- ok\n- {text: [1]}\n", r"s.yaml:2: each response must be a string or a mapping with 'text'"),
    ("- {role: boss, text: x}\n", r"s.yaml:1: role 'boss' is not one of main, fast, edit"),
    ("- {text: x, rol: main}\n", r"s.yaml:1: each response must be"),
    ("- [unclosed\n", r"s.yaml:\d+"),
])
def test_bad_script_files_are_explained(tmp_path, text, message):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(LLMError, match=message):
        load_script(path)


def test_scripted_folder_and_missing_file_reasons(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "toy.yaml").write_text("- a\n")
    folder = f"scripted:{tmp_path / 'scripts'}"
    assert unavailable({"main": folder}, "toy") is None
    assert "no scripted responses for task 'other'" in unavailable({"main": folder}, "other")
    assert "no such file or folder" in unavailable({"main": f"scripted:{tmp_path / 'nope.yaml'}"}, "toy")


def test_relative_offline_paths_resolve_against_the_invocation_folder(tmp_path):
    assert resolve_paths("scripted:a/b.yaml", tmp_path) == f"scripted:{tmp_path / 'a' / 'b.yaml'}"
    assert resolve_paths("replay:t.jsonl", tmp_path) == f"replay:{tmp_path / 't.jsonl'}"
    assert resolve_paths("gpt-4", tmp_path) == "gpt-4"


# ---------------------------------------------------------------- replay

def write_trace(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_replay_returns_recorded_completions_and_repeats_failures(tmp_path):
    trace = write_trace(tmp_path / "trace.jsonl", {"type": "run", "task": "toy"},
                        {"type": "llm", "role": "main", "purpose": "step", "completion": "A"},
                        {"type": "step", "step": 1},
                        {"type": "llm", "role": "main", "purpose": "step", "completion": None,
                         "failure": "token limit", "message": "too long"})
    provider = ReplayProvider(trace)
    assert ask(provider) == "A"
    with pytest.raises(TokenLimitExceeded, match=r"\(replayed\) too long"):
        ask(provider)
    with pytest.raises(LLMError, match="diverged: call 3 .* the trace holds 2 LLM calls"):
        ask(provider)


def test_replay_reasons_before_a_run(tmp_path):
    trace = write_trace(tmp_path / "trace.jsonl", {"type": "run", "task": "toy"})
    assert "records a run of task 'toy', not 'other'" in unavailable({"main": f"replay:{trace}"}, "other")
    assert "holds no LLM calls" in unavailable({"main": f"replay:{trace}"}, "toy")
    assert "no trace file there" in unavailable({"main": f"replay:{tmp_path / 'none.jsonl'}"}, "toy")
    write_trace(trace, {"type": "run", "task": "toy"}, {"type": "llm", "role": "main", "completion": "x"})
    assert unavailable({"main": f"replay:{tmp_path}"}, "toy") is None  # a run folder works too


# ---------------------------------------------------------------- human

def test_human_types_the_completion_ended_by_a_dot():
    typed = io.StringIO("Action: List Files\nAction Input: {}\nObservation: ignored\n.\nnext answer\n")
    shown = io.StringIO()
    provider = HumanProvider(Console(typed, shown))
    answer = ask(provider, purpose="research step", prompt="PROMPT TEXT", stop=["Observation:"])
    assert answer == "Action: List Files\nAction Input: {}\n"  # cut at the stop sequence, like a model
    assert "LLM call 1: role main, research step" in shown.getvalue() and "PROMPT TEXT" in shown.getvalue()
    assert ask(provider) == "next answer"  # end of input ends the answer too
    assert ask(provider) == ""


def test_human_console_answers_request_help():
    console = Console(io.StringIO("try a smaller learning rate\n.\n"), io.StringIO())
    assert console.help("What should I try?") == "try a smaller learning rate"
    assert "What should I try?" in console.stdout.getvalue()


# ---------------------------------------------------------------- keys

def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    reason = unavailable({"main": "gpt-4", "fast": "gpt-4"}, "toy")
    assert reason.startswith("model 'gpt-4' needs the environment variable OPENAI_API_KEY: export OPENAI_API_KEY=")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert unavailable({"main": "gpt-4"}, "toy") is None


def test_a_session_passes_the_answers_it_got_before_any_worker_started(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    asked = []
    reason = unavailable({"main": "gpt-4", "fast": "human"}, "toy", check=lambda model: asked.append(model) or "no")
    assert reason == "no" and asked == ["gpt-4"]


def test_offline_models_need_no_key(tmp_path):
    (tmp_path / "s.yaml").write_text("- a\n")
    assert unavailable({"main": f"scripted:{tmp_path / 's.yaml'}", "fast": "human"}, "toy") is None


# ---------------------------------------------------------------- roles

def agent(llm: dict) -> AgentSpec:
    return AgentSpec(name="research", implementation="m:C", actions=("Final Answer",), source="a.yaml", llm=llm)


def settings(**kwargs) -> Settings:
    base = dict(agents=(), agents_source="--agent", llm=None, seeds=1, variant="mini", sandbox="local",
                out_dir=Path("out"), cache_dir=Path("cache"))
    return Settings(**{**base, **kwargs})


@pytest.mark.parametrize("spec, options, expected", [
    ({"main": "gpt-4", "fast": "gpt-3.5-turbo"}, {}, ("gpt-4", "gpt-3.5-turbo", "gpt-4")),
    # --llm replaces every role the spec names: one vendor's key is enough
    ({"main": "gpt-4", "fast": "gpt-3.5-turbo"}, {"llm": "claude-3-opus"}, ("claude-3-opus",) * 3),
    ({"main": "gpt-4"}, {"llm": "claude-3-opus", "fast_llm": "claude-3-haiku"},
     ("claude-3-opus", "claude-3-haiku", "claude-3-opus")),
    ({"main": "gpt-4", "edit": "gpt-4o"}, {"edit_llm": "scripted:e.yaml"}, ("gpt-4", "gpt-4", "scripted:e.yaml")),
])
def test_role_models(spec, options, expected):
    roles = role_models(agent(spec), settings(**options))
    assert (roles["main"], roles["fast"], roles["edit"]) == expected


def test_agents_without_an_llm_get_no_roles():
    assert role_models(agent({}), settings(llm="gpt-4")) == {}


# ---------------------------------------------------------------- lazy import

def test_importing_and_loading_the_plugin_and_checking_the_usual_models_does_not_import_litellm():
    code = ("import sys, pytest_mlab, pytest_mlab.plugin, pytest_mlab.runner, pytest_mlab.llm.session, "
            "pytest_mlab.llm.providers; from pytest_mlab.llm.keys import model_problem; "
            "[model_problem(m) for m in ('gpt-4', 'openai/gpt-4o', 'anthropic/claude-3-opus', 'nosuchprovider/xyz')]; "
            "print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("failure, kind", [("provider error", ProviderError), ("budget spent", BudgetExhausted),
                                           ("time limit", TimeLimitReached), ("interrupted", LLMError),
                                           ("error", LLMError)])
def test_replay_fails_a_recorded_failure_the_same_way(tmp_path, failure, kind):
    trace = write_trace(tmp_path / "trace.jsonl", {"type": "run", "task": "toy"},
                        {"type": "llm", "role": "main", "purpose": "step", "completion": None,
                         "failure": failure, "message": "it failed"})
    with pytest.raises(kind, match=r"\(replayed\) it failed") as raised:
        ask(ReplayProvider(trace))
    assert type(raised.value) is kind
