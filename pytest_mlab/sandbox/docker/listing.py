"""What a remote container's workspace holds after a command, listed in the container itself.

The listing runs the image's own Python (isolated mode, as the sandbox user) after everything a
command started is killed, so nothing changes under it. It names each entry with what changes
when it is rewritten (size, mtime, ctime, inode: ctime cannot be set back by the agent) and the
blocks a regular file takes, so the harness fetches only what changed and checks the disk quota
before it writes a byte. The files the harness itself sent before the command (its script) are
compared by SHA-256 there, and come back only if the command changed them. Names are the
kernel's bytes: Python's surrogate escapes carry them through JSON both ways, so a name that is
not UTF-8 is listed like any other.

A folder the sandbox user cannot read is reported, never a reason to fetch everything: what it
holds stays as the harness last saw it. A workspace beyond its depth or entry bound is reported in
the words a snapshot uses, so the run ends as the agent's failure as it does on the other backends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_mlab.sandbox.docker.fetch import batches, hex_name
from pytest_mlab.sandbox.tree_walk import Bound

LISTER = r"""
import hashlib, json, os, stat, sys
root, depth_bound, entry_bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out, unreadable, over, stack = {}, {}, "", [(root, "", 0)]
while stack and not over:  # an explicit stack, never recursion: a chain thousands deep is listed like any other
    folder, prefix, depth = stack.pop()
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        unreadable[prefix[:-1] or "."] = exc.strerror or str(exc); continue
    for name in names:
        path, rel = os.path.join(folder, name), prefix + name
        if len(out) >= entry_bound:
            over = "entries"; break
        if len(out) % 4096 == 4095:  # JSON may start with blanks: they tell the harness the host still answers
            sys.stdout.write(" "); sys.stdout.flush()
        try:
            info = os.lstat(path)
        except OSError as exc:
            unreadable[rel] = exc.strerror or str(exc); continue
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            out[rel] = ["d", 0, 0, 0, info.st_ino, "", 0]
            if depth >= depth_bound:
                over = "depth " + rel; break
            stack.append((path, rel + "/", depth + 1))
        elif stat.S_ISLNK(mode):
            out[rel] = ["l", 0, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, os.readlink(path), 0]
        else:
            out[rel] = ["f" if stat.S_ISREG(mode) else "o", info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                        info.st_ino, "", info.st_blocks * 512]
same = []  # files the harness sent before the command whose content the command left as it was
for part in [part for part in sys.argv[4].split(",") if part]:
    name, _, expected = part.partition(":")
    rel = os.fsdecode(bytes.fromhex(name))
    if out.get(rel, ["?"])[0] != "f":
        continue
    digest = hashlib.sha256()
    try:
        with open(os.path.join(root, rel), "rb", opener=lambda path, flags: os.open(path, flags | os.O_NOFOLLOW)) as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except OSError:
        continue
    if digest.hexdigest() == expected:
        same.append(rel)
cpu = ""
for name in ("cpuacct/cpuacct.usage", "cpu,cpuacct/cpuacct.usage", "cpu.stat"):
    try:
        cpu += open("/sys/fs/cgroup/" + name).read()
    except OSError:
        pass
json.dump({"entries": out, "unreadable": unreadable, "over": over, "same": same, "cpu": cpu}, sys.stdout)
"""

KIND, SIZE, TARGET, ON_DISK = 0, 1, 5, 6  # fields of an entry


@dataclass
class Listing:
    """One listing: ``entries`` by workspace path, the folders that could not be read (path ->
    why), the bound the workspace went past (a snapshot's message; empty when within), and the
    cgroup's CPU counter as the listing read it; ``same``: the files the harness sent before the
    command whose content is still what it sent."""

    entries: dict[str, list[Any]]
    unreadable: dict[str, str] = field(default_factory=dict)
    over: str = ""
    cpu: str = ""
    same: set[str] = field(default_factory=set)

    def hidden(self, rel: str) -> bool:
        """Whether ``rel`` lies inside a folder the listing could not read (then it is unknown, not gone)."""
        return any(rel == folder or rel.startswith(folder + "/") or folder == "." for folder in self.unreadable)

    def disk_use(self) -> int:
        """Bytes on disk of the workspace's regular files (data is a link to its volume: not counted)."""
        return sum(entry[ON_DISK] for entry in self.entries.values() if entry[KIND] == "f")


def lister_argv(python: str, workspace: str, bound: Bound, sent: dict[str, str] | None = None) -> list[str]:
    """The command that lists ``workspace`` in the container; ``sent``: the SHA-256 of each file
    the harness sent before the command, compared there (the harness's own script comes back
    only if the command changed it, without a second round trip to ask)."""
    sent = sent or {}
    fits = next(batches(sorted(sent)), [])  # beyond one argument's worth, files just come back
    digests = ",".join(f"{hex_name(rel)}:{sent[rel]}" for rel in fits)
    return [python, "-I", "-c", LISTER, workspace, str(bound.depth), str(bound.entries), digests]


def parse_listing(stdout: bytes, bound: Bound) -> Listing | None:
    """The listing the lister printed; None when its output is not one (it did not run to its end)."""
    try:
        report = json.loads(stdout)
        listing = Listing(dict(report["entries"]), dict(report["unreadable"]), str(report["over"]),
                          str(report.get("cpu", "")), set(report["same"]))
    except (ValueError, KeyError, TypeError):
        return None
    if listing.over == "entries":
        listing.over = (f"the workspace holds more than {bound.entries:,} files, folders and links; "
                        "the limit is the task's limits.workspace_files")
    elif listing.over:
        where = listing.over.removeprefix("depth ")[:60]
        listing.over = (f"the workspace has folders nested more than {bound.depth:,} deep ({where}...); "
                        "the limit is the task's limits.workspace_depth")
    return listing
