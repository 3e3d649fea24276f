"""Fixtures shared by the LLM tests."""

from __future__ import annotations

import pytest

from tests.llm.fake_provider import FakeProvider


@pytest.fixture
def server(monkeypatch):
    """The fake OpenAI-compatible provider on loopback. litellm reads both variables on every call,
    and pytest sub-runs inherit them, so their agents' calls reach it too. OPENAI_BASE_URL, which
    litellm prefers to OPENAI_API_BASE, is removed: no call may go anywhere else."""
    with FakeProvider() as fake:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        yield fake
