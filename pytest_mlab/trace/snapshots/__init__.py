"""Content-addressed workspace snapshots: each step stores only what changed, within limits.

Layout under the store root::

    blobs/<digest[:2]>/<digest>     file contents, one per distinct content (BLAKE3)
    manifests/<snapshot_id>.json    one per distinct workspace state

One job a module: :mod:`.store` (``SnapshotStore``, which composes the others and syncs once per
snapshot), :mod:`.workspace` (reading the workspace without following links), :mod:`.scan` (what
a snapshot keeps, within :class:`~.scan.SnapshotCaps`), :mod:`.digest_cache` (when a digest may
be remembered instead of read again), :mod:`.blobs` (file contents), :mod:`.manifests` (workspace
states, stored as delta chains), :mod:`.manifest_checks` (refusing unsafe manifests),
:mod:`.materialize` (a snapshot back to files) and :mod:`.disk` (temp files renamed into place).
"""
