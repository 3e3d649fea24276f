"""The JSON Schemas shipped in ``pytest_mlab/schemas`` and the validation that speaks ``file:line``."""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.yaml_lines import LineMap, dotted

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
KINDS = ("Task", "Action", "Agent")

# fastjsonschema, where it is installed, compiles a schema into Python code that checks a spec
# about 20 times faster than jsonschema. It is only trusted to say "valid": a spec it rejects (or
# cannot check) is validated again by jsonschema, whose errors are what users read. Compiling the
# Task schema (about 25 ms) costs less than importing jsonschema (about 45 ms), which sessions
# whose specs are all valid then never do.

if TYPE_CHECKING:
    import jsonschema


def schema_path(kind: str) -> Path:
    return SCHEMA_DIR / f"{kind.lower()}.schema.json"


def load_schema(kind: str) -> dict[str, Any]:
    return json.loads(schema_path(kind).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def validator(kind: str) -> jsonschema.Draft7Validator:
    import jsonschema  # about 45 ms: paid only when a spec needs it (see fast_check)

    return jsonschema.Draft7Validator(load_schema(kind))


@lru_cache(maxsize=None)
def fast_check(kind: str) -> Callable[[Any], Any] | None:
    """The compiled schema, or None where fastjsonschema is missing or cannot compile it."""
    try:
        import fastjsonschema

        return fastjsonschema.compile(load_schema(kind), use_default=False)  # never fill in data
    except Exception:  # noqa: BLE001 - any failure only means the slower path
        return None


def known_valid(kind: str, data: dict[str, Any]) -> bool:
    """True when the fast check passes ``data``; False means "ask jsonschema", not "invalid"."""
    check = fast_check(kind)
    if check is None:
        return False
    try:
        check(data)
    except Exception:  # noqa: BLE001 - a rejection, or data it cannot check: jsonschema decides
        return False
    return True


def validate(kind: str, data: dict[str, Any], lines: LineMap, display: str) -> None:
    """Raise one SpecError listing every schema violation, sorted by line."""
    if known_valid(kind, data):
        return
    _raise_problems(validator(kind).iter_errors(data), lines, display, ())


def validate_with(schema: dict[str, Any], data: Any, lines: LineMap, display: str, *, at: tuple = ()) -> None:
    """Check ``data``, found at ``at`` in the spec, against a schema that is not one of the shipped
    ones (an agent class's options schema); errors are reported like the shipped schemas' errors."""
    if data == {} and not schema.get("required"):
        return  # nothing to check, and no reason to import jsonschema
    import jsonschema

    _raise_problems(jsonschema.Draft7Validator(schema).iter_errors(data), lines, display, at)


def _raise_problems(errors: Iterable[jsonschema.ValidationError], lines: LineMap, display: str, at: tuple) -> None:
    problems = []
    for error in errors:
        path = at + tuple(error.absolute_path)
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
