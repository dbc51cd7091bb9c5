"""The bodies each kind of receiver is sent (pure: a message in, a JSON value out).

* ``alertmanager``: the JSON Alertmanager itself POSTs to its ``webhook_config`` receivers
  (``version`` "4", ``groupKey``, ``truncatedAlerts``, ``status``, ``receiver``,
  ``groupLabels``, ``commonLabels``, ``commonAnnotations``, ``externalURL``, and ``alerts``
  each with ``status``, ``labels``, ``annotations``, ``startsAt``, ``endsAt``,
  ``generatorURL`` and ``fingerprint``). One group per subject, one alert per group; a firing
  alert's ``endsAt`` is Go's zero time ``0001-01-01T00:00:00Z``, as Alertmanager writes it.
  Anything that reads Alertmanager's webhooks (alerta, PagerDuty's and Opsgenie's bridges, a
  team's own receiver) reads these.
* ``slack``: a Slack incoming webhook's ``text`` (the fallback shown in notifications) and
  ``blocks`` (a header, the summary, the facts, the detail lines), ``mrkdwn`` escaped as Slack
  asks (``&``, ``<``, ``>``).
* ``webhook``: kubemedic's own notification: the status, what changed and why, and the subject
  as ``Subject.to_json`` writes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from kubemedic.notify.policy import Change, Message, Status, Subject, SubjectKind, rfc3339

__all__ = ["FORMATS", "ZERO_TIME", "alertmanager", "body", "fingerprint", "slack", "webhook"]

FORMATS = ("alertmanager", "slack", "webhook")

ZERO_TIME = "0001-01-01T00:00:00Z"
"""Go's zero ``time.Time`` as Alertmanager marshals an alert's unknown ``endsAt``."""

ALERT_NAMES: Mapping[SubjectKind, str] = {
    SubjectKind.INCIDENT: "KubemedicIncident",
    SubjectKind.QUARANTINE: "KubemedicNodeQuarantined",
    SubjectKind.HOLD: "KubemedicRepairHeld",
    SubjectKind.STORM: "KubemedicPodStorm",
}

_SLACK_DETAILS = 10
_SLACK_TEXT = 2900  # a section's text is at most 3000 characters
_SLACK_HEADER = 150  # a header's plain text is at most 150 characters


def _rfc3339(subject: Subject, *, end: bool = False) -> str:
    moment = subject.ended if end else subject.started
    return ZERO_TIME if moment is None else rfc3339(moment)


def labels(subject: Subject) -> dict[str, str]:
    """The alert's identifying labels: the name, the group, the cluster, the severity and the
    subject's own (``node``, ``owner``...)."""
    found = {
        **{str(k): str(v) for k, v in subject.labels.items()},
        "alertname": ALERT_NAMES[subject.kind],
        "cluster": subject.cluster,
        "group": subject.key,
        "severity": subject.severity,
    }
    return dict(sorted(found.items()))


def fingerprint(label_set: Mapping[str, str]) -> str:
    """16 hex digits identifying a label set (Alertmanager's is a 64-bit hash of the labels;
    this is the first 64 bits of SHA-256 over the sorted pairs: stable across runs)."""
    text = "\xff".join(f"{k}\xfe{v}" for k, v in sorted(label_set.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _group_key(subject: Subject) -> str:
    return f'{{}}:{{cluster="{_quoted(subject.cluster)}", group="{_quoted(subject.key)}"}}'


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def alertmanager(
    message: Message, *, receiver: str, external_url: str = "", generator_url: str = ""
) -> dict[str, Any]:
    """The Alertmanager webhook payload (version 4) of ``message``."""
    subject = message.subject
    label_set = labels(subject)
    description = "\n".join([subject.summary, *subject.details]).strip()
    annotations = {
        "summary": subject.title,
        "description": description,
        "kubemedic_change": message.change.value,
        "kubemedic_reason": message.reason,
        **({"kubemedic_ref": subject.ref} if subject.ref else {}),
    }
    alert = {
        "status": message.status.value,
        "labels": label_set,
        "annotations": annotations,
        "startsAt": _rfc3339(subject),
        "endsAt": _rfc3339(subject, end=True) if message.status is Status.RESOLVED else ZERO_TIME,
        "generatorURL": generator_url,
        "fingerprint": fingerprint(label_set),
    }
    group_labels = {"cluster": subject.cluster, "group": subject.key}
    return {
        "version": "4",
        "groupKey": _group_key(subject),
        "truncatedAlerts": 0,
        "status": message.status.value,
        "receiver": receiver,
        "groupLabels": group_labels,
        "commonLabels": label_set,
        "commonAnnotations": annotations,
        "externalURL": external_url,
        "alerts": [alert],
    }


def _mrkdwn(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack(message: Message) -> dict[str, Any]:
    """A Slack incoming webhook's body: ``text`` and ``blocks``."""
    subject = message.subject
    mark = {Change.NEW: "FIRING", Change.UPDATE: "UPDATE", Change.RESOLVE: "RESOLVED"}[
        message.change
    ]
    head = f"[{mark}] {subject.title}"
    text = f"{head} ({subject.cluster}, {subject.severity}): {subject.summary}"
    facts = [
        f"*Cluster:* {_mrkdwn(subject.cluster)}",
        f"*Severity:* {_mrkdwn(subject.severity)}",
        f"*Started:* {_rfc3339(subject)}",
    ]
    if message.status is Status.RESOLVED:
        facts.append(f"*Ended:* {_rfc3339(subject, end=True)}")
    if subject.ref:
        facts.append(f"*Ref:* `{_mrkdwn(subject.ref)}`")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(head, _SLACK_HEADER)}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": _cut(_mrkdwn(subject.summary), _SLACK_TEXT)},
        },
        {"type": "section", "fields": [{"type": "mrkdwn", "text": fact} for fact in facts]},
    ]
    details = subject.details[:_SLACK_DETAILS]
    if details:
        more = len(subject.details) - len(details)
        lines = [f"• {_mrkdwn(line)}" for line in details]
        if more:
            lines.append(f"… and {more} more")
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": _cut("\n".join(lines), _SLACK_TEXT)},
            }
        )
    blocks.append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": _mrkdwn(f"kubemedic: {message.reason}")}],
        }
    )
    return {"text": text, "blocks": blocks}


def webhook(message: Message, *, receiver: str) -> dict[str, Any]:
    """kubemedic's own notification."""
    return {
        "version": "1",
        "receiver": receiver,
        "status": message.status.value,
        "change": message.change.value,
        "reason": message.reason,
        "subject": message.subject.to_json(),
    }


def body(fmt: str, message: Message, *, receiver: str, external_url: str = "") -> dict[str, Any]:
    """The body of ``message`` in format ``fmt`` (one of ``FORMATS``)."""
    if fmt == "alertmanager":
        return alertmanager(message, receiver=receiver, external_url=external_url)
    if fmt == "slack":
        return slack(message)
    if fmt == "webhook":
        return webhook(message, receiver=receiver)
    raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
