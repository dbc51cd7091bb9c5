"""The kubelet's admission of pods bound to its node (pure)."""

from __future__ import annotations

from typing import Any

from kubemedic.sim.cluster.kubelet import admission as kubeletadmission
from kubemedic.testing import bodies as builders

Obj = dict[str, Any]

NODE = builders.node(
    "n1", cpu="4", memory="8Gi", allocatable_cpu="3800m", allocatable_memory="8000000000"
)


def pinned(name: str, *, memory: str = "800Mi", cpu: str | None = None, **extra: Any) -> Obj:
    requests = {"memory": memory, **({"cpu": cpu} if cpu else {})}
    container = builders.container("app", requests=requests)
    return builders.pod(name, node_name="n1", containers=[container], **extra)


def test_pinned_pod_that_does_not_fit_is_out_of_memory_with_the_fit_plugins_integers() -> None:
    admitted = [pinned(f"p{i}") for i in range(9)]
    rejection = kubeletadmission.admit(pinned("p9"), NODE, admitted=admitted)
    assert rejection is not None
    assert rejection.reason == "OutOfmemory"
    # requested: 800Mi; used: 9 x 800Mi; capacity: allocatable, not the 8Gi capacity
    assert rejection.message == (
        "Node didn't have enough resource: memory, requested: 838860800, "
        "used: 7549747200, capacity: 8000000000"
    )
    assert rejection.status_message.startswith("Pod was rejected: Node didn't have enough")


def test_a_pod_that_fits_is_admitted() -> None:
    assert kubeletadmission.admit(pinned("p1"), NODE, admitted=[pinned("p0")]) is None


def test_cpu_is_counted_in_millicores_and_checked_before_memory() -> None:
    admitted = [pinned("big", memory="7Gi", cpu="3500m")]
    rejection = kubeletadmission.admit(
        pinned("p", memory="1Gi", cpu="500m"), NODE, admitted=admitted
    )
    assert rejection is not None
    assert rejection.reason == "OutOfcpu"
    assert rejection.message == (
        "Node didn't have enough resource: cpu, requested: 500, used: 3500, capacity: 3800"
    )


def test_the_pod_count_is_checked_first() -> None:
    node = builders.node("n1", pods="2", memory="1Gi")
    admitted = [pinned("a", memory="400Mi"), pinned("b", memory="400Mi")]
    rejection = kubeletadmission.admit(pinned("c", memory="400Mi"), node, admitted=admitted)
    assert rejection is not None
    assert (rejection.reason, rejection.message) == (
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    )


def test_a_pod_without_requests_only_needs_a_pod_slot() -> None:
    best_effort = builders.pod("be", node_name="n1")
    full = [pinned(f"p{i}", memory="950Mi") for i in range(8)]
    assert kubeletadmission.admit(best_effort, NODE, admitted=full) is None


def test_init_containers_count_at_their_peak() -> None:
    init = builders.container("migrate", requests={"memory": "3Gi"})
    app = builders.container("app", requests={"memory": "100Mi"})
    pod = builders.pod("p", node_name="n1", containers=[app], init_containers=[init])
    assert kubeletadmission.request_vector(pod) == {"memory": 3 * 2**30}
    rejection = kubeletadmission.admit(pod, NODE, admitted=[pinned("a", memory="5Gi")])
    assert rejection is not None and rejection.reason == "OutOfmemory"


def test_an_extended_resource_the_node_has_is_checked_and_an_unknown_one_ignored() -> None:
    node = builders.node("n1")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    gpu = builders.container("app", requests={"nvidia.com/gpu": "2"})
    rejection = kubeletadmission.admit(builders.pod("g", node_name="n1", containers=[gpu]), node)
    assert rejection is not None
    assert rejection.reason == "OutOfnvidia.com/gpu"
    other = builders.container("app", requests={"example.com/widget": "2"})
    assert (
        kubeletadmission.admit(builders.pod("w", node_name="n1", containers=[other]), node) is None
    )


def test_node_selector_mismatch_fails_the_node_affinity_predicate() -> None:
    pod = pinned("p")
    pod["spec"]["nodeSelector"] = {"pool": "gpu"}
    rejection = kubeletadmission.admit(pod, NODE)
    assert rejection is not None
    assert (rejection.reason, rejection.message) == (
        "NodeAffinity",
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    )


def test_only_untolerated_no_execute_taints_reject() -> None:
    node = builders.node(
        "n1",
        taints=[
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": "drain", "effect": "NoExecute"},
        ],
    )
    rejection = kubeletadmission.admit(pinned("p"), node)
    assert rejection is not None
    assert (rejection.reason, rejection.message) == (
        "TaintToleration",
        "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    )
    tolerant = pinned("q")
    tolerant["spec"]["tolerations"] = [{"key": "drain", "operator": "Exists"}]
    assert kubeletadmission.admit(tolerant, node) is None


def test_a_host_port_in_use_fails_the_node_ports_predicate() -> None:
    def with_port(name: str) -> Obj:
        pod = pinned(name, memory="10Mi")
        pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        return pod

    rejection = kubeletadmission.admit(with_port("b"), NODE, admitted=[with_port("a")])
    assert rejection is not None
    assert rejection.message == (
        "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    )


def test_memory_pressure_refuses_best_effort_pods_only() -> None:
    best_effort = builders.pod("be", node_name="n1")
    rejection = kubeletadmission.admit(best_effort, NODE, pressure=["MemoryPressure"])
    assert rejection is not None
    assert (rejection.reason, rejection.message) == (
        "Evicted",
        "The node had condition: [MemoryPressure]. ",
    )
    assert kubeletadmission.admit(pinned("burstable"), NODE, pressure=["MemoryPressure"]) is None


def test_disk_pressure_refuses_every_pod_but_critical_ones() -> None:
    rejection = kubeletadmission.admit(pinned("p"), NODE, pressure=["DiskPressure"])
    assert rejection is not None
    assert rejection.message == "The node had condition: [DiskPressure]. "
    critical = pinned("c", priority=2_000_001_000)
    assert kubeletadmission.admit(critical, NODE, pressure=["DiskPressure"]) is None


def test_a_pod_for_another_os_is_refused() -> None:
    pod = pinned("win", labels={"kubernetes.io/os": "windows"})
    rejection = kubeletadmission.admit(pod, NODE)
    assert rejection is not None
    assert rejection.reason == "PodOSSelectorNodeLabelDoesNotMatch"
