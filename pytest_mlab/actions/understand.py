"""Understand File, and the block-wise reading of long text it shares with the agents.

A long text does not fit one prompt of the fast model, so it is cut into blocks of at most
10,000 characters, each block is described on its own, and several descriptions are merged by
one more call. Understand File cuts at line boundaries (so a description can cite lines); the
agents' observation summaries may cut every 10,000 characters (``split_chars``) and bring their
own prompts to ``read_in_blocks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Sequence

from pytest_mlab.actions.files import read_text
from pytest_mlab.actions.model import require_llm
from pytest_mlab.env.context import ActionContext

BLOCK_CHARS = 10_000


@dataclass(frozen=True)
class Block:
    """A piece of a longer text, with where it lies in it, so a prompt can say which part it shows."""

    text: str
    start: int  # offset of its first character in the whole text, from 0
    first_line: int  # line numbers from 1
    last_line: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


BlockPrompt = Callable[[Block], str]
MergePrompt = Callable[[Sequence[Block], list[str]], str]


def split_lines(text: str, size: int = BLOCK_CHARS) -> list[Block]:
    """Blocks of whole lines, at most ``size`` characters each; a line longer than ``size`` is
    cut into ``size``-character pieces."""
    blocks: list[Block] = []
    current: list[tuple[int, str]] = []
    length = start = offset = 0
    for number, piece in _pieces(text, size):
        if current and length + len(piece) > size:
            blocks.append(_block(current, start))
            current, length = [], 0
        if not current:
            start = offset
        current.append((number, piece))
        length += len(piece)
        offset += len(piece)
    if current:
        blocks.append(_block(current, start))
    return blocks


def split_chars(text: str, size: int = BLOCK_CHARS) -> list[Block]:
    """Blocks of exactly ``size`` characters (the last one shorter), wherever lines break."""
    blocks = []
    for start in range(0, len(text), size):
        piece = text[start:start + size]
        first_line = text.count("\n", 0, start) + 1
        blocks.append(Block(piece, start, first_line, first_line + piece.count("\n", 0, len(piece) - 1)))
    return blocks


def read_in_blocks(llm: Any, blocks: Sequence[Block], block_prompt: BlockPrompt, merge_prompt: MergePrompt, *,
                   purpose: str) -> str:
    """Ask the fast model about each block; with several blocks, ask it once more to merge the
    answers. ``blocks`` must not be empty."""
    llm = require_llm(llm)
    answers = [llm.complete(block_prompt(block), role="fast",
                            purpose=f"{purpose}: lines {block.first_line}-{block.last_line}") for block in blocks]
    if len(answers) == 1:
        return answers[0]
    return llm.complete(merge_prompt(blocks, answers), role="fast", purpose=f"{purpose}: merge")


def understand_file(ctx: ActionContext, file_name: str, things_to_look_for: str) -> str:
    text = read_text(ctx, file_name)
    ctx.record("Read File", {"file_name": file_name}, text)
    if not text:
        require_llm(ctx.llm)
        return "The file is empty."
    return read_in_blocks(ctx.llm, split_lines(text), partial(_segment_prompt, things_to_look_for),
                          partial(_file_merge_prompt, things_to_look_for), purpose="understand file")


def _pieces(text: str, size: int) -> Iterator[tuple[int, str]]:
    """``(line_number, piece)``: every line with its line break, a line longer than ``size`` in pieces."""
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if number < len(lines):
            line += "\n"
        for at in range(0, len(line), size):
            yield number, line[at:at + size]


def _block(pieces: list[tuple[int, str]], start: int) -> Block:
    return Block("".join(piece for _, piece in pieces), start, pieces[0][0], pieces[-1][0])


def _segment_prompt(things_to_look_for: str, block: Block) -> str:
    return f"""\
Here is part of a file, from line {block.first_line} (character {block.start + 1}) to line {block.last_line} \
(character {block.end}):
```
{block.text}
```
What to look for and what to return: {things_to_look_for}
Keep the description short, and cite the lines of the file that matter for what is looked for. State only \
what the content above objectively confirms, and do not guess any numbers. For any part of the request that this \
part of the file does not answer, say "In this part, I cannot find ...".
"""


def _file_merge_prompt(things_to_look_for: str, blocks: Sequence[Block], answers: list[str]) -> str:
    segments = "\n\n".join(f"Segment {number}:\n{answer}" for number, answer in enumerate(answers, start=1))
    return f"""\
A file was read in segments, and each segment was described on its own. Combine the descriptions below into \
one cohesive description of the whole file for this request (what to look for and what to return): \
{things_to_look_for}

{segments}
"""
