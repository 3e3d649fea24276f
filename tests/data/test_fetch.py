"""download(): resumes cut transfers, verifies size and SHA-256, and is idempotent."""

from __future__ import annotations

import hashlib
import io

import pytest

from pytest_mlab.data.fetch import Progress, download
from pytest_mlab.errors import DataError
from tests.data.fakes import FileServer

PAYLOAD = bytes(range(256)) * 4000  # about 1 MB: several chunks


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    (root / "data.bin").write_bytes(PAYLOAD)
    return root


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_download_verifies_and_is_idempotent(served, tmp_path):
    dest = tmp_path / "out" / "data.bin"
    with FileServer(served) as server:
        assert download(server.url("data.bin"), dest, sha256=sha(PAYLOAD), size=len(PAYLOAD)) == dest
        assert dest.read_bytes() == PAYLOAD and not dest.with_name("data.bin.part").exists()
        download(server.url("data.bin"), dest, sha256=sha(PAYLOAD))
    assert len(server.log) == 1  # the verified file was not fetched again


def test_a_cut_transfer_is_resumed_with_a_range_request(served, tmp_path):
    dest = tmp_path / "data.bin"
    with FileServer(served, cut={"data.bin": 1}) as server:
        download(server.url("data.bin"), dest, sha256=sha(PAYLOAD))
    assert dest.read_bytes() == PAYLOAD
    assert server.log[0] == ("data.bin", None)
    resumed_at = int(server.log[1][1].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at < len(PAYLOAD)


def test_a_transfer_cut_every_time_keeps_the_part_file_for_the_next_call(served, tmp_path):
    dest = tmp_path / "data.bin"
    with FileServer(served, cut={"data.bin": 99}) as server:
        with pytest.raises(DataError, match=r"interrupted after \d+ bytes.*run the same command again to resume"):
            download(server.url("data.bin"), dest, sha256=sha(PAYLOAD))
        part = tmp_path / "data.bin.part"
        assert 0 < part.stat().st_size < len(PAYLOAD) and not dest.exists()
        server.cut.clear()
        download(server.url("data.bin"), dest, sha256=sha(PAYLOAD))
    assert dest.read_bytes() == PAYLOAD and not part.exists()
    assert server.log[-1][1] is not None  # the last call resumed rather than started over


def test_a_checksum_mismatch_names_the_file_and_deletes_it(served, tmp_path):
    dest = tmp_path / "data.bin"
    with FileServer(served) as server:
        with pytest.raises(DataError, match=r"data\.bin .* has SHA-256 [0-9a-f]{64}, expected 0{64}.*deleted"):
            download(server.url("data.bin"), dest, sha256="0" * 64)
        assert not dest.exists() and not (tmp_path / "data.bin.part").exists()
        with pytest.raises(DataError, match=rf"has {len(PAYLOAD)} bytes, expected 5"):
            download(server.url("data.bin"), dest, size=5)


def test_a_corrupt_existing_file_is_fetched_again(served, tmp_path):
    dest = tmp_path / "data.bin"
    dest.write_bytes(b"garbage")
    with FileServer(served) as server:
        download(server.url("data.bin"), dest, sha256=sha(PAYLOAD))
    assert dest.read_bytes() == PAYLOAD


def test_a_missing_file_is_an_http_error_not_a_retry(served, tmp_path):
    with FileServer(served) as server:
        with pytest.raises(DataError, match=r"HTTP 404 .*check that the address is still valid"):
            download(server.url("nope.bin"), tmp_path / "nope.bin")
    assert len(server.log) == 1


def test_progress_lines_name_the_file_and_the_share_done():
    stream = io.StringIO()
    progress = Progress("train.zip", 0, 4_000_000, stream=stream)
    progress.advance(1_000_000)
    progress.done()
    assert stream.getvalue().splitlines()[-1] == "train.zip: 1.0 MB / 4.0 MB (25%)"
