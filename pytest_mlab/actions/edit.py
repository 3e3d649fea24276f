"""Edit Script (AI) and Edit Script Segment (AI): an edit LLM rewrites code on the agent's behalf.

The result is saved through Write File's own path (read-only check, backup for Undo Edit
Script), and the observation is the unified diff, so the agent checks what actually changed.
"""

from __future__ import annotations

import difflib
import re

from pytest_mlab.actions.files import read_text, write_file
from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)


def extract_code(completion: str) -> str | None:
    """The code in the completion's fenced block (the longest, preferring ```python); None if
    there is no fence. An unclosed fence at the end (the model hit its token limit) still counts."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(completion)]
    if not blocks:
        return None
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    return max(python or [body for _, body in blocks], key=len)


def edit_script(ctx: ActionContext, script_name: str, edit_instruction: str, save_name: str) -> str:
    ctx.writable(save_name)  # fail before paying for the edit
    old = _current(ctx, script_name)
    prompt = _edit_prompt(script_name, old, edit_instruction)
    new = _ask_for_code(ctx, prompt, "edit script")
    return _save(ctx, script_name, save_name, old, new)


def edit_script_segment(ctx: ActionContext, script_name: str, start_line_number: int, end_line_number: int,
                        edit_instruction: str, save_name: str) -> str:
    ctx.writable(save_name)
    old = read_text(ctx, script_name)
    lines = old.splitlines(keepends=True)
    if not 1 <= start_line_number <= end_line_number <= len(lines):
        raise EnvError(f"lines {start_line_number} to {end_line_number} are not in {script_name}, which has "
                       f"{len(lines)} lines; choose 1 <= start_line_number <= end_line_number <= {len(lines)}")
    segment = "".join(lines[start_line_number - 1:end_line_number])
    prompt = _segment_prompt(script_name, start_line_number, end_line_number, segment, edit_instruction)
    new_segment = _ask_for_code(ctx, prompt, "edit script segment")
    if new_segment and not new_segment.endswith("\n"):
        new_segment += "\n"
    new = "".join(lines[:start_line_number - 1]) + new_segment + "".join(lines[end_line_number:])
    return _save(ctx, script_name, save_name, old, new)


def _current(ctx: ActionContext, script_name: str) -> str:
    """The script's text; a script that does not exist yet starts empty (the edit creates it)."""
    if not ctx.sandbox.exists(script_name):
        return ""
    text = read_text(ctx, script_name)
    ctx.record("Read File", {"file_name": script_name}, text)
    return text


def _ask_for_code(ctx: ActionContext, prompt: str, purpose: str) -> str:
    if ctx.llm is None:
        raise EnvError("this action needs an LLM, and this run has none (use an LLM-driven agent)")
    completion = ctx.llm.complete(prompt, role="edit", purpose=purpose)
    code = extract_code(completion)
    if code is None:
        raise EnvError("the edit model answered without a ```python code block, so nothing was changed. "
                       f"Its answer began: {completion.strip()[:300]!r}. Try again with a clearer, smaller "
                       "edit instruction.")
    return code if code.endswith("\n") or not code else code + "\n"


def _save(ctx: ActionContext, script_name: str, save_name: str, old: str, new: str) -> str:
    confirmation = write_file(ctx, save_name, new)
    ctx.record("Write File", {"file_name": save_name, "content": new}, confirmation)
    diff = "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=script_name, tofile=save_name))
    if not diff:
        return f"The edited file is saved to {save_name}, but the edit changed nothing compared with {script_name}."
    return (f"The edited file is saved to {save_name}. Here is the diff; check that the edit is correct and "
            f"what you wanted, and undo it with Undo Edit Script if it is not:\n\n{diff}")


def _edit_prompt(script_name: str, old: str, instruction: str) -> str:
    shown = old if old else "(the file does not exist yet; write it from scratch)"
    return f"""\
Here is the Python script {script_name}:
```python
{shown}
```
Change it as follows, and change nothing else:
{instruction}

Answer with the complete new script in a single ```python code block, from its first line to its
last, with no parts left out or abbreviated.
"""


def _segment_prompt(script_name: str, first: int, last: int, segment: str, instruction: str) -> str:
    return f"""\
Here are lines {first} to {last} of the Python script {script_name}:
```python
{segment}
```
Change these lines as follows, and change nothing else:
{instruction}

Answer with the complete replacement for exactly these lines in a single ```python code block. It
will be put back in place of lines {first} to {last}, so keep the indentation they have.
"""
