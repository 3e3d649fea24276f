"""The action specs tell the agent what the paper's action descriptions tell it: no more, no less.

Each row names pieces of information the paper's description, usage or return value gives (they
must be there) and pieces ours used to add that the paper's lack (they must not come back).
"""

from __future__ import annotations

import pytest

from tests.env.support import repo_project

ALL = ["List Files", "Read File", "Write File", "Append File", "Copy File", "Undo Edit Script", "Execute Script",
       "Python REPL", "Request Help", "Final Answer", "Understand File", "Append Summary to Research Log",
       "Inspect Script Lines", "Edit Script (AI)", "Edit Script Segment (AI)", "Reflection",
       "Retrieval from Research Log"]

ROWS = [
    ("List Files", ["empty", "error"], ["Folders end"]),
    ("Read File", ["exists"], ["Inspect Script Lines"]),
    ("Write File", ["replace its whole content", "error"], ["read-only", "Undo"]),
    ("Append File", ["end of a file", "error"], ["read-only", "creating"]),
    ("Copy File", ["new location under a new name", "error"], ["keep a version"]),
    ("Undo Edit Script", ["before its most recent edit", "error"], ["repeated"]),
    ("Execute Script", ["must already exist", "errors"], ["shortened", "working directory"]),
    ("Python REPL", ["single-line"], []),
    ("Request Help", ["API reference", "installing a library", "look through the tools and files first"], []),
    ("Final Answer", ["final answer", "empty observation"], ["graded", "once"]),
    ("Understand File", ["whole file", "Inspect Script Lines", "what should be returned", "error"], ["blocks"]),
    ("Append Summary to Research Log", ["previous step", "500 characters", "error"], ["research_log.log"]),
    ("Inspect Script Lines", ["precisely", "short script", "100 lines", "debugging", "error"], ["total"]),
    ("Edit Script (AI)", ["relatively large but cohesive", "another AI", "an empty script is created",
                          "step-by-step", "Always check", "Undo Edit Script"], ["from scratch"]),
    ("Edit Script Segment (AI)", ["relatively large but cohesive", "segment", "another AI",
                                  "an empty script is created", "step-by-step", "Always check", "Undo Edit Script"],
     ["long scripts"]),
    ("Reflection", ["all the past steps", "what should be returned"], ["stuck", "assumed"]),
    ("Retrieval from Research Log", ["research log", "current research plan and status", "what should be returned"],
     []),
]


def text(name: str) -> str:
    spec = repo_project().action(name)
    return " ".join([spec.description, spec.returns, *(arg.description for arg in spec.arguments)])


def test_every_action_has_a_row():
    assert sorted(name for name, _, _ in ROWS) == sorted(ALL)


@pytest.mark.parametrize("name, present, absent", ROWS, ids=[row[0] for row in ROWS])
def test_spec_carries_the_papers_information(name, present, absent):
    words = text(name)
    assert [piece for piece in present if piece not in words] == []
    assert [piece for piece in absent if piece in words] == []
