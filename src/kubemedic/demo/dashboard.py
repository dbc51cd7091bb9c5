"""The dashboard during the demo: ``kubemedic web`` over the demo's archive, on 127.0.0.1.

It starts before the first act, over an archive created (and migrated) for it, so a person can
open it and watch the acts fill it. ``--port`` is a wish: 0, or a port something else already
listens on, gets a free one instead.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

from kubemedic.demo.children import Child, Children, until

__all__ = ["choose_port", "start"]


def choose_port(wanted: int) -> int:
    """``wanted`` if 127.0.0.1 can listen on it, else a free port."""
    if wanted:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", wanted))
            except OSError:
                pass
            else:
                return wanted
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def start(children: Children, *, db_url: str, port: int) -> tuple[Child, str]:
    """``kubemedic web`` on ``port``; (the child, its address) once it answers."""
    child = children.start(
        "the dashboard (kubemedic web)",
        ["web", "--db", db_url, "--host", "127.0.0.1", "--port", str(port)],
        log="web.log",
    )
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/api/v1/clusters", timeout=2) as reply:  # noqa: S310
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    await until(answers, what="the dashboard answering", children=children, timeout=60, blame=child)
    return child, base + "/"
