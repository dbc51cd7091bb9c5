"""A kubeconfig or an API server kubemedic cannot use ends ``scan`` and ``run`` in exit 2 with one
line naming the file, the user, the server or the path at fault: a bad server port or URL, a
kubeconfig that is not YAML or nests too deep, an exec plugin that is missing, fails or prints
no ExecCredential, a server that refuses connections, list answers that are not Lists of
objects, a 404 without a message."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kubemedic.kube.api import ApiError
from tests.inprocess import kubemedic, one_error_line

BASE = {
    "apiVersion": "v1",
    "kind": "Config",
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}


def kubeconfig(tmp_path: Path, server: str, user: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "kubeconfig"
    document = {
        **BASE,
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user or {}}],
    }
    path.write_text(json.dumps(document))
    return path


def both(capsys: pytest.CaptureFixture[str], config: Path, tmp_path: Path) -> list[str]:
    """The one error line of ``scan`` and of ``run`` on ``config`` (both must exit 2)."""
    lines = []
    for command in (
        ["scan", "--kubeconfig", str(config)],
        ["run", "--kubeconfig", str(config), "--db", str(tmp_path / "a.db"), "--no-leader-elect"],
    ):
        code, out, err = kubemedic(capsys, *command)
        assert code == 2, (command, out, err)
        lines.append(one_error_line(err))
    return lines


@pytest.mark.parametrize(
    ("server", "named"),
    [
        ("https://127.0.0.1:99999", "port is not a number from 1 to 65535"),
        ("https://127.0.0.1:0", "port 0"),
        ("https://127.0.0.1:port", "port is not a number"),
        ("https://[::1", "not a URL"),
        ("https://:6443", "names no host"),
        ("ftp://127.0.0.1:6443", "expected an http or https URL"),
    ],
)
def test_a_bad_server_url_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: str, named: str
) -> None:
    for line in both(capsys, kubeconfig(tmp_path, server), tmp_path):
        assert "cluster 'c'" in line and named in line


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("clusters: [a\n", "line 2: invalid YAML"),
        ("a: " + "[" * 1000 + "]" * 1000 + "\n", "nested deeper than"),
        ("- just\n- a list\n", "not a kubeconfig"),
        (
            "42\n",
            "expected a mapping with clusters, users and contexts, found a number",
        ),
    ],
)
def test_a_kubeconfig_that_is_not_one_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, named: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    for line in both(capsys, path, tmp_path):
        assert str(path) in line and named in line


def test_a_kubeconfig_of_bytes_that_are_not_utf8_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(b"clusters: \xff\xfe\n")
    for line in both(capsys, path, tmp_path):
        assert str(path) in line and "not UTF-8" in line


def _exec(command: str, *args: str) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": command,
            "args": list(args),
        }
    }


@pytest.mark.parametrize(
    ("user", "named"),
    [
        (_exec("/nonexistent/credential-plugin"), "cannot run it: No such file or directory"),
        (_exec("sh", "-c", "echo denied >&2; exit 3"), "exited with status 3: denied"),
        (_exec("sh", "-c", "echo not json"), "printed something that is not JSON"),
        (_exec("sh", "-c", "echo '[1, 2]'"), "printed a JSON list; expected an ExecCredential"),
        (_exec("sh", "-c", 'echo \'{"kind": "Token"}\''), "printed kind 'Token'"),
        (
            _exec("sh", "-c", 'echo \'{"kind": "ExecCredential", "status": {}}\''),
            "an ExecCredential without a token",
        ),
    ],
)
def test_an_exec_plugin_that_gives_no_credential_is_named(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    api_server: str,
    user: dict[str, Any],
    named: str,
) -> None:
    config = kubeconfig(tmp_path, api_server, user)
    for line in both(capsys, config, tmp_path):
        assert "exec plugin" in line and "user 'u'" in line and named in line, line


def test_run_against_a_server_that_refuses_connections_exits_2_at_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import socket

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    server = f"http://127.0.0.1:{port}"
    scan_line, run_line = both(capsys, kubeconfig(tmp_path, server), tmp_path)
    for line in (scan_line, run_line):
        assert f"cannot reach the API server {server}" in line


# -- a server answering nonsense -----------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, tuple[int, Any]]] = {}

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        status, body = self.answers.get(path, (200, _list()))
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _list(*items: Any) -> dict[str, Any]:
    return {"kind": "List", "metadata": {"resourceVersion": "1"}, "items": list(items)}


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Say nothing: a scan that has its answer (an error) closes its other requests, and
        the server's default would print a broken pipe's traceback into the test's stderr."""


@pytest.fixture
def api_server() -> Iterator[str]:
    """A tiny HTTP server answering every list with an empty List (tests change answers)."""
    _Handler.answers = {"/version": (200, {"major": "1", "minor": "30"})}
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (_list({"metadata": {"name": "a"}}, "not an object"), "items[1] is a JSON string"),
        (_list(None), "items[0] is a JSON null, not an object"),
        ({"kind": "NodeList", "items": {"a": 1}}, "items is a JSON object, not a list"),
        ({"kind": "Status"}, "the answer is kind 'Status' without items, not a List"),
        ([1, 2], "the answer is a JSON list, not a List"),
    ],
)
def test_a_list_answer_that_is_not_a_list_of_objects_is_refused(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    api_server: str,
    body: Any,
    named: str,
) -> None:
    from kubemedic.kube import livescan

    monkeypatch.setattr(livescan, "BACKOFF_INITIAL", 0.01)
    _Handler.answers["/api/v1/nodes"] = (200, body)
    code, out, err = kubemedic(
        capsys, "scan", "--kubeconfig", str(kubeconfig(tmp_path, api_server))
    )
    assert code == 2, (out, err)
    line = one_error_line(err)
    assert "/api/v1/nodes" in line and named in line, line


def test_a_404_without_a_message_names_the_path() -> None:
    error = ApiError.from_status(404, path="/apis/metrics.k8s.io/v1beta1/pods")
    assert str(error) == (
        "the API server has no /apis/metrics.k8s.io/v1beta1/pods (HTTP 404 Not Found)"
    )
    assert str(ApiError.from_status(500, path="/api/v1/pods")) == (
        "the API server answered /api/v1/pods with HTTP 500 Internal Server Error and no message"
    )


def test_nodes_not_served_by_the_server_names_the_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, api_server: str
) -> None:
    _Handler.answers["/api/v1/nodes"] = (404, None)
    code, _, err = kubemedic(capsys, "scan", "--kubeconfig", str(kubeconfig(tmp_path, api_server)))
    assert code == 2
    line = one_error_line(err)
    assert "the API server has no /api/v1/nodes (HTTP 404 Not Found)" in line
