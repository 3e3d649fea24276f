"""What killed sessions and workers left on docker hosts, and its removal: containers whose
creating process is gone, with their workspace volumes, and data volumes no container uses whose
session is over (:mod:`.data_volumes`). Containers of running sessions are kept.

A creator is judged by its pid on its own machine; what a machine left that never came back (its
controller died, several controllers share a host) is judged by the lease in its labels, run out."""

from __future__ import annotations

import warnings
from typing import Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.conventions import LABEL, OWNER_LABEL
from pytest_mlab.sandbox.docker.data_volumes import abandoned
from pytest_mlab.sandbox.docker.daemon import client_of
from pytest_mlab.sandbox.docker.data_volumes import remove_data_volumes
from pytest_mlab.sandbox.docker.hosts import DockerHost, DockerHostWarning, hosts_to_clean


def remove_leftovers(*, everything: bool = False, hosts: tuple[DockerHost, ...] | None = None) -> list[str]:
    """Remove pytest-mlab containers whose creating process is gone (all of them with
    ``everything``), with their workspace volumes, and the data volumes no container uses whose
    session is over; on every host of the pool (``hosts``: these instead). Returns the names
    removed, prefixed with the host where there are several. Containers of running sessions are kept."""
    chosen = hosts_to_clean() if hosts is None else hosts
    removed = []
    for host in chosen:
        prefix = f"{host.name}: " if len(chosen) > 1 else ""
        try:
            client = client_of(host)
            names = [*_remove_containers(client, everything), *remove_data_volumes(client, everything=everything)]
        except Exception as exc:  # a host of several that stopped answering must not stop the others
            if len(chosen) == 1:
                if isinstance(exc, SandboxError):
                    raise
                raise SandboxError(f"cannot remove leftovers on the docker host {host.name}: {exc}") from exc
            warnings.warn(DockerHostWarning(f"docker host {host.name} not cleaned: {exc}"), stacklevel=2)
            continue
        removed.extend(prefix + name for name in names)
    return removed


def _remove_containers(client: Any, everything: bool) -> list[str]:
    from docker.errors import APIError, NotFound

    removed = []
    # ignore_removed: a container another session removes between listing and inspecting is not an error
    for container in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        if everything or abandoned(container.labels):
            try:
                container.remove(force=True, v=True)  # v: its anonymous volumes (a remote workspace) too
            except NotFound:
                continue
            except APIError as exc:
                raise SandboxError(f"cannot remove the leftover container {container.name}: {exc}") from exc
            removed.append(container.name)
    return removed
