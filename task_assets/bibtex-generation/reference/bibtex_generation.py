"""BibTeX generation tool: python bibtex_generation.py PARAGRAPH.txt REFERENCES.bib CITED.txt

Asks the LLM which phrases of the paragraph need a citation (one per line), searches for each
(papers.search_papers) and takes the best match, writes a BibTeX entry per work from the
paper's metadata, and writes the paragraph with \\cite{key} after the first mention of each work.
"""

import re
import sys

import LLM
import papers

LOG = "llm_calls.log"


def phrases(paragraph: str) -> list:
    prompt = ("List the names of the methods, models or works mentioned in this paragraph that need a "
              f"citation, one per line, with nothing else:\n\n{paragraph}")
    answer = LLM.complete_text(prompt, LOG)
    found = [line.strip(" -*\t") for line in answer.splitlines()]
    return [phrase for phrase in dict.fromkeys(found) if phrase and phrase in paragraph]


def bibtex_key(paper: dict, taken: set) -> str:
    last = re.sub(r"[^A-Za-z]", "", paper["authors"][0].split()[-1]) if paper["authors"] else "anon"
    first_word = re.sub(r"[^A-Za-z0-9]", "", paper["title"].split()[0]).lower()
    key, suffix = f"{last.lower()}{paper['year']}{first_word}", ord("a")
    while key in taken:
        key, suffix = f"{key}{chr(suffix)}", suffix + 1
    taken.add(key)
    return key


def entry(paper: dict, key: str) -> str:
    return (f"@article{{{key},\n  title = {{{paper['title']}}},\n  author = {{{' and '.join(paper['authors'])}}},\n"
            f"  year = {{{paper['year']}}},\n  journal = {{arXiv preprint arXiv:{paper['id']}}},\n"
            f"  url = {{{paper['url']}}}\n}}\n")


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit("usage: python bibtex_generation.py PARAGRAPH.txt REFERENCES.bib CITED.txt")
    source, bib, cited = sys.argv[1:]
    with open(source) as handle:
        paragraph = handle.read().strip()
    taken, entries = set(), []
    for phrase in phrases(paragraph):
        results = papers.search_papers(phrase, max_results=1)
        if not results:
            continue
        key = bibtex_key(results[0], taken)
        entries.append(entry(results[0], key))
        paragraph = re.sub(rf"\b{re.escape(phrase)}\b", lambda match: f"{match.group(0)} \\cite{{{key}}}",
                           paragraph, count=1)
    with open(bib, "w") as handle:
        handle.write("\n".join(entries))
    with open(cited, "w") as handle:
        handle.write(paragraph + "\n")


if __name__ == "__main__":
    main()
