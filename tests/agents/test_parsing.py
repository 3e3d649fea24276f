"""Response parsing: entries, then the Action Input from strict JSON down to key-by-key."""

from __future__ import annotations

import pytest

from pytest_mlab.agents.parsing import ResponseError, cut_at_stop, missing_entries, parse_action_input, parse_entries

NAMES = ["Reflection", "Research Plan and Status", "Fact Check", "Thought", "Action", "Action Input"]
EDIT_ARGS = ["script_name", "edit_instruction", "save_name"]


def test_entries_in_order_with_multiline_values():
    text = ("Reflection: the script ran.\nIt printed 0.5.\nResearch Plan and Status: 1. baseline **0.5**\n"
            "Fact Check: confirmed\nThought: edit it\nAction: Edit Script (AI)\nAction Input: {\n  \"a\": 1\n}\n")
    entries = parse_entries(text, NAMES)
    assert entries["Reflection"] == "the script ran.\nIt printed 0.5."
    assert entries["Action"] == "Edit Script (AI)"
    assert entries["Action Input"] == '{\n  "a": 1\n}'
    assert missing_entries(entries, NAMES) == []


def test_decorated_headers_and_missing_entries():
    entries = parse_entries("**Thought**: hmm\n### Action: List Files\n", NAMES)
    assert entries == {"Thought": "hmm", "Action": "List Files"}
    assert missing_entries(entries, ["Thought", "Action", "Action Input"]) == ["Action Input"]


def test_text_after_the_stop_sequence_is_dropped():
    assert cut_at_stop("Action: X\nObservation: invented") == "Action: X\n"


def test_strict_json():
    assert parse_action_input('{"dir_path": "."}', ["dir_path"]) == {"dir_path": "."}


def test_code_fenced_json():
    assert parse_action_input('```json\n{"dir_path": "data"}\n```', ["dir_path"]) == {"dir_path": "data"}


def test_raw_newlines_and_backslashes_inside_strings():
    text = '{"script_name": "train.py", "edit_instruction": "replace\n the loop; keep \\d regex", "save_name": "t.py"}'
    value = parse_action_input(text, EDIT_ARGS)
    assert value["edit_instruction"] == "replace\n the loop; keep \\d regex"


def test_chatter_around_the_object():
    assert parse_action_input('Here it is: {"dir_path": "."} hope it helps', ["dir_path"]) == {"dir_path": "."}


def test_key_by_key_fallback_keeps_unescaped_quotes():
    text = '{"script_name": "a.py", "edit_instruction": "print("hi") at the end", "save_name": "a.py"}'
    assert parse_action_input(text, EDIT_ARGS) == {"script_name": "a.py", "edit_instruction": 'print("hi") at the end',
                                                   "save_name": "a.py"}


def test_key_by_key_numbers_stay_strings_for_the_environment_to_convert():
    text = "{script_name: a.py, start_line_number: 3, end_line_number: 9,}"
    assert parse_action_input(text, ["script_name", "start_line_number", "end_line_number"]) == {
        "script_name": "a.py", "start_line_number": "3", "end_line_number": "9"}


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("[1, 2]", "must be a JSON object"),
    ("{this is not json", "not valid JSON"),
])
def test_unusable_inputs_say_why(text, message):
    with pytest.raises(ResponseError, match=message):
        parse_action_input(text, ["dir_path"])


def test_empty_input_is_fine_for_an_action_without_arguments():
    assert parse_action_input("", []) == {}
