"""Literature review tool: python literature_review.py "TOPIC" OUTPUT.md

Searches for papers on the topic (papers.search_papers), asks the LLM for a summary of each
paper in its own call and for a conclusion over all of them (LLM.complete_text), and writes a
Markdown review: the papers with their arXiv links, a summary of each, and a conclusion.
"""

import sys

import LLM
import papers

MAX_PAPERS = 5
LOG = "llm_calls.log"


def summarise(paper: dict) -> str:
    prompt = (f"Summarize the following paper in one or two sentences for a literature review.\n\n"
              f"Title: {paper['title']}\nAuthors: {', '.join(paper['authors'])} ({paper['year']})\n"
              f"Abstract: {paper['abstract']}\n")
    return LLM.complete_text(prompt, LOG).strip()


def conclude(topic: str, found: list, summaries: list) -> str:
    listing = "\n".join(f"- {paper['title']}: {summary}" for paper, summary in zip(found, summaries))
    prompt = (f"Write the conclusion of a literature review on '{topic}' based on these papers:\n{listing}\n"
              f"Name the common themes and the open problems.")
    return LLM.complete_text(prompt, LOG).strip()


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit('usage: python literature_review.py "TOPIC" OUTPUT.md')
    topic, output = sys.argv[1], sys.argv[2]
    found = papers.search_papers(topic, max_results=MAX_PAPERS)
    summaries = [summarise(paper) for paper in found]
    lines = [f"# Literature review: {topic}", "", "## Papers", ""]
    lines += [f"{number}. {paper['title']}. {', '.join(paper['authors'])}, {paper['year']}. "
              f"arXiv:{paper['id']} ({paper['url']})" for number, paper in enumerate(found, 1)]
    lines += ["", "## Summaries", ""]
    for paper, summary in zip(found, summaries):
        lines += [f"### {paper['title']}", "", summary, ""]
    lines += ["## Conclusion", "", conclude(topic, found, summaries) if found else "No papers were found.", ""]
    with open(output, "w") as handle:
        handle.write("\n".join(lines))


if __name__ == "__main__":
    main()
