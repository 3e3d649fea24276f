"""BibTeX generation tool: python bibtex_generation.py PARAGRAPH.txt REFERENCES.bib CITED.txt

Given a paragraph that mentions works without citing them (e.g. "We use the method proposed in
PromptTuning to train the Transformer model"), this tool should use the LLM (LLM.complete_text)
to find the phrases that need a citation, search for each work (papers.search_papers), write a
BibTeX entry per work to REFERENCES.bib, and write the paragraph with \\cite{key} commands to
CITED.txt. It is not written yet: so far it copies the paragraph and writes no entries.
"""

import sys

import LLM  # noqa: F401  (complete_text: the LLM)
import papers  # noqa: F401  (search_papers: the paper search)


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit("usage: python bibtex_generation.py PARAGRAPH.txt REFERENCES.bib CITED.txt")
    source, bib, cited = sys.argv[1:]
    with open(source) as handle:
        paragraph = handle.read()
    with open(bib, "w") as handle:
        handle.write("")
    with open(cited, "w") as handle:
        handle.write(paragraph)


if __name__ == "__main__":
    main()
