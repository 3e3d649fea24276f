"""hf_dataset() and hf_snapshot() keep their caches under downloads and explain failures."""

from __future__ import annotations

import pytest

from pytest_mlab.data.hf import hf_dataset, hf_snapshot
from pytest_mlab.errors import DataError


def test_dataset_cache_lives_under_downloads(monkeypatch, tmp_path):
    import datasets

    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda name, **kw: calls.append((name, kw)) or "ds")
    assert hf_dataset("imdb", tmp_path, split="train") == "ds"
    assert calls == [("imdb", {"cache_dir": str(tmp_path / "hf-datasets"), "split": "train"})]


def test_dataset_failure_is_a_data_error(monkeypatch, tmp_path):
    import datasets

    def fail(name, **kw):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", fail)
    with pytest.raises(DataError, match="Hugging Face dataset 'imdb' failed: ConnectionError: offline"):
        hf_dataset("imdb", tmp_path)


def test_gated_model_says_how_to_log_in(monkeypatch, tmp_path):
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    def gated(**kw):
        error = GatedRepoError.__new__(GatedRepoError)  # its __init__ wants a real HTTP response
        Exception.__init__(error, "403 gated")
        raise error

    monkeypatch.setattr(huggingface_hub, "snapshot_download", gated)
    with pytest.raises(DataError, match="'meta/llama' is gated: log in with `huggingface-cli login`"):
        hf_snapshot("meta/llama", tmp_path / "model")


def test_snapshot_goes_into_dest(monkeypatch, tmp_path):
    import huggingface_hub

    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: calls.append(kw))
    assert hf_snapshot("org/model", tmp_path / "model") == tmp_path / "model"
    assert calls == [{"repo_id": "org/model", "local_dir": str(tmp_path / "model")}]
