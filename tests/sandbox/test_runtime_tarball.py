"""The runtime tarball: this machine's Python as a root filesystem a docker host with no registry
can import, holding what the interpreter, the shell and its tools load, and nothing of the host's
packages unless asked for; imported, it runs Python and the shell as the sandbox user."""

from __future__ import annotations

import gzip
import os
import posixpath
import shutil
import sys
import sysconfig
import tarfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pytest_mlab.sandbox.docker.conventions import SANDBOX_UID
from pytest_mlab.sandbox.docker.rootfs import Layout, ldd_closure, parse_ldd
from pytest_mlab.sandbox.docker.runtime_tarball import (PYTHON_LINK, TOOLS, import_error, import_runtime_image,
                                                        write_layout, write_runtime_tarball)
from pytest_mlab.sandbox.registry import sandbox_unavailable

REASON = sandbox_unavailable("docker")
needs_docker = pytest.mark.skipif(REASON is not None, reason=f"docker cannot run here: {REASON}")
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"])
INTERPRETER = os.path.realpath(sys.executable)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Iterator[Path]:
    """The stdlib-only runtime tarball of the Python running the tests, written once (about 100 MB,
    so not kept after the module)."""
    path = write_runtime_tarball(tmp_path_factory.mktemp("runtime") / "runtime.tar", site_packages=False).path
    yield path
    path.unlink()


@pytest.fixture(scope="module")
def members(tarball) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(tarball) as tar:
        return {"/" + member.name: member for member in tar.getmembers()}


def resolve(members: dict[str, tarfile.TarInfo], path: str) -> tarfile.TarInfo:
    """What ``path`` is inside the image, following its links as the container's kernel would."""
    for _ in range(40):
        parts = path.strip("/").split("/")
        for index in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:index])
            member = members.get(prefix)
            assert member is not None, f"{prefix} (on the way to {path}) is not in the image"
            if member.issym():
                base = posixpath.dirname(prefix)
                path = posixpath.normpath(posixpath.join(base, member.linkname, *parts[index:]))
                break
        else:
            return member
    raise AssertionError(f"{path}: a link loop")


def test_the_tarball_holds_the_interpreter_its_stdlib_and_the_shell(members):
    assert resolve(members, INTERPRETER).isfile() and members[INTERPRETER].mode & 0o111
    assert resolve(members, PYTHON_LINK) is members[INTERPRETER]
    assert resolve(members, f"{STDLIB}/os.py").isfile()
    assert resolve(members, f"{STDLIB}/json/__init__.py").isfile()
    assert resolve(members, "/bin/sh").isfile()
    for name in TOOLS:
        assert resolve(members, shutil.which(name, path="/bin:/usr/bin")).isfile(), name
    assert any(path.startswith(f"{STDLIB}/lib-dynload/_ssl") for path in members)


def test_every_library_the_interpreter_and_the_shell_load_resolves_in_the_image(members):
    libraries, missing = ldd_closure([INTERPRETER, os.path.realpath("/bin/sh")])
    assert not missing
    assert any(os.path.basename(path).startswith("libc.so") for path in libraries)
    assert any(os.path.basename(path).startswith("ld-linux") for path in libraries)  # the dynamic loader
    for library in libraries:  # by the path ldd gave, through /lib -> usr/lib where this machine has it
        assert resolve(members, library).isfile(), library


def test_site_packages_and_the_excluded_stdlib_parts_are_left_out(members):
    for name in ("site-packages", "test", "idlelib", "tkinter", "turtledemo"):
        assert f"{STDLIB}/{name}" not in members, name
    assert not any("/site-packages/" in path or "/_tkinter" in path or path.endswith(".a") for path in members)
    assert f"{STDLIB}/unittest/__init__.py" in members  # only the test packages go, not what they test


def test_members_are_owned_by_root_in_path_order_with_the_container_basics(tarball, members):
    assert {(member.uid, member.gid) for member in members.values()} == {(0, 0)}
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    assert names == sorted(names, key=lambda name: name.split("/"))
    assert members["/tmp"].isdir() and members["/tmp"].mode == 0o1777
    assert all(members[path].isdir() for path in ("/proc", "/dev", "/sys"))
    with tarfile.open(tarball) as tar:
        passwd = tar.extractfile("etc/passwd").read().decode()
        group = tar.extractfile("etc/group").read().decode()
    assert passwd.startswith("root:x:0:0:") and f"nonroot:x:{SANDBOX_UID}:{SANDBOX_UID}:" in passwd
    assert f"nonroot:x:{SANDBOX_UID}:" in group


def test_links_on_the_way_to_a_path_stay_links(tmp_path):
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "libx.so.1").write_bytes(b"\x7fELF")
    (tmp_path / "lib").symlink_to("usr/lib")
    (tmp_path / "usr" / "lib" / "libx.so").symlink_to("libx.so.1")
    layout = Layout()
    assert layout.add_host_path(f"{tmp_path}/lib/libx.so") == f"{tmp_path}/usr/lib/libx.so.1"
    entries = layout.entries
    assert (entries[f"{tmp_path}/lib"].kind, entries[f"{tmp_path}/lib"].target) == ("link", "usr/lib")
    assert (entries[f"{tmp_path}/usr/lib/libx.so"].kind, entries[f"{tmp_path}/usr/lib/libx.so"].target) == \
           ("link", "libx.so.1")
    assert entries[f"{tmp_path}/usr/lib/libx.so.1"].kind == "file"
    assert entries[f"{tmp_path}/usr/lib"].kind == "dir"


def test_a_gz_name_is_compressed_and_the_same_layout_gives_the_same_bytes(tmp_path):
    source = tmp_path / "tool"
    source.write_text("#!/bin/sh\n")
    source.chmod(0o700)  # readable by the sandbox user in the image all the same

    def layout() -> Layout:
        made = Layout()
        made.add_link("/usr/local/bin/tool", str(source))
        made.add_host_path(str(source))
        made.add_file("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        made.add_dir("/tmp", 0o1777)
        return made

    first = write_layout(layout(), tmp_path / "a" / "root.tar.gz")
    second = write_layout(layout(), tmp_path / "b" / "root.tar.gz")
    data = first.path.read_bytes()
    assert data[:2] == b"\x1f\x8b" and data == second.path.read_bytes()
    assert (first.files, first.links, first.size) == (2, 1, len(data))
    with tarfile.open(fileobj=gzip.open(first.path)) as tar:
        assert tar.getmember(str(source).lstrip("/")).mode == 0o755
    assert sorted(path.name for path in (tmp_path / "a").iterdir()) == ["root.tar.gz"]  # no partial file left


def test_ldd_output_gives_paths_and_missing_names():
    text = ("/usr/bin/a:\n\tlinux-vdso.so.1 (0x00007ffd)\n"
            "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f3a)\n"
            "\tlibgone.so.2 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f3b)\n"
            "/usr/bin/b:\n\tnot a dynamic executable\n")
    assert parse_ldd(text) == ({"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}, {"libgone.so.2"})


def test_a_failure_inside_the_import_stream_is_found():
    assert import_error('{"status":"sha256:0123"}\r\n') is None
    assert import_error(b'{"status":"Downloading"}\r\n{"errorDetail":{"message":"no space left"},'
                        b'"error":"no space left"}\r\n') == "no space left"


@needs_docker
def test_the_imported_image_runs_python_and_the_shell_as_the_sandbox_user(tarball):
    from docker.types import Mount

    from pytest_mlab.sandbox.docker.daemon import connect

    client = connect()
    tag = f"pytest-mlab/runtime-test:{uuid.uuid4().hex[:12]}"
    commands = {"python": ["python3", "-c", "import json, sqlite3, ssl, ctypes; print('ok')"],
                "shell": ["/bin/sh", "-c", "cat /etc/passwd; mkdir -p /tmp/x && echo made"]}
    output = {}
    try:
        image_id = import_runtime_image(client, tarball, tag)
        image = client.images.get(tag)
        assert image.id == image_id and image.labels["pytest-mlab.image"] == "runtime"
        for name, argv in commands.items():
            # /tmp on a volume, as the remote sandbox has it: the image's mode 1777 lets the user write
            container = client.containers.create(tag, argv, user=str(SANDBOX_UID), network_mode="none",
                                                 read_only=True, init=True,
                                                 mounts=[Mount("/tmp", None, type="volume")])
            try:
                container.start()
                status = container.wait(timeout=60)
                output[name] = (status["StatusCode"], container.logs().decode())
            finally:
                container.remove(force=True, v=True)
    finally:
        try:
            client.images.remove(tag, force=True)
        except Exception:
            pass
    assert output["python"] == (0, "ok\n")
    code, text = output["shell"]
    assert code == 0 and text.startswith("root:x:0:0:") and f"nonroot:x:{SANDBOX_UID}:" in text
    assert text.endswith("made\n")


@needs_docker
@pytest.mark.slow
def test_a_tarball_of_a_virtual_environment_holds_its_packages(tmp_path):
    """The task runtime is a virtual environment (the locked one, or one named by --mlab-runtime):
    the image's python3 sees the environment's packages, and not the base interpreter's nor the
    harness's."""
    import subprocess

    from pytest_mlab.sandbox.docker.daemon import connect

    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    package = venv / "lib" / version / "site-packages" / "only_in_the_venv"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("WHERE = 'the venv'\n")
    out = tmp_path / "runtime.tar"
    repo = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c",
                    f"import sys; sys.path.insert(0, {str(repo)!r}); from pathlib import Path; "
                    "from pytest_mlab.sandbox.docker.runtime_tarball import write_runtime_tarball; "
                    f"write_runtime_tarball(Path({str(out)!r}), site_packages=True)"], check=True, timeout=600,
                   env={**os.environ, "MLAB_TASK_RUNTIME": str(venv / "bin" / "python")})
    client = connect()
    tag = f"pytest-mlab/runtime-venv-test:{uuid.uuid4().hex[:12]}"
    try:
        import_runtime_image(client, out, tag)
        printed = client.containers.run(tag, ["python3", "-I", "-c", "import sys, only_in_the_venv as p; "
                                              "import importlib.util as u; "
                                              "print(p.WHERE, sys.prefix != sys.base_prefix, "
                                              "u.find_spec('pytest_mlab') is None)"],
                                        user=str(SANDBOX_UID), network_mode="none", remove=True)
    finally:
        try:
            client.images.remove(tag, force=True)
        except Exception:
            pass
    assert printed == b"the venv True True\n"
    with tarfile.open(out) as tar:
        names = tar.getnames()
    base_packages = os.path.relpath(os.path.join(sysconfig.get_paths(vars={"base": sys.base_prefix})["purelib"]), "/")
    assert not any(name.startswith(base_packages + "/") for name in names)
