"""An agent spec's ``options:`` checked against its class's options schema, at collection.

The class is found through the one ``module:attr`` resolver; it declares ``options_schema`` (a
JSON Schema) and may add ``check_spec`` for what a schema cannot say. Errors point at the line
of the offending option, like every other spec error.
"""

from __future__ import annotations

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.refs import resolve_object
from pytest_mlab.spec.schemas import validate_with
from pytest_mlab.spec.yaml_lines import LineMap


def check_agent_options(agent: models.AgentSpec, lines: LineMap) -> None:
    display = agent.source
    line = lines.locate(("implementation",), display)[1]
    cls = resolve_object(agent.implementation, source=display, line=line, purpose=f"agent '{agent.name}'")
    schema = getattr(cls, "options_schema", None)
    if not isinstance(cls, type) or not isinstance(schema, dict):
        raise SpecError(display, line, "implementation",
                        f"'{agent.implementation}' is not an agent class: subclass pytest_mlab.agents.Agent")
    validate_with(schema, agent.options, lines, display, at=("options",))
    try:
        cls.check_spec(agent)
    except SpecError as exc:
        if exc.line is not None:
            raise
        path = tuple(exc.where.split(".")) if exc.where else ()
        raise SpecError(exc.path, lines.locate(path, display)[1], exc.where, exc.message) from None
