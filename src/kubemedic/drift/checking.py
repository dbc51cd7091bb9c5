"""Drift of a live cluster against its desired state: find the sources, fetch the live objects,
diff them.

- :func:`check` compares desired sets already loaded (``kubemedic drift --git``): each desired
  object's kind is looked up in the API server's discovery, its namespace resolved as the
  applier would (the manifest's own; else the source's ``target_namespace`` or ``namespace``,
  Flux's ``spec.targetNamespace`` and Argo CD's ``spec.destination.namespace``; else
  ``default``; none for a cluster-scoped kind), the live counterparts fetched (a kind with many
  wanted objects listed, the others read by ``GET``, :data:`CONCURRENCY` requests at once) and
  :func:`kubemedic.drift.diff_objects` run over them.
- :func:`discover_sources` lists the cluster's Argo CD ``Application``, Flux ``Kustomization``
  and ``GitRepository`` objects (the kinds that the server does not serve are skipped) and
  maps them to their sources (:func:`kubemedic.drift.sources.discover`), so ``kubemedic drift``
  without ``--git`` finds the sources itself.

A desired object whose kind the server does not serve (a CRD not installed) is reported in
:attr:`DriftReport.unserved` and not diffed; Secrets are never fetched (kubemedic never reads
Secrets): a desired Secret is listed in :attr:`DriftReport.not_compared` with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubemedic.drift.engine import ObjectDrift, diff_objects
from kubemedic.drift.rules import DriftRules
from kubemedic.drift.sources import DesiredObject, DesiredSet, Managed, discover
from kubemedic.kube.api import Api, ApiError, Kind, NotFound
from kubemedic.kube.discovery import Discovery
from kubemedic.kube.discovery import discover as discover_api

__all__ = ["CONCURRENCY", "LIST_FROM", "DriftReport", "check", "discover_sources"]

CONCURRENCY = 16
#: Wanted objects of one kind from which the kind is listed rather than read one by one.
LIST_FROM = 10
_Key = tuple[str, str, str, str]
_GITOPS_KINDS = (
    ("argoproj.io/v1alpha1", "Application"),
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
    ("source.toolkit.fluxcd.io/v1", "GitRepository"),
)


@dataclass
class DriftReport:
    """What :func:`check` found: per desired object its drift (with where Git declares it)."""

    drifts: list[tuple[ObjectDrift, DesiredObject]] = field(default_factory=list)
    unserved: list[DesiredObject] = field(default_factory=list)
    not_compared: list[tuple[DesiredObject, str]] = field(default_factory=list)

    @property
    def drifted(self) -> list[tuple[ObjectDrift, DesiredObject]]:
        return [(d, o) for d, o in self.drifts if d.drifted]


async def check(
    api: Api,
    sets: Sequence[DesiredSet],
    rules: DriftRules | None = None,
    *,
    discovery: Discovery | None = None,
) -> DriftReport:
    """Diff every object of ``sets`` against the cluster (see the module docstring)."""
    found = discovery or await discover_api(api)
    report = DriftReport()
    wanted: list[tuple[DesiredObject, Kind, dict[str, Any]]] = []
    for desired in sets:
        for item in desired.objects:
            kind = found.kind(item.api_version, item.kind)
            if kind is None:
                report.unserved.append(item)
                continue
            if kind.plural == "secrets" and not kind.group:
                report.not_compared.append((item, "a Secret: kubemedic never reads Secrets"))
                continue
            wanted.append((item, kind, _placed(item.body, kind, desired)))
    live = await _fetch(api, [(kind, body) for _, kind, body in wanted])

    def lookup(api_version: str, kind: str, namespace: str | None, name: str) -> Any:
        return live.get((api_version, kind, namespace or "", name))

    results = diff_objects([body for _, _, body in wanted], lookup, rules)
    report.drifts = [(result, item) for result, (item, _, _) in zip(results, wanted, strict=True)]
    return report


def _placed(body: dict[str, Any], kind: Kind, desired: DesiredSet) -> dict[str, Any]:
    """``body`` with the namespace the applier gives it (see the module docstring)."""
    meta = dict(body.get("metadata") or {})
    if not kind.namespaced:
        meta.pop("namespace", None)
    else:
        source = desired.source
        namespace = (
            source.target_namespace or meta.get("namespace") or source.namespace or "default"
        )
        meta["namespace"] = namespace
    return {**body, "metadata": meta}


async def _fetch(
    api: Api, wanted: Iterable[tuple[Kind, dict[str, Any]]]
) -> dict[_Key, dict[str, Any] | None]:
    """The live counterpart of each wanted object: a kind with at least :data:`LIST_FROM`
    wanted objects is listed (one namespace's list when they all share it, else the whole
    cluster's, paginated), the others are read one ``GET`` each, :data:`CONCURRENCY` at once."""
    groups: dict[Kind, list[dict[str, Any]]] = {}
    for kind, body in wanted:
        groups.setdefault(kind, []).append(body)
    gate = asyncio.Semaphore(CONCURRENCY)
    out: dict[_Key, dict[str, Any] | None] = {}

    async def one(kind: Kind, body: dict[str, Any]) -> None:
        key = _key(body)
        async with gate:
            try:
                answer = await api.request("GET", kind.path(key[2] or None, key[3]))
            except NotFound:
                out[key] = None
                return
        out[key] = answer if isinstance(answer, dict) else None

    async def listed(kind: Kind, bodies: list[dict[str, Any]]) -> None:
        namespaces = {_key(body)[2] for body in bodies}
        only = next(iter(namespaces)) if len(namespaces) == 1 and kind.namespaced else None
        async with gate:
            items = await api.list_all(kind, namespace=only)
        index = {
            (
                str((item.get("metadata") or {}).get("namespace") or ""),
                str((item.get("metadata") or {}).get("name") or ""),
            ): item
            for item in items
        }
        for body in bodies:
            key = _key(body)
            out[key] = index.get((key[2], key[3]))

    await asyncio.gather(
        *(
            listed(kind, bodies)
            if len(bodies) >= LIST_FROM
            else asyncio.gather(*(one(kind, body) for body in bodies))
            for kind, bodies in groups.items()
        )
    )
    return out


def _key(body: dict[str, Any]) -> _Key:
    meta = body.get("metadata") or {}
    return (
        str(body.get("apiVersion") or ""),
        str(body.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


async def discover_sources(api: Api, *, discovery: Discovery | None = None) -> list[Managed]:
    """The GitOps owners the cluster holds (Argo CD Applications, Flux Kustomizations)."""
    found = discovery or await discover_api(api)
    objects: list[dict[str, Any]] = []
    for api_version, kind_name in _GITOPS_KINDS:
        kind = found.kind(api_version, kind_name)
        if kind is None:
            continue
        try:
            items = await api.list_all(kind)
        except ApiError:
            continue
        objects.extend(items)  # list_all gives each item its apiVersion and kind
    return discover(objects)
