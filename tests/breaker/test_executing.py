"""The breaker's hands against the API emulator over HTTP: the resourceVersion-guarded revert
(refused after a concurrent change), the scale subresource, pruning with uid preconditions, and
the Events on the owner."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubemedic.breaker.executing import Executor
from kubemedic.breaker.policy import BreakerAction, Decision, DecisionKind
from kubemedic.kube.api import Api
from kubemedic.model.objects import ObjectRef
from tests.repair.served import Served, serve

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OWNER = ObjectRef("Deployment", "web", "shop", "apps/v1")
PATH = "/apis/apps/v1/namespaces/shop/deployments/web"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)


def _deployment(served: Served) -> dict[str, Any]:
    served.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        path="/api/v1/namespaces",
        manager="kubectl-create",
    )
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"nodeName": "w-2", "containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    return served.create(body, path="/apis/apps/v1/namespaces/shop/deployments", manager="x")


def _revert(rv: str) -> Decision:
    return Decision(
        kind=DecisionKind.ACT,
        owner=OWNER,
        reason="KubemedicBreakerRevertOutOfBand",
        message="remove nodeName",
        key=f"revert:{rv}",
        action=BreakerAction.REVERT_OUT_OF_BAND,
        patch=(
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "remove", "path": "/spec/template/spec/nodeName"},
        ),
        resource_version=rv,
    )


def _run(served: Served, decision: Decision, **kwargs: Any) -> str:
    async def scenario(api: Api) -> str:
        hands = Executor(api=api, identity="kubemedic-0", now=lambda: T0)
        outcome = await hands.execute(decision, **kwargs)
        await hands.announce(decision, {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "namespace": "shop", "name": "web"}, outcome)  # fmt: skip
        return str(outcome)

    return served.run(scenario)


def test_the_revert_removes_the_field_under_the_kubemedic_manager(served: Served) -> None:
    rv = _deployment(served)["metadata"]["resourceVersion"]
    assert _run(served, _revert(rv)).startswith("done")
    live = served.get(PATH)
    assert "nodeName" not in live["spec"]["template"]["spec"]
    events = served.get("/api/v1/namespaces/shop/events")["items"]
    (event,) = [e for e in events if e["reason"] == "KubemedicBreakerRevertOutOfBand"]
    assert event["involvedObject"]["kind"] == "Deployment"
    assert event["reportingComponent"] == "kubemedic-breaker"


def test_a_revert_after_a_concurrent_change_is_a_conflict_and_changes_nothing(
    served: Served,
) -> None:
    rv = _deployment(served)["metadata"]["resourceVersion"]
    status, answer, _ = served.emulator.request(
        "PATCH",
        PATH + "?fieldManager=kubectl-edit",
        {"metadata": {"labels": {"touched": "yes"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 200, answer
    outcome = _run(served, _revert(rv))
    assert outcome.startswith("conflict"), outcome
    assert served.get(PATH)["spec"]["template"]["spec"]["nodeName"] == "w-2"
    events = served.get("/api/v1/namespaces/shop/events")["items"]
    assert events[0]["type"] == "Warning"


def test_scale_to_fit_goes_through_the_scale_subresource(served: Served) -> None:
    rv = _deployment(served)["metadata"]["resourceVersion"]
    decision = Decision(
        kind=DecisionKind.ACT, owner=OWNER, reason="KubemedicBreakerScaleToFit", message="fit",
        key="scale", action=BreakerAction.SCALE_TO_FIT, replicas=1, resource_version=rv,
    )  # fmt: skip
    assert _run(served, decision).startswith("done")
    assert served.get(PATH)["spec"]["replicas"] == 1


def test_prune_deletes_the_observed_pods_only(served: Served) -> None:
    _deployment(served)
    uids = {}
    for name in ("a", "b"):
        pod = served.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
             "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            path="/api/v1/namespaces/shop/pods", manager="x",
        )  # fmt: skip
        uids[name] = pod["metadata"]["uid"]
    uids["b"] = "not-the-observed-one"
    decision = Decision(
        kind=DecisionKind.ACT, owner=OWNER, reason="KubemedicBreakerPruneFailed", message="prune",
        key="prune", action=BreakerAction.PRUNE_FAILED, pods=("a", "b", "gone"),
    )  # fmt: skip
    outcome = _run(served, decision, pod_uids=uids)
    assert outcome == "done: deleted 1 pods, 1 already gone, 1 replaced meanwhile (kept)", outcome
    names = {p["metadata"]["name"] for p in served.get("/api/v1/namespaces/shop/pods")["items"]}
    assert "b" in names
