"""A run folder sent back by a Ray node: unpacked here, its result records signed again by this
results folder's key only where the node's harness signed them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pytest_mlab.cluster.run_folder import pack, resign, unpack
from pytest_mlab.results.signing import authentic, signed

NODE_KEY, KEY = b"n" * 32, b"c" * 32


def trace_with(folder: Path, *records: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    trace = folder / "trace.jsonl"
    trace.write_text("".join(json.dumps(record) + "\n" for record in records))
    return trace


def test_a_run_folder_travels_whole_with_its_hard_links(tmp_path: Path) -> None:
    sent = tmp_path / "node" / "run"
    trace_with(sent, {"type": "run"})
    (sent / "snapshots").mkdir()
    (sent / "snapshots" / "blob").write_bytes(b"x" * 1000)
    os.link(sent / "snapshots" / "blob", sent / "snapshots" / "same")
    here = tmp_path / "here" / "run"
    unpack(pack(sent), here)
    assert (here / "trace.jsonl").read_text() == (sent / "trace.jsonl").read_text()
    assert os.stat(here / "snapshots" / "blob").st_ino == os.stat(here / "snapshots" / "same").st_ino


def test_result_records_the_node_signed_are_signed_here_with_the_paths_here(tmp_path: Path) -> None:
    result = signed({"type": "result", "run_id": "t[s0]", "run_dir": "/node/run", "passed": True}, NODE_KEY)
    trace = trace_with(tmp_path / "run", {"type": "run"}, result)
    last = resign(trace, NODE_KEY, KEY, {"run_dir": str(tmp_path / "run")})
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert records[1] == last and authentic(last, KEY) and not authentic(last, NODE_KEY)
    assert last["run_dir"] == str(tmp_path / "run") and last["t"] == result["t"]


def test_a_result_record_the_node_did_not_sign_stays_unsigned(tmp_path: Path) -> None:
    forged = signed({"type": "result", "run_id": "t[s0]", "passed": True}, b"f" * 32)
    trace = trace_with(tmp_path / "run", forged)
    last = resign(trace, NODE_KEY, KEY, {})
    assert not authentic(last, KEY) and "mac" not in last
