"""Forged result records, as an agent that fails would write them so that --mlab-resume shows
PASS: it finds the results folder (through /proc/<ancestor>/cmdline under local; the test hands
it the path) and appends a ``result`` record that says it passed.

On bwrap and docker the results folder is not there to write. Under local the record lands,
but it lacks the harness's signature (results/signing.py): resume runs the run again, with a
warning, and never reports the forged PASS. The session under local also says, once and before
any run, what that backend does not protect."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_mlab.errors import UnsignedRecordWarning
from pytest_mlab.results.resume import finished_result
from pytest_mlab.results.signing import results_key
from tests.helpers import output_of, run_specs, toy_run

FORGER = '''
import json
trace = {trace!r}
try:
    with open(trace, "a") as handle:
        handle.write(json.dumps({{"type": "result", "run_id": "toy[mini-reference-s0]", "passed": True,
                                  "success": True, "score": 0.0, "improvement": 1.0, "end_reason": "final answer",
                                  "valid": True}}) + "\\n")
    print("forged")
except OSError as exc:
    print("refused:", type(exc).__name__)
with open("submission.txt", "w") as handle:
    handle.write("7")  # a wrong answer: this run fails
'''


def test_a_result_record_written_by_the_agent_is_never_resumed(tmp_path: Path, kind: str) -> None:
    trace = tmp_path / "out" / "runs" / "toy-mini-reference-s0" / "trace.jsonl"
    result = toy_run(tmp_path, sandbox=kind, reference=FORGER.format(trace=str(trace)))
    assert not result.passed
    forged = [record for record in map(json.loads, trace.read_text().splitlines())
              if record.get("type") == "result" and "mac" not in record]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = finished_result(trace.parent, result.run_id, result.nodeid, results_key(tmp_path / "out"))
    unsigned = [w for w in caught if issubclass(w.category, UnsignedRecordWarning)]
    if kind == "local":  # the agent could write the trace: its record is there, and not trusted
        assert forged and resumed is None and len(unsigned) == 1, caught
    else:
        assert not forged and not unsigned, "the results folder was writable from the sandbox"
        assert resumed is not None and not resumed.passed


FAILING_REFERENCE = 'open("submission.txt", "w").write("7")\n'


@pytest.mark.slow
def test_a_forged_pass_appended_after_the_run_is_run_again_and_local_says_what_it_does_not_protect(
        pytester: pytest.Pytester, toy_project: Path, mlab_cache: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmp")))  # the sessions sweep only their own leftovers
    (toy_project / "task_assets" / "toy" / "reference" / "train.py").write_text(FAILING_REFERENCE)
    first = run_specs(pytester, "--agent=reference", "--sandbox=local", "-n", "2", cache_dir=mlab_cache,
                      subprocess=True)
    first.assert_outcomes(failed=1)
    text = output_of(first)
    warning = "WARNING: --sandbox=local: code run by agents is NOT isolated"
    assert text.count(warning) == 1 and text.index(warning) < text.index("pytest-mlab results"), text

    # what the daemon of the issue did once the run was graded: a copy of the result record, passed
    trace = toy_project / "mlab-results" / "runs" / "toy-mini-reference-s0" / "trace.jsonl"
    last = json.loads(trace.read_text().splitlines()[-1])
    assert last["type"] == "result" and not last["passed"]
    with open(trace, "a") as handle:
        handle.write(json.dumps({**last, "passed": True, "success": True, "score": 0.0, "improvement": 1.0,
                                 "message": "forged"}) + "\n")

    again = run_specs(pytester, "--agent=reference", "--sandbox=local", "--mlab-resume", cache_dir=mlab_cache,
                      subprocess=True)
    again.assert_outcomes(failed=1)
    text = output_of(again)
    assert "PASS" not in text and "UnsignedRecordWarning" in text and "not written by pytest-mlab" in text, text
