"""Task data: prepared once per machine into a cache, outside every workspace.

Recipes of full variants use :func:`download`, :func:`kaggle_competition`, :func:`hf_dataset`,
:func:`hf_snapshot` and :func:`split_ids`; they import their heavy packages only when called.
"""

from pytest_mlab.data.cache import PreparedData, default_cache_dir, is_prepared, prepare_data, prepare_verbosely
from pytest_mlab.data.fetch import download
from pytest_mlab.data.hf import hf_dataset, hf_snapshot
from pytest_mlab.data.kaggle import kaggle_competition
from pytest_mlab.data.split import split_ids

__all__ = ["PreparedData", "default_cache_dir", "download", "hf_dataset", "hf_snapshot", "is_prepared",
           "kaggle_competition", "prepare_data", "prepare_verbosely", "split_ids"]
