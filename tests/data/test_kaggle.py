"""kaggle_competition() against a fake Kaggle API: download, unzip, and the errors users can fix."""

from __future__ import annotations

import pytest

from pytest_mlab.data.kaggle import kaggle_competition
from pytest_mlab.errors import DataError
from tests.data.fakes import fake_kaggle


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "source"
    root.mkdir()
    (root / "train.csv").write_text("id,y\n1,2\n")
    (root / "sub").mkdir()
    (root / "sub" / "extra.txt").write_text("x")
    return root


def test_files_are_downloaded_and_unzipped_once(monkeypatch, tmp_path, source):
    log = fake_kaggle(monkeypatch, {"comp": source})
    folder = kaggle_competition("comp", tmp_path / "downloads")
    assert (folder / "train.csv").read_text() == "id,y\n1,2\n" and (folder / "sub/extra.txt").exists()
    assert kaggle_competition("comp", tmp_path / "downloads") == folder
    assert log == ["comp"]


def test_missing_credentials_name_where_they_go(monkeypatch, tmp_path, source):
    log = fake_kaggle(monkeypatch, {"comp": source}, credentials=False)
    with pytest.raises(DataError, match=r"no Kaggle API credentials.*kaggle\.json.*KAGGLE_USERNAME and KAGGLE_KEY"):
        kaggle_competition("comp", tmp_path / "downloads")
    assert log == []


def test_rules_not_accepted_names_the_rules_page(monkeypatch, tmp_path, source):
    fake_kaggle(monkeypatch, {"comp": source}, status=403)
    with pytest.raises(DataError, match=r"HTTP 403.*accept the competition's rules.*"
                                        r"https://www\.kaggle\.com/competitions/comp/rules"):
        kaggle_competition("comp", tmp_path / "downloads")


def test_unknown_competition(monkeypatch, tmp_path, source):
    fake_kaggle(monkeypatch, {"comp": source})
    with pytest.raises(DataError, match="no competition 'other'"):
        kaggle_competition("other", tmp_path / "downloads")


def test_a_broken_archive_is_deleted_so_the_next_call_fetches_it_again(monkeypatch, tmp_path, source):
    fake_kaggle(monkeypatch, {"comp": source}, truncate=100)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with pytest.raises(DataError, match="not a valid zip archive.*deleted"):
        kaggle_competition("comp", downloads)
    assert not (downloads / "comp.zip").exists()
