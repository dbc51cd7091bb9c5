"""kubectl's generator commands against the emulator: they send protobuf, and what is stored is
what kube-apiserver 1.32 stores (defaults, generated selectors, server-set metadata). The kinds
every cluster serves beside them (Jobs, CronJobs, PriorityClasses, ReplicationControllers) are
listed, printed and explained like the others."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.sim.apiserver.protobuf.recording import COMMANDS
from tests.sim.conftest import Running, needs_kubectl
from tests.sim.manifests import to_yaml

pytestmark = needs_kubectl


def _get(emulator: Running, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(emulator.kubectl("get", *args, "-o", "json").stdout)
    return found


@pytest.fixture
def created(emulator: Running) -> Running:
    for args in COMMANDS.values():
        emulator.kubectl(*args)
    return emulator


def test_every_generator_command_succeeds_through_protobuf(emulator: Running) -> None:
    for name, args in COMMANDS.items():
        result = emulator.kubectl(*args)
        assert "created" in result.stdout, name
        assert "Error" not in result.stderr, name


def test_generated_objects_are_stored_with_the_servers_defaults(created: Running) -> None:
    namespace = _get(created, "namespace", "team-a")
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert namespace["spec"] == {"finalizers": ["kubernetes"]}
    assert namespace["status"] == {"phase": "Active"}

    configmap = _get(created, "configmap", "settings", "--show-managed-fields")
    assert configmap["data"] == {"a": "b"}
    assert [m["manager"] for m in configmap["metadata"]["managedFields"]] == ["kubectl-create"]

    secret = _get(created, "secret", "creds")
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"a": base64.b64encode(b"b").decode()}

    assert _get(created, "serviceaccount", "robot")["metadata"]["namespace"] == "default"

    service = _get(created, "service", "front")["spec"]
    assert service["type"] == "ClusterIP" and service["sessionAffinity"] == "None"
    assert service["ports"] == [
        {"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}
    ]
    assert service["selector"] == {"app": "front"}
    assert service["clusterIP"].startswith("10.") and service["ipFamilies"] == ["IPv4"]

    deployment = _get(created, "deployment", "web")
    spec = deployment["spec"]
    assert deployment["metadata"]["generation"] == 1
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    container = spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "Always"  # nginx means nginx:latest
    assert container["terminationMessagePolicy"] == "File"
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_a_created_job_gets_its_defaults_and_generated_selector(created: Running) -> None:
    job = _get(created, "job", "once")
    uid = job["metadata"]["uid"]
    spec = job["spec"]
    assert {k: spec[k] for k in spec if k not in ("selector", "template")} == {
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "completions": 1,
        "parallelism": 1,
        "podReplacementPolicy": "TerminatedPodsOrFailed",
        "suspend": False,
    }
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "once",
        "controller-uid": uid,
        "job-name": "once",
    }
    assert spec["template"]["metadata"]["labels"] == labels
    assert job["metadata"]["labels"] == labels
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert job["metadata"]["generation"] == 1 and job["status"] == {}


def test_a_created_cronjob_and_priorityclass_get_their_defaults(created: Running) -> None:
    cronjob = _get(created, "cronjob", "nightly")["spec"]
    assert cronjob["schedule"] == "*/5 * * * *"
    assert (cronjob["concurrencyPolicy"], cronjob["suspend"]) == ("Allow", False)
    assert (cronjob["successfulJobsHistoryLimit"], cronjob["failedJobsHistoryLimit"]) == (3, 1)
    template = cronjob["jobTemplate"]["spec"]
    assert "backoffLimit" not in template  # Job defaults apply to Jobs, not to their template
    assert template["template"]["spec"]["dnsPolicy"] == "ClusterFirst"

    high = _get(created, "priorityclass", "high")
    assert (high["value"], high["description"]) == (1000, "for the important")
    assert high["preemptionPolicy"] == "PreemptLowerPriority"


def test_every_cluster_has_the_system_priority_classes(emulator: Running) -> None:
    found = _get(emulator, "priorityclasses")["items"]
    classes = {c["metadata"]["name"]: c for c in found}
    node = classes["system-node-critical"]
    assert node["value"] == 2000001000
    assert node["description"] == (
        "Used for system critical pods that must not be moved from their current node."
    )
    assert classes["system-cluster-critical"]["value"] == 2000000000
    assert node["preemptionPolicy"] == "PreemptLowerPriority"
    lines = emulator.kubectl("get", "pc").stdout.splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert lines[1].split()[:3] == ["system-cluster-critical", "2000000000", "false"]
    assert lines[2].split()[:3] == ["system-node-critical", "2000001000", "false"]
    # Pods naming them get their priority from the stored class.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "agent"},
        "spec": {
            "priorityClassName": "system-node-critical",
            "containers": [{"name": "a", "image": "a:1"}],
        },
    }
    status, body, _ = emulator.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 201 and body["spec"]["priority"] == 2000001000


def test_get_prints_jobs_cronjobs_priorityclasses_and_rcs(created: Running, tmp_path: Path) -> None:
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "app", "image": "app:1"}]},
            }
        },
    }
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(to_yaml(rc))
    created.kubectl("create", "-f", str(manifest))
    stored = _get(created, "rc", "legacy")
    assert stored["spec"]["replicas"] == 1
    assert stored["spec"]["selector"] == {"app": "legacy"}  # from the template's labels
    assert stored["metadata"]["labels"] == {"app": "legacy"}
    assert stored["status"] == {"replicas": 0}

    out = created.kubectl("get", "jobs,cronjobs,priorityclasses,rc").stdout
    headers = [line.split() for line in out.splitlines() if line.startswith("NAME")]
    assert headers == [
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"],
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
        ["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
    ]
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["job.batch/once"][1:3] == ["Running", "0/1"]
    assert rows["cronjob.batch/nightly"][1:8] == ["*/5", "*", "*", "*", "*", "<none>", "False"]
    assert rows["replicationcontroller/legacy"][1:4] == ["1", "0", "0"]
    wide = created.kubectl("get", "rc", "legacy", "-o", "wide").stdout.splitlines()[1].split()
    assert wide[-3:] == ["app", "app:1", "app=legacy"]


def test_discovery_and_explain_know_the_new_kinds(emulator: Running) -> None:
    out = emulator.kubectl("api-resources", "--no-headers").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["jobs"][1:] == ["batch/v1", "true", "Job"]
    assert rows["cronjobs"][1:] == ["cj", "batch/v1", "true", "CronJob"]
    assert rows["priorityclasses"][1:] == ["pc", "scheduling.k8s.io/v1", "false", "PriorityClass"]
    assert rows["replicationcontrollers"][1:] == ["rc", "v1", "true", "ReplicationController"]
    assert rows["secrets"][1:] == ["v1", "true", "Secret"]
    explained = emulator.kubectl("explain", "jobs.spec.backoffLimit").stdout
    assert "FIELD: backoffLimit <integer>" in explained


def test_invalid_jobs_and_priority_classes_are_refused(emulator: Running) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "loops"},
        "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:1"}]}}},
    }
    status, body, _ = emulator.request("POST", "/apis/batch/v1/namespaces/default/jobs", job)
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.template.spec.restartPolicy"
    assert 'Unsupported value: "Always"' in body["message"]
    too_high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "greedy"},
        "value": 2000000000,
    }
    status, body, _ = emulator.request(
        "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", too_high
    )
    assert status == 422 and "maximum allowed value" in body["message"]


def test_a_malformed_protobuf_body_is_a_400_naming_the_problem(emulator: Running) -> None:
    protobuf = "application/vnd.kubernetes.protobuf"
    status, body, _ = emulator.request(
        "POST", "/api/v1/namespaces/default/configmaps", b"k8s\x00\x0a\x05ab",
        content_type=protobuf,
    )  # fmt: skip
    assert status == 400 and body["reason"] == "BadRequest"
    assert "must be of type ConfigMap" in body["message"]
    assert "unexpected EOF" in body["message"]
    status, body, _ = emulator.request(
        "POST", "/api/v1/namespaces/default/configmaps", b"not protobuf", content_type=protobuf
    )
    assert status == 400 and "does not appear to be a protobuf message" in body["message"]
