"""A run's numbers where pytest's own reports look: user properties (JUnit XML ``<property>``),
a ``[[ATTACHMENT|path]]`` line for CI servers that collect attachments, and pytest-html extras."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.results.record import RESULT_PROPERTY, RunResult

FLAT_FIELDS = ("score", "baseline", "improvement", "best_improvement", "success", "valid", "failure", "steps",
               "tokens", "cost", "wall_time", "end_reason", "resumed")


def attach(item: pytest.Item, result: RunResult) -> None:
    item.mlab_result = result.to_dict()
    item.user_properties.append((RESULT_PROPERTY, item.mlab_result))
    for name in FLAT_FIELDS:
        value = getattr(result, name)
        if value is not None:
            item.user_properties.append((f"mlab_{name}", value))
    if result.trace:
        trace = str(Path(result.trace).resolve())
        item.user_properties.append(("mlab_trace", trace))
        item.add_report_section("call", "stdout", f"[[ATTACHMENT|{trace}]]\n")


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
