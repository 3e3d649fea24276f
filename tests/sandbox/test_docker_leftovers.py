"""Who left a docker container or volume: judged by pid on its creator's machine, by its lease
from any other (a controller machine that died never comes back to sweep)."""

from __future__ import annotations

import time

from pytest_mlab.sandbox.docker.conventions import LEASE_LABEL, OWNER_LABEL
from pytest_mlab.sandbox.docker.data_volumes import abandoned, lease_until
from pytest_mlab.sandbox.owner import owner_label


def test_another_machines_leftover_is_abandoned_once_its_lease_ran_out():
    past, future = str(int(time.time()) - 10), lease_until(3600)
    assert abandoned({OWNER_LABEL: "dead-controller:4242:99", LEASE_LABEL: past})
    assert not abandoned({OWNER_LABEL: "live-controller:4242:99", LEASE_LABEL: future})
    assert not abandoned({OWNER_LABEL: "old-controller:4242:99"})  # no lease: never judged from elsewhere


def test_this_machines_leftover_is_judged_by_its_pid_whatever_its_lease():
    mine = owner_label()
    assert not abandoned({OWNER_LABEL: mine, LEASE_LABEL: str(int(time.time()) - 10)})  # alive, lease or not
    host = mine.split(":")[0]
    assert abandoned({OWNER_LABEL: f"{host}:999999999:1", LEASE_LABEL: lease_until(3600)})  # gone, lease or not
