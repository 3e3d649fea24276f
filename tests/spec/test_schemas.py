"""The compiled schema check that spares jsonschema for valid specs: it may only ever say "valid"
where jsonschema says so too."""

from __future__ import annotations

import copy
import random
from collections import Counter

import pytest

from pytest_mlab.spec import schemas
from pytest_mlab.spec.yaml_lines import LineMap, load_yaml_with_lines
from tests.helpers import REPO

REAL_SPECS = sorted([*(REPO / "specs").rglob("*.yaml"), *(REPO / "agents").glob("*.yaml")])
# Values a spec author might put anywhere: wrong types, empty values, bad names, units, references.
ODD_VALUES = [None, True, False, 0, -1, 1, 1.0, 1.5, -0.5, 10**20, float("inf"), "", "x", "Bad Name", "lower-case",
              "30m", "100M", "grader.py:score", "grader.py", ":score", "maximize", "baseline", "pkg.mod:Cls", [], {},
              ["x"], [1], [None], ["a", "a"], {"x": 1}, {"Bad Key": 1}, {"mini": 1}, {"mini": {"prepare": "p.py:f"}},
              "string", "integer", "x" * 300]
NEW_KEYS = ["x", "Bad Key", "extra", "name", "type", "default", "mini", "full", "tolerance", "improvement", "a-b"]


def real_spec_data() -> list[dict]:
    """Every real spec that is whole by itself (not one that only ``extends:`` another)."""
    specs = []
    for path in REAL_SPECS:
        data, _lines = load_yaml_with_lines(path, path.name)
        if "extends" not in data:
            specs.append(data)
    return specs


def needs_fast_check(kind: str) -> None:
    if schemas.fast_check(kind) is None:
        pytest.skip("fastjsonschema is not installed: every spec is validated by jsonschema")


def fast_says_valid(kind: str, data: dict) -> bool:
    try:
        schemas.fast_check(kind)(data)
    except Exception:  # noqa: BLE001 - any rejection
        return False
    return True


def mutated(data: dict, rng: random.Random) -> dict:
    """``data`` with one to three values replaced, removed or added somewhere inside."""
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        places = list(_places(data))
        if not places:
            break
        container, key = rng.choice(places)
        roll = rng.random()
        if roll < 0.5:
            container[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif roll < 0.75:
            del container[key]
        elif isinstance(container[key], dict):
            container[key][rng.choice(NEW_KEYS)] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif isinstance(container[key], list):
            container[key].append(copy.deepcopy(rng.choice(ODD_VALUES)))
    return data


def _places(value):
    """(container, key) for every value inside ``value``."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield value, key
        yield from _places(item)


def test_the_fast_check_passes_every_real_spec() -> None:
    for data in real_spec_data():
        needs_fast_check(data["kind"])
        assert fast_says_valid(data["kind"], data), data["name"]


def test_the_fast_check_never_passes_what_jsonschema_rejects() -> None:
    specs = real_spec_data()
    rng = random.Random(12)
    verdicts = Counter()
    for _ in range(1500):
        original = rng.choice(specs)
        kind = original["kind"]
        needs_fast_check(kind)
        data = mutated(original, rng)
        valid = schemas.validator(kind).is_valid(data)
        fast = fast_says_valid(kind, data)
        assert valid or not fast, f"the fast check passed a {kind} spec that jsonschema rejects: {data!r}"
        verdicts[valid, fast] += 1
    assert verdicts[False, False] > 500, "the sample must hold plenty of invalid specs"


def test_valid_specs_never_need_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing jsonschema costs more than compiling the schemas: only a rejected spec needs it."""
    needs_fast_check("Agent")

    def jsonschema_validator(kind: str):
        raise AssertionError(f"jsonschema was asked to validate a {kind}")

    monkeypatch.setattr(schemas, "validator", jsonschema_validator)
    agent = next(data for data in real_spec_data() if data["kind"] == "Agent")
    schemas.validate("Agent", agent, LineMap(), "agent.yaml")
    with pytest.raises(AssertionError, match="jsonschema was asked"):
        schemas.validate("Agent", {**agent, "actions": "not a list"}, LineMap(), "agent.yaml")
