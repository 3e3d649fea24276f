"""Reading an LLM agent's response: the named entries, the action, then its Action Input.

Shared by every LLM-driven agent (research, react, simple). :func:`read_response` accepts every
response MLAgentBench's agent accepted (each required ``Name:`` header present, in order, anywhere
in the text; empty values allowed; the Action exactly a tool name) with the same action, unless
that action came from a leading think-block or from inside an argument's text; and more:
decorated or lowercase headers, markdown headings, think-blocks, decorated action names. It never
guesses: the action must be named in the Action entry, and every argument value is read from the
Action Input, which is tried as JSON, then as JSON the way models write it (Python literals, single
or triple quotes, raw newlines, trailing commas, comments), then key by key using the action's
argument names. Unlike the original's repair, none of this turns an escaped slash into a backslash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from pytest_mlab.agents.action_input import ResponseError, parse_action_input
from pytest_mlab.spec.models import ActionSpec

STOP = "Observation:"

#: ``ParsedResponse.kind`` values.
OK, FORMAT, UNKNOWN_ACTION, ACTION_INPUT = "ok", "format", "unknown action", "action input"


@dataclass(frozen=True)
class ParsedResponse:
    """What could be read from one response; ``problem`` is None when it can be acted on as is."""

    entries: dict[str, str]
    action: str
    arguments: dict[str, Any] | None
    problem: str | None
    kind: str


def cut_at_stop(text: str, stop: str = STOP) -> str:
    """Providers that ignore stop sequences (scripted, some local models) may go on past it."""
    index = text.find(stop)
    return text if index < 0 else text[:index]


def read_response(text: str, required: Sequence[str], actions: Mapping[str, ActionSpec]) -> ParsedResponse:
    """The entries, action and arguments of ``text``; ``required`` ends with Action, Action Input.

    Tried on the text without think-blocks, then whole; each first with the headers exactly as
    the original agent reads them, then leniently (so an exact reading always wins).
    """
    text = text.replace("\r\n", "\n")
    failure: ParsedResponse | None = None
    for number, body in enumerate(_bodies(text)):
        for lenient in (False, True):
            reading = _reading(body, required, actions, lenient)
            if reading.kind in (OK, ACTION_INPUT):
                return reading
            if number == 0 and lenient:
                failure = reading  # the lenient reading of the answer itself says most
    assert failure is not None
    return failure


def _reading(text: str, required: Sequence[str], actions: Mapping[str, ActionSpec], lenient: bool) -> ParsedResponse:
    headers = _headers(text, required, lenient)
    entries = _values(text, _choose(headers, required), required)
    missing = missing_entries(entries, required)
    action = action_named(entries.get("Action", ""), actions)
    if missing:
        return ParsedResponse(entries, action, None, _missing_message(missing), FORMAT)
    if action:
        reading = _with_arguments(entries, actions[action])
    else:
        shown = _first_line(entries["Action"])[:80]
        reading = ParsedResponse(entries, "", None, f"'{shown}' is not one of the tools", UNKNOWN_ACTION)
    return reading if reading.kind == OK else next(_headers_inside_arguments(text, headers, entries, actions), reading)


def _headers_inside_arguments(text: str, headers: list[_Header], entries: dict[str, str],
                              actions: Mapping[str, ActionSpec]) -> Iterator[ParsedResponse]:
    """Readings from other Action and Action Input headers, for when the last ones are part of an
    argument's text (code that prompts a model, say): only those whose arguments hold that text,
    so a draft the model set aside is never acted on."""
    for action_header in (header for header in headers if header.name == "Action"):
        following = [header.start for header in headers if header.start >= action_header.end]
        named = text[action_header.end:min(following, default=len(text))].strip()
        action = action_named(named, actions)
        for input_header in (header for header in headers if header.name == "Action Input"):
            if action and input_header.start >= action_header.end:
                reading = _with_arguments({**entries, "Action": named, "Action Input": text[input_header.end:].strip()},
                                          actions[action])
                if reading.kind == OK and any(isinstance(value, str) and _INPUT_HEADER.search(value)
                                              for value in reading.arguments.values()):
                    yield reading


# ---------------------------------------------------------------------------------- entries

_DECORATION = "*_`"
_THINK = re.compile(r"\s*(?:<(think|thinking|reasoning)>.*?</\1>|[^<]*</(?:think|thinking|reasoning)>)",
                    re.DOTALL | re.IGNORECASE)
_INPUT_HEADER = re.compile(r"action[ \t_-]*input[*_ \t]*:", re.IGNORECASE)
_LINE_PREFIX = re.compile(r"[ \t>#*_`+-]*(?:\d{1,2}[.)])?[ \t*_#`]*")


@dataclass(frozen=True)
class _Header:
    name: str
    start: int  # where the header and its decoration begin: the previous value ends here
    end: int  # where its value begins


def parse_entries(text: str, names: Sequence[str], *, lenient: bool = True) -> dict[str, str]:
    """``{entry: value}`` for each header of ``names`` found; values stripped, possibly empty.

    Headers are ``Name:`` anywhere (decorated like ``**Name:**`` or ``### Name:``); ``lenient``
    adds any letter case and headings alone on their line (``### Name``). As in the original,
    the first entry is its first header and each later one the last header that still leaves
    room for the entries after it; when they are not all there in order, an entry is its first
    header, Action Input its last, and Action the last one before it.
    """
    return _values(text, _choose(_headers(text, names, lenient), names), names)


def _values(text: str, chosen: list[_Header], names: Sequence[str]) -> dict[str, str]:
    """Each chosen header's value runs to the next chosen header."""
    ordered = sorted(chosen, key=lambda header: header.start)
    entries = {}
    for index, header in enumerate(ordered):
        end = ordered[index + 1].start if index + 1 < len(ordered) else len(text)
        entries[header.name] = text[header.end:end].strip()
    return {name: entries[name] for name in names if name in entries}


def missing_entries(entries: Mapping[str, str], required: Sequence[str]) -> list[str]:
    """Required entries that are absent; an empty one counts only when it is the Action."""
    return [name for name in required if name not in entries or (name == "Action" and not entries[name].strip())]


def _bodies(text: str) -> Iterator[str]:
    """The answer after a leading think-block (whose opening tag some providers drop) first,
    then the text as it came."""
    thinking = _THINK.match(text)
    if thinking:
        yield text[thinking.end():]
    yield text


def _headers(text: str, names: Sequence[str], lenient: bool) -> list[_Header]:
    """Every header of ``names`` in ``text``, in order; ``Action: Action:`` counts once."""
    canonical = {_name_key(name): name for name in names}
    pattern = _header_pattern(tuple(names), lenient)
    found: list[_Header] = []
    for match in pattern.finditer(text):
        group = "heading" if match.groupdict().get("heading") else "colon"
        key = _name_key(match.group(group))
        if key not in canonical:
            continue
        header = _Header(canonical[key], _decorated_start(text, match.start(group)), match.end())
        previous = found[-1] if found else None
        if previous and previous.name == header.name and not text[previous.end:header.start].strip(" \t\n" + _DECORATION):
            header = _Header(header.name, previous.start, header.end)
            found.pop()
        found.append(header)
    return found


def _header_pattern(names: tuple[str, ...], lenient: bool) -> re.Pattern[str]:
    """``Name:`` anywhere, and (lenient) ``### Name`` or ``**Name**`` as a line of its own."""
    def spelled(name: str) -> str:
        words = [re.escape(word) for word in name.split()]
        return r"[ \t_-]*".join(words) if lenient else re.escape(name)

    alternatives = "|".join(spelled(name) for name in sorted(names, key=len, reverse=True))
    if not lenient:
        return re.compile(rf"(?P<colon>{alternatives}):[*_]*[ \t]*")
    colon = rf"(?P<colon>{alternatives})[*_ \t]*:[*_]*[ \t]*"
    heading = (rf"^[ \t]*(?:\#{{1,6}}|\*\*|__)[ \t*_]*(?P<heading>{alternatives})[ \t*_]*:?[ \t*_]*$\n?")
    return re.compile(f"{heading}|{colon}", re.IGNORECASE | re.MULTILINE)


def _name_key(spelling: str) -> str:
    return re.sub(r"[^a-z]", "", spelling.lower())


def _decorated_start(text: str, start: int) -> int:
    """Include the header's decoration (``**``, ``### ``, ``2. ``) so it leaves the previous value."""
    line_start = text.rfind("\n", 0, start) + 1
    if _LINE_PREFIX.fullmatch(text, line_start, start):
        return line_start
    while start > line_start and text[start - 1] in _DECORATION:
        start -= 1
    return start


def _choose(headers: list[_Header], names: Sequence[str]) -> list[_Header]:
    """One header per entry (see :func:`parse_entries`)."""
    by_name = {name: [header for header in headers if header.name == name] for name in names}
    chain: list[_Header] = []
    limit = float("inf")
    for index in range(len(names) - 1, -1, -1):
        fitting = [header for header in by_name[names[index]] if header.end <= limit]
        if not fitting:
            break
        chain.append(fitting[0] if index == 0 else fitting[-1])
        limit = chain[-1].start
    else:
        return chain
    chosen = {name: found[0] for name, found in by_name.items() if found}
    if "Action Input" in chosen:
        chosen["Action Input"] = by_name["Action Input"][-1]
    if "Action" in chosen:
        before = [header for header in by_name["Action"]
                  if "Action Input" not in chosen or header.end <= chosen["Action Input"].start]
        chosen["Action"] = (before or by_name["Action"])[-1]
    return list(chosen.values())


def _missing_message(missing: list[str]) -> str:
    if missing == ["Action"]:
        return "the Action entry is missing or empty"
    if len(missing) == 1:
        return f"the entry {missing[0]} is missing"
    return f"the entries {', '.join(missing)} are missing"


# ---------------------------------------------------------------------------------- action

_NAME_TRIM = " \t" + _DECORATION + "\"'[]<>"


def action_named(value: str, actions: Mapping[str, Any]) -> str:
    """The action the Action entry names, or "" when it names none exactly.

    Forgiven: decoration (backticks, quotes, asterisks, brackets), a trailing period, a repeated
    ``Action:``, letter case and spacing. Nothing else: no partial or similar names.
    """
    by_key = {" ".join(name.split()).casefold(): name for name in actions}
    for line in value.splitlines():
        candidate = _undecorated(line)
        if candidate:
            if candidate in actions:
                return candidate
            return by_key.get(" ".join(candidate.split()).casefold(), "")
    return ""


def _undecorated(line: str) -> str:
    previous = None
    while line != previous:
        previous = line
        line = line.strip(_NAME_TRIM).rstrip(".,;:!").strip(_NAME_TRIM)
        line = re.sub(r"^action[*_ \t]*:", "", line, flags=re.IGNORECASE)
    return line


def _first_line(value: str) -> str:
    return next((line.strip() for line in value.splitlines() if line.strip()), "")


# ---------------------------------------------------------------------------------- action input

def _with_arguments(entries: dict[str, str], spec: ActionSpec) -> ParsedResponse:
    """The response with its Action Input read for ``spec``, or what is wrong with it."""
    names = [argument.name for argument in spec.arguments]
    try:
        value = parse_action_input(entries.get("Action Input", ""), names)
    except ResponseError as exc:
        return ParsedResponse(entries, spec.name, None, str(exc), ACTION_INPUT)
    unknown = [key for key in value if key not in names]
    if unknown:
        listed = ", ".join(f"'{key}'" for key in unknown)
        problem = (f"{spec.name} has no argument{'s' if len(unknown) > 1 else ''} {listed}"
                   f" (its arguments: {', '.join(names) or 'none'})")
        return ParsedResponse(entries, spec.name, None, problem, ACTION_INPUT)
    missing = [argument.name for argument in spec.arguments if argument.required and argument.name not in value]
    if missing:  # the original reads it as an input it cannot parse ("Argument mismatch"): nothing runs
        listed = ", ".join(f"'{key}'" for key in missing)
        problem = (f"{spec.name} needs the argument{'s' if len(missing) > 1 else ''} {listed}"
                   f" (its arguments: {', '.join(names)})")
        return ParsedResponse(entries, spec.name, None, problem, ACTION_INPUT)
    types = {argument.name: argument.type for argument in spec.arguments}
    arguments = {key: _joined(item) if types[key] == "string" else item for key, item in value.items()}
    return ParsedResponse(entries, spec.name, arguments, None, OK)


def _joined(value: Any) -> Any:
    """A list of strings where one string is expected: its lines."""
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return value
