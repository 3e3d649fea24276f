"""Settings for pytest runs started in this repository (the main job ``pytest specs/``, the project's
own tests), and a working example of extending pytest-mlab through its hooks. The plugin itself
loads through its entry point, installed or not with this file.

What this file does:

- The repository root is importable, on the controller and on every xdist worker. An Agent spec's
  ``implementation: my_agents:RunTwice`` therefore finds ``my_agents.py`` at the root under plain
  ``pytest``, without a ``pythonpath`` ini setting (see "Actions and agents" in README.md). The
  root is put first on ``sys.path`` whatever ``--import-mode`` is.
- ``pytest .`` does not walk the default results folder (``mlab-results/``: thousands of
  snapshot files, no tests).
- ``--run-log=FILE`` (ini setting ``mlab_run_log``): as each run's result reaches the controller,
  one JSON line for it is appended to FILE (relative to the folder pytest was started in). Off
  unless given. It is the example hook below: copy it into your own project's conftest.py and change it
  (post to a chat, a dashboard, a database). docs/hooks.md has every hook pytest-mlab offers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

collect_ignore = ["mlab-results"]


def pytest_addoption(parser: pytest.Parser) -> None:
    help_text = "append one JSON line per finished pytest-mlab run to this file (this repository's conftest.py)"
    parser.addoption("--run-log", dest="mlab_run_log", default=None, metavar="FILE", help=help_text)
    parser.addini("mlab_run_log", help=help_text, default=None)


# An implementation of one of pytest-mlab's hooks (pytest_mlab/plugin/hookspecs.py). pytest matches
# it by name; it may take any of the hook's arguments (here: result and config). It runs on the
# controller only (the single process without -n), once per run, before results.json is written.
# optionalhook: pytest does not object when the plugin is off (-p no:mlab) and the hook is unknown.
@pytest.hookimpl(optionalhook=True)
def pytest_mlab_run_finished(result, config: pytest.Config) -> None:
    target = config.getoption("mlab_run_log") or config.getini("mlab_run_log")
    if not target:
        return
    path = config.invocation_params.dir / target  # an absolute FILE stays as it is
    path.parent.mkdir(parents=True, exist_ok=True)
    row = result.to_dict()  # the row results.json will hold (fields: README, "Reading the results")
    line = {key: row[key] for key in ("run_id", "task", "agent", "seed", "passed", "score", "improvement",
                                      "success", "failure", "steps", "wall_time", "cost")}
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")
