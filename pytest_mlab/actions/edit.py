"""Edit Script (AI) and Edit Script Segment (AI): an edit LLM rewrites code on the agent's behalf.

The result is saved through Write File's own path (read-only check, backup for Undo Edit
Script), and the observation is the unified diff, so the agent checks what actually changed.
"""

from __future__ import annotations

import difflib
import re

from pytest_mlab.actions.files import read_text, write_file
from pytest_mlab.actions.model import require_llm
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
    new = _ask_for_code(ctx, _prompt("a Python script", "the script", old, edit_instruction), "edit script")
    return _save(ctx, script_name, save_name, old, new)


def edit_script_segment(ctx: ActionContext, script_name: str, start_line_number: int, end_line_number: int,
                        edit_instruction: str, save_name: str) -> str:
    ctx.writable(save_name)
    old = _current(ctx, script_name)
    lines = old.splitlines(keepends=True)
    if not 1 <= start_line_number <= end_line_number:
        raise EnvError(f"line numbers must satisfy 1 <= start_line_number <= end_line_number; "
                       f"got {start_line_number} to {end_line_number}")
    if start_line_number > len(lines) + 1:  # an end past the last line just means "to the end"
        raise EnvError(f"line {start_line_number} is past the end of {script_name}, which has {len(lines)} lines")
    segment = "".join(lines[start_line_number - 1:end_line_number])
    prompt = _prompt("a segment of a Python script", "this segment", segment, edit_instruction)
    new_segment = _ask_for_code(ctx, prompt, "edit script segment")
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
    completion = require_llm(ctx.llm).complete(prompt, role="edit", purpose=purpose)
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
            f"what you wanted:\n\n{diff}")


def _prompt(shown: str, edited: str, code: str, instruction: str) -> str:
    """The paper's edit request: the code, the instruction, and the whole code back with nothing
    else changed, opening with ```python (which ``extract_code`` looks for)."""
    return f"""\
Here is {shown}:
```python
{code}
```
Edit {edited} according to this instruction:
{instruction}
Give the complete code after the edit, changing nothing else. Begin the code with ```python.
"""
