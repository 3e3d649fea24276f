"""A task image build that fails leaves nothing of its own behind, and takes nothing that is not.

Other builds may run on the same daemon at the same time, so each test marks what it builds with a
label of its own and looks only at containers and images that carry it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.image import DEFAULT_IMAGE, build_task_image, images_made
from pytest_mlab.sandbox.registry import sandbox_unavailable

REASON = sandbox_unavailable("docker")
needs_docker = pytest.mark.skipif(REASON is not None, reason=f"docker cannot run here: {REASON}")


def test_the_images_a_build_made_are_its_uncached_steps_past_from():
    log = [{"stream": text} for text in (
        "Step 1/5 : FROM base:1", "\n", " ---> 10ae7b849ed9\n",
        "Step 2/5 : LABEL a=b", "\n", " ---> Running in 55816a98a8aa\n",
        "Removing intermediate container 55816a98a8aa\n", " ---> 3d89fe74e2a2\n",
        "Step 3/5 : COPY f /f", "\n", " ---> Using cache\n", " ---> 1a7d3df8e3cf\n",
        "Step 4/5 : ENV X=1", "\n", " ---> 77aa3df8e3cf\n",
        "Step 5/5 : RUN /no/such/program", "\n", " ---> Running in f66b20ce4cf7\n")]
    assert images_made([*log, {"error": "the step failed"}]) == ["3d89fe74e2a2", "77aa3df8e3cf"]


@pytest.fixture
def marker():
    """A label only this test's builds carry; whatever carries it is removed afterwards."""
    from pytest_mlab.sandbox.docker.daemon import connect

    label = f"pytest-mlab.test-build={uuid.uuid4().hex}"
    yield label
    client = connect()
    for container in client.containers.list(all=True, filters={"label": label}, ignore_removed=True):
        container.remove(force=True)
    for image in sorted(client.images.list(all=True, filters={"label": label}),
                        key=lambda image: image.attrs["Created"], reverse=True):
        client.images.remove(image.id, force=True, noprune=True)


def marked(label: str) -> tuple[set[str], set[str]]:
    """The ids of the containers, and of the untagged images, that carry ``label``."""
    from pytest_mlab.sandbox.docker.daemon import connect

    client = connect()
    found = client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    containers = {container.id for container in found}
    images = {i.id for i in client.images.list(all=True, filters={"label": label}) if not i.tags}
    return containers, images


def write_dockerfile(folder: Path, *steps: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "Dockerfile").write_text("\n".join([f"FROM {DEFAULT_IMAGE}", *steps]) + "\n")
    return folder / "Dockerfile"


def failing_dockerfile(folder: Path, marker: str) -> Path:
    """Steps that commit an image each (a LABEL and a COPY), then the failing RUN."""
    folder.mkdir()
    (folder / "tool.txt").write_text("a task's own tool\n")
    return write_dockerfile(folder, f"LABEL {marker}", "COPY tool.txt /opt/task/tool.txt",
                            "RUN /no/such/program")


@needs_docker
def test_a_failed_build_leaves_no_container_or_image_of_its_own(tmp_path, marker):
    from pytest_mlab.sandbox.docker.daemon import connect

    dockerfile = failing_dockerfile(tmp_path / "docker", marker)
    before = marked(marker)
    with pytest.raises(SandboxError, match=r"building the task's docker image from .*Dockerfile failed"):
        build_task_image(connect(), dockerfile)
    assert marked(marker) == before


@needs_docker
def test_a_failed_build_keeps_the_cached_images_it_did_not_make(tmp_path, marker):
    from pytest_mlab.sandbox.docker.daemon import connect

    client = connect()
    elsewhere = write_dockerfile(tmp_path / "elsewhere", f"LABEL {marker}", "RUN /no/such/program")
    chunks = list(client.api.build(path=str(elsewhere.parent), rm=True, forcerm=True, pull=False,
                                   network_mode="none", decode=True))
    assert any("error" in chunk for chunk in chunks)
    _, foreign = marked(marker)  # another build's leftover, which this build will find in the cache
    assert len(foreign) == 1
    dockerfile = failing_dockerfile(tmp_path / "ours", marker)
    with pytest.raises(SandboxError, match=r"building the task's docker image from .*Dockerfile failed"):
        build_task_image(client, dockerfile)
    assert marked(marker) == (set(), foreign)
