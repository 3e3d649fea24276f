"""The session's live status on the controller (--mlab-progress): which items are running, at
which step and for how long, and how many are done and left.

Under pytest-xdist the controller hears of an item only when it ends, so each run keeps a small
status file (pytest_mlab/trace/progress.py) that a thread here reads twice a second. On a
terminal the status is a block of lines under pytest's own line: whatever pytest writes first
wipes the block, and the thread draws it again. Elsewhere (``--mlab-progress=on`` in a CI log)
it is a plain line when the status changes, at most every :data:`PLAIN_EVERY` seconds.

pytest's TerminalWriter has no cursor movement, so the block is drawn with three ANSI sequences
(clear line, cursor up, cursor right); a library such as rich would take over stdout, which
pytest and pytest-xdist write to themselves.
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import TextIO

import pytest

from pytest_mlab.errors import UsageError
from pytest_mlab.plugin.options import progress_mode
from pytest_mlab.plugin.state import SESSION, SETTINGS
from pytest_mlab.spec.units import format_duration
from pytest_mlab.trace.progress import STEPPING, Status, read_statuses, remove_statuses

POLL = 0.5  # seconds between two reads of the status files
PLAIN_EVERY = 10.0  # without a terminal: a line at most this often, when something changed...
PLAIN_QUIET = 60.0  # ...and at least this often while something runs
MAX_ROWS = 8  # running items listed on a terminal; the others are counted

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def register_progress(config: pytest.Config) -> None:
    """On the controller: the display, unless --mlab-progress=off (whether ``auto`` shows it is
    known at the session's start, once pytest's terminal is set up)."""
    try:
        mode = progress_mode(config)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if mode != "off":
        config.pluginmanager.register(ProgressDisplay(config, forced=mode == "on"), "mlab-progress")


def status_lines(statuses: list[Status], done: int, total: int, now: float, *, rows: int | None) -> list[str]:
    """The header (counts) and a row per running item; ``rows``: at most this many, the rest counted."""
    header = f"pytest-mlab: {len(statuses)} running, {done}/{total} done, {max(total - done, 0)} left"
    shown = statuses if rows is None else statuses[:rows]
    lines = [header, *(f"  {_row(status, now)}" for status in shown)]
    if len(shown) < len(statuses):
        lines.append(f"  ... and {len(statuses) - len(shown)} more")
    return lines


def _row(status: Status, now: float) -> str:
    """``toy[mini-reference-s0]: step 3/50 for 12s, 1m05s in all``."""
    doing = f"step {status.step}/{status.max_steps}" if status.phase == STEPPING else status.phase
    row = f"{status.run_id}: {doing} for {_seconds(now - status.since)}"
    if status.since - status.started >= 1:
        row += f", {_seconds(now - status.started)} in all"
    return row


def _seconds(seconds: float) -> str:
    """Whole seconds: a live clock that shows tenths flickers."""
    seconds = max(seconds, 0.0)
    return f"{int(seconds)}s" if seconds < 60 else format_duration(seconds)


class ProgressDisplay:
    """Registered on the controller only; its thread reads this session's status files."""

    def __init__(self, config: pytest.Config, *, forced: bool) -> None:
        self.config = config
        self.out_dir = config.stash[SETTINGS].out_dir
        self.session_id = config.stash[SESSION]
        self.forced = forced  # --mlab-progress=on: also without a terminal, and with -q
        self.live = False  # drawn as a block on a terminal (else as plain lines)
        self.done: set[str] = set()
        self.session: pytest.Session | None = None
        self.screen: _Screen | None = None
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.printed: tuple[float, tuple] = (0.0, ())  # plain lines: when the last one was printed, and what

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """``auto`` shows the status on a terminal that moves its cursor, and not with -q, nor
        where items write to the terminal themselves (-s, or a human LLM, without xdist)."""
        terminal = self.config.pluginmanager.getplugin("terminalreporter")
        if terminal is None:
            return
        self.live = bool(terminal.isatty()) and os.environ.get("TERM") != "dumb"
        if not self.forced and (not self.live or self.config.get_verbosity() < 0 or self._items_use_terminal()):
            return
        self.session = session
        self.screen = _Screen(self.config.get_terminal_writer(), live=self.live)
        self.thread = threading.Thread(target=self._poll, name="mlab-progress", daemon=True)
        self.thread.start()

    def _items_use_terminal(self) -> bool:
        if getattr(self.config.option, "numprocesses", None):
            return False  # workers' output never reaches the controller's terminal
        from pytest_mlab.llm.providers import HUMAN

        settings = self.config.stash[SETTINGS]
        return self.config.getoption("capture", "fd") == "no" or HUMAN in (settings.llm, settings.fast_llm,
                                                                               settings.edit_llm)

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.done.add(nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        """Before the results are written: the block goes, and the files of runs a dead worker left."""
        self._stop()
        remove_statuses(self.out_dir, self.session_id)

    @pytest.hookimpl
    def pytest_unconfigure(self) -> None:
        self._stop()

    def _stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if self.screen is not None:
            self.screen.close()
            self.screen = None

    def _poll(self) -> None:
        while not self.stopping.wait(POLL):
            try:
                self._tick(time.time())
            except OSError:  # the terminal went away (a closed pipe): pytest will say so itself
                return

    def _tick(self, now: float) -> None:
        screen, session = self.screen, self.session
        if screen is None or session is None:
            return
        running = [status for status in read_statuses(self.out_dir, self.session_id) if status.nodeid not in self.done]
        total = max(session.testscollected, len(self.done))
        if self.live:
            screen.show(status_lines(running, len(self.done), total, now, rows=MAX_ROWS) if running else [])
            return
        state = tuple((status.run_id, status.phase, status.step) for status in running) + (len(self.done),)
        last, shown = self.printed
        if running and (not last or (state != shown and now - last >= PLAIN_EVERY) or now - last >= PLAIN_QUIET):
            header, *rows = status_lines(running, len(self.done), total, now, rows=None)
            screen.show([f"{header}: {'; '.join(row.strip() for row in rows)}"])
            self.printed = (now, state)


class _Screen:
    """pytest's terminal, shared with the status. It stands in for the TerminalWriter's file (the
    writer has no hook for this), so that every write of pytest's first wipes the block and leaves
    the cursor where pytest left it. The block goes to a duplicate of the terminal's descriptor:
    while an item runs without xdist, pytest's capture redirects descriptor 1, not the duplicate."""

    def __init__(self, writer, *, live: bool) -> None:
        self._writer = writer
        self._real: TextIO = writer._file
        self._out = _own_stream(self._real)
        self._live = live
        self._lock = threading.Lock()
        self._column = 0  # where pytest's cursor is on its current line
        self._shown: list[str] = []  # the block's lines on the screen
        writer._file = self

    def write(self, text: str) -> int:
        with self._lock:
            self._wipe()
            written = self._real.write(text)
            tail = re.split(r"[\r\n]", text)[-1]
            width = len(_ANSI.sub("", tail))
            self._column = width if ("\n" in text or "\r" in text) else self._column + width
            return written

    def flush(self) -> None:
        with self._lock:
            self._real.flush()

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def show(self, lines: list[str]) -> None:
        """Replace the block with ``lines`` (on a terminal), or print them (elsewhere)."""
        with self._lock:
            if self._live and lines == self._shown:
                return
            self._wipe()
            if not lines:
                return
            self._real.flush()
            if self._live:
                width = max(self._writer.fullwidth - 1, 20)
                self._out.write("\n" + "\n".join(line[:width] for line in lines))
                self._shown = lines
            else:
                self._out.write(("\n" if self._column else "") + "\n".join(lines) + "\n")
                self._column = 0
            self._out.flush()

    def _wipe(self) -> None:
        """Clear the block's lines from the bottom up, then put the cursor back on pytest's line."""
        if self._shown:
            back = f"\x1b[{self._column}C" if self._column else ""
            self._out.write("\r\x1b[2K\x1b[1A" * len(self._shown) + "\r" + back)
            self._out.flush()
            self._shown = []

    def close(self) -> None:
        with self._lock:
            self._wipe()
            if self._writer._file is self:
                self._writer._file = self._real
            if self._out is not self._real:
                self._out.close()


def _own_stream(real: TextIO) -> TextIO:
    """A stream of our own on the terminal's descriptor, or the terminal's stream itself when it has
    no descriptor (pytest's own tests of plugins capture into memory)."""
    try:
        descriptor = os.dup(real.fileno())
    except (OSError, ValueError, AttributeError):
        return real
    return os.fdopen(descriptor, "w", encoding=getattr(real, "encoding", None) or "utf-8", errors="replace")
