"""Fencing adds and removes exactly the out-of-service taint, keeping every other taint, and
survives a concurrent write (optimistic concurrency with a retry on 409)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubemedic.kube.api import Api
from kubemedic.repair.executing import tainting
from kubemedic.repair.providers import contract
from tests.repair.served import NODE, Served

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
OUT_OF_SERVICE = {
    "key": "node.kubernetes.io/out-of-service",
    "value": "nodeshutdown",
    "effect": "NoExecute",
    "timeAdded": "2026-12-02T10:00:00Z",
}


def taints(served: Served) -> list[dict[str, Any]]:
    return list(served.node()["spec"].get("taints") or ())


def test_fence_adds_the_exact_taint_and_unfence_removes_only_it(served: Served) -> None:
    before = taints(served)

    added = served.run(lambda api: tainting.fence(api, NODE, now=NOW))
    again = served.run(lambda api: tainting.fence(api, NODE, now=NOW))

    assert added and not again
    assert taints(served) == [*before, OUT_OF_SERVICE]
    assert tainting.has_taint(served.node())
    owned = {m["manager"] for m in served.node()["metadata"]["managedFields"]}
    assert contract.FIELD_MANAGER in owned

    removed = served.run(lambda api: tainting.unfence(api, NODE))
    not_there = served.run(lambda api: tainting.unfence(api, NODE))

    assert removed and not not_there
    assert taints(served) == before


def test_fence_reads_again_after_a_concurrent_write_and_keeps_its_taint(served: Served) -> None:
    """The node lifecycle controller adds its unreachable taint between our read and our write:
    the write is refused (409), read again, and both taints end up on the node."""
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    reads = 0

    async def fence_racing(api: Api) -> dict[str, Any] | None:
        def change(current: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal reads
            reads += 1
            if reads == 1:
                node = served.node()
                status, body, _ = served.emulator.request(
                    "PUT",
                    f"/api/v1/nodes/{NODE}",
                    {**node, "spec": {**node["spec"], "taints": [*taints(served), unreachable]}},
                )
                assert status == 200, body
            kept = list((current.get("spec") or {}).get("taints") or ())
            return {"spec": {"taints": [*kept, OUT_OF_SERVICE]}}

        return await contract.patch_node_list(api, NODE, change)

    served.run(fence_racing)

    assert reads == 2
    keys = [t["key"] for t in taints(served)]
    assert "node.kubernetes.io/unreachable" in keys
    assert keys[-1] == "node.kubernetes.io/out-of-service"
