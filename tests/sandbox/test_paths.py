"""The project's only path check: lexical normalisation and symlink-aware confinement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox import normalize_relpath, resolve_in_workspace


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("train.py", "train.py"),
        ("./train.csv", "train.csv"),
        ("a//b/./c", "a/b/c"),
        ("a/b/", "a/b"),
        ("a/../b", "b"),
        ("a/b/../../c", "c"),
        ("a/..", "."),
        ("", "."),
        (".", "."),
        ("./", "."),
        ("  data/train.csv \n", "data/train.csv"),
        ("data\\train.csv", "data/train.csv"),
        ("dir with space/f.txt", "dir with space/f.txt"),
        ("données/ü.txt", "données/ü.txt"),
        ("...", "..."),
        ("..hidden", "..hidden"),
        ("a~/b", "a~/b"),
        ("x:y.txt", "x:y.txt"),
    ],
)
def test_normalize_relpath_canonical_forms(given: str, expected: str) -> None:
    assert normalize_relpath(given) == expected


def test_dot_slash_and_plain_name_are_the_same_file(tmp_path: Path) -> None:
    assert normalize_relpath("./train.csv") == normalize_relpath("train.csv")
    assert resolve_in_workspace(tmp_path, "./train.csv") == resolve_in_workspace(tmp_path, "train.csv")


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("..", "leaves the workspace"),
        ("../x", "leaves the workspace"),
        ("a/../../x", "leaves the workspace"),
        ("./../x", "leaves the workspace"),
        ("a/b/../../../x", "leaves the workspace"),
        ("..\\x", "leaves the workspace"),
        ("/etc/passwd", "is absolute"),
        ("//etc/passwd", "is absolute"),
        ("  /etc/passwd", "is absolute"),
        ("\\etc\\passwd", "is absolute"),
        ("~/.ssh/id_rsa", "home directory"),
        ("~", "home directory"),
        ("~root/x", "home directory"),
        ("C:\\Windows\\system.ini", "Windows drive"),
        ("c:/x", "Windows drive"),
        ("C:", "Windows drive"),
        ("train.py\x00.txt", "NUL byte"),
        ("\x00", "NUL byte"),
    ],
)
def test_normalize_relpath_rejects_escapes(given: str, reason: str) -> None:
    with pytest.raises(EnvError) as info:
        normalize_relpath(given)
    message = str(info.value)
    assert reason in message
    assert repr(given) in message  # names the path as the agent wrote it
    assert "relative to the workspace" in message  # tells the agent what to do instead


def test_normalize_relpath_rejects_non_strings() -> None:
    with pytest.raises(EnvError, match="must be a string"):
        normalize_relpath(None)  # type: ignore[arg-type]


@pytest.fixture()
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace ``ws`` with a sibling ``ws-evil`` whose name starts with the workspace's."""
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    (root / "data" / "train.csv").write_text("a,b\n")
    evil = tmp_path / "ws-evil"
    evil.mkdir()
    (evil / "secret.txt").write_text("secret")
    return root, evil


def test_resolve_returns_real_absolute_path(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    resolved = resolve_in_workspace(root, "./data//train.csv")
    assert resolved == (root / "data" / "train.csv").resolve()
    assert resolved.is_absolute()
    assert resolve_in_workspace(root, ".") == root.resolve()
    assert resolve_in_workspace(root, "new/dir/file.txt") == root.resolve() / "new/dir/file.txt"


def test_resolve_rejects_lexical_escapes(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    for bad in ("../ws-evil/secret.txt", "data/../../ws-evil/secret.txt", "/etc/passwd", "~/.ssh"):
        with pytest.raises(EnvError):
            resolve_in_workspace(root, bad)


def test_symlink_pointing_inside_is_allowed(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "alias.csv").symlink_to("data/train.csv")
    (root / "datalink").symlink_to(root / "data")
    (root / "self").symlink_to(".")
    assert resolve_in_workspace(root, "alias.csv") == (root / "data" / "train.csv").resolve()
    assert resolve_in_workspace(root, "datalink/train.csv") == (root / "data" / "train.csv").resolve()
    assert resolve_in_workspace(root, "self") == root.resolve()


def test_symlink_to_etc_is_rejected(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "etc").symlink_to("/etc")
    (root / "passwd").symlink_to("/etc/passwd")
    for bad in ("etc", "etc/passwd", "passwd", "./etc/../etc/passwd"):
        with pytest.raises(EnvError, match="outside the workspace"):
            resolve_in_workspace(root, bad)


def test_symlink_chain_leading_out_is_rejected(layout: tuple[Path, Path]) -> None:
    root, evil = layout
    (root / "hop3").symlink_to(evil / "secret.txt")
    (root / "data" / "hop2").symlink_to("../hop3")
    (root / "hop1").symlink_to("data/hop2")
    with pytest.raises(EnvError, match="outside the workspace"):
        resolve_in_workspace(root, "hop1")


def test_symlinked_parent_directory_leading_out_is_rejected(layout: tuple[Path, Path]) -> None:
    root, evil = layout
    (root / "data" / "up").symlink_to("../..")  # the directory holding ws and ws-evil
    with pytest.raises(EnvError, match="outside the workspace"):
        resolve_in_workspace(root, "data/up/ws-evil/secret.txt")
    with pytest.raises(EnvError, match="outside the workspace"):
        resolve_in_workspace(root, "data/up/ws-evil/not-yet-created.txt")


def test_sibling_directory_sharing_the_name_prefix_is_rejected(layout: tuple[Path, Path]) -> None:
    root, evil = layout
    assert str(evil).startswith(str(root))  # the trap a string-prefix check falls into
    (root / "evil").symlink_to(evil)
    (root / "evil-secret").symlink_to(evil / "secret.txt")
    for bad in ("evil", "evil/secret.txt", "evil-secret", "evil/new.txt"):
        with pytest.raises(EnvError, match="outside the workspace"):
            resolve_in_workspace(root, bad)


def test_dangling_symlink_to_outside_is_rejected(layout: tuple[Path, Path]) -> None:
    root, evil = layout
    (root / "later").symlink_to(evil / "does-not-exist-yet")
    with pytest.raises(EnvError, match="outside the workspace"):
        resolve_in_workspace(root, "later")


def test_root_given_through_a_symlink_still_works(layout: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = layout
    alias = tmp_path / "alias-of-ws"
    alias.symlink_to(root)
    assert resolve_in_workspace(alias, "data/train.csv") == (root / "data" / "train.csv").resolve()
    with pytest.raises(EnvError):
        resolve_in_workspace(alias, "../ws-evil/secret.txt")


def test_symlink_loop_does_not_crash(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "loop-a").symlink_to("loop-b")
    (root / "loop-b").symlink_to("loop-a")
    try:
        resolved = resolve_in_workspace(root, "loop-a/x")
    except EnvError:
        return
    assert resolved.is_relative_to(root.resolve())


def test_nul_byte_rejected_before_touching_disk(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    with pytest.raises(EnvError, match="NUL"):
        resolve_in_workspace(root, "data/train.csv\x00")


def test_result_never_leaves_root_for_many_inputs(layout: tuple[Path, Path]) -> None:
    """Property check: whatever comes back (if anything) is inside the real root."""
    root, evil = layout
    (root / "out").symlink_to(evil)
    real_root = root.resolve()
    pieces = ["..", ".", "data", "out", "x", "", "~", "/", "\\"]
    for a in pieces:
        for b in pieces:
            for c in pieces:
                candidate = "/".join((a, b, c))
                try:
                    resolved = resolve_in_workspace(root, candidate)
                except EnvError:
                    continue
                assert resolved == real_root or resolved.is_relative_to(real_root), candidate
                assert os.path.realpath(resolved) == str(resolved)
