"""Paper search for the tool you write: ``search_papers(query, max_results=5)``.

Searches the arXiv API (http://export.arxiv.org/api/query, no key needed). When the environment
variable MLAB_TOOL_PAPERS names a JSON file (a list of papers), that file is searched instead,
with no network: the grader runs your tool this way, ranking papers by how many words of the
query their title and abstract contain. Each paper is a dict:

    {"id": "2106.09685", "title": "...", "authors": ["Ada Lovelace", ...], "year": 2021,
     "abstract": "...", "url": "https://arxiv.org/abs/2106.09685", "category": "cs.CL"}
"""

import json
import os
import re
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

ARXIV_API = "http://export.arxiv.org/api/query"
_ATOM = {"atom": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}


def search_papers(query: str, max_results: int = 5) -> list:
    """Papers matching ``query``, best first, at most ``max_results``."""
    log = os.environ.get("MLAB_TOOL_PAPERS_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"query": query, "max_results": max_results}) + "\n")
    local = os.environ.get("MLAB_TOOL_PAPERS")
    return _search_file(query, max_results, local) if local else _search_arxiv(query, max_results)


def _words(text: str) -> set:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2}


def _search_file(query: str, max_results: int, path: str) -> list:
    with open(path, encoding="utf-8") as handle:
        papers = json.load(handle)
    wanted = _words(query)
    ranked = [(len(wanted & _words(paper["title"] + " " + paper["abstract"])), paper) for paper in papers]
    ranked = [item for item in ranked if item[0] > 0]
    ranked.sort(key=lambda item: (-item[0], item[1]["id"]))
    return [paper for _, paper in ranked[:max_results]]


def _search_arxiv(query: str, max_results: int) -> list:
    params = urllib.parse.urlencode({"search_query": f"all:{query}", "start": 0, "max_results": max_results})
    with urllib.request.urlopen(f"{ARXIV_API}?{params}", timeout=60) as response:
        feed = ElementTree.fromstring(response.read())
    papers = []
    for entry in feed.findall("atom:entry", _ATOM):
        url = entry.findtext("atom:id", "", _ATOM).strip()
        category = entry.find("arxiv:primary_category", _ATOM)
        papers.append({
            "id": re.sub(r"v\d+$", "", url.rsplit("/abs/", 1)[-1]),
            "title": " ".join(entry.findtext("atom:title", "", _ATOM).split()),
            "authors": [a.findtext("atom:name", "", _ATOM) for a in entry.findall("atom:author", _ATOM)],
            "year": int(entry.findtext("atom:published", "0", _ATOM)[:4] or 0),
            "abstract": " ".join(entry.findtext("atom:summary", "", _ATOM).split()),
            "url": url,
            "category": category.get("term", "") if category is not None else "",
        })
    return papers
