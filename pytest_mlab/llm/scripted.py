"""``scripted:FILE``: answers from a YAML list, in order; for tests, demos and CI without a key.

Entries are plain strings (they answer a call of any role) or mappings ``{role: fast, text: ...}``
(they answer only a call of that role). ``scripted:DIR`` uses ``DIR/<task>.yaml`` for each task;
tasks without a file are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mlab.llm.base import ROLES, LLMError
from pytest_mlab.llm.base import Completion
from pytest_mlab.llm.provider import Request, offline_completion

PREFIX = "scripted:"


@dataclass(frozen=True)
class Entry:
    text: str
    role: str | None  # None: answers any role
    line: int


def script_file(target: str, task: str) -> Path:
    """The file a ``scripted:`` target means for ``task``: the target itself, or ``DIR/<task>.yaml``."""
    path = Path(target).expanduser()
    if path.is_dir():
        for suffix in (".yaml", ".yml"):
            if (path / f"{task}{suffix}").is_file():
                return path / f"{task}{suffix}"
        return path / f"{task}.yaml"
    return path


def unavailable(target: str, task: str) -> str | None:
    """Why ``scripted:TARGET`` cannot drive ``task`` (a skip reason), or None."""
    path = Path(target).expanduser()
    if path.is_dir():
        if not script_file(target, task).is_file():
            return f"no scripted responses for task '{task}' in {path}/ (add {task}.yaml there to run it)"
        return None
    if not path.is_file():
        return f"--llm={PREFIX}{target}: no such file or folder"
    return None


def load_script(path: Path) -> list[Entry]:
    """Parse and check a script file; every problem names the file and line."""
    from pytest_mlab.errors import SpecError
    from pytest_mlab.spec.yaml_lines import load_yaml_with_lines

    try:
        empty = not path.read_text(encoding="utf-8", errors="replace").strip()
        data, lines = (None, None) if empty else load_yaml_with_lines(path, str(path))
    except (SpecError, OSError) as exc:
        raise LLMError(f"scripted responses: {exc}") from None
    if not isinstance(data, list) or not data:
        raise LLMError(f"{path}: a scripted-responses file must be a non-empty YAML list of responses "
                       f"(plain strings, or mappings like {{role: fast, text: ...}})")
    entries = []
    for index, item in enumerate(data):
        line = lines.locate((index,), str(path))[1] or 0
        where = f"{path}:{line}" if line else f"{path}: entry {index + 1}"
        if isinstance(item, (str, int, float)) and not isinstance(item, bool):  # `- 100` means the text "100"
            entries.append(Entry(str(item), None, line))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or set(item) - {"role", "text"}:
            raise LLMError(f"{where}: each response must be a string or a mapping with 'text' (a string) "
                           f"and optionally 'role' ({', '.join(ROLES)})")
        role = item.get("role")
        if role is not None and role not in ROLES:
            raise LLMError(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
        entries.append(Entry(item["text"], role, line))
    return entries


class ScriptedProvider:
    """Hands out the file's responses in order; one instance is shared by every role that names it."""

    cacheable = False
    billed = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries = load_script(path)
        self.calls = 0

    def answer(self, request: Request, errors: list[dict[str, Any]]) -> Completion:
        self.calls += 1
        if self.calls > len(self.entries):
            raise LLMError(f"{self.path}: ran out of scripted responses: call {self.calls} "
                           f"({request.role}, {request.purpose or 'no purpose given'}) asked for a response, "
                           f"but the file has only {len(self.entries)}; add more responses to the file")
        entry = self.entries[self.calls - 1]
        if entry.role is not None and entry.role != request.role:
            raise LLMError(f"{self.path}:{entry.line}: response {self.calls} is for role '{entry.role}', but call "
                           f"{self.calls} came from role '{request.role}' ({request.purpose or 'no purpose given'}); "
                           f"the script and the agent disagree about the order of calls")
        return offline_completion(request, entry.text)
