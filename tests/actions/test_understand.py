"""Understand File: one call for a short file, block by block plus a merge for a long one; and the
block splitting and loop the agents reuse with their own prompts."""

from __future__ import annotations

from pytest_mlab.actions.understand import BLOCK_CHARS, Block, read_in_blocks, split_chars, split_lines
from tests.agents.fakes import FakeLLM, environment

ACTIONS = ("Understand File",)


def understand(env, name="notes.txt"):
    return env.step("Understand File", {"file_name": name, "things_to_look_for": "the metric"})


def test_short_file_is_described_in_one_fast_call(tmp_path):
    llm = FakeLLM([("fast", "The metric is MAE (line 2).")])
    env = environment(tmp_path, ACTIONS, llm, files={"notes.txt": "intro\nmetric: MAE\n"})
    assert understand(env) == "The metric is MAE (line 2)."
    prompt = llm.calls[0].prompt
    assert "from line 1 (character 1) to line 2 (character 18)" in prompt
    assert "intro\nmetric: MAE\n" in prompt and "the metric" in prompt


def test_block_prompt_asks_for_a_short_confirmed_answer_citing_lines(tmp_path):
    llm = FakeLLM([("fast", "ok")])
    env = environment(tmp_path, ACTIONS, llm, files={"notes.txt": "metric: MAE\n"})
    understand(env)
    prompt = llm.calls[0].prompt
    for asked in ("short", "cite the lines", "objectively confirms", "do not guess any numbers", "I cannot find"):
        assert asked in prompt, asked
    assert "notes.txt" not in prompt  # the paper's prompt does not name the file


def test_long_file_is_described_block_by_block_then_merged(tmp_path):
    line = "x" * 99 + "\n"
    text = line * (BLOCK_CHARS // 100 * 2 + 5)  # a bit over two blocks
    llm = FakeLLM([("fast", "part one"), ("fast", "part two"), ("fast", "part three"), ("fast", "merged answer")])
    env = environment(tmp_path, ACTIONS, llm, files={"notes.txt": text})
    assert understand(env) == "merged answer"
    assert [call.purpose for call in llm.calls] == ["understand file: lines 1-100", "understand file: lines 101-200",
                                                    "understand file: lines 201-205", "understand file: merge"]
    assert "from line 101 (character 10001) to line 200 (character 20000)" in llm.calls[1].prompt
    assert all(len(call.prompt) < BLOCK_CHARS + 1000 for call in llm.calls[:3])
    merge = llm.calls[3].prompt
    assert "Segment 1:\npart one\n\nSegment 2:\npart two\n\nSegment 3:\npart three" in merge
    assert "cohesive description of the whole file" in merge and "the metric" in merge
    assert "x" * 99 not in merge  # the merge sees the descriptions, not the file


def test_missing_file_is_an_env_error_without_llm_calls(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm)
    assert understand(env, "nope.txt").startswith("EnvError: cannot read 'nope.txt': no such file")
    assert llm.calls == []


def test_empty_file_needs_no_llm_call(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm, files={"notes.txt": ""})
    assert understand(env) == "The file is empty."
    assert llm.calls == []


def test_split_lines_cuts_an_enormous_line_and_keeps_everything():
    text = "a\n" + "b" * (2 * BLOCK_CHARS + 10) + "\nc\n"
    blocks = split_lines(text)
    assert "".join(block.text for block in blocks) == text
    assert all(len(block.text) <= BLOCK_CHARS for block in blocks)
    assert [(block.first_line, block.last_line) for block in blocks] == [(1, 1), (2, 2), (2, 2), (2, 3)]
    assert all(text[block.start:block.end] == block.text for block in blocks)


def test_split_lines_keeps_lines_whole():
    text = "".join(f"{n:04d}" + "-" * 995 + "\n" for n in range(25))  # 1,000-character lines
    blocks = split_lines(text)
    assert [len(block.text) for block in blocks] == [10_000, 10_000, 5_000]
    assert [(block.first_line, block.last_line) for block in blocks] == [(1, 10), (11, 20), (21, 25)]


def test_split_chars_cuts_every_size_characters():
    text = ("z" * 333 + "\n") * 100  # 33,400 characters on 100 lines
    blocks = split_chars(text)
    assert [len(block.text) for block in blocks] == [10_000, 10_000, 10_000, 3_400]
    assert [block.start for block in blocks] == [0, 10_000, 20_000, 30_000]
    assert (blocks[0].first_line, blocks[0].last_line) == (1, 30)
    assert (blocks[-1].first_line, blocks[-1].last_line) == (90, 100)
    assert "".join(block.text for block in blocks) == text


def test_read_in_blocks_uses_the_callers_prompts():
    llm = FakeLLM([("fast", "A"), ("fast", "B"), ("fast", "AB")])
    blocks = split_chars("0123456789" * 3, size=15)

    def block_prompt(block: Block) -> str:
        return f"chars {block.start + 1}-{block.end}: {block.text}"

    def merge_prompt(blocks, answers) -> str:
        return f"merge {len(blocks)}: " + "|".join(answers)

    assert read_in_blocks(llm, blocks, block_prompt, merge_prompt, purpose="summarise observation") == "AB"
    assert [call.prompt for call in llm.calls] == ["chars 1-15: 012345678901234", "chars 16-30: 567890123456789",
                                                   "merge 2: A|B"]
    assert llm.roles() == ["fast", "fast", "fast"]


def test_read_in_blocks_returns_a_single_answer_without_merging():
    llm = FakeLLM([("fast", "only")])
    assert read_in_blocks(llm, split_chars("short"), lambda b: b.text, lambda b, a: "never", purpose="p") == "only"
    assert len(llm.calls) == 1
