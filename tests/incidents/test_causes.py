"""Cause fingerprints read back: parsing, incident causes, what findings blame and harm."""

from __future__ import annotations

import pytest

from kubemedic.incidents import causes
from tests.incidents import builders as b


@pytest.mark.parametrize(
    ("text", "family", "subject", "scope"),
    [
        ("memory-hog:support/Deployment/prom@core-pool", "memory-hog", "support/Deployment/prom",
         "core-pool"),
        ("node-scale-burst@dask-worker", "node-scale-burst", "", "dask-worker"),
        ("unschedulable:taint:k8s.dask.org_dedicated@prod/Deployment/hub", "unschedulable",
         "taint:k8s.dask.org_dedicated", "prod/Deployment/hub"),
        ("eviction:ephemeral-storage-limit:ns/Deployment/x", "eviction",
         "ephemeral-storage-limit:ns/Deployment/x", ""),
        ("oom:prod/Deployment/dask-worker/dask-worker", "oom",
         "prod/Deployment/dask-worker/dask-worker", ""),
        ("node-not-ready:mass@cluster", "node-not-ready", "mass", "cluster"),
    ],
)  # fmt: skip
def test_parse_cause_splits_family_subject_and_scope(
    text: str, family: str, subject: str, scope: str
) -> None:
    parsed = causes.parse_cause(text)
    assert (parsed.family, parsed.subject, parsed.scope) == (family, subject, scope)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Deployment prod/hub", "prod/Deployment/hub"),
        ("prod/Deployment/hub", "prod/Deployment/hub"),
        ("/Node/core-2", "Node/core-2"),
        ("Node core-2", "Node/core-2"),
        ("core-pool", ""),
        ("memory", ""),
    ],
)
def test_workload_key_reads_every_spelling_of_a_workload(text: str, key: str) -> None:
    assert causes.workload_key(text) == key


def test_hog_and_overcommit_of_one_workload_on_one_pool_are_one_incident_cause() -> None:
    hog = causes.facts_of(b.hog(b.T0))
    over = causes.facts_of(b.overcommit(b.T0))
    assert hog is not None and over is not None
    assert hog.incident_cause == over.incident_cause == b.MEMORY_CAUSE


def test_a_pod_named_cause_is_normalised_to_its_deployment() -> None:
    cause = causes.parse_cause(
        "unschedulable:insufficient-cpu@prod/Pod/dask-worker-6bfd56fdcf-pg5bw"
    )
    assert causes.incident_cause(cause) == (
        "unschedulable:insufficient-cpu@prod/Deployment/dask-worker"
    )


def test_facts_name_culprits_victims_nodes_and_pools_from_the_evidence() -> None:
    hog = causes.facts_of(b.hog(b.T0))
    assert hog is not None
    assert hog.condition and hog.primary and hog.root
    assert hog.culprits == {b.PROMETHEUS}
    assert hog.victims == {"prod/Deployment/hub", "prod/Deployment/proxy"}
    assert hog.nodes == {"core-2"} and hog.pools == {"core-pool"}
    evicted = causes.facts_of(b.evicted(b.T0))
    assert evicted is not None
    assert not evicted.condition and evicted.symptom == "pod eviction"
    assert evicted.victims == {b.HUB} and evicted.resource == "memory"
    assert dict(evicted.roles)[b.HUB] == "jupyterhub"
    burst = causes.facts_of(b.burst(b.T0))
    assert burst is not None and burst.culprits == {b.PROMETHEUS}


def test_an_under_requested_critical_pod_is_a_condition_that_follows_its_victim() -> None:
    facts = causes.facts_of(b.underrequested_hub(b.T0))
    assert facts is not None
    assert facts.condition and not facts.primary and not facts.root
    assert facts.victims == {b.HUB}


def test_invalid_input_findings_are_not_about_the_cluster() -> None:
    found = b.episode(
        "invalid-input", "invalid-input:node-not-ready", obj=b.CLUSTER_REF, first=b.T0
    )
    assert causes.facts_of(found) is None


def test_a_memory_eviction_on_the_hogs_node_is_explained_best_by_the_hog() -> None:
    hog, evicted = causes.facts_of(b.hog(b.T0)), causes.facts_of(b.evicted(b.T0))
    assert hog is not None and evicted is not None
    assert causes.root_score(evicted, hog) == 3
    other_pool = causes.facts_of(b.not_ready(b.T0, ["batch-1"])[0])
    assert other_pool is not None
    assert causes.root_score(other_pool, hog) == 0


def test_pods_pending_after_their_eviction_follow_the_eviction() -> None:
    evicted = causes.facts_of(b.evicted(b.T0))
    pending = causes.facts_of(
        b.episode(
            "unschedulable-pods",
            "unschedulable:taint:node.kubernetes.io/memory-pressure@prod/Deployment/hub",
            obj=b.deployment("prod", "hub"),
            first=b.T0,
        )
    )
    assert evicted is not None and pending is not None
    assert causes.follow_score(pending, evicted) == 3


@pytest.mark.parametrize(
    ("key", "roles", "label"),
    [
        ("prod/Deployment/hub", {"prod/Deployment/hub": "jupyterhub"}, "JupyterHub hub"),
        (b.PROMETHEUS, {}, "Prometheus"),
        ("support/Deployment/support-ingress-nginx-controller",
         {"support/Deployment/support-ingress-nginx-controller": "ingress-nginx"}, "ingress-nginx"),
        ("prod/Deployment/dask-worker", {}, "Dask worker"),
        ("prod/Deployment/billing", {}, "billing"),
    ],
)  # fmt: skip
def test_workload_labels_are_plain_names(key: str, roles: dict[str, str], label: str) -> None:
    assert causes.workload_label(key, roles) == label


def test_pool_labels() -> None:
    assert causes.pool_label("core-pool") == "core pool"
    assert causes.pool_label("dask-worker") == "dask-worker pool"
