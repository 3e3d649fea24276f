"""The lock: every package pinned, every requirement in it, the harness's packages out."""

from __future__ import annotations

import re

from pytest_mlab.task_runtime.build import LOCK, REQUIREMENTS, locked_packages

HARNESS_ONLY = ("pytest-mlab", "litellm", "docker", "pytest", "pytest-xdist", "uv")


def _requirement_names() -> list[str]:
    names = []
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0].lower())
    return names


def test_every_package_of_the_lock_is_pinned_to_one_version():
    lines = [line for line in LOCK.read_text().splitlines() if line and not line.startswith((" ", "#"))]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9._-]+==\S+", line) for line in lines), \
        [line for line in lines if "==" not in line]


def test_every_requirement_is_in_the_lock_and_the_harness_is_not():
    pinned = {name.replace("_", "-") for name in locked_packages()}
    assert not [name for name in _requirement_names() if name.replace("_", "-") not in pinned]
    assert not [name for name in HARNESS_ONLY if name in pinned]


def test_the_lock_keeps_the_cpu_build_of_torch_and_no_cuda_library():
    pinned = locked_packages()
    assert pinned["torch"].endswith("+cpu")
    assert not [name for name in pinned if name.startswith("nvidia-")]
