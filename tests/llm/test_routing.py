"""Routing models from litellm's data files, without importing litellm: the usual answers, and
the same answers litellm gives (checked against litellm itself, in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pytest_mlab.llm import routing
from pytest_mlab.llm.secrets import HELD
from pytest_mlab.llm.routing import UNSURE, Route, missing_variables, route

#: Models whose routing litellm's data files settle, and what they say.
CERTAIN = {"gpt-4": Route(True, "openai"), "gpt-4o-mini": Route(True, "openai"),
           "openai/my-fine-tune": Route(True, "openai"), "anthropic/claude-3-opus": Route(True, "anthropic"),
           "ollama/llama3": Route(True, "ollama"), "nosuchprovider/xyz": Route(False),
           "not-a-vendor/gpt-4": Route(False)}


@pytest.mark.parametrize("model, expected", CERTAIN.items())
def test_the_data_files_route_the_usual_models(model, expected):
    assert route(model) == expected


@pytest.mark.parametrize("model", ["gpt4", "azure/my-deployment", "someone/llama-2-70b:" + "0" * 64])
def test_names_the_data_files_cannot_settle_are_left_to_litellm(model):
    assert route(model) == UNSURE


def test_litellms_proxy_takes_every_model(monkeypatch):
    monkeypatch.setenv("USE_LITELLM_PROXY", "True")
    assert route("nosuchprovider/xyz") == UNSURE


def test_without_litellms_files_nothing_is_certain(monkeypatch):
    monkeypatch.setattr(routing, "providers", lambda: frozenset())
    assert route("gpt-4") == UNSURE


@pytest.mark.parametrize("provider, environment, missing", [
    ("openai", {}, ("OPENAI_API_KEY",)), ("openai", {"OPENAI_API_KEY": "k"}, ()),
    ("anthropic", {"ANTHROPIC_AUTH_TOKEN": "t"}, ()), ("anthropic", {}, ("ANTHROPIC_API_KEY",)),
    ("gemini", {"GOOGLE_API_KEY": "k"}, ()), ("gemini", {}, ("GEMINI_API_KEY",)),
    ("bedrock", {}, None)])
def test_missing_variables(monkeypatch, provider, environment, missing):
    for name in (*HELD, "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert missing_variables(provider) == missing


LITELLM_ANSWERS = """
import json, sys
import litellm
answers = {}
for model in json.loads(sys.argv[1]):
    try:
        answers[model] = litellm.get_llm_provider(model)[1]
    except Exception:
        answers[model] = None
keys = {model: litellm.validate_environment(model=model)["missing_keys"] for model in json.loads(sys.argv[2])}
print(json.dumps({"providers": answers, "keys": keys}))
"""


def test_the_answers_are_litellms_own():
    """One litellm import: every certain route and every key variable of the table, as litellm says."""
    key_models = {"openai": "gpt-4", "anthropic": "anthropic/claude-3-opus", "gemini": "gemini/gemini-1.5-pro",
                  "mistral": "mistral/mistral-large-latest", "groq": "groq/llama3-8b-8192",
                  "together_ai": "together_ai/meta-llama/Llama-3-8b-chat-hf", "deepseek": "deepseek/deepseek-chat",
                  "xai": "xai/grok-beta", "openrouter": "openrouter/openai/gpt-4", "cohere": "cohere/command-r",
                  "fireworks_ai": "fireworks_ai/accounts/fireworks/models/llama-v3-70b-instruct",
                  "huggingface": "huggingface/meta-llama/Llama-2-7b", "perplexity": "perplexity/sonar"}
    assert set(key_models) == set(routing.KEY_VARIABLES)
    environment = {name: value for name, value in os.environ.items()
                   if not name.endswith(("_API_KEY", "_AUTH_TOKEN")) and name != "USE_LITELLM_PROXY"}
    out = subprocess.run([sys.executable, "-c", LITELLM_ANSWERS, json.dumps(list(CERTAIN)),
                          json.dumps(list(key_models.values()))],
                         capture_output=True, text=True, check=True, env={**environment,
                                                                          "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    litellm = json.loads(out.stdout.splitlines()[-1])
    for model, expected in CERTAIN.items():
        assert litellm["providers"][model] == expected.provider, model
    for provider, model in key_models.items():  # litellm asks for one of ours, and ours comes first
        ours = routing.KEY_VARIABLES[provider]
        assert set(litellm["keys"][model]) <= set(ours) and ours[0] in litellm["keys"][model], provider
