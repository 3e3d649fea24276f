"""Run results: one record per item, collected on the controller, written as JSON/CSV and a table."""

from pytest_mlab.results.record import RunResult

__all__ = ["RunResult"]
