"""File actions: list, read, write, append, copy, inspect lines, undo."""

from __future__ import annotations

from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox.paths import normalize_relpath

#: How far end_line_number may lie past start_line_number: 100, so up to 101 lines are shown, as in
#: the paper's environment (its description speaks of 100 lines).
MAX_INSPECT_SPAN = 100


def list_files(ctx: ActionContext, dir_path: str) -> str:
    entries = ctx.sandbox.list(dir_path)
    if not entries:
        return f"The directory '{normalize_relpath(dir_path)}' is empty."
    return "\n".join(entry.name + ("/" if entry.is_dir else "") for entry in entries)


def read_text(ctx: ActionContext, file_name: str) -> str:
    """A workspace file as text, with a clear error for binary files."""
    data = ctx.sandbox.read(file_name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EnvError(f"'{file_name}' is not a UTF-8 text file ({len(data)} bytes); "
                       "read it from a script with Execute Script instead") from None


def read_file(ctx: ActionContext, file_name: str) -> str:
    text = read_text(ctx, file_name)
    limit = ctx.limits.output_limit
    if len(text) > limit:
        return (text[:limit] + f"\n[... {len(text) - limit} more characters not shown; "
                f"use Inspect Script Lines to read a part ...]")
    return text


def write_file(ctx: ActionContext, file_name: str, content: str) -> str:
    relpath = ctx.writable(file_name)
    ctx.backup(relpath)
    ctx.sandbox.write(relpath, content.encode("utf-8"))
    return f"File {relpath} written successfully."


def append_file(ctx: ActionContext, file_name: str, content: str) -> str:
    relpath = ctx.writable(file_name)
    ctx.backup(relpath)
    ctx.sandbox.write(relpath, content.encode("utf-8"), append=True)
    return f"File {relpath} appended successfully."


def copy_file(ctx: ActionContext, source: str, destination: str) -> str:
    destination_rel = ctx.writable(destination)
    if not ctx.sandbox.exists(source):
        raise EnvError(f"cannot copy '{source}': no such file in the workspace")
    ctx.backup(destination_rel)
    ctx.sandbox.copy(source, destination_rel)
    return f"File {normalize_relpath(source)} copied to {destination_rel}."


def undo_edit_script(ctx: ActionContext, script_name: str) -> str:
    relpath = ctx.writable(script_name)
    history = ctx.backups.get(relpath)
    if not history:
        raise EnvError(f"there is no change to undo for '{relpath}'")
    previous = history.pop()
    if previous is None:
        raise EnvError(f"'{relpath}' did not exist before its last change; there is no earlier content to restore "
                       "(write it anew instead)")
    ctx.sandbox.write(relpath, previous)
    return f"Content of {relpath} after undoing the most recent edit:\n{previous.decode('utf-8', 'replace')}"


def inspect_script_lines(ctx: ActionContext, script_name: str, start_line_number: int, end_line_number: int) -> str:
    lines = read_text(ctx, script_name).splitlines()
    total = len(lines)
    if start_line_number < 1 or end_line_number < start_line_number:
        raise EnvError(f"line numbers must satisfy 1 <= start_line_number <= end_line_number; "
                       f"got {start_line_number} to {end_line_number} ({script_name} has {total} lines)")
    if end_line_number - start_line_number > MAX_INSPECT_SPAN:
        raise EnvError(f"the number of lines shown at once is limited to {MAX_INSPECT_SPAN}; "
                       f"ask for {start_line_number} to {start_line_number + MAX_INSPECT_SPAN}")
    if start_line_number > total:
        raise EnvError(f"{script_name} has only {total} lines")
    shown = "\n".join(lines[start_line_number - 1:end_line_number])
    return f"Here are the lines (the file ends at line {total}):\n\n{shown}"
