"""Archives of task folders: verified before they are unpacked, and unpacked only inside their
folder. Each attack (zip or tar slip, absolute paths, links, devices) is refused before a file is
written, and nothing is left behind."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from pytest_mlab.data.archive import fetch_folder, unpack
from pytest_mlab.errors import DataError
from tests.data.fakes import FileServer


def make_tar(path: Path, members: list[tuple[str, bytes | None, bytes]]) -> Path:
    """``(name, content, type)``: a file with content, or a member of another tar type (link, fifo...)."""
    with tarfile.open(path, "w:gz") as bundle:
        for name, content, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.REGTYPE:
                info.size = len(content or b"")
                bundle.addfile(info, io.BytesIO(content or b""))
            else:
                info.linkname = (content or b"").decode()
                bundle.addfile(info)
    return path


def make_zip(path: Path, members: list[tuple[str, bytes, int | None]]) -> Path:
    """``(name, content, unix mode)``: mode S_IFLNK makes the member a symbolic link to ``content``."""
    with zipfile.ZipFile(path, "w") as bundle:
        for name, content, mode in members:
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.external_attr = mode << 16
            bundle.writestr(info, content)
    return path


def test_a_tar_gz_and_a_zip_unpack_their_files_and_folders(tmp_path: Path) -> None:
    tar = make_tar(tmp_path / "a.tar.gz", [("./task/", None, tarfile.DIRTYPE), ("task/env/train.py", b"x = 1\n",
                                                                               tarfile.REGTYPE)])
    unpack(tar, tmp_path / "from-tar")
    assert (tmp_path / "from-tar" / "task" / "env" / "train.py").read_bytes() == b"x = 1\n"
    zipped = make_zip(tmp_path / "a.zip", [("task/", b"", None), ("task/scripts/eval.py", b"y = 2\n", None)])
    unpack(zipped, tmp_path / "from-zip")
    assert (tmp_path / "from-zip" / "task" / "scripts" / "eval.py").read_bytes() == b"y = 2\n"


TAR_ATTACKS = {
    "tar slip": ([("task/ok.txt", b"ok", tarfile.REGTYPE), ("task/../../evil.txt", b"owned", tarfile.REGTYPE)],
                 "'task/../../evil.txt' is a path that climbs out of the folder with '..'"),
    "absolute path": ([("/tmp/evil.txt", b"owned", tarfile.REGTYPE)], "'/tmp/evil.txt' is an absolute path"),
    "symbolic link": ([("task/link", b"/etc/passwd", tarfile.SYMTYPE)], "'task/link' is a symbolic link"),
    "link then write through it": ([("task/out", b"../..", tarfile.SYMTYPE), ("task/out/evil.txt", b"x",
                                                                            tarfile.REGTYPE)],
                                   "'task/out' is a symbolic link"),
    "hard link": ([("task/hard", b"/etc/passwd", tarfile.LNKTYPE)], "'task/hard' is a hard link"),
    "device": ([("task/fifo", None, tarfile.FIFOTYPE)], "'task/fifo' is a device or pipe"),
}


@pytest.mark.parametrize("attack", sorted(TAR_ATTACKS))
def test_a_tar_that_would_write_outside_its_folder_is_refused_whole(tmp_path: Path, attack: str) -> None:
    members, why = TAR_ATTACKS[attack]
    archive = make_tar(tmp_path / "evil.tar.gz", members)
    target = tmp_path / "deep" / "down" / "target"
    with pytest.raises(DataError, match=f"refused to unpack evil.tar.gz: its member {why}; .*regular files and "
                                        f"folders only. Nothing was unpacked"):
        unpack(archive, target)
    assert not (tmp_path / "deep" / "down").exists() or not any((tmp_path / "deep" / "down").iterdir())
    assert not list(tmp_path.rglob("evil.txt"))


ZIP_ATTACKS = {
    "zip slip": ([("ok.txt", b"ok", None), ("../../evil.txt", b"owned", None)], "climbs out of the folder"),
    "windows slip": ([("..\\..\\evil.txt", b"owned", None)], "climbs out of the folder"),
    "absolute path": ([("/tmp/evil.txt", b"owned", None)], "is an absolute path"),
    "drive path": ([("C:/evil.txt", b"owned", None)], "is an absolute path"),
    "symbolic link": ([("link", b"/etc/passwd", stat.S_IFLNK | 0o777)], "is a symbolic link"),
}


@pytest.mark.parametrize("attack", sorted(ZIP_ATTACKS))
def test_a_zip_that_would_write_outside_its_folder_is_refused_whole(tmp_path: Path, attack: str) -> None:
    members, why = ZIP_ATTACKS[attack]
    archive = make_zip(tmp_path / "evil.zip", members)
    with pytest.raises(DataError, match=f"refused to unpack evil.zip: its member .* {why}"):
        unpack(archive, tmp_path / "out" / "target")
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.rglob("evil.txt")) and not list(tmp_path.rglob("ok.txt"))


def test_a_file_that_is_no_archive_is_named(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("<html>not found</html>")
    with pytest.raises(DataError, match=r"page.html is neither a tar nor a zip archive; the url must give a "
                                        r"\.tar\.gz, \.tgz or \.zip file"):
        unpack(tmp_path / "page.html", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_archive_is_fetched_verified_and_unpacked_once(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    archive = make_tar(served / "bench.tar.gz", [("bench/a.txt", b"a", tarfile.REGTYPE)])
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    with FileServer(served) as server:
        first = fetch_folder(server.url("bench.tar.gz"), digest, tmp_path / "downloads")
        again = fetch_folder(server.url("bench.tar.gz"), digest, tmp_path / "downloads")
    assert first == again and (first / "bench" / "a.txt").read_text() == "a"
    assert len(server.log) == 1  # the unpacked folder is found again without the network


def test_an_archive_that_fails_its_checksum_is_deleted_and_nothing_is_unpacked(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    make_tar(served / "bench.tar.gz", [("bench/a.txt", b"a", tarfile.REGTYPE)])
    downloads = tmp_path / "downloads"
    with FileServer(served) as server, pytest.raises(DataError, match=r"bench.tar.gz from .* has SHA-256 [0-9a-f]{64}, "
                                                                       r"expected 0{64}; it was deleted"):
        fetch_folder(server.url("bench.tar.gz"), "0" * 64, downloads)
    assert list(downloads.iterdir()) == []


def test_a_broken_archive_is_named_and_leaves_nothing(tmp_path: Path) -> None:
    whole = make_tar(tmp_path / "whole.tar.gz", [("task/a.txt", bytes(range(256)) * 400, tarfile.REGTYPE)])
    (tmp_path / "cut.tar.gz").write_bytes(whole.read_bytes()[:600])  # cut short, as a broken upload is
    with pytest.raises(DataError, match=r"unpacking cut.tar.gz failed \(.*\); nothing was unpacked"):
        unpack(tmp_path / "cut.tar.gz", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()
