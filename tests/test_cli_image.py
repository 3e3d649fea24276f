"""``pytest-mlab image``: the runtime tarball written from this machine's Python, and imported on
each named docker host with one line per host; a malformed host list is a usage error."""

from __future__ import annotations

import tarfile
from types import SimpleNamespace

import pytest

from pytest_mlab.cli import main
from pytest_mlab.sandbox.docker import runtime_tarball
from pytest_mlab.sandbox.docker.hosts import DockerHost
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE


def test_tarball_writes_the_runtime_and_prints_one_line(tmp_path, capsys):
    out = tmp_path / "runtime.tar"
    assert main(["image", "tarball", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{out}: ") and "MB on disk" in lines[0]
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
    assert {"usr/local/bin/python3", "etc/passwd", "tmp"} <= names
    assert not any("/site-packages/" in name for name in names)


def test_tarball_passes_site_packages_on(tmp_path, monkeypatch, capsys):
    asked = []

    def write(out, *, site_packages):
        asked.append(site_packages)
        return runtime_tarball.TarballSummary(out)

    monkeypatch.setattr(runtime_tarball, "write_runtime_tarball", write)
    assert main(["image", "tarball", str(tmp_path / "all.tar.gz"), "--site-packages"]) == 0
    assert main(["image", "tarball", str(tmp_path / "stdlib.tar")]) == 0
    assert asked == [True, False]


@pytest.mark.parametrize("hosts, says", [
    ("ftp://somewhere", "--hosts: 'ftp://somewhere' is not a docker daemon URL"),
    ("tcp://", "--hosts: 'tcp://' names no host"),
    (" , ", "--hosts names no docker daemon"),
])
def test_import_with_bad_hosts_is_a_usage_error_naming_the_option(tmp_path, capsys, hosts, says):
    tarball = tmp_path / "runtime.tar"
    tarball.write_bytes(b"")
    assert main(["image", "import", str(tarball), "--hosts", hosts]) == 2
    assert says in capsys.readouterr().err


def test_import_of_a_missing_tarball_says_to_write_it(tmp_path, capsys):
    missing = tmp_path / "runtime.tar"
    assert main(["image", "import", str(missing), "--hosts", "tcp://h1:2375"]) == 2
    assert f"write it first (pytest-mlab image tarball {missing})" in capsys.readouterr().err


class FakeDaemon:
    """A daemon's import API: it answers 200 and tells a failure inside the JSON stream."""

    def __init__(self, answer: str) -> None:
        self.answer, self.imported = answer, []
        self.api = SimpleNamespace(import_image_from_file=self.import_image_from_file, base_url="tcp://fake")
        self.images = SimpleNamespace(get=lambda tag: SimpleNamespace(id="sha256:feed"))

    def import_image_from_file(self, filename, repository=None, tag=None, changes=None):
        self.imported.append((filename, repository, tag, tuple(changes)))
        return self.answer


def test_import_prints_one_line_per_host_and_fails_when_one_does(tmp_path, monkeypatch, capsys):
    tarball = tmp_path / "runtime.tar"
    tarball.write_bytes(b"")
    daemons = {"tcp://h1:2375": FakeDaemon('{"status":"sha256:feed"}\r\n'),
               "ssh://bench@h2": FakeDaemon('{"errorDetail":{"message":"no space left on device"},'
                                           '"error":"no space left on device"}\r\n')}
    monkeypatch.setattr(DockerHost, "client", lambda host: daemons[host.url])
    assert main(["image", "import", str(tarball), "--hosts", "tcp://h1:2375,ssh://bench@h2"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"docker host tcp://h1:2375: imported {RUNTIME_IMAGE} (sha256:feed)"
    assert lines[1].startswith("docker host ssh://bench@h2: not imported: ")
    assert "no space left on device" in lines[1] and len(lines) == 2
    repository, _, tag = RUNTIME_IMAGE.rpartition(":")
    assert daemons["tcp://h1:2375"].imported == [(str(tarball), repository, tag, tuple(runtime_tarball.IMPORT_CHANGES))]
