"""The emulator calls validating webhooks over HTTPS as kube-apiserver does; the real kubectl
prints their warnings and their refusals.

A small HTTPS webhook runs in a thread of the test (its own CA, made with ``cryptography`` or the
``openssl`` command); its answer depends on the object: label ``verdict: warn`` is allowed with a
warning, ``verdict: deny`` is refused, anything else allowed.
"""

from __future__ import annotations

import base64
import datetime
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.sim.conftest import Running, needs_kubectl, start_emulator

pytestmark = needs_kubectl


def _certificates(directory: Path) -> tuple[Path, Path, bytes]:
    """A CA and a server certificate for 127.0.0.1: (certificate, key, CA PEM)."""
    try:
        return _with_cryptography(directory)
    except ImportError:
        return _with_openssl(directory)


def _with_cryptography(directory: Path) -> tuple[Path, Path, bytes]:
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook-test-ca")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = directory / "server.crt", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path, ca.public_bytes(serialization.Encoding.PEM)


def _with_openssl(directory: Path) -> tuple[Path, Path, bytes]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("neither cryptography nor openssl is available")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=directory, check=True, capture_output=True)

    curve = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
        "-subj", "/CN=webhook-test-ca")  # fmt: skip
    (directory / "server.ext").write_text(
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    )
    run("req", *curve, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=webhook")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-days", "1",
        "-CAcreateserial", "-out", "server.crt", "-extfile", "server.ext")  # fmt: skip
    return directory / "server.crt", directory / "server.key", (directory / "ca.crt").read_bytes()


@dataclass
class Webhook:
    """The test's webhook server: what it received, and its URL and CA bundle."""

    port: int
    ca_bundle: str
    reviews: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/validate"

    def requests(self) -> list[dict[str, Any]]:
        return [r["request"] for r in self.reviews]


def _answer(review: dict[str, Any]) -> dict[str, Any]:
    request = review["request"]
    obj = request.get("object") or request.get("oldObject") or {}
    verdict = (obj.get("metadata", {}).get("labels") or {}).get("verdict")
    response: dict[str, Any] = {"uid": request["uid"], "allowed": verdict != "deny"}
    if verdict == "warn":
        response["warnings"] = [f"{request['operation']} of {request['name']}: pinned to a node"]
    if verdict == "deny":
        response["status"] = {"code": 403, "message": "imperative edits are not allowed"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[Webhook]:
    cert, key, ca = _certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    state = Webhook(0, base64.b64encode(ca).decode())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            review["path"] = self.path
            state.reviews.append(review)
            if state.delay:
                time.sleep(state.delay)
            body = json.dumps(_answer(review)).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the caller gave up waiting (the timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


def _configuration(name: str, url: str, ca_bundle: str, **webhook: Any) -> str:
    hook = {
        "name": f"{name}.kubemedic.io",
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": ["apps"],
                   "apiVersions": ["v1"], "resources": ["deployments"]}],
        "namespaceSelector": {"matchLabels": {"guard": "on"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **webhook,
    }  # fmt: skip
    return json.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name}, "webhooks": [hook],
    })  # fmt: skip


def _deployment(name: str, namespace: str, verdict: str = "") -> str:
    labels = {"app": name, **({"verdict": verdict} if verdict else {})}
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        }},
    })  # fmt: skip


def _setup(cluster: Running, webhook: Webhook, **hook: Any) -> None:
    cluster.kubectl("create", "namespace", "guarded")
    cluster.kubectl("label", "namespace", "guarded", "guard=on")
    cluster.kubectl("create", "namespace", "free")
    for name, verdict in (("web", "warn"), ("api", ""), ("db", "deny")):
        cluster.kubectl("apply", "-f", "-", input=_deployment(name, "free", verdict))
    cluster.kubectl(
        "apply", "-f", "-", input=_configuration("guard", webhook.url, webhook.ca_bundle, **hook)
    )


def test_a_warning_reaches_kubectl_and_the_review_is_complete(
    cluster: Running, webhook: Webhook
) -> None:
    _setup(cluster, webhook)
    created = cluster.kubectl("apply", "-f", "-", input=_deployment("web", "guarded", "warn"))
    assert "Warning: CREATE of web: pinned to a node" in created.stderr
    patched = cluster.kubectl(
        "patch", "deployment", "web", "-n", "guarded", "-p",
        '{"spec":{"template":{"spec":{"nodeName":"node-1"}}}}',
    )  # fmt: skip
    assert "Warning: UPDATE of web: pinned to a node" in patched.stderr
    request = webhook.requests()[-1]
    assert webhook.reviews[-1]["path"] == "/validate?timeout=10s"
    assert webhook.reviews[-1]["apiVersion"] == "admission.k8s.io/v1"
    assert request["operation"] == "UPDATE"
    assert request["kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert request["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert (request["name"], request["namespace"]) == ("web", "guarded")
    assert request["object"]["spec"]["template"]["spec"]["nodeName"] == "node-1"
    assert "nodeName" not in request["oldObject"]["spec"]["template"]["spec"]
    assert request["options"]["kind"] == "UpdateOptions"
    assert request["options"]["fieldManager"] == "kubectl-patch"
    assert request["dryRun"] is False
    managers = {m["manager"] for m in request["object"]["metadata"]["managedFields"]}
    assert "kubectl-patch" in managers


def test_kubectl_edit_prints_the_warning(cluster: Running, webhook: Webhook) -> None:
    _setup(cluster, webhook)
    cluster.kubectl("apply", "-f", "-", input=_deployment("web", "guarded", "warn"))
    env = {"KUBE_EDITOR": "sed -i s/replicas:\\ 1/replicas:\\ 3/", "PATH": "/usr/bin:/bin"}
    edited = cluster.kubectl("edit", "deployment", "web", "-n", "guarded", env=env)
    assert "Warning: UPDATE of web: pinned to a node" in edited.stderr
    assert "edited" in edited.stdout
    assert webhook.requests()[-1]["object"]["spec"]["replicas"] == 3


def test_a_denial_refuses_the_write_in_kube_apiserver_words(
    cluster: Running, webhook: Webhook
) -> None:
    _setup(cluster, webhook)
    created = cluster.kubectl(
        "apply", "-f", "-", input=_deployment("db", "guarded", "deny"), check=False
    )
    assert created.returncode != 0
    assert (
        'admission webhook "guard.kubemedic.io" denied the request: imperative edits are not '
        "allowed" in created.stderr
    )
    status, body, _ = cluster.request(
        "POST", "/apis/apps/v1/namespaces/guarded/deployments",
        json.loads(_deployment("db", "guarded", "deny")),
    )  # fmt: skip
    assert status == 403
    assert body["code"] == 403 and body["status"] == "Failure"
    assert cluster.kubectl("get", "deployment", "db", "-n", "guarded", check=False).returncode


def test_delete_sends_the_old_object(cluster: Running, webhook: Webhook) -> None:
    _setup(cluster, webhook)
    cluster.kubectl("apply", "-f", "-", input=_deployment("web", "guarded", "warn"))
    deleted = cluster.kubectl("delete", "deployment", "web", "-n", "guarded")
    assert "Warning: DELETE of web: pinned to a node" in deleted.stderr
    request = webhook.requests()[-1]
    assert request["operation"] == "DELETE"
    assert request["object"] is None
    assert request["oldObject"]["metadata"]["name"] == "web"
    assert request["options"]["kind"] == "DeleteOptions"


def test_requests_that_do_not_match_are_not_sent(cluster: Running, webhook: Webhook) -> None:
    _setup(cluster, webhook)
    sent = len(webhook.reviews)
    # another namespace (not labelled guard=on), another resource, a subresource not named
    cluster.kubectl("scale", "deployment", "db", "-n", "free", "--replicas", "2")
    cluster.kubectl("label", "deployment", "web", "-n", "free", "touched=yes")
    cluster.kubectl("create", "configmap", "settings", "-n", "guarded")
    cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"))
    assert len(webhook.reviews) == sent + 1  # only the Deployment in the guarded namespace
    cluster.kubectl("scale", "deployment", "api", "-n", "guarded", "--replicas", "2")
    assert len(webhook.reviews) == sent + 1


def test_object_selector(cluster: Running, webhook: Webhook) -> None:
    _setup(cluster, webhook, objectSelector={"matchLabels": {"verdict": "warn"}})
    sent = len(webhook.reviews)
    cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"))
    assert len(webhook.reviews) == sent
    cluster.kubectl("apply", "-f", "-", input=_deployment("web", "guarded", "warn"))
    assert len(webhook.reviews) == sent + 1


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"https://127.0.0.1:{port}/validate"


def test_failure_policy_ignore_lets_the_write_through(cluster: Running, webhook: Webhook) -> None:
    cluster.kubectl("create", "namespace", "guarded")
    cluster.kubectl("label", "namespace", "guarded", "guard=on")
    config = _configuration("dead", _dead_url(), webhook.ca_bundle, failurePolicy="Ignore")
    cluster.kubectl("apply", "-f", "-", input=config)
    created = cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"))
    assert "created" in created.stdout


def test_failure_policy_fail_refuses_the_write(cluster: Running, webhook: Webhook) -> None:
    cluster.kubectl("create", "namespace", "guarded")
    cluster.kubectl("label", "namespace", "guarded", "guard=on")
    url = _dead_url()
    cluster.kubectl("apply", "-f", "-", input=_configuration("dead", url, webhook.ca_bundle))
    created = cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"), check=False)
    assert created.returncode != 0
    assert (
        f'Internal error occurred: failed calling webhook "dead.kubemedic.io": failed to call '
        f'webhook: Post "{url}?timeout=10s": dial tcp' in created.stderr
    )
    # the configuration itself is exempt: it can still be removed
    cluster.kubectl("delete", "validatingwebhookconfiguration", "dead")
    cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"))


def test_an_unknown_certificate_authority_is_a_failed_call(
    cluster: Running, webhook: Webhook
) -> None:
    cluster.kubectl("create", "namespace", "guarded")
    cluster.kubectl("label", "namespace", "guarded", "guard=on")
    other_ca = base64.b64encode(ssl.get_server_certificate(("127.0.0.1", webhook.port)).encode())
    # the server's own certificate is no CA: verification fails as with a wrong bundle
    config = _configuration("guard", webhook.url, other_ca.decode())
    cluster.kubectl("apply", "-f", "-", input=config)
    created = cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"), check=False)
    assert "tls: failed to verify certificate" in created.stderr
    assert webhook.reviews == []


def test_a_slow_webhook_times_out(cluster: Running, webhook: Webhook) -> None:
    _setup(cluster, webhook, timeoutSeconds=1)
    webhook.delay = 3
    created = cluster.kubectl("apply", "-f", "-", input=_deployment("api", "guarded"), check=False)
    assert created.returncode != 0
    assert "?timeout=1s" in created.stderr
    assert "context deadline exceeded" in created.stderr


def test_a_server_dry_run_is_sent_as_one(cluster: Running, webhook: Webhook) -> None:
    _setup(cluster, webhook, sideEffects="NoneOnDryRun")
    dry = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=_deployment("web", "guarded", "warn")
    )
    assert "Warning: CREATE of web: pinned to a node" in dry.stderr
    request = webhook.requests()[-1]
    assert request["dryRun"] is True
    assert request["options"]["dryRun"] == ["All"]
    assert cluster.kubectl("get", "deployment", "web", "-n", "guarded", check=False).returncode


def test_configurations_are_defaulted_and_validated(cluster: Running, webhook: Webhook) -> None:
    cluster.kubectl("apply", "-f", "-", input=_configuration("guard", webhook.url, "", rules=[
        {"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
         "resources": ["deployments"]}]))  # fmt: skip
    stored = json.loads(
        cluster.kubectl("get", "validatingwebhookconfiguration", "guard", "-o", "json").stdout
    )
    hook = stored["webhooks"][0]
    assert (hook["failurePolicy"], hook["matchPolicy"], hook["timeoutSeconds"]) == (
        "Fail", "Equivalent", 10
    )  # fmt: skip
    assert hook["objectSelector"] == {} and hook["rules"][0]["scope"] == "*"
    assert "guard" in cluster.kubectl("get", "validatingwebhookconfigurations").stdout
    bad = json.loads(
        _configuration("bad", "http://127.0.0.1:1/", "", sideEffects="Some", timeoutSeconds=40)
    )
    bad["webhooks"][0]["name"] = "short"
    refused = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode != 0
    for message in (
        'webhooks[0].name: Invalid value: "short": should be a domain with at least three '
        "segments separated by dots",
        "webhooks[0].clientConfig.url: Invalid value: \"http://127.0.0.1:1/\": 'https' is the "
        "only allowed URL scheme",
        'webhooks[0].sideEffects: Unsupported value: "Some"',
        "webhooks[0].timeoutSeconds: Invalid value: 40: the timeout value must be between 1 "
        "and 30 seconds",
    ):
        assert message in refused.stderr
