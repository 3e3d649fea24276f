"""Edit Script (AI) and Edit Script Segment (AI) through a real Environment and local sandbox."""

from __future__ import annotations

from pytest_mlab.actions.edit import extract_code
from pytest_mlab.env import ReadOnlyRules
from pytest_mlab.trace import read_trace
from tests.agents.fakes import FakeLLM, environment

ACTIONS = ("Edit Script (AI)", "Edit Script Segment (AI)", "Undo Edit Script", "Read File")
SCRIPT = "a = 1\nb = 2\nc = 3\nprint(a + b + c)\n"


def edit(env, **arguments):
    return env.step("Edit Script (AI)", {"script_name": "train.py", "save_name": "train.py",
                                         "edit_instruction": "change b", **arguments})


def test_edit_writes_the_code_and_shows_the_diff(tmp_path):
    llm = FakeLLM([("edit", "Sure:\n```python\na = 1\nb = 20\nc = 3\nprint(a + b + c)\n```\nDone.")])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT})
    observation = edit(env)
    assert (tmp_path / "ws/train.py").read_text() == "a = 1\nb = 20\nc = 3\nprint(a + b + c)\n"
    assert observation.startswith("The edited file is saved to train.py. Here is the diff; check that the edit is "
                                  "correct and what you wanted:\n\n")
    assert "-b = 2\n+b = 20" in observation
    assert "change b" in llm.calls[0].prompt and SCRIPT in llm.calls[0].prompt


def test_edit_prompt_holds_the_code_the_instruction_and_the_request_only(tmp_path):
    llm = FakeLLM([("edit", "```python\nb = 20\n```")])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT})
    edit(env)
    assert llm.calls[0].prompt == f"""\
Here is a Python script:
```python
{SCRIPT}
```
Edit the script according to this instruction:
change b
Give the complete code after the edit, changing nothing else. Begin the code with ```python.
"""


def test_edit_records_low_level_steps_and_undo_restores(tmp_path):
    llm = FakeLLM([("edit", "```python\nbroken(\n```")])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT})
    edit(env, save_name="train.py")
    records = read_trace(tmp_path / "trace.jsonl")
    assert [sub["action"] for sub in records[-1]["low_level"]] == ["Read File", "Write File"]
    observation = env.step("Undo Edit Script", {"script_name": "train.py"})
    assert SCRIPT in observation and (tmp_path / "ws/train.py").read_text() == SCRIPT


def test_edit_llm_without_code_is_a_clear_env_error_and_changes_nothing(tmp_path):
    env = environment(tmp_path, ACTIONS, FakeLLM([("edit", "I would rather not.")]), files={"train.py": SCRIPT})
    observation = edit(env)
    assert observation.startswith("EnvError: the edit model answered without a ```python code block")
    assert "I would rather not." in observation
    assert (tmp_path / "ws/train.py").read_text() == SCRIPT


def test_edit_of_a_new_file_creates_it(tmp_path):
    llm = FakeLLM([("edit", "```python\nprint('new')\n```")])
    env = environment(tmp_path, ACTIONS, llm)
    observation = edit(env, script_name="new.py", save_name="new.py")
    assert (tmp_path / "ws/new.py").read_text() == "print('new')\n"
    assert "+print('new')" in observation
    assert "```python\n\n```" in llm.calls[0].prompt  # an empty script, and no note about it


def test_segment_edit_of_a_new_file_creates_it(tmp_path):
    llm = FakeLLM([("edit", "```python\nprint('new')\n```")])
    env = environment(tmp_path, ACTIONS, llm)
    env.step("Edit Script Segment (AI)", {"script_name": "new.py", "start_line_number": 1, "end_line_number": 10,
                                          "edit_instruction": "write it", "save_name": "new.py"})
    assert (tmp_path / "ws/new.py").read_text() == "print('new')\n"


def test_edit_cannot_save_over_read_only_data_and_asks_no_llm(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT, "train.csv": "x\n1\n"},
                      read_only=ReadOnlyRules(frozenset({"train.csv"})))
    observation = edit(env, save_name="./train.csv")
    assert observation.startswith("EnvError: './train.csv' is read-only")
    assert llm.calls == [] and (tmp_path / "ws/train.csv").read_text() == "x\n1\n"


def test_edit_without_an_llm_says_so(tmp_path):
    env = environment(tmp_path, ACTIONS, None, files={"train.py": SCRIPT})
    assert "needs an LLM" in edit(env)


def test_segment_edit_replaces_only_the_range(tmp_path):
    llm = FakeLLM([("edit", "```python\nb = 200\nc = 300\n```")])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT})
    observation = env.step("Edit Script Segment (AI)", {"script_name": "train.py", "start_line_number": 2,
                                                        "end_line_number": 3, "edit_instruction": "scale",
                                                        "save_name": "out.py"})
    assert (tmp_path / "ws/out.py").read_text() == "a = 1\nb = 200\nc = 300\nprint(a + b + c)\n"
    assert (tmp_path / "ws/train.py").read_text() == SCRIPT
    assert "+b = 200" in observation
    assert llm.calls[0].prompt == """\
Here is a segment of a Python script:
```python
b = 2
c = 3

```
Edit this segment according to this instruction:
scale
Give the complete code after the edit, changing nothing else. Begin the code with ```python.
"""


def test_segment_ending_past_the_last_line_runs_to_the_end(tmp_path):
    llm = FakeLLM([("edit", "```python\nprint(0)\n```")])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT})
    env.step("Edit Script Segment (AI)", {"script_name": "train.py", "start_line_number": 3, "end_line_number": 9,
                                          "edit_instruction": "x", "save_name": "train.py"})
    assert "c = 3\nprint(a + b + c)\n" in llm.calls[0].prompt
    assert (tmp_path / "ws/train.py").read_text() == "a = 1\nb = 2\nprint(0)\n"


def test_segment_out_of_range_is_an_env_error_before_any_llm_call(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm, files={"train.py": SCRIPT})

    def segment(first, last):
        return env.step("Edit Script Segment (AI)", {"script_name": "train.py", "start_line_number": first,
                                                     "end_line_number": last, "edit_instruction": "x",
                                                     "save_name": "train.py"})

    assert segment(6, 9) == "EnvError: line 6 is past the end of train.py, which has 4 lines"
    assert segment(3, 2) == ("EnvError: line numbers must satisfy 1 <= start_line_number <= end_line_number; "
                             "got 3 to 2")
    assert llm.calls == []


def test_extract_code_prefers_python_blocks_and_accepts_an_unclosed_one():
    assert extract_code("```\nnotes\n```\n```python\ncode = 1\n```") == "code = 1"
    assert extract_code("```python\ncut = 'off by the token limit'") == "cut = 'off by the token limit'"
    assert extract_code("no code here") is None
