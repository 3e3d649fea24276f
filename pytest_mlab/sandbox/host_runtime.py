"""The parts of the host that sandboxed code needs, read-only: system directories, a short list of
/etc files and the installation of the task runtime's Python (:mod:`pytest_mlab.task_runtime`),
not the harness's. The bwrap and docker backends bind the same set, so a script sees the same
interpreter and packages in both. Both mount their private /tmp first and these over it, so an
installation under /tmp (a venv made there) stays visible."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import subprocess
import sys

from pytest_mlab.errors import TaskRuntimeError
from pytest_mlab.task_runtime.choice import task_python

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs need from /etc: the loader, users and groups, time zone, TLS roots, fonts,
# the alternatives that /usr/bin links through. Not shadow files, ssh keys or the like.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone", "passwd",
             "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "protocols", "services", "ssl",
             "ca-certificates", "fonts", "mime.types", "matplotlibrc", "python3", f"python3.{sys.version_info.minor}")

_DESCRIBE = """
import json, site, sys, sysconfig
print(json.dumps({"prefix": sys.prefix, "base_prefix": sys.base_prefix, "exec_prefix": sys.exec_prefix,
                  "base_exec_prefix": sys.base_exec_prefix, "paths": sysconfig.get_paths(),
                  "site": site.getsitepackages(), "libdir": sysconfig.get_config_var("LIBDIR") or "",
                  "version": list(sys.version_info[:3]),
                  "user_site": site.getusersitepackages() if site.ENABLE_USER_SITE else None}))
"""


def python_dirs(python: str | None = None) -> tuple[str, ...]:
    """What a sandbox mounts for ``python`` (default: the task runtime's interpreter) to run with
    its packages."""
    return installation_dirs(python or task_python())


@functools.lru_cache(maxsize=None)
def describe(python: str) -> dict:
    """``python``'s prefixes, sysconfig paths, site-packages, library folder and version, as it
    reports them itself (pytest's own in this process)."""
    if python == sys.executable:
        namespace: dict = {}
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            exec(_DESCRIBE, namespace)  # the same few lines as for another interpreter
        return json.loads(printed.getvalue())
    try:
        answer = subprocess.run([python, "-I", "-c", _DESCRIBE], capture_output=True, text=True, timeout=120)
        return json.loads(answer.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise TaskRuntimeError(f"the task runtime's Python {python} does not run here ({exc}); rebuild it "
                               "(pytest-mlab runtime build) or choose another with --mlab-runtime") from exc


@functools.lru_cache(maxsize=None)
def installation_dirs(python: str) -> tuple[str, ...]:
    """``python``'s prefixes, standard library and site-packages, and the folders of the file it
    is and the file it links to: outermost only, never the root or a system folder (bound anyway)."""
    found = describe(python)
    candidates = {found["prefix"], found["base_prefix"], found["exec_prefix"], found["base_exec_prefix"],
                  *found["paths"].values(), *found["site"], found["user_site"],
                  os.path.dirname(os.path.abspath(python)), os.path.dirname(os.path.realpath(python))}
    real = {os.path.realpath(path) for path in candidates if path and os.path.isdir(path)}
    kept = sorted(path for path in real if path != "/")
    return tuple(path for path in kept
                 if not any(path != other and path.startswith(other + os.sep) for other in kept)
                 and not any(path == system or path.startswith(system + os.sep) for system in SYSTEM_DIRS))
