"""The results folder's signing key and the records it signs (results/signing.py)."""

from __future__ import annotations

import os
import stat

import pytest

from pytest_mlab.errors import UsageError
from pytest_mlab.results import signing
from pytest_mlab.results.signing import KEY_FILE, authentic, results_key, signed
from tests.results.support import in_processes


@pytest.fixture(autouse=True)
def fresh_keys():
    signing._key.cache_clear()
    yield
    signing._key.cache_clear()


def _key_of(out_dir: str, index: int) -> None:
    from pathlib import Path

    signing._key.cache_clear()
    (Path(out_dir) / f"key-{index}").write_bytes(results_key(Path(out_dir)))


def test_the_key_is_made_once_private_and_shared_by_processes(tmp_path):
    in_processes(_key_of, tmp_path, 3)
    keys = {(tmp_path / f"key-{index}").read_bytes() for index in range(3)}
    assert len(keys) == 1 and keys == {results_key(tmp_path)} and len(keys.pop()) == 32
    assert stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode) == 0o600
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([KEY_FILE, "key-0", "key-1", "key-2"])


@pytest.mark.parametrize("spoil", ["readable", "short", "link"])
def test_a_key_file_others_could_read_or_replace_is_refused(tmp_path, spoil):
    key = tmp_path / KEY_FILE
    if spoil == "link":
        (tmp_path / "elsewhere").write_bytes(bytes(32))
        key.symlink_to(tmp_path / "elsewhere")
    else:
        key.write_bytes(bytes(32 if spoil == "readable" else 5))
        key.chmod(0o644 if spoil == "readable" else 0o600)
    with pytest.raises(UsageError, match=f"{KEY_FILE}.*Delete it"):
        results_key(tmp_path)


def test_a_signed_record_reads_back_authentic_and_any_change_is_not():
    key = bytes(range(32))
    record = signed({"type": "result", "passed": False, "score": 0.1, "path": tmp_path_like()}, key)
    assert authentic(record, key) and "t" in record
    assert not authentic({**record, "passed": True}, key)
    assert not authentic({k: v for k, v in record.items() if k != "mac"}, key)
    assert not authentic(record, bytes(32))


def tmp_path_like():
    from pathlib import Path

    return Path("/some/where")  # not JSON: signed as the string the trace keeps
