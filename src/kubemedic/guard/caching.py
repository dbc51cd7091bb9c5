"""What the guard knows of the cluster: Nodes and Pods, listed and watched.

kube-apiserver waits for the guard's answer (at most the configuration's ``timeoutSeconds``)
while the write waits too, so the guard never calls the API server while it judges: it answers
from two reflectors (:class:`kubemedic.kube.reflector.Reflector`: list, then watch from the
list's resourceVersion, relisting after a ``410``) over ``v1`` Nodes and Pods, whose compact
caches hold what the capacity rule reads, and an index of pod keys by ``spec.nodeName`` so a
review reads one node's pods, not the cluster's. Until both have listed once
(:attr:`ClusterCache.synced`), the capacity rule says nothing.

Permissions: ``list`` and ``watch`` of ``nodes`` and ``pods``, nothing else.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubemedic.kube.api import Api, Kind
from kubemedic.kube.compact import Key, key_of, key_text
from kubemedic.kube.kinds import NODES, PODS
from kubemedic.kube.reflector import Reflector
from kubemedic.model.objects import Body

__all__ = ["ClusterCache"]


class _NodeIndex:
    """The reflector's handler for pods: which pod keys are bound to which node."""

    def __init__(self) -> None:
        self.by_node: dict[str, set[Key]] = {}
        self._node_of: dict[Key, str] = {}

    def _put(self, body: dict[str, Any]) -> None:
        key = key_of(body)
        if key is None:
            return
        self._drop(key)
        spec = body.get("spec")
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        if isinstance(node, str) and node:
            self._node_of[key] = node
            self.by_node.setdefault(node, set()).add(key)

    def _drop(self, key: Key) -> None:
        node = self._node_of.pop(key, None)
        if node is not None:
            keys = self.by_node.get(node)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_node[node]

    async def replaced(
        self,
        kind: Kind,
        items: list[dict[str, Any]],
        deleted: list[dict[str, Any]],
        resource_version: str,
        /,
    ) -> None:
        self.by_node.clear()
        self._node_of.clear()
        for item in items:
            self._put(item)

    async def changed(
        self, kind: Kind, type_: str, obj: dict[str, Any], resource_version: str, /
    ) -> None:
        if type_ == "DELETED":
            key = key_of(obj)
            if key is not None:
                self._drop(key)
        else:
            self._put(obj)

    async def bookmark(self, kind: Kind, resource_version: str, /) -> None:
        return None


class ClusterCache:
    """Nodes and pods, kept by watching (a :class:`kubemedic.guard.policy.Knowledge`)."""

    def __init__(self, api: Api) -> None:
        self._index = _NodeIndex()
        self.nodes = Reflector(api, NODES)
        self.pods = Reflector(api, PODS, self._index)

    @property
    def synced(self) -> bool:
        return self.nodes.synced.is_set() and self.pods.synced.is_set()

    async def wait_synced(self) -> None:
        await self.nodes.synced.wait()
        await self.pods.synced.wait()

    def node(self, name: str) -> Body | None:
        return self.nodes.cache.get(name)

    def pods_on(self, name: str) -> list[Body]:
        cache = self.pods.cache
        texts = (key_text(key) for key in list(self._index.by_node.get(name, ())))
        return [cache[text] for text in texts if text in cache]

    async def run(self) -> None:
        """List and watch both until cancelled."""
        await asyncio.gather(self.nodes.run(), self.pods.run())
