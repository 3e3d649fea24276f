"""The JSON Schemas shipped in ``pytest_mlab/schemas`` and the validation that speaks ``file:line``."""

from __future__ import annotations

import difflib
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.yaml_lines import JsonPath, LineMap, dotted

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
KINDS = ("Task", "Action", "Agent")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
Problem = tuple[tuple[JsonPath, ...], SpecError]  # an error, and the paths later checks must not read

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
    _raise_all(schema_problems(kind, data, lines, display), lines, display)


def schema_problems(kind: str, data: dict[str, Any], lines: LineMap, display: str) -> list[Problem]:
    """What the schema of ``kind`` rejects in ``data``, after every number that is not finite (JSON
    has no such numbers, and a score, threshold or limit cannot be one): each with the paths it
    makes unusable for later checks."""
    found = [((path,), problem) for path, problem in _non_finite(data, (), lines, display)]
    if known_valid(kind, data):
        return found
    return found + _problems(validator(kind).iter_errors(data), lines, display, ())


def validate_with(schema: dict[str, Any], data: Any, lines: LineMap, display: str, *, at: tuple = ()) -> None:
    """Check ``data``, found at ``at`` in the spec, against a schema that is not one of the shipped
    ones (an agent class's options schema); errors are reported like the shipped schemas' errors."""
    if data == {} and not schema.get("required"):
        return  # nothing to check, and no reason to import jsonschema
    import jsonschema

    _raise_all(_problems(jsonschema.Draft7Validator(schema).iter_errors(data), lines, display, at), lines, display)


def _raise_all(found: list[Problem], lines: LineMap, display: str) -> None:
    problems = Problems(display, lines)
    problems.reject_all(found)
    problems.raise_any()


def _problems(errors: Iterable[jsonschema.ValidationError], lines: LineMap, display: str, at: tuple) -> list[Problem]:
    """One problem per error, except that an object's missing keys are one problem naming them all."""
    found = []
    missing_reported = set()
    for error in errors:
        path = at + tuple(error.absolute_path)
        if error.validator == "required":
            if path in missing_reported:
                continue
            missing_reported.add(path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            for key in _extra(error):
                file, line = lines.locate(path + (key,), display)
                found.append(((path + (key,),), SpecError(file, line, dotted(path + (key,)), _unknown(key, allowed))))
            continue
        file, line = lines.locate(path, display)
        file, line, where = _pinpoint(error, path, lines, file, line)
        found.append((_rejects(error, path), SpecError(file, line, where, _message(error))))
    return found


def _rejects(error: jsonschema.ValidationError, path: JsonPath) -> tuple[JsonPath, ...]:
    """The paths an error makes unusable: a missing or unknown key is only that key, not its parent."""
    if error.validator == "required" and isinstance(error.instance, dict):
        return tuple(path + (key,) for key in _missing(error))
    if "propertyNames" in error.schema_path:
        return (path + (error.instance,),)
    return (path,)


def _non_finite(value: Any, path: JsonPath, lines: LineMap, display: str) -> Iterator[tuple[JsonPath, SpecError]]:
    if isinstance(value, float) and not math.isfinite(value):
        file, line = lines.locate(path, display)
        yield path, SpecError(file, line, dotted(path), f"{value} is not a finite number; write a real number")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, path + (key,), lines, display)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, path + (index,), lines, display)


def _missing(error: jsonschema.ValidationError) -> list[str]:
    return [key for key in error.validator_value if key not in error.instance]


def _extra(error: jsonschema.ValidationError) -> list[str]:
    allowed = set(error.schema.get("properties", {}))
    return [key for key in error.instance if key not in allowed]


def _pinpoint(error: jsonschema.ValidationError, path: tuple, lines: LineMap, file: str, line: int | None):
    """A badly named key is reported at its own line, not at its parent's."""
    if "propertyNames" in error.schema_path and isinstance(error.instance, str):
        if (path + (error.instance,)) in lines.marks:
            file, line = lines.marks[path + (error.instance,)]
            return file, line, dotted(path + (error.instance,))
    return file, line, dotted(path)


def _unknown(key: str, allowed: list[str]) -> str:
    guess = difflib.get_close_matches(key, allowed, n=1)
    hint = f"; did you mean '{guess[0]}'?" if guess else f"; allowed keys: {', '.join(allowed)}"
    return f"unknown key '{key}'{hint}"


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = _missing(error)
        if missing:
            keys = ", ".join(f"'{key}'" for key in missing)
            return f"missing required key{'s' if len(missing) > 1 else ''} {keys}"
    if error.validator == "oneOf" and "description" in error.schema:
        return f"{error.instance!r} is not valid: expected {error.schema['description']}"
    if error.validator == "pattern" and "description" in error.schema:
        return f"{error.instance!r} is not valid: expected {error.schema['description']}"
    if error.validator in _BOUNDS and "description" in error.schema:
        return f"{error.message} ({error.schema['description']})"
    if error.validator == "const":
        return f"{error.instance!r} should be {error.validator_value!r}"
    if "propertyNames" in error.schema_path:
        return f"{error.instance!r} is not an allowed name here: use lower-case letters, digits and '-'"
    if error.instance is None and error.validator in ("type", "minLength"):
        return f"is empty; expected {_expected(error)}"
    if _number_for_text(error):
        key = error.absolute_path[-1] if error.absolute_path and isinstance(error.absolute_path[-1], str) else None
        example = f" ({key}: \"...\")" if key else ""
        return (f"{error.message}: YAML reads a value written as digits as a number; put it in quotes{example} "
                f"so that it stays text, digit for digit")
    return error.message


def _number_for_text(error: jsonschema.ValidationError) -> bool:
    """Text was expected and YAML read a number: an all-digit checksum or id written without quotes."""
    expected = error.validator_value if error.validator == "type" else None
    wants_text = expected == "string" or (isinstance(expected, list) and "string" in expected)
    return wants_text and isinstance(error.instance, (int, float)) and not isinstance(error.instance, bool)


def _expected(error: jsonschema.ValidationError) -> str:
    expected = error.validator_value if error.validator == "type" else "a value"
    if isinstance(expected, list):
        return " or ".join(f"a {item}" for item in expected)
    return {"object": "a mapping of keys", "array": "a list"}.get(expected, f"a {expected}")
