"""Fixtures of the spec tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.support import Layout


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    monkeypatch.chdir(tmp_path)  # messages show paths relative to the current directory
    return Layout(tmp_path)
