"""Prompt text for the LLM agents (composite actions keep their own prompts beside their code).

What these prompts tell the model, and what they withhold, follows the original MLAgentBench agent
(``MLAgentBench/agents/agent.py`` and ``agent_research.py`` at 5d71205): the same tools, problem,
instructions, response entries, history and retry note. The wording is ours. docs/agents.md
lists the facts, and docs/fidelity.md the deliberate differences. Tool descriptions are built
from the Action specs, never written by hand, so a new action is described the moment it is added.
"""

from __future__ import annotations

import json
from typing import Sequence

from pytest_mlab.actions.understand import Block
from pytest_mlab.spec.models import ActionSpec

#: What each response entry asks of the model; agents choose which entries they require.
ENTRY_GUIDES = {
    "Reflection": "what the observation means; if there is an error, what caused it and how to debug it",
    "Research Plan and Status": "the full high-level research plan, with the current status and the confirmed "
                                "results of each step noted briefly; only progress made by earlier steps belongs "
                                "here. Enclose anything new in this step in double asterisks **like this**; with "
                                "nothing new, repeat the previous Research Plan and Status. Keep the previous "
                                "high-level plan in full unless you revise it on purpose",
    "Fact Check": "each objective statement in the updates to the Research Plan and Status, one by one, and whether "
                  "it is guessed or directly confirmed by the observation just above; performance numbers are "
                  "confirmed only by running the code and seeing the output",
    "Thought": "what you are doing now, which action you will take, and why",
    "Action": "the action to take: one of the tool names",
    "Action Input": "the input to the action, as a valid JSON string",
}

#: The original research agent's nine instructions, in our words.
RESEARCH_RULES = (
    "First make a high-level plan from your understanding of the problem and of the tools, and record it in "
    "the Research Plan and Status. You may revise it later.",
    "Keep the Research Plan and Status well organised and short. It tracks 1) the high-level plan, which may "
    "be revised, 2) which steps are done and which are in progress, 3) brief results and conclusions of each "
    "step once it is done.",
    "The Research Plan and Status may only record progress made by earlier steps: nothing that the previous "
    "observation did not directly confirm.",
    "A performance number or estimate may enter the status only after you ran the code and saw it in the output.",
    "Design a sound experiment for the problem. Where it applies, define and measure the baseline performance "
    "of the relevant system or model before you try to improve on it.",
    "Follow the plan and reach the goal as directly as you can.",
    "Set out the supporting experimental results and reasoning before you draw a conclusion.",
    "Do not try to install any new packages or libraries.",
    "When you believe the problem is solved, submit with the Final Answer action. You can submit only once, "
    "so make sure the goal is reached first.",
)

#: Our stricter variant (agents/research-strict.yaml), not the paper's: rules 4, 5, 6 and 9 replaced.
STRICT_RULES = (
    *RESEARCH_RULES[:3],
    RESEARCH_RULES[3] + " Never report a score that no observation showed.",
    "Measure the baseline (run the code you are given, unchanged) before you try to improve on it.",
    "Change one thing at a time, run it, and compare it with the best result so far.",
    *RESEARCH_RULES[6:8],
    "Submit with the Final Answer action once, when the submission file holds your best measured result.",
)


def _rules(rules: Sequence[str]) -> str:
    return "Keep to these instructions throughout:\n" + "\n".join(f"- {rule}" for rule in rules)


INSTRUCTIONS = {
    "research": _rules(RESEARCH_RULES),
    "research-strict": _rules(STRICT_RULES),
    # The original's plain ReAct and simple agents give no instructions beyond the format.
    "none": "",
}

#: Said once, before any step: the model starts with no knowledge of the problem.
FRESH_START = "You know nothing about this problem yet."


def tool_descriptions(actions: Sequence[ActionSpec]) -> str:
    """Name, description, usage (a JSON template of the arguments) and observation of every tool."""
    blocks = []
    for spec in actions:
        template = json.dumps({arg.name: f"[{arg.type}: {arg.description}]" for arg in spec.arguments}, indent=4)
        blocks.append(f"- {spec.name}: {spec.description}\n"
                      f"  Usage:\n  ```\n  Action: {spec.name}\n  Action Input: "
                      + template.replace("\n", "\n  ") + "\n  ```\n"
                      f"  Observation: {spec.returns}")
    return "\n".join(blocks)


def response_format(entries: Sequence[str]) -> str:
    return "\n".join(f"{name}: {ENTRY_GUIDES.get(name, '')}" for name in entries)


def system_prompt(actions: Sequence[ActionSpec], problem: str, entries: Sequence[str], instructions: str) -> str:
    """Everything that stays the same from step to step."""
    guidance = INSTRUCTIONS[instructions]
    middle = f"{FRESH_START}\n\n{guidance}\n\n" if guidance else ""
    return f"""\
You are a helpful research assistant, with these tools at your disposal:
{tool_descriptions(actions)}

Research problem: {problem.strip()}

{middle}Answer every time in exactly this format, each entry on a new line:
{response_format(entries)}
Observation:
```
the result of the action
```
"""


def printed_response(entries: dict[str, str], order: Sequence[str]) -> str:
    """A past response as the model sees it again: its entries in the required order."""
    return "\n".join(f"{name}: {entries.get(name, '').strip()}" for name in order)


def step_block(response: str, observation: str) -> str:
    return f"{response.strip()}\nObservation:\n```\n{observation.strip()}\n```\n"


#: Before the first steps, when nothing has left the context yet.
START = "Now begin."


def history_section(summary: str | None, recent: Sequence[str], started: bool) -> str:
    """The part of the prompt that changes: a research-log summary of older steps (with retrieval),
    then the most recent steps in full. ``started``: steps have already left the context."""
    parts = []
    if summary is not None:
        parts.append(f"A summary of the relevant actions and observations so far:\n```\n{summary.strip()}\n```\n"
                     f"Your most recent steps, exactly as they were (up to {len(recent)}):")
    elif not started:
        parts.append(START)
    parts.extend(recent)
    return "\n\n".join(parts) + "\n"


def format_feedback(entries: Sequence[str], problem: str | None = None) -> str:
    """Appended to the prompt after a response that could not be used; the notes accumulate, as in
    the original. ``problem`` (the ``detailed`` feedback of a variant) also says what was wrong."""
    what = f" ({problem})" if problem else ""
    return (f"\n\nYour response did not follow the required format{what}. Respond again with all of these "
            f"entries: {', '.join(entries)}\n\n")


def input_error_observation(error: str, action: str, usage: str) -> str:
    """What the agent sees when its Action Input could not be read: the error and the expected usage."""
    return (f"ActionInputParsingError: {error}\nThe input of {action} must be valid JSON with the right entries: "
            f"check for a missing comma between entries, and do not use triple quotes (JSON has none). "
            f"Use this format and try again:\n{usage}")


#: The label the research-log summary must carry (the original retries until the model writes it).
LOG_ENTRY_MARK = "[Reasoning]:"
#: What the research log records when no usable summary came back.
LOG_ENTRY_FALLBACK = "Too long to summarize."


def summarize_step(response: str, observation: str) -> str:
    """For the research log: the fast model condenses one step (the original's three labels)."""
    return f"""\
Here are your action and its observation:
{response.strip()}
[Observation]:
```
{observation.strip()}
```
Summarise the action and the observation in this format:
[Reasoning]: the reasoning behind the action, in brief
[Action]: every relevant detail of the action, stated objectively
[Observation]: every relevant detail of the observation, stated objectively
Leave out any result that the observation does not directly confirm, and add no other information or advice.
"""


#: The label an observation summary is read from.
OBSERVATION_MARK = "[Observation]:"


def summarize_observation_block(response: str, block: Block) -> str:
    """One 10,000-character piece of an observation too long for the history."""
    return f"""\
{response.strip()}

The observation is too long to show in full. Here is the part from character {block.start + 1} to character \
{block.end}:
```
{block.text}
```
Summarise this part briefly in this format:
[Observation]: every relevant detail of the observation, stated objectively

Leave out any result that the observation does not directly confirm, and add no other information or advice.
"""


def merge_observation_summaries(response: str, blocks: Sequence[Block], summaries: Sequence[str]) -> str:
    """Join the summaries of an observation's pieces into one."""
    parts = "\n\n".join(f"Part {index}:\n\n{summary}" for index, summary in enumerate(summaries, start=1))
    return f"""\
{response.strip()}

The observation is too long to show in full. Here are summaries of each part of it; combine them into one
coherent description of the whole observation.
{parts}

Summarise the observation briefly in this format:
[Observation]: every relevant detail of the observation, stated objectively

Leave out any result that the observation does not directly confirm, and add no other information or advice.
"""
