"""The Environment an agent acts on: action dispatch, limits, read-only rules, trace recording."""

from pytest_mlab.env.context import ActionContext, ReadOnlyRules
from pytest_mlab.env.environment import Environment

__all__ = ["ActionContext", "Environment", "ReadOnlyRules"]
