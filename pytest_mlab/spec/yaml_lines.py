"""Load YAML while remembering the line of every value, so errors can say ``file:line``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_mlab.errors import SpecError

JsonPath = tuple  # tuple of str keys and int indices

# One loader instance, used only for its scalar constructors (int, float, bool, null, str).
_SCALARS = yaml.SafeLoader("")


@dataclass
class LineMap:
    """Maps a JSON path to (file, line) so merged documents keep pointing at the right file."""

    marks: dict[JsonPath, tuple[str, int]] = field(default_factory=dict)

    def locate(self, path: JsonPath, default_file: str) -> tuple[str, int | None]:
        """The line of ``path`` or of its nearest ancestor that has one."""
        probe = tuple(path)
        while True:
            if probe in self.marks:
                return self.marks[probe]
            if not probe:
                return default_file, None
            probe = probe[:-1]

    def merged_with(self, child: "LineMap") -> "LineMap":
        """Child marks win; used when a spec ``extends`` another."""
        return LineMap({**self.marks, **child.marks})


def load_yaml_with_lines(path: Path, display: str) -> tuple[Any, LineMap]:
    """Parse ``path``; return the plain data and the line of every key and item.

    Duplicate keys are an error (plain PyYAML silently keeps the last one).
    """
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise SpecError(display, line, "", f"not UTF-8 text (byte {raw[exc.start]:#x}); save the file as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        raise SpecError(display, *_syntax_error(exc, text)) from None
    except yaml.YAMLError as exc:
        raise SpecError(display, None, "", f"YAML error: {exc}") from None
    if node is None:
        raise SpecError(display, 1, "", "the file is empty; a spec starts with 'kind:' and 'name:'")
    lines = LineMap()
    data = _build(node, (), display, lines)
    return data, lines


def _syntax_error(exc: yaml.MarkedYAMLError, text: str) -> tuple[int | None, str, str]:
    """Line, where, message: PyYAML's problem, plus where the unfinished construct began."""
    last_line = text.count("\n") + (0 if text.endswith("\n") else 1)
    mark = exc.problem_mark or exc.context_mark
    line = min(mark.line + 1, max(last_line, 1)) if mark else None
    problem = exc.problem or "invalid YAML"
    if not exc.context:
        return line, "", f"YAML syntax error: {problem}"
    context_line = exc.context_mark.line + 1 if exc.context_mark else None
    where = f" on line {context_line}" if context_line and context_line != line else ""
    if problem.startswith("but "):  # PyYAML splits one sentence into context and problem
        return line, "", f"YAML syntax error: {exc.context}{where}, {problem}"
    return line, "", f"YAML syntax error: {problem} ({exc.context}{where})"


def _build(node: yaml.Node, path: JsonPath, display: str, lines: LineMap) -> Any:
    lines.marks[path] = (display, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise SpecError(display, key_node.start_mark.line + 1, _dotted(path),
                                "YAML merge keys ('<<') are not supported; use 'extends:' instead")
            key = _scalar(key_node, display)
            if not isinstance(key, str):
                key = str(key)
            if key in result:
                raise SpecError(display, key_node.start_mark.line + 1, _dotted(path + (key,)),
                                f"duplicate key '{key}' (first defined on line {lines.marks[path + (key,)][1]})")
            lines.marks[path + (key,)] = (display, key_node.start_mark.line + 1)
            result[key] = _build(value_node, path + (key,), display, lines)
            lines.marks[path + (key,)] = (display, key_node.start_mark.line + 1)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, path + (i,), display, lines) for i, item in enumerate(node.value)]
    return _scalar(node, display)


def _scalar(node: yaml.Node, display: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise SpecError(display, node.start_mark.line + 1, "", "a mapping or list cannot be used as a key")
    try:
        return _SCALARS.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError as exc:
        raise SpecError(display, node.start_mark.line + 1, "", f"cannot read value: {exc.problem}") from None


def _dotted(path: JsonPath) -> str:
    """``('metric', 'direction')`` -> ``metric.direction``; list items as ``tags[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


dotted = _dotted
