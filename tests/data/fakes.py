"""Local stand-ins for the real data sources, for testing full data recipes offline.

- :class:`FileServer`: a loopback HTTP server for the files of a folder, with ``Range`` support,
  a request log, and transfers that can be cut off mid-file.
- :func:`fake_kaggle`: replaces the ``kaggle`` package's API at its boundary (log-in and
  competition download) with one that zips files from a local folder, or fails like Kaggle does.
"""

from __future__ import annotations

import re
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


@dataclass
class FileServer:
    """``with FileServer(folder) as server: download(server.url("a.csv"), ...)``.

    ``cut[name] = n`` makes the next ``n`` transfers of ``name`` stop halfway through (the
    connection closes early, as a dropped link does). ``log`` lists ``(name, Range header)``.
    """

    root: Path
    cut: dict[str, int] = field(default_factory=dict)
    log: list[tuple[str, str | None]] = field(default_factory=list)

    def __enter__(self) -> "FileServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                name = self.path.lstrip("/")
                server.log.append((name, self.headers.get("Range")))
                path = server.root / name
                if not path.is_file():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                start = 0
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
                if match:
                    start = int(match.group(1))
                    if start >= len(data):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                body = data[start:]
                if server.cut.get(name, 0) > 0:
                    server.cut[name] -= 1
                    body = body[: len(body) // 2]
                self.wfile.write(body)
                self.wfile.flush()
                self.close_connection = True

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def url(self, name: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/{name}"


class FakeHTTPError(Exception):
    """Shaped like ``requests.HTTPError``: the status is on ``.response.status_code``."""

    def __init__(self, status: int) -> None:
        super().__init__(f"{status} Client Error")
        self.response = type("Response", (), {"status_code": status})()


def fake_kaggle(monkeypatch: pytest.MonkeyPatch, competitions: dict[str, Path], *, status: int | None = None,
                credentials: bool = True, truncate: int = 0) -> list[str]:
    """Serve ``competitions[name]``'s files as the competition's zip; returns the download log.

    ``status`` makes every download fail with that HTTP status; ``credentials=False`` removes
    every way the kaggle package could find credentials; ``truncate`` drops that many bytes from
    the end of the zip, as a transfer cut short.
    """
    from kaggle.api.kaggle_api_extended import KaggleApi

    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    config_dir = Path(tempfile.mkdtemp(prefix="kaggle-config-"))  # empty: no kaggle.json, no access_token
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(config_dir))
    if credentials:
        monkeypatch.setenv("KAGGLE_USERNAME", "tester")
        monkeypatch.setenv("KAGGLE_KEY", "0" * 32)
    log: list[str] = []

    def authenticate(self) -> None:
        self._authenticated = True

    def competition_download_files(self, competition: str, path=None, force=False, quiet=True) -> None:
        log.append(competition)
        if status is not None:
            raise FakeHTTPError(status)
        if competition not in competitions:
            raise FakeHTTPError(404)
        archive = Path(path) / f"{competition}.zip"
        with zipfile.ZipFile(archive, "w") as bundle:
            for file in sorted(competitions[competition].rglob("*")):
                if file.is_file():
                    bundle.write(file, file.relative_to(competitions[competition]).as_posix())
        if truncate:
            archive.write_bytes(archive.read_bytes()[:-truncate])

    monkeypatch.setattr(KaggleApi, "authenticate", authenticate)
    monkeypatch.setattr(KaggleApi, "competition_download_files", competition_download_files)
    return log
