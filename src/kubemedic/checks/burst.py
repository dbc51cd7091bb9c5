"""``node-scale-burst``: many nodes created at once, and what grows with them.

Incident 3: 100 nodes joined in one minute for Dask workers, so the one Prometheus suddenly
scraped ~200 more node targets, its memory rose, and the hub beside it on the core node was
evicted. Nothing was broken before the burst; the burst is the early warning.

Detection: a sliding window of ``window_seconds`` (5 minutes) over the nodes' ``creationTimestamp``;
the window holding the most nodes is the burst when it holds at least ``warning_nodes`` (20).
``critical`` when it holds ``critical_nodes`` (50) or more, or at least ``critical_growth`` (1.0)
times the nodes that existed before it (the cluster doubled). Only bursts ending within
``lookback_seconds`` (1 hour) of now are reported, and only when at least ``min_nodes_before`` (1)
node existed before (a cluster being created is not a burst). Only nodes still in the view are
seen: nodes deleted since (scale-down) are not counted.

What grows with node count (``loadGrowsWith``):

* DaemonSets: one more pod per new node (the template's ``nodeSelector`` is honoured; affinity
  and tolerations are not evaluated). ``podsAdded`` counts the DaemonSet's pods on the new nodes
  when its pods are in the view, else estimates one per matching new node (``estimated: true``).
  ``perPodRequests`` and ``addedRequests`` are effective requests (``resources.pod_requests``).
* Scrapers and per-node collectors outside DaemonSets, whose work grows with the number of
  nodes or objects: Prometheus (labels ``app.kubernetes.io/name``/``app``/``k8s-app`` =
  ``prometheus``, the chart's ``component: server``, or a ``…/prometheus`` image), vmagent and
  VictoriaMetrics, the OpenTelemetry collector, Datadog's cluster agent, Grafana Agent and Alloy,
  kube-state-metrics and metrics-server. Operators, config reloaders, node exporters,
  adapters, pushgateways and alertmanagers are not scrapers. Each entry lists its ``pods`` as
  ``{pod, node, memoryRequest, memoryLimit}`` (``pod`` as ``namespace/name``; request and limit
  ``null`` when unset); a scraper sitting on a node next to critical pods is what incident 3 lost.

Evidence: ``nodesAdded``, ``windowSeconds``, ``spanSeconds`` (first to last new node), ``from``,
``to``, ``nodesBefore``, ``nodesAfter``, ``nodePools`` (``{pool: added}``), ``loadGrowsWith``
(scrapers first, most memory first, then DaemonSets). Cause: ``node-scale-burst@<pool>``, the pool
that gained the most nodes. The finding is about ``kubemedic.io/v1 Cluster cluster``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubemedic.checks import settings
from kubemedic.checks.findings import CLUSTER, Finding, Severity, cause_part
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners, placement, resources, timing
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity
from kubemedic.model.view import ClusterView, controller_of

__all__ = ["BurstConfig", "node_scale_burst", "scraper_kind"]

_NAME_LABELS = ("app.kubernetes.io/name", "app", "k8s-app", "name")
_ROLE_LABELS = ("component", "app.kubernetes.io/component")
_SCRAPERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kube-state-metrics", ("kube-state-metrics",)),
    ("metrics-server", ("metrics-server",)),
    ("vmagent", ("vmagent",)),
    ("victoria-metrics", ("victoria-metrics", "victoriametrics", "vmsingle")),
    ("otel-collector", ("otel-collector", "opentelemetry-collector", "otelcol")),
    ("grafana-agent", ("grafana-agent",)),
    ("datadog", ("datadog",)),
    ("prometheus", ("prometheus",)),
)
_NOT_SCRAPERS = (
    "operator",
    "config-reloader",
    "node-exporter",
    "adapter",
    "pushgateway",
    "alertmanager",
    "blackbox",
)
_WHY = {
    "kube-state-metrics": "exports every node and pod object",
    "metrics-server": "scrapes every kubelet",
}


@dataclass(frozen=True, slots=True)
class BurstConfig:
    window_seconds: int = settings.number(300, above=True)
    """Width of the sliding window over node creation times."""
    warning_nodes: int = settings.number(20, low=1)
    """Nodes created within one window that make a burst."""
    critical_nodes: int = settings.number(50, low=1)
    """Nodes within one window that make it critical (incident 3: 100 in one minute)."""
    critical_growth: float = 1.0
    """...or this many times the nodes that existed before the burst."""
    lookback_seconds: int = 3600
    """Bursts that ended longer ago than this are history, not reported."""
    min_nodes_before: int = 1
    """Nodes that must have existed before the window (cluster creation is not a burst)."""


@dataclass(frozen=True, slots=True)
class _Born:
    at: datetime
    name: str
    pool: str


@check("node-scale-burst", BurstConfig)
def node_scale_burst(view: ClusterView, config: BurstConfig) -> list[Finding]:
    """Many nodes created within a short window, naming what grows with node count."""
    born = sorted(
        (
            _Born(at=created, name=name, pool=placement.node_pool(node))
            for name, node in view.nodes.items()
            if (created := timing.created_at(node)) is not None
        ),
        key=lambda item: (item.at, item.name),
    )
    span = _densest_window(view, born, config)
    if span is None:
        return []
    start, end = span
    added = born[start : end + 1]
    before = start
    count = len(added)
    if count < config.warning_nodes or before < config.min_nodes_before:
        return []
    critical = count >= config.critical_nodes or count >= config.critical_growth * before
    pools = Counter(item.pool for item in added)
    pool = min(pools.items(), key=lambda item: (-item[1], item[0]))[0]
    new_nodes = {item.name for item in added}
    growers = _scrapers(view) + _daemonsets(view, new_nodes)
    span_seconds = int((added[-1].at - added[0].at).total_seconds())
    evidence: dict[str, Any] = {
        "nodesAdded": count,
        "windowSeconds": config.window_seconds,
        "spanSeconds": span_seconds,
        "from": objects.format_time(added[0].at),
        "to": objects.format_time(added[-1].at),
        "nodesBefore": before,
        "nodesAfter": before + count,
        "nodePools": dict(sorted(pools.items())),
        "loadGrowsWith": growers,
    }
    return [
        Finding(
            check="node-scale-burst",
            severity=Severity.CRITICAL if critical else Severity.WARNING,
            object=CLUSTER,
            message=_sentence(evidence, pool, growers),
            cause=f"node-scale-burst@{cause_part(pool)}",
            first_seen=added[0].at,
            last_seen=added[-1].at,
            evidence=evidence,
        )
    ]


def _densest_window(
    view: ClusterView, born: list[_Born], config: BurstConfig
) -> tuple[int, int] | None:
    """Indexes ``(first, last)`` of the window with most creations (ties: the latest)."""
    best: tuple[int, int] | None = None
    first = 0
    for last, item in enumerate(born):
        while (item.at - born[first].at).total_seconds() > config.window_seconds:
            first += 1
        if (view.now - item.at).total_seconds() > config.lookback_seconds:
            continue
        if best is None or last - first >= best[1] - best[0]:
            best = (first, last)
    return best


def _sentence(evidence: Mapping[str, Any], pool: str, growers: list[dict[str, Any]]) -> str:
    scrapers = [g for g in growers if g["kind"] != "DaemonSet" or g.get("scraper")]
    daemonsets = sum(1 for g in growers if g["kind"] == "DaemonSet")
    named = ", ".join(f"{g['owner']} ({g['scraper']})" for g in scrapers[:3]) or "no known scraper"
    return (
        f"{evidence['nodesAdded']} nodes were created within "
        f"{timing.human_duration(evidence['spanSeconds'])} ({evidence['nodesBefore']} -> "
        f"{evidence['nodesAfter']} nodes, mostly in pool {pool}); load grows with them for "
        f"{named} and {daemonsets} DaemonSet{'s' if daemonsets != 1 else ''}."
    )


def _image_repository(image: str) -> str:
    path = image.split("@", 1)[0].lower()
    slash = path.rfind("/")
    colon = path.rfind(":")
    return path[:colon] if colon > slash else path


def scraper_kind(pod: Body) -> str | None:
    """Which scraper ``pod`` runs (``prometheus``, ``vmagent``...), from labels or images."""
    pod_labels = objects.labels(pod)
    roles = [str(pod_labels.get(key, "")).lower() for key in _ROLE_LABELS]
    if any(token in role for role in roles for token in _NOT_SCRAPERS):
        return None
    for key in _NAME_LABELS:
        value = str(pod_labels.get(key, "")).lower()
        if not value or any(token in value for token in _NOT_SCRAPERS):
            continue
        for kind, tokens in _SCRAPERS:
            if any(token in value for token in tokens):
                return kind
        if value == "alloy":
            return "alloy"
    for container in objects.get_list(pod, "spec", "containers"):
        found = _image_scraper(objects.get_str(container, "image") or "")
        if found is not None:
            return found
    return None


def _image_scraper(image: str) -> str | None:
    repository = _image_repository(image)
    name = repository.rsplit("/", 1)[-1]
    if not name or any(token in name for token in _NOT_SCRAPERS):
        return None
    if "datadog" in repository and name in ("agent", "cluster-agent"):
        return "datadog"
    if repository.endswith("grafana/agent"):
        return "grafana-agent"
    if name == "alloy":
        return "alloy"
    for kind, tokens in _SCRAPERS:
        if any(token in name for token in tokens):
            return kind
    return None


def _memory(values: Mapping[str, Quantity]) -> str | None:
    quantity = values.get("memory")
    return str(quantity) if quantity is not None else None


def _scrapers(view: ClusterView) -> list[dict[str, Any]]:
    groups: dict[Any, dict[str, Any]] = {}
    weights: dict[Any, float] = {}
    for pod in view.pods:
        if placement.finished(pod):
            continue
        owner = controller_of(pod)
        if owner is not None and owner.kind == "DaemonSet":
            continue
        kind = scraper_kind(pod)
        if kind is None:
            continue
        top = view.top_owner(pod)
        entry = groups.setdefault(
            top,
            {
                "kind": top.kind,
                "namespace": top.namespace,
                "name": top.name,
                "owner": owners.cause_key(top),
                "scraper": kind,
                "why": _WHY.get(kind, "scrapes every node"),
                "pods": [],
            },
        )
        requests = resources.pod_requests(pod)
        limits = resources.pod_limits(pod)
        unbounded = "memory" in resources.unbounded_limits(pod, ("memory",))
        entry["pods"].append(
            {
                "pod": owners.pod_key(pod),
                "node": objects.get_str(pod, "spec", "nodeName"),
                "memoryRequest": _memory(requests),
                "memoryLimit": None if unbounded else _memory(limits),
            }
        )
        memory = limits.get("memory") or requests.get("memory")
        weights[top] = max(weights.get(top, 0.0), float(memory) if memory is not None else 0.0)
    ordered = sorted(groups, key=lambda top: (-weights[top], str(top)))
    return [groups[top] for top in ordered]


def _daemonsets(view: ClusterView, new_nodes: set[str]) -> list[dict[str, Any]]:
    keys = {(ns, name) for (kind, ns, name) in view.workloads if kind == "DaemonSet"}
    keys |= {(ns, name) for (kind, ns, name) in view.pods_by_owner if kind == "DaemonSet"}
    entries: list[dict[str, Any]] = []
    for namespace, name in sorted(keys, key=lambda key: (key[0] or "", key[1])):
        body = view.workload("DaemonSet", namespace, name)
        pods = view.pods_by_owner.get(("DaemonSet", namespace, name), [])
        if pods:
            added = sum(1 for pod in pods if objects.get_str(pod, "spec", "nodeName") in new_nodes)
            estimated = False
            sample: Body | None = pods[0]
        else:
            added = _matching_nodes(view, body, new_nodes)
            estimated = True
            sample = _template_pod(body, namespace, name)
        if added == 0 or sample is None:
            continue
        per_pod = resources.pod_requests(sample)
        entry: dict[str, Any] = {
            "kind": "DaemonSet",
            "namespace": namespace,
            "name": name,
            "owner": owners.cause_key(ObjectRef("DaemonSet", name, namespace)),
            "why": "one pod per node",
            "podsAdded": added,
            "estimated": estimated,
            "perPodRequests": {key: str(value) for key, value in sorted(per_pod.items())},
            "addedRequests": {key: str(value * added) for key, value in sorted(per_pod.items())},
        }
        scraper = scraper_kind(sample)
        if scraper is not None:
            entry["scraper"] = scraper
        entries.append(entry)
    return entries


def _template_pod(body: Body | None, namespace: str | None, name: str) -> Body | None:
    if body is None:
        return None
    template = objects.get_map(body, "spec", "template")
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"{name} (template)",
            "namespace": namespace or "",
            "labels": objects.get_map(template, "metadata", "labels"),
        },
        "spec": objects.get_map(template, "spec"),
    }


def _matching_nodes(view: ClusterView, body: Body | None, new_nodes: set[str]) -> int:
    if body is None:
        return 0
    pod_spec = objects.get_map(body, *owners.POD_TEMPLATE_SPECS["DaemonSet"])
    return sum(1 for name in new_nodes if placement.selector_matches(pod_spec, view.nodes[name]))
