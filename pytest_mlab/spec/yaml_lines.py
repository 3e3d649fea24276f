"""Load YAML while remembering the line of every value, so errors can say ``file:line``.

Files are composed by libyaml when PyYAML has it (about 15 times faster), else by PyYAML's pure
Python parser. The two disagree on a few inputs, so libyaml only reads text where they agree, and
any text libyaml rejects is read again by the pure Python parser: messages and lines are PyYAML's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_mlab.errors import SpecError

JsonPath = tuple  # tuple of str keys and int indices

# One loader instance, used only for its scalar constructors (int, float, bool, null, str).
_SCALARS = yaml.SafeLoader("")
# The constructors of the tags nearly every scalar has, called directly: construct_object would
# call the same ones after some bookkeeping. A string is its node's value.
_STR = "tag:yaml.org,2002:str"
_CORE = {tag: _SCALARS.yaml_constructors[tag] for tag in
         ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")}
FAST_LOADER = getattr(yaml, "CSafeLoader", None)  # None where PyYAML was built without libyaml
# Where libyaml reads differently from PyYAML: tabs, the line breaks NEL, LS and PS, a byte order
# mark after the start, and '?' or '!' inside flow collections (checked in fast_loader_agrees).
_DIFFERENT = ("\t", "\x85", "\u2028", "\u2029")
# libyaml composes nested collections by recursion in C and crashes the process (a C stack
# overflow) somewhere past 10,000 levels, where PyYAML raises RecursionError. Each level needs one
# of ":-[{?", so counting them bounds the depth.
_MAX_FAST_DEPTH = 5000
# A number with an exponent but no dot (1e10, -2E-3): a float in YAML 1.2 and to any reader of a
# spec, a string to YAML 1.1, which PyYAML implements.
_EXPONENT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


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
    node = _compose(text, display)
    if node is None:
        raise SpecError(display, 1, "", "the file is empty; a spec starts with 'kind:' and 'name:'")
    lines = LineMap()
    try:
        data = _build(node, (), display, lines)
    finally:
        _SCALARS.constructed_objects.clear()  # the loader would keep every node of every file alive
    return data, lines


def _compose(text: str, display: str) -> yaml.Node | None:
    """The node tree of ``text``, with marks; libyaml where it reads ``text`` as PyYAML would."""
    if fast_loader_agrees(text):
        try:
            return yaml.compose(text, Loader=FAST_LOADER)
        except yaml.YAMLError:
            pass  # PyYAML's own message, below
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        raise SpecError(display, *_syntax_error(exc, text)) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow; PyYAML gives its offset only
        before = text[:exc.position]
        column = exc.position - before.rfind("\n")
        raise SpecError(display, before.count("\n") + 1, "",
                        f"YAML syntax error: unacceptable character #x{exc.character:04x} in column {column}: "
                        f"YAML does not allow it (a control or special character); remove it") from None
    except yaml.YAMLError as exc:
        raise SpecError(display, None, "", f"YAML error: {exc}") from None


def fast_loader_agrees(text: str) -> bool:
    """True when libyaml is there and composes ``text`` into the same nodes and lines as PyYAML."""
    if FAST_LOADER is None or any(char in text for char in _DIFFERENT) or text.find("\ufeff", 1) >= 0:
        return False
    if ("?" in text or "!" in text) and ("[" in text or "{" in text):
        return False
    depth = sum(text.count(char) for char in ":-[{?")
    return depth <= _MAX_FAST_DEPTH


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
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node, display)
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
    return [_build(item, path + (i,), display, lines) for i, item in enumerate(node.value)]  # a SequenceNode


def _scalar(node: yaml.Node, display: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise SpecError(display, node.start_mark.line + 1, "", "a mapping or list cannot be used as a key")
    if node.tag == _STR:
        if not node.style and _EXPONENT.fullmatch(node.value):  # plain: None, or "" from libyaml
            return float(node.value)  # YAML 1.2 reads 1e10 as a number; PyYAML's YAML 1.1 as a string
        return node.value
    construct = _CORE.get(node.tag)
    try:
        if construct is not None:
            return construct(_SCALARS, node)
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
