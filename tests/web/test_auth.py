"""Who may read the dashboard: loopback without a token; any address only with one, which
every request must then carry (a Bearer header, or ``?token=`` once for a cookie)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from kubemedic.store.db import Archive
from kubemedic.web import serving
from kubemedic.web.app import COOKIE, create_app
from tests.paths import ROOT

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture(scope="module")
def guarded(archive_path: Path) -> Iterator[TestClient]:
    with Archive.open(str(archive_path), migrate=False) as archive:
        yield TestClient(create_app(archive, token=TOKEN), follow_redirects=False)


@pytest.mark.parametrize("path", ["/", "/api/v1/events", "/openapi.json", "/nodes/core-2"])
def test_without_the_token_nothing_is_shown(guarded: TestClient, path: str) -> None:
    guarded.cookies.clear()
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        response = guarded.get(path, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert "quarantined" not in response.text
        assert TOKEN not in response.text


def test_a_bearer_token_opens_every_request(guarded: TestClient) -> None:
    guarded.cookies.clear()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert guarded.get("/api/v1/nodes", headers=headers).status_code == 200
    assert guarded.get("/", headers=headers).status_code == 200


def test_the_token_in_the_address_once_sets_a_cookie_and_leaves_the_address(
    guarded: TestClient,
) -> None:
    guarded.cookies.clear()
    assert guarded.get("/events", params={"token": "wrong"}).status_code == 401
    response = guarded.get("/events", params={"reason": "BackOff", "token": TOKEN})
    assert response.status_code == 303
    assert response.headers["location"] == "/events?reason=BackOff"
    cookie = response.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert TOKEN not in cookie
    followed = guarded.get(response.headers["location"])
    assert followed.status_code == 200
    assert "BackOff" in followed.text
    guarded.cookies.clear()
    assert guarded.get("/events").status_code == 401
    guarded.cookies.set(COOKIE, "forged")
    assert guarded.get("/events").status_code == 401


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.7", False),
        ("example.org", False),
    ],
)
def test_only_loopback_addresses_are_loopback(host: str, loopback: bool) -> None:
    assert serving.is_loopback(host) is loopback
    if loopback:
        serving.check_listen(host, None)
    else:
        with pytest.raises(serving.WebError, match="--token-file"):
            serving.check_listen(host, None)
        serving.check_listen(host, TOKEN)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubemedic.cli", "web", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


def test_the_command_refuses_a_public_address_without_a_token(archive_path: Path) -> None:
    done = run_cli("--db", str(archive_path), "--host", "0.0.0.0")
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr
    assert "--token-file" in done.stderr


def test_the_command_refuses_a_short_or_missing_token_file(
    archive_path: Path, tmp_path: Path
) -> None:
    short = tmp_path / "token"
    short.write_text("abc\n")
    done = run_cli("--db", str(archive_path), "--token-file", str(short))
    assert done.returncode == 2
    assert "at least 16 characters" in done.stderr
    done = run_cli("--db", str(archive_path), "--token-file", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert "cannot read it" in done.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(url: str, process: subprocess.Popen[str], **kwargs: object) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(url, timeout=5, **kwargs)  # type: ignore[arg-type]
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_command_serves_behind_the_token(archive_path: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "kubemedic.cli", "web", "--db", str(archive_path),
            "--port", str(port), "--token-file", str(token_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        assert wait_for(f"{base}/api/v1/clusters", process).status_code == 401
        answered = httpx.get(
            f"{base}/api/v1/clusters", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert answered.json() == {"clusters": ["leap"]}
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/ (token required)" in out
    assert TOKEN not in out + err
