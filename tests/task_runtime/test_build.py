"""Building the locked task runtime: one build per lock, in turns, with progress, started over
when interrupted, and failures in uv's own words. uv is replaced by a small fake that makes the
folders a real build makes; the real build is what the whole suite runs on (tests/isolation.py)."""

from __future__ import annotations

import multiprocessing
import os
import re
from pathlib import Path

import pytest

from pytest_mlab.errors import TaskRuntimeError
from pytest_mlab.task_runtime import build

def _calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_build_shows_its_progress_and_a_second_call_builds_nothing(fake_uv):
    lines: list[str] = []
    python = build.ensure_built(progress=lines.append)
    folder = build.runtime_folder()
    assert python == folder / "bin" / "python" and os.access(python, os.X_OK)
    assert _calls(fake_uv) == ["venv --quiet", "pip sync"]
    assert lines[0].startswith("building the task runtime") and str(folder) in lines[0]
    assert "Prepared 3 packages in 1.2s" in lines and "Installed 3 packages in 10ms" in lines
    assert not any("numpy==" in line for line in lines)  # one line per package would drown the summary
    assert lines[-1].startswith("the task runtime is ready")
    assert build.build_record(folder)["lock"] == build.lock_digest()
    assert build.ensure_built(progress=lines.append) == python
    assert len(_calls(fake_uv)) == 2


def test_a_long_build_says_it_is_still_going(fake_uv, monkeypatch):
    monkeypatch.setenv("FAKE_UV_SLEEP", "1.5")
    monkeypatch.setattr(build, "TICK_S", 0.5)
    lines: list[str] = []
    build.ensure_built(progress=lines.append)
    assert any(re.fullmatch(r"still building the task runtime \(\d+ s so far\)", line) for line in lines), lines


def test_an_interrupted_build_is_started_over(fake_uv):
    folder = build.runtime_folder()
    (folder / "bin").mkdir(parents=True)
    (folder / "half-written").write_text("x")  # no completion record: a build that was killed
    build.ensure_built(progress=lambda line: None)
    assert not (folder / "half-written").exists() and build.is_built(folder)


def test_a_failed_build_quotes_uv_says_what_to_do_and_leaves_nothing(fake_uv, monkeypatch):
    monkeypatch.setenv("FAIL_UV", "1")
    with pytest.raises(TaskRuntimeError) as failed:
        build.ensure_built(progress=lambda line: None)
    message = str(failed.value)
    assert "uv exited with code 2" in message and "Failed to fetch: `https://pypi.org/simple/xgboost-cpu/`" in message
    assert "--mlab-runtime=host" in message and "--mlab-runtime=PATH-TO-PYTHON" in message
    assert not build.runtime_folder().exists()


def test_a_changed_lock_gets_a_runtime_of_its_own(tmp_path, fake_uv):
    lock = tmp_path / "requirements.lock"
    lock.write_text(build.LOCK.read_text() + "extra-package==1.0\n")
    assert build.runtime_folder(lock=lock) != build.runtime_folder()
    assert build.runtime_folder(lock=lock).parent == build.runtime_folder().parent


def _build_in_another_process(home: str, uv: str) -> None:
    os.environ[build.HOME_VARIABLE] = home
    build.uv_binary = lambda: uv  # the fake, in this process too
    build.pip_find_links = lambda: []
    build.ensure_built(progress=lambda line: None)


def test_processes_that_need_the_runtime_at_once_build_it_once(fake_uv, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_UV_SLEEP", "1")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_build_in_another_process, args=(str(tmp_path / "home"), str(tmp_path / "uv")))
               for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0, 0]
    assert _calls(fake_uv) == ["venv --quiet", "pip sync"]


def test_the_locked_torch_comes_from_a_find_links_folder_that_holds_it_else_from_pytorchs_cpu_index(tmp_path,
                                                                                                   monkeypatch):
    torch = build.locked_packages()["torch"]
    assert torch.endswith("+cpu")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setattr(build, "pip_find_links", lambda: [str(wheels)])
    assert f"--extra-index-url={build.TORCH_CPU_INDEX}" in build.package_sources()
    (wheels / f"torch-{torch}-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    sources = build.package_sources()
    assert f"--find-links={wheels}" in sources and not any(build.TORCH_CPU_INDEX in arg for arg in sources)
    monkeypatch.setattr(build, "pip_find_links", lambda: [f"file://{wheels}"])
    assert not any(build.TORCH_CPU_INDEX in arg for arg in build.package_sources())


def test_pip_find_links_come_from_pips_environment_and_configuration(tmp_path, monkeypatch):
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nfind-links = {tmp_path / 'a'} {tmp_path / 'b'}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "env"))
    monkeypatch.setenv("PIP_QUIET", "1")  # as CI sets it: pip then prints nothing unless told otherwise
    links = build.pip_find_links()
    assert links[0] == str(tmp_path / "env")
    assert str(tmp_path / "a") in links and str(tmp_path / "b") in links


def test_clean_removes_the_runtimes_of_other_locks_and_keeps_this_ones(fake_uv, tmp_path):
    build.ensure_built(progress=lambda line: None)
    current = build.runtime_folder()
    old = current.parent / "py311-0123456789abcdef"
    (old / "bin").mkdir(parents=True)
    (old / build.COMPLETE).write_text("{}")
    assert build.remove_other_runtimes() == [old]
    assert not old.exists() and build.is_built(current)
