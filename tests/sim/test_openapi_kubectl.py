"""The real kubectl against the emulator's OpenAPI v3 documents.

A small aiohttp app in a thread serves the documents, discovery and a few canned object answers;
``/usr/bin/kubectl`` runs against it. ``explain`` proves kubectl parses the documents and finds
the official descriptions; ``apply`` and ``diff`` prove kubectl concludes from them that the
server validates fields (``fieldValidation=Strict``) and builds its client-side apply patch from
their patch metadata (merge keys), without falling back to ``/openapi/v2``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from kubemedic.sim.apiserver.openapi.documents import OpenAPI
from kubemedic.sim.machinery.apiresources import Registry
from kubemedic.sim.machinery.definitions import definitions
from tests.factories import container, deployment

KUBECTL = shutil.which("kubectl", path="/usr/bin")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="/usr/bin/kubectl is not installed")

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def openapi() -> OpenAPI:
    return OpenAPI(Registry(), definitions())


@contextmanager
def serving(app: web.Application) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 from its own loop in a thread; yields the base URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner = web.AppRunner(app)

    async def start() -> str:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}"

    try:
        yield asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: str


class FakeApiServer:
    """Discovery and OpenAPI from the emulator's modules; canned answers for objects."""

    def __init__(self, openapi: OpenAPI, objects: dict[str, Obj] | None = None) -> None:
        self.openapi = openapi
        self.registry = Registry()
        self.objects = dict(objects or {})
        self.seen: list[Seen] = []

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/version", self._version)
        app.router.add_get("/openapi/v3", self._index)
        app.router.add_get("/openapi/v3/{path:.+}", self._document)
        app.router.add_get("/api", self._json(self.registry.api_versions))
        app.router.add_get("/apis", self._json(self.registry.api_group_list))
        app.router.add_get("/api/{version}", self._resource_list)
        app.router.add_get("/apis/{group}", self._group)
        app.router.add_get("/apis/{group}/{version}", self._resource_list)
        app.router.add_route("*", "/{tail:.*}", self._object)
        return app

    def requested(self, method: str, prefix: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path.startswith(prefix)]

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = await request.text() if request.can_read_body else ""
        self.seen.append(
            Seen(request.method, request.path, dict(request.query), request.content_type, body)
        )
        response: web.StreamResponse = await handler(request)
        return response

    @staticmethod
    def _json(produce: Any) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return web.json_response(produce())

        return handler

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"}
        )

    async def _index(self, request: web.Request) -> web.Response:
        return web.json_response(self.openapi.index())

    async def _document(self, request: web.Request) -> web.Response:
        body = self.openapi.document(request.match_info["path"])
        if body is None:
            return _status(404, "NotFound", "the server could not find the requested resource")
        etag = self.openapi.content_hash(request.match_info["path"])
        return web.Response(
            body=body, content_type="application/json", headers={"ETag": f'"{etag}"'}
        )

    async def _group(self, request: web.Request) -> web.Response:
        found = self.registry.api_group(request.match_info["group"])
        return web.json_response(found) if found else _status(404, "NotFound", "not found")

    async def _resource_list(self, request: web.Request) -> web.Response:
        group = request.match_info.get("group", "")
        found = self.registry.resource_list(group, request.match_info["version"])
        return web.json_response(found) if found else _status(404, "NotFound", "not found")

    async def _object(self, request: web.Request) -> web.Response:
        stored = self.objects.get(request.path)
        if request.method == "GET":
            if stored is None:
                return _status(404, "NotFound", f"{request.path.rsplit('/', 1)[-1]} not found")
            return web.json_response(stored)
        if request.method == "POST":
            created: Obj = json.loads(await request.text())
            return web.json_response(created, status=201)
        if request.method == "PATCH" and stored is not None:
            return web.json_response(stored)
        return _status(405, "MethodNotAllowed", "the server does not allow this method")


def _status(code: int, reason: str, message: str) -> web.Response:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body |= {"message": message, "reason": reason, "code": code}
    return web.json_response(body, status=code)


@pytest.fixture
def kubectl(tmp_path: Path) -> Any:
    """``kubectl(server_url, *args)`` -> CompletedProcess, with a private kubeconfig and cache."""

    def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        config = tmp_path / "kubeconfig"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "sim", "cluster": {"server": url}}],
                    "users": [{"name": "sim", "user": {}}],
                    "contexts": [
                        {
                            "name": "sim",
                            "context": {"cluster": "sim", "user": "sim", "namespace": "default"},
                        }
                    ],
                    "current-context": "sim",
                }
            )
        )
        command = [KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache")]
        env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
        return subprocess.run(
            [*command, *args], capture_output=True, text=True, timeout=60, env=env, check=False
        )

    return run


def test_kubectl_explain_reads_official_descriptions(openapi: OpenAPI, kubectl: Any) -> None:
    server = FakeApiServer(openapi)
    with serving(server.app()) as url:
        result = kubectl(url, "explain", "deployment.spec.strategy")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GROUP:      apps" in out
    assert "KIND:       Deployment" in out
    assert "FIELD: strategy <DeploymentStrategy>" in out
    assert "The deployment strategy to use to replace existing pods with new ones." in out
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out
    assert "Rolling update config params." in out
    assert server.requested("GET", "/openapi/v3/apis/apps/v1")
    assert not server.requested("GET", "/openapi/v2")


def test_kubectl_explain_recursive_walks_the_pod_schema(openapi: OpenAPI, kubectl: Any) -> None:
    server = FakeApiServer(openapi)
    with serving(server.app()) as url:
        result = kubectl(url, "explain", "pods.spec.containers", "--recursive")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "KIND:       Pod" in out
    assert "FIELD: containers <[]Container>" in out
    assert "List of containers belonging to the pod." in out
    assert "A single application container that you want to run within a pod." in out
    assert "  name\t<string> -required-" in out
    assert "limits\t<map[string]Quantity>" in out
    assert "maxSurge" not in out


def test_kubectl_explain_custom_resource(openapi: OpenAPI, kubectl: Any) -> None:
    server = FakeApiServer(openapi)
    with serving(server.app()) as url:
        result = kubectl(url, "explain", "machines.spec")
    assert result.returncode == 0, result.stderr
    assert "GROUP:      cluster.x-k8s.io" in result.stdout
    assert "Desired state of the Machine." in result.stdout


def _manifest(image: str, *extra: str) -> Obj:
    built = deployment("web", namespace="default", containers=[container("web", image=image)])
    spec = built["spec"]
    template_spec = {"containers": [{"name": name, "image": image} for name in ("web", *extra)]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": spec["selector"],
            "template": {"metadata": spec["template"]["metadata"], "spec": template_spec},
        },
    }


def test_kubectl_apply_create_asks_the_server_to_validate_strictly(
    openapi: OpenAPI, kubectl: Any, tmp_path: Path
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(_manifest("nginx:1.27")))
    server = FakeApiServer(openapi)
    with serving(server.app()) as url:
        result = kubectl(url, "apply", "-f", str(manifest))
    assert result.returncode == 0, result.stderr
    assert "deployment.apps/web created" in result.stdout
    assert server.requested("GET", "/openapi/v3/apis/apps/v1")
    (create,) = server.requested("POST", "/apis/apps/v1/namespaces/default/deployments")
    assert create.query == {
        "fieldManager": "kubectl-client-side-apply",
        "fieldValidation": "Strict",
    }
    assert not server.requested("GET", "/openapi/v2")


def test_kubectl_apply_builds_a_strategic_merge_patch_from_the_documents(
    openapi: OpenAPI, kubectl: Any, tmp_path: Path
) -> None:
    before = _manifest("nginx:1.26")
    live = json.loads(json.dumps(before))
    live["metadata"] |= {
        "uid": "0b3c1b5e-0000-4000-8000-000000000001",
        "resourceVersion": "7",
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(before)},
    }
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(_manifest("nginx:1.27", "sidecar")))
    server = FakeApiServer(openapi, {"/apis/apps/v1/namespaces/default/deployments/web": live})
    with serving(server.app()) as url:
        result = kubectl(url, "apply", "-f", str(manifest))
    assert result.returncode == 0, result.stderr
    assert "openapi" not in result.stderr  # no "error calculating patch from openapi v3 spec"
    (patch,) = server.requested("PATCH", "/apis/apps/v1/namespaces/default/deployments/web")
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert patch.query == {"fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"}
    pod_spec = json.loads(patch.body)["spec"]["template"]["spec"]
    # The merge key ("name") came from x-kubernetes-patch-merge-key in the published schema.
    assert pod_spec["$setElementOrder/containers"] == [{"name": "web"}, {"name": "sidecar"}]
    assert {c["name"] for c in pod_spec["containers"]} == {"web", "sidecar"}
    assert not server.requested("GET", "/openapi/v2")


def test_kubectl_apply_sends_a_merge_patch_to_a_custom_resource(
    openapi: OpenAPI, kubectl: Any, tmp_path: Path
) -> None:
    before: Obj = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": "worker-0", "namespace": "default"},
        "spec": {"clusterName": "prod", "bootstrap": {"dataSecretName": "a"}},
    }
    live = json.loads(json.dumps(before))
    live["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(before)
    }
    after = json.loads(json.dumps(before))
    after["spec"]["bootstrap"]["dataSecretName"] = "b"
    manifest = tmp_path / "machine.yaml"
    manifest.write_text(yaml.safe_dump(after))
    path = "/apis/cluster.x-k8s.io/v1beta1/namespaces/default/machines/worker-0"
    server = FakeApiServer(openapi, {path: live})
    with serving(server.app()) as url:
        result = kubectl(url, "apply", "-f", str(manifest))
    assert result.returncode == 0, result.stderr
    (patch,) = server.requested("PATCH", path)
    assert patch.content_type == "application/merge-patch+json"
    assert patch.query["fieldValidation"] == "Strict"
    assert json.loads(patch.body)["spec"] == {"bootstrap": {"dataSecretName": "b"}}


def test_kubectl_diff_dry_runs_the_same_strategic_merge_patch(
    openapi: OpenAPI, kubectl: Any, tmp_path: Path
) -> None:
    before = _manifest("nginx:1.26")
    live = json.loads(json.dumps(before))
    live["metadata"] |= {
        "resourceVersion": "7",
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(before)},
    }
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(_manifest("nginx:1.27", "sidecar")))
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    server = FakeApiServer(openapi, {path: live})
    with serving(server.app()) as url:
        result = kubectl(url, "diff", "-f", str(manifest))
    # The canned server answers the dry run with the live object: nothing differs.
    assert result.returncode == 0, result.stderr
    (patch,) = server.requested("PATCH", path)
    assert patch.query["dryRun"] == "All"
    assert patch.content_type == "application/strategic-merge-patch+json"
    pod_spec = json.loads(patch.body)["spec"]["template"]["spec"]
    assert pod_spec["$setElementOrder/containers"] == [{"name": "web"}, {"name": "sidecar"}]
    assert not server.requested("GET", "/openapi/v2")
