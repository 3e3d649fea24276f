"""Properties of the response parser over generated responses: it never names an action the
Action entry does not name, never returns a value the Action Input does not hold, reads any
arguments written as JSON exactly, and accepts every response the original accepted."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_mlab.agents.parsing import read_response
from tests.agents.support import PROFILES, actions_of, deliberately_different, original_reading

ACTIONS = actions_of("research")
ENTRY_SETS = [profile["entries"] for profile in PROFILES.values()]
KINDS = {"ok", "format", "unknown action", "action input"}

NEAR_NAMES = ["Edit Script", "Execute", "List File", "execute_script", "Final Answer Now", "Inspect Script",
              "Read", "Script", "Undo Edit", "Edit Script Segment", "Python", "Reflect", "Action", "Final"]
HEADERS = ["Thought:", "Action:", "Action Input:", "**Action:**", "### Action\n", "action:", "Action: Action:",
           "Reflection:", "Research Plan and Status:", "Fact Check:", "**Action Input**:", "1. Action:",
           "\n### Action Input\n", "action input:", "<think>", "</think>"]
FRAGMENTS = ["{", "}", '"', "'", "\\", ",", ":", "[", "]", '"script_name": ', '"dir_path": "."',
             '"final_answer": ', "```json\n", "```", "True", "null", "\n", " ", "//", "#", '"""', "\\n", "\\/", "/",
             '"content": "a\nb"', "3", "\r\n"]

messy_responses = st.lists(st.one_of(st.sampled_from(HEADERS), st.sampled_from(list(ACTIONS) + NEAR_NAMES),
                                     st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=30).map("".join)
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def squashed(text: str) -> str:
    return " ".join(text.split()).casefold()


def decoded(text: str) -> str:
    """``text`` with JSON's escapes (and ``\\'``) read, in one pass from the left."""
    escapes = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
    return re.sub(r"\\(?:u([0-9a-fA-F]{4})|([\"\\/bfnrt']))",
                  lambda match: chr(int(match.group(1), 16)) if match.group(1) else escapes[match.group(2)], text)


def held_in(value: Any, source: str) -> bool:
    """Every line of every string in ``value`` is in the Action Input (as written, or with its
    escapes read); numbers and literals are written there too."""
    if isinstance(value, str):
        return all(line.strip() in source or line.strip() in decoded(source) for line in value.split("\n"))
    if isinstance(value, list):
        return all(held_in(item, source) for item in value)
    if isinstance(value, dict):
        return all(held_in(key, source) and held_in(item, source) for key, item in value.items())
    if isinstance(value, bool) or value is None:
        return any(word in source for word in {True: ("true", "True"), False: ("false", "False"),
                                               None: ("null", "None")}[value])
    return any(float(number) == value for number in re.findall(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", source))


@PROPERTY_SETTINGS
@given(text=messy_responses, entries=st.sampled_from(ENTRY_SETS))
def test_the_action_is_named_in_the_action_entry_and_every_value_comes_from_the_input(text, entries):
    parsed = read_response(text, entries, ACTIONS)
    assert parsed.kind in KINDS
    if parsed.action:
        assert parsed.action in ACTIONS
        assert squashed(parsed.action) in squashed(parsed.entries["Action"])
    if parsed.kind == "ok":
        assert parsed.problem is None and parsed.arguments is not None
        assert set(parsed.arguments) <= {argument.name for argument in ACTIONS[parsed.action].arguments}
        assert held_in(parsed.arguments, parsed.entries["Action Input"]), parsed
    else:
        assert parsed.problem and parsed.arguments is None


@PROPERTY_SETTINGS
@given(text=messy_responses, entries=st.sampled_from(ENTRY_SETS))
def test_every_response_the_original_accepted_we_accept_with_the_same_action(text, entries):
    original = original_reading(text, entries, ACTIONS)
    if original is not None:
        parsed = read_response(text, entries, ACTIONS)
        assert parsed.kind in ("ok", "action input")
        assert parsed.action == original.action or deliberately_different(text, original, parsed)


@PROPERTY_SETTINGS
@given(text=st.text(max_size=300), entries=st.sampled_from(ENTRY_SETS))
def test_any_text_gets_an_answer_not_an_exception(text, entries):
    assert read_response(text, entries, ACTIONS).kind in KINDS


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@st.composite
def written_arguments(draw) -> tuple[str, dict[str, Any]]:
    """An action and arguments of the right types, then the Action Input as JSON written some way."""
    action = draw(st.sampled_from(sorted(ACTIONS)))
    arguments = {argument.name: draw(st.integers(-10**6, 10**6) if argument.type == "integer" else TEXT)
                 for argument in ACTIONS[action].arguments}
    for value in arguments.values():
        assume(not (isinstance(value, str) and re.search(r"action[\s_-]*input", value, re.IGNORECASE)))
    written = json.dumps(arguments, indent=draw(st.sampled_from([None, 2, 4, "\t"])),
                         ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        written = f"```json\n{written}\n```"
    return action, arguments, written


@PROPERTY_SETTINGS
@given(written=written_arguments(), entries=st.sampled_from(ENTRY_SETS),
       style=st.sampled_from(["{name}: {value}", "**{name}:** {value}", "### {name}\n{value}", "{lower}: {value}"]))
def test_arguments_written_as_json_are_read_exactly(written, entries, style):
    action, arguments, text_input = written
    values = {name: "thinking" for name in entries}
    values.update({"Action": action, "Action Input": text_input})
    text = "\n".join(style.format(name=name, lower=name.lower(), value=values[name]) for name in entries)
    parsed = read_response(text, entries, ACTIONS)
    assert (parsed.kind, parsed.action, parsed.arguments) == ("ok", action, arguments), parsed.problem
