"""Grader for the literature-review-tool task: check the reviews the tool wrote on hidden topics.

The tool never runs here. The measure step (measure.py, in the run's sandbox) runs
``python literature_review.py "TOPIC" review.md`` once per hidden topic on a copy of the
workspace, with the task's own LLM.py and papers.py answering from a scripted LLM and a local
paper index (see pytest_mlab/task_api/_tool_tasks.py), and brings back each review and the helpers'
logs. This grader checks them automatically; the score is the fraction of checks passed over
all topics (higher is better). These checks test that the tool works end to end and writes a
well-formed review of the papers found; how good the review is remains a matter of human
judgement, the paper's metric. The search log is written by code in the same sandbox as the
tool: a tool can forge it.
"""

from __future__ import annotations

import pathlib
import re

from pytest_mlab.task_api import ToolRun, score_tool_cases

SCRIPT = "literature_review.py"
OUTPUT = "review.md"
MIN_PAPERS = 3


def _present(text: str, phrase: str) -> bool:
    """``phrase`` in ``text``, ignoring case and how whitespace and line breaks fall."""
    return re.search(r"\s+".join(re.escape(word) for word in phrase.split()), text, re.IGNORECASE) is not None


def check_review(case: dict, run: ToolRun) -> dict[str, bool]:
    """The automatic checks of one run; names say what a passing review does."""
    path = run.folder / OUTPUT
    review = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    listed = [i for i, title in enumerate(case["titles"]) if _present(review, title)]
    ids = set(re.findall(r"\b\d{4}\.\d{4,5}\b", review))
    topic_words = {w for w in re.findall(r"[a-z]+", case["topic"].lower()) if len(w) > 3}
    after_heading = re.split(r"(?im)^#+\s*.*conclusion.*$", review, maxsplit=1)
    return {
        "the tool exits with status 0": run.ok,
        f"it writes {OUTPUT}": bool(review.strip()),
        "it searches for papers with words of the topic": any(topic_words & set(re.findall(r"[a-z]+", q.lower()))
                                                              for q in run.queries),
        f"the review lists at least {MIN_PAPERS} of the papers found on the topic": len(listed) >= MIN_PAPERS,
        "each listed paper comes with its arXiv id or URL, and no other arXiv id appears":
            bool(listed) and all(case["papers"][i] in review for i in listed) and ids <= set(case["papers"]),
        f"the review has the LLM's summary of at least {MIN_PAPERS} papers":
            sum(_present(review, summary) for summary in case["summaries"]) >= MIN_PAPERS,
        "a 'Conclusion' heading is followed by the LLM's conclusion":
            len(after_heading) == 2 and _present(after_heading[1], case["conclusion"]),
        "no unrelated paper is listed": bool(listed) and not any(_present(review, t) for t in case["unrelated"]),
    }


def score(workspace: pathlib.Path, answers: pathlib.Path, measured: pathlib.Path) -> float:
    return score_tool_cases(workspace, answers, measured, script=SCRIPT, usage=f'"TOPIC" {OUTPUT}',
                            label=lambda case: f"topic {case['topic']!r}", checks=check_review)
