"""Task data: prepared once per machine into a cache, outside every workspace.

Recipes of full variants use :func:`download`, :func:`kaggle_competition`, :func:`hf_dataset`,
:func:`hf_snapshot` and :func:`split_ids`; they import their heavy packages only when called.
Names are imported on first use, so reading an option's default (the cache folder) does not load
the download and preparation code into every pytest run.
"""

from __future__ import annotations

from pytest_mlab.lazy import lazy_attributes

_HOMES = {
    "PreparedData": "cache", "default_cache_dir": "location", "is_prepared": "cache", "prepare_data": "cache",
    "prepare_verbosely": "cache", "download": "fetch", "hf_dataset": "hf", "hf_snapshot": "hf",
    "kaggle_competition": "kaggle", "split_ids": "split",
}

__all__ = sorted(_HOMES)


__getattr__ = lazy_attributes(__name__, _HOMES)
