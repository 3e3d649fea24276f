"""Fixtures for grading the BibTeX tool: paragraphs with citation sketches, a paper index, LLM replies.

Nothing is public: the agent writes the tool (env/ holds the helpers LLM.py and papers.py).
hidden/cases.json        the paragraphs the tool is run on, with the works they cite: the
                         grader's alone
hidden/tool_cases.json   how the measure step runs the tool on each paragraph (arguments, the
                         paragraph as paragraph.txt, outputs, timeout): never the works cited
hidden/papers.json       the paper index the search answers from (papers.py format): one paper
                         per work the paragraphs refer to, plus unrelated ones
hidden/llm_script.yaml   the scripted LLM (LLM.py format): asked about a paragraph, it lists the
                         phrases that need a citation, one per line
hidden/LLM.py, papers.py copies of the task's helpers, put over the agent's copies
The last four are the measure step's inputs (``metric.measure.inputs``): what the tool may read.

``full`` writes the same fixtures: with the full variant the agent develops its tool against real
services and a real LLM, but the automatic check stays this offline one (the paper's metric is
human judgement).
"""

from __future__ import annotations

import pathlib
import re

import numpy as np

from pytest_mlab.task_api import write_fixtures

SCRIPT = "bibtex_generation.py"  # how the tool is run: python SCRIPT INPUT BIB TEXT
INPUT, BIB, TEXT = "paragraph.txt", "references.bib", "cited.txt"
TIMEOUT_S = 180  # per paragraph
NAMES = ["QuillFormer", "DeltaTune", "SparseMix", "HaloNet", "RiverGAN", "LumaBERT", "CobaltRL", "FernDiffusion",
         "PivotQA", "MarbleNorm", "TideSeg", "OrbitKD"]
TEMPLATES = [
    "We use the method proposed in {0} to train the {1} model, and we evaluate it with the protocol of {2}.",
    "Following {0}, we pretrain on web text; unlike {1}, we do not freeze the encoder, and we compare with {2}.",
    "Our design builds on {0} and {1}, and the ablations reuse the setup of {2}.",
]
CASES = 2
_FIRST = "Ada Alan Grace Claude Edsger Barbara Donald Frances John Leslie Radia Shafi".split()
_LAST = "Lovelace Turing Hopper Shannon Dijkstra Liskov Knuth Allen McCarthy Lamport Perlman Goldwasser".split()
_WHAT = ["Efficient Training of Language Models", "Parameter-Efficient Adaptation", "Robust Evaluation at Scale",
         "Learning Sparse Representations", "Generative Models for Images", "Normalization Without Tears"]


def _paper(rng: np.random.Generator, name: str, number: int) -> dict:
    year = int(rng.integers(2015, 2024))
    identifier = f"{year % 100:02d}{int(rng.integers(1, 13)):02d}.{number:05d}"
    return {"id": identifier, "title": f"{name}: {rng.choice(_WHAT)}",
            "authors": [f"{rng.choice(_FIRST)} {rng.choice(_LAST)}" for _ in range(int(rng.integers(1, 4)))],
            "year": year, "abstract": f"We present {name}, an approach to {str(rng.choice(_WHAT)).lower()}.",
            "url": f"https://arxiv.org/abs/{identifier}", "category": "cs.LG"}


def _words_pattern(text: str) -> str:
    """A regex for the words of ``text`` in order, whatever whitespace separates them."""
    return r"\s+".join(re.escape(word) for word in text.split())


def fixtures(seed: int) -> tuple[list[dict], dict, list[dict]]:
    """(paper index, LLM script, cases) for a seed."""
    rng = np.random.default_rng(seed)
    names = [str(name) for name in rng.permutation(NAMES)]
    papers = [_paper(rng, name, number) for number, name in enumerate(names, 1)]
    by_name = dict(zip(names, papers))
    cases, rules = [], []
    for index, template in enumerate(rng.choice(TEMPLATES, size=CASES, replace=False)):
        cited = names[3 * index:3 * index + 3]
        paragraph = str(template).format(*cited)
        cases.append({"paragraph": paragraph, "cited": cited, "titles": [by_name[n]["title"] for n in cited]})
        rules.append({"pattern": _words_pattern(paragraph), "reply": "\n".join(cited)})
    script = {"rules": rules, "default": "I can only list the phrases of a paragraph that need citations."}
    return papers, script, cases


def tool_cases(cases: list[dict]) -> dict:
    """How the measure step runs the tool: the paragraph as its input file, nothing of what it cites."""
    return {"script": SCRIPT, "outputs": [BIB, TEXT], "timeout": TIMEOUT_S,
            "cases": [{"args": [INPUT, BIB, TEXT], "files": {INPUT: case["paragraph"] + "\n"}} for case in cases]}


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    papers, script, cases = fixtures(seed)
    write_fixtures(pathlib.Path(hidden), papers, script, cases, tool_cases(cases),
                   pathlib.Path(__file__).resolve().parent / "env")


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    mini(public, hidden, seed)
