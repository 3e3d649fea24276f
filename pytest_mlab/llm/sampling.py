"""How each role samples: temperature, most tokens per completion, and seconds per HTTP request.

The defaults are the original system's (MLAgentBench ``LLM.py``, ``high_level_actions.py``) for
Claude, Gemini, Hugging Face and CRFM (``org/model``) names: the main model at 0.5 / 2000 tokens,
the fast model (summaries, Understand File, Reflection, Retrieval) at 0.01 / 2000, Edit Script (AI)
at 0.5 / 4000. Its plain OpenAI names (``gpt-4``) got 0.2 / 500 instead, 0.01 / 500 and 0.2 / 4000;
ours keeps one set for every model (docs/fidelity.md says what that changes). The original had no
request timeout; ours is there so that a stalled provider cannot hold a run for long, and the
provider cuts it further to the time the run has left. An agent spec changes any of them under
``options: sampling:``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from pytest_mlab.llm.base import ROLES


@dataclass(frozen=True)
class Sampling:
    temperature: float
    max_tokens: int
    timeout: float  # seconds per HTTP request

    def to_record(self) -> dict[str, Any]:
        """The fields an ``llm`` trace record carries."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "timeout": self.timeout}


DEFAULT_SAMPLING: dict[str, Sampling] = {
    "main": Sampling(temperature=0.5, max_tokens=2000, timeout=300.0),
    "fast": Sampling(temperature=0.01, max_tokens=2000, timeout=300.0),
    "edit": Sampling(temperature=0.5, max_tokens=4000, timeout=600.0),
}

_ROLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "temperature": {"type": "number", "minimum": 0},
        "max_tokens": {"type": "integer", "minimum": 1},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
    },
}

#: The JSON Schema of an agent spec's ``options: sampling:``; every key is optional.
SAMPLING_OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {role: _ROLE_SCHEMA for role in ROLES},
}


def sampling_for(options: Mapping[str, Any]) -> dict[str, Sampling]:
    """Each role's sampling: the spec's ``sampling`` option over the defaults. The option was
    checked against :data:`SAMPLING_OPTIONS_SCHEMA` when the agent spec was collected."""
    given = options.get("sampling") or {}
    return {role: replace(DEFAULT_SAMPLING[role], **(given.get(role) or {})) for role in ROLES}
