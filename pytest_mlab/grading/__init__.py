"""Grading: run a task's grader on a snapshot and judge the score against the baseline.

Graders themselves import from :mod:`pytest_mlab.task_api`, never from here.
"""
