"""Reading an LLM agent's response: the named entries, then a lenient parse of the Action Input.

Shared by every LLM-driven agent (research, react, simple). Models rarely write perfect JSON
for multi-line code, so the Action Input is tried as JSON first, then repaired (code fences,
raw newlines and backslashes inside strings), then read key by key using the action's argument
names. Anything that still fails is a :class:`ResponseError` whose message is shown to the model.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from pytest_mlab.errors import MlabError

STOP = "Observation:"


class ResponseError(MlabError):
    """The response cannot be used; the message tells the model what to fix."""


def cut_at_stop(text: str, stop: str = STOP) -> str:
    """Providers that ignore stop sequences (scripted, some local models) may go on past it."""
    index = text.find(stop)
    return text if index < 0 else text[:index]


def parse_entries(text: str, names: Sequence[str]) -> dict[str, str]:
    """``{entry: value}`` for each ``Name:`` header of ``names`` found at the start of a line.

    Headers may be decorated the way models like to (``**Action**:``, ``### Thought:``). Entries
    that are missing are simply absent; :func:`missing_entries` says which required ones are.
    """
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    header = re.compile(rf"^[ \t>#*-]*\**({alternatives})\**[ \t]*:\**[ \t]*", re.MULTILINE | re.IGNORECASE)
    canonical = {name.lower(): name for name in names}
    matches = list(header.finditer(text))
    entries: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        name = canonical[match.group(1).lower()]
        entries.setdefault(name, text[match.end():end].strip())
    return entries


def missing_entries(entries: dict[str, str], required: Iterable[str]) -> list[str]:
    return [name for name in required if not entries.get(name, "").strip()]


def parse_action_input(text: str, argument_names: Sequence[str]) -> dict[str, Any]:
    """The Action Input as a dict, as leniently as it can be read without guessing values."""
    raw = _strip_fences(text.strip())
    if not raw:
        if not argument_names:
            return {}
        raise ResponseError("the Action Input is empty")
    for candidate in (raw, _outermost_object(raw)):
        if candidate is None:
            continue
        for attempt in (candidate, _escape_inside_strings(candidate)):
            try:
                value = json.loads(attempt)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
            raise ResponseError(f"the Action Input must be a JSON object, got {type(value).__name__}")
    fallback = _key_by_key(raw, argument_names)
    if fallback:
        return fallback
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResponseError(f"the Action Input is not valid JSON ({exc.msg} at line {exc.lineno} "
                            f"column {exc.colno})") from None
    raise ResponseError("the Action Input is not a JSON object")  # pragma: no cover - loads succeeded above


def _strip_fences(text: str) -> str:
    """```json ... ``` around the whole input (the most common deviation)."""
    match = re.fullmatch(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", text, re.DOTALL)
    return match.group(1).strip() if match else text


def _outermost_object(text: str) -> str | None:
    """From the first '{' to the last '}', dropping chatter around the object."""
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else None


def _escape_inside_strings(text: str, in_string: bool = False) -> str:
    """Escape raw newlines, tabs and lone backslashes that appear inside JSON strings."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                following = text[index + 1:index + 2]
                if following and following in '"\\/bfnrtu':
                    out.append(text[index:index + 2])
                    index += 2
                    continue
                out.append("\\\\")
            elif char == '"':
                in_string = False
                out.append(char)
            elif char == "\n":
                out.append("\\n")
            elif char == "\t":
                out.append("\\t")
            elif char == "\r":
                out.append("\\r")
            else:
                out.append(char)
        else:
            if char == '"':
                in_string = True
            out.append(char)
        index += 1
    return "".join(out)


def _key_by_key(text: str, argument_names: Sequence[str]) -> dict[str, Any]:
    """Read ``"name": value`` for the action's own argument names, in the order they appear.

    A value runs to the next known key (or the closing brace), so unescaped quotes inside code
    survive. Numbers stay strings; the Environment converts them to the declared types.
    """
    positions = []
    for name in argument_names:
        match = re.search(rf'["\']?{re.escape(name)}["\']?\s*:', text)
        if match:
            positions.append((match.start(), match.end(), name))
    positions.sort()
    values: dict[str, Any] = {}
    for index, (_, value_start, name) in enumerate(positions):
        value_end = positions[index + 1][0] if index + 1 < len(positions) else len(text)
        value = text[value_start:value_end].strip()
        if index + 1 == len(positions):
            value = re.sub(r"\}\s*$", "", value).rstrip()
        value = value.rstrip(",").strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = _unquote(value[1:-1])
        values[name] = value
    return values


def _unquote(body: str) -> str:
    """Honour the escapes a model did write (``\\n``, ``\\"``); keep the text as is otherwise."""
    for attempt in (body, _escape_inside_strings(body, in_string=True)):
        try:
            value = json.loads(f'"{attempt}"')
        except json.JSONDecodeError:
            continue
        if isinstance(value, str):
            return value
    return body
