"""The terminal for ``--llm=human`` and Request Help, with pytest's output capture lifted while a
person reads and types."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest

from pytest_mlab.llm.human import Console


def terminal_console(config: pytest.Config) -> Console:
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        return Console()

    @contextmanager
    def suspended() -> Iterator[None]:
        capture.suspend_global_capture(in_=True)  # in_=True: give stdin back too, as pdb does
        try:
            yield
        finally:
            capture.resume_global_capture()

    return Console(suspend=suspended)
