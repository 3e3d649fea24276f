"""TraceWriter / read_trace: every completed line survives whatever ends the process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_mlab.errors import MlabError, TraceError
from pytest_mlab.trace import TraceWriter, read_trace
from pytest_mlab.trace.writer import first_record, last_record

REPO_ROOT = Path(__file__).resolve().parents[2]


def _raw_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------------- writing


def test_write_appends_one_json_line_per_record(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with TraceWriter(path) as writer:
        writer.write({"step": 1, "action": "List Files"})
        writer.write({"step": 2, "action": "Edit Script"})
    lines = _raw_lines(path)
    assert len(lines) == 2
    assert [json.loads(line)["step"] for line in lines] == [1, 2]
    assert all("\n" not in line and not line.startswith(" ") for line in lines)


def test_write_adds_timestamp_but_keeps_an_existing_one(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    before = time.time()
    record = {"step": 1}
    with TraceWriter(path) as writer:
        writer.write(record)
        writer.write({"step": 2, "t": 12.5})
    first, second = read_trace(path)
    assert before <= first["t"] <= time.time()
    assert second["t"] == 12.5
    assert record == {"step": 1}, "the caller's dict must not be mutated"


def test_non_ascii_is_written_raw_and_odd_values_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    when = datetime(2024, 1, 2, tzinfo=timezone.utc)
    with TraceWriter(path) as writer:
        writer.write({"text": "naïve — 日本", "path": Path("/w/x.py"), "when": when, "t": 0})
    raw = path.read_bytes()
    assert "日本".encode() in raw, "ensure_ascii=False: text is stored as UTF-8, not \\u escapes"
    (record,) = read_trace(path)
    assert record == {"text": "naïve — 日本", "path": "/w/x.py", "when": str(when), "t": 0}


def test_newlines_inside_values_stay_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    observation = "line one\nline two\r\nthree\u2028four"
    with TraceWriter(path) as writer:
        writer.write({"observation": observation})
    assert path.read_bytes().count(b"\n") == 1
    assert read_trace(path)[0]["observation"] == observation


def test_lone_surrogate_round_trips_instead_of_crashing(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with TraceWriter(path) as writer:
        writer.write({"stdout": "bad byte: \udce9"})
    assert read_trace(path)[0]["stdout"] == "bad byte: \udce9"


def test_unserialisable_record_raises_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with TraceWriter(path) as writer:
        writer.write({"step": 1})
        with pytest.raises(TypeError):
            writer.write({("tuple", "key"): 1})
        with pytest.raises(TypeError):
            writer.write(["not", "a", "dict"])  # type: ignore[arg-type]
        writer.write({"step": 2})
    assert [r["step"] for r in read_trace(path)] == [1, 2]


def test_lines_are_on_disk_before_close(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path)
    try:
        for step in range(3):
            writer.write({"step": step})
            with open(path, encoding="utf-8") as other:  # a separate handle sees it at once
                lines = other.read().splitlines()
            assert [json.loads(line)["step"] for line in lines] == list(range(step + 1))
    finally:
        writer.close()


def test_creates_parent_directories_and_appends_to_existing_trace(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "task" / "trace.jsonl"
    with TraceWriter(path) as writer:
        writer.write({"step": 1})
    with TraceWriter(path) as writer:
        writer.write({"step": 2})
    assert [r["step"] for r in read_trace(path)] == [1, 2]


def test_close_is_idempotent_and_write_after_close_raises(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "trace.jsonl")
    assert not writer.closed
    writer.close()
    writer.close()
    assert writer.closed
    with pytest.raises(TraceError, match="closed"):
        writer.write({"step": 1})


def test_context_manager_closes_even_on_error(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with pytest.raises(RuntimeError):
        with TraceWriter(path) as writer:
            writer.write({"step": 1})
            raise RuntimeError("agent crashed")
    assert writer.closed
    assert len(read_trace(path)) == 1


def test_reopening_after_a_torn_write_drops_the_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2, "obs": "half wri')
    with TraceWriter(path) as writer:
        writer.write({"step": 3})
    assert [r["step"] for r in read_trace(path)] == [1, 3]
    assert _raw_lines(path)[-1].startswith('{"step": 3')


def test_reopening_keeps_a_complete_last_line_that_lacks_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2}')
    with TraceWriter(path) as writer:
        writer.write({"step": 3})
    assert [r["step"] for r in read_trace(path)] == [1, 2, 3]


def test_reopening_a_file_that_is_one_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1, "x": ' + b"y" * 200_000)  # longer than one tail chunk
    with TraceWriter(path) as writer:
        writer.write({"step": 2})
    assert [r["step"] for r in read_trace(path)] == [2]


def test_fsync_option_still_writes_lines(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with TraceWriter(path, fsync=True) as writer:
        writer.write({"step": 1})
    assert read_trace(path)[0]["step"] == 1


# ---------------------------------------------------------------------- reading


def test_truncated_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2}\n{"step": 3, "observation": "trunc')
    assert [r["step"] for r in read_trace(path)] == [1, 2]


def test_truncated_multibyte_character_in_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n' + '{"text": "日'.encode()[:-1])
    assert [r["step"] for r in read_trace(path)] == [1]


def test_corrupt_middle_line_raises_with_file_and_line_number(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2\n{"step": 3}\n')
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert f"{path}:2:" in str(info.value)
    assert isinstance(info.value, MlabError)


def test_non_object_line_raises(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n[1, 2]\n{"step": 3}\n')
    with pytest.raises(TraceError, match=r":2: .*not an object"):
        read_trace(path)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n\n{"step": 2}\n\n')
    assert [r["step"] for r in read_trace(path)] == [1, 2]


def test_empty_trace_reads_as_no_records(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    TraceWriter(path).close()
    assert read_trace(path) == []


def test_missing_trace_raises_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no trace file"):
        read_trace(tmp_path / "nope.jsonl")


def test_first_and_last_record_read_only_the_ends(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"type": "run"}\n' + b'{"step": 1}\n' * 3 + b'{"type": "result", "x": "' + b"y" * 200_000
                     + b'"}\n\n')  # the last record is longer than one tail chunk; a blank line follows it
    assert first_record(path) == {"type": "run"}
    assert last_record(path) == {"type": "result", "x": "y" * 200_000}


def test_last_record_passes_over_a_line_cut_short_but_not_a_corrupt_one(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2}\n{"type": "result", "sco')  # killed while writing the result
    assert last_record(path) == {"step": 2}
    path.write_bytes(b'{"step": 1}\n{"step": 2\n{"type": "res')  # two bad lines: nothing is trusted
    assert last_record(path) is None
    path.write_bytes(b'{"step": 1}\n[1, 2]\n')  # a line that is not an object
    assert last_record(path) is None


def test_first_and_last_record_of_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    partial = tmp_path / "partial.jsonl"
    partial.write_bytes(b'{"type": "run", "da')
    for path in (empty, partial, tmp_path / "missing.jsonl"):
        assert first_record(path) is None and last_record(path) is None


# ---------------------------------------------------------------------- crashes


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pytest_mlab.trace import TraceWriter
    writer = TraceWriter(sys.argv[1])
    for step in range(3):
        writer.write({"step": step, "observation": "small"})  # well under the buffer size
    print("ready", flush=True)
    time.sleep(60)
    writer.write({"step": "never"})
    """
)


def test_sigkill_mid_run_leaves_a_readable_trace(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    pythonpath = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": pythonpath}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert [r["step"] for r in read_trace(path)] == [0, 1, 2]
