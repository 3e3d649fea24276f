"""Kaggle competition files through the official ``kaggle`` package.

The package is imported only here and only when a full variant is prepared: importing it tries
to log in and prints a help text when no credentials exist, so we check for credentials first
and turn every failure the user can fix (no credentials, rules not accepted, unknown
competition) into a :class:`DataError` that says what to do.
"""

from __future__ import annotations

import contextlib
import io
import os
import zipfile
from pathlib import Path

from pytest_mlab.errors import DataError

UNPACKED = ".unpacked"


def kaggle_competition(competition: str, downloads: Path) -> Path:
    """Download and unzip ``competition``'s data files; returns the folder that holds them.

    The archive is kept in ``downloads`` (the ``kaggle`` package resumes it when interrupted);
    a second call after a complete unpack returns at once, without the network.
    """
    downloads = Path(downloads)
    folder = downloads / competition
    if (folder / UNPACKED).exists():
        return folder
    downloads.mkdir(parents=True, exist_ok=True)
    api = _authenticated_api()
    try:
        api.competition_download_files(competition, path=str(downloads), quiet=False)
    except Exception as exc:  # the kaggle package raises requests' HTTPError, or others
        raise _explain(exc, competition) from None
    archive = downloads / f"{competition}.zip"
    if not archive.exists():
        raise DataError(f"the kaggle package reported no error but {archive} does not exist; "
                        f"try `kaggle competitions download -c {competition}` to see what happens")
    try:
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(folder)  # zipfile drops absolute and '..' parts of member names
    except zipfile.BadZipFile:
        archive.unlink()
        raise DataError(f"{archive} is not a valid zip archive (an interrupted download?); it was deleted, "
                        f"run the same command again") from None
    (folder / UNPACKED).write_text("")
    return folder


def credentials_hint() -> str | None:
    """None when credentials for the Kaggle API are configured, else how to configure them."""
    config_dir = Path(os.environ.get("KAGGLE_CONFIG_DIR") or Path.home() / ".kaggle")
    if os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY"):
        return None
    if os.environ.get("KAGGLE_API_TOKEN"):
        return None
    if (config_dir / "kaggle.json").is_file() or (config_dir / "access_token").is_file():
        return None
    return (f"no Kaggle API credentials found: create an API token at https://www.kaggle.com/settings/api "
            f"and save it as {config_dir / 'kaggle.json'} (chmod 600), or export KAGGLE_USERNAME and "
            f"KAGGLE_KEY (or KAGGLE_API_TOKEN)")


def _authenticated_api():
    hint = credentials_hint()
    if hint:
        raise DataError(hint)
    with contextlib.redirect_stdout(io.StringIO()) as noise:
        try:
            from kaggle.api.kaggle_api_extended import KaggleApi
        except ImportError:
            raise DataError('the kaggle package is not installed: pip install -e ".[tasks]"') from None
        api = KaggleApi()
        try:
            api.authenticate()
        except (Exception, SystemExit) as exc:
            detail = noise.getvalue().strip().splitlines()[:1] or [str(exc)]
            raise DataError(f"the Kaggle API rejected the configured credentials ({detail[0]}); "
                            f"check ~/.kaggle/kaggle.json or KAGGLE_USERNAME/KAGGLE_KEY") from None
    return api


def _explain(exc: Exception, competition: str) -> DataError:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    rules = f"https://www.kaggle.com/competitions/{competition}/rules"
    if status == 403:
        return DataError(f"Kaggle refused the download of '{competition}' (HTTP 403): accept the competition's "
                         f"rules with your account at {rules}, then run the same command again")
    if status == 401:
        return DataError("Kaggle rejected the credentials (HTTP 401): create a new API token at "
                         "https://www.kaggle.com/settings/api and replace ~/.kaggle/kaggle.json")
    if status == 404:
        return DataError(f"Kaggle has no competition '{competition}' (HTTP 404); check the name in the recipe")
    return DataError(f"downloading the Kaggle competition '{competition}' failed: {type(exc).__name__}: {exc}; "
                     f"run the same command again to resume")

