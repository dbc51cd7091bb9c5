"""Serving the dashboard with uvicorn: where it may listen, and the token that guards it.

The rule: the dashboard listens on a loopback address (``127.0.0.1`` by default, ``::1``,
``localhost``) unless a token is configured; any other address (``0.0.0.0``, a pod IP) is
refused without one, since the archive tells whoever can reach it what went wrong where. The
token is read from a file (``--token-file``; a mounted Secret's key in a cluster): its first
line, surrounding whitespace removed, at least 16 characters. The token is never printed.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Final

from kubemedic.errors import InputError

if TYPE_CHECKING:
    from kubemedic.store.db import Archive

__all__ = ["MIN_TOKEN", "WebError", "check_listen", "is_loopback", "read_token", "serve"]

MIN_TOKEN: Final = 16


class WebError(InputError):
    """The dashboard cannot be served as asked (an address without a token, a bad token
    file); the message names the flag."""


def is_loopback(host: str) -> bool:
    """``host`` only reaches this machine: ``localhost`` or a loopback IP address."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_listen(
    host: str,
    token: str | None,
    *,
    flag: str = "--host",
    file_flag: str = "--token-file",
    example: str = "--host 127.0.0.1",
) -> None:
    """Refuse a non-loopback ``host`` without a token (``WebError`` naming ``flag``, and
    ``file_flag`` as the way out: ``kubemedic run`` names its ``--web`` flags)."""
    if token is None and not is_loopback(host):
        raise WebError(
            f"{flag} {host[:200]!r} is not a loopback address: the dashboard listens beyond "
            f"this machine only with a token ({file_flag} FILE); or use {example}"
        )


def read_token(path: Path, *, flag: str = "--token-file") -> str:
    """The token in ``path`` (first line, stripped); ``WebError`` naming ``flag`` if it is
    unreadable or short."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise WebError(f"{flag} {path}: cannot read it ({reason})") from None
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if len(token) < MIN_TOKEN:
        raise WebError(
            f"{flag} {path}: the token (its first line) must be at least {MIN_TOKEN} "
            f"characters; it has {len(token)}"
        )
    return token


def serve(
    archive: Archive,
    *,
    host: str,
    port: int,
    token: str | None,
    cluster: str | None = None,
    announce: bool = True,
) -> None:
    """Serve the dashboard over the open ``archive`` on ``host:port`` until interrupted."""
    import uvicorn  # noqa: PLC0415

    from kubemedic.web.app import create_app  # noqa: PLC0415

    check_listen(host, token)
    app = create_app(archive, token=token, cluster=cluster)
    shown = f"[{host}]" if ":" in host else host
    if announce:
        guarded = " (token required)" if token is not None else ""
        print(
            f"kubemedic dashboard on http://{shown}:{port}/{guarded} over {archive.url}",
            flush=True,
        )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
