"""Docker hosts (``--mlab-docker-hosts``): which daemon each xdist worker's sandboxes run on.

A host is a daemon URL as docker itself writes one: ``unix:///var/run/docker.sock`` (a daemon on
this machine), ``tcp://HOST:PORT`` (TLS from ``DOCKER_TLS_VERIFY`` and ``DOCKER_CERT_PATH``, as
docker's own client reads them) or ``ssh://USER@HOST`` (through the ``ssh`` program). Without a
pool, the daemon is the environment's (``DOCKER_HOST``, else the local socket).

A daemon reached over ``tcp://`` or ``ssh://`` is *remote*: it shares no file system with the
harness, so its sandboxes bind-mount nothing (see :mod:`.remote`). Each worker takes one
host of the pool for its whole life: the worker's index picks it, round robin over the hosts
that answer a ping, so workers spread evenly; a host that does not answer is skipped with a
warning, and the pool fails only when no host answers. The host is recorded with every run.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence
from urllib.parse import urlparse

from pytest_mlab.errors import SandboxError, UsageError
from pytest_mlab.sandbox.host_locks import machine_lock_folder, make_shared, open_lock_file

LOCAL_SCHEMES = ("unix", "npipe")
REMOTE_SCHEMES = ("tcp", "ssh", "http", "https")
PING_TIMEOUT = 10  # seconds a host has to answer the health check
API_TIMEOUT = 300  # seconds for one call that may be long and silent (an image build, a data volume)
#: Seconds one call of a step (exec, inspect, archive, listing) may go without a byte from the
#: host: a host that accepts connections but never answers is ``host lost`` after this and a ping.
CALL_TIMEOUT = 15
_WORKER = re.compile(r"^gw(\d+)$")


class DockerHostWarning(UserWarning):
    """A host of the pool did not answer and is left out."""


@dataclass(frozen=True)
class DockerHost:
    """One daemon. ``url`` empty: the environment's (``DOCKER_HOST``, else the local socket)."""

    url: str = ""

    @property
    def effective_url(self) -> str:
        return self.url or os.environ.get("DOCKER_HOST", "") or "unix:///var/run/docker.sock"

    @property
    def remote(self) -> bool:
        """Whether the daemon may be on another machine: then nothing is bind-mounted."""
        return urlparse(self.effective_url).scheme in REMOTE_SCHEMES

    @property
    def name(self) -> str:
        """How results and messages name the host."""
        return self.effective_url

    def client(self) -> Any:
        """A docker client for this host (one per process and host), or a SandboxError saying why not."""
        return _client(self.effective_url, API_TIMEOUT)

    def step_client(self) -> Any:
        """A client for the calls of a sandbox's steps, which give up after CALL_TIMEOUT of silence."""
        return _client(self.effective_url, CALL_TIMEOUT)


def parse_hosts(text: str | None, source: str = "--mlab-docker-hosts") -> tuple[DockerHost, ...]:
    """The pool a comma-separated list of daemon URLs names; empty for none. ``source`` names the
    option or setting in errors."""
    hosts = []
    for part in (text or "").split(","):
        url = part.strip()
        if not url:
            continue
        parsed = urlparse(url)
        if parsed.scheme not in (*LOCAL_SCHEMES, *REMOTE_SCHEMES):
            raise UsageError(f"{source}: {url!r} is not a docker daemon URL; write unix:///var/run/docker.sock, "
                             "tcp://HOST:PORT or ssh://USER@HOST, comma-separated")
        if parsed.scheme in REMOTE_SCHEMES and not parsed.hostname:
            raise UsageError(f"{source}: {url!r} names no host; write it as {parsed.scheme}://HOST:PORT")
        hosts.append(DockerHost(url))
    if len({host.url for host in hosts}) != len(hosts):
        raise UsageError(f"{source}: a host is named twice in {text!r}; name each daemon once")
    return tuple(hosts)


@functools.lru_cache(maxsize=None)
def _client(url: str, timeout: float) -> Any:
    try:
        import docker
        from docker.utils import kwargs_from_env
    except ImportError:
        raise SandboxError("the docker SDK for Python is not installed (pip install docker)") from None
    scheme = urlparse(url).scheme
    options: dict[str, Any] = {"base_url": url, "timeout": PING_TIMEOUT}
    if scheme in ("tcp", "https"):
        options["tls"] = kwargs_from_env().get("tls", False)  # DOCKER_TLS_VERIFY / DOCKER_CERT_PATH
    if scheme == "ssh":
        if shutil.which("ssh") is None:
            raise SandboxError(f"the docker host {url} is reached over ssh, but the ssh program is not installed")
        options["use_ssh_client"] = True
    try:
        client = docker.DockerClient(**options)
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxError(
            f"the docker daemon at {url} is not reachable ({exc}); start it (dockerd --bridge=none "
            "--iptables=false as root), or leave it out of the hosts named") from None
    client.api.timeout = timeout  # the ping was the health check
    return client


def worker_index(worker_id: str | None) -> int:
    """gw3 -> 3; the controller (no xdist) is 0."""
    match = _WORKER.match(worker_id or "")
    return int(match.group(1)) if match else 0


def pick_host(pool: Sequence[DockerHost], index: int) -> DockerHost:
    """The host worker ``index`` uses: round robin over the hosts that answer; those that do not
    are skipped with a warning, and a pool where none answers is a SandboxError naming each cause."""
    if not pool:
        return DockerHost()
    causes = []
    healthy = []
    for host in pool:
        try:
            host.client()
        except SandboxError as exc:
            causes.append(str(exc))
            warnings.warn(DockerHostWarning(f"docker host {host.name} left out: {exc}"), stacklevel=2)
            continue
        healthy.append(host)
    if not healthy:
        raise SandboxError("no docker host of --mlab-docker-hosts answers: " + "; ".join(causes))
    return healthy[index % len(healthy)]


def host_answers(client: Any) -> bool:
    """Whether a host's daemon still answers a ping within PING_TIMEOUT (a dead one refuses at once)."""
    try:
        response = client.api._get(client.api._url("/_ping"), timeout=PING_TIMEOUT)
        return response.status_code == 200
    except Exception:  # refused, reset, timed out: all mean gone
        return False


@contextmanager
def host_lock(host: DockerHost, what: str) -> Iterator[None]:
    """Exclusive among this machine's processes (the xdist workers) for one thing on one host:
    sending a data volume or building an image happens once per host, not once per worker. The
    kernel releases the lock when its holder dies."""
    folder = machine_lock_folder("docker-hosts")
    make_shared(folder)
    key = hashlib.sha256(f"{host.effective_url}\0{what}".encode()).hexdigest()[:32]
    with open_lock_file(folder / f"{key}.lock") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


_pool: tuple[DockerHost, ...] = ()
_index = 0
_session = ""


def use_pool(pool: Sequence[DockerHost], worker_id: str | None, session: str = "") -> None:
    """This process's pool, worker id and session id (the plugin sets them at configure); the pick
    itself waits for the first docker sandbox, so a session that opens none pings nothing."""
    global _pool, _index, _session
    _pool, _index, _session = tuple(pool), worker_index(worker_id), session
    current_host.cache_clear()


def session() -> str:
    """The pytest session's id, shared by its workers: data volumes on the hosts carry it."""
    return _session


def forget_host() -> None:
    """After a host stopped answering: the next sandbox picks again among those that answer."""
    _client.cache_clear()
    current_host.cache_clear()


def hosts_to_clean() -> tuple[DockerHost, ...]:
    """Where leftovers are looked for: every host of the pool, else the environment's daemon."""
    return _pool or (DockerHost(),)


@functools.lru_cache(maxsize=1)
def current_host() -> DockerHost:
    """The host this process's docker sandboxes run on."""
    return pick_host(_pool, _index)


def pool() -> tuple[DockerHost, ...]:
    """The hosts this process was told of (empty: the environment's daemon only)."""
    return _pool
