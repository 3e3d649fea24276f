"""Data variants are prepared once per machine, kept out of workspaces, and re-prepared when stale."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_mlab.data import prepare_data
from pytest_mlab.errors import DataCacheWarning, DataError
from pytest_mlab.spec.project import Project
from pytest_mlab.trace.snapshots import data_digests

REPO = Path(__file__).resolve().parents[2]
RECIPE = '''
from pathlib import Path
import os, time

def mini(public: Path, hidden: Path, seed: int) -> None:
    log = Path(os.environ.get("RECIPE_LOG", "/dev/null"))
    with open(log, "a") as handle:
        handle.write("ran\\n")
    (public / "data.csv").write_text(f"value\\n{seed}\\n")
    (public / "sub").mkdir()
    (public / "sub" / "more.csv").write_text("x\\n")
    (hidden / "answer.txt").write_text("42")

def broken(public: Path, hidden: Path, seed: int) -> None:
    raise ValueError("source unreachable")

def full(public: Path, hidden: Path, seed: int, downloads: Path) -> None:
    from pytest_mlab.task_api import download
    print("fetching the source")
    source = download(os.environ["SOURCE_URL"], downloads / "source.csv")
    (public / "data.csv").write_bytes(source.read_bytes())
    (hidden / "answer.txt").write_text("42")
'''


@pytest.fixture
def toy_task(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(REPO / "tests/fixtures/toy_project", root)
    (root / "task_assets/toy/prepare.py").write_text(RECIPE)
    project = Project(root, REPO / "specs/actions", REPO / "agents", root / "specs/tasks")
    return project.task_from_file(root / "specs/tasks/toy.yaml")


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_prepared_once_with_public_and_hidden_apart(toy_task, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    data = prepare_data(toy_task, "mini", tmp_path / "cache")
    assert data.public_files() == ["data.csv", "sub/more.csv"]
    assert (data.hidden / "answer.txt").read_text() == "42"
    assert not (data.public / "answer.txt").exists()
    assert os.stat(data.public / "data.csv").st_mode & 0o222 == 0  # read-only on disk
    prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 1


def test_concurrent_workers_prepare_once(toy_task, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: prepare_data(toy_task, "mini", tmp_path / "cache"), range(4)))
    assert runs(log) == 1
    assert len({r.public for r in results}) == 1


def test_a_data_file_changed_through_a_link_is_prepared_again(toy_task, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    data = prepare_data(toy_task, "mini", tmp_path / "cache")
    target = data.public / "data.csv"
    os.chmod(target, 0o644)
    target.write_text("value\ntampered\n")
    with pytest.warns(DataCacheWarning, match=r"'toy'.*public/data\.csv"):
        data = prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 2 and (data.public / "data.csv").read_text() == "value\n0\n"


def rewrite_keeping_size_and_mtime(path: Path, text: str, *, by_rename: bool = False) -> None:
    st = path.stat()
    assert len(text) == st.st_size
    if by_rename:  # a new inode: a lease on the old one never breaks
        fresh = path.with_name(".forged")
        fresh.write_text(text)
        os.utime(fresh, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(fresh, path)
        return
    path.chmod(0o644)
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    path.chmod(st.st_mode)


@pytest.mark.parametrize("by_rename", [False, True])
def test_hidden_answers_rewritten_with_their_size_and_mtime_are_prepared_again(toy_task, tmp_path, monkeypatch,
                                                                              by_rename):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    monkeypatch.setattr(data_digests, "take_lease", lambda fd: None)  # or the write waits for the lease break
    data = prepare_data(toy_task, "mini", tmp_path / "cache")
    assert os.stat(data.hidden / "answer.txt").st_mode & 0o222 == 0
    rewrite_keeping_size_and_mtime(data.hidden / "answer.txt", "00", by_rename=by_rename)
    with pytest.warns(DataCacheWarning, match=r"'toy'.*hidden/answer\.txt"):
        data = prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 2 and (data.hidden / "answer.txt").read_text() == "42"


def test_an_added_or_removed_file_is_prepared_again(toy_task, tmp_path):
    data = prepare_data(toy_task, "mini", tmp_path / "cache")
    (data.hidden / "extra.txt").write_text("planted")
    with pytest.warns(DataCacheWarning, match="hidden/extra.txt"):
        data = prepare_data(toy_task, "mini", tmp_path / "cache")
    (data.public / "sub" / "more.csv").unlink()
    with pytest.warns(DataCacheWarning, match="public/sub/more.csv"):
        data = prepare_data(toy_task, "mini", tmp_path / "cache")
    assert not (data.hidden / "extra.txt").exists() and (data.public / "sub" / "more.csv").exists()


def test_the_harness_linking_public_files_moves_their_ctime_but_prepares_nothing(toy_task, tmp_path, monkeypatch,
                                                                                 recwarn):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    data = prepare_data(toy_task, "mini", tmp_path / "cache")
    os.link(data.public / "data.csv", tmp_path / "linked.csv")  # as copy_in(link=True) does
    prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 1 and not [w for w in recwarn if issubclass(w.category, DataCacheWarning)]


def test_a_changed_recipe_is_prepared_again(toy_task, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    prepare_data(toy_task, "mini", tmp_path / "cache")
    recipe = toy_task.assets / "prepare.py"
    recipe.write_text(recipe.read_text() + "\n# changed\n")
    prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 2


def test_a_changed_file_the_recipe_reads_is_prepared_again_but_not_a_grader_or_starter_edit(toy_task, tmp_path,
                                                                                             monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("RECIPE_LOG", str(log))
    prepare_data(toy_task, "mini", tmp_path / "cache")
    for edited in (toy_task.assets / toy_task.metric.grader.file, toy_task.env_dir / toy_task.starter):
        edited.write_text(edited.read_text() + "\n# changed\n")
        prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 1
    (toy_task.assets / "template.txt").write_text("a text the recipe copies")
    prepare_data(toy_task, "mini", tmp_path / "cache")
    assert runs(log) == 2


def test_a_failing_recipe_is_a_data_error_and_leaves_no_entry(toy_task, tmp_path):
    from dataclasses import replace

    from pytest_mlab.spec.models import DataVariant, FunctionRef

    broken = replace(toy_task, data={"mini": DataVariant("mini", FunctionRef("prepare.py", "broken"))})
    with pytest.raises(DataError, match="preparing the 'mini' data of task 'toy' with prepare.py:broken failed"):
        prepare_data(broken, "mini", tmp_path / "cache")
    assert not (tmp_path / "cache/toy/mini").exists()


def test_network_variants_get_a_downloads_folder_that_outlives_re_preparation(toy_task, tmp_path, monkeypatch, capfd):
    from dataclasses import replace

    from pytest_mlab.spec.models import DataVariant, FunctionRef, Requirements
    from tests.data.fakes import FileServer

    served = tmp_path / "served"
    served.mkdir()
    (served / "source.csv").write_text("value\n7\n")
    task = replace(toy_task, data={"full": DataVariant("full", FunctionRef("prepare.py", "full"),
                                                       Requirements(network=True))})
    with FileServer(served) as server:
        monkeypatch.setenv("SOURCE_URL", server.url("source.csv"))
        data = prepare_data(task, "full", tmp_path / "cache", stream=True)
        assert (data.public / "data.csv").read_text() == "value\n7\n"
        assert (tmp_path / "cache/downloads/toy/source.csv").exists()
        assert "fetching the source" in capfd.readouterr().out  # streamed, not swallowed
        recipe = toy_task.assets / "prepare.py"
        recipe.write_text(recipe.read_text() + "\n# changed\n")
        prepare_data(task, "full", tmp_path / "cache")
    assert len(server.log) == 1  # re-prepared from the kept download
