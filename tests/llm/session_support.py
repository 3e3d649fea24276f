"""Helpers for the tests that drive an LLMSession in this process and read what it wrote to its
TraceWriter (test_session.py, test_provider_faults.py). Tests of whole runs read a trace file with
tests/llm/support.py's helpers instead."""

from __future__ import annotations

from pytest_mlab.trace import TraceWriter, read_trace


def llm_records(trace: TraceWriter) -> list[dict]:
    return [r for r in read_trace(trace.path) if r["type"] == "llm"]
