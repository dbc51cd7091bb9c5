"""Defaults as kube-apiserver 1.32 applies them before storing a write.

Pinned against recorded responses of real API servers (``../shared/peer/kubectl-edit``) where
they show defaults, and against the official OpenAPI schemas: a defaulted object must still be a
valid object of its kind.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import kubernetes_validate
import pytest

from kubemedic.sim.apiserver.registry import admitting, defaulting
from tests import paths
from tests.factories import container, deployment, node, pod, replicaset
from tests.sim.manifests import manifest, pdb

Obj = dict[str, Any]

RECORDED = paths.PEER / "kubectl-edit"
needs_recordings = pytest.mark.skipif(not RECORDED.is_dir(), reason="recordings not available")

_GVK = {
    "Pod": ("", "v1"),
    "Service": ("", "v1"),
    "Namespace": ("", "v1"),
    "Node": ("", "v1"),
    "Deployment": ("apps", "v1"),
    "ReplicaSet": ("apps", "v1"),
    "StatefulSet": ("apps", "v1"),
    "DaemonSet": ("apps", "v1"),
    "PodDisruptionBudget": ("policy", "v1"),
    "Lease": ("coordination.k8s.io", "v1"),
}


def defaulted(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    group, version = _GVK[out["kind"]]
    defaulting.default_object(out, group=group, version=version, kind=out["kind"])
    return out


def recorded(name: str) -> Obj:
    body: Obj = json.loads((RECORDED / name).read_text())
    return body


def as_kind(obj: Obj, kind: str) -> Obj:
    """A deployment() builder object turned into another workload kind."""
    out = manifest(obj)
    out["kind"] = kind
    return out


def service(name: str = "web", **spec: Any) -> Obj:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
    }
    body["spec"] = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return body


def template_spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["template"]["spec"]
    return spec


# -- workloads ---------------------------------------------------------------------------------


@needs_recordings
def test_a_bare_deployment_gets_every_default_a_real_server_returned() -> None:
    real = recorded("testcase-edit-subresource-status/0.response")
    bare = manifest(real)
    bare["metadata"].pop("annotations")
    spec = bare["spec"]
    for key in ("progressDeadlineSeconds", "revisionHistoryLimit", "strategy"):
        spec.pop(key)
    pod_spec = spec["template"]["spec"]
    for key in ("dnsPolicy", "restartPolicy", "schedulerName", "securityContext"):
        pod_spec.pop(key)
    pod_spec.pop("terminationGracePeriodSeconds")
    pod_spec["containers"] = [
        {"name": c["name"], "image": c["image"], "resources": c["resources"]}
        for c in pod_spec["containers"]
    ]

    assert defaulted(bare)["spec"] == real["spec"]


def test_deployment_defaults_keep_what_the_manifest_says() -> None:
    app = manifest(deployment("web", replicas=3))
    app["spec"]["strategy"] = {"type": "Recreate"}
    app["spec"]["revisionHistoryLimit"] = 2

    spec = defaulted(app)["spec"]

    assert spec["replicas"] == 3
    assert spec["strategy"] == {"type": "Recreate"}  # no rollingUpdate for Recreate
    assert spec["revisionHistoryLimit"] == 2
    assert spec["progressDeadlineSeconds"] == 600


def test_a_replicaset_without_replicas_runs_one() -> None:
    rs = manifest(replicaset(deployment("web")))
    del rs["spec"]["replicas"]
    assert defaulted(rs)["spec"]["replicas"] == 1
    rs["spec"]["replicas"] = 0
    assert defaulted(rs)["spec"]["replicas"] == 0


def test_statefulset_defaults() -> None:
    sts = as_kind(deployment("db"), "StatefulSet")
    del sts["spec"]["replicas"]
    sts["spec"]["serviceName"] = "db"
    sts["spec"]["volumeClaimTemplates"] = [
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    ]

    spec = defaulted(sts)["spec"]

    assert spec["replicas"] == 1
    assert spec["serviceName"] == "db"
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["status"] == {"phase": "Pending"}


def test_statefulset_on_delete_strategy_gets_no_partition() -> None:
    sts = as_kind(deployment("db"), "StatefulSet")
    sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
    spec = defaulted(sts)["spec"]
    assert spec["updateStrategy"] == {"type": "OnDelete"}
    assert spec["serviceName"] == ""  # no omitempty in 1.32: a real server prints it


def test_daemonset_defaults() -> None:
    ds = as_kind(deployment("agent"), "DaemonSet")
    del ds["spec"]["replicas"]

    spec = defaulted(ds)["spec"]

    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["revisionHistoryLimit"] == 10
    assert "replicas" not in spec


# -- pods and pod templates --------------------------------------------------------------------


def test_pod_spec_defaults() -> None:
    body = manifest(pod("p", containers=[container("main")]))
    for key in ("restartPolicy", "schedulerName"):
        del body["spec"][key]
    main = body["spec"]["containers"][0]
    for key in ("imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy"):
        del main[key]

    spec = defaulted(body)["spec"]

    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    main = spec["containers"][0]
    assert main["terminationMessagePath"] == "/dev/termination-log"
    assert main["terminationMessagePolicy"] == "File"
    assert main["imagePullPolicy"] == "IfNotPresent"


def test_templates_get_pod_spec_defaults_but_not_the_pod_only_ones() -> None:
    app = manifest(
        deployment("web", containers=[container("web", limits={"cpu": "1", "memory": "1Gi"})])
    )

    spec = template_spec(defaulted(app))

    assert spec["dnsPolicy"] == "ClusterFirst"
    assert "enableServiceLinks" not in spec
    assert "requests" not in spec["containers"][0]["resources"]


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.local:5000/team/app", "Always"),
        ("registry.local:5000/team/app:2.1", "IfNotPresent"),
        ("app@sha256:" + "a" * 64, "IfNotPresent"),
        ("app:latest@sha256:" + "a" * 64, "Always"),
        ("Upper/Case", "IfNotPresent"),  # not a valid reference: no tag, as the server parses it
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    main = container("main", image=image)
    del main["imagePullPolicy"]
    body = manifest(pod("p", containers=[main]))
    assert defaulted(body)["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_an_explicit_pull_policy_is_kept() -> None:
    main = container("main", image="nginx:latest")
    main["imagePullPolicy"] = "Never"
    body = manifest(pod("p", containers=[main]))
    assert defaulted(body)["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_pod_requests_default_to_limits_only_where_missing() -> None:
    main = container("main", requests={"cpu": "100m"}, limits={"cpu": "1", "memory": "1Gi"})
    side = container("side", limits={"memory": "64Mi"})
    bare = container("bare")
    body = manifest(
        pod(
            "p",
            containers=[main, side, bare],
            init_containers=[container("init", limits={"cpu": "2"})],
        )
    )

    spec = defaulted(body)["spec"]

    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "1Gi"}
    assert spec["containers"][1]["resources"]["requests"] == {"memory": "64Mi"}
    assert spec["containers"][2]["resources"] == {}
    assert spec["initContainers"][0]["resources"]["requests"] == {"cpu": "2"}


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("0.5", "500m"),
        ("1000m", "1"),
        ("1.5Gi", "1536Mi"),
        ("0.0001", "1m"),  # rounded up to milli-units, never down to zero
        ("100Mi", "100Mi"),
        (2, "2"),
        ("1e3", "1e3"),
    ],
)
def test_resource_quantities_are_stored_rounded_and_canonical(given: Any, stored: str) -> None:
    body = manifest(pod("p", containers=[container("main", limits={"cpu": given})]))
    resources = defaulted(body)["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": stored}, "requests": {"cpu": stored}}


def test_a_malformed_quantity_is_left_for_the_decoder_to_refuse() -> None:
    body = manifest(pod("p", containers=[container("main", limits={"memory": "1Gb"})]))
    assert defaulted(body)["spec"]["containers"][0]["resources"]["limits"] == {"memory": "1Gb"}


def test_probe_defaults() -> None:
    main = container("main", liveness={"httpGet": {"port": 8080}})
    main["readinessProbe"] = {"tcpSocket": {"port": 8080}, "periodSeconds": 5}
    main["startupProbe"] = {"grpc": {"port": 9090}}
    main["lifecycle"] = {"preStop": {"httpGet": {"port": 8080, "path": "/drain"}}}

    spec = defaulted(manifest(pod("p", containers=[main])))["spec"]["containers"][0]

    assert spec["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert spec["readinessProbe"]["periodSeconds"] == 5
    assert spec["startupProbe"]["grpc"] == {"port": 9090, "service": ""}
    assert spec["lifecycle"]["preStop"]["httpGet"] == {
        "port": 8080,
        "path": "/drain",
        "scheme": "HTTP",
    }


def test_ports_and_env_defaults() -> None:
    main = container("main")
    main["ports"] = [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]
    main["env"] = [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]

    spec = defaulted(manifest(pod("p", containers=[main])))["spec"]["containers"][0]

    assert [p["protocol"] for p in spec["ports"]] == ["TCP", "UDP"]
    assert spec["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"


def test_host_network_pods_expose_container_ports_on_the_host() -> None:
    main = container("main")
    main["ports"] = [{"containerPort": 9100}, {"containerPort": 80, "hostPort": 8080}]
    body = manifest(pod("p", containers=[main]))
    body["spec"]["hostNetwork"] = True

    ports = defaulted(body)["spec"]["containers"][0]["ports"]

    assert [p["hostPort"] for p in ports] == [9100, 8080]


def test_volume_defaults() -> None:
    body = manifest(pod("p"))
    body["spec"]["volumes"] = [
        {"name": "scratch"},
        {"name": "config", "configMap": {"name": "app"}},
        {"name": "creds", "secret": {"secretName": "app", "defaultMode": 256}},
        {
            "name": "info",
            "downwardAPI": {
                "items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]
            },
        },
        {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
        {"name": "host", "hostPath": {"path": "/var/log"}},
    ]

    volumes = {v["name"]: v for v in defaulted(body)["spec"]["volumes"]}

    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}}
    assert volumes["config"]["configMap"]["defaultMode"] == 420
    assert volumes["creds"]["secret"]["defaultMode"] == 256
    assert volumes["info"]["downwardAPI"]["defaultMode"] == 420
    assert volumes["info"]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    projected = volumes["token"]["projected"]
    assert projected["defaultMode"] == 420
    assert projected["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600
    assert volumes["host"]["hostPath"]["type"] == ""


def test_service_account_name_and_its_deprecated_twin_agree() -> None:
    app = manifest(deployment("web"))
    app["spec"]["template"]["spec"]["serviceAccountName"] = "builder"
    assert template_spec(defaulted(app))["serviceAccount"] == "builder"


# -- services ----------------------------------------------------------------------------------


def _recorded_services() -> list[str]:
    if not RECORDED.is_dir():
        return []
    names = []
    for path in sorted(RECORDED.glob("*/*.response")):
        text = path.read_text()
        if text.lstrip().startswith("{") and json.loads(text).get("kind") == "Service":
            names.append(str(path.relative_to(RECORDED)))
    return names


#: Fields kube-apiserver 1.32 sets that the recorded (older) servers did not have yet.
_NEWER_SERVICE_FIELDS = {
    "clusterIPs",
    "ipFamilies",
    "ipFamilyPolicy",
    "internalTrafficPolicy",
    "sessionAffinityConfig",
}


@needs_recordings
@pytest.mark.parametrize("name", _recorded_services())
def test_a_bare_service_gets_the_defaults_real_servers_returned(name: str) -> None:
    real = recorded(name)
    bare = manifest(real)
    spec = bare["spec"]
    if spec.get("sessionAffinity") == "None":
        del spec["sessionAffinity"]
    if spec.get("type") == "ClusterIP":
        del spec["type"]
    for port in spec["ports"]:
        if port.get("protocol") == "TCP":
            del port["protocol"]
        if port.get("targetPort") == port["port"]:
            del port["targetPort"]

    spec = defaulted(bare)["spec"]

    assert {k: v for k, v in spec.items() if k not in _NEWER_SERVICE_FIELDS} == real["spec"]
    assert spec["clusterIPs"] == [real["spec"]["clusterIP"]]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("SingleStack", ["IPv4"])


def test_service_defaults_by_type() -> None:
    node_port = defaulted(service(type="NodePort"))["spec"]
    assert node_port["externalTrafficPolicy"] == "Cluster"
    assert node_port["internalTrafficPolicy"] == "Cluster"
    balancer = defaulted(service(type="LoadBalancer"))["spec"]
    assert balancer["allocateLoadBalancerNodePorts"] is True
    cluster = defaulted(service())["spec"]
    assert "externalTrafficPolicy" not in cluster
    external = defaulted(service(type="ExternalName", externalName="db.example.com", ports=[]))
    assert not {"ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"} & set(external["spec"])


def test_client_ip_affinity_gets_a_three_hour_timeout() -> None:
    spec = defaulted(service(sessionAffinity="ClientIP"))["spec"]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    none = service(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 5}})
    assert "sessionAffinityConfig" not in defaulted(none)["spec"]


def test_a_named_target_port_is_kept() -> None:
    spec = defaulted(service(ports=[{"port": 80, "targetPort": "http"}]))["spec"]
    assert spec["ports"][0]["targetPort"] == "http"


def test_headless_services_and_ip_families() -> None:
    with_selector = defaulted(service(clusterIP="None"))["spec"]
    assert with_selector["clusterIPs"] == ["None"]
    assert (with_selector["ipFamilyPolicy"], with_selector["ipFamilies"]) == (
        "SingleStack",
        ["IPv4"],
    )
    selectorless = service(clusterIP="None")
    del selectorless["spec"]["selector"]
    spec = defaulted(selectorless)["spec"]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("RequireDualStack", ["IPv4", "IPv6"])
    v6 = defaulted(service(clusterIP="fd00::10"))["spec"]
    assert v6["ipFamilies"] == ["IPv6"]


# -- namespaces and nodes ----------------------------------------------------------------------


def test_namespace_gets_its_name_label_and_active_phase() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    out = defaulted(ns)
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert out["status"] == {"phase": "Active"}
    assert "spec" not in out  # the kubernetes finalizer is the create strategy's, not a default


def test_node_allocatable_defaults_to_capacity() -> None:
    body = node("n1", cpu="4", memory="16Gi")
    del body["status"]["allocatable"]
    body["status"]["capacity"]["cpu"] = "4000m"
    status = defaulted(body)["status"]
    assert status["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    kept = node("n1", allocatable_cpu="3800m")
    assert defaulted(kept)["status"]["allocatable"]["cpu"] == "3800m"


def test_a_node_always_shows_its_system_info_and_daemon_endpoints() -> None:
    created = defaulted({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    assert created["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert created["status"]["nodeInfo"]["kubeProxyVersion"] == ""
    reported = defaulted(node("n1"))["status"]["nodeInfo"]
    assert (reported["kubeletVersion"], reported["machineID"]) == ("v1.32.0", "")


def test_kinds_without_defaults_are_untouched() -> None:
    budget = pdb("web", min_available=1, labels={"app": "web"})
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "n1"},
        "spec": {},
    }
    for body in (budget, lease):
        assert defaulted(body) == body


def test_defaulting_twice_changes_nothing() -> None:
    objects = [
        manifest(pod("p", containers=[container("m", limits={"cpu": "0.5"})])),
        manifest(deployment("web")),
        as_kind(deployment("db"), "StatefulSet"),
        service(type="LoadBalancer"),
    ]
    for body in objects:
        once = defaulted(body)
        assert defaulted(once) == once


# -- the official schemas ----------------------------------------------------------------------


def _stored_objects() -> list[Obj]:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    ds = as_kind(deployment("agent"), "DaemonSet")
    del ds["spec"]["replicas"]
    pod_body = manifest(
        pod(
            "p",
            containers=[container("m", limits={"cpu": "0.5"}, liveness={"httpGet": {"port": 80}})],
        )
    )
    del pod_body["spec"]["priority"]
    pod_body["spec"]["volumes"] = [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}}]
    return [
        pod_body,
        manifest(deployment("web")),
        manifest(replicaset(deployment("web"))),
        as_kind(deployment("db"), "StatefulSet"),
        ds,
        service(type="LoadBalancer"),
        service(clusterIP="None"),
        ns,
        node("n1"),  # its nodeInfo lacks fields Go always prints
        pdb("web", min_available=1, labels={"app": "web"}),
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "n1", "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40},
        },
    ]


@pytest.mark.parametrize("body", _stored_objects(), ids=lambda body: str(body["kind"]))
def test_defaulted_objects_validate_against_the_official_schema(body: Obj) -> None:
    out = defaulted(body)
    group, version = _GVK[out["kind"]]
    if out["kind"] == "Pod":
        admitting.admit_pod(out)
    admitting.prepare_for_create(out, group=group, version=version, kind=out["kind"])
    if out["kind"] == "Service":
        out["spec"].setdefault("clusterIP", admitting.allocate_cluster_ip(1))
    kubernetes_validate.validate(out, "1.32.0", strict=True)
