"""A TCP forwarder the tests can cut: a store going away and coming back, as its clients see it.

The service under test connects to the proxy's port instead of the store's. ``cut()`` resets
every open connection and stops listening (new connections are refused, as with a stopped
server); ``restore()`` listens again on the same port. The machine's Postgres and Redis serve
other tests, so they are cut off at the network rather than stopped.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading

from tests.server_process import free_port


class CuttableProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._pairs: dict[socket.socket, socket.socket] = {}
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="outage-proxy")

    def __enter__(self) -> CuttableProxy:
        self.restore()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped = True
        self.cut()
        self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.setblocking(False)
        with self._lock:
            self._listener = listener
            self._selector.register(listener, selectors.EVENT_READ)
        self._wake_w.send(b"x")

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            if listener is not None:
                self._selector.unregister(listener)
                listener.close()
            while self._pairs:
                self._drop(next(iter(self._pairs)), reset=True)
        self._wake_w.send(b"x")

    def _run(self) -> None:
        while not self._stopped:
            for key, _ in self._selector.select(timeout=0.5):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                with self._lock:
                    if sock is self._wake_r:
                        sock.recv(4096)
                    elif sock is self._listener:
                        self._accept(sock)
                    elif sock in self._pairs:
                        self._pump(sock)

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except BlockingIOError:
            return
        try:
            upstream = socket.create_connection(self._target, timeout=3)
        except OSError:
            client.close()
            return
        for sock in (client, upstream):
            sock.setblocking(True)
            sock.settimeout(None)
        self._pairs[client] = upstream
        self._pairs[upstream] = client
        self._selector.register(client, selectors.EVENT_READ)
        self._selector.register(upstream, selectors.EVENT_READ)

    def _pump(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(sock, reset=False)
            return
        try:
            self._pairs[sock].sendall(data)
        except OSError:
            self._drop(sock, reset=False)

    def _drop(self, sock: socket.socket, *, reset: bool) -> None:
        other = self._pairs.pop(sock, None)
        for s in (sock, other):
            if s is None:
                continue
            self._pairs.pop(s, None)
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(s)
            if reset:  # RST, as a peer that went away answers
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
