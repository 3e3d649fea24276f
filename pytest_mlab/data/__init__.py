"""Task data: prepared once per machine into a cache, outside every workspace.

Data recipes take what they use (downloads, splits) from :mod:`pytest_mlab.task_api`, never from
here. Names are imported on first use, so reading an option's default (the cache folder) does not
load the preparation code into every pytest run.
"""

from __future__ import annotations

from pytest_mlab.lazy import lazy_attributes

_HOMES = {
    "PreparedData": "cache", "is_prepared": "cache", "prepare_data": "cache",
    "prepare_verbosely": "cache",
}

__all__ = sorted(_HOMES)


__getattr__ = lazy_attributes(__name__, _HOMES)
