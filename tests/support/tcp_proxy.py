"""A TCP proxy whose link can be cut: the network between a worker and its database, for fault tests.

`outage(seconds)` resets every open connection and refuses new ones (accepts and closes them at once)
until the time is up, which is what a client sees when a database host restarts or a network drops.
"""

from __future__ import annotations

import socket
import struct
import threading
import time


class OutageProxy:
    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.down_until = 0.0
        self.cuts = 0  # connections reset or refused by outages
        self._live: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def outage(self, seconds: float) -> None:
        self.down_until = time.monotonic() + seconds
        with self._lock:
            live, self._live = list(self._live), set()
        for sock in live:
            self._reset(sock)

    def close(self) -> None:
        self.listener.close()
        self.outage(0)

    def _reset(self, sock: socket.socket) -> None:
        self.cuts += 1
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a RST
        except OSError:
            pass  # already closed by a pump, which shut it down first
        _end(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self.down_until:
                self._reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._live.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with self._lock:
                self._live.discard(sock)
            _end(sock)


def _end(sock: socket.socket) -> None:
    """Shut a socket down, then close it. close() alone does not wake the other pump thread blocked in recv()
    on the same socket, and the kernel keeps the connection open until that recv returns: the client would
    wait for a reply for ever (the proxy's own test caught this when one pump ended before a cut)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
