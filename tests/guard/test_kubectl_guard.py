"""Acceptance: the real kubectl, the API emulator calling the guard over TLS as kube-apiserver
would, and the guard's answers reaching the user.

The guard runs as ``kubemedic guard serve`` runs (:func:`kubemedic.guard.serving.run_guard`) on
its own event loop in a thread (the emulator blocks its loop while it calls a webhook), watching
the emulator's nodes and pods; its configuration is the one ``kubemedic guard render --url``
prints, applied with kubectl.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubemedic.guard.certs import service_names
from kubemedic.guard.policy import GuardSettings, Policy
from kubemedic.guard.serving import GuardOptions, run_guard
from tests.factories import container, deployment, node
from tests.sim.conftest import Running, needs_kubectl, start_emulator

pytestmark = needs_kubectl

SRC = Path(__file__).resolve().parents[2] / "src"
HOSTS = (*service_names("kubemedic-guard", "kubemedic"), "127.0.0.1")
EDIT_REPLICAS = {"KUBE_EDITOR": "sed -i s/replicas:\\ 2/replicas:\\ 3/", "PATH": "/usr/bin:/bin"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass
class Served:
    """A guard running in a thread; ``stop()`` ends it."""

    port: int
    cert_dir: Path
    stop: Callable[[], None]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/validate"

    def get(self, path: str) -> tuple[int, str]:
        context = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{self.port}{path}", context=context, timeout=10
            ) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def post(self, body: bytes) -> tuple[int, str]:
        context = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        request = urllib.request.Request(self.url, data=body, method="POST")
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


def start_guard(cluster: Running, cert_dir: Path, policy: Policy) -> Served:
    loop = asyncio.new_event_loop()
    port = _free_port()
    started = asyncio.Event()
    options = GuardOptions(
        settings=GuardSettings(policy=policy),
        cert_dir=cert_dir,
        hosts=HOSTS,
        listen_host="127.0.0.1",
        listen_port=port,
        kubeconfig=cluster.kubeconfig,
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def begin() -> asyncio.Task[None]:
        return asyncio.ensure_future(run_guard(options, started=started))

    task = asyncio.run_coroutine_threadsafe(begin(), loop).result(timeout=30)

    async def end() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def stop() -> None:
        if loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(end(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()

    served = Served(port, cert_dir, stop)
    deadline = time.monotonic() + 60
    while True:  # until /healthz says the caches are filled
        if task.done():
            stop()
            raise AssertionError(f"the guard ended: {task.exception()!r}")
        try:
            if served.get("/healthz")[0] == 200:
                return served
        except (OSError, ssl.SSLError):
            pass
        if time.monotonic() > deadline:
            stop()
            raise AssertionError("the guard did not become healthy")
        time.sleep(0.1)


def _argo_deployment(name: str) -> dict[str, Any]:
    body = deployment(name, namespace="shop", replicas=2)
    body["metadata"]["annotations"] = {
        "argocd.argoproj.io/tracking-id": f"shop:apps/Deployment:shop/{name}"
    }
    return body


def _plain_deployment(name: str, *, replicas: int = 2, memory: str | None = None) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": memory} if memory else None
    return deployment(
        name, namespace="shop", replicas=replicas, containers=[container(name, requests=requests)]
    )


def _apply(cluster: Running, body: dict[str, Any], *, manager: str) -> None:
    for key in ("uid", "creationTimestamp", "resourceVersion", "managedFields", "generation"):
        body["metadata"].pop(key, None)
    body.pop("status", None)
    cluster.kubectl(
        "apply", "--server-side", f"--field-manager={manager}", "-f", "-", input=json.dumps(body)
    )


def _render(served: Served) -> str:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-m", "kubemedic.cli", "guard", "render", "--url", served.url,
         "--cert-dir", str(served.cert_dir), "--output", "json"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


@dataclass
class Setup:
    cluster: Running
    guard: Served


def _setup(tmp_path: Path, policy: Policy) -> Iterator[Setup]:
    for cluster in start_emulator(tmp_path):
        cluster.load(node("small-node", cpu="2", memory="2Gi"))
        cluster.kubectl("create", "namespace", "shop")
        _apply(cluster, _argo_deployment("web"), manager="argocd-controller")
        _apply(cluster, _plain_deployment("tool"), manager="kubectl")
        _apply(cluster, _plain_deployment("big", replicas=12, memory="800Mi"), manager="kubectl")
        guard = start_guard(cluster, tmp_path / "certs", policy)
        try:
            configuration = _render(guard)
            hook = json.loads(configuration)["webhooks"][0]
            assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Ignore", 5)
            cluster.kubectl("apply", "-f", "-", input=configuration)
            yield Setup(cluster, guard)
        finally:
            guard.stop()


@pytest.fixture
def warn(tmp_path: Path) -> Iterator[Setup]:
    yield from _setup(tmp_path, Policy.WARN)


@pytest.fixture
def deny(tmp_path: Path) -> Iterator[Setup]:
    yield from _setup(tmp_path, Policy.DENY)


def _replicas(cluster: Running, name: str) -> int:
    shown = cluster.kubectl("get", "deployment", name, "-n", "shop", "-o", "json").stdout
    replicas: int = json.loads(shown)["spec"]["replicas"]
    return replicas


def test_kubectl_edit_of_an_argo_cd_deployment_prints_the_guard_s_warning_and_is_applied(
    warn: Setup,
) -> None:
    edited = warn.cluster.kubectl("edit", "deployment", "web", "-n", "shop", env=EDIT_REPLICAS)
    assert (
        "Warning: Deployment shop/web is managed by Argo CD (application shop); kubectl-edit "
        "changes it outside Git; change it in Git instead" in edited.stderr
    )
    assert "edited" in edited.stdout
    assert _replicas(warn.cluster, "web") == 3
    status, metrics = warn.guard.get("/metrics")
    assert status == 200 and 'kubemedic_guard_reviews_total{verdict="warned"}' in metrics


def test_with_deny_kubectl_edit_is_refused_and_nothing_changes(deny: Setup) -> None:
    edited = deny.cluster.kubectl(
        "edit", "deployment", "web", "-n", "shop", env=EDIT_REPLICAS, check=False
    )
    assert edited.returncode != 0
    assert (
        'admission webhook "guard.kubemedic.io" denied the request: Deployment shop/web is '
        "managed by Argo CD (application shop); kubectl-edit changes it outside Git: change it "
        "in Git instead" in edited.stderr
    )
    assert _replicas(deny.cluster, "web") == 2


def test_an_edit_of_an_unmanaged_deployment_gets_neither(deny: Setup) -> None:
    edited = deny.cluster.kubectl("edit", "deployment", "tool", "-n", "shop", env=EDIT_REPLICAS)
    assert "Warning" not in edited.stderr and "denied" not in edited.stderr
    assert _replicas(deny.cluster, "tool") == 3


def test_kubectl_patch_pinning_to_a_node_too_small_prints_the_capacity_warning(
    deny: Setup,
) -> None:
    patched = deny.cluster.kubectl(
        "patch", "deployment", "big", "-n", "shop", "-p",
        '{"spec":{"template":{"spec":{"nodeName":"small-node"}}}}',
    )  # fmt: skip
    assert (
        "Warning: Deployment shop/big pins 12 replica(s) to node small-node with spec.nodeName, "
        "bypassing the scheduler, but only 2 fit its free memory" in patched.stderr
    )
    assert "patched" in patched.stdout


def test_a_malformed_review_gets_a_400_saying_what_is_wrong(warn: Setup) -> None:
    status, text = warn.guard.post(b'{"apiVersion": "admission.k8s.io/v1"')
    assert status == 400 and "invalid JSON" in text
    status, text = warn.guard.post(b'{"apiVersion": "v1", "kind": "Status"}')
    assert status == 400 and "malformed AdmissionReview: expected apiVersion" in text
    assert warn.guard.get("/healthz") == (200, "ok")


def test_the_guard_being_down_does_not_block_edits(warn: Setup) -> None:
    warn.guard.stop()
    edited = warn.cluster.kubectl("edit", "deployment", "web", "-n", "shop", env=EDIT_REPLICAS)
    assert "edited" in edited.stdout and "Warning" not in edited.stderr
    assert _replicas(warn.cluster, "web") == 3
