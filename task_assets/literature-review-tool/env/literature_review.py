"""Literature review tool: python literature_review.py "TOPIC" OUTPUT.md

Given a research topic, this tool should search for related papers (papers.search_papers),
summarise each with the LLM (LLM.complete_text), and write a review in Markdown to OUTPUT.md
with the list of papers, a summary of each and a conclusion. It is not written yet: so far it
only writes the title.
"""

import sys

import LLM  # noqa: F401  (complete_text: the LLM)
import papers  # noqa: F401  (search_papers: the paper search)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit('usage: python literature_review.py "TOPIC" OUTPUT.md')
    topic, output = sys.argv[1], sys.argv[2]
    with open(output, "w") as handle:
        handle.write(f"# Literature review: {topic}\n\nTODO\n")


if __name__ == "__main__":
    main()
