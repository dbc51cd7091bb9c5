"""Finding helpers shared by the checks: workload causes, the pin cause, evidence percentages."""

from __future__ import annotations

from datetime import UTC, datetime

from kubemedic.checks.findings import (
    CLUSTER,
    Finding,
    Severity,
    percent,
    pinned_cause,
    workload_cause,
)
from kubemedic.model.objects import ObjectRef
from kubemedic.model.quantities import parse_quantity


def test_pin_cause_is_one_string_for_the_pin_the_storm_and_the_edit() -> None:
    ref = ObjectRef("Deployment", "api-gateway", "gateway", "apps/v1")
    assert pinned_cause(ref) == "pinned-node-name:gateway/Deployment/api-gateway"
    assert (
        workload_cause("failed-pod-storm", ref) == "failed-pod-storm:gateway/Deployment/api-gateway"
    )


def test_workload_cause_keeps_an_empty_namespace_and_makes_names_safe() -> None:
    ref = ObjectRef("Deployment", "odd name", None, "apps/v1")
    assert workload_cause("out-of-band-edit", ref) == "out-of-band-edit:/Deployment/odd_name"


def test_percent_is_rounded_to_one_decimal_and_zero_for_an_empty_whole() -> None:
    assert percent(parse_quantity("31Gi"), parse_quantity("25Gi")) == 124.0
    assert percent(parse_quantity("1"), parse_quantity("3")) == 33.3
    assert percent(parse_quantity("1"), parse_quantity("0")) == 0.0


def test_cluster_findings_name_a_kubemedic_cluster_object() -> None:
    assert CLUSTER.to_json() == {
        "apiVersion": "kubemedic.io/v1",
        "kind": "Cluster",
        "namespace": None,
        "name": "cluster",
    }


def test_findings_about_namespaced_and_cluster_scoped_objects_of_one_name_sort() -> None:
    now = datetime(2023, 2, 1, tzinfo=UTC)

    def finding(namespace: str | None) -> Finding:
        return Finding(
            check="evicted",
            severity=Severity.WARNING,
            object=ObjectRef("Pod", "web", namespace),
            message="m",
            cause="c",
            first_seen=now,
            last_seen=now,
        )

    ordered = sorted([finding("shop"), finding(None)], key=lambda f: f.sort_key)
    assert [f.object.namespace for f in ordered] == [None, "shop"]
    assert sorted([ObjectRef("Pod", "web", "b"), ObjectRef("Pod", "web")]) == [
        ObjectRef("Pod", "web"),
        ObjectRef("Pod", "web", "b"),
    ]
