"""Task data: prepared once per machine into a cache, outside every workspace."""

from pytest_mlab.data.cache import PreparedData, default_cache_dir, is_prepared, prepare_data

__all__ = ["PreparedData", "default_cache_dir", "is_prepared", "prepare_data"]
