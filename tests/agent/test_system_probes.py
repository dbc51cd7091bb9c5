"""The probes against real peers: a gRPC server on a unix socket answering the CRI's
``ListPodSandbox`` (or hanging, or UNAVAILABLE, or gone), and an HTTP server playing the
kubelet's ``/healthz`` (ok, failing, hanging, refusing)."""

from __future__ import annotations

import http.server
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from kubemedic.agent.system import SystemHost, SystemSettings
from kubemedic.agent.system.cri import LIST_POD_SANDBOX, count_sandboxes, probe_cri
from kubemedic.agent.system.healthz import probe_healthz

# A ListPodSandboxResponse with two sandboxes: field 1 (length-delimited) twice, each a
# PodSandbox holding only its id (field 1).
TWO_SANDBOXES = b"\x0a\x05\x0a\x03abc" + b"\x0a\x05\x0a\x03def"


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a unix socket's path has at most 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="cri-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


Handler = Callable[[bytes, grpc.ServicerContext], bytes]


@pytest.fixture
def cri_server(short_dir: Path) -> Iterator[Callable[[Handler], Path]]:
    """Start a gRPC server on a unix socket whose ListPodSandbox is the given handler (raw
    bytes in and out, as the runtime's serialised messages); its socket's path."""
    servers: list[grpc.Server] = []

    def start(handler: Handler) -> Path:
        path = short_dir / f"cri{len(servers)}.sock"
        service, method = LIST_POD_SANDBOX.strip("/").split("/")
        rpc = grpc.unary_unary_rpc_method_handler(handler)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, {method: rpc}),)
        )
        server.add_insecure_port(f"unix://{path}")
        server.start()
        servers.append(server)
        return path

    yield start
    for server in servers:
        server.stop(grace=None)


def test_a_runtime_that_answers_is_healthy_with_its_sandbox_count(
    cri_server: Callable[[Handler], Path],
) -> None:
    seen: list[bytes] = []

    def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
        seen.append(request)
        return TWO_SANDBOXES

    path = cri_server(answer)
    probe = probe_cri(path, timeout=10)
    assert probe.healthy
    assert probe.detail == "ok, 2 pod sandboxes"
    assert seen == [b""]  # an empty ListPodSandboxRequest: no filter, as crictl pods


def test_the_host_probes_the_configured_endpoint(cri_server: Callable[[Handler], Path]) -> None:
    path = cri_server(lambda request, context: b"")
    host = SystemHost(SystemSettings(cri_endpoint=f"unix://{path}"))
    probe = host.probe_runtime(10)
    assert probe.healthy
    assert probe.detail == "ok, 0 pod sandboxes"


def test_a_runtime_that_does_not_answer_in_time_is_unhealthy(
    cri_server: Callable[[Handler], Path],
) -> None:
    release = threading.Event()

    def hang(request: bytes, context: grpc.ServicerContext) -> bytes:
        release.wait(30)
        return b""

    path = cri_server(hang)
    try:
        probe = probe_cri(path, timeout=0.5)
    finally:
        release.set()
    assert not probe.healthy
    assert probe.detail == f"no answer on {path} within 0.5s"


def test_an_unavailable_runtime_is_unhealthy(cri_server: Callable[[Handler], Path]) -> None:
    def unavailable(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.UNAVAILABLE, "server is not initialized yet")

    path = cri_server(unavailable)
    probe = probe_cri(path, timeout=10)
    assert not probe.healthy
    assert probe.detail == f"the runtime is unavailable on {path}: server is not initialized yet"


def test_a_runtime_without_cri_v1_is_unhealthy(cri_server: Callable[[Handler], Path]) -> None:
    def unimplemented(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "unknown service runtime.v1.RuntimeService")

    probe = probe_cri(cri_server(unimplemented), timeout=10)
    assert not probe.healthy
    assert "does not serve CRI v1" in probe.detail


def test_a_missing_socket_is_unhealthy(short_dir: Path) -> None:
    probe = probe_cri(short_dir / "containerd.sock", timeout=10)
    assert probe == probe.__class__(False, f"no CRI socket at {short_dir / 'containerd.sock'}")


def test_a_socket_left_by_a_dead_runtime_is_refused(short_dir: Path) -> None:
    path = short_dir / "containerd.sock"
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))  # bound, never listening: what a crashed runtime leaves behind
    left.close()
    probe = probe_cri(path, timeout=10)
    assert not probe.healthy
    assert probe.detail == f"the runtime is unavailable on {path}: connection refused"


def test_a_file_that_is_not_a_socket_is_unhealthy(short_dir: Path) -> None:
    path = short_dir / "containerd.sock"
    path.write_text("")
    assert probe_cri(path, timeout=10).detail == f"{path} is not a socket"


def test_sandbox_counting_skips_other_fields_and_refuses_garbage() -> None:
    assert count_sandboxes(b"") == 0
    assert count_sandboxes(TWO_SANDBOXES + b"\x10\x01" + b"\x1d\x00\x00\x00\x00") == 2
    with pytest.raises(ValueError, match="truncated"):
        count_sandboxes(b"\x0a\x05\x0a")
    with pytest.raises(ValueError, match="wire type"):
        count_sandboxes(b"\x0f")


# -- the kubelet's /healthz -------------------------------------------------------------------


class Kubelet(http.server.BaseHTTPRequestHandler):
    """Answers /healthz as the server's ``answer`` says: (status, body), or None to hang."""

    def do_GET(self) -> None:
        server = self.server
        assert isinstance(server, Server)
        server.paths.append(self.path)
        answer = server.answer
        if answer is None:
            server.release.wait(30)
            return
        status, body = answer
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


class Server(http.server.ThreadingHTTPServer):
    answer: tuple[int, bytes] | None = (200, b"ok")
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Kubelet)
        self.paths: list[str] = []
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/healthz"


@pytest.fixture
def kubelet() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_kubelet_answering_ok_is_healthy(kubelet: Server) -> None:
    probe = SystemHost(SystemSettings(kubelet_healthz_url=kubelet.url)).probe_kubelet(10)
    assert (probe.healthy, probe.detail) == (True, "ok")
    assert kubelet.paths == ["/healthz"]


def test_a_failing_health_check_is_unhealthy_with_its_first_line(kubelet: Server) -> None:
    kubelet.answer = (500, b"[-]syncloop failed: reason withheld\nhealthz check failed\n")
    probe = probe_healthz(kubelet.url, timeout=10)
    assert not probe.healthy
    assert probe.detail == "HTTP 500: [-]syncloop failed: reason withheld"


def test_200_without_ok_is_not_healthy(kubelet: Server) -> None:
    kubelet.answer = (200, b"maybe")
    probe = probe_healthz(kubelet.url, timeout=10)
    assert not probe.healthy
    assert probe.detail == "HTTP 200 with 'maybe' instead of 'ok'"


def test_a_kubelet_that_does_not_answer_in_time_is_unhealthy(kubelet: Server) -> None:
    kubelet.answer = None
    probe = probe_healthz(kubelet.url, timeout=0.5)
    assert not probe.healthy
    assert probe.detail == f"no answer from 127.0.0.1:{kubelet.server_address[1]} within 0.5s"


def test_a_kubelet_not_listening_is_refused() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    probe = probe_healthz(f"http://127.0.0.1:{port}/healthz", timeout=10)
    assert (probe.healthy, probe.detail) == (False, f"connection refused at 127.0.0.1:{port}")


def test_an_http_proxy_in_the_environment_is_not_used(
    kubelet: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert probe_healthz(kubelet.url, timeout=10).healthy
