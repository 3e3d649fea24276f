"""Prompt text for the LLM agents (composite actions keep their own prompts beside their code).

The agents' wording lives here, so it can be read and changed in one place. Tool descriptions are built
from the Action specs, never written by hand, so a new action is described the moment it is added.
"""

from __future__ import annotations

import json
from typing import Sequence

from pytest_mlab.spec.models import ActionSpec

#: What each response entry asks of the model; agents choose which entries they require.
ENTRY_GUIDES = {
    "Reflection": "what the last observation tells you, or what went wrong and why",
    "Research Plan and Status": "your high-level plan and how far each part has got; mark what changed "
                                "in this step with **double asterisks**; record only results you have "
                                "confirmed by running code",
    "Fact Check": "each statement in the plan and status that changed, labelled 'guessed' or 'confirmed by "
                  "the observation of step N'",
    "Thought": "what you will do now and why",
    "Action": "the name of one tool, exactly as listed",
    "Action Input": "a JSON object with that tool's arguments, following its usage",
}

INSTRUCTIONS = {
    "research": """\
How to work:
- First understand the problem and the files you are given, then write down a high-level plan.
- Keep the Research Plan and Status up to date in every response. It is your memory: only results
  you have confirmed by running code belong there, with the numbers the code printed.
- Measure the baseline (run the code you are given unchanged) before you try to improve on it.
- Change one thing at a time, run it, and compare against the best result so far.
- A number counts only when an observation shows it. Never report a score you did not see printed.
- You cannot install new packages; use what the starter code already imports.
- Submit with the Final Answer tool once, when the submission file holds your best result.""",
    "plain": """\
Work step by step: look at the files, improve the solution, run it to check the result, and
submit with the Final Answer tool once the submission file holds your best result.""",
}


def tool_descriptions(actions: Sequence[ActionSpec]) -> str:
    """Name, description, usage and observation of every tool, from the Action specs."""
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
    return f"""\
You are an expert machine-learning researcher. You work on the research problem below inside a
workspace folder, and you can act on it only through the tools listed here. Each response of
yours is one step: you call exactly one tool, then the observation it returns is shown to you.

Tools:
{tool_descriptions(actions)}

Research problem:
{problem.strip()}

{INSTRUCTIONS.get(instructions, INSTRUCTIONS['plain'])}

Respond in exactly this format, with every entry below, in this order, each starting on a new line:
{response_format(entries)}
"""


def step_block(number: int, response: str, observation: str) -> str:
    return f"Step {number}:\n{response.strip()}\nObservation:\n```\n{observation.strip()}\n```\n"


def history_section(older_summary: str | None, recent: Sequence[str]) -> str:
    parts = []
    if older_summary:
        parts.append(f"A summary of your earlier steps, from the research log:\n```\n{older_summary.strip()}\n```\n")
    if recent:
        parts.append("Your most recent steps, in full:\n\n" + "\n".join(recent))
    parts.append("Now write your next response.")
    return "\n".join(parts)


def format_feedback(problem: str, entries: Sequence[str]) -> str:
    """Appended to the prompt when a response could not be used, before asking again."""
    return (f"\n\nYour previous response could not be used: {problem}. Respond again, with all of these "
            f"entries, each on a new line and in this order: {', '.join(entries)}. The Action Input must be "
            f"a JSON object.\n")


def summarize_step(response: str, observation: str) -> str:
    """For the research log: the fast LLM condenses one step into a few lines."""
    return f"""\
Condense this step of a machine-learning research session into a short entry for a research log.
Keep what was done, why, and every number or error the observation shows; drop everything else.
Write three labelled lines: [Reasoning], [Action], [Observation].

The step:
```
{response.strip()}
```
Its observation:
```
{observation.strip()}
```
"""


#: What the fast model is asked to keep when an observation is too long to show in full.
OBSERVATION_REQUEST = ("everything a researcher needs from this output: every number, metric, file name, "
                       "error message and warning, and whether the action succeeded")
