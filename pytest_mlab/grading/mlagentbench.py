"""The grader of tasks made from MLAgentBench folders (see :mod:`pytest_mlab.spec.mlagentbench`):
``get_score`` of the folder's scripts/eval.py, called as the original calls it, with the submission
folder, here the graded snapshot of the workspace.

It runs in the grader's contained process like any task's grader, from the hidden copy of
scripts/ (its working directory), beside which prepare.py left the answers; eval.py's ``../env``
is the unchanged starter files, never the agent's code. A workspace that makes get_score raise is
an invalid submission (the original scores such a run -1); an eval.py that cannot be imported is
the grader's own failure.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from pytest_mlab.errors import InvalidSubmission


def score(workspace: Path, answers: Path) -> Any:
    scripts = Path(answers) / "scripts"
    os.chdir(scripts)
    sys.path.insert(0, str(scripts))
    spec = importlib.util.spec_from_file_location("eval", scripts / "eval.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        return module.get_score(str(workspace))
    except Exception as exc:  # the original's evaluation counts any failure as no score
        raise InvalidSubmission(f"get_score of the task's eval.py failed on this workspace: "
                                f"{type(exc).__name__}: {exc}") from None
