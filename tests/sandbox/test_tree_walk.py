"""The harness's own walks of folders an agent filled: iterative and bounded, so a chain 3,000 deep
(past the recursion limit and PATH_MAX) or a flood of entries costs a bounded walk and never a
RecursionError. Every walk that used ``os.walk`` is checked on such a chain: the generic walk,
docker's hand-over to the sandbox user, the stamps and the in-container listing of a remote
docker workspace, and the cgroup kill and removal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_mlab.sandbox import SandboxOptions
from pytest_mlab.sandbox.cgroups import Limits, remove_group
from pytest_mlab.sandbox.docker.archive import host_stamps
from pytest_mlab.sandbox.docker.conventions import SANDBOX_UID
from pytest_mlab.sandbox.docker.local_daemon import DockerSandbox
from pytest_mlab.sandbox.docker.listing import lister_argv, parse_listing
from pytest_mlab.sandbox.tree_walk import Bound, walk_tree
from pytest_mlab.sandbox.workspace import LinkedData, remove_tree
from tests.helpers import folder_chain

DEEP = 3_000


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Iterator[Path]:  # noqa: ANN001
    """``top/d/d/...`` 3,000 deep, made once for the module (creating it is the cost), and removed
    after it: pytest's own removal of old temp folders recurses."""
    top = tmp_path_factory.mktemp("chain")
    folder_chain(top, DEEP)
    yield top
    remove_tree(top)


def test_the_walk_goes_down_a_deep_chain_past_the_recursion_limit(chain):
    """Down to where paths pass PATH_MAX (about 2,000 levels here), which it skips, not fails on."""
    found = [path for path, _info in walk_tree(chain, Bound(depth=DEEP, entries=10_000))]
    assert found[0] == os.path.join(chain, "d")
    assert 1_500 < len([path for path in found if path.endswith("/d")]) <= DEEP


def test_the_walk_stops_at_its_depth_and_entry_bounds(chain, tmp_path):
    assert len(list(walk_tree(chain, Bound(depth=10, entries=10_000)))) == 11 + 1  # 11 folders, 1 file
    for i in range(50):
        (tmp_path / f"f{i:02}").write_text("x")
    assert [Path(path).name for path, _info in walk_tree(tmp_path, Bound(entries=5))] == ["f00", "f01", "f02", "f03", "f04"]


def test_remote_stamps_and_the_in_container_listing_survive_a_deep_chain(chain):
    stamps = host_stamps(chain, Bound(depth=100, entries=50_000))
    assert len([rel for rel in stamps if rel.endswith("d")]) == 101
    bound = Bound(depth=100, entries=50_000)
    listed = subprocess.run(lister_argv(sys.executable, str(chain), bound), capture_output=True, check=True)
    listing = parse_listing(listed.stdout, bound)
    assert "limits.workspace_depth" in listing.over, "a chain past the depth bound ends the run as the agent's"
    assert 100 <= len(listing.entries) <= 102  # the folders down to the bound, and the file at the top


def test_the_in_container_listing_stops_at_its_entry_bound(tmp_path):
    for i in range(20):
        (tmp_path / f"f{i:02}").write_text("x")
    bound = Bound(depth=100, entries=5)
    listed = subprocess.run(lister_argv(sys.executable, str(tmp_path), bound), capture_output=True, check=True)
    listing = parse_listing(listed.stdout, bound)
    assert len(listing.entries) == 5 and "limits.workspace_files" in listing.over


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files over to the sandbox user needs root")
def test_dockers_hand_over_walks_a_deep_chain(tmp_path):
    folder_chain(tmp_path / "ws", 1_500)
    fake = SimpleNamespace(_as_root=True, workspace=tmp_path / "ws", files=SimpleNamespace(linked=LinkedData()),
                           options=SandboxOptions(workspace_depth=100))
    try:
        DockerSandbox._hand_over(fake)  # type: ignore[arg-type]
        assert (tmp_path / "ws" / "d" / "d").stat().st_uid == SANDBOX_UID
    finally:
        remove_tree(tmp_path / "ws")


def test_a_deep_chain_of_cgroups_is_killed_and_removed():
    """1,500 nested groups (past the recursion limit; cgroups are slower to make than folders)."""
    limits = Limits(None, None, "deep-cgroups")
    if not limits.groups:
        pytest.skip(f"no writable cgroup hierarchy here: {limits.enforced}")
    try:
        fd = os.open(limits.groups[0], os.O_RDONLY | os.O_DIRECTORY)
        for _ in range(1_500):  # a chain of groups (a cgroup folder takes no files)
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(fd)
        assert remove_group(limits.groups[0])
        assert not limits.groups[0].exists()
    finally:
        limits.close()
