"""Fixtures for grading the literature-review tool: research topics, a paper index, LLM replies.

Nothing is public: the agent writes the tool (env/ holds the helpers LLM.py and papers.py).
hidden/cases.json        the topics the tool is run on, with what a review must contain: the
                         grader's alone
hidden/tool_cases.json   how the measure step runs the tool on each topic (arguments, outputs,
                         timeout): the topics, never what the review must contain
hidden/papers.json       the paper index the search answers from (papers.py format): five
                         papers per topic plus unrelated ones
hidden/llm_script.yaml   the scripted LLM (LLM.py format): one summary per paper, a conclusion,
                         search keywords per topic
hidden/LLM.py, papers.py copies of the task's helpers, put over the agent's copies
The last four are the measure step's inputs (``metric.measure.inputs``): what the tool may read.

``full`` writes the same fixtures: with the full variant the agent develops its tool against the
real arXiv API and a real LLM, but the automatic check stays this offline one (the paper's metric
is human judgement).
"""

from __future__ import annotations

import pathlib
import re

import numpy as np

from pytest_mlab.task_api import write_fixtures

SCRIPT, OUTPUT = "literature_review.py", "review.md"  # how the tool is run: python SCRIPT "TOPIC" OUTPUT
TIMEOUT_S = 180  # per topic
TOPICS = ["hallucination detection in language models", "graph neural networks for molecular property prediction",
          "reinforcement learning from human feedback", "efficient attention for long documents",
          "federated learning with differential privacy", "speech recognition for low resource languages"]
OTHER = ["protein folding with diffusion", "traffic forecasting with sensors", "galaxy morphology classification",
         "crop yield estimation from satellites"]
PAPERS_PER_TOPIC = 5
CASES = 2
CONCLUSION = ("In conclusion, the surveyed work converges on shared benchmarks, yet evaluation protocols differ "
              "and open problems remain in robustness and scale.")
_METHODS = "Aster Borealis Cascade Drift Ember Fathom Glyph Harbor Isotope Juniper Kestrel Lumen Mosaic Nimbus Onyx " \
           "Prism Quartz Rune Sable Tundra Umbra Vertex Willow Xenon Yarrow Zephyr".split()
_FIRST = "Ada Alan Grace Claude Edsger Barbara Donald Frances John Leslie Radia Shafi Tim Yoshua Fei".split()
_LAST = "Lovelace Turing Hopper Shannon Dijkstra Liskov Knuth Allen McCarthy Lamport Perlman Goldwasser Berners Bengio Li" \
    .split()


def _paper(rng: np.random.Generator, topic: str, method: str, number: int) -> dict:
    year = int(rng.integers(2016, 2024))
    identifier = f"{year % 100:02d}{int(rng.integers(1, 13)):02d}.{number:05d}"
    gain = int(rng.integers(2, 19))
    return {
        "id": identifier,
        "title": f"{method}: {str(rng.choice(['Towards', 'Rethinking', 'Scaling', 'Revisiting']))} {topic}",
        "authors": [f"{rng.choice(_FIRST)} {rng.choice(_LAST)}" for _ in range(int(rng.integers(1, 4)))],
        "year": year,
        "abstract": f"We study {topic}. We introduce {method}, a method that improves on prior work by {gain} "
                    f"points on standard benchmarks.",
        "url": f"https://arxiv.org/abs/{identifier}",
        "category": "cs.LG",
        "summary": f"{method} addresses {topic} and improves on prior work by {gain} points.",
    }


def fixtures(seed: int) -> tuple[list[dict], dict, list[dict]]:
    """(paper index, LLM script, cases) for a seed."""
    rng = np.random.default_rng(seed)
    methods = iter(rng.permutation(_METHODS))
    chosen = [str(topic) for topic in rng.choice(TOPICS, size=CASES, replace=False)]
    papers, cases = [], []
    for topic in chosen:
        group = [_paper(rng, topic, str(next(methods)), len(papers) + i + 1) for i in range(PAPERS_PER_TOPIC)]
        papers.extend(group)
        cases.append({"topic": topic, "papers": [p["id"] for p in group], "titles": [p["title"] for p in group],
                      "summaries": [p["summary"] for p in group], "conclusion": CONCLUSION})
    for topic in OTHER:  # unrelated papers a good search leaves out
        papers.append(_paper(rng, topic, str(next(methods)), len(papers) + 1))
    for case in cases:
        case["unrelated"] = [p["title"] for p in papers if p["id"] not in case["papers"]]

    rules = [{"pattern": "conclu", "reply": CONCLUSION}]
    rules += [{"pattern": _words_pattern(p["title"]), "reply": p["summary"]} for p in papers]
    rules += [{"pattern": r"(quer|search|keyword)[\s\S]*" + _words_pattern(c["topic"]), "reply": c["topic"]}
              for c in cases]
    script = {"rules": rules, "default": "I can only help with summaries of papers and conclusions."}
    index = [{key: value for key, value in paper.items() if key != "summary"} for paper in papers]
    return index, script, cases


def _words_pattern(text: str) -> str:
    """A regex for the words of ``text`` in order, whatever whitespace separates them."""
    return r"\s+".join(re.escape(word) for word in text.split())


def tool_cases(cases: list[dict]) -> dict:
    """How the measure step runs the tool: one topic per case, nothing of what the review must hold."""
    return {"script": SCRIPT, "outputs": [OUTPUT], "timeout": TIMEOUT_S,
            "cases": [{"args": [case["topic"], OUTPUT]} for case in cases]}


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    papers, script, cases = fixtures(seed)
    write_fixtures(pathlib.Path(hidden), papers, script, cases, tool_cases(cases),
                   pathlib.Path(__file__).resolve().parent / "env")


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    mini(public, hidden, seed)
