"""Cause fingerprints read back: what a finding blames, what it harms, where (pure).

Every check writes a ``cause`` of the form ``<family>[:<subject>][@<scope>]`` built only from
stable identities (``kubemedic.checks.findings``): a workload as ``namespace/Kind/name``, a node
pool, a class of failure. This module parses them and reads each finding's evidence into
``Facts``: the workloads it blames (*culprits*), the workloads it harms or puts at risk
(*victims*), the nodes and pools it is about, and whether it is a standing *condition* or a
*symptom* of something that happened.

**Incident causes.** Findings of different checks name one underlying cause in different words;
``incident_cause`` maps them onto one string:

* ``memory-hog:<W>@<pool>`` and ``memory-overcommit:<W>@<pool>`` both blame workload ``W`` for
  the memory of a node in ``pool`` (the hog beside critical pods; the node whose top consumer it
  is): both become ``memory-pressure:<W>@<pool>``. ``cpu-overcommit`` becomes
  ``cpu-pressure:<W>@<pool>`` the same way.
* ``pinned-node-name:<W>`` is already shared by ``pinned-node-name``, ``failed-pod-storm`` and
  ``out-of-band-edit`` (the pin, the storm it causes, the hand edit that made it).
* A cause naming a pod (the check saw only the pod's events, not its owner) names the pod's
  Deployment when the pod's name reads ``<deployment>-<pod-template-hash>-<suffix>``.
* Every other cause is its own incident cause.

How symptoms are tied to conditions (``root_score``) and to each other (``follow_score``) is
documented in ``kubemedic.incidents.grouping``, which applies these rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubemedic.incidents.model import FindingEpisode
from kubemedic.model import objects, owners
from kubemedic.model.objects import ObjectRef

__all__ = [
    "BLAMING_FAMILIES",
    "CONDITION_CHECKS",
    "Cause",
    "Facts",
    "activity_span",
    "cause_anchors",
    "facts_of",
    "follow_score",
    "incident_cause",
    "parse_cause",
    "pool_label",
    "root_score",
    "workload_key",
    "workload_label",
    "workload_of_pod",
]

CONDITION_CHECKS = frozenset(
    {
        "memory-hog-neighbour",
        "node-memory-overcommit",
        "node-cpu-overcommit",
        "critical-pod-underrequested",
        "pinned-node-name",
        "out-of-band-edit",
    }
)
"""Checks that report a standing state (a risk), not something that happened."""

BLAMING_FAMILIES = frozenset(
    {"memory-pressure", "cpu-pressure", "pinned-node-name", "failed-pod-storm", "out-of-band-edit"}
)
"""Incident causes that blame a workload (its resources, its spec) rather than name a victim."""

SECONDARY_CHECKS = frozenset({"critical-pod-underrequested"})
"""Conditions about a *victim* (a critical pod asking for too little): they explain why it was
the one harmed, and join whichever incident harmed it rather than leading one."""

IGNORED_FAMILIES = frozenset({"invalid-input"})
"""Causes about kubemedic's own input (a check that could not run), never about the cluster."""

_PRESSURE = {"memory-hog": "memory", "memory-overcommit": "memory", "cpu-overcommit": "cpu"}
_WORKLOAD_KINDS = frozenset(
    {
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "ReplicationController",
        "Job",
        "CronJob",
        "Pod",
    }
)


@dataclass(frozen=True, slots=True)
class Cause:
    """A parsed cause fingerprint: ``family[:subject][@scope]``."""

    raw: str
    family: str
    subject: str
    scope: str


def parse_cause(text: str) -> Cause:
    """Split a cause fingerprint. The scope is after the *last* ``@`` (workload and pool names
    cannot hold one); the family is before the *first* ``:``."""
    head, at, scope = text.rpartition("@")
    if not at:
        head, scope = text, ""
    family, _, subject = head.partition(":")
    return Cause(raw=text, family=family, subject=subject, scope=scope)


def workload_key(text: str) -> str:
    """``namespace/Kind/name`` from any of the ways findings name a workload: a cause key
    (``ns/Kind/name``, ``/Kind/name`` or ``Kind/name``) or an owner text (``Kind ns/name``).
    "" when ``text`` is neither."""
    text = text.strip()
    if " " in text:
        kind, _, rest = text.partition(" ")
        namespace, slash, name = rest.rpartition("/")
        return f"{namespace}/{kind}/{name}" if slash and namespace else f"{kind}/{rest}"
    parts = text.split("/")
    if len(parts) == 3:
        return f"{parts[0]}/{parts[1]}/{parts[2]}" if parts[0] else f"{parts[1]}/{parts[2]}"
    if len(parts) == 2 and parts[0][:1].isupper():
        return text
    return ""


def _ref_key(ref: ObjectRef) -> str:
    return owners.cause_key(ref) if ref.kind in _WORKLOAD_KINDS else ""


_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
"""The alphabet of ``pod-template-hash`` and of ``generateName`` suffixes (apimachinery's
``util/rand``: no vowels, no 0, 1 or 3), which tells ``<deployment>-<hash>`` from other names."""
_HASHED_REPLICASET = re.compile(rf"(?P<deployment>[a-z0-9][-a-z0-9.]*)-{_SAFE}{{4,10}}")
_HASHED_POD = re.compile(rf"(?P<deployment>[a-z0-9][-a-z0-9.]*)-{_SAFE}{{4,10}}-{_SAFE}{{5}}")


def workload_of_pod(namespace: str, pod: str, *, owner_kind: str = "", owner_name: str = "") -> str:
    """The workload a pod belongs to, as a cause names it (``namespace/Kind/name``): the
    Deployment behind a ReplicaSet named ``<deployment>-<pod-template-hash>``, else the pod's
    controller; for a pod known only by name (an event about it), the Deployment its name
    reads as (``<deployment>-<hash>-<suffix>``), else the pod itself."""
    where = namespace or None
    if owner_kind == "ReplicaSet" and (found := _HASHED_REPLICASET.fullmatch(owner_name)):
        return owners.cause_key(ObjectRef("Deployment", found["deployment"], where))
    if owner_kind and owner_name:
        return owners.cause_key(ObjectRef(owner_kind, owner_name, where))
    if found := _HASHED_POD.fullmatch(pod):
        return owners.cause_key(ObjectRef("Deployment", found["deployment"], where))
    return owners.cause_key(ObjectRef("Pod", pod, where)) if pod else ""


def cause_anchors(cause: Cause) -> list[tuple[str, str]]:
    """The parts of an incident cause another incident may share: ``("pool", name)`` for causes
    scoped to a node pool, ``("workload", namespace/Kind/name)`` for the workload it blames or
    that suffers it (``memory-pressure:W@P`` gives both)."""
    anchors: list[tuple[str, str]] = []
    family, subject, scope = cause.family, cause.subject, cause.scope
    if family in ("oom", "probe-restarts") and subject != "node":
        subject = subject.rsplit("/", 1)[0]
    if family == "unschedulable":
        subject, scope = scope, ""
    if family == "eviction" and ":" in subject:
        subject = subject.split(":", 1)[1]
    if scope and scope != "cluster" and not workload_key(scope):
        anchors.append(("pool", scope))
    key = workload_key(subject)
    if key:
        anchors.append(("workload", key))
    return anchors


def _as_workload(key: str) -> str:
    """A ``namespace/Pod/name`` key as its workload's (the check could not see the owner,
    e.g. a pod already deleted), by its name (``workload_of_pod``); other keys unchanged."""
    parts = key.split("/")
    if len(parts) == 3 and parts[1] == "Pod":
        return workload_of_pod(parts[0], parts[2])
    return key


def incident_cause(cause: Cause) -> str:
    """The cause an incident is named after (see the module docstring)."""
    resource = _PRESSURE.get(cause.family)
    if resource is not None:
        return f"{resource}-pressure:{cause.subject}@{cause.scope}"
    if cause.family == "unschedulable" and workload_key(cause.scope):
        return f"unschedulable:{cause.subject}@{_as_workload(workload_key(cause.scope))}"
    if cause.family in ("oom", "probe-restarts") and cause.subject.count("/") == 3:
        workload, _, container = cause.subject.rpartition("/")
        return f"{cause.family}:{_as_workload(workload)}/{container}"
    return cause.raw


@dataclass(frozen=True, slots=True)
class Facts:
    """What one finding episode says, in the terms incidents are grouped by."""

    check: str
    cause: Cause
    incident_cause: str
    condition: bool
    primary: bool
    """A condition that can lead an incident (not ``SECONDARY_CHECKS``)."""
    root: bool
    """Symptoms may be attributed to it (primary conditions and a mass NotReady outage)."""
    resource: str
    pools: frozenset[str]
    nodes: frozenset[str]
    culprits: frozenset[str]
    victims: frozenset[str]
    pods: frozenset[str]
    symptom: str
    """The symptom's plain name (``pod eviction``...), "" for conditions."""
    roles: tuple[tuple[str, str], ...]
    """``(workload, role)`` pairs the evidence states (``jupyterhub``, ``prometheus``...)."""
    limited: bool
    """For an OOM kill: the container had a memory limit (its own limit killed it)."""
    reason_class: str
    """For unschedulable pods: the scheduler's dominant reason class."""

    @property
    def workloads(self) -> frozenset[str]:
        return self.culprits | self.victims


_SYMPTOMS = {
    "evicted": "pod eviction",
    "oom-killed": "OOM kill",
    "unschedulable-pods": "pod pending",
    "node-not-ready": "node not ready",
    "failed-pod-storm": "failed pod storm",
    "probe-restarts": "liveness probe restarts",
    "node-scale-burst": "node scale-up burst",
}


def _strings(values: Any) -> set[str]:
    """The non-empty strings of a list (or of any iterable but a string or a mapping)."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        return set()
    return {value for value in values if isinstance(value, str) and value}


def _maps(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _str(evidence: Mapping[str, Any], key: str) -> str:
    value = evidence.get(key)
    return value if isinstance(value, str) else ""


def _role_word(text: str) -> str:
    """``jupyterhub`` from ``jupyterhub (labels app=jupyterhub, component=hub)``."""
    return text.split(" ", 1)[0] if text else ""


def facts_of(episode: FindingEpisode) -> Facts | None:
    """Read one episode; None for causes about kubemedic's own input (``IGNORED_FAMILIES``)."""
    cause = parse_cause(episode.cause)
    if cause.family in IGNORED_FAMILIES:
        return None
    evidence = episode.evidence
    check = episode.check
    own = _ref_key(episode.object)
    pools: set[str] = _strings([_str(evidence, "nodePool"), _str(evidence, "pool")])
    nodes: set[str] = _strings([_str(evidence, "node")])
    if episode.object.kind == "Node":
        nodes.add(episode.object.name)
    culprits: set[str] = set()
    victims: set[str] = set()
    pods: set[str] = _strings([_str(evidence, "pod")]) | _strings(evidence.get("pods"))
    roles: set[tuple[str, str]] = set()
    resource = _PRESSURE.get(cause.family, "")
    limited = False
    reason_class = ""

    if resource:
        culprits.add(workload_key(cause.subject))
        pools.add(cause.scope)
        hog = evidence.get("hog")
        if isinstance(hog, Mapping):
            pods.update(_strings([hog.get("pod")]))
        for critical in _maps(evidence.get("critical")):
            victim = workload_key(str(critical.get("owner") or ""))
            victims.add(victim)
            roles.add((victim, str(critical.get("role") or "")))
    elif cause.family == "eviction":
        resource = cause.subject.split(":", 1)[0]
        if cause.scope:
            pools.add(cause.scope)
        victims.add(own)
        roles.add((own, _role_word(_str(evidence, "critical"))))
    elif cause.family == "oom":
        resource = "memory"
        if cause.subject == "node":
            pools.add(cause.scope)
            for entry in _strings(evidence.get("oomKilledContainers")):
                namespace, _, rest = entry.partition("/")
                victims.add(workload_of_pod(namespace, rest.rsplit("/", 1)[0]))
        else:
            victims.add(own or workload_key(cause.subject.rsplit("/", 1)[0]))
            nodes.update(_strings(p.get("node") for p in _maps(evidence.get("pods"))))
            pods.update(_strings(p.get("pod") for p in _maps(evidence.get("pods"))))
            limited = evidence.get("memoryLimit") is not None
            roles.add((own, _role_word(_str(evidence, "critical"))))
    elif cause.family == "unschedulable":
        victims.add(workload_key(cause.scope) or own)
        reason_class = cause.subject
        pods.clear()  # ``pods`` is a count here
    elif cause.family == "node-not-ready":
        if cause.scope != "cluster":
            pools.add(cause.scope)
        nodes.update(_strings(evidence.get("nodes")))
    elif cause.family == "node-scale-burst":
        pools.add(cause.scope)
        for grower in _maps(evidence.get("loadGrowsWith")):
            key = workload_key(str(grower.get("owner") or ""))
            if key and grower.get("scraper"):
                culprits.add(key)
                roles.add((key, str(grower["scraper"])))
    elif cause.family == "critical-underrequested":
        victims.add(workload_key(cause.subject) or own)
        roles.add((own, _str(evidence, "role")))
        nodes.update(_strings(p.get("node") for p in _maps(evidence.get("pods"))))
        pods = _strings(p.get("pod") for p in _maps(evidence.get("pods")))
    elif cause.family in ("pinned-node-name", "failed-pod-storm", "out-of-band-edit"):
        culprits.add(workload_key(cause.subject) or own)
        nodes.update(_strings([_str(evidence, "nodeName"), _str(evidence, "pinnedNodeName")]))
        storm_nodes = evidence.get("nodes")
        if isinstance(storm_nodes, Mapping):
            nodes.update(_strings(list(storm_nodes)))
        if check == "failed-pod-storm":
            victims.add(workload_key(cause.subject) or own)
        pods.clear()
    elif cause.family == "probe-restarts":
        victims.add(own or workload_key(cause.subject.rsplit("/", 1)[0]))
    elif own:
        victims.add(own)

    # A check names a node's pool after the node once the node is gone from the view (pools
    # are read from node labels): such a "pool" is no pool at all.
    pools -= nodes
    condition = check in CONDITION_CHECKS
    primary = condition and check not in SECONDARY_CHECKS
    mass = cause.family == "node-not-ready" and cause.subject == "mass"
    return Facts(
        check=check,
        cause=cause,
        incident_cause=incident_cause(cause),
        condition=condition,
        primary=primary,
        root=primary or mass,
        resource=resource,
        pools=frozenset(pools - {""}),
        nodes=frozenset(nodes - {""}),
        culprits=frozenset(culprits - {""}),
        victims=frozenset(_as_workload(v) for v in victims - {""}),
        pods=frozenset(pods - {""}),
        symptom="" if condition else _SYMPTOMS.get(check, check.replace("-", " ")),
        roles=tuple(sorted((w, r) for w, r in roles if w and r)),
        limited=limited,
        reason_class=reason_class,
    )


def activity_span(episode: FindingEpisode) -> tuple[datetime, datetime] | None:
    """When a symptom was active by its own evidence (event times, termination times, a node's
    ``since``), or None when the evidence holds no times (then the episode's scans say it)."""
    evidence = episode.evidence
    times: list[datetime] = []

    def add(*values: Any) -> None:
        times.extend(t for value in values if (t := objects.parse_time(value)) is not None)

    if episode.check == "unschedulable-pods":
        add(evidence.get("firstSeen"), evidence.get("lastSeen"))
    elif episode.check == "oom-killed":
        add(evidence.get("finishedAt"))
        add(*(p.get("finishedAt") for p in _maps(evidence.get("pods"))))
        add(*(v.get("lastSeen") for v in _maps(evidence.get("victims"))))
    elif episode.check == "node-scale-burst":
        add(evidence.get("from"), evidence.get("to"))
    elif episode.check == "probe-restarts":
        window = evidence.get("window")
        if isinstance(window, Mapping):
            add(window.get("first"), window.get("last"))
    elif episode.check == "node-not-ready":
        add(evidence.get("since"))
        if times:
            times.append(max(episode.last_seen, times[0]))  # NotReady until the last scan
    return (min(times), max(times)) if times else None


def root_score(symptom: Facts, root: Facts) -> int:
    """How strongly ``symptom`` is explained by the condition (or mass outage) ``root``: 0 for
    not at all, else higher for a more specific tie.

    4: the same incident cause (the pin behind a failed-pod storm);
    3: a memory eviction or node-wide OOM on a node the memory condition names; a node of a mass
       NotReady outage;
    2: the same, on the condition's pool but another node; a node scale-up burst whose
       scrapers include the condition's culprit (the scraper grows with the nodes it scrapes);
       an OOM kill of a container without a memory limit on the condition's node;
    1: pending pods or liveness restarts of a workload the condition names as at risk.
    """
    if symptom.incident_cause == root.incident_cause:
        return 4
    if root.cause.family == "node-not-ready":
        inside = symptom.nodes and symptom.nodes <= root.nodes
        return 3 if symptom.cause.family == "node-not-ready" and inside else 0
    if not root.resource:
        return 0
    family = symptom.cause.family
    same_pool = bool(symptom.pools & root.pools)
    same_node = bool(symptom.nodes & root.nodes)
    if family == "eviction" or (family == "oom" and symptom.cause.subject == "node"):
        if symptom.resource == root.resource and (same_pool or same_node):
            return 3 if same_node else 2
        return 0
    if family == "oom":
        return 2 if root.resource == "memory" and not symptom.limited and same_node else 0
    if family == "node-scale-burst":
        return 2 if root.resource == "memory" and symptom.culprits & root.culprits else 0
    if family in ("unschedulable", "probe-restarts") and symptom.victims & root.victims:
        return 1
    return 0


def follow_score(symptom: Facts, other: Facts) -> int:
    """How strongly ``symptom`` follows from another symptom ``other`` (0: not at all).

    3: pods of a workload pending after that workload was evicted (its replacement waits for
       room, or for the node's pressure taint to clear);
    2: liveness restarts of an evicted workload; a node-wide OOM kill whose victims are the
       containers of an OOM-killed workload, or on a node where it was OOM-killed;
    1: pods pending for lack of CPU or memory during a node scale-up burst (the cluster
       autoscaler adds nodes because pods are pending: the pending pods are its trigger).
    """
    family, other_family = symptom.cause.family, other.cause.family
    shared = bool(symptom.victims & other.victims)
    if other_family == "eviction" and shared:
        if family == "unschedulable":
            return 3
        if family == "probe-restarts":
            return 2
    if family == "oom" and symptom.cause.subject == "node" and other_family == "oom":
        on_node = bool(symptom.nodes & other.nodes)
        return 2 if other.cause.subject != "node" and (shared or on_node) else 0
    if (
        family == "unschedulable"
        and other_family == "node-scale-burst"
        and symptom.reason_class.startswith("insufficient-")
    ):
        return 1
    return 0


# -- plain names -------------------------------------------------------------------------------

_PRODUCTS: tuple[tuple[str, str], ...] = (
    ("kube-state-metrics", "kube-state-metrics"),
    ("node-exporter", "node-exporter"),
    ("alertmanager", "Alertmanager"),
    ("prometheus", "Prometheus"),
    ("jupyterhub", "JupyterHub"),
    ("ingress-nginx", "ingress-nginx"),
    ("grafana", "Grafana"),
    ("coredns", "CoreDNS"),
    ("dask", "Dask"),
    ("victoria-metrics", "VictoriaMetrics"),
    ("vmagent", "vmagent"),
    ("otel-collector", "OpenTelemetry collector"),
    ("metrics-server", "metrics-server"),
)
_SPLIT = re.compile(r"[-_.]")


def _product(text: str) -> str:
    lowered = text.lower()
    return next((label for needle, label in _PRODUCTS if needle in lowered), "")


def workload_label(key: str, roles: Mapping[str, str] | None = None) -> str:
    """A short plain name for a workload: ``JupyterHub hub`` (role ``jupyterhub``, name
    ``hub``), ``Prometheus`` (``support-prometheus-server``), else its name."""
    name = key.rsplit("/", 1)[-1]
    role = (roles or {}).get(key, "")
    product = _product(role) if role else ""
    if product:
        return product if product.lower() in name.lower() else f"{product} {name}"
    product = _product(name)
    if product:
        words = [w for w in _SPLIT.split(name) if w.lower() in ("dask", "worker", "scheduler")]
        return f"{product} {' '.join(words[1:])}".strip() if product == "Dask" else product
    return name


def pool_label(pool: str) -> str:
    """``core pool`` for ``core-pool``, ``dask-worker pool`` for ``dask-worker``."""
    if pool.endswith("-pool"):
        return pool[: -len("-pool")] + " pool"
    return f"{pool} pool" if pool else "the cluster"
