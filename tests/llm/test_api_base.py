"""An OpenAI-compatible server of one's own (vLLM, a llama.cpp server, a proxy), reached through the
session and the real litellm, with no mock: by the agent spec's ``options: api_base:`` or by
litellm's own variables. The server is the fake one on loopback; litellm's default base points at
a loopback port where nothing listens, so a call that went anywhere but the server would fail."""

from __future__ import annotations

import jsonschema
import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.llm import ROLES
from pytest_mlab.llm.options import API_BASE_OPTIONS_SCHEMA, LLM_OPTIONS_SCHEMA, api_bases
from pytest_mlab.llm.providers import make_providers
from pytest_mlab.llm.session import LLMSession
from pytest_mlab.spec.project import Project
from pytest_mlab.trace import TraceWriter
from tests.helpers import ACTIONS_DIR, AGENTS_DIR
from tests.llm.fake_provider import Reply, refused_base
from tests.llm.session_support import llm_records

MODEL = "openai/my-local-llama"  # "openai/": litellm speaks the OpenAI chat API to the server
VLLM = "hosted_vllm/my-local-llama"  # litellm's vLLM provider: the same API, and no key needed


@pytest.fixture
def trace(tmp_path):
    with TraceWriter(tmp_path / "trace.jsonl") as writer:
        yield writer


def local_session(trace, options: dict, model: str = MODEL) -> LLMSession:
    """The session a run of an agent spec with these ``options`` gets, every role on ``model``."""
    models = {role: model for role in ROLES}
    return LLMSession(models, make_providers(models, task="toy"), trace, api_bases=api_bases(options))


def assert_the_server_answered(server, trace, prompt: str, model: str = MODEL) -> None:
    assert server.paths == ["/v1/chat/completions"]
    (request,) = server.requests
    assert request["model"] == "my-local-llama"  # litellm sends the name without its provider
    assert request["messages"] == [{"role": "user", "content": prompt}]
    (record,) = llm_records(trace)
    assert (record["model"], record["provider_model"], record["completion"]) == (model, "llama-3-8b", "from my server")


@pytest.mark.parametrize("model", [MODEL, VLLM])
def test_the_spec_option_sends_the_model_to_its_server(server, trace, monkeypatch, model):
    for variable in ("OPENAI_API_BASE", "HOSTED_VLLM_API_BASE"):  # litellm's defaults: nobody there
        monkeypatch.setenv(variable, refused_base())
    if model == VLLM:
        monkeypatch.delenv("OPENAI_API_KEY")
    server.queue(Reply.answer("from my server", model="llama-3-8b"))
    session = local_session(trace, {"api_base": {model: server.api_base}}, model)
    assert session.complete("What is 2 + 2?", role="fast") == "from my server"
    assert_the_server_answered(server, trace, "What is 2 + 2?", model)


@pytest.mark.parametrize("variable, model", [("OPENAI_BASE_URL", MODEL), ("OPENAI_API_BASE", MODEL),
                                             ("HOSTED_VLLM_API_BASE", VLLM)])
def test_litellms_variables_send_the_providers_models_to_the_server(server, trace, monkeypatch, variable, model):
    monkeypatch.delenv("OPENAI_API_BASE")
    monkeypatch.setenv(variable, server.api_base)
    server.queue(Reply.answer("from my server", model="llama-3-8b"))
    assert local_session(trace, {}, model).complete("hello server") == "from my server"
    assert_the_server_answered(server, trace, "hello server", model)


def test_a_model_the_option_does_not_name_keeps_litellms_default(server, trace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_BASE", server.api_base)
    server.queue(Reply.answer("from my server", model="llama-3-8b"))
    session = local_session(trace, {"api_base": {"openai/another-model": refused_base()}})
    assert session.complete("hi") == "from my server"
    assert server.count == 1


@pytest.mark.parametrize("value", [
    {"openai/x": "127.0.0.1:8000/v1"}, {"openai/x": "ftp://host/v1"}, {"openai/x": "http://"},
    {"openai/x": "http://host /v1"}, {"openai/x": 8000}, {"": "http://127.0.0.1:8000/v1"}, "http://127.0.0.1:8000/v1"])
def test_the_schema_refuses_what_is_no_server_address(value):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(value, API_BASE_OPTIONS_SCHEMA)


def test_the_schema_accepts_server_addresses_by_model():
    options = {"api_base": {MODEL: "http://127.0.0.1:8000/v1", "hosted_vllm/m": "https://gpu-box.example:443"}}
    jsonschema.validate(options, {"type": "object", "properties": LLM_OPTIONS_SCHEMA})
    assert api_bases(options) == options["api_base"] and api_bases({}) == {}


@pytest.mark.parametrize("base", ["research", "react"])
def test_a_bad_server_address_is_a_spec_error_at_its_line(tmp_path, base):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / f"{base}.yaml").write_text((AGENTS_DIR / f"{base}.yaml").read_text())
    (agents / "local.yaml").write_text(f"kind: Agent\nname: local\nextends: {base}\noptions:\n  api_base:\n"
                                       f"    {MODEL}: http://127.0.0.1:8000/v1\n    {VLLM}: 127.0.0.1:8000\n")
    project = Project(tmp_path, ACTIONS_DIR, agents, tmp_path / "tasks")
    with pytest.raises(SpecError) as raised:
        project.agent("local")
    assert (raised.value.line, raised.value.where) == (7, f"options.api_base.{VLLM}"), str(raised.value)
    assert "'127.0.0.1:8000' does not match" in raised.value.message
