"""deploy/ renders with the real `kubectl kustomize`, alone and with its components; every
object validates against Kubernetes 1.32's official schemas (the custom resources against
their CRDs' structure); the pieces fit together (selectors, ports, probes, mounts, flags the
CLI has, configuration files kubemedic reads back)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import typer
import yaml

from kubemedic import config as configuration
from kubemedic.breaker import settings as breaker_settings
from kubemedic.cli import app
from kubemedic.guard import settings as guard_settings
from kubemedic.guard.render import render_configuration
from kubemedic.repair import settings as repair_settings
from tests.sim.conftest import start_emulator

from .crds import SCHEMAS
from .manifests import NAMESPACE, find, overlay, render

VERSION = "1.32.0"

EXPECTED = {
    ("Namespace", "kubemedic"),
    ("DaemonSet", "kubemedic-agent"),
    ("Deployment", "kubemedic"),
    ("Deployment", "kubemedic-guard"),
    ("ValidatingWebhookConfiguration", "kubemedic-guard"),
    ("ServiceAccount", "kubemedic"),
    ("ServiceAccount", "kubemedic-guard"),
    ("ServiceAccount", "kubemedic-agent"),
    ("Service", "kubemedic"),
    ("Service", "kubemedic-guard"),
    ("ServiceMonitor", "kubemedic"),
    ("ServiceMonitor", "kubemedic-guard"),
    ("PodMonitor", "kubemedic-agent"),
    ("PodDisruptionBudget", "kubemedic"),
    ("PodDisruptionBudget", "kubemedic-guard"),
    ("PersistentVolumeClaim", "kubemedic-archive"),
    ("ConfigMap", "kubemedic"),
    ("ConfigMap", "kubemedic-guard"),
    ("ClusterRole", "kubemedic"),
    ("ClusterRole", "kubemedic-guard"),
    ("PrometheusRule", "kubemedic"),
    ("ConfigMap", "kubemedic-dashboard"),
}


def validate(objects: list[dict[str, Any]]) -> None:
    for body in objects:
        schema = SCHEMAS.get((body["apiVersion"], body["kind"]))
        if schema is not None:
            jsonschema.validate(body, schema)
        else:
            kubernetes_validate.validate(body, VERSION, strict=True)


def test_the_base_renders_every_part_and_every_object_is_valid() -> None:
    objects = render()
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert names >= EXPECTED, EXPECTED - names
    assert len(names) == len(objects), "an object is rendered twice"
    validate(objects)
    for body in objects:
        if body["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding") and not body[
            "kind"
        ].startswith("ValidatingWebhook"):
            assert body["metadata"]["namespace"] in (NAMESPACE, "default"), body["metadata"]
        assert body["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubemedic"


def test_an_invalid_object_is_caught() -> None:
    """The validation refuses what a cluster would: a misspelt field, a wrong type."""
    deployment = find(render(), "Deployment", "kubemedic")
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSION, strict=True)
    monitor = find(render(), "ServiceMonitor", "kubemedic")
    endpoint = {**monitor["spec"]["endpoints"][0], "intervall": "30s"}
    broken = {**monitor, "spec": {**monitor["spec"], "endpoints": [endpoint]}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMAS[("monitoring.coreos.com/v1", "ServiceMonitor")])


def _pod(workload: dict[str, Any]) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    (container,) = _pod(workload)["containers"]
    return dict(container)


def _port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return int(number)


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def test_run_is_a_non_root_deployment_with_probes_on_its_listen_port() -> None:
    objects = render()
    deployment = find(objects, "Deployment", "kubemedic")
    pod, container = _pod(deployment), _container(deployment)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    args = container["args"]
    assert args[0] == "run"
    assert "--listen=0.0.0.0:9808" in args
    assert "--lease-namespace=kubemedic" in args
    assert "--identity=$(POD_NAME)" in args
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["KUBEMEDIC_DB"]["value"] == "/var/lib/kubemedic/kubemedic.db"
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert (get["path"], _port(container, get["port"])) == (path, 9808)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["archive"]["persistentVolumeClaim"]["claimName"] == "kubemedic-archive"
    assert mounts["archive"] == "/var/lib/kubemedic"
    claim = find(objects, "PersistentVolumeClaim", "kubemedic-archive")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert volumes["config"]["configMap"]["name"] == "kubemedic"
    assert f"--config={mounts['config']}/config.yaml" in args


def test_the_configuration_files_are_read_by_kubemedic(tmp_path: Path) -> None:
    objects = render()
    run = tmp_path / "run.yaml"
    run.write_text(find(objects, "ConfigMap", "kubemedic")["data"]["config.yaml"])
    settings = configuration.load_settings(run)
    assert repair_settings.load(settings).dry_run is True
    breaker = breaker_settings.load(settings)
    assert breaker is not None and breaker.settings.dry_run is True
    guard = tmp_path / "guard.yaml"
    guard.write_text(find(objects, "ConfigMap", "kubemedic-guard")["data"]["config.yaml"])
    assert guard_settings.load(configuration.load_settings(guard)).policy.value == "warn"


def _options(path: list[str]) -> set[str]:
    """The option names of the command ``kubemedic PATH...``."""
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {option for param in command.params for option in param.opts}


def test_every_flag_the_manifests_pass_is_one_the_command_has() -> None:
    for kind, name in (
        ("Deployment", "kubemedic"),
        ("Deployment", "kubemedic-guard"),
        ("DaemonSet", "kubemedic-agent"),
    ):
        args = _container(find(render(), kind, name))["args"]
        words = [a for a in args if not a.startswith("-")]
        known = _options(words)
        for arg in args:
            if not arg.startswith("--"):
                continue
            flag = arg.partition("=")[0]
            assert flag in known, f"{name}: {flag} is not an option of {' '.join(words)}"


def test_services_monitors_and_budgets_select_their_pods() -> None:
    objects = render()
    for name, port, target in (("kubemedic", 9808, 9808), ("kubemedic-guard", 443, 8443)):
        deployment = find(objects, "Deployment", name)
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        service = find(objects, "Service", name)
        assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())
        (service_port,) = service["spec"]["ports"]
        assert service_port["port"] == port
        assert _port(_container(deployment), service_port["targetPort"]) == target
        monitor = find(objects, "ServiceMonitor", name)
        assert _selects(monitor["spec"]["selector"], service["metadata"]["labels"])
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["port"] == service_port["name"]
        assert endpoint["path"] == "/metrics"
        budget = find(objects, "PodDisruptionBudget", name)
        assert _selects(budget["spec"]["selector"], labels)
        assert budget["spec"]["maxUnavailable"] == 1
    daemonset = find(objects, "DaemonSet", "kubemedic-agent")
    monitor = find(objects, "PodMonitor", "kubemedic-agent")
    assert _selects(
        monitor["spec"]["selector"], daemonset["spec"]["template"]["metadata"]["labels"]
    )
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert _port(_container(daemonset), endpoint["port"]) == 9810
    # no Service selects another component's pods
    agent = find(objects, "DaemonSet", "kubemedic-agent")["spec"]["template"]["metadata"]
    for service in (o for o in objects if o["kind"] == "Service"):
        assert not all(agent["labels"].get(k) == v for k, v in service["spec"]["selector"].items())


def test_the_guard_serves_its_service_with_the_certificates_of_its_secret() -> None:
    objects = render()
    deployment = find(objects, "Deployment", "kubemedic-guard")
    pod, container = _pod(deployment), _container(deployment)
    assert deployment["spec"]["replicas"] == 2
    args = container["args"]
    assert args[:2] == ["guard", "serve"]
    assert "--service=kubemedic-guard" in args
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert f"--cert-dir={mounts['certs']['mountPath']}" in args
    assert mounts["certs"]["readOnly"] is True
    assert volumes["certs"]["secret"]["secretName"] == "kubemedic-guard-tls"
    readiness = container["readinessProbe"]["httpGet"]
    assert (readiness["path"], readiness["scheme"]) == ("/healthz", "HTTPS")
    assert _port(container, readiness["port"]) == 8443
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_webhook_configuration_is_what_guard_render_prints_without_its_ca() -> None:
    rendered = find(render(), "ValidatingWebhookConfiguration", "kubemedic-guard")
    expected = render_configuration(ca_bundle=b"-", service=("kubemedic-guard", NAMESPACE))
    del expected["webhooks"][0]["clientConfig"]["caBundle"]
    expected["metadata"]["labels"]["app.kubernetes.io/part-of"] = "kubemedic"
    assert rendered == expected


def test_postgresql_runs_two_replicas_with_the_url_from_a_secret(tmp_path: Path) -> None:
    objects = render(overlay(tmp_path, "postgresql"))
    validate(objects)
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("PersistentVolumeClaim", "kubemedic-archive") not in names
    deployment = find(objects, "Deployment", "kubemedic")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    container = _container(deployment)
    env = {e["name"]: e for e in container["env"]}
    assert env["KUBEMEDIC_DB"] == {
        "name": "KUBEMEDIC_DB",
        "valueFrom": {"secretKeyRef": {"name": "kubemedic-db", "key": "url"}},
    }
    assert not any(a.startswith("--db") for a in container["args"])
    assert {m["name"] for m in container["volumeMounts"]} == {"config", "tmp"}
    assert {v["name"] for v in _pod(deployment)["volumes"]} == {"config", "tmp"}


def test_cert_manager_issues_the_guards_certificate_and_fills_the_ca(tmp_path: Path) -> None:
    objects = render(overlay(tmp_path, "guard-cert-manager"))
    validate(objects)
    certificate = find(objects, "Certificate", "kubemedic-guard")
    issuer = find(objects, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert "selfSigned" in issuer["spec"]
    guard = _pod(find(objects, "Deployment", "kubemedic-guard"))
    volumes = {v["name"]: v for v in guard["volumes"]}
    assert volumes["certs"]["secret"]["secretName"] == certificate["spec"]["secretName"]
    assert certificate["spec"]["privateKey"]["algorithm"] == "ECDSA"
    assert set(certificate["spec"]["dnsNames"]) >= {"kubemedic-guard.kubemedic.svc"}
    webhook = find(objects, "ValidatingWebhookConfiguration", "kubemedic-guard")
    annotation = webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert annotation == f"{NAMESPACE}/{certificate['metadata']['name']}"


def test_both_components_together_render_and_validate(tmp_path: Path) -> None:
    validate(render(overlay(tmp_path, "postgresql", "guard-cert-manager")))


def test_no_object_holds_a_secret_or_reads_one_but_through_the_kubelet(tmp_path: Path) -> None:
    """Secrets reach pods only as a mounted volume (the guard's TLS) or an environment
    variable (the PostgreSQL URL); the manifests create none and embed no key."""
    objects = render(overlay(tmp_path, "postgresql"))
    assert not [o for o in objects if o["kind"] == "Secret"]
    text = repr(objects)
    assert "PRIVATE KEY" not in text
    assert "caBundle" not in text
    assert base64.b64encode(b"-----BEGIN").decode()[:12] not in text


def test_the_api_emulator_accepts_the_objects_it_serves_in_a_server_side_dry_run(
    tmp_path: Path,
) -> None:
    """A second opinion from a server: `kubectl apply --dry-run=server` (strict field
    validation, defaulting, admission) of every rendered object whose kind the emulator serves."""
    objects = render()
    for emulator in start_emulator(tmp_path):
        emulator.kubectl("create", "namespace", NAMESPACE)
        registry = emulator.server.registry
        served = [
            o
            for o in objects
            if o["kind"] != "Namespace" and registry.for_kind(o["apiVersion"], o["kind"])
        ]
        assert {o["kind"] for o in served} >= {"Deployment", "DaemonSet", "Service"}
        stream = yaml.safe_dump_all(served)
        result = emulator.kubectl("apply", "--dry-run=server", "-f", "-", input=stream)
        assert result.stdout.count("(server dry run)") == len(served), result.stdout
        assert "Warning" not in result.stderr, result.stderr
