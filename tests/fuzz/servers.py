"""Misbehaving servers for the live and archive paths: a port that accepts and never answers, and
a proxy in front of the emulator that spoils its resource responses (truncated, garbled, list
items that are not objects)."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

Spoil = Callable[[str, bytes], bytes]


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()


def spoilers() -> dict[str, Spoil]:
    """Ways to spoil a JSON response body, by name."""

    def items(replacement: object) -> Spoil:
        def spoil(_path: str, body: bytes) -> bytes:
            doc = json.loads(body)
            if isinstance(doc, dict) and isinstance(doc.get("items"), list):
                doc["items"] = [replacement for _ in doc["items"]] or [replacement]
            return json.dumps(doc).encode()

        return spoil

    return {
        "truncated": lambda _p, body: body[: len(body) // 2],
        "garbled": lambda _p, body: bytes(b ^ 0x5A for b in body),
        "empty body": lambda _p, _b: b"",
        "not JSON": lambda _p, _b: b"<html>502 Bad Gateway</html>",
        "items are strings": items("pod"),
        "items are null": items(None),
        "items are numbers": items(7),
        "items is a mapping": lambda _p, body: body.replace(b'"items":[', b'"items":{"a":[', 1),
        "a JSON number": lambda _p, _b: b"42",
        "nested 100,000 deep": lambda _p, _b: b"[" * 100_000 + b"]" * 100_000,
    }


@contextlib.contextmanager
def spoiling_proxy(upstream: int, spoil: Spoil) -> Iterator[int]:
    """An HTTP proxy to 127.0.0.1:``upstream`` that passes discovery through and spoils the
    body of every list or get of a resource (paths under /api/v1/ and /apis/*/*/)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
            conn.request("GET", self.path, headers={"Accept": "application/json"})
            reply = conn.getresponse()
            body = reply.read()
            conn.close()
            resource = self.path.startswith("/api/v1/") or self.path.count("/") >= 5
            if resource and reply.status == 200 and "watch=" not in self.path:
                body = spoil(self.path, body)
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def kubeconfig(path: Path, server: str, *, user: dict[str, object] | None = None) -> Path:
    """A kubeconfig for ``server`` (with ``user`` as its user entry, default none)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user or {}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(doc))
    return path
