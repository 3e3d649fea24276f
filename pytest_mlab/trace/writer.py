"""Append-only JSON-lines traces that survive a crash, a timeout, SIGKILL or Ctrl-C.

Every record is one line written with a single ``write`` and flushed at once, so whatever kills
the process, every completed line is already in the operating system's hands. A kill in the
middle of a write can leave only the *last* line incomplete; :func:`read_trace` ignores such a
line and :class:`TraceWriter` trims it before appending, so a resumed trace stays readable.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Callable

from pytest_mlab.errors import TraceError

_NEWLINE = b"\n"
_TAIL_CHUNK = 64 * 1024


def _encode(record: dict[str, Any]) -> bytes:
    """One record as one UTF-8 JSON line.

    ``backslashreplace`` turns a lone surrogate (which UTF-8 cannot hold) into the JSON escape
    ``\\udXXX``, which reads back as the same string, instead of failing mid-run.
    """
    text = json.dumps(record, ensure_ascii=False, default=str)
    return text.encode("utf-8", "backslashreplace") + _NEWLINE


def _decode(line: bytes) -> Any:
    """Parse one line; raises ``ValueError`` (JSON or UTF-8) when it is not valid."""
    return json.loads(line.decode("utf-8"))


class TraceWriter:
    """Appends records to a JSON-lines trace; one process writes a given trace.

    Each :meth:`write` costs one buffered write and one flush, never a rewrite of the file.
    With ``fsync=True`` each line is also forced to the disk (survives a power cut, costs more).
    ``observer`` is called with each record once it is written (the run's live status follows
    the steps this way, without the Environment knowing of it).

    ``current_step`` is the number of the step the run is taking now: the Environment advances
    it, and whatever else writes to the trace (LLM calls made before a step or inside its
    composite action) files its records under it, without knowing the Environment.
    """

    def __init__(self, path: Path | str, *, fsync: bool = False,
                 observer: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._observer = observer
        self.current_step = 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: BinaryIO | None = open(self.path, "ab")
        _repair_tail(self._fh, self.path)

    @property
    def closed(self) -> bool:
        return self._fh is None

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` (plus ``"t": time.time()`` unless it has one) and flush it."""
        if self._fh is None:
            raise TraceError(f"{self.path}: cannot write to a trace writer that was closed")
        if not isinstance(record, dict):
            raise TypeError(f"a trace record must be a dict, not {type(record).__name__}")
        if "t" not in record:
            record = {**record, "t": time.time()}
        line = _encode(record)  # serialise first: a bad record must not leave half a line
        self._fh.write(line)
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())
        if self._observer is not None:
            self._observer(record)

    def close(self) -> None:
        """Flush and close; calling it again does nothing."""
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"TraceWriter({str(self.path)!r}, {state})"


def _repair_tail(fh: BinaryIO, path: Path) -> None:
    """Make the file end on a line boundary before we append to it.

    A previous writer killed mid-write leaves a partial last line; appending after it would
    turn it into a corrupt line in the middle. A complete JSON line that only lacks its newline
    gets the newline; anything else after the last newline is cut off (it was never complete).
    """
    size = fh.seek(0, os.SEEK_END)
    if size == 0:
        return
    with open(path, "rb") as reader:
        start = _last_line_start(reader, size)
        reader.seek(start)
        tail = reader.read()
    if tail.endswith(_NEWLINE):
        return
    try:
        complete = isinstance(_decode(tail), dict)
    except ValueError:
        complete = False
    if complete:
        fh.write(_NEWLINE)
        fh.flush()
    else:
        os.truncate(path, start)
        fh.seek(0, os.SEEK_END)


def _last_line_start(reader: BinaryIO, size: int) -> int:
    """Offset just after the last newline that precedes the final byte (0 when there is none)."""
    end = size - 1  # a newline as the very last byte ends the last line; skip it
    while end > 0:
        begin = max(0, end - _TAIL_CHUNK)
        reader.seek(begin)
        found = reader.read(end - begin).rfind(_NEWLINE)
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0


def read_trace(path: Path | str) -> list[dict[str, Any]]:
    """All records of a trace, in order.

    The last line is ignored when it does not parse (a crash mid-write); any other bad line
    raises :class:`TraceError` naming the file and its line number. Blank lines are skipped.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no trace file here (did the run start?)") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read trace: {exc.strerror or exc}") from exc
    lines = data.split(_NEWLINE)
    last = _last_nonblank(lines)
    records: list[dict[str, Any]] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        record = _parse_line(path, index, line, tolerate=index == last)
        if record is not None:
            records.append(record)
    return records


def first_record(path: Path | str) -> dict[str, Any] | None:
    """The trace's first record (a run's ``run`` record), reading only its first line; None when the
    trace is missing, empty or that line is incomplete."""
    try:
        with open(path, "rb") as reader:
            line = reader.readline()
        value = _decode(line)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def last_record(path: Path | str) -> dict[str, Any] | None:
    """The trace's last complete record, reading only its tail: a last line cut short by a kill
    mid-write is passed over, as :func:`read_trace` does. None when there is no such record."""
    try:
        with open(path, "rb") as reader:
            end = reader.seek(0, os.SEEK_END)
            tolerated = False
            while end > 0:
                start = _last_line_start(reader, end)
                reader.seek(start)
                line = reader.read(end - start)
                end = start
                if not line.strip():
                    continue
                try:
                    value = _decode(line)
                except ValueError:
                    if tolerated:
                        return None
                    tolerated = True
                    continue
                return value if isinstance(value, dict) else None
    except OSError:
        return None
    return None


def steps_taken(path: Path | str) -> int:
    """How many ``step`` records the trace holds: the steps of a run that ended before its result
    record said so. Unreadable lines (a kill mid-write) count for nothing; 0 without a trace."""
    steps = 0
    try:
        with open(path, "rb") as reader:
            for line in reader:
                try:
                    value = _decode(line)
                except ValueError:
                    continue
                steps += isinstance(value, dict) and value.get("type") == "step"
    except OSError:
        return 0
    return steps


def _last_nonblank(lines: list[bytes]) -> int:
    """Index of the last line with content, or -1."""
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip():
            return index
    return -1


def _parse_line(path: Path, index: int, line: bytes, *, tolerate: bool) -> dict[str, Any] | None:
    """One record, or ``None`` for an unparsable line we were told to tolerate."""
    try:
        value = _decode(line)
    except ValueError as exc:
        if tolerate:
            return None
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise TraceError(
            f"{path}:{index + 1}: corrupt trace line ({reason}); "
            "only the last line of a trace may be incomplete"
        ) from None
    if not isinstance(value, dict):
        raise TraceError(
            f"{path}:{index + 1}: trace line is a JSON {type(value).__name__}, not an object"
        )
    return value
