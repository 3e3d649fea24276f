"""An agent spec's class and ``options:``, checked at collection against the class's options schema.

The class is found through the one ``module:attr`` resolver; it declares ``options_schema`` (a
JSON Schema) and may add ``check_spec`` for what a schema cannot say. Errors point at the line
of the offending option, like every other spec error.
"""

from __future__ import annotations

from typing import Any

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.refs import resolve_object
from pytest_mlab.spec.schemas import validate_with
from pytest_mlab.spec.yaml_lines import LineMap


def implementation_class(implementation: str, name: Any, lines: LineMap, display: str) -> type:
    """The agent class ``implementation`` names; a SpecError at its line when there is none."""
    file, line = lines.locate(("implementation",), display)
    cls = resolve_object(implementation, source=file, line=line, purpose=f"agent '{name}'")
    if not isinstance(cls, type) or not isinstance(getattr(cls, "options_schema", None), dict):
        raise SpecError(file, line, "implementation",
                        f"'{implementation}' is not an agent class: subclass pytest_mlab.agents.Agent")
    return cls


def check_options(cls: type, options: Any, lines: LineMap, display: str) -> None:
    """``options:`` against the class's options schema: every violation at once."""
    validate_with(cls.options_schema, options, lines, display, at=("options",))


def check_with_class(cls: type, agent: models.AgentSpec, lines: LineMap) -> None:
    """What only the class can judge, on a spec that is otherwise valid (e.g. an option that needs an action)."""
    try:
        cls.check_spec(agent)
    except SpecError as exc:
        if exc.line is not None:
            raise
        path = tuple(exc.where.split(".")) if exc.where else ()
        raise SpecError(exc.path, lines.locate(path, agent.source)[1], exc.where, exc.message) from None
