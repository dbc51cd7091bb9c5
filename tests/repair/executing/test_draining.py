"""A drain pass evicts what must leave, leaves what must stay, and names what a budget blocks."""

from __future__ import annotations

from typing import Any

from kubemedic.repair.executing import draining
from tests import factories as f
from tests.repair.served import NODE, Served


def workload(kind: str, name: str, *, api_version: str = "apps/v1") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "uid": f.uid_for(kind, name)},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [f.container(name)]},
            },
        },
    }


def budget(name: str, app: str, *, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def mixed_node(served: Served) -> None:
    """Two pods of a Deployment, a DaemonSet's pod, a mirror pod and a finished pod."""
    app = f.deployment("web", namespace="default", containers=[f.container("web")])
    rs = f.replicaset(app)
    logs = workload("DaemonSet", "logs")
    mirror = f.pod(f"kube-proxy-{NODE}", namespace="kube-system", node_name=NODE)
    mirror["metadata"]["annotations"] = {draining.MIRROR_ANNOTATION: "3f1e"}
    served.load(
        app,
        rs,
        logs,
        f.pod("web-5d8f7c9b4-aaaaa", node_name=NODE, owner=rs),
        f.pod("web-5d8f7c9b4-bbbbb", node_name=NODE, owner=rs),
        f.pod("logs-x1x2x", node_name=NODE, owner=logs),
        f.pod("report-q9q8q", node_name=NODE, phase="Succeeded"),
        mirror,
    )


def test_classify_follows_kubectl_drain_ignore_daemonsets() -> None:
    rs = f.replicaset(f.deployment("web", namespace="default", containers=[f.container("w")]))
    running = f.pod("web-1", owner=rs)
    mirror = f.pod("static")
    mirror["metadata"]["annotations"] = {draining.MIRROR_ANNOTATION: "x"}
    deleting = f.pod("web-2", owner=rs)
    deleting["metadata"]["deletionTimestamp"] = f.stamp()

    assert draining.classify(running) == "evict"
    assert draining.classify(f.pod("standalone")) == "evict"
    assert draining.classify(mirror) == "mirror"
    assert draining.classify(f.pod("logs-1", owner=workload("DaemonSet", "logs"))) == "daemonset"
    assert draining.classify(f.pod("done", owner=rs, phase="Failed")) == "finished"
    assert draining.classify(deleting) == "terminating"


def test_delete_classes_name_pods_by_kind_qos_or_labels() -> None:
    rs = f.replicaset(f.deployment("web", namespace="default", containers=[f.container("w")]))
    web = f.pod("web-1", owner=rs, labels={"tier": "front"})
    shell = f.pod("shell", containers=[{"name": "sh", "image": "busybox"}])
    logs = f.pod("logs-1", owner=workload("DaemonSet", "logs"))

    assert draining.parse_classes("standalone,app.kubernetes.io/name=web,tier=front") == (
        "standalone", "app.kubernetes.io/name=web,tier=front",
    )  # fmt: skip
    assert draining.parse_classes("daemonset; app in (a,b)") == ("daemonset", "app in (a,b)")
    assert draining.in_classes(web, ["app.kubernetes.io/name=web,tier=front"])
    assert not draining.in_classes(web, ["tier=back", "standalone", "daemonset"])
    assert draining.in_classes(shell, ["standalone"]) and draining.in_classes(
        shell, ["best-effort"]
    )
    assert draining.in_classes(logs, ["daemonset"]) and not draining.in_classes(logs, ["app in ("])


def test_drain_evicts_a_deployments_pods_and_skips_daemonset_mirror_and_finished_pods(
    served: Served,
) -> None:
    mixed_node(served)

    first = served.run(lambda api: draining.drain(api, NODE))

    assert sorted(first.evicted) == ["default/web-5d8f7c9b4-aaaaa", "default/web-5d8f7c9b4-bbbbb"]
    assert first.skipped == 3
    # Evicted pods terminate gracefully; the node is drained once they are gone.
    assert not first.done
    assert first.data()["state"] == "waiting"
    assert first.data()["remaining"] == "2"
    pods = served.pods()
    assert pods["default/web-5d8f7c9b4-aaaaa"]["metadata"]["deletionTimestamp"]
    assert not pods["default/logs-x1x2x"]["metadata"].get("deletionTimestamp")

    served.advance(60)  # past the 30 s grace period: the emulator confirms the deletions
    served.until(
        "the evicted pods to go", lambda: "default/web-5d8f7c9b4-aaaaa" not in served.pods()
    )
    second = served.run(lambda api: draining.drain(api, NODE))

    assert second.done
    assert second.data()["remaining"] == "0"
    assert sorted(served.pods()) == [
        "default/logs-x1x2x",
        "default/report-q9q8q",
        f"kube-system/kube-proxy-{NODE}",
    ]


def test_a_budget_that_allows_no_disruption_blocks_its_pod_by_name(served: Served) -> None:
    db = workload("StatefulSet", "db")
    served.load(db, budget("db-budget", "db", min_available=1))
    served.load(f.pod("db-0", node_name=NODE, owner=db))
    served.until(
        "the disruption controller to count the budget",
        lambda: (
            served.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/db-budget")
            .get("status", {})
            .get("currentHealthy")
            == 1
        ),
    )

    result = served.run(lambda api: draining.drain(api, NODE))

    assert not result.done
    assert result.blocking == ["default/db-0"]
    assert result.budgets == ["default/db-budget"]
    assert result.data()["state"] == "blocked"
    assert result.data()["blocking"] == "default/db-0"
    assert "PodDisruptionBudget default/db-budget: default/db-0" in result.detail()
    assert not served.pods()["default/db-0"]["metadata"].get("deletionTimestamp")


def test_pods_named_for_deletion_are_deleted_even_when_a_budget_blocks(served: Served) -> None:
    db = workload("StatefulSet", "db")
    logs = workload("DaemonSet", "logs")
    served.load(db, logs, budget("db-budget", "db", min_available=1))
    served.load(
        f.pod("db-0", node_name=NODE, owner=db), f.pod("logs-x1x2x", node_name=NODE, owner=logs)
    )

    result = served.run(
        lambda api: draining.drain(
            api, NODE, delete=draining.parse_pod_list("default/db-0, default/logs-x1x2x")
        )
    )

    assert sorted(result.deleted) == ["default/db-0", "default/logs-x1x2x"]
    assert result.blocking == []
    pods = served.pods()
    assert all(p["metadata"].get("deletionTimestamp") for p in pods.values())


def test_pods_being_deleted_count_as_gone_only_when_the_node_is_down(served: Served) -> None:
    mixed_node(served)
    served.run(lambda api: draining.drain(api, NODE))  # both web pods now terminating

    node_up = served.run(lambda api: draining.drain(api, NODE))
    node_down = served.run(lambda api: draining.drain(api, NODE, node_down=True))

    assert sorted(node_up.terminating) == sorted(node_down.terminating)
    assert len(node_up.terminating) == 2
    assert not node_up.done
    assert node_down.done
    assert node_up.evicted == node_down.evicted == []
