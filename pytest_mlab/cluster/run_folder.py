"""A run's folder moved from the node that ran it to the controller's results folder.

The node packs its run folder (trace, snapshots, grading files) into one archive; the controller
unpacks it where the run would have written it, and signs the run's result records again with its
own results folder's key (results/signing.py): the node signed them with the key of its scratch
folder, which the controller checks first, so a record no harness wrote stays unsigned and
--mlab-resume runs that item again.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.results.signing import authentic, signed

TRACE = "trace.jsonl"


def pack(run_dir: Path) -> bytes:
    """The run folder as an uncompressed tar archive (snapshot blobs are already content-addressed;
    hard-linked files travel once)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(run_dir, arcname=".", recursive=True)
    return buffer.getvalue()


def unpack(archive: bytes, run_dir: Path) -> None:
    """Write the archive's files into ``run_dir`` (made fresh by the caller). Only regular files,
    folders and links inside the folder are accepted (tarfile's ``data`` filter)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            tar.extractall(run_dir, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise SandboxError(f"{run_dir}: the run folder sent back by its Ray node cannot be unpacked: {exc}") from None


def resign(trace: Path, node_key: bytes, key: bytes, moved: dict[str, str]) -> dict[str, Any] | None:
    """Sign the trace's result records with ``key`` where ``node_key`` signed them, after putting
    the controller's paths in place of the node's (``moved``: field -> path here). Returns the last
    result record, or None when the trace has none."""
    lines = trace.read_text(encoding="utf-8").splitlines()
    last = None
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") != "result":
            continue
        if authentic(record, node_key):
            record = signed({**{k: v for k, v in record.items() if k != "mac"}, **moved}, key)
        else:  # not the node's harness: leave it as it is, unsigned here
            record = {k: v for k, v in record.items() if k != "mac"}
        lines[index] = json.dumps(record, ensure_ascii=False)
        last = record
    tmp = trace.with_name(f".{TRACE}.{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, trace)
    return last
