"""The data recipe of tasks made from MLAgentBench folders (see :mod:`pytest_mlab.spec.mlagentbench`):
the folder's own scripts/prepare.py makes the data, in a copy of the folder, never in the folder.

prepare.py runs as the original runs it: from scripts/, with an empty line on its standard input
(the original asks for consent with ``input()``), writing data into ``../env`` and answers beside
itself. Then what it added to env/ is the task's data (``public``: read-only in every workspace),
and scripts/, with eval.py and those answers, stays ``hidden`` with an unchanged copy of the
starter files beside it as env/, where eval.py's ``sys.path.append("../env")`` finds them: the
agent sees env/ as prepared, and nothing of scripts/. A folder from a url is fetched, verified and
unpacked first (:mod:`pytest_mlab.data.archive`), once per archive.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Callable

from pytest_mlab.data.archive import fetch_folder
from pytest_mlab.data.kaggle import credentials_hint
from pytest_mlab.errors import DataError
from pytest_mlab.spec.mlagentbench import read_folder, scripts_digest
from pytest_mlab.spec.models import shipped_files

OUTPUT_SHOWN = 20  # last lines of a failed prepare.py's output, in its error


def prepare(public: Path, hidden: Path, seed: int, downloads: Path | None = None, *, folder: str | None = None,
            scripts_digest: str | None = None, url: str | None = None, sha256: str | None = None,
            path: str | None = None) -> None:
    """The data of the folder at ``folder``, or of the one at ``path`` in the archive at ``url``.
    ``seed`` changes nothing: the original's prepare.py takes none."""
    source, name = _source(folder, scripts_digest, url, sha256, path, downloads)
    facts = read_folder(source, name)
    env, scripts = Path(hidden) / "env", Path(hidden) / "scripts"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(source / "env", env, ignore=ignore)
    shutil.copytree(source / "scripts", scripts, ignore=ignore)
    shipped = _stamps(env)
    if facts.prepares:
        _run_prepare(scripts, name)
    _take_data(env, Path(public), shipped, name)


def _source(folder: str | None, digest: str | None, url: str | None, sha256: str | None, path: str | None,
            downloads: Path | None) -> tuple[Path, str]:
    """The folder to prepare, and how messages name it."""
    if folder is not None:
        if digest != scripts_digest(Path(folder)):
            raise DataError(f"the folder {folder} changed after its spec was read (a file of scripts/); "
                            f"run the same command again")
        return Path(folder), f"the folder {folder}"
    if url is None or sha256 is None or downloads is None:
        raise DataError("a task made from an MLAgentBench folder needs the folder, or its url and sha256, "
                        "as arguments of its data recipe")
    unpacked = fetch_folder(url, sha256, downloads, mismatch_advice=(
        "The archive does not match the spec's mlagentbench.sha256: nothing was unpacked, and the folder's "
        "scripts/prepare.py never ran. If the url gives the archive you mean, write the SHA-256 it has as "
        "mlagentbench.sha256 (in quotes); else correct mlagentbench.url. A download that broke on the way "
        "fails the same check: run the same command again to tell the two apart"))
    inside = unpacked / path if path else unpacked
    name = f"the folder '{path}' of the archive {url}" if path else f"the archive {url}"
    if path and not inside.is_dir():
        top = sorted(entry.name for entry in unpacked.iterdir())
        raise DataError(f"the archive {url} has no folder '{path}' (its top level holds: "
                        f"{', '.join(top) or 'nothing'}); correct mlagentbench.path in the spec")
    return inside, name


def _run_prepare(scripts: Path, name: str) -> None:
    """scripts/prepare.py, its output passed on as it comes (downloads show progress) and its end kept."""
    process = subprocess.Popen([sys.executable, "prepare.py"], cwd=scripts, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    process.stdin.write("\n")  # the consent prompt of the original's prepare.py
    process.stdin.close()
    tail: deque[str] = deque(maxlen=OUTPUT_SHOWN)
    cause: tuple[int, str, str] | None = None  # the first line of the output that names a known cause
    for number, line in enumerate(process.stdout, 1):
        sys.stdout.write(line)
        sys.stdout.flush()
        tail.append(line)
        if cause is None:
            cause = _known_cause(number, line)
    code = process.wait()
    if code != 0:
        shown = "".join(tail).rstrip() or "(no output)"
        said = (f": {cause[2]} (line {cause[0]} of its output: {cause[1]!r}). Fix that" if cause else "; fix it")
        raise DataError(f"{name}: scripts/prepare.py failed with exit code {code}{said}, then prepare the data "
                        f"again. The end of its output:\n{shown}")


def _known_cause(number: int, line: str) -> tuple[int, str, str] | None:
    """(line number, the line, what to do) when ``line`` names a cause of failure we know. The
    original's prepare.py runs the kaggle command and goes on when it fails, so its last error (a
    FileNotFoundError for the csv that was never downloaded) hides the first, the real one."""
    for pattern, advice in KNOWN_CAUSES:
        found = pattern.search(line)
        if found:
            return number, line.strip()[:300], advice(found)
    return None


def _kaggle_credentials(_found: re.Match[str]) -> str:
    """Asked of this machine's set-up: prepare.py runs the kaggle command with the same environment."""
    return credentials_hint() or ("the Kaggle API refused the configured credentials: create a new API token "
                                  "at https://www.kaggle.com/settings/api and replace the configured one")


def _missing_command(found: re.Match[str]) -> str:
    command = found.group(1) or found.group(2)
    install = 'pip install -e ".[tasks]"' if command == "kaggle" else f"install {command} with the system's packages"
    return f"prepare.py runs the command '{command}', which is not installed: {install}"


KNOWN_CAUSES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"Authentication required to call the Kaggle API|Could not find kaggle\.json|"
                r"You must authenticate|401 - Unauthorized|401 Client Error", re.IGNORECASE), _kaggle_credentials),
    (re.compile(r"403 - Forbidden|403 Client Error", re.IGNORECASE),
     lambda _found: "Kaggle refused the download (HTTP 403): accept the competition's rules with your Kaggle "
                    "account, on the competition's page"),
    (re.compile(r"No such file or directory: '(kaggle|unzip)'|\b(kaggle|unzip): (?:command )?not found"),
     _missing_command),
    (re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'"),
     lambda found: f"prepare.py imports the Python package '{found.group(1).split('.')[0]}', which is not "
                   f"installed: install it"),
    (re.compile(r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
                r"nodename nor servname provided|Failed to establish a new connection"),
     lambda _found: "the network could not be reached, and prepare.py downloads the data: prepare it where the "
                    "network is reachable"),
)


def _stamps(env: Path) -> dict[str, tuple[int, int]]:
    return {relative: (path.stat().st_size, path.stat().st_mtime_ns) for path, relative in shipped_files(env)}


def _take_data(env: Path, public: Path, shipped: dict[str, tuple[int, int]], name: str) -> None:
    """Move what prepare.py added to env/ into ``public``, leaving env/ as shipped."""
    now = _stamps(env)
    changed = sorted(relative for relative, stamp in shipped.items() if now.get(relative) != stamp)
    if changed:
        raise DataError(f"{name}: scripts/prepare.py changed or removed starter files of env/ ({', '.join(changed)}); "
                        f"it may only add files there: the starter files are copied into workspaces as shipped")
    for path in sorted(env.rglob("*")):
        relative = path.relative_to(env).as_posix()
        if path.is_symlink():
            raise DataError(f"{name}: scripts/prepare.py left env/{relative}, a symbolic link; data must be "
                            f"regular files")
        if path.is_file() and relative not in shipped:
            (public / relative).parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, public / relative)
    for folder in sorted((path for path in env.rglob("*") if path.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()  # left empty once its data moved
