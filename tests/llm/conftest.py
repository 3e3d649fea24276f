"""Fixtures shared by the LLM tests."""

from __future__ import annotations

import pytest

from tests.llm.fake_provider import FakeProvider


@pytest.fixture
def server(monkeypatch):
    """The fake OpenAI-compatible provider on loopback. litellm reads both variables on every call,
    and pytest sub-runs inherit them, so their agents' calls reach it too."""
    with FakeProvider() as fake:
        monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        yield fake
