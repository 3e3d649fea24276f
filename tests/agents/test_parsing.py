"""Response parsing: entries, the action, then the Action Input from strict JSON down to key-by-key.

Realistic whole responses are in test_parsing_corpus.py; properties over generated ones in
test_parsing_properties.py. These pin down the rules one at a time.
"""

from __future__ import annotations

import pytest

from pytest_mlab.agents.parsing import (ResponseError, action_named, cut_at_stop, missing_entries, parse_action_input,
                                        parse_entries, read_response)
from pytest_mlab.spec.models import ActionSpec, ArgumentSpec

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


def test_an_empty_object_followed_by_a_remark_is_an_empty_object():
    assert parse_action_input("{} (no arguments needed)", []) == {}


def test_a_missing_final_brace_is_forgiven_but_an_unfinished_string_is_not():
    assert parse_action_input('{"dir_path": "data"', ["dir_path"]) == {"dir_path": "data"}
    with pytest.raises(ResponseError, match="not valid JSON"):
        parse_action_input('{"final_answer": "The score is', ["final_answer"])


def test_key_by_key_refuses_a_value_whose_quote_never_closes():
    with pytest.raises(ResponseError):
        parse_action_input('{"file_name": "a.py", "content": "x = 1", oops}', ["file_name", "content"])


# ------------------------------------------------------------------ read_response

def spec(name: str, *, optional: bool = False, **types: str) -> ActionSpec:
    arguments = tuple(ArgumentSpec(argument, kind, "", required=not optional) for argument, kind in types.items())
    return ActionSpec(name, "", arguments, "", "tests:none", "test")


ACTIONS = {action.name: action for action in (
    spec("List Files", dir_path="string"),
    spec("Edit Script (AI)", script_name="string", edit_instruction="string", save_name="string"),
    spec("Edit Script Segment (AI)", script_name="string", start_line_number="integer", end_line_number="integer",
         edit_instruction="string", save_name="string"),
    spec("Train", optional=True, epochs="integer", rate="number", shuffle="boolean", notes="string", layers="integer"),
    spec("Final Answer", final_answer="string"),
)}
REACT = ["Thought", "Action", "Action Input"]
RESEARCH = ["Reflection", "Research Plan and Status", "Fact Check", "Thought", "Action", "Action Input"]


def read(action: str, action_input: str, required=REACT, **entries: str):
    values = {"Reflection": "r", "Research Plan and Status": "p", "Fact Check": "f", "Thought": "t", **entries,
              "Action": action, "Action Input": action_input}
    return read_response("\n".join(f"{name}: {values[name]}" for name in required), required, ACTIONS)


def test_a_usable_response_has_kind_ok_and_no_problem():
    parsed = read("List Files", '{"dir_path": "."}')
    assert (parsed.kind, parsed.action, parsed.arguments, parsed.problem) == ("ok", "List Files", {"dir_path": "."}, None)
    assert parsed.entries == {"Thought": "t", "Action": "List Files", "Action Input": '{"dir_path": "."}'}


def test_python_literals_and_numbers_are_read_as_written():
    parsed = read("Train", "{'epochs': 3, 'rate': 1e-3, 'shuffle': True, 'notes': None, 'layers': '4'}")
    assert parsed.arguments == {"epochs": 3, "rate": 0.001, "shuffle": True, "notes": None, "layers": "4"}


def test_a_list_becomes_its_lines_only_where_a_string_is_expected():
    parsed = read("Train", '{"notes": ["a", "b"], "layers": [1, 2]}')
    assert parsed.arguments == {"notes": "a\nb", "layers": [1, 2]}  # the Environment rejects the list
    assert read("Train", '{"notes": ["only"]}').arguments == {"notes": "only"}


def test_a_missing_required_argument_is_an_action_input_problem_as_in_the_original():
    """The original reads keys that are not exactly the action's arguments as an input it cannot
    parse (agents/agent.py, "Argument mismatch"): nothing runs. Optional arguments may be left out."""
    parsed = read("Edit Script (AI)", '{"script_name": "train.py", "edit_instruction": "add a layer"}')
    assert (parsed.kind, parsed.arguments) == ("action input", None)
    assert parsed.problem == ("Edit Script (AI) needs the argument 'save_name' "
                              "(its arguments: script_name, edit_instruction, save_name)")
    parsed = read("Edit Script (AI)", '{"script_name": "train.py"}')
    assert parsed.problem.startswith("Edit Script (AI) needs the arguments 'edit_instruction', 'save_name' (")
    assert read("Train", '{"epochs": 3}').arguments == {"epochs": 3}  # the others have defaults


@pytest.mark.parametrize("action_input, message", [
    ('{"dir_path": ".", "recursive": true}', "List Files has no argument 'recursive' (its arguments: dir_path)"),
    ('{"path": ".", "depth": 1}', "List Files has no arguments 'path', 'depth'"),
    ("", "the Action Input is empty"),
    ("the current folder", "the Action Input must be a JSON object"),
    ('["."]', "must be a JSON object, got a list"),
    ("{dir_path = .}", "the Action Input is not valid JSON"),
])
def test_an_unreadable_input_is_an_action_input_problem_naming_what_is_wrong(action_input, message):
    parsed = read("List Files", action_input)
    assert (parsed.kind, parsed.action, parsed.arguments) == ("action input", "List Files", None)
    assert message in parsed.problem


def test_an_empty_entry_is_fine_but_a_missing_one_is_a_format_problem():
    assert read("List Files", '{"dir_path": "."}', RESEARCH, **{"Fact Check": "", "Reflection": ""}).kind == "ok"
    parsed = read_response('Thought: t\nAction Input: {"dir_path": "."}', REACT, ACTIONS)
    assert (parsed.kind, parsed.problem) == ("format", "the Action entry is missing or empty")
    parsed = read_response('Action: List Files\nAction Input: {"dir_path": "."}', RESEARCH, ACTIONS)
    assert parsed.kind == "format" and parsed.action == "List Files"
    assert parsed.problem == "the entries Reflection, Research Plan and Status, Fact Check, Thought are missing"


def test_an_empty_action_is_a_format_problem():
    parsed = read("", '{"dir_path": "."}')
    assert (parsed.kind, parsed.action, parsed.problem) == ("format", "", "the Action entry is missing or empty")


def test_an_unknown_action_is_asked_again_with_its_name():
    parsed = read("Delete Everything", "{}")
    assert (parsed.kind, parsed.action, parsed.arguments) == ("unknown action", "", None)
    assert parsed.problem == "'Delete Everything' is not one of the tools"


@pytest.mark.parametrize("written", ["List Files", "`List Files`", "**List Files**", '"List Files"', "'List Files'",
                                     "List Files.", "[List Files]", "<List Files>", "list files", "LIST  FILES",
                                     "Action: List Files", "**Action:** `List Files`", "\n\nList Files\n",
                                     "List Files\n(to see the data)"])
def test_decoration_around_the_action_name_is_forgiven(written):
    assert action_named(written, ACTIONS) == "List Files"


@pytest.mark.parametrize("written", ["List File", "List Files now", "ListFiles", "List_Files", "Edit Script",
                                     "Edit Script Segment", "Use List Files", "List Files, then Final Answer", ""])
def test_only_an_action_named_exactly_is_taken(written):
    assert action_named(written, ACTIONS) == ""


def test_of_two_actions_sharing_words_the_one_named_is_taken():
    assert action_named("Edit Script Segment (AI)", ACTIONS) == "Edit Script Segment (AI)"
    assert action_named("Edit Script (AI)", ACTIONS) == "Edit Script (AI)"


def test_headers_are_read_as_the_original_read_them():
    """The first entry from its first header; each later one from the last header that leaves room
    for the rest, so an ``Action:`` in the thinking does not count."""
    text = ("Thought: I will take the Action: List Files later.\nThought: no\nAction: Final Answer\n"
            'Action Input: {"final_answer": "done"}')
    parsed = read_response(text, REACT, ACTIONS)
    assert parsed.entries["Thought"] == "I will take the Action: List Files later.\nThought: no"
    assert (parsed.action, parsed.arguments) == ("Final Answer", {"final_answer": "done"})


def test_entries_out_of_order_are_still_read():
    parsed = read_response('Action: List Files\nThought: t\nAction Input: {"dir_path": "."}', REACT, ACTIONS)
    assert (parsed.kind, parsed.entries["Thought"], parsed.arguments) == ("ok", "t", {"dir_path": "."})


def test_escaped_slashes_stay_slashes_where_the_input_needs_repair():
    parsed = read("Edit Script (AI)", '{"script_name": "models\\/net.py", "edit_instruction": "a\nb", '
                                      '"save_name": "out\\/net.py"}')
    assert parsed.arguments == {"script_name": "models/net.py", "edit_instruction": "a\nb", "save_name": "out/net.py"}


def test_a_think_block_leading_the_response_is_not_read_for_entries():
    text = ('<think>Reflection: draft\nAction: List Files\nAction Input: {"dir_path": "."}</think>\n'
            'Thought: t\n### Action\nFinal Answer\n### Action Input\n{"final_answer": "done"}')
    assert read_response(text, REACT, ACTIONS).action == "Final Answer"


def test_windows_newlines_do_not_reach_the_values():
    parsed = read_response('Thought: t\r\nAction: Final Answer\r\nAction Input: {"final_answer": "a\r\nb"}',
                           REACT, ACTIONS)
    assert parsed.arguments == {"final_answer": "a\nb"} and parsed.entries["Thought"] == "t"


def test_headers_spelled_exactly_are_read_before_lenient_ones():
    """A lowercase 'action:' in prose would be a header to the lenient reading; the original's
    reading comes first, so it does not displace the real Action."""
    text = 'Thought: t\nAction: List Files\nNote that this action: is cheap.\nAction Input: {"dir_path": "."}'
    assert read_response(text, REACT, ACTIONS).action == "List Files"
