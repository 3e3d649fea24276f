"""A run's numbers where pytest's own reports look: user properties (JUnit XML ``<property>``),
a ``[[ATTACHMENT|path]]`` line for CI servers that collect attachments, and pytest-html extras.

Every property is always present, so a CI parser finds the same names on every run: a missing
value is ``null``. ``mlab_result`` is the whole row as strict JSON; it is also how the row
travels to the controller (from xdist workers too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mlab.results.record import RESULT_PROPERTY, RunResult
from pytest_mlab.results.strict_json import dumps

FLAT_FIELDS = ("score", "baseline", "improvement", "best_improvement", "success", "valid", "failure", "steps",
               "tokens", "cost", "wall_time", "end_reason", "resumed")
NULL = "null"


def attach(item: pytest.Item, result: RunResult) -> None:
    item.mlab_result = result.to_dict()
    item.user_properties.append((RESULT_PROPERTY, dumps(item.mlab_result)))
    for name in FLAT_FIELDS:
        value = getattr(result, name)
        item.user_properties.append((f"mlab_{name}", NULL if value is None else value))
    trace = str(Path(result.trace).resolve()) if result.trace else None
    item.user_properties.append(("mlab_trace", trace or NULL))
    if trace:
        item.add_report_section("call", "stdout", f"[[ATTACHMENT|{trace}]]\n")


def attached_result(properties: list[tuple[str, Any]]) -> RunResult | None:
    """The row :func:`attach` put on an item's report, or None when it carries none."""
    text = next((value for name, value in properties if name == RESULT_PROPERTY), None)
    return None if text is None else RunResult.from_dict(json.loads(text))


def html_extras(result: dict) -> list:
    """Links and a summary for pytest-html's results table; nothing when pytest-html is absent."""
    try:
        from pytest_html import extras
    except ImportError:
        return []
    found = [extras.text(result.get("message") or "", name="pytest-mlab")]
    if result.get("trace"):
        found.append(extras.url(Path(result["trace"]).resolve().as_uri(), name="trace"))
    if result.get("run_dir"):
        found.append(extras.url(Path(result["run_dir"]).resolve().as_uri(), name="run folder"))
    return found
