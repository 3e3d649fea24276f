"""Output capture on its own: the cap keeps the head and the tail in bounded memory, readers give
up on a pipe someone keeps open, and stdin feeding never blocks or raises."""

from __future__ import annotations

import os
import threading
import time

import pytest

from pytest_mlab.sandbox.capture import (READ_GRACE_S, CappedBuffer, Output, drain, feed_stdin, join_all,
                                         omission_marker, start_thread)


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1000])
def test_the_cap_keeps_head_and_tail_whatever_the_chunk_size(chunk):
    data = b"".join(f"{index:04d}".encode() for index in range(250))
    buffer = CappedBuffer(100)
    for start in range(0, len(data), chunk):
        buffer.feed(data[start:start + chunk])
    assert buffer.total == len(data) and buffer.dropped == len(data) - 100
    assert buffer.text() == data[:50].decode() + omission_marker(len(data) - 100) + data[-50:].decode()


def test_output_under_the_cap_is_kept_whole_and_decoded_leniently():
    buffer = CappedBuffer(100)
    buffer.feed("héllo ✓".encode())
    buffer.feed(b" \xff")
    assert buffer.dropped == 0 and buffer.text() == "héllo ✓ \ufffd"
    empty = CappedBuffer(0)
    empty.feed(b"abc")
    assert empty.dropped == 3 and empty.text() == omission_marker(3)


def test_each_stream_is_capped_on_its_own_and_drops_add_up():
    output = Output(10)
    output.stdout.feed(b"o" * 25)
    output.stderr.feed(b"e" * 8)
    assert output.stdout.text() == "o" * 5 + omission_marker(15) + "o" * 5
    assert output.stderr.text() == "e" * 8
    assert output.truncated_bytes == 15


def test_a_reader_drains_to_eof():
    read_end, write_end = os.pipe()
    buffer = CappedBuffer(1000)
    reader = start_thread(drain, read_end, buffer, threading.Event())
    os.write(write_end, b"line one\nline two\n")
    os.close(write_end)
    assert join_all([reader], 5)
    assert buffer.text() == "line one\nline two\n"
    os.close(read_end)


def test_a_reader_gives_up_on_a_pipe_that_stays_open_once_stopped():
    read_end, write_end = os.pipe()  # the write end stays open, as an escaped grandchild would keep it
    buffer = CappedBuffer(1000)
    stop = threading.Event()
    reader = start_thread(drain, read_end, buffer, stop)
    os.write(write_end, b"before")
    assert not join_all([reader], 0.3)
    started = time.monotonic()
    stop.set()
    assert join_all([reader], READ_GRACE_S + 2)
    assert time.monotonic() - started < READ_GRACE_S + 1
    assert buffer.text() == "before"
    os.close(read_end)
    os.close(write_end)


def test_feeding_stdin_to_a_command_that_is_gone_does_not_raise():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the command exited without reading
    pipe = os.fdopen(write_end, "wb")
    feed_stdin("x" * 100_000, pipe.write, pipe.close)
    assert pipe.closed
    written = []
    feed_stdin("héllo", written.append, lambda: written.append(b"<closed>"))
    assert written == ["héllo".encode(), b"<closed>"]


def test_join_all_shares_one_deadline():
    release = threading.Event()
    stuck = [start_thread(release.wait) for _ in range(3)]
    started = time.monotonic()
    assert not join_all(stuck, 0.3)
    assert time.monotonic() - started < 1.0
    release.set()
    assert join_all(stuck, 5)
