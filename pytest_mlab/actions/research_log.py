"""The research log: a file in the workspace where step summaries accumulate, and the two
actions that read it back through an LLM (Reflection, Retrieval from Research Log)."""

from __future__ import annotations

from typing import Any

from pytest_mlab.actions.files import read_text
from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError

LOG_FILE = "research_log.log"
#: The most of the log an LLM is shown; the start of a long log matters least.
LOG_TAIL_CHARS = 20_000


def append_summary(ctx: ActionContext, content: str) -> str:
    relpath = ctx.writable(LOG_FILE)
    ctx.sandbox.write(relpath, (content.rstrip("\n") + "\n").encode("utf-8"), append=True)
    return f"Appended to the research log ({LOG_FILE})."


def retrieval_from_research_log(ctx: ActionContext, current_plan: str) -> str:
    return retrieve(_llm(ctx), _log(ctx), current_plan)


def reflection(ctx: ActionContext, things_to_reflect_on: str) -> str:
    prompt = f"""\
Below is the research log of an ongoing machine-learning research session.
```
{_tail(_log(ctx))}
```
Reflect on the following, drawing on what the log shows (cite the steps), and say plainly what is
known, what is only assumed, and what to try next:
{things_to_reflect_on}
"""
    return _llm(ctx).complete(prompt, role="main", purpose="reflection")


def retrieve(llm: Any, log_text: str, current_plan: str) -> str:
    """What of the log matters for the current plan; used by the action and by the research agent."""
    if not log_text.strip():
        return "The research log is empty: no step has been summarised yet."
    prompt = f"""\
Below is the research log of an ongoing machine-learning research session.
```
{_tail(log_text)}
```
Summarise what in it is relevant to the current plan, for the researcher to continue the work:
the results measured so far (with their numbers), what was tried and failed, and the state of
the files. Be concise.
Current plan:
{current_plan.strip() or "(not stated)"}
"""
    return llm.complete(prompt, role="fast", purpose="retrieve from research log")


def _log(ctx: ActionContext) -> str:
    if not ctx.sandbox.exists(LOG_FILE):
        return ""
    text = read_text(ctx, LOG_FILE)
    ctx.record("Read File", {"file_name": LOG_FILE}, text)
    return text


def _tail(text: str) -> str:
    return text if len(text) <= LOG_TAIL_CHARS else "[... earlier entries left out ...]\n" + text[-LOG_TAIL_CHARS:]


def _llm(ctx: ActionContext) -> Any:
    if ctx.llm is None:
        raise EnvError("this action needs an LLM, and this run has none (use an LLM-driven agent)")
    return ctx.llm
