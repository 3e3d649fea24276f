"""The JSON Schemas shipped in ``pytest_mlab/schemas`` and the validation that speaks ``file:line``."""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.yaml_lines import LineMap, dotted

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
KINDS = ("Task", "Action", "Agent")


def schema_path(kind: str) -> Path:
    return SCHEMA_DIR / f"{kind.lower()}.schema.json"


@lru_cache(maxsize=None)
def validator(kind: str) -> jsonschema.Draft7Validator:
    schema = json.loads(schema_path(kind).read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


def validate(kind: str, data: dict[str, Any], lines: LineMap, display: str) -> None:
    """Raise one SpecError listing every schema violation, sorted by line."""
    problems = []
    for error in validator(kind).iter_errors(data):
        path = tuple(error.absolute_path)
        file, line = lines.locate(path, display)
        file, line, where = _pinpoint(error, path, lines, file, line)
        problems.append(SpecError(file, line, where, _message(error)))
    if problems:
        problems.sort(key=lambda p: (p.path != display, p.line or 0))
        raise SpecError(problems[0].path, problems[0].line, problems[0].where, problems[0].message, problems[1:])


def _pinpoint(error: jsonschema.ValidationError, path: tuple, lines: LineMap, file: str, line: int | None):
    """An unexpected or badly named key is reported at its own line, not at its parent's."""
    if "propertyNames" in error.schema_path and isinstance(error.instance, str):
        if (path + (error.instance,)) in lines.marks:
            file, line = lines.marks[path + (error.instance,)]
            return file, line, dotted(path + (error.instance,))
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [key for key in error.instance if key not in allowed]
        if extra and (path + (extra[0],)) in lines.marks:
            file, line = lines.marks[path + (extra[0],)]
            return file, line, dotted(path + (extra[0],))
    return file, line, dotted(path)


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = [key for key in error.instance if key not in allowed]
        if extra:
            guess = difflib.get_close_matches(extra[0], allowed, n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else f"; allowed keys: {', '.join(allowed)}"
            return f"unknown key '{extra[0]}'{hint}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [key for key in error.validator_value if key not in error.instance]
        if missing:
            return f"missing required key '{missing[0]}'"
    if error.validator == "oneOf" and "description" in error.schema:
        return f"{error.instance!r} is not valid: expected {error.schema['description']}"
    if error.validator == "pattern" and "description" in error.schema:
        return f"{error.instance!r} is not valid: expected {error.schema['description']}"
    if error.validator == "const":
        return f"{error.instance!r} should be {error.validator_value!r}"
    if "propertyNames" in error.schema_path:
        return f"{error.instance!r} is not an allowed name here: use lower-case letters, digits and '-'"
    if error.instance is None and error.validator in ("type", "minLength"):
        return f"is empty; expected {_expected(error)}"
    return error.message


def _expected(error: jsonschema.ValidationError) -> str:
    expected = error.validator_value if error.validator == "type" else "a value"
    if isinstance(expected, list):
        return " or ".join(f"a {item}" for item in expected)
    return {"object": "a mapping of keys", "array": "a list"}.get(expected, f"a {expected}")
