"""A loopback TCP relay in front of a docker daemon: it counts the bytes each way (what a remote
host's traffic costs, read off the socket rather than estimated) and can hang (accept
connections, read what comes, never answer), as a host does whose daemon froze.

Used by the remote-host tests and by bench/remote_transfers.py.
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlparse


class Relay:
    """``url`` relays to ``target`` (``tcp://HOST:PORT``) until :meth:`hang` or :meth:`close`."""

    def __init__(self, target: str) -> None:
        parsed = urlparse(target)
        self._target = (parsed.hostname or "127.0.0.1", parsed.port or 2375)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"tcp://127.0.0.1:{self._server.getsockname()[1]}"
        self.sent = 0  # bytes from the client to the daemon
        self.received = 0  # bytes from the daemon to the client
        self._lock = threading.Lock()
        self._hung = threading.Event()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def counts(self) -> tuple[int, int]:
        """(bytes sent to the daemon, bytes received from it) so far."""
        with self._lock:
            return self.sent, self.received

    def hang(self) -> None:
        """From now on nothing reaches either side, on open connections and new ones alike."""
        self._hung.set()

    def close(self) -> None:
        self._closed.set()
        self._server.close()
        for sock in list(self._sockets):
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self._sockets.append(client)
            if self._hung.is_set():
                threading.Thread(target=self._swallow, args=(client,), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            self._sockets.append(upstream)
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _swallow(self, client: socket.socket) -> None:
        try:
            while client.recv(1 << 16):
                pass
        except OSError:
            pass

    def _pump(self, source: socket.socket, sink: socket.socket, outward: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                if self._hung.is_set():
                    continue  # read and dropped: the other side waits for ever
                with self._lock:
                    if outward:
                        self.sent += len(data)
                    else:
                        self.received += len(data)
                sink.sendall(data)
        except OSError:
            pass
        if not self._hung.is_set():
            for sock in (sink, source):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
