"""The container-side scripts of remote transfers (listing and packer), run here with this
machine's Python on a folder, and the harness's side that reads them: no docker needed."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

from pytest_mlab.sandbox.docker.fetch import Fetched, batches, packer_argv, read_packed, write_sparse
from pytest_mlab.sandbox.docker.listing import lister_argv, parse_listing
from pytest_mlab.sandbox.tree_walk import Bound


def _packed(folder: Path, names: list[str]) -> dict[str, tuple[Fetched, bytes]]:
    """What the packer sent per file: the header, and the body (its first MiB, so a broken packer
    that sends a 2 GiB file whole fails the test instead of filling memory)."""
    found = {}

    def keep(fetched: Fetched, body) -> None:
        kept = b""
        while chunk := body.read(7 << 10):  # odd chunk edges
            kept = (kept + chunk)[: (1 << 20) + 1]
        found[fetched.name] = (fetched, kept)

    with subprocess.Popen(packer_argv(sys.executable, str(folder), names), stdout=subprocess.PIPE) as run:
        read_packed(iter(lambda: run.stdout.read(7 << 10), b""), keep)
    assert run.returncode == 0
    return found


def test_the_packer_sends_a_sparse_file_without_its_holes_and_it_is_written_sparse(tmp_path):
    with open(tmp_path / "sparse.bin", "wb") as handle:
        handle.seek(1 << 30)
        handle.write(b"middle")
        handle.truncate(2 << 30)
    fetched, body = _packed(tmp_path, ["sparse.bin"])["sparse.bin"]
    assert fetched.size == 2 << 30 and len(body) < 1 << 20 and fetched.extents == ((1 << 30, len(body)),)
    target = tmp_path / "copy.bin"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        write_sparse(fd, fetched, io.BytesIO(body))
    finally:
        os.close(fd)
    info = target.stat()
    assert info.st_size == 2 << 30 and info.st_blocks * 512 < 1 << 20
    with open(target, "rb") as handle:
        handle.seek(1 << 30)
        assert handle.read(6) == b"middle"


def test_names_that_are_not_utf8_travel_and_a_failure_names_its_file(tmp_path):
    os.makedirs(os.fsencode(tmp_path) + b"/d\xff")
    with open(os.fsencode(tmp_path) + b"/d\xff/caf\xe9", "wb") as handle:
        handle.write(b"bytes")
    name = os.fsdecode(b"d\xff/caf\xe9")
    found = _packed(tmp_path, [name, "missing.txt", os.fsdecode(b"d\xff")])
    assert found[name][1] == b"bytes"
    assert found["missing.txt"][0].error and found[os.fsdecode(b"d\xff")][0].error == "not a regular file"


def test_a_file_the_harness_sent_is_listed_as_the_same_only_while_unchanged(tmp_path):
    (tmp_path / "step.py").write_bytes(b"print(1)")
    (tmp_path / "other.py").write_bytes(b"print(2)")
    sent = {"step.py": hashlib.sha256(b"print(1)").hexdigest(), "other.py": hashlib.sha256(b"print(3)").hexdigest()}
    output = subprocess.run(lister_argv(sys.executable, str(tmp_path), Bound(), sent), capture_output=True,
                            check=True).stdout
    assert parse_listing(output, Bound()).same == {"step.py"}


def test_names_go_in_batches_that_fit_one_argument():
    names = [f"folder/file-{index:05d}.txt" for index in range(20_000)]
    runs = list(batches(names))
    assert [name for run in runs for name in run] == names and len(runs) > 1
    assert all(len(",".join(run)) * 2 + 66 * len(run) < 128 << 10 for run in runs)


def test_the_listing_reports_its_bounds_in_a_snapshot_s_words(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "f.txt").write_bytes(b"x" * 5000)

    def listing(bound: Bound):
        output = subprocess.run(lister_argv(sys.executable, str(tmp_path), bound), capture_output=True,
                                check=True).stdout
        return parse_listing(output, bound)

    whole = listing(Bound(depth=10, entries=100))
    assert set(whole.entries) == {"a", "a/b", "a/b/c", "f.txt"} and not whole.over
    assert whole.disk_use() >= 4096
    assert "limits.workspace_depth" in listing(Bound(depth=1, entries=100)).over
    assert "limits.workspace_files" in listing(Bound(depth=10, entries=2)).over
