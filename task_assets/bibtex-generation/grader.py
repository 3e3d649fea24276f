"""Grader for the bibtex-generation task: check what the tool wrote for hidden paragraphs.

The tool never runs here. The measure step (measure.py, in the run's sandbox) runs
``python bibtex_generation.py paragraph.txt references.bib cited.txt`` once per hidden
paragraph on a copy of the workspace, with the task's own LLM.py and papers.py answering from a
scripted LLM and a local paper index (see pytest_mlab/task_api/_tool_tasks.py), and brings back each
references.bib and cited.txt. This grader parses references.bib with bibtexparser and checks the
entries and the rewritten paragraph; the score is the fraction of checks passed over all
paragraphs (higher is better). Whether the citations are the ones a researcher would choose
remains a matter of human judgement, the paper's metric.
"""

from __future__ import annotations

import pathlib
import re

from pytest_mlab.task_api import ToolRun, score_tool_cases

SCRIPT = "bibtex_generation.py"
INPUT, BIB, TEXT = "paragraph.txt", "references.bib", "cited.txt"


def _plain(text: str) -> str:
    """Lower-case words only: how titles and paragraphs are compared."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _entries(path: pathlib.Path):
    """(entries, parsed cleanly) of a BibTeX file; no file or no entries gives ([], False)."""
    import bibtexparser

    if not path.is_file():
        return [], False
    library = bibtexparser.parse_string(path.read_text(encoding="utf-8", errors="replace"))
    return library.entries, bool(library.entries) and not library.failed_blocks


def check_output(case: dict, run: ToolRun) -> dict[str, bool]:
    """The automatic checks of one run; names say what passing output does."""
    entries, clean = _entries(run.folder / BIB)
    fields = [{name.lower(): str(field.value) for name, field in entry.fields_dict.items()} for entry in entries]
    titles = [_plain(f.get("title", "")) for f in fields]
    wanted = [_plain(title) for title in case["titles"]]
    keys = [entry.key for entry in entries]
    key_of = {title: key for title, key in zip(titles, keys)}
    text_path = run.folder / TEXT
    text = text_path.read_text(encoding="utf-8", errors="replace") if text_path.is_file() else ""
    cited = [key.strip() for group in re.findall(r"\\cite[tp]?\*?\{([^}]*)\}", text) for key in group.split(",")]
    words = _plain(re.sub(r"\\cite[tp]?\*?\{[^}]*\}", " ", text)).split()
    remaining = iter(words)
    return {
        "the tool exits with status 0": run.ok,
        f"{BIB} parses as BibTeX (bibtexparser) with at least one entry and no broken block": clean,
        "there is an entry for each work the paragraph refers to (matched by title)":
            all(title in titles for title in wanted),
        "there is no entry for a work the paragraph does not refer to": bool(entries) and set(titles) <= set(wanted),
        "every entry has a unique key, an author, a title and a four-digit year":
            bool(entries) and len(set(keys)) == len(keys) and all(
                f.get("author", "").strip() and f.get("title", "").strip()
                and re.fullmatch(r"\s*\{?\d{4}\}?\s*", f.get("year", "")) for f in fields),
        f"it writes {TEXT}": bool(text.strip()),
        f"{TEXT} cites each work with \\cite{{key}} of its entry, and only keys of {BIB}":
            bool(cited) and set(cited) <= set(keys) and all(key_of.get(title) in cited for title in wanted),
        f"{TEXT} keeps the paragraph's words, in order": bool(words) and all(
            word in remaining for word in _plain(case["paragraph"]).split()),
    }


def score(workspace: pathlib.Path, answers: pathlib.Path, measured: pathlib.Path) -> float:
    return score_tool_cases(workspace, answers, measured, script=SCRIPT, usage=f"{INPUT} {BIB} {TEXT}",
                            label=lambda case: f"paragraph {case['paragraph'][:60]!r}...", checks=check_output)
