"""Run records: an append-only JSON-lines trace and content-addressed workspace snapshots."""

from pytest_mlab.trace.snapshots import Snapshot, SnapshotCaps, SnapshotStore
from pytest_mlab.trace.writer import TraceWriter, read_trace

__all__ = ["Snapshot", "SnapshotCaps", "SnapshotStore", "TraceWriter", "read_trace"]
