"""A tiny LLM-driven agent for tests of the LLM layer (copied into sub-run projects).

Each step asks the main LLM for one JSON object ``{"action": ..., "input": {...}}``; when the
object also says ``"summarise": true``, the fast LLM is asked to summarise the last observation.
Its spec may set the options the LLM layer reads (``sampling``, ``llm_attempts``, ``api_base``).
"""

import json

from pytest_mlab.agents import Agent
from pytest_mlab.llm.options import LLM_OPTIONS_SCHEMA


class ToolAgent(Agent):
    options_schema = {"type": "object", "additionalProperties": False, "properties": LLM_OPTIONS_SCHEMA}

    def run(self, env):
        observation = "nothing yet"
        while not env.done:
            prompt = f"Task: {env.research_problem}\nLast observation: {observation}\nReply with one JSON action."
            reply = json.loads(env.llm.complete(prompt, role="main", stop=("Observation:",), purpose="next action"))
            if reply.get("summarise"):
                env.llm.complete(f"Summarise: {observation}", role="fast", purpose="summarise observation")
            observation = env.step(reply["action"], reply.get("input", {}))
