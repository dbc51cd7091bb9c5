"""The bodies: Alertmanager's webhook payload (version 4), Slack's text and blocks, and
kubemedic's own JSON."""

from __future__ import annotations

import re

import pytest

from kubemedic.notify import formats
from kubemedic.notify.policy import Change, Message, Status
from tests.notify.builders import CLUSTER, T0, minutes, subject

ALERTMANAGER_KEYS = {
    "version",
    "groupKey",
    "truncatedAlerts",
    "status",
    "receiver",
    "groupLabels",
    "commonLabels",
    "commonAnnotations",
    "externalURL",
    "alerts",
}
ALERT_KEYS = {
    "status",
    "labels",
    "annotations",
    "startsAt",
    "endsAt",
    "generatorURL",
    "fingerprint",
}


def _firing() -> Message:
    told = subject(labels={"node": "core-1"}, details=("core-1 NotReady", "hub evicted"))
    return Message(told, Status.FIRING, Change.NEW, "incident began")


def _resolved() -> Message:
    told = subject(ended=T0 + minutes(12))
    return Message(told, Status.RESOLVED, Change.RESOLVE, "incident ended")


def test_a_firing_alertmanager_payload_has_every_field_alertmanager_sends() -> None:
    body = formats.alertmanager(_firing(), receiver="oncall", external_url="http://km:8080")
    assert set(body) == ALERTMANAGER_KEYS
    assert (body["version"], body["status"], body["receiver"], body["truncatedAlerts"]) == (
        "4",
        "firing",
        "oncall",
        0,
    )
    assert body["externalURL"] == "http://km:8080"
    (alert,) = body["alerts"]
    assert set(alert) == ALERT_KEYS
    assert alert["status"] == "firing"
    assert alert["startsAt"] == "2027-01-20T09:00:00Z"
    assert alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert re.fullmatch(r"[0-9a-f]{16}", alert["fingerprint"])
    labels = alert["labels"]
    assert labels["alertname"] == "KubemedicIncident"
    assert (labels["cluster"], labels["severity"], labels["node"]) == (
        CLUSTER,
        "critical",
        "core-1",
    )
    assert all(isinstance(v, str) for v in labels.values())
    assert alert["annotations"]["summary"] == _firing().subject.title
    assert "hub evicted" in alert["annotations"]["description"]
    assert body["commonLabels"] == labels
    assert body["groupLabels"] == {"cluster": CLUSTER, "group": _firing().subject.key}
    assert body["groupKey"] == (f'{{}}:{{cluster="{CLUSTER}", group="{_firing().subject.key}"}}')


def test_a_resolved_alertmanager_payload_carries_the_end_and_the_same_fingerprint() -> None:
    firing = formats.alertmanager(_firing(), receiver="oncall")
    told = _firing().subject
    resolved = formats.alertmanager(
        Message(
            subject(labels={"node": "core-1"}, ended=T0 + minutes(12)),
            Status.RESOLVED,
            Change.RESOLVE,
            "incident ended",
        ),
        receiver="oncall",
    )
    assert resolved["status"] == resolved["alerts"][0]["status"] == "resolved"
    assert resolved["alerts"][0]["endsAt"] == "2027-01-20T09:12:00Z"
    assert resolved["alerts"][0]["fingerprint"] == firing["alerts"][0]["fingerprint"]
    assert resolved["groupKey"] == firing["groupKey"]
    assert told.key == resolved["groupLabels"]["group"]


def test_slack_gets_a_fallback_text_and_blocks_within_slack_s_limits() -> None:
    body = formats.slack(_firing())
    assert set(body) == {"text", "blocks"}
    assert body["text"].startswith("[FIRING] hub evicted under memory pressure")
    header, summary, facts, details, context = body["blocks"]
    assert header["type"] == "header" and header["text"]["type"] == "plain_text"
    assert len(header["text"]["text"]) <= 150
    assert summary["type"] == "section" and summary["text"]["type"] == "mrkdwn"
    assert {"type": "mrkdwn", "text": f"*Cluster:* {CLUSTER}"} in facts["fields"]
    assert "• core-1 NotReady" in details["text"]["text"]
    assert context["type"] == "context"
    assert formats.slack(_resolved())["text"].startswith("[RESOLVED] ")


def test_slack_text_is_escaped_and_long_lists_are_cut() -> None:
    told = subject(title="x" * 400, details=tuple(f"<line {i}> & more" for i in range(30)))
    body = formats.slack(Message(told, Status.FIRING, Change.UPDATE, "grew"))
    header, _, _, details, _ = body["blocks"]
    assert len(header["text"]["text"]) == 150
    assert body["text"].startswith("[UPDATE] ")
    assert "&lt;line 0&gt; &amp; more" in details["text"]["text"]
    assert "… and 20 more" in details["text"]["text"]


def test_the_generic_webhook_gets_the_subject_as_kubemedic_writes_it() -> None:
    body = formats.webhook(_resolved(), receiver="audit")
    assert body["status"] == "resolved" and body["change"] == "resolve"
    assert body["subject"]["ended"] == "2027-01-20T09:12:00Z"
    assert body["subject"]["ref"] == "inc-0123abcd"
    assert body["receiver"] == "audit"


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown format 'teams'"):
        formats.body("teams", _firing(), receiver="x")
