"""The drift of storming owners against their desired state in Git, for the breaker's rounds.

The owner's GitOps source is found in the cluster (Argo CD ``Application`` and Flux
``Kustomization`` objects: :func:`kubemedic.drift.checking.discover_sources`), the source read
from Git (:func:`kubemedic.drift.sources.load`) and the owner alone diffed against a fresh
``GET`` of it (:func:`kubemedic.drift.checking.check`), so the revert's ``resourceVersion`` is
the object's as it is now. A source is read once per revision: a commit SHA (what Argo CD's
``status.sync.revision`` gives) is kept as long as the Application points at it, a branch or tag
for :data:`REFRESH` of cluster time. The GitOps objects themselves are listed at most once per
:data:`REFRESH` too, and only while some owner needs its drift.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from kubemedic.drift import checking, sources
from kubemedic.drift.engine import ObjectDrift
from kubemedic.drift.rules import DriftRules
from kubemedic.errors import KubemedicError
from kubemedic.kube.api import Api, ApiError, ConnectionLost
from kubemedic.kube.discovery import Discovery, discover
from kubemedic.model.objects import ObjectRef

__all__ = ["REFRESH", "DesiredStates"]

log = logging.getLogger("kubemedic.breaker")

REFRESH = timedelta(minutes=1)
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def _gitops_ref(owner: ObjectRef) -> sources.ObjectRef:
    return sources.ObjectRef(
        owner.api_version.rpartition("/")[0], owner.kind, owner.namespace or "", owner.name
    )


class DesiredStates:
    """Finds and caches desired states; :meth:`drifts` is what a round asks."""

    def __init__(self, api: Api, *, rules: DriftRules | None = None) -> None:
        self.api = api
        self.rules = rules
        self.loads = 0  # sources read from Git (for tests and logs)
        self._discovery: Discovery | None = None
        self._managed: list[sources.Managed] = []
        self._managed_at: datetime | None = None
        self._sets: dict[sources.Source, tuple[sources.DesiredSet, datetime]] = {}

    async def drifts(
        self, owners: Iterable[ObjectRef], live: Mapping[str, Mapping[str, Any]], *, now: datetime
    ) -> dict[ObjectRef, ObjectDrift | None]:
        """Each owner's drift against Git (None: no source declares it, or it could not be
        read). ``live`` maps an owner's ``str`` to its cached body (for the tracking label)."""
        wanted = list(dict.fromkeys(owners))
        if not wanted:
            return {}
        try:
            await self._refresh(now)
        except (ApiError, ConnectionLost) as error:
            log.warning("cannot list the GitOps sources: %s", error)
            return dict.fromkeys(wanted)
        out: dict[ObjectRef, ObjectDrift | None] = {}
        for owner in wanted:
            try:
                out[owner] = await self._drift(owner, live.get(str(owner)), now)
            except (KubemedicError, OSError) as error:
                log.warning("%s: no desired state: %s", owner, error)
                out[owner] = None
        return out

    async def _refresh(self, now: datetime) -> None:
        if self._managed_at is not None and now - self._managed_at < REFRESH:
            return
        if self._discovery is None:
            self._discovery = await discover(self.api)
        self._managed = await checking.discover_sources(self.api, discovery=self._discovery)
        self._managed_at = now

    def _owner(self, owner: ObjectRef, body: Mapping[str, Any] | None) -> sources.Managed | None:
        ref = _gitops_ref(owner)
        for managed in self._managed:
            if ref in managed.objects and managed.in_cluster:
                return managed
        if body is not None:
            found = sources.owner_of(body, self._managed)
            if found is not None and found.in_cluster:
                return found
        return None

    async def _set(self, source: sources.Source, now: datetime) -> sources.DesiredSet:
        cached = self._sets.get(source)
        pinned = bool(source.revision and _SHA.match(source.revision))
        if cached is not None and (pinned or now - cached[1] < REFRESH):
            return cached[0]
        loaded = await asyncio.to_thread(sources.load, source, skip_malformed=True)
        self.loads += 1
        # Keep only the sources still named (an Application moved to a new commit).
        named = {s for m in self._managed for s in m.sources}
        self._sets = {s: v for s, v in self._sets.items() if s in named}
        self._sets[source] = (loaded, now)
        return loaded

    async def _drift(
        self, owner: ObjectRef, body: Mapping[str, Any] | None, now: datetime
    ) -> ObjectDrift | None:
        managed = self._owner(owner, body)
        if managed is None:
            return None
        ref = _gitops_ref(owner)
        for source in managed.sources:
            desired = await self._set(source, now)
            placed = source.target_namespace
            mine = tuple(
                item
                for item in desired.objects
                if item.ref.in_namespace(placed or item.namespace or source.namespace or "default")
                == ref
            )
            if not mine:
                continue
            one = sources.DesiredSet(source=source, commit=desired.commit, objects=mine[:1])
            report = await checking.check(self.api, [one], self.rules, discovery=self._discovery)
            for result, _ in report.drifts:
                return result
        return None
