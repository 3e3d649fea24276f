"""Reading an LLM agent's Action Input: as JSON, then as JSON the way models write it (Python
literals, single or triple quotes, raw newlines, trailing commas, comments), then key by key using
the action's argument names; it never guesses a value. Its own module because this lenient reader
is most of the parser's code, and the rest of the response (entries, the action) is read apart.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from pytest_mlab.errors import MlabError


class ResponseError(MlabError):
    """The response cannot be used; the message tells the model what to fix."""


def parse_action_input(text: str, argument_names: Sequence[str]) -> dict[str, Any]:
    """The Action Input as a dict, as leniently as it can be read without guessing values.

    Keys are not checked against ``argument_names``; those only guide the key-by-key reading.
    """
    raw = text.strip()
    if not raw:
        if not argument_names:
            return {}
        raise ResponseError("the Action Input is empty")
    start = raw.find("{")
    try:
        whole = json.loads(raw)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, str) and whole.lstrip().startswith("{"):
        try:
            whole = json.loads(whole)  # the object sent as a JSON string
        except json.JSONDecodeError:
            pass
    if isinstance(whole, dict):
        return whole
    if start < 0:
        got = f", got {_json_type(whole)}" if whole is not None else ""
        raise ResponseError(f"the Action Input must be a JSON object{got}")
    for reader in (_strict_object, _loose_object, lambda text, at: _key_by_key(text[at:], argument_names)):
        value = reader(raw, start)
        if value is not None:
            return value
    raise ResponseError(f"the Action Input is not valid JSON ({_json_error(raw[start:])})")


def _json_error(text: str) -> str:
    """Where strict JSON reading fails, for the model to find its mistake."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return "unexpected text"  # pragma: no cover - text strict reading accepts never gets here


def _json_type(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _strict_object(text: str, start: int) -> dict[str, Any] | None:
    """The first JSON object, ignoring what follows it (a closing fence, a remark)."""
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(text, start)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _loose_object(text: str, start: int) -> dict[str, Any] | None:
    try:
        return _LooseReader(text, start).top()
    except (_Unreadable, RecursionError):
        return None


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}


def _unescape(text: str) -> str:
    """JSON's escapes (and ``\\'``) decoded; any other backslash is kept, as in ``\\d``."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            escape, width = _escape_at(text, index)
            out.append(escape)
            index += width
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _escape_at(text: str, index: int) -> tuple[str, int]:
    """The character a backslash at ``index`` stands for, and how many characters it takes."""
    following = text[index + 1]
    if following in _ESCAPES:
        return _ESCAPES[following], 2
    digits = text[index + 2:index + 6]
    if following == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", digits):
        return chr(int(digits, 16)), 6
    return "\\" + following, 2


class _Unreadable(Exception):
    pass


class _LooseReader:
    """One object as models write it: JSON, Python literals, single or triple quotes, bare keys,
    raw newlines, trailing commas and comments. A quote closes a string only where the object
    can go on after it, so unescaped quotes inside code survive."""

    _NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    _WORD = re.compile(r"[A-Za-z_][\w-]*")
    _LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
    _AFTER_KEY = re.compile(r"[ \t]*:")
    _AFTER_VALUE = re.compile(r"\s*(?:[,}\]#]|//|\Z)|[ \t]*\n\s*[\"']")

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.pos = start
        self.depth = 0

    def top(self) -> dict[str, Any]:
        return self._object()

    def _object(self) -> dict[str, Any]:
        self.pos += 1
        self.depth += 1
        result: dict[str, Any] = {}
        while True:
            self._skip()
            if self._at_end():
                if self.depth == 1 and result:
                    return result  # only the final brace is missing
                raise _Unreadable
            if self.text[self.pos] == "}":
                self.pos += 1
                self.depth -= 1
                return result
            key = self._key()
            self._skip()
            self._expect(":")
            result[key] = self._value()
            self._separator("}")

    def _array(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while True:
            self._skip()
            if self._at_end():
                raise _Unreadable
            if self.text[self.pos] == "]":
                self.pos += 1
                return items
            items.append(self._value())
            self._separator("]")

    def _separator(self, closing: str) -> None:
        self._skip()
        if not self._at_end() and self.text[self.pos] == ",":
            self.pos += 1
        elif not self._at_end() and self.text[self.pos] not in closing + "\"'":
            raise _Unreadable

    def _key(self) -> str:
        char = self.text[self.pos]
        if char in "\"'":
            return self._string(key=True)
        word = self._WORD.match(self.text, self.pos)
        if not word:
            raise _Unreadable
        self.pos = word.end()
        return word.group()

    def _value(self) -> Any:
        self._skip()
        if self._at_end():
            raise _Unreadable
        char = self.text[self.pos]
        if char == "{":
            if self.depth > 20:
                raise _Unreadable
            return self._object()
        if char == "[":
            return self._array()
        if char in "\"'":
            return self._string(key=False)
        for pattern in (self._NUMBER, self._WORD):
            match = pattern.match(self.text, self.pos)
            if match and self._ends_value(match.end()):
                self.pos = match.end()
                token = match.group()
                if pattern is self._NUMBER:
                    return int(token) if re.fullmatch(r"-?\d+", token) else float(token)
                if token in self._LITERALS:
                    return self._LITERALS[token]
        raise _Unreadable

    def _string(self, key: bool) -> str:
        quote = self.text[self.pos]
        delimiter = quote * 3 if self.text.startswith(quote * 3, self.pos) else quote
        index = self.pos + len(delimiter)
        out: list[str] = []
        while index < len(self.text):
            if self.text[index] == "\\" and index + 1 < len(self.text):
                escape, width = _escape_at(self.text, index)
                out.append(escape)
                index += width
                continue
            if self.text.startswith(delimiter, index):
                after = index + len(delimiter)
                if self._ends_key(after) if key else self._ends_value(after):
                    self.pos = after
                    return "".join(out)
            out.append(self.text[index])
            index += 1
        raise _Unreadable

    def _ends_key(self, index: int) -> bool:
        return self._AFTER_KEY.match(self.text, index) is not None

    def _ends_value(self, index: int) -> bool:
        """After a value: a separator, a closing bracket, the end, a comment, or (a comma
        forgotten at the end of a line) the next key's quote on a new line."""
        return self._AFTER_VALUE.match(self.text, index) is not None

    def _skip(self) -> None:
        """Whitespace and comments."""
        while not self._at_end():
            char = self.text[self.pos]
            if char.isspace():
                self.pos += 1
            elif char == "#" or self.text.startswith("//", self.pos):
                newline = self.text.find("\n", self.pos)
                self.pos = len(self.text) if newline < 0 else newline + 1
            else:
                return

    def _expect(self, char: str) -> None:
        if self._at_end() or self.text[self.pos] != char:
            raise _Unreadable
        self.pos += 1

    def _at_end(self) -> bool:
        return self.pos >= len(self.text)


def _key_by_key(text: str, argument_names: Sequence[str]) -> dict[str, Any] | None:
    """Read ``"name": value`` for the action's own argument names, in the order they appear.

    A value runs to the next key (or the closing brace), so unescaped quotes inside code
    survive. A quoted key that is no argument is kept, so that it is reported, not swallowed.
    Unquoted values stay strings; the Environment converts them to the declared types.
    """
    body = text[1:] if text.startswith("{") else text
    closing = body.rfind("}")
    body = body[:closing] if closing >= 0 else body
    names = "|".join(re.escape(name) for name in sorted(argument_names, key=len, reverse=True)) or r"(?!)"
    key = re.compile(rf"(?:^|(?<=[,\n]))[ \t\n]*(?:(?P<q>[\"']?)(?P<known>{names})(?P=q)|\"(?P<other>\w+)\")[ \t]*:")
    keys: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    for match in key.finditer(body):
        name = match.group("known") or match.group("other")
        if name not in seen:
            seen.add(name)
            keys.append((match.start(), match.end(), name))
    if not any(name in argument_names for _, _, name in keys):
        return None
    values: dict[str, Any] = {}
    for index, (_, value_start, name) in enumerate(keys):
        value_end = keys[index + 1][0] if index + 1 < len(keys) else len(body)
        value = _unquoted(body[value_start:value_end].strip().rstrip(",").strip())
        if value is None:
            return None
        values[name] = value
    return values


def _unquoted(value: str) -> str | None:
    """The text inside the quotes; None when a quote opens but does not close the value, since
    what follows it is then not known to be part of it."""
    for quote in ('"""', "'''", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return _unescape(value[len(quote):-len(quote)])
    return None if value[:1] in "\"'" else value
