"""Hugging Face datasets and model weights for full data variants.

``datasets`` and ``huggingface_hub`` are imported only when a full variant is prepared. Their
caches go under the task's downloads folder, so an interrupted download resumes there and
``pytest-mlab`` never writes into the user's global Hugging Face cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_mlab.errors import DataError

_LOGIN = "log in with `huggingface-cli login` or export HF_TOKEN, and accept the model's terms on its page"


def hf_dataset(name: str, downloads: Path, **kwargs: Any):
    """``datasets.load_dataset(name, **kwargs)`` with its cache in ``downloads/hf-datasets``."""
    try:
        import datasets
    except ImportError:
        raise DataError('the datasets package is not installed: pip install -e ".[tasks]"') from None
    try:
        return datasets.load_dataset(name, cache_dir=str(Path(downloads) / "hf-datasets"), **kwargs)
    except Exception as exc:  # datasets raises many types; all mean the same thing to the user
        raise DataError(f"loading the Hugging Face dataset '{name}' failed: {type(exc).__name__}: {exc}; "
                        f"run the same command again to resume") from None


def hf_snapshot(repo_id: str, dest: Path) -> Path:
    """Download the files of model repository ``repo_id`` into ``dest`` (resumed when interrupted)."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError:
        raise DataError('the huggingface_hub package is not installed: pip install -e ".[tasks]"') from None
    try:
        snapshot_download(repo_id=repo_id, local_dir=str(dest))
    except GatedRepoError:
        raise DataError(f"the model '{repo_id}' is gated: {_LOGIN}") from None
    except RepositoryNotFoundError:
        raise DataError(f"Hugging Face has no model '{repo_id}' you can see; check the name, or {_LOGIN}") from None
    except Exception as exc:
        raise DataError(f"downloading the model '{repo_id}' failed: {type(exc).__name__}: {exc}; "
                        f"run the same command again to resume") from None
    return Path(dest)
