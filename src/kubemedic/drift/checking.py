"""Drift of a live cluster against its desired state: find the sources, fetch the live objects,
diff them.

- :func:`check` compares desired sets already loaded (``kubemedic drift --git``): each desired
  object's kind is looked up in the API server's discovery, its namespace resolved as the
  applier would (the manifest's own; else the source's ``target_namespace`` or ``namespace``,
  Flux's ``spec.targetNamespace`` and Argo CD's ``spec.destination.namespace``; else
  ``default``; none for a cluster-scoped kind), the live counterpart fetched (``GET``, at most
  :data:`CONCURRENCY` at once) and :func:`kubemedic.drift.diff_objects` run over them.
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

__all__ = ["CONCURRENCY", "DriftReport", "check", "discover_sources"]

CONCURRENCY = 16
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
    gate = asyncio.Semaphore(CONCURRENCY)
    out: dict[_Key, dict[str, Any] | None] = {}

    async def one(kind: Kind, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        key = (str(body.get("apiVersion") or ""), str(body.get("kind") or ""), namespace, name)
        async with gate:
            try:
                answer = await api.request("GET", kind.path(namespace or None, name))
            except NotFound:
                out[key] = None
                return
        out[key] = answer if isinstance(answer, dict) else None

    await asyncio.gather(*(one(kind, body) for kind, body in wanted))
    return out


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
        for item in items:  # a List's items carry no apiVersion and kind of their own
            objects.append({"apiVersion": kind.api_version, "kind": kind.kind, **item})
    return discover(objects)
