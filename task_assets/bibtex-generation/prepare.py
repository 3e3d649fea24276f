"""Fixtures for grading the BibTeX tool: paragraphs with citation sketches, a paper index, LLM replies.

Nothing is public: the agent writes the tool (env/ holds the helpers LLM.py and papers.py).
hidden/papers.json       the paper index the grader's search answers from (papers.py format): one
                         paper per work the paragraphs refer to, plus unrelated ones
hidden/llm_script.yaml   the scripted LLM (LLM.py format): asked about a paragraph, it lists the
                         phrases that need a citation, one per line
hidden/cases.json        the paragraphs the grader runs the tool on, with the works they cite

``full`` writes the same fixtures: with the full variant the agent develops its tool against real
services and a real LLM, but the automatic check stays this offline one (the paper's metric is
human judgement).
"""

from __future__ import annotations

import pathlib
import re

import numpy as np

from pytest_mlab.grading.tool_run import write_fixtures

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


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    write_fixtures(pathlib.Path(hidden), *fixtures(seed))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    mini(public, hidden, seed)
