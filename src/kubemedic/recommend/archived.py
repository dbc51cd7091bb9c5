"""Recommendations from an archive: samples, OOM kills and evictions gathered per workload.

Each sample names a pod; the pod's workload is its archived owner (terminations and evictions
carry the pod's controller) or, for a pod only metrics named, the workload its generated name
reads as: both through :func:`kubemedic.incidents.causes.workload_of_pod`, so a Deployment's
pods across rollouts and evictions are one workload, as incidents name it.

OOM kills come from :func:`kubemedic.store.queries.oom_report` (the container's memory limit at
the kill); evictions likewise, counted for a container when the kubelet starved memory
(``resource`` memory), with the usage its message gave when it named that container.

The current spec is, per workload container, the one the caller passes (``current``, or a
``view`` of a snapshot or a live cluster: :func:`kubemedic.recommend.current.from_view`, which
also places pods the archive knows no owner of, such as a DaemonSet's), else the newest the
archive knows: the memory request and limit of the container's last archived termination,
or the request an eviction message gave (the archive keeps no CPU requests).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kubemedic.incidents.causes import workload_of_pod
from kubemedic.model.view import ClusterView
from kubemedic.recommend import current as placing
from kubemedic.recommend import policy
from kubemedic.recommend.current import Key
from kubemedic.recommend.policy import Kill, KillKind, Recommendation, Resources, Usage, Workload
from kubemedic.store import queries, usage
from kubemedic.store.queries import Source

__all__ = ["recommend_from_archive", "workload_of"]


def workload_of(
    namespace: str,
    pod: str,
    owner: tuple[str, str] | None,
    *,
    by_view: Callable[[str, str], tuple[str, str] | None] | None = None,
) -> tuple[str, str]:
    """``(kind, name)`` of the workload ``pod`` belongs to: by ``owner`` (its archived
    controller) when known, else as ``by_view`` places it (``current.placer``), else by its
    name."""
    if owner is None and by_view is not None:
        found = by_view(namespace, pod)
        if found is not None:
            return found
    kind, name = owner if owner is not None else ("", "")
    key = workload_of_pod(namespace, pod, owner_kind=kind, owner_name=name)
    parts = key.split("/")
    return parts[-2], parts[-1]


@dataclass(slots=True)
class _Gathered:
    samples: list[Usage] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    #: The newest archived ``(value, where it was read)``; a None value is known to be unset.
    request: tuple[int | None, str] | None = None
    limit: tuple[int | None, str] | None = None


_Place = Callable[[str, str, str], tuple[str, str] | None]
"""``(cluster, namespace, pod) -> (kind, name)`` of the pod's workload, None when not wanted."""


def _when(at: datetime | None) -> str:
    return "" if at is None else " at " + at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recommend_from_archive(
    archive: Source,
    *,
    cluster: str | None = None,
    namespace: str | None = None,
    workload: tuple[str, str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    settings: policy.Settings | None = None,
    current: Mapping[Key, Resources] | None = None,
    view: ClusterView | None = None,
) -> list[Recommendation]:
    """A recommendation per workload container the archive holds samples of (in the window,
    the namespace, the ``(kind, name)`` workload when given), sorted by namespace, workload and
    container. ``current`` overrides the archive's knowledge of the specs (see the module);
    ``view`` (a snapshot's or a live scan's) places the pods the archive knows no owner of,
    and gives ``current`` when it is not passed."""
    named = workload[1] if workload is not None else None
    stream = usage.container_samples(
        archive, cluster=cluster, namespace=namespace, since=since, until=until, named=named
    )
    first = next(stream, None)
    if first is None:
        return []  # nothing to size: the owners, kills and specs need not be read
    owners = usage.pod_owners(archive, cluster=cluster, namespace=namespace, named=named)
    by_view = None if view is None else placing.placer(view)
    if view is not None and current is None:
        current = placing.from_view(view)
    gathered: dict[tuple[str, str, str, str, str], _Gathered] = defaultdict(_Gathered)
    placed: dict[tuple[str, str, str], tuple[str, str]] = {}

    def place(cluster_name: str, ns: str, pod: str) -> tuple[str, str] | None:
        key = (cluster_name, ns, pod)
        found = placed.get(key)
        if found is None:
            found = placed[key] = workload_of(ns, pod, owners.get(key), by_view=by_view)
        if workload is None or (found[0].lower(), found[1]) == (workload[0].lower(), workload[1]):
            return found
        return None

    for sample in itertools.chain((first,), stream):
        where = place(sample.cluster, sample.namespace, sample.pod)
        if where is None:
            continue
        gathered[(sample.cluster, sample.namespace, *where, sample.container)].samples.append(
            Usage(sample.pod, sample.at, sample.cpu_millicores, sample.memory_bytes)
        )
    if not gathered:
        return []
    _add_kills(
        archive,
        gathered,
        place,
        cluster=cluster,
        namespace=namespace,
        since=since,
        until=until,
        named=named,
    )
    _add_specs(archive, gathered, place, cluster=cluster, namespace=namespace, named=named)
    found: list[Recommendation] = []
    for (cluster_name, ns, kind, name, container), seen in sorted(
        gathered.items(), key=lambda item: item[0]
    ):
        if not seen.samples:
            continue  # a kill of a container without samples in the window: nothing to size
        spec = (current or {}).get((ns, kind, name, container)) or _archived_spec(seen)
        found.append(
            policy.recommend(
                Workload(ns, kind, name, container, cluster=cluster_name),
                seen.samples,
                kills=seen.kills,
                current=spec,
                settings=settings,
            )
        )
    return found


def _add_kills(
    archive: Source,
    gathered: dict[tuple[str, str, str, str, str], _Gathered],
    place: _Place,
    *,
    cluster: str | None,
    namespace: str | None,
    since: datetime | None,
    until: datetime | None,
    named: str | None,
) -> None:
    found = queries.oom_report(
        archive, cluster=cluster, namespace=namespace, since=since, until=until, named=named
    )
    for entry in found:
        if entry.kind == "eviction" and entry.resource != "memory":
            continue
        where = place(entry.cluster, entry.namespace, entry.pod)
        if where is None:
            continue
        if entry.kind == "oom-kill":
            kill = Kill(KillKind.OOM_KILL, entry.pod, entry.time, limit=entry.limit)
            gathered[(entry.cluster, entry.namespace, *where, entry.container)].kills.append(kill)
            continue
        # An eviction is the pod's: every container of it that has samples counts it; the
        # message's usage is the named container's only.
        for key, seen in gathered.items():
            if key[:4] == (entry.cluster, entry.namespace, *where):
                this_one = key[4] == entry.container
                seen.kills.append(
                    Kill(
                        KillKind.EVICTION,
                        entry.pod,
                        entry.time,
                        usage=entry.usage if this_one else None,
                    )
                )


def _add_specs(
    archive: Source,
    gathered: dict[tuple[str, str, str, str, str], _Gathered],
    place: _Place,
    *,
    cluster: str | None,
    namespace: str | None,
    named: str | None,
) -> None:
    for spec in usage.memory_specs(archive, cluster=cluster, namespace=namespace, named=named):
        where = place(spec.cluster, spec.namespace, spec.pod)
        if where is None:
            continue
        seen = gathered.get((spec.cluster, spec.namespace, *where, spec.container))
        if seen is None:
            continue
        text = f"archive ({spec.source} of pod {spec.pod}{_when(spec.at)})"
        if spec.source == "termination":  # the container's spec then: None is unset
            seen.request, seen.limit = (spec.request, text), (spec.limit, text)
        elif spec.request is not None:  # an eviction message names the request only
            seen.request = (spec.request, text)


def _archived_spec(seen: _Gathered) -> Resources | None:
    if seen.request is None and seen.limit is None:
        return None
    texts = [part[1] for part in (seen.request, seen.limit) if part is not None]
    sources = sorted(set(texts))
    return Resources(
        memory_request=seen.request[0] if seen.request is not None else None,
        memory_limit=seen.limit[0] if seen.limit is not None else None,
        source="; ".join(sources) + "; CPU not archived",
    )
