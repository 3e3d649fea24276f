"""Writers that data recipes share, so generated data is byte-for-byte reproducible."""

from __future__ import annotations

import io
import pathlib
import zipfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def save_npz(path: pathlib.Path, **arrays: np.ndarray) -> None:
    """Like ``np.savez``, but with fixed zip timestamps, so the same arrays give the same bytes."""
    import numpy as np  # here: every data recipe imports the task API, and not every one writes arrays

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), buffer.getvalue())
