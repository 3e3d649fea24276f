"""Run records: an append-only JSON-lines trace and content-addressed workspace snapshots.

Names are imported on first use: reading a trace back needs none of the snapshot machinery.
"""

from __future__ import annotations

from pytest_mlab.lazy import lazy_attributes

_HOMES = {"Snapshot": "snapshots.store", "SnapshotCaps": "snapshots.scan", "SnapshotStore": "snapshots.store",
          "TraceWriter": "writer", "WalkBounds": "snapshots.workspace", "read_trace": "writer"}

__all__ = sorted(_HOMES)


__getattr__ = lazy_attributes(__name__, _HOMES)
