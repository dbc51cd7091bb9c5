"""An incident in words: title, summary, tags, symptoms, timeline (pure).

Titles say what happened to whom, then why, as a postmortem's would: "JupyterHub hub evicted:
memory overcommit on core pool, Prometheus beside it". The summary reuses the checks' own
messages (each one plain sentence with the numbers) in the order things happened. The timeline
has one line per finding episode (a check's episodes of one cause collapse into one line) and
one line per run of signals of one kind about one subject (a workload, a node; all nodes for
the nodes' own OOM reports), ``SIGNAL_RUN_GAP`` apart at most.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kubemedic.incidents import causes
from kubemedic.incidents.causes import pool_label, workload_label
from kubemedic.incidents.members import Draft, Member
from kubemedic.incidents.model import IncidentKind, Signal, SignalKind, TimelineEntry

__all__ = [
    "SIGNAL_RUN_GAP",
    "Described",
    "critical_workloads",
    "describe",
    "duration",
    "harmed_workloads",
    "node_pool_phrase",
    "oom_containers",
    "signal_noun",
    "timeline",
    "utc",
]

SIGNAL_RUN_GAP = timedelta(minutes=10)
_SAME_CHECK_LINES = 3
"""More episodes than this of one check and cause become one timeline line."""


def utc(moment: datetime, *, date: bool = True) -> str:
    """``2023-02-01 20:05:12 UTC`` (or ``20:05:12`` without the date)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if date else moment.strftime("%H:%M:%S")


def duration(seconds: float) -> str:
    """``45s``, ``3m52s``, ``26m``, ``1h 05m``, ``3d 4h``."""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    minutes, rest = divmod(total, 60)
    if minutes < 10:
        return f"{minutes}m{rest:02d}s" if rest else f"{minutes}m"
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def node_pool_phrase(pool: str) -> str:
    """``core node pool`` for ``core-pool``: how a postmortem says what incidents share."""
    base = pool[: -len("-pool")] if pool.endswith("-pool") else pool
    return f"{base} node pool"


def _and(items: Sequence[str], *, most: int = 3) -> str:
    listed = list(dict.fromkeys(items))
    if len(listed) > most:
        listed = [*listed[:most], f"{len(listed) - most} more"]
    if len(listed) <= 1:
        return "".join(listed)
    return ", ".join(listed[:-1]) + " and " + listed[-1]


@dataclass(frozen=True, slots=True)
class Described:
    kind: IncidentKind
    title: str
    summary: str
    tags: tuple[str, ...]
    symptoms: tuple[str, ...]
    pools: tuple[str, ...]
    nodes: tuple[str, ...]
    workloads: tuple[str, ...]
    culprits: tuple[str, ...]
    harmed: tuple[str, ...]


def signal_noun(kind: SignalKind, count: int) -> str:
    """``10 evictions``, ``1 OOM kill``..."""
    one, many = _NOUNS[kind]
    return f"{count} {one if count == 1 else many}"


_SIGNAL_SYMPTOMS = {
    SignalKind.EVICTION: "pod eviction",
    SignalKind.OOM_KILL: "OOM kill",
    SignalKind.POD_PENDING: "pod pending",
    SignalKind.FAILED_POD: "failed pod storm",
    SignalKind.NODE_NOT_READY: "node not ready",
    SignalKind.NODE_OOM: "node OOM",
    SignalKind.NODE_PRESSURE: "node pressure",
}


def describe(draft: Draft) -> Described:
    facts = list(draft.facts())
    symptoms = [m.facts.symptom for m in draft.symptoms]
    symptoms += [_SIGNAL_SYMPTOMS[s.kind] for s in draft.signals if s.kind in _SIGNAL_SYMPTOMS]
    kind = IncidentKind.INCIDENT if symptoms else IncidentKind.RISK
    culprits = blamed(draft.cause)
    victims = sorted(set().union(*(f.victims for f in facts)) - set(culprits))
    roles = draft.roles()
    pools = sorted(set().union(*(f.pools for f in facts)))
    workloads = [*culprits, *victims]
    namespaces = sorted({w.split("/", 1)[0] for w in workloads if w.count("/") == 2})
    products = sorted({p for w in workloads if (p := _product_of(w, roles))})
    resources = sorted({f.resource for f in facts if f.resource in ("memory", "cpu")})
    tags = [draft.family, *resources, *(f"pool:{p}" for p in pools)]
    tags += [*(f"ns:{n}" for n in namespaces), *products]
    nodes = set().union(*(f.nodes for f in facts)) | {s.node for s in draft.signals if s.node}
    return Described(
        kind=kind,
        title=_title(draft, kind=kind, roles=roles),
        summary=_summary(draft, kind=kind, roles=roles, workloads=workloads),
        tags=tuple(dict.fromkeys(tags)),
        symptoms=tuple(dict.fromkeys(symptoms)),
        pools=tuple(pools),
        nodes=tuple(sorted(nodes)),
        workloads=tuple(dict.fromkeys(workloads)),
        culprits=culprits,
        harmed=tuple(harmed_workloads(draft)),
    )


def blamed(cause: str) -> tuple[str, ...]:
    """The workloads an incident cause blames (``causes.BLAMING_FAMILIES``), else none."""
    parsed = causes.parse_cause(cause)
    if parsed.family not in causes.BLAMING_FAMILIES:
        return ()
    return tuple(value for kind, value in causes.cause_anchors(parsed) if kind == "workload")


def _product_of(workload: str, roles: dict[str, str]) -> str:
    label = workload_label(workload, roles)
    name = workload.rsplit("/", 1)[-1]
    return "" if label == name else label.split(" ", 1)[0].lower()


# -- evidence lookups --------------------------------------------------------------------------


def evidence_of(member: Member, *keys: str) -> object:
    """``evidence[k1][k2]...`` of a member, None when a step is missing."""
    value: object = member.episode.evidence
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def latest(members: Iterable[Member], *, cause: str = "") -> Member | None:
    """The member that speaks for ``members``: one whose own incident cause is ``cause`` (the
    finding that names the incident), then the most severe, then one about a workload rather
    than a single pod, then the most recently seen."""
    ordered = sorted(
        members,
        key=lambda m: (
            m.facts.incident_cause == cause,
            m.episode.severity,
            m.episode.object.kind != "Pod",
            m.last,
            m.episode.order,
        ),
    )
    return ordered[-1] if ordered else None


def oom_containers(draft: Draft) -> list[Member]:
    """The ``oom-killed`` findings about containers (not about nodes' own OOM kills)."""
    return [m for m in draft.by_check("oom-killed") if m.facts.cause.subject != "node"]


def victims_of(draft: Draft, check: str, kind: SignalKind) -> list[str]:
    """Workloads harmed by one kind of symptom, critical ones (a role in evidence) first."""
    found = {v for m in draft.by_check(check) for v in m.facts.victims}
    found |= {s.workload for s in draft.signals if s.kind is kind and s.workload}
    roles = draft.roles()
    return sorted(found, key=lambda w: (w not in roles, w))


def labels(workloads: Sequence[str], roles: dict[str, str], *, most: int = 2) -> str:
    return _and([workload_label(w, roles) for w in workloads], most=most)


# -- title -------------------------------------------------------------------------------------


def _happened(draft: Draft, roles: dict[str, str]) -> str:
    """What happened, to whom: the most telling symptom first."""
    evicted = victims_of(draft, "evicted", SignalKind.EVICTION)
    if evicted:
        return f"{labels(evicted, roles)} evicted"
    storm = draft.by_check("failed-pod-storm")
    if storm or any(s.kind is SignalKind.FAILED_POD for s in draft.signals):
        who = victims_of(draft, "failed-pod-storm", SignalKind.FAILED_POD)
        return f"Failed-pod storm of {labels(who, roles)}" if who else "Failed-pod storm"
    not_ready = draft.by_check("node-not-ready")
    if not_ready:
        mass = [m for m in not_ready if m.facts.cause.subject == "mass"]
        if mass:
            count, total = evidence_of(mass[-1], "notReady"), evidence_of(mass[-1], "nodesTotal")
            return f"{count} of {total} nodes NotReady"
        nodes = sorted({n for m in not_ready for n in m.facts.nodes})
        return f"{_and(nodes)} NotReady" if len(nodes) <= 3 else f"{len(nodes)} nodes NotReady"
    oom = victims_of(draft, "oom-killed", SignalKind.OOM_KILL)
    if oom:
        return f"{labels(oom, roles)} OOM-killed"
    if draft.by_check("oom-killed"):
        return "Node-wide OOM kills"
    pending = victims_of(draft, "unschedulable-pods", SignalKind.POD_PENDING)
    if pending:
        return f"{labels(pending, roles)} pending"
    probes = victims_of(draft, "probe-restarts", SignalKind.EVENT)
    if draft.by_check("probe-restarts"):
        return f"{labels(probes, roles)} restarted by its liveness probe"
    burst = latest(draft.by_check("node-scale-burst"))
    if burst is not None:
        added, span = evidence_of(burst, "nodesAdded"), evidence_of(burst, "spanSeconds")
        seconds = span if isinstance(span, (int, float)) else 0
        return f"{added} nodes added in {duration(seconds)}"
    pressure = sorted({s.node for s in draft.signals if s.kind is SignalKind.NODE_PRESSURE})
    if pressure:
        return f"{_and(pressure)} under memory pressure"
    if draft.symptoms:
        return draft.symptoms[0].facts.symptom.capitalize()
    return ""


def _why(draft: Draft, roles: dict[str, str], *, happened: bool) -> str:
    cause = causes.parse_cause(draft.cause)
    family = cause.family
    culprit = labels(blamed(draft.cause), roles)
    if family in ("memory-pressure", "cpu-pressure"):
        resource = "memory" if family == "memory-pressure" else "CPU"
        overcommit = draft.by_check(f"node-{resource.lower()}-overcommit")
        what = f"{resource} overcommit" if overcommit else f"{resource} pressure"
        where = pool_label(cause.scope)
        if happened:
            return f"{what} on {where}, {culprit} beside it"
        at_risk = sorted({v for m in draft.members if m.facts.primary for v in m.facts.victims})
        if at_risk:
            return f"{what} on {where}, {culprit} beside {labels(at_risk, roles)}"
        return f"{what} on {where} from {culprit}"
    if family == "eviction":
        nodes = sorted({n for m in draft.by_check("evicted") for n in m.facts.nodes})
        return f"{_and(nodes) or 'nodes'} ran out of {cause.subject} ({pool_label(cause.scope)})"
    if family == "oom":
        if cause.subject == "node":
            return f"nodes of {pool_label(cause.scope)} ran out of memory"
        container = cause.subject.rsplit("/", 1)[-1]
        member = latest(oom_containers(draft))
        limit = evidence_of(member, "memoryLimit") if member else None
        if limit:
            return f"container {container} over its {limit} memory limit"
        return f"container {container} ran out of memory (no memory limit)"
    if family == "unschedulable":
        member = latest(draft.by_check("unschedulable-pods"))
        reasons = evidence_of(member, "reasons") if member else None
        if isinstance(reasons, Mapping) and reasons:
            reason, count = max(reasons.items(), key=lambda item: (item[1], item[0]))
            total = evidence_of(member, "nodesTotal") if member else None
            return f"{count} of {total} nodes: {reason}"
        return f"the scheduler found no node ({cause.subject})"
    if family == "node-not-ready":
        if cause.subject == "mass":
            return "a shared cause is likely, repairs should pause"
        return f"{_NOT_READY.get(cause.subject, cause.subject)} on {pool_label(cause.scope)}"
    if family == "node-scale-burst":
        return f"the {pool_label(cause.scope)} scaled up at once"
    if family == "pinned-node-name":
        pinned = latest(draft.by_check("pinned-node-name"))
        node = evidence_of(pinned, "nodeName") if pinned else None
        edit = latest(draft.by_check("out-of-band-edit"))
        manager = evidence_of(edit, "manager") if edit else None
        by = f" by {manager}" if manager else ""
        return f"{culprit} pinned to node {node or '?'} with spec.nodeName{by}"
    if family == "failed-pod-storm":
        return f"{culprit}'s pods rejected by the kubelet at admission"
    if family == "critical-underrequested":
        who = labels(sorted(v for f in draft.facts() for v in f.victims), roles)
        return f"critical {who} requests less than it needs"
    if family == "probe-restarts":
        return f"liveness probe of container {cause.subject.rsplit('/', 1)[-1]} failing"
    if family == "out-of-band-edit":
        return f"{culprit} edited outside GitOps"
    first = draft.members[0].episode
    return first.message if len(first.message) <= 100 else first.message[:99] + "…"


_NOT_READY = {
    "kubelet-stopped-posting": "kubelet stopped posting status",
    "runtime-not-ready": "container runtime not ready",
    "pleg-unhealthy": "PLEG not healthy",
    "network-not-ready": "CNI network not ready",
    "shutting-down": "node shutting down",
    "capacity-misconfigured": "node capacity misconfigured",
    "heartbeat-stale": "node heartbeat stale",
}


def _title(draft: Draft, *, kind: IncidentKind, roles: dict[str, str]) -> str:
    happened = _happened(draft, roles) if kind is IncidentKind.INCIDENT else ""
    why = _why(draft, roles, happened=bool(happened))
    if not happened:
        return f"Risk: {why}"
    if why.lower() == happened.lower():
        return happened
    return f"{happened}: {why}"


# -- summary -----------------------------------------------------------------------------------


def _summary(
    draft: Draft, *, kind: IncidentKind, roles: dict[str, str], workloads: Sequence[str]
) -> str:
    start, end = draft.span()
    lasted = duration((end - start).total_seconds())
    sentences: list[str] = []
    if kind is IncidentKind.RISK:
        sentences.append(
            f"From {utc(start)} to {utc(end)} ({lasted}) kubemedic's scans found a standing "
            "risk; nothing it archived shows harm from it yet."
        )
        sentences.extend(_messages(draft.conditions, most=3, cause=draft.cause))
        return " ".join(sentences)
    sentences.append(f"From {utc(start)} to {utc(end)} ({lasted}):")
    sentences.extend(_messages(draft.symptoms, most=5, cause=draft.cause))
    counted = _signal_counts(draft.signals)
    if counted:
        sentences.append(f"The archive kept {counted} for it.")
    harmed = harmed_workloads(draft)
    if harmed:
        named = _and([f"{workload_label(w, roles)} ({w})" for w in harmed], most=4)
        sentences.append(f"Workloads affected: {named}.")
    at_risk = [w for w in critical_workloads(draft) if w not in harmed]
    if at_risk:
        named = _and([f"{workload_label(w, roles)} ({w})" for w in at_risk], most=4)
        sentences.append(f"Also at risk: {named}.")
    return " ".join(sentences)


def harmed_workloads(draft: Draft) -> list[str]:
    """Workloads a symptom (finding or signal) harmed, the incident's culprits left out."""
    found = {v for m in draft.symptoms for v in m.facts.victims}
    found |= {s.workload for s in draft.signals if s.workload and s.kind in _SIGNAL_SYMPTOMS}
    return sorted(found - set(blamed(draft.cause)))


def critical_workloads(draft: Draft) -> list[str]:
    """Critical workloads named by the evidence (a role: hub, proxy, ingress...), harmed or
    threatened, the incident's culprits left out."""
    roles = draft.roles()
    found = {v for f in draft.facts() for v in f.victims if v in roles}
    return sorted(found - set(blamed(draft.cause)))


def _messages(members: Sequence[Member], *, most: int, cause: str) -> list[str]:
    """One message per check (its most severe, latest episode), in order of first sight."""
    by_check: dict[str, list[Member]] = defaultdict(list)
    for member in members:
        by_check[member.facts.check].append(member)
    first = {check: min(m.first for m in group) for check, group in by_check.items()}
    ordered = sorted(by_check, key=lambda check: (first[check], check))
    chosen = [latest(by_check[check], cause=cause) for check in ordered[:most]]
    return [member.episode.message for member in chosen if member is not None]


_NOUNS = {
    SignalKind.EVICTION: ("eviction", "evictions"),
    SignalKind.OOM_KILL: ("OOM kill", "OOM kills"),
    SignalKind.NODE_OOM: ("node OOM report", "node OOM reports"),
    SignalKind.POD_PENDING: ("FailedScheduling event", "FailedScheduling events"),
    SignalKind.FAILED_POD: ("admission rejection", "admission rejections"),
    SignalKind.NODE_NOT_READY: ("NotReady transition", "NotReady transitions"),
    SignalKind.NODE_PRESSURE: ("node pressure transition", "node pressure transitions"),
    SignalKind.EVENT: ("other Warning event", "other Warning events"),
}


def _signal_counts(signals: Sequence[Signal]) -> str:
    counts: dict[SignalKind, int] = defaultdict(int)
    for signal in signals:
        counts[signal.kind] += signal.count
    return _and(
        [signal_noun(kind, counts[kind]) for kind in SignalKind if counts.get(kind)], most=7
    )


# -- timeline ----------------------------------------------------------------------------------


def timeline(draft: Draft) -> tuple[TimelineEntry, ...]:
    """Finding episodes and runs of signals, in time order (see the module docstring)."""
    entries: list[TimelineEntry] = []
    by_check: dict[tuple[str, str, bool], list[Member]] = defaultdict(list)
    for member in draft.members:
        cause = member.facts.cause
        by_check[(member.facts.check, cause.family, cause.subject == "node")].append(member)
    for (check, _, _), members in by_check.items():
        members.sort(key=lambda m: m.episode.order)
        kind = "condition" if members[0].facts.condition else "symptom"
        if len(members) > _SAME_CHECK_LINES:
            sample = latest(members, cause=draft.cause) or members[0]
            text = f"{len(members)} {check} findings, e.g.: {sample.episode.message}"
            entries.append(
                TimelineEntry(
                    at=min(m.first for m in members),
                    until=max(m.last for m in members),
                    kind=kind,
                    text=text,
                    source=check,
                    count=len(members),
                )
            )
            continue
        entries.extend(
            TimelineEntry(at=m.first, until=m.last, kind=kind, text=m.episode.message, source=check)
            for m in members
        )
    entries.extend(_signal_runs(draft.signals))
    entries.sort(key=lambda e: (e.at, e.kind != "condition", e.source, e.text))
    return tuple(entries)


def _subject(signal: Signal) -> str:
    if signal.kind is SignalKind.NODE_OOM:
        return "nodes"
    if signal.kind in (SignalKind.NODE_NOT_READY, SignalKind.NODE_PRESSURE):
        return f"node {signal.node}"
    if signal.kind is SignalKind.EVENT:
        reason = str(signal.detail.get("reason") or "")
        return f"{reason} {signal.workload or signal.object_name}"
    return signal.workload or f"{signal.object_kind} {signal.namespace}/{signal.object_name}"


def _signal_runs(signals: Sequence[Signal]) -> list[TimelineEntry]:
    by_subject: dict[tuple[SignalKind, str], list[Signal]] = defaultdict(list)
    for signal in signals:
        by_subject[(signal.kind, _subject(signal))].append(signal)
    entries: list[TimelineEntry] = []
    for (kind, subject), group in by_subject.items():
        run: list[Signal] = []
        for signal in sorted(group, key=lambda s: s.order):
            if run and signal.at > max(s.last for s in run) + SIGNAL_RUN_GAP:
                entries.append(_run_entry(kind, subject, run))
                run = []
            run.append(signal)
        if run:
            entries.append(_run_entry(kind, subject, run))
    return entries


def _run_entry(kind: SignalKind, subject: str, run: list[Signal]) -> TimelineEntry:
    count = sum(signal.count for signal in run)
    last = run[-1]
    if len(run) == 1 and count == 1:
        text = last.summary
    else:
        pods = {s.pod for s in run if s.pod}
        nodes = {s.node for s in run if s.node}
        extent = []
        if len(pods) > 1:
            extent.append(f"{len(pods)} pods")
        if len(nodes) > 1:
            extent.append(f"{len(nodes)} nodes")
        spread = f" ({', '.join(extent)})" if extent else ""
        if kind is SignalKind.EVENT:
            reason, _, what = subject.partition(" ")
            text = f"{reason} x{count} for {what}{spread}; latest: {last.summary}"
        else:
            text = f"{signal_noun(kind, count)} for {subject}{spread}; latest: {last.summary}"
    return TimelineEntry(
        at=run[0].at,
        until=max(s.last for s in run),
        kind=kind.value,
        text=text,
        source=last.source,
        count=count,
    )
