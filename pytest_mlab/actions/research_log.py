"""The research log: a file in the workspace where step summaries accumulate, and the two
actions that read it back through the fast model (Reflection, Retrieval from Research Log).

Both show the model the whole log. A log too long for the model makes the LLM layer raise
TokenLimitExceeded, which the Environment turns into an error observation, as in the paper's
environment; cutting the log here would hide that from the agent.
"""

from __future__ import annotations

from typing import Any

from pytest_mlab.actions.files import read_text
from pytest_mlab.actions.model import require_llm
from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError

LOG_FILE = "research_log.log"


def append_summary(ctx: ActionContext, content: str) -> str:
    relpath = ctx.writable(LOG_FILE)
    ctx.sandbox.write(relpath, (content + "\n").encode("utf-8"), append=True)
    return f"Appended to the research log ({LOG_FILE})."


def retrieval_from_research_log(ctx: ActionContext, current_plan: str) -> str:
    return retrieve(require_llm(ctx.llm), _log(ctx), current_plan, research_problem=ctx.research_problem)


def reflection(ctx: ActionContext, things_to_reflect_on: str) -> str:
    llm = require_llm(ctx.llm)
    prompt = f"""\
{_problem(ctx.research_problem)}
Here is the research log so far:
```
{_log(ctx)}
```
Reflect on the following: {things_to_reflect_on}
Answer in paragraphs of natural language, and be as truthful as you can.
"""
    answer = llm.complete(prompt, role="fast", purpose="reflection")
    return f"Reflection: {answer}\n"


def retrieve(llm: Any, log_text: str, current_plan: str, *, research_problem: str = "") -> str:
    """What of the log helps with the next steps; used by the action and by the research agent.
    An empty log holds nothing to retrieve, so the model is not asked."""
    if not log_text.strip():
        return "The research log is empty: no step has been summarised yet."
    prompt = f"""\
{_problem(research_problem)}
The current research plan and status:
{current_plan}

Here is the research log so far:
```
{log_text}
```
Summarise concisely, as a list, all the information in the research log that will help with the next steps.
"""
    return llm.complete(prompt, role="fast", purpose="retrieve from research log")


def _problem(research_problem: str) -> str:
    return f"The research problem we are working on: {research_problem}"


def _log(ctx: ActionContext) -> str:
    """The whole log; like any file read, a log that was never written is an error."""
    if not ctx.sandbox.exists(LOG_FILE):
        raise EnvError(f"cannot read the research log: {LOG_FILE} does not exist yet")
    text = read_text(ctx, LOG_FILE)
    ctx.record("Read File", {"file_name": LOG_FILE}, text)
    return text
