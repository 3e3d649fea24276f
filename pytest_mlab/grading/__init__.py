"""Grading: run a task's grader on a snapshot and judge the score against the baseline.

Task graders import only :class:`InvalidSubmission` from here, so this module stays light.
"""

from pytest_mlab.errors import InvalidSubmission

__all__ = ["InvalidSubmission"]
