"""Cordon, uncordon, quarantine and release write only their own fields, as kubemedic-repair."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemedic.kube.api import Api
from kubemedic.repair.executing import cordoning
from kubemedic.repair.providers import contract
from tests.repair.served import NODE, Served

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def managers(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["manager"]: m["fieldsV1"] for m in node["metadata"].get("managedFields") or ()}


def test_cordon_sets_unschedulable_and_the_repair_mark_as_kubemedic_repair(served: Served) -> None:
    before = served.node()
    mark = cordoning.RepairMark("r-1", "reboot", "cordon", NOW)

    done = served.run(lambda api: cordoning.cordon(api, NODE, mark=mark))

    after = served.node()
    assert done.changed
    assert after["spec"]["unschedulable"] is True
    assert json.loads(after["metadata"]["annotations"][contract.REPAIR_ANNOTATION]) == {
        "id": "r-1", "step": "reboot", "phase": "cordon", "since": "2026-12-02T10:00:00Z",
    }  # fmt: skip
    # Everything else is as it was: labels, taints, provider ID, status.
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert after["spec"]["taints"] == before["spec"]["taints"]
    assert after["spec"]["providerID"] == before["spec"]["providerID"]
    assert after["status"] == before["status"]
    owned = managers(after)["kubemedic-repair"]
    assert owned["f:spec"] == {"f:unschedulable": {}}
    assert "f:kubemedic.io/repair" in owned["f:metadata"]["f:annotations"]
    assert "kubelet" in managers(after)


def test_cordon_of_a_cordoned_node_says_it_was_not_its_own(served: Served) -> None:
    served.run(lambda api: cordoning.cordon(api, NODE))

    again = served.run(lambda api: cordoning.cordon(api, NODE))

    assert not again.changed


def test_uncordon_removes_the_cordon_and_the_mark_and_keeps_the_rest(served: Served) -> None:
    before = served.node()
    mark = cordoning.RepairMark("r-1", "reboot", "cordon", NOW)
    served.run(lambda api: cordoning.cordon(api, NODE, mark=mark))

    served.run(lambda api: cordoning.uncordon(api, NODE))

    after = served.node()
    assert not after["spec"].get("unschedulable")
    assert contract.REPAIR_ANNOTATION not in (after["metadata"].get("annotations") or {})
    assert after["spec"]["taints"] == before["spec"]["taints"]
    assert after["metadata"]["labels"] == before["metadata"]["labels"]


def test_quarantine_holds_until_release(served: Served) -> None:
    served.run(lambda api: cordoning.quarantine(api, NODE, reason="4 repairs in 24h (limit 3)"))
    quarantined = served.node()
    assert quarantined["spec"]["unschedulable"] is True
    assert quarantined["metadata"]["labels"][contract.QUARANTINED_LABEL] == "true"
    assert (
        quarantined["metadata"]["annotations"][contract.QUARANTINE_REASON_ANNOTATION]
        == "4 repairs in 24h (limit 3)"
    )
    assert "f:kubemedic.io/quarantined" in str(managers(quarantined)["kubemedic-repair"])

    with pytest.raises(cordoning.ExecutingError, match="kubemedic nodes release worker-1"):
        served.run(lambda api: cordoning.uncordon(api, NODE))
    assert served.node()["spec"]["unschedulable"] is True

    async def release(api: Api) -> dict[str, Any]:
        return await cordoning.release(api, NODE)

    served.run(release)
    released = served.node()
    assert not released["spec"].get("unschedulable")
    assert contract.QUARANTINED_LABEL not in released["metadata"]["labels"]
    assert contract.QUARANTINE_REASON_ANNOTATION not in (
        released["metadata"].get("annotations") or {}
    )
    assert released["metadata"]["labels"]["pool"] == "workers"
