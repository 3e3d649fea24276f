"""The image a docker sandbox runs, and the host runtime the default image borrows.

No image registry is needed by default: the default image is an empty root filesystem imported
locally (``docker import`` of an empty tar, through the SDK), and each container bind-mounts the
host's system directories, a short allow-list of /etc files and the task runtime's Python
installation (pytest_mlab/task_runtime), all read-only. The container then runs the same
interpreter and packages as the local and bwrap sandboxes, with its own namespaces, limits and
user. A task's ``sandbox: {image: ...}`` is used as it is and must already be on the machine; a
task's ``sandbox: {dockerfile: ...}`` is built here, once per content. An image built ``FROM
pytest-mlab/host-runtime:1`` inherits its label and keeps the host runtime mounts, so a task can
add files or tools offline. A build that fails leaves neither an
intermediate container nor an image it committed.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any, Iterable

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.hosts import DockerHost, host_lock

#: The locally built image every container uses unless another one is named.
DEFAULT_IMAGE = "pytest-mlab/host-runtime:1"
#: The label that marks the default image and every image built from it.
HOST_RUNTIME_LABEL = ("pytest-mlab.image", "host-runtime")
TASK_IMAGE_REPOSITORY = "pytest-mlab/task"
#: The image remote hosts run unless a task names its own: it brings its own Python and packages,
#: made by the project's Dockerfile (hosts that reach a registry) or imported from a runtime
#: tarball (``pytest-mlab image``), since a remote daemon cannot mount the harness's runtime.
RUNTIME_IMAGE = "pytest-mlab/runtime:1"


def uses_host_runtime(client: Any, image: str) -> bool:
    """Whether containers of ``image`` get the host runtime mounted (the default image and images
    built FROM it); other images bring their own Python."""
    if image == DEFAULT_IMAGE:
        return True
    labels = client.images.get(image).labels or {}
    return labels.get(HOST_RUNTIME_LABEL[0]) == HOST_RUNTIME_LABEL[1]


def build_task_image(client: Any, dockerfile: Path, *, host: DockerHost | None = None) -> str:
    """Build a task's Dockerfile (its folder is the context, sent through the SDK to ``host``'s
    daemon) without network; the tag is a digest of the context, so a changed Dockerfile or
    requirements file gets a new image and an unchanged one is built once per host, however
    many workers ask for it at once."""
    from docker.errors import ImageNotFound

    context = dockerfile.parent
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(path.relative_to(context).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    tag = f"{TASK_IMAGE_REPOSITORY}:{digest.hexdigest()[:16]}"
    host = host or DockerHost()
    with host_lock(host, tag):
        try:
            client.images.get(tag)
            return tag
        except ImageNotFound:
            pass
        _build(client, dockerfile, tag, remote=host.remote)
    return tag


def _build(client: Any, dockerfile: Path, tag: str, *, remote: bool) -> None:
    from docker.errors import BuildError, DockerException

    if not remote:
        ensure_image(client, DEFAULT_IMAGE)  # so that FROM pytest-mlab/host-runtime:1 works offline
    try:
        # The SDK asks for the classic builder, where rm removes a step's container once the step
        # succeeds and forcerm also removes the failed step's (BuildKit makes no such containers).
        client.images.build(path=str(dockerfile.parent), dockerfile=dockerfile.name, tag=tag, rm=True,
                            forcerm=True, pull=False, network_mode="none")
    except BuildError as exc:
        chunks = list(exc.build_log)
        remove_images_made(client, chunks)
        log = "".join(str(chunk.get("stream") or chunk.get("error") or "") for chunk in chunks)
        raise SandboxError(f"building the task's docker image from {dockerfile} failed: {exc.msg}\n"
                           f"{log[-2000:]}") from exc
    except DockerException as exc:
        raise SandboxError(f"building the task's docker image from {dockerfile} failed: "
                           f"{getattr(exc, 'explanation', None) or exc}") from exc


_STEP = re.compile(r"Step \d+/\d+ : (\S+).*")
_STEP_RESULT = re.compile(r" ---> ([0-9a-f]{12,64})")


def images_made(build_log: Iterable[dict]) -> list[str]:
    """The ids of the images a classic-builder log says this build committed, oldest first: each
    finished step's result, except a FROM step's (an image that was there) and a step answered from
    the cache (an image another build may have made and still use)."""
    text = "".join(str(chunk.get("stream") or "") for chunk in build_log)
    made: list[str] = []
    instruction, cached = "", False
    for line in text.splitlines():
        if step := _STEP.fullmatch(line):
            instruction, cached = step.group(1).upper(), False
        elif line == " ---> Using cache":
            cached = True
        elif (result := _STEP_RESULT.fullmatch(line)) and instruction:
            if instruction != "FROM" and not cached:
                made.append(result.group(1))
            instruction = ""  # one result per step
    return made


def remove_images_made(client: Any, build_log: Iterable[dict]) -> None:
    """Remove the untagged images a failed build committed, newest first and one at a time (never
    pruning parents, which may be another build's cache). The daemon refuses an image that has since
    gained a child or a container, and one that gained a tag is kept: both are someone else's now."""
    from docker.errors import APIError

    for image_id in reversed(images_made(build_log)):
        try:
            image = client.images.get(image_id)
            if not image.tags:
                client.images.remove(image.id, noprune=True)
        except APIError:  # gone already, or in use: either way not ours to remove
            continue


def _empty_rootfs() -> bytes:
    """A tar with nothing in it: docker creates the mount points it needs."""
    buffer = io.BytesIO()
    tarfile.open(fileobj=buffer, mode="w").close()
    return buffer.getvalue()


def ensure_image(client: Any, image: str) -> None:
    """Make sure ``image`` exists locally: the default one is built here, any other must be present."""
    from docker.errors import APIError, ImageNotFound

    try:
        client.images.get(image)
        return
    except ImageNotFound:
        pass
    except APIError as exc:
        raise SandboxError(f"cannot look up the docker image {image!r}: {exc.explanation or exc}") from exc
    if image != DEFAULT_IMAGE:
        raise SandboxError(
            f"the docker image {image!r} is not on this machine; fetch or build it first "
            f"(docker pull {image}, or docker build -t {image} FOLDER), or leave the image out to use "
            f"the default {DEFAULT_IMAGE!r}, which pytest-mlab builds locally without a registry")
    repository, _, tag = DEFAULT_IMAGE.rpartition(":")
    try:
        client.api.import_image_from_data(_empty_rootfs(), repository=repository, tag=tag,
                                          changes=["LABEL {}={}".format(*HOST_RUNTIME_LABEL)])
        client.images.get(image)
    except (APIError, ImageNotFound) as exc:
        raise SandboxError(f"cannot create the default docker image {image!r} (an empty root filesystem "
                           f"imported locally): {getattr(exc, 'explanation', None) or exc}") from exc


def require_image(client: Any, image: str, host: str) -> None:
    """Make sure ``image`` is on the remote ``host`` already: nothing is built there, and a missing
    one is a SandboxError saying how to put it there."""
    from docker.errors import APIError, ImageNotFound

    try:
        client.images.get(image)
    except ImageNotFound:
        hint = (f"import one made from this machine's Python (pytest-mlab image tarball runtime.tar; "
                f"pytest-mlab image import runtime.tar --hosts {host}) or build docker/runtime.Dockerfile there"
                if image == RUNTIME_IMAGE else f"build or load it there (docker -H {host} load, or pull)")
        raise SandboxError(f"the docker image {image!r} is not on the host {host}: {hint}; see docs/docker-images.md") \
            from None
    except APIError as exc:
        raise SandboxError(f"cannot look up the docker image {image!r} on {host}: {exc.explanation or exc}") from exc


def host_runtime_binds() -> list[str]:
    """Host paths the default image mounts read-only at the same place: system directories,
    the /etc files programs need, and the running Python installation (which may live under
    /root: only the installation itself is mounted, so its parents need not be readable)."""
    from pytest_mlab.sandbox.host_runtime import ETC_FILES, SYSTEM_DIRS, python_dirs

    paths = [path for path in SYSTEM_DIRS if os.path.isdir(path)]  # a symlinked /bin binds its target
    etc = [f"/etc/{name}" for name in ETC_FILES if os.path.exists(f"/etc/{name}")]
    return [*paths, *etc, *python_dirs()]


def host_init() -> list[str]:
    """The default image's init, from the host (/sbin is mounted, so docker's own cannot be):
    tini reaps the orphans that killed commands leave, so they do not fill the process table."""
    for name in ("docker-init", "tini"):
        path = shutil.which(name, path="/usr/bin:/usr/sbin:/bin:/sbin")
        if path:
            return [path, "--"]
    raise SandboxError("the default docker image needs an init from the host (docker-init or tini, "
                       "installed with docker.io or the tini package); install one, or name an image "
                       "with --docker-image, which then runs with docker's own init")


def host_python() -> str:
    """The interpreter Execute Script uses in the default image: the task runtime's, mounted as is."""
    from pytest_mlab.task_runtime.choice import task_python

    return task_python()
