"""The task-author API: the one place a task's own code imports pytest_mlab from.

A task's code runs apart from the harness, each kind with one signature:

- a data recipe, ``VARIANT(public: Path, hidden: Path, seed: int[, downloads: Path]) -> None``
  (``prepare.py``), writes what the agent sees to ``public`` and the answers to ``hidden``; it
  fetches with :func:`download`, :func:`kaggle_competition`, :func:`hf_dataset` or
  :func:`hf_snapshot`, holds out rows with :func:`split_ids` or :func:`shuffle_split`, writes
  arrays reproducibly with :func:`save_npz`, and raises :class:`DataError` when it cannot;
- a grader, ``score(workspace: Path, answers: Path[, measured: Path]) -> float`` (``grader.py``),
  raises :class:`InvalidSubmission` for a submission it cannot score; it reads a CSV submission
  with :func:`read_submission`, and what its measure step brought back (``measured``) with
  :func:`executions`, :func:`load_array`, :func:`saved_arrays`, :func:`starter_array` (the unchanged
  starter's output on the same inputs) and :func:`relative_time`; the
  LLM-tool tasks share :func:`write_fixtures` and :func:`score_tool_cases`;
- a measure step (``measure.py``) runs inside the run's sandbox, where pytest_mlab cannot be
  imported: it imports ``mlab_measure`` (:mod:`pytest_mlab.in_sandbox.mlab_measure`), which the
  harness puts beside it, and nothing of this package.

Only these names are here: the engine's modules stay out of reach of task code, so they can
change without breaking a task.
"""

from pytest_mlab.data.fetch import download
from pytest_mlab.data.formats import save_npz
from pytest_mlab.data.hf import hf_dataset, hf_snapshot
from pytest_mlab.data.kaggle import kaggle_competition
from pytest_mlab.data.split import shuffle_split, split_ids
from pytest_mlab.errors import DataError, InvalidSubmission
from pytest_mlab.grading.measured import Execution, executions, load_array, saved_arrays, starter_array
from pytest_mlab.grading.timing import relative_time
from pytest_mlab.task_api._csv_submission import read_submission
from pytest_mlab.task_api._tool_tasks import ToolRun, score_tool_cases, write_fixtures

__all__ = [
    # data recipes
    "DataError", "download", "hf_dataset", "hf_snapshot", "kaggle_competition", "save_npz", "shuffle_split",
    "split_ids", "write_fixtures",
    # graders
    "Execution", "InvalidSubmission", "ToolRun", "executions", "load_array", "read_submission", "relative_time",
    "saved_arrays", "score_tool_cases", "starter_array",
]
