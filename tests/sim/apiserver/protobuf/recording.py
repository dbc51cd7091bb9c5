"""What kubectl sends: its generator commands run against a tiny recording server.

:func:`record` serves one HTTP endpoint that keeps every write's method, path, headers and raw
body and answers it with the object it decoded (so kubectl is satisfied and exits). Each
``kubectl create ...`` of :data:`COMMANDS` is run once against it, and once with
``--dry-run=client -o json``, which prints, without sending anything, the JSON of the very object
the command would send: what the decoded protobuf body must equal.

The fixture ``kubectl_bodies.json`` beside this module was made with kubectl v1.32 by::

    PYTHONPATH=src python3 -m tests.sim.apiserver.protobuf.recording

so that the decoder's unit tests run where kubectl is not installed.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from kubemedic.sim.apiserver.protobuf import ProtobufError, UnsupportedKind, decode
from kubemedic.sim.apiserver.serving import write_kubeconfig

FIXTURE = Path(__file__).with_name("kubectl_bodies.json")

#: The generator commands of the fixture, by a short name.
COMMANDS: dict[str, tuple[str, ...]] = {
    "namespace": ("create", "namespace", "team-a"),
    "configmap": ("create", "configmap", "settings", "--from-literal=a=b"),
    "deployment": ("create", "deployment", "web", "--image=nginx"),
    "job": ("create", "job", "once", "--image=busybox"),
    "secret": ("create", "secret", "generic", "creds", "--from-literal=a=b"),
    "serviceaccount": ("create", "serviceaccount", "robot"),
    "service": ("create", "service", "clusterip", "front", "--tcp=80:8080"),
    "priorityclass": (
        "create", "priorityclass", "high", "--value=1000", "--description=for the important",
    ),
    "cronjob": ("create", "cronjob", "nightly", "--image=busybox", "--schedule=*/5 * * * *"),
    "poddisruptionbudget": (
        "create", "poddisruptionbudget", "guard", "--selector=app=web", "--min-available=1",
    ),
}  # fmt: skip


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Recorder(BaseHTTPRequestHandler):
    requests: ClassVar[list[Request]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.requests.append(Request("POST", self.path, dict(self.headers.items()), body))
        try:
            answer = decode(body)
        except (ProtobufError, UnsupportedKind):
            answer = json.loads(body) if body.startswith(b"{") else {}
        self._answer(201, answer)


def record(kubectl: str, args: tuple[str, ...], workdir: Path) -> list[Request]:
    """The writes ``kubectl args`` sends (it runs against a fresh recording server)."""

    class Handler(_Recorder):
        requests: ClassVar[list[Request]] = []

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = workdir / "kubeconfig"
        write_kubeconfig(config, f"http://127.0.0.1:{server.server_address[1]}")
        subprocess.run(
            [kubectl, "--kubeconfig", str(config), *args],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    return list(Handler.requests)


def client_json(kubectl: str, args: tuple[str, ...], workdir: Path) -> dict[str, Any]:
    """The object ``kubectl args`` builds, as ``--dry-run=client -o json`` prints it."""
    config = workdir / "kubeconfig-dry"
    write_kubeconfig(config, "http://127.0.0.1:9")
    done = subprocess.run(
        [kubectl, "--kubeconfig", str(config), *args, "--dry-run=client", "-o", "json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def main() -> None:
    kubectl = sys.argv[1] if len(sys.argv) > 1 else "/usr/bin/kubectl"
    version = subprocess.run(
        [kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, check=True
    )
    entries = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in COMMANDS.items():
            writes = record(kubectl, args, Path(tmp))
            assert len(writes) == 1, f"{name}: {len(writes)} writes"
            entries[name] = {
                "args": list(args),
                "path": writes[0].path,
                "contentType": writes[0].headers.get("Content-Type", ""),
                "accept": writes[0].headers.get("Accept", ""),
                "body": base64.b64encode(writes[0].body).decode(),
                "clientJson": client_json(kubectl, args, Path(tmp)),
            }
    document = {
        "kubectl": json.loads(version.stdout)["clientVersion"]["gitVersion"],
        "commands": entries,
    }
    FIXTURE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
