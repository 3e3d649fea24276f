"""The agent spec options the LLM layer reads, and their JSON Schema: every LLM-driven agent's
``options_schema`` includes :data:`LLM_OPTIONS_SCHEMA`, so a bad value is an error at its line
when the spec is collected.

- ``sampling``: each role's temperature, tokens and request time-out (:mod:`sampling`).
- ``llm_attempts``: HTTP requests per call at most (:mod:`litellm_provider`).
- ``api_base``: litellm model string -> the URL of the OpenAI-compatible server that serves it
  (vLLM, a llama.cpp server, a proxy), e.g. ``{openai/Llama-3-8B: http://127.0.0.1:8000/v1}``.
  Keyed by model, not by role, so the roles that follow the main model go to its server, and a
  model given with ``--llm`` goes to the server the spec names for it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pytest_mlab.llm.sampling import SAMPLING_OPTIONS_SCHEMA

#: The JSON Schema of ``options: api_base:``.
API_BASE_OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"minLength": 1, "pattern": r"^\S+$"},
    "additionalProperties": {"type": "string", "pattern": r"^https?://[^\s/]+(/\S*)?$"},
}

#: The ``options:`` properties the LLM layer reads, as JSON Schema.
LLM_OPTIONS_SCHEMA: dict[str, Any] = {
    "sampling": SAMPLING_OPTIONS_SCHEMA,
    "llm_attempts": {"type": "integer", "minimum": 1},
    "api_base": API_BASE_OPTIONS_SCHEMA,
}


def api_bases(options: Mapping[str, Any]) -> dict[str, str]:
    """Model string -> server URL, from options already checked against :data:`API_BASE_OPTIONS_SCHEMA`."""
    return dict(options.get("api_base") or {})
