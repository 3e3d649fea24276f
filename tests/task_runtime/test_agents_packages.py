"""The agents' own environment, in every sandbox that runs here: the packages the original offered
agents import, the harness's do not, and its installation is not there to be put on sys.path."""

from __future__ import annotations

import json
import sysconfig

import pytest

from pytest_mlab.sandbox.registry import open_sandbox

# the list: what agents reach for on the paper's tasks and could not import before
AGENTS_PACKAGES = ("xgboost", "lightgbm", "seaborn", "nltk", "sentencepiece")
HARNESS_ONLY = ("pytest_mlab", "litellm", "docker")

PROBE = """
import importlib, json, os, sys
found, missing = [], []
for name in {wanted!r} + {harness!r}:
    try:
        importlib.import_module(name)
        found.append(name)
    except ImportError:
        missing.append(name)
print(json.dumps({{"found": found, "missing": missing, "python": sys.executable,
                  "harness_site": os.path.isdir({harness_site!r})}}))
"""


@pytest.mark.slow
def test_agent_scripts_import_the_originals_packages_and_not_the_harness(kind, tmp_path):
    harness_site = sysconfig.get_paths()["purelib"]  # where pytest_mlab, litellm and docker live
    code = PROBE.format(wanted=AGENTS_PACKAGES, harness=HARNESS_ONLY, harness_site=harness_site)
    with open_sandbox(kind) as sandbox:
        sandbox.write("probe.py", code.encode())
        result = sandbox.exec([sandbox.python, "probe.py"], timeout=600, output_limit=100_000)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["found"] == list(AGENTS_PACKAGES), answer
    assert answer["missing"] == list(HARNESS_ONLY), answer
    if kind != "local":  # the confined backends mount the task runtime only, not the harness's installation
        assert answer["harness_site"] is False, answer


POISON = """
import os, sysconfig
target = os.path.join(sysconfig.get_paths()["purelib"], "sitecustomize.py")
try:
    with open(target, "w") as handle:
        handle.write("raise SystemExit('poisoned')\\n")
    print("written", target)
except OSError as exc:
    print("refused", type(exc).__name__)
"""


@pytest.mark.slow
def test_an_agent_cannot_plant_code_in_the_runtime_that_later_scripts_and_grading_run(kind):
    """The attack: a sitecustomize.py in the runtime's site-packages would run in every later script,
    the measure step that grading runs included. The confined backends mount the runtime read-only."""
    if kind == "local":
        pytest.skip("the local backend confines nothing (docs/sandboxes.md)")
    with open_sandbox(kind) as sandbox:
        sandbox.write("poison.py", POISON.encode())
        result = sandbox.exec([sandbox.python, "poison.py"], timeout=120, output_limit=10_000)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().startswith("refused"), result.stdout
