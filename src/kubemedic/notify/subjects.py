"""What there is to tell, read from the archive: incidents, quarantined and held nodes, storms.

* **Incidents** are formed over the archive as ``kubemedic incidents`` forms them
  (``incidents.archive.incidents``, findings overlapping the last ``lookback``). An incident goes
  on while its last finding or signal is less than ``resolveAfter`` old: a finding still there is
  seen again at every scan, so an incident whose findings are gone and whose events stopped has
  ended ``resolveAfter`` later. Risks (standing conditions only, nothing happened yet) are sent
  with ``risks: true`` only; incidents below ``minSeverity`` are not sent. Its size is its
  findings and signals: a message is sent again (an update) when it grows.
* **Quarantines** and **holds** are node repair's node states (``node_states``: ``quarantined``
  until a person releases the node; ``held`` while a brake, such as a correlated failure across
  a zone, holds its repair back). One group per node; it resolves when the node leaves the
  state.
* **Storms** are the storm breaker's storms in progress (``breaker_state``), each with the
  breaker's decisions about its owner since it started (acted, dry run, alerted, held): one
  group per owner, growing with each decision, resolved when the breaker ends the storm.

The store layer hands over plain dicts; nothing here imports the repair or breaker packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from kubemedic.checks.findings import Severity
from kubemedic.incidents import archive as incident_archive
from kubemedic.incidents.model import Incident, IncidentKind
from kubemedic.model.objects import parse_time
from kubemedic.notify.policy import Subject, SubjectKind
from kubemedic.notify.settings import NotifyRun
from kubemedic.store import breakers
from kubemedic.store.db import Archive

__all__ = ["LOOKBACK", "collect", "from_incident", "from_node_state", "from_storm"]

LOOKBACK = timedelta(hours=6)
"""How far back incidents are formed each round (beyond ``resolveAfter``): an incident that
ended longer ago than that and was never resolved to a receiver resolves as "no longer seen"."""

_DETAILS = 25


def collect(archive: Archive, *, cluster: str, run: NotifyRun, now: datetime) -> list[Subject]:
    """Every subject of ``cluster`` the settings ask for, as of ``now`` (cluster time)."""
    found: list[Subject] = []
    if SubjectKind.INCIDENT in run.kinds:
        since = now - run.resolve_after - LOOKBACK
        with archive.failures():
            formed = incident_archive.incidents(archive.engine, cluster=cluster, since=since)
        least = Severity.parse(run.min_severity)
        for incident in formed:
            if incident.kind is IncidentKind.RISK and not run.risks:
                continue
            if incident.severity < least:
                continue
            found.append(from_incident(incident, now=now, resolve_after=run.resolve_after))
    if run.kinds & {SubjectKind.QUARANTINE, SubjectKind.HOLD}:
        for state in archive.node_states(cluster):
            subject = from_node_state(state, cluster=cluster, now=now)
            if subject is not None and subject.kind in run.kinds:
                found.append(subject)
    if SubjectKind.STORM in run.kinds:
        with archive.transaction(write=False) as connection:
            state = breakers.load(connection, cluster) or {}
        storms = state.get("storms")
        if isinstance(storms, Mapping) and storms:
            decisions = archive.breaker_decisions(cluster, since=now.timestamp() - 86400.0)
            for key, storm in sorted(storms.items()):
                subject = from_storm(str(key), storm, decisions, cluster=cluster)
                if subject is not None:
                    found.append(subject)
    return found


def from_incident(incident: Incident, *, now: datetime, resolve_after: timedelta) -> Subject:
    """An incident as a subject: keyed by its cause, ended once quiet for ``resolve_after``."""
    cause = incident.suspected_cause
    details = [f"suspected cause: {cause.text} (confidence {cause.confidence:.0%})"]
    details += [entry.text for entry in incident.timeline]
    labels = {"incident_kind": incident.kind.value}
    if incident.pools:
        labels["pools"] = ",".join(incident.pools)
    return Subject(
        key=f"incident:{incident.cause}",
        kind=SubjectKind.INCIDENT,
        cluster=incident.cluster,
        title=incident.title,
        summary=incident.summary,
        severity=incident.severity.label,
        started=incident.start,
        ended=incident.end if now - incident.end >= resolve_after else None,
        size=len(incident.findings) + len(incident.signals),
        labels=labels,
        details=tuple(details[:_DETAILS]),
        ref=incident.id,
    )


def from_node_state(state: Mapping[str, Any], *, cluster: str, now: datetime) -> Subject | None:
    """A quarantined or held node as a subject; None for any other state."""
    node = str(state.get("node") or "")
    reason = str(state.get("reason") or "")
    since = parse_time(state.get("since")) or now
    if state.get("state") == "quarantined":
        return Subject(
            key=f"quarantine:{node}",
            kind=SubjectKind.QUARANTINE,
            cluster=cluster,
            title=f"node {node} quarantined",
            summary=(
                f"node {node} is quarantined ({reason or 'no reason recorded'}): no repair "
                "touches it until `kubemedic nodes release` clears it"
            ),
            severity="critical",
            started=since,
            labels={"node": node},
            ref=node,
        )
    if state.get("state") == "held":
        return Subject(
            key=f"hold:{node}",
            kind=SubjectKind.HOLD,
            cluster=cluster,
            title=f"repair of node {node} held",
            summary=f"the repair of node {node} is held back: {reason or 'no reason recorded'}",
            severity="warning",
            started=since,
            labels={"node": node},
            ref=node,
        )
    return None


def from_storm(
    key: str,
    storm: Any,
    decisions: list[dict[str, Any]],
    *,
    cluster: str,
) -> Subject | None:
    """A storm in progress as a subject, with the breaker's decisions about its owner since it
    started; None when the state is not one (a row of another version)."""
    if not isinstance(storm, Mapping):
        return None
    started = parse_time(storm.get("started"))
    if started is None:
        return None
    after = started.timestamp() - 1.0
    taken = [
        d
        for d in decisions
        if d.get("owner") == key and isinstance(d.get("at"), int | float) and d["at"] >= after
    ]
    lines = []
    for d in taken:
        what = str(d.get("action") or d.get("kind") or "")
        outcome = f" ({d['outcome']})" if d.get("outcome") else ""
        dry = " [dry run]" if d.get("dryRun") else ""
        lines.append(f"{what}{dry}: {d.get('message') or ''}{outcome}")
    calm = parse_time(storm.get("calmSince"))
    summary = f"pods of {key} are rejected and recreated in a loop (a Failed-pod storm)"
    if calm is not None:
        summary += f"; calm since {storm.get('calmSince')}"
    return Subject(
        key=f"storm:{key}",
        kind=SubjectKind.STORM,
        cluster=cluster,
        title=f"Failed-pod storm of {key}",
        summary=summary,
        severity="critical",
        started=started,
        size=1 + len(taken),
        labels={"owner": key},
        details=tuple(lines[-_DETAILS:]),
        ref=key,
    )
