"""Build the locked task runtime with uv: a virtual environment of the harness's base interpreter
holding exactly the lock's packages, their bytecode compiled (sandboxes mount it read-only and set
PYTHONDONTWRITEBYTECODE, so a script would otherwise compile torch's modules on every run).

One folder per (lock, interpreter) digest under the runtime home; a marker file written last says
it is complete, so an interrupted build is started over and a complete one is never touched again.
Processes that need the same runtime at once (xdist workers, a CLI command beside a session) take
turns on a file lock: one builds, the others wait and then use it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.errors import TaskRuntimeError
from pytest_mlab.turns import exclusive_turn

PACKAGE = Path(__file__).resolve().parent
REQUIREMENTS = PACKAGE / "requirements.in"
OVERRIDES = PACKAGE / "overrides.txt"
LOCK = PACKAGE / "requirements.lock"
#: The platform and Python the lock is resolved for (``pytest-mlab runtime lock``).
LOCK_PYTHON = "3.11"
LOCK_PLATFORM = "x86_64-manylinux_2_28"
#: Where torch's CPU builds come from, unless a find-links folder pip is configured with holds the locked one.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
HOME_VARIABLE = "MLAB_RUNTIME_HOME"
COMPLETE = "mlab-runtime.json"
#: How often a build that is still going says so.
TICK_S = 20.0
#: What a first build costs, as the README gives it (37 to 41 s and 3.9 GB on a 2-core machine).
EXPECTED = "about a minute and 4 GB on disk, once per lock"

Progress = Callable[[str], None]


def runtime_home() -> Path:
    """Where locked runtimes are built: $MLAB_RUNTIME_HOME, else the cache folder's task-runtime/."""
    configured = os.environ.get(HOME_VARIABLE)
    return Path(configured).expanduser().resolve() if configured else default_cache_dir() / "task-runtime"


def base_interpreter() -> Path:
    """The interpreter the harness's own environment was made from: the runtime is a virtual
    environment of it, so sandboxes mount one Python installation for both."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys.base_prefix) / "bin" / version, Path(getattr(sys, "_base_executable", sys.executable))):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise TaskRuntimeError(f"cannot find the Python that {sys.executable} was made from (looked in "
                           f"{sys.base_prefix}/bin); run with --mlab-runtime=host or a Python of your own")


def lock_digest(lock: Path = LOCK) -> str:
    """What names a runtime: the lock's bytes and the interpreter it is built for."""
    digest = hashlib.sha256(lock.read_bytes())
    digest.update(f"\0{sys.implementation.name}-{sys.version_info.major}.{sys.version_info.minor}"
                  f"\0{os.path.realpath(base_interpreter())}".encode())
    return digest.hexdigest()[:16]


def runtime_folder(home: Path | None = None, lock: Path = LOCK) -> Path:
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    return (home or runtime_home()) / f"{tag}-{lock_digest(lock)}"


def interpreter_of(folder: Path) -> Path:
    return folder / "bin" / "python"


def is_built(folder: Path) -> bool:
    return (folder / COMPLETE).is_file()


def build_record(folder: Path) -> dict:
    """What the build wrote in its marker: lock digest, package count, seconds, bytes."""
    try:
        return json.loads((folder / COMPLETE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def ensure_built(*, home: Path | None = None, lock: Path = LOCK, progress: Progress | None = None) -> Path:
    """The locked runtime's interpreter, built first if this machine has none for this lock."""
    folder = runtime_folder(home, lock)
    if is_built(folder):
        return interpreter_of(folder)
    say = progress or _to_stderr
    folder.parent.mkdir(parents=True, exist_ok=True)
    waiting = f"waiting for another process that is building the task runtime ({folder.parent})"
    with exclusive_turn(folder.parent / f".{folder.name}.lock", lambda: say(waiting)):
        if not is_built(folder):  # another process may have built it while this one waited
            _build(folder, lock, say)
    return interpreter_of(folder)


def _to_stderr(line: str) -> None:
    print(f"pytest-mlab: {line}", file=sys.stderr, flush=True)


def _build(folder: Path, lock: Path, say: Progress) -> None:
    if folder.exists():  # an interrupted build: start over
        shutil.rmtree(folder)
    packages = len(locked_packages(lock))
    say(f"building the task runtime, the agents' Python environment ({packages} packages from {lock.name}; "
        f"{EXPECTED}) in {folder}")
    started = time.monotonic()
    uv = uv_binary()
    try:
        _run([uv, "venv", "--quiet", "--no-config", "--python", str(base_interpreter()), str(folder)], say, started)
        _run([uv, "pip", "sync", "--no-config", "--python", str(interpreter_of(folder)), "--compile-bytecode",
              *package_sources(lock), str(lock)], say, started)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    seconds = time.monotonic() - started
    size = folder_bytes(folder)
    record = {"lock": lock_digest(lock), "packages": packages, "seconds": round(seconds, 1), "bytes": size,
              "python": str(base_interpreter())}
    (folder / COMPLETE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    say(f"the task runtime is ready: {packages} packages, {size / 1e9:.1f} GB, built in {seconds:.0f} s")


def _run(argv: list[str], say: Progress, started: float) -> None:
    """Run a uv command, passing its summary lines on (not one per package) and saying every
    TICK_S seconds that the build goes on; a failure is a TaskRuntimeError with uv's own words."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "NO_COLOR": "1"})
    except OSError as exc:
        raise TaskRuntimeError(f"cannot start uv ({argv[0]}): {exc}; reinstall pytest-mlab, which depends on uv") \
            from exc
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            lines.append(line)
            if line and not line.lstrip().startswith(("+ ", "- ")):
                say(line.strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while True:
        try:
            proc.wait(timeout=TICK_S)
            break
        except subprocess.TimeoutExpired:
            say(f"still building the task runtime ({time.monotonic() - started:.0f} s so far)")
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    reader.join()
    if proc.returncode != 0:
        tail = "\n".join(lines[-15:])
        raise TaskRuntimeError(
            f"building the task runtime failed (uv exited with code {proc.returncode}):\n{tail}\n"
            f"The lock is resolved for CPython {LOCK_PYTHON} on Linux x86_64 and its first build downloads about "
            f"1.5 GB from PyPI (torch's CPU build from {TORCH_CPU_INDEX}, unless a find-links folder pip is "
            "configured with holds it). Where that cannot work, run agents' scripts with a Python of your own "
            "(--mlab-runtime=PATH-TO-PYTHON) or the harness's (--mlab-runtime=host); see docs/sandboxes.md")


def uv_binary() -> str:
    try:
        from uv import find_uv_bin
    except ImportError as exc:
        raise TaskRuntimeError("the uv package is missing from pytest-mlab's environment; reinstall pytest-mlab "
                               "(pip install -e .), which depends on it") from exc
    return find_uv_bin()


def locked_packages(lock: Path = LOCK) -> dict[str, str]:
    """name -> version, as the lock pins them."""
    pins = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", lock.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {name.lower(): version for name, version in pins}


def package_sources(lock: Path = LOCK) -> list[str]:
    """uv's arguments for where packages come from: PyPI, every find-links location pip is
    configured with (a machine's own wheel folder), and PyTorch's CPU index where the locked
    torch build is in none of those folders."""
    links = pip_find_links()
    sources = [f"--find-links={link}" for link in links]
    torch = locked_packages(lock).get("torch", "")
    if "+" in torch and not any(_holds(link, f"torch-{torch}-") for link in links):
        sources.append(f"--extra-index-url={TORCH_CPU_INDEX}")
    return [*sources, "--index-strategy", "unsafe-best-match"]


def pip_find_links() -> list[str]:
    """The find-links locations pip would use here, from its environment variable and its
    configuration files (``pip config list``), in pip's order."""
    found = os.environ.get("PIP_FIND_LINKS", "").split()
    # PIP_QUIET (CI sets it) would make `pip config list` print nothing
    environment = {name: value for name, value in os.environ.items() if name not in ("PIP_QUIET", "PIP_VERBOSE")}
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                timeout=60, env=environment).stdout
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    for key, value in re.findall(r"^([^=\s]+)='(.*)'$", listed, flags=re.MULTILINE):
        if key.endswith(".find-links"):
            found += value.split()
    return list(dict.fromkeys(found))


def _holds(link: str, prefix: str) -> bool:
    parsed = urlparse(link)
    folder = Path(parsed.path) if parsed.scheme == "file" else Path(link) if not parsed.scheme else None
    return folder is not None and folder.is_dir() and any(path.name.startswith(prefix) for path in folder.iterdir())


def folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def remove_other_runtimes(home: Path | None = None, lock: Path = LOCK) -> list[Path]:
    """Remove the runtimes in ``home`` built for other locks (a checkout that moved on leaves one
    of 4 GB behind per lock), each under its own build lock, so none is removed mid-build; the
    current lock's is kept."""
    home = home or runtime_home()
    keep = runtime_folder(home, lock)
    removed = []
    for folder in sorted(home.glob("py*-*")) if home.is_dir() else ():
        if folder == keep or not folder.is_dir():
            continue
        with exclusive_turn(home / f".{folder.name}.lock", lambda: None):
            shutil.rmtree(folder, ignore_errors=True)
        (home / f".{folder.name}.lock").unlink(missing_ok=True)
        removed.append(folder)
    return removed


def lock_command(out: Path = LOCK) -> list[str]:
    """``uv pip compile`` of requirements.in into the lock: for the lock's platform and Python,
    keeping the pins the lock already has unless a requirement changed (uv prefers them)."""
    return [uv_binary(), "pip", "compile", "--quiet", "--no-config", str(REQUIREMENTS), "--override", str(OVERRIDES),
            "--python-version", LOCK_PYTHON, "--python-platform", LOCK_PLATFORM, *package_sources(out),
            "--no-emit-find-links", "--no-emit-index-url", "--custom-compile-command", "pytest-mlab runtime lock",
            "-o", str(out)]
