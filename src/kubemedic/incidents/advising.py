"""The suspected cause of an incident, how sure kubemedic is, and what to do next (pure).

**Confidence** combines independent lines of evidence the way independent witnesses combine: each
line ``i`` that points at the incident cause has a weight ``w_i`` (its own chance of being right),
and confidence is ``1 - prod(1 - w_i)``, capped at ``MAX_CONFIDENCE`` (0.95: a cause inferred
from the API's record is a judgement, as the incident report's author wrote of theirs). Lines:

* a condition finding stating the cause (the memory hog, the overcommitted node, the pin):
  0.4 for the first check, 0.2 for each further check stating it in its own terms;
* each symptom check tied to the cause, by the strength of the tie (``causes.root_score`` /
  ``follow_score``): 4 -> 0.3, 3 -> 0.25, 2 -> 0.15, 1 -> 0.1;
* a symptom that is its own cause, with no condition behind it, by how much the symptom says
  about why: an OOM kill at a memory limit or the scheduler's stated reasons 0.5, a NotReady node's
  classified condition 0.4, anything else 0.25;
* cross-checks inside the evidence: the kubelet's eviction names the culprit as the node's
  top memory consumer (0.2); the evicted pods used more than they requested, which is why the
  kubelet chose them (0.1);
* each kind of archived signal attached (evictions, OOM kills, node transitions, events):
  0.1, since the archive's own record agrees with the checks' reading of the cluster.

**Follow-ups** are per cause family, with the incident's own numbers: for a memory hog beside
critical pods, move the hog off the pool, set the critical pods' requests to their usage, fix the
hog's requests and limits, taint the pool; for a failed-pod storm, remove the pinned ``nodeName``,
pause the sync, prune the Failed pods; for NotReady nodes, the repair ladder and the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubemedic.incidents import causes
from kubemedic.incidents.causes import pool_label, workload_label
from kubemedic.incidents.describing import (
    blamed,
    critical_workloads,
    duration,
    evidence_of,
    labels,
    latest,
    oom_containers,
    signal_noun,
    utc,
)
from kubemedic.incidents.members import Draft, Member
from kubemedic.incidents.model import EvidenceItem, SignalKind, SuspectedCause

__all__ = ["MAX_CONFIDENCE", "confidence", "follow_ups", "suspected_cause"]

MAX_CONFIDENCE = 0.95
_TIE_WEIGHTS = {4: 0.3, 3: 0.25, 2: 0.15, 1: 0.1}
_SELF_WEIGHTS = {"oom": 0.5, "unschedulable": 0.5, "node-not-ready": 0.4}


def _str(value: object) -> str:
    return "" if value is None else str(value)


def confidence(draft: Draft) -> tuple[float, tuple[tuple[float, str], ...]]:
    """``(confidence, basis)`` for ``draft`` (see the module docstring)."""
    basis: list[tuple[float, str]] = []
    stating = sorted(
        {m.facts.check for m in draft.conditions if m.facts.incident_cause == draft.cause}
    )
    for index, check in enumerate(stating):
        basis.append((0.4 if index == 0 else 0.2, f"the {check} finding states this cause"))
    strongest: dict[str, int] = {}
    for check, score, _ in draft.ties:
        strongest[check] = max(strongest.get(check, 0), score)
    own = sorted({check for check, score, _ in draft.ties if score == 0})
    if not stating:
        for check in own:
            basis.append((_self_weight(draft, check), f"the {check} finding explains itself"))
    for check in sorted(strongest):
        score = strongest[check]
        if score > 0 and check not in own:
            basis.append((_TIE_WEIGHTS.get(min(score, 4), 0.1), f"the {check} finding ties to it"))
    basis.extend(_cross_checks(draft))
    kinds = sorted({signal.kind.value for signal in draft.signals})
    basis.extend((0.1, f"archived {kind} signals agree") for kind in kinds)
    value = 1.0
    for weight, _ in basis:
        value *= 1 - weight
    return round(min(1 - value, MAX_CONFIDENCE), 2), tuple(basis)


def _self_weight(draft: Draft, check: str) -> float:
    family = draft.family
    if family == "oom":
        member = latest(oom_containers(draft))
        limited = member is not None and member.facts.limited
        return _SELF_WEIGHTS["oom"] if limited else 0.25
    return _SELF_WEIGHTS.get(family, 0.25)


def _cross_checks(draft: Draft) -> list[tuple[float, str]]:
    found: list[tuple[float, str]] = []
    culprit_pods = {p for m in draft.conditions if m.facts.primary for p in m.facts.pods}
    for member in draft.by_check("evicted"):
        top = evidence_of(member, "nodeTopConsumer", "pod")
        if top and top in culprit_pods:
            found.append(
                (
                    0.2,
                    f"the kubelet's eviction on {_node(member)} names {top} as the node's top "
                    "memory consumer",
                )
            )
            break
    for member in draft.by_check("evicted"):
        used = evidence_of(member, "biggestConsumer")
        if isinstance(used, Mapping) and used.get("usage") and used.get("request"):
            found.append((0.1, "the evicted pods used more memory than they requested"))
            break
    return found


def _node(member: Member) -> str:
    return _str(evidence_of(member, "node")) or "the node"


# -- suspected cause ---------------------------------------------------------------------------


def suspected_cause(draft: Draft) -> SuspectedCause:
    value, basis = confidence(draft)
    return SuspectedCause(
        text=_cause_text(draft),
        confidence=value,
        evidence=tuple(_evidence(draft)),
        basis=basis,
    )


def _evidence(draft: Draft) -> list[EvidenceItem]:
    items: list[EvidenceItem] = []
    seen: set[str] = set()
    for members in (draft.conditions, draft.symptoms):
        for check in dict.fromkeys(m.facts.check for m in members):
            member = latest((m for m in members if m.facts.check == check), cause=draft.cause)
            if member is not None and member.episode.message not in seen:
                seen.add(member.episode.message)
                items.append(EvidenceItem(member.episode.message, check))
    for _, reason in _cross_checks(draft):
        items.append(EvidenceItem(reason[0].upper() + reason[1:] + ".", "cross-check"))
    counts: dict[tuple[SignalKind, str], list[int]] = {}
    for signal in draft.signals:
        entry = counts.setdefault((signal.kind, signal.source), [0, 0])
        entry[0] += signal.count
        entry[1] += 1
    for (kind, source), (count, rows) in sorted(counts.items()):
        times = [s.at for s in draft.signals if s.kind is kind and s.source == source]
        items.append(
            EvidenceItem(
                f"{signal_noun(kind, count)} in {rows} archived row(s), from {utc(min(times))} "
                f"to {utc(max(times))}.",
                source,
            )
        )
    return items


def _cause_text(draft: Draft) -> str:
    family = draft.family
    if family == "memory-pressure":
        return _memory_pressure_text(draft)
    if family == "pinned-node-name":
        return _pinned_text(draft)
    if family == "node-not-ready":
        member = latest(draft.by_check("node-not-ready"))
        if member is not None and member.facts.cause.subject == "mass":
            return (
                f"{member.episode.message} A shared cause (network, control plane, a bad "
                "rollout) is more likely than that many separate node failures."
            )
    leading = latest(draft.conditions, cause=draft.cause) if not draft.symptoms else None
    member = leading or latest(draft.symptoms, cause=draft.cause)
    return member.episode.message if member is not None else draft.cause


def _memory_pressure_text(draft: Draft) -> str:
    roles = draft.roles()
    cause = causes.parse_cause(draft.cause)
    culprit = blamed(draft.cause)
    name = labels(culprit, roles)
    owner = culprit[0] if culprit else cause.subject
    hog = latest(draft.by_check("memory-hog-neighbour"))
    over = latest(draft.by_check("node-memory-overcommit"))
    anchor = hog or over
    node = _str(evidence_of(anchor, "node")) if anchor else ""
    parts = [f"{name} ({owner}) holds most of the memory of node {node or '?'} in the "]
    parts[0] += f"{pool_label(cause.scope)}"
    if hog is not None:
        request = _str(evidence_of(hog, "hog", "request"))
        limit = _str(evidence_of(hog, "hog", "limit")) or "no"
        share = _str(evidence_of(hog, "hog", "percentOfAllocatable"))
        allocatable = _str(evidence_of(hog, "allocatable"))
        usage = _str(evidence_of(hog, "hog", "usage"))
        parts[0] += (
            f": it requests {request} with {limit} limit, {share}% of the node's {allocatable} "
            "allocatable" + (f", and used {usage}" if usage else "")
        )
    sentences = [parts[0] + "."]
    if over is not None:
        sentences.append(
            f"The pods on {_str(evidence_of(over, 'node'))} request "
            f"{_str(evidence_of(over, 'requestsPercent'))}% of its memory and may use "
            f"{_str(evidence_of(over, 'limitsPercent'))}% (their limits), so the node runs out "
            "before every pod reaches its limit."
        )
    evicted = latest(draft.by_check("evicted"))
    if evicted is not None:
        who = labels(sorted(evicted.facts.victims), roles)
        used = evidence_of(evicted, "biggestConsumer")
        numbers = ""
        if isinstance(used, Mapping) and used.get("usage"):
            numbers = f" ({used.get('usage')} used on a {used.get('request')} request)"
        sentences.append(
            "Under memory pressure the kubelet evicts first the pods using more than they "
            f"request, so {who}{numbers} went before {name}, which stayed within its request."
        )
    burst = latest(draft.by_check("node-scale-burst"))
    if burst is not None:
        sentences.append(
            f"{_str(evidence_of(burst, 'nodesAdded'))} nodes joined in "
            f"{duration(float(_num(evidence_of(burst, 'spanSeconds'))))} just before "
            f"({_str(evidence_of(burst, 'nodesBefore'))} -> "
            f"{_str(evidence_of(burst, 'nodesAfter'))}), and {name} scrapes every node, so its "
            "memory grew with them."
        )
    return " ".join(sentences)


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


_GITOPS_TOOLS = {"argocd": "Argo CD", "flux": "Flux"}


def _pinned_text(draft: Draft) -> str:
    cause = causes.parse_cause(draft.cause)
    roles = draft.roles()
    workload = causes.workload_key(cause.subject)
    name = workload_label(workload, roles)
    pinned = latest(draft.by_check("pinned-node-name"))
    edit = latest(draft.by_check("out-of-band-edit"))
    storm = latest(draft.by_check("failed-pod-storm"))
    node = _str(evidence_of(pinned, "nodeName")) if pinned else ""
    node = node or (_str(evidence_of(storm, "pinnedNodeName")) if storm else "")
    sentences = [f"{name} ({workload}) has spec.template.spec.nodeName set to {node or '?'}"]
    if edit is not None:
        gitops = evidence_of(edit, "gitops")
        tool = _str(gitops.get("tool")) if isinstance(gitops, Mapping) else ""
        tool = _GITOPS_TOOLS.get(tool, tool)
        sentences[0] += (
            f", written by {_str(evidence_of(edit, 'manager'))} at "
            f"{_str(evidence_of(edit, 'time'))} outside Git"
            + (f"; {tool} does not revert a field Git does not set" if tool else "")
        )
    sentences[0] += ". The scheduler is bypassed: the kubelet admits or rejects each pod itself."
    if pinned is not None and evidence_of(pinned, "fitsReplicas") is not None:
        sentences.append(
            f"Only {_str(evidence_of(pinned, 'fitsReplicas'))} of "
            f"{_str(evidence_of(pinned, 'replicas'))} replicas fit the node."
        )
    if storm is not None:
        sentences.append(storm.episode.message)
    return " ".join(sentences)


# -- follow-ups --------------------------------------------------------------------------------


def follow_ups(draft: Draft) -> tuple[str, ...]:
    family = draft.family
    roles = draft.roles()
    if family == "memory-pressure":
        items = _memory_follow_ups(draft, roles)
    elif family in ("pinned-node-name", "failed-pod-storm"):
        items = _storm_follow_ups(draft)
    elif family == "node-not-ready":
        items = _node_follow_ups(draft)
    else:
        items = _other_follow_ups(draft, roles)
    items.extend(_victim_follow_ups(draft, roles))
    if not draft.signals and draft.symptoms:
        items.append(
            "Keep events and OOM kills past the API server's one-hour --event-ttl: run "
            "`kubemedic run` so the next investigation finds them in the archive."
        )
    return tuple(dict.fromkeys(items))


def _memory_follow_ups(draft: Draft, roles: dict[str, str]) -> list[str]:
    cause = causes.parse_cause(draft.cause)
    culprit = blamed(draft.cause)
    name = labels(culprit, roles)
    pool = pool_label(cause.scope)
    hog = latest(draft.by_check("memory-hog-neighbour"))
    over = latest(draft.by_check("node-memory-overcommit"))
    at_risk = critical_workloads(draft)
    items = [f"Move {name} off the {pool} (a pool of its own, or a nodeSelector away from it)"]
    if hog is not None:
        items[0] += (
            f": it holds {_str(evidence_of(hog, 'hog', 'percentOfAllocatable'))}% of "
            f"{_str(evidence_of(hog, 'node'))}'s allocatable memory."
        )
    else:
        items[0] += "."
    request = _str(evidence_of(hog, "hog", "request")) if hog else ""
    limit = _str(evidence_of(hog, "hog", "limit")) if hog else ""
    if request:
        limits = _str(evidence_of(over, "limitsPercent")) if over else ""
        items.append(
            f"Fix {name}'s memory request and limit ({request} request, {limit or 'no'} limit) to "
            "what it uses as its scrape targets grow"
            + (f"; the node's limits add up to {limits}% of allocatable." if limits else ".")
        )
    if at_risk:
        items.append(
            f"Taint the {pool} so that only critical pods ({labels(at_risk, roles, most=4)}) "
            "tolerate it, keeping memory hogs away from them."
        )
    burst = latest(draft.by_check("node-scale-burst"))
    if burst is not None:
        items.append(
            f"Plan for scale-ups: {_str(evidence_of(burst, 'nodesAdded'))} nodes joined in "
            f"{duration(_num(evidence_of(burst, 'spanSeconds')))}; size {name} for the largest "
            "node count, or stop scraping short-lived worker nodes and pods."
        )
    return items


def _victim_follow_ups(draft: Draft, roles: dict[str, str]) -> list[str]:
    """Requests = usage for the harmed critical pods (evicted, under-requested), one line per
    workload and resource, usage measured by the kubelet first."""
    items: list[str] = []
    done: set[tuple[str, str]] = set()
    for member in draft.by_check("evicted"):
        used = evidence_of(member, "biggestConsumer")
        resource = _str(evidence_of(member, "resource")) or "memory"
        if isinstance(used, Mapping) and used.get("usage") and used.get("request"):
            who = labels(sorted(member.facts.victims), roles)
            done.update((victim, resource) for victim in member.facts.victims)
            items.append(
                f"Set {who}'s {resource} request to its real usage ({used['usage']} used, "
                f"{used['request']} requested) so the kubelet stops evicting it first."
            )
    for member in draft.by_check("critical-pod-underrequested"):
        shortfalls = evidence_of(member, "shortfalls")
        if not isinstance(shortfalls, list):
            continue
        for resource in ("memory", "cpu"):
            if all((victim, resource) in done for victim in member.facts.victims):
                continue
            entry = next(
                (s for s in shortfalls if isinstance(s, Mapping) and s.get("resource") == resource),
                None,
            )
            if entry is None:
                continue
            done.update((victim, resource) for victim in member.facts.victims)
            target = entry.get("usage") or entry.get("floor")
            reason = (
                "so it is not first in line under memory pressure"
                if resource == "memory"
                else "so its liveness probe gets CPU when the node is busy"
            )
            who = labels(sorted(member.facts.victims), roles)
            items.append(
                f"Raise {who}'s {'CPU' if resource == 'cpu' else resource} request from "
                f"{entry.get('request')} to at least {target} {reason}."
            )
    return items


def _storm_follow_ups(draft: Draft) -> list[str]:
    cause = causes.parse_cause(draft.cause)
    workload = causes.workload_key(cause.subject)
    namespace, _, rest = workload.partition("/")
    kind, _, name = rest.partition("/")
    resource = kind.lower()
    items = [
        f"Remove spec.template.spec.nodeName from {workload}: kubectl -n {namespace} patch "
        f"{resource} {name} --type=json "
        '-p \'[{"op": "remove", "path": "/spec/template/spec/nodeName"}]\''
    ]
    edit = latest(draft.by_check("out-of-band-edit"))
    gitops = evidence_of(edit, "gitops") if edit else None
    app = _str(gitops.get("app")) if isinstance(gitops, Mapping) else ""
    items.append(
        f"Pause the GitOps sync{f' of app {app}' if app else ''} while fixing it, and make Git "
        "the only writer of the template (a field Git does not set survives every sync)."
    )
    if draft.by_check("failed-pod-storm"):
        items.append(
            f"Delete the Failed pods: kubectl -n {namespace} delete pods "
            "--field-selector=status.phase=Failed (PodGC only starts above 12,500)."
        )
    if edit is not None:
        items.append(
            f"Ask why {_str(evidence_of(edit, 'manager'))} edited it at "
            f"{_str(evidence_of(edit, 'time'))}; debug a node with a pod of its own instead."
        )
    return items


_NODE_STEPS = {
    "kubelet-stopped-posting": "check the kubelet and its network path to the API server "
    "(systemctl status kubelet), restart it, and reboot the node if it does not come back",
    "runtime-not-ready": "restart the container runtime (containerd or CRI-O), then the kubelet; "
    "reboot if it stays down",
    "pleg-unhealthy": "restart the container runtime, then the kubelet; reboot if it stays down",
    "network-not-ready": "check the CNI plugin (its DaemonSet pod, /etc/cni/net.d) on the node",
    "shutting-down": "confirm the shutdown was intended, and drain before planned shutdowns",
}


def _node_follow_ups(draft: Draft) -> list[str]:
    cause = causes.parse_cause(draft.cause)
    nodes = sorted({n for m in draft.by_check("node-not-ready") for n in m.facts.nodes})
    shown = ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")
    if cause.subject == "mass":
        return [
            "Pause automatic node repairs: draining this many nodes moves their load onto "
            "the few left.",
            "Look for the shared cause first: the network, the control plane, a rollout to "
            f"every node ({shown}).",
        ]
    step = _NODE_STEPS.get(cause.subject, "find out why the kubelet reports NotReady")
    return [
        f"On {shown}: {step}.",
        "Drain and reboot a node NotReady for more than 10 minutes; record each repair in the "
        "node's repair ledger and quarantine a node that fails again instead of rebooting it "
        "forever.",
    ]


def _other_follow_ups(draft: Draft, roles: dict[str, str]) -> list[str]:
    family = draft.family
    cause = causes.parse_cause(draft.cause)
    if family == "cpu-pressure":
        over = latest(draft.by_check("node-cpu-overcommit"))
        percent = _str(evidence_of(over, "requestsPercent")) if over else "?"
        return [
            f"Leave CPU headroom on the {pool_label(cause.scope)}: requests are at {percent}% "
            f"of allocatable; lower {labels(blamed(draft.cause), roles)}'s CPU request or add "
            "nodes."
        ]
    if family == "oom":
        member = latest(oom_containers(draft))
        if cause.subject == "node" or member is None:
            return [
                f"Set memory limits on the pods of the {pool_label(cause.scope)} so one process "
                "cannot exhaust a node, and reserve memory for the system (--system-reserved).",
            ]
        container = cause.subject.rsplit("/", 1)[-1]
        return [
            f"Raise container {container}'s memory limit "
            f"({_str(evidence_of(member, 'memoryLimit')) or 'none'}) or reduce its working set: "
            f"it was killed {_str(evidence_of(member, 'kills'))} time(s).",
            "Compare its usage before each kill with its request (`kubemedic oom`).",
        ]
    if family == "unschedulable":
        member = latest(draft.by_check("unschedulable-pods"))
        klass = cause.subject
        who = cause.scope
        if klass.startswith("insufficient-"):
            return [f"Add capacity that {who} may use, or lower its requests."]
        if klass.startswith("taint:"):
            return [f"Give {who} a toleration for {klass[6:]}, or keep it off those nodes."]
        message = _str(evidence_of(member, "lastMessage")) if member else ""
        return [f"Read the scheduler's reasons for {who}: {message}"]
    if family == "eviction":
        nodes = sorted({n for m in draft.by_check("evicted") for n in m.facts.nodes})
        where = ", ".join(nodes) or "the node"
        return [
            f"Find the largest {cause.subject.split(':')[0]} user of {where} at the time "
            "(kubemedic's metric samples) and give it a limit or a node of its own."
        ]
    if family == "node-scale-burst":
        return [
            "Size scrapers (Prometheus, kube-state-metrics) for the node count after a scale-up, "
            "and cap how many nodes the autoscaler adds at once if they cannot keep up."
        ]
    if family == "probe-restarts":
        member = latest(draft.by_check("probe-restarts"))
        cpu = _str(evidence_of(member, "cpuRequest")) if member else ""
        return [
            f"Raise the CPU request ({cpu or 'none'}) of {cause.subject} or relax its liveness "
            "probe (timeoutSeconds, failureThreshold) so a busy node does not kill it."
        ]
    if family == "critical-underrequested":
        return []  # _victim_follow_ups names the requests to raise
    if family == "out-of-band-edit":
        return ["Revert the hand edit, or put the change in Git so the sync owns it."]
    return [f"Investigate: {_first_message(draft.members)}"]


def _first_message(members: Sequence[Member]) -> str:
    member = latest(members)
    return member.episode.message if member is not None else ""
