"""The docker host pool (--mlab-docker-hosts): URLs checked before anything runs, workers spread
evenly over the hosts that answer, a host that does not answer skipped with a warning."""

from __future__ import annotations

import pytest

from pytest_mlab.errors import SandboxError, UsageError
from pytest_mlab.sandbox.docker import hosts as docker_hosts
from pytest_mlab.sandbox.docker.hosts import (DockerHost, DockerHostWarning, parse_hosts, pick_host, use_pool,
                                              worker_index)
from tests.helpers import output_of, run_specs


def test_urls_are_parsed_and_remote_ones_told_apart():
    hosts = parse_hosts(" unix:///var/run/docker.sock, tcp://10.0.0.2:2376 ,ssh://me@gpu-box,")
    assert [host.url for host in hosts] == ["unix:///var/run/docker.sock", "tcp://10.0.0.2:2376", "ssh://me@gpu-box"]
    assert [host.remote for host in hosts] == [False, True, True]
    assert parse_hosts(None) == () and parse_hosts("") == ()


@pytest.mark.parametrize("text, message", [
    ("10.0.0.2:2376", "is not a docker daemon URL"),
    ("ftp://box", "is not a docker daemon URL"),
    ("tcp://:2376", "names no host"),
    ("tcp://a:1,tcp://a:1", "named twice"),
])
def test_bad_urls_are_usage_errors_naming_the_option(text, message):
    with pytest.raises(UsageError, match=message) as error:
        parse_hosts(text, "--mlab-docker-hosts")
    assert str(error.value).startswith("--mlab-docker-hosts: ")


def test_the_environment_decides_without_a_pool(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://build-box:2375")
    assert DockerHost().remote and DockerHost().name == "tcp://build-box:2375"
    monkeypatch.delenv("DOCKER_HOST")
    assert not DockerHost().remote and DockerHost().name == "unix:///var/run/docker.sock"


@pytest.fixture
def answering(monkeypatch):
    """Hosts answer unless their URL says dead."""

    def client(self):
        if "dead" in self.url:
            raise SandboxError(f"the docker daemon at {self.url} is not reachable")
        return object()

    monkeypatch.setattr(DockerHost, "client", client)
    yield
    use_pool((), None, "")


def test_workers_spread_evenly_and_skip_a_host_that_does_not_answer(answering):
    pool = parse_hosts("tcp://a:1,tcp://dead:1,tcp://b:1")
    with pytest.warns(DockerHostWarning, match="tcp://dead:1 left out"):
        picked = [pick_host(pool, worker_index(f"gw{index}")).url for index in range(4)]
    assert picked == ["tcp://a:1", "tcp://b:1", "tcp://a:1", "tcp://b:1"]


def test_a_pool_where_no_host_answers_says_why_for_each(answering):
    with pytest.warns(DockerHostWarning), pytest.raises(SandboxError, match="no docker host .* answers") as error:
        pick_host(parse_hosts("tcp://dead:1,tcp://dead:2"), 0)
    assert "tcp://dead:1" in str(error.value) and "tcp://dead:2" in str(error.value)


def test_a_lost_host_is_dropped_by_the_next_pick(answering, monkeypatch):
    use_pool(parse_hosts("tcp://a:1,tcp://b:1"), "gw1", "s")
    assert docker_hosts.current_host().url == "tcp://b:1"
    monkeypatch.setattr(DockerHost, "client", lambda self: (_ for _ in ()).throw(SandboxError("gone"))
                        if self.url == "tcp://b:1" else object())
    docker_hosts.forget_host()
    with pytest.warns(DockerHostWarning):
        assert docker_hosts.current_host().url == "tcp://a:1"


def test_a_bad_option_stops_the_session_before_collection(pytester):
    from tests.helpers import copy_toy_project

    root = copy_toy_project(pytester.path)
    result = run_specs(pytester, "--mlab-docker-hosts=docker-box:2375", cache_dir=root / ".cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mlab-docker-hosts: 'docker-box:2375' is not a docker daemon URL" in output_of(result)


def test_hosts_without_the_docker_sandbox_are_a_usage_error(pytester):
    from tests.helpers import copy_toy_project

    root = copy_toy_project(pytester.path)
    result = run_specs(pytester, "--sandbox=local", "--mlab-docker-hosts=tcp://127.0.0.1:2375",
                       cache_dir=root / ".cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mlab-docker-hosts names docker hosts, but --sandbox=local does not use docker" in output_of(result)
