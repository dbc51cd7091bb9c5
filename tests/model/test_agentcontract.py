"""The agent's rule for a request (docs/repair.md), as pure functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubemedic.model import agentcontract as contract

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
GOOD = '{"id": "3f0c", "action": "reboot", "requestedAt": "2026-12-02T09:58:00Z", "requester": "k"}'


def judge(text: str = GOOD, **kwargs: object) -> str:
    options: dict[str, object] = {
        "owners": {contract.CONTROLLER_MANAGER},
        "answered": (),
        "actions": (),
        "now": NOW,
    }
    options.update(kwargs)
    return contract.judge(contract.parse_request(text), **options)  # type: ignore[arg-type]


def test_a_request_of_the_controller_within_the_rules_is_carried_out() -> None:
    request = contract.parse_request(GOOD)
    assert (request.id, request.action, request.requester, request.error) == (
        "3f0c",
        "reboot",
        "k",
        "",
    )
    assert judge() == ""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not json", "the request is not a JSON object"),
        ("[1]", "the request is not a JSON object"),
        ('{"action": "reboot", "requestedAt": "2026-12-02T09:58:00Z"}', "the request has no id"),
        ('{"id": "a", "action": "format-disk", "requestedAt": "2026-12-02T09:58:00Z"}',
         "unknown action 'format-disk' (known: restart-kubelet, restart-runtime, reboot)"),
        ('{"id": "a", "action": "reboot"}', "the request has no valid requestedAt"),
    ],
)  # fmt: skip
def test_malformed_requests_are_refused_naming_the_fault(text: str, reason: str) -> None:
    assert judge(text) == reason


def test_owner_id_age_and_rate_are_checked() -> None:
    assert judge(owners={"kubectl-annotate"}).startswith("not from kubemedic-repair")
    both = {"kubectl-annotate", contract.CONTROLLER_MANAGER}
    assert judge(owners=both).startswith("not from kubemedic-repair")
    assert judge(answered={"3f0c"}).startswith("repeated id 3f0c")
    assert judge(now=NOW + timedelta(minutes=3)) == ""
    assert judge(now=NOW + timedelta(minutes=3, seconds=1)).startswith("too old")
    recent = [NOW - timedelta(minutes=m) for m in (5, 20, 59)]
    assert judge(actions=recent).startswith("rate-limited: 3 actions")
    assert judge(actions=[NOW - timedelta(minutes=61), *recent[:2]]) == ""


def test_owners_of_an_annotation_are_read_from_managed_fields() -> None:
    node = {
        "metadata": {
            "managedFields": [
                {"manager": "kubelet", "fieldsV1": {"f:metadata": {"f:labels": {}}}},
                {
                    "manager": "kubemedic-repair",
                    "fieldsV1": {
                        "f:metadata": {"f:annotations": {f"f:{contract.REQUEST_ANNOTATION}": {}}}
                    },
                },
            ]
        }
    }
    assert contract.annotation_owners(node, contract.REQUEST_ANNOTATION) == {"kubemedic-repair"}
    assert contract.annotation_owners(node, contract.ACK_ANNOTATION) == set()
