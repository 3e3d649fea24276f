"""The response parser's corpus (tests/fixtures/responses/cases.yaml: each model family's profile)
and the actions each profile's environment carries out; and the oracle, an independent
re-implementation of what MLAgentBench's agent accepted (and how it read the Action Input), for the
corpus tests and the parser's properties."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import yaml

from pytest_mlab.agents.parsing import ParsedResponse
from pytest_mlab.spec.models import ActionSpec
from tests.env.support import repo_project

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "responses"
CORPUS = yaml.safe_load((FIXTURES / "cases.yaml").read_text(encoding="utf-8"))
PROFILES: dict[str, dict[str, Any]] = CORPUS["profiles"]


@lru_cache(maxsize=None)
def actions_of(agent: str) -> dict[str, ActionSpec]:
    """Every action the profile's environment carries out: offered, then accepted besides."""
    profile = PROFILES[agent]
    return {name: repo_project().action(name) for name in profile["offered"] + profile["accepted"]}


@dataclass(frozen=True)
class OriginalReading:
    action: str
    arguments: dict[str, Any] | None  # None: it turned the input into an ActionInputParsingError
    action_at: int  # where in the text it read the action


def original_reading(text: str, required: Sequence[str], actions: dict[str, ActionSpec]) -> OriginalReading | None:
    """What MLAgentBench's agent made of a response; None when it asked again.

    Its rule: one regex with every required ``Name:`` in order, each followed by anything (greedy,
    anywhere in the text, values may be empty); the Action, stripped, exactly a tool's name.
    """
    found = re.search("".join(re.escape(name) + r":([\s\S]*)" for name in required), text)
    if found is None:
        return None
    values = dict(zip(required, found.groups()))
    action = values["Action"].strip()
    if action not in actions:
        return None
    arguments = original_arguments(values["Action Input"], [argument.name for argument in actions[action].arguments])
    return OriginalReading(action, arguments, found.start(required.index("Action") + 1))


REASONING = re.compile(r"\s*(?:<think>.*?</think>|[^<]*</think>)", re.DOTALL)


def deliberately_different(text: str, original: OriginalReading, parsed: ParsedResponse) -> bool:
    """Where we read another action than the original, on purpose: it took its action from a
    leading think-block (a draft the model set aside; it could not see the answer's headers), or
    from header text inside the argument we read (code that prompts a model)."""
    reasoning = REASONING.match(text)
    if reasoning and original.action_at < reasoning.end():
        return True
    start = text.replace("\r\n", "\n").find(parsed.entries.get("Action Input") or "\0")
    return 0 <= start <= original.action_at < start + len(parsed.entries["Action Input"])


def original_arguments(text: str, keys: list[str]) -> dict[str, Any] | None:
    """JSON; else its 'sanitised' JSON; keys must be exactly the arguments; else (on the sanitised
    text when sanitising was needed) a pattern ``"key":(anything),\\s*"key":(anything)...``."""
    try:
        value = json.loads(text)
    except ValueError:
        text = original_sanitised(text)
        try:
            value = json.loads(text)
        except ValueError:
            value = None
    if isinstance(value, dict) and set(value) == set(keys):
        return value
    inside = text[text.find("{") + 1:]
    inside = inside[:inside.rfind("}")]
    found = re.search(r",\s*".join(f'"{key}":([\\s\\S]*)' for key in keys), inside)
    if found is None:
        return None
    return {key: group.strip().strip('"') for key, group in zip(keys, found.groups())}


def original_sanitised(text: str) -> str:
    """Its repair: trim fence characters, double every backslash, escape every slash and control
    character, then escape raw newlines between pairs of quotes."""
    text = text.strip("`json").strip().replace("\\", "\\\\").replace("/", "\\/")
    for char, escape in (("\b", "\\b"), ("\f", "\\f"), ("\r", "\\r"), ("\t", "\\t")):
        text = text.replace(char, escape)
    return re.sub(r'"([^"]*)"', lambda quoted: '"' + quoted.group(1).replace("\n", "\\n") + '"', text)
