"""Understand File, and the block-wise reading of long text it shares with the agents.

A long file does not fit one prompt of a fast model, so it is cut into ~10,000-character blocks
at line boundaries, each block is described on its own, and the descriptions are merged.
"""

from __future__ import annotations

from typing import Any

from pytest_mlab.actions.files import read_text
from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError

BLOCK_CHARS = 10_000


def split_blocks(text: str, size: int = BLOCK_CHARS) -> list[tuple[int, int, str]]:
    """``(first_line, last_line, text)`` blocks of at most ``size`` characters (a longer single
    line is cut), so each description can name the lines it covers."""
    blocks: list[tuple[int, int, str]] = []
    current: list[str] = []
    first = 1
    length = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        while len(line) > size:  # one enormous line (minified data): cut it
            if current:
                blocks.append((first, number - 1, "".join(current)))
                current, length = [], 0
            blocks.append((number, number, line[:size]))
            line = line[size:]
            first = number
        if current and length + len(line) > size:
            blocks.append((first, number - 1, "".join(current)))
            current, length, first = [], 0, number
        if not current:
            first = number
        current.append(line)
        length += len(line)
    if current:
        blocks.append((first, first + len(current) - 1, "".join(current)))
    return blocks


def describe_blocks(llm: Any, text: str, request: str, *, what: str, purpose: str) -> str:
    """Ask the fast model about each block of ``text``, then merge the answers into one."""
    if llm is None:
        raise EnvError("this action needs an LLM, and this run has none (use an LLM-driven agent)")
    blocks = split_blocks(text)
    if not blocks:
        return f"{what} is empty."
    answers = []
    for first, last, block in blocks:
        answers.append(llm.complete(_block_prompt(what, first, last, block, request), role="fast",
                                    purpose=f"{purpose}: lines {first}-{last}"))
    if len(answers) == 1:
        return answers[0]
    parts = "\n\n".join(f"Lines {first}-{last}:\n{answer}" for (first, last, _), answer in zip(blocks, answers))
    return llm.complete(_merge_prompt(what, request, parts), role="fast", purpose=f"{purpose}: merge")


def understand_file(ctx: ActionContext, file_name: str, things_to_look_for: str) -> str:
    text = read_text(ctx, file_name)
    ctx.record("Read File", {"file_name": file_name}, text)
    return describe_blocks(ctx.llm, text, things_to_look_for, what=f"the file {file_name}", purpose="understand file")


def _block_prompt(what: str, first: int, last: int, block: str, request: str) -> str:
    return f"""\
Below are lines {first} to {last} of {what}.
```
{block}
```
Describe what these lines contain about the following, citing line numbers for what you state.
If these lines contain nothing about it, say so in one sentence; do not guess at other parts.
What to look for: {request}
"""


def _merge_prompt(what: str, request: str, parts: str) -> str:
    return f"""\
{what} was read in parts, and each part was described separately:

{parts}

Merge these descriptions into one coherent description of the whole of {what}, covering:
{request}
Keep the line numbers and concrete details; leave out statements that a part found nothing.
"""
