"""The parts of the host that sandboxed code needs, read-only: system directories, a short list of
/etc files and the Python installation running pytest. The bwrap and docker backends bind the same
set, so a script sees the same interpreter and packages as the harness. Both mount their private /tmp
first and these over it, so an installation under /tmp (a venv made there) stays visible."""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs need from /etc: the loader, users and groups, time zone, TLS roots, fonts,
# the alternatives that /usr/bin links through. Not shadow files, ssh keys or the like.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone", "passwd",
             "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "protocols", "services", "ssl",
             "ca-certificates", "fonts", "mime.types", "matplotlibrc", "python3", f"python3.{sys.version_info.minor}")


@functools.lru_cache(maxsize=None)
def python_dirs() -> tuple[str, ...]:
    """The interpreter's installation: prefixes, stdlib, site-packages, user site-packages."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)),
                  *(path for path in sysconfig.get_paths().values()),
                  *site.getsitepackages()}
    if site.ENABLE_USER_SITE:
        candidates.add(site.getusersitepackages())
    real = {os.path.realpath(path) for path in candidates if path and os.path.isdir(path)}
    # binding a parent covers its children; never bind the whole root or a system directory twice
    kept = sorted(path for path in real if path != "/")
    return tuple(path for path in kept
                 if not any(path != other and path.startswith(other + os.sep) for other in kept)
                 and not any(path == system or path.startswith(system + os.sep) for system in SYSTEM_DIRS))
