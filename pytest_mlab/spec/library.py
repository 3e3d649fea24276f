"""The index of specs: every spec of one kind in some folders, by name.

A :class:`SpecLibrary` reads files lazily and remembers failures per file, so one broken spec
never stops the others from loading. Reading and merging a file is reading.py's; building a typed
spec from it, builders.py's.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Mapping

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.memo import remembered
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.reading import (RawSpec, WantedBy, display_path, merge_extends, nameless, read_raw,
                                      schema_checked)
from pytest_mlab.spec.suffixes import SPEC_SUFFIXES
from pytest_mlab.spec.yaml_lines import LineMap


class SpecLibrary:
    """Every spec of one ``kind`` in ``folders``, by name."""

    def __init__(self, kind: str, folders: list[Path], homes: Mapping[str, Path] | None = None) -> None:
        self.kind = kind
        self.folders = [Path(folder) for folder in folders]
        self.homes = dict(homes or {})  # the folder of each kind, for hints
        self._files: dict[str, list[RawSpec]] | None = None
        self._unreadable: dict[Path, SpecError] = {}
        self._read: dict[str, RawSpec | SpecError] = {}

    def read(self, path: Path) -> RawSpec:
        """The spec in ``path``, parsed once however often it is asked for (errors too)."""
        key = os.path.abspath(path)  # with the current directory, this fixes the display path
        return remembered(self._read, key, lambda: read_raw(path, self.kind, self.homes), SpecError)

    def _index(self) -> dict[str, list[RawSpec]]:
        if self._files is None:
            self._files = {}
            for folder in self.folders:
                if not folder.is_dir():
                    continue
                for path in sorted(folder.iterdir()):
                    if path.suffix not in SPEC_SUFFIXES or not path.is_file():
                        continue
                    try:
                        raw = self.read(path)
                    except SpecError as exc:
                        self._unreadable[path] = exc
                        continue
                    if raw.name is None:
                        self._unreadable[path] = nameless(raw)
                        continue
                    self._files.setdefault(raw.name, []).append(raw)
        return self._files

    def names(self) -> list[str]:
        return sorted(self._index())

    def entries(self, name: str) -> list[RawSpec]:
        """The files that define ``name`` (more than one is an error, see :meth:`check_unique`)."""
        return list(self._index().get(name, ()))

    def unreadable(self) -> list[SpecError]:
        """Files in the folders that could not be read as specs of this kind."""
        return list(self.unreadable_files().values())

    def unreadable_files(self) -> dict[Path, SpecError]:
        """The same, by file."""
        self._index()
        return dict(self._unreadable)

    def add(self, raw: RawSpec) -> None:
        """Make a file outside the folders (a task collected by pytest) known by name; one without
        a name is counted among the files that could not be read."""
        if raw.name is None:
            self._index()
            self._unreadable[raw.path] = nameless(raw)
            return
        entries = self._index().setdefault(raw.name, [])
        if not any(entry.real_path == raw.real_path for entry in entries):
            entries.append(raw)

    def raw(self, name: str, *, wanted_by: WantedBy | None = None) -> RawSpec:
        entries = self._index().get(name)
        if not entries:
            raise self.unknown(name, wanted_by)
        self.check_unique(entries[0])
        return entries[0]

    def check_unique(self, raw: RawSpec) -> None:
        entries = self._index().get(raw.name, []) if raw.name else []
        others = [entry for entry in entries if entry.real_path != raw.real_path]
        if others:
            other = others[0]
            raise SpecError(raw.display, raw.lines.locate(("name",), raw.display)[1], "name",
                            f"duplicate {self.kind} name '{raw.name}': also defined in "
                            f"{other.display}:{other.lines.locate(('name',), other.display)[1]}; names must be unique")

    def unknown(self, name: str, wanted_by: WantedBy | None) -> SpecError:
        known = self.names()
        guess = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean '{guess[0]}'? " if guess else ""
        folders = ", ".join(display_path(folder) for folder in self.folders)
        message = f"unknown {self.kind.lower()} '{name}'; {hint}known: {', '.join(known) or 'none'} (from {folders})"
        broken = self.unreadable()
        if broken:
            message += "; these files could not be read: " + "; ".join(err.render_one() for err in broken)
        if wanted_by:
            return SpecError(wanted_by[0], wanted_by[1], wanted_by[2], message)
        return SpecError(folders, None, "", message)

    def resolve(self, raw: RawSpec) -> tuple[dict[str, Any], LineMap]:
        """Apply ``extends:`` chains (parents first), detecting cycles, then validate the result."""
        data, lines, problems = self.checked(raw)
        problems.raise_any()
        return data, lines

    def checked(self, raw: RawSpec) -> tuple[dict[str, Any], LineMap, Problems]:
        """:meth:`merged`, with what the schema rejects recorded as problems (not raised yet)."""
        data, lines = self.merged(raw)
        return data, lines, schema_checked(raw, self.kind, data, lines)

    def merged(self, raw: RawSpec) -> tuple[dict[str, Any], LineMap]:
        """Apply ``extends:`` chains (parents first), detecting cycles; the result is not validated."""
        return merge_extends(raw, self.kind, lambda name, where: self.raw(name, wanted_by=where))
