"""An in-process API client for the simulator's components.

Components write through the same registries an HTTP request reaches (decoding, admission,
defaulting, strategies, validation, managedFields, storage, watch events), without the HTTP round
trip: a 2,000-node cluster's heartbeats would otherwise cost more than the cluster itself. Each
client carries the field manager name its real counterpart uses, so ``managedFields`` reads as on
a real cluster (``kube-scheduler``, ``kubelet``, ``kube-controller-manager``, ``manager`` for
Cluster API controllers).

Errors are :class:`~kubemedic.sim.machinery.errors.StatusError`, exactly what an HTTP client would
receive as a ``Status``: a 409 on a stale ``resourceVersion``, a 404 for a missing object, a 422 for
an invalid one. Objects returned are the stored ones: treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import orjson

from kubemedic.sim.apiserver.registry import subresources
from kubemedic.sim.apiserver.registry.writing import DeleteOptions, WriteOptions
from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.objects import Key, Obj

__all__ = ["Client", "PatchType"]

PatchType = Literal["strategic", "merge", "json", "apply"]

_CONTENT_TYPES: dict[str, str] = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


class Client:
    """Writes and reads as one field manager."""

    def __init__(self, server: ApiServer, manager: str) -> None:
        self.server = server
        self.manager = manager

    def resource(self, api_version: str, kind: str) -> Resource:
        res = self.server.registry.for_kind(api_version, kind)
        if res is None:
            raise errors.bad_request(f"no kind {kind!r} is registered for version {api_version!r}")
        return res

    def _options(self, *, force: bool = False) -> WriteOptions:
        return WriteOptions(manager=self.manager, force=force)

    # reading -----------------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        res = self.resource(api_version, kind)
        entry = self.server.store.get(res.store_key, (namespace if res.namespaced else "", name))
        return entry.obj if entry is not None else None

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        res = self.resource(api_version, kind)
        return [e.obj for _, e in self.server.store.scan(res.store_key, namespace=namespace)]

    # writing -----------------------------------------------------------------------------------

    def create(self, body: Mapping[str, Any]) -> Obj:
        """Create ``body`` (its apiVersion/kind choose the resource, metadata.namespace the
        namespace; ``default`` when a namespaced object names none)."""
        res = self.resource(str(body.get("apiVersion", "")), str(body.get("kind", "")))
        namespace = str((body.get("metadata") or {}).get("namespace") or "default")
        return self.server.writer.create(
            res, namespace if res.namespaced else "", dict(body), self._options()
        )

    def update(self, body: Mapping[str, Any], *, subresource: str = "") -> Obj:
        """PUT: replace the object (or its status); a ``metadata.resourceVersion`` in the body
        makes it a compare-and-swap (409 when stale)."""
        res = self.resource(str(body.get("apiVersion", "")), str(body.get("kind", "")))
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace") or "") if res.namespaced else "", str(meta.get("name")))
        return self.server.writer.update(
            res, key, dict(body), self._options(), subresource=subresource
        )

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        *,
        namespace: str = "",
        patch_type: PatchType = "strategic",
        subresource: str = "",
        force: bool = False,
    ) -> Obj:
        res = self.resource(api_version, kind)
        key = (namespace if res.namespaced else "", name)
        return self.server.writer.patch(
            res,
            key,
            orjson.dumps(patch),
            self._options(force=force),
            content_type=_CONTENT_TYPES[patch_type],
            subresource=subresource,
        )

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        *,
        namespace: str = "",
        grace_seconds: int | None = None,
        propagation: str | None = None,
        uid: str | None = None,
    ) -> bool:
        """Delete (or start deleting); returns whether the object is gone. A missing object is
        not an error here (controllers delete idempotently)."""
        res = self.resource(api_version, kind)
        key = (namespace if res.namespaced else "", name)
        if self.server.store.get(res.store_key, key) is None:
            return True
        options = DeleteOptions(propagation=propagation, grace_seconds=grace_seconds, uid=uid)
        _, gone = self.server.writer.delete(res, key, options)
        return gone

    def scale(self, api_version: str, kind: str, name: str, namespace: str, replicas: int) -> Obj:
        """PUT the scale subresource with ``spec.replicas`` set, as ``kubectl scale`` does."""
        res = self.resource(api_version, kind)
        key = (namespace if res.namespaced else "", name)
        scale = subresources.scale_of(res, self.server.writer.existing(res, key).obj)
        scale["spec"]["replicas"] = replicas
        return subresources.write_scale(self.server.writer, res, key, scale, self._options())

    def publish_computed(
        self, store: str, objects: Mapping[Key, Obj], *, drop: Iterable[Key] = ()
    ) -> None:
        """Serve ``objects`` on reads of ``store`` without watch events, as an aggregated API
        (metrics.k8s.io) serves what it computes; ``drop`` are keys no longer served."""
        self.server.store.put_computed(store, objects, drop=drop)

    def before_read(self, store: str, hook: Callable[[], None]) -> None:
        """Have ``hook`` run before each get or list of ``store``: an aggregated API computes
        what it serves when someone reads it."""
        self.server.read_hooks[store] = hook

    def bind(self, namespace: str, name: str, node: str) -> None:
        """POST pods/binding, as the scheduler binds a pod to a node."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        subresources.bind(
            self.server.writer, self.server.registry, (namespace, name), body, self._options()
        )

    def evict(self, namespace: str, name: str, *, grace_seconds: int | None = None) -> None:
        """POST pods/eviction (PDBs respected: a 429 StatusError when one forbids it)."""
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_seconds}
        subresources.evict(
            self.server.writer, self.server.registry, (namespace, name), body, dry_run=False
        )
