"""The report's per-step diff: each file costs one lookup, and a huge step is shown in part."""

from __future__ import annotations

from pytest_mlab.results import html
from pytest_mlab.trace import SnapshotStore


def snapshots(tmp_path, states: list[dict[str, str]]) -> tuple[SnapshotStore, list[str]]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = SnapshotStore(tmp_path / "store", fsync=False)
    ids = []
    for files in states:
        for path in workspace.iterdir():
            path.unlink()
        for name, content in files.items():
            (workspace / name).write_text(content)
        ids.append(store.snapshot(workspace).id)
    return SnapshotStore(tmp_path / "store", fsync=False), ids


def test_a_step_touching_many_files_shows_some_and_counts_the_rest(tmp_path, monkeypatch):
    many = {f"f{index:04}.txt": f"{index}\n" for index in range(1000)}
    store, (before, after) = snapshots(tmp_path, [{"keep.txt": "1\n"}, {"keep.txt": "2\n", **many}])
    whole_copies = []
    real_manifest = SnapshotStore.manifest
    monkeypatch.setattr(SnapshotStore, "manifest",
                        lambda self, sid: whole_copies.append(sid) or real_manifest(self, sid))
    diff = html._diffs(store, before, after)
    assert len(diff) == html.MAX_DIFF_FILES + 1
    assert diff[0]["path"] == "f0000.txt" and diff[0]["text"].endswith("+0")
    assert diff[-1] == {"path": "...", "status": "more",
                        "text": f"{1001 - html.MAX_DIFF_FILES} more files changed in this step (not shown)"}
    assert whole_copies == [], "no whole manifest is copied per file (or at all)"


def test_removed_and_changed_files_are_diffed_against_the_right_snapshot(tmp_path):
    store, (before, after) = snapshots(tmp_path, [{"a.txt": "old\n", "gone.txt": "bye\n"}, {"a.txt": "new\n"}])
    diff = {entry["path"]: entry for entry in html._diffs(store, before, after)}
    assert diff["a.txt"]["status"] == "changed" and "-old" in diff["a.txt"]["text"] and "+new" in diff["a.txt"]["text"]
    assert diff["gone.txt"]["status"] == "removed" and "-bye" in diff["gone.txt"]["text"]


def test_a_missing_blob_is_named_not_a_crash(tmp_path):
    store, (before, after) = snapshots(tmp_path, [{"a.txt": "old\n"}, {"a.txt": "new\n"}])
    for blob in (tmp_path / "store" / "blobs").rglob("*"):
        if blob.is_file() and blob.read_bytes() == b"new\n":
            blob.unlink()
    (entry,) = html._diffs(store, before, after)
    assert entry["path"] == "a.txt" and entry["text"].startswith("(unreadable:")
