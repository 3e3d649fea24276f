"""Understand File: one call for a short file, block by block plus a merge for a long one."""

from __future__ import annotations

from pytest_mlab.actions.understand import BLOCK_CHARS, split_blocks
from tests.agents.fakes import FakeLLM, environment

ACTIONS = ("Understand File",)


def understand(env, name="notes.txt"):
    return env.step("Understand File", {"file_name": name, "things_to_look_for": "the metric"})


def test_short_file_is_described_in_one_fast_call(tmp_path):
    llm = FakeLLM([("fast", "The metric is MAE (line 2).")])
    env = environment(tmp_path, ACTIONS, llm, files={"notes.txt": "intro\nmetric: MAE\n"})
    assert understand(env) == "The metric is MAE (line 2)."
    assert "lines 1 to 2" in llm.calls[0].prompt and "metric: MAE" in llm.calls[0].prompt
    assert "the metric" in llm.calls[0].prompt


def test_long_file_is_described_block_by_block_then_merged(tmp_path):
    line = "x" * 99 + "\n"
    text = line * (BLOCK_CHARS // 100 * 2 + 5)  # a bit over two blocks
    llm = FakeLLM([("fast", "part one"), ("fast", "part two"), ("fast", "part three"), ("fast", "merged answer")])
    env = environment(tmp_path, ACTIONS, llm, files={"notes.txt": text})
    assert understand(env) == "merged answer"
    assert [call.purpose for call in llm.calls] == ["understand file: lines 1-100", "understand file: lines 101-200",
                                                    "understand file: lines 201-205", "understand file: merge"]
    assert all(len(call.prompt) < BLOCK_CHARS + 1000 for call in llm.calls[:3])
    merge = llm.calls[3].prompt
    assert "Lines 1-100:\npart one" in merge and "Lines 201-205:\npart three" in merge


def test_missing_file_is_an_env_error_without_llm_calls(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm)
    assert understand(env, "nope.txt").startswith("EnvError: cannot read 'nope.txt': no such file")
    assert llm.calls == []


def test_split_blocks_cuts_an_enormous_line_and_keeps_everything():
    text = "a\n" + "b" * (2 * BLOCK_CHARS + 10) + "\nc\n"
    blocks = split_blocks(text)
    assert "".join(block for _, _, block in blocks) == text
    assert all(len(block) <= BLOCK_CHARS for _, _, block in blocks)
