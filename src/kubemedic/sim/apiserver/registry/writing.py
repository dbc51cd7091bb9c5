"""Create, update, patch and delete as the real API server's registries do them.

A write goes through the same stages as in kube-apiserver: decode (strict or lenient field
validation), admission (default tolerations for pods), defaulting, the resource's strategy
(status is reset on create and kept on spec updates; the status subresource writes only status;
generation moves on spec changes only), validation (422 with field causes), the optimistic
concurrency check (a stale ``resourceVersion`` is a 409), field-ownership tracking
(managedFields), and finally storage. A write that changes nothing is not stored (no new
resourceVersion, no watch event), as the real server skips no-op updates.

Deletion follows the real rules too: objects with finalizers, and foreground or orphan
propagation, get a ``deletionTimestamp`` and stay until their finalizers are gone; pods bound to
a node are deleted gracefully (the kubelet has ``terminationGracePeriodSeconds`` to confirm);
other objects go at once, and their dependents are collected
(:mod:`kubemedic.sim.apiserver.registry.collecting`).
"""

from __future__ import annotations

import random
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kubemedic.sim.apiserver.fields import applying, fieldmanaging
from kubemedic.sim.apiserver.patches import patching
from kubemedic.sim.apiserver.registry import admitting, decoding, defaulting, validating
from kubemedic.sim.apiserver.registry.webhooking import admit
from kubemedic.sim.apiserver.registry.webhooking import options as webhook_options
from kubemedic.sim.apiserver.storage import Entry, Store
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.clock import VirtualClock, rfc3339
from kubemedic.sim.machinery.definitions import Definitions, SchemaNode
from kubemedic.sim.machinery.naming import random_suffix
from kubemedic.sim.machinery.objects import Key, Obj, clone

#: Kinds whose strategies keep ``metadata.generation`` (bumped when the spec changes).
_GENERATION_KINDS = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "PodDisruptionBudget", "Job",
     "CronJob", "ReplicationController", "PriorityClass"}
)  # fmt: skip
#: Kinds whose DELETE answers with the deleted object rather than a ``Status``.
_RETURNS_DELETED = frozenset({"Pod", "Service", "Namespace", "Node", "Event"})

_FOREGROUND = "foregroundDeletion"
_ORPHAN = "orphan"

_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+json": "apply",
}


@dataclass
class WriteOptions:
    """What the request said besides the body (query parameters and headers)."""

    manager: str
    dry_run: bool = False
    field_validation: str = "Warn"
    raw: bytes | None = None
    force: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DeleteOptions:
    propagation: str | None = None
    grace_seconds: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)


def _generation_changed(res: Resource, old: Obj, new: Obj) -> bool:
    """Whether an update bumps ``metadata.generation``: a change of ``spec`` for built-in kinds
    and custom resources with the status subresource; of anything but ``metadata`` for a
    custom resource without it (apiextensions-apiserver's strategy, e.g. Argo CD's
    Applications, whose status writes raise the generation too)."""
    if res.custom and res.subresource("status") is None:
        return any(new.get(k) != old.get(k) for k in {*new, *old} - {"metadata"})
    return (res.kind in _GENERATION_KINDS or res.custom) and new.get("spec") != old.get("spec")


class Writer:
    """The write half of the emulator's registries."""

    def __init__(self, store: Store, clock: VirtualClock, defs: Definitions) -> None:
        self.store = store
        self.clock = clock
        self.defs = defs
        self._ip_index = 0
        self._now: tuple[float, str] = (float("nan"), "")
        #: Whether a pod's graceful deletion completes by itself when its grace period ends
        #: (the stand-in for a kubelet; the simulator's kubelets turn it off).
        self.stand_in_kubelet = True
        #: Where uids and generated names come from; None means the system's randomness. A
        #: simulation sets a seeded source so its runs repeat exactly.
        self.ids: random.Random | None = None

    # helpers -----------------------------------------------------------------------------

    def uid(self) -> str:
        """A new object's uid: random, or from :attr:`ids` when a simulation seeds it."""
        if self.ids is None:
            return str(uuid.uuid4())
        return str(uuid.UUID(int=self.ids.getrandbits(128), version=4))

    def suffix(self) -> str:
        """The five characters ``generateName`` appends (``rand.String(5)``'s alphabet)."""
        if self.ids is None:
            return random_suffix(secrets.SystemRandom())
        return random_suffix(self.ids)

    def now(self) -> str:
        """The clock's time in RFC 3339 (whole seconds: one formatting per second)."""
        moment = self.clock.now()
        second = moment.timestamp() // 1
        if second != self._now[0]:
            self._now = (second, rfc3339(moment))
        return self._now[1]

    def schema(self, res: Resource) -> SchemaNode | None:
        if res.custom:
            return None
        return self.defs.for_kind(res.group, res.version, res.kind)

    def existing(self, res: Resource, key: Key) -> Entry:
        entry = self.store.get(res.store_key, key)
        if entry is None:
            raise errors.not_found(res.plural, key[1], group=res.group)
        return entry

    def _decode(
        self, res: Resource, body: Any, opts: WriteOptions, *, stored_managed: object = None
    ) -> Obj:
        """The body as the decoder leaves it (a copy). ``stored_managed``: the stored object's
        managedFields list, kept by identity (not copied) if the body still holds it."""
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the body of the request was not a {res.kind} object: got {type(body).__name__}"
            )
        obj: Obj = decoding.copy_keeping(body, stored_managed)
        schema = self.schema(res)
        if schema is not None and decoding.is_clean(
            obj, schema, raw=opts.raw if opts.field_validation != "Ignore" else None
        ):
            return obj
        obj = decoding.decoded(body)  # pruning below changes the copy in place, the kept list too
        if opts.field_validation != "Ignore":
            problems = decoding.unknown_fields(obj, schema, raw=opts.raw)
            if problems and opts.field_validation == "Strict":
                raise decoding.strict_error(problems, kind=res.kind, version=res.version)
            opts.warnings.extend(problems)
        decoding.prune_unknown(obj, schema)
        undecodable = decoding.decoding_error(obj, schema, kind=res.kind, version=res.version)
        if undecodable is not None:
            raise undecodable
        return obj

    def _check_type(self, res: Resource, obj: Obj) -> None:
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise errors.bad_request(
                f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                f"json: cannot unmarshal {decoding.json_type(meta)} into Go struct field "
                f"{res.kind}.metadata of type v1.ObjectMeta"
            )
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if kind not in (None, "", res.kind) or api_version not in (None, "", res.api_version):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({res.api_version})"
                if api_version not in (None, "", res.api_version)
                else f"the kind in the data ({kind}) does not match the expected kind ({res.kind})"
            )
        obj["kind"] = res.kind
        obj["apiVersion"] = res.api_version

    def _validate(self, res: Resource, obj: Obj, old: Obj | None) -> None:
        causes = validating.validate(
            obj, old=old, group=res.group, version=res.version, kind=res.kind,
            namespaced=res.namespaced,
        )  # fmt: skip
        if causes:
            name = str(obj.get("metadata", {}).get("name") or "")
            raise errors.invalid(res.kind, name, causes, group=res.group)

    def _webhooks(
        self, res: Resource, operation: str, key: Key, *, obj: Obj, old: Obj | None,
        opts: WriteOptions, kind: str, subresource: str = "",
    ) -> None:  # fmt: skip
        """The validating admission webhooks (:mod:`.webhooking`); warnings into ``opts``."""
        opts.warnings.extend(admit(
            self.store, res, operation, key, obj=obj, old=old, dry_run=opts.dry_run,
            request_options=webhook_options(kind, manager=opts.manager, dry_run=opts.dry_run),
            subresource=subresource,
        ))  # fmt: skip

    def _require_namespace(self, res: Resource, namespace: str, name: str = "") -> None:
        if not res.namespaced:
            return
        ns = self.store.get("namespaces", ("", namespace))
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if ns.obj["metadata"].get("deletionTimestamp"):
            # The NamespaceLifecycle admission plugin's refusal, naming the object.
            refusal = errors.forbidden(
                res.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                group=res.group,
            )
            refusal.causes = (
                errors.Cause(
                    "NamespaceTerminating",
                    f"namespace {namespace} is being terminated",
                    "metadata.namespace",
                ),
            )
            raise refusal

    # create ------------------------------------------------------------------------------

    def create(self, res: Resource, namespace: str, body: Any, opts: WriteOptions) -> Obj:
        obj = self._decode(res, body, opts)
        self._check_type(res, obj)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            given = meta.get("namespace")
            if given and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        requested = (namespace if res.namespaced else "", str(meta.get("name") or ""))
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = str(meta["generateName"]) + self.suffix()
        self._require_namespace(res, namespace, str(meta.get("name") or ""))
        self._prepare_create(res, obj)
        self._validate(res, obj, None)
        key = (namespace if res.namespaced else "", str(meta.get("name", "")))
        if self.store.get(res.store_key, key) is not None:
            raise errors.already_exists(res.plural, key[1], group=res.group)
        fieldmanaging.track_update(
            old=None, new=obj, manager=opts.manager, time=self.now(),
            api_version=res.api_version, schema=self.schema(res),
        )  # fmt: skip
        self._admit_unowned(res, obj)
        self._webhooks(res, "CREATE", requested, obj=obj, old=None, opts=opts, kind="CreateOptions")
        if opts.dry_run:
            return obj
        return self.store.put(res.store_key, key, obj, event="ADDED").obj

    def _admit_unowned(self, res: Resource, obj: Obj) -> None:
        """Admission that runs after the field manager has recorded the request (so what it adds
        belongs to no manager, as on a real server): ``TaintNodesByCondition``."""
        if res.kind == "Node" and not res.group:
            admitting.admit_node(obj)

    def _prepare_create(self, res: Resource, obj: Obj) -> None:
        """Server-set metadata, admission, defaulting and the create strategy."""
        meta = obj["metadata"]
        for server_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(server_field, None)
        meta["uid"] = self.uid()
        meta["creationTimestamp"] = self.now()
        meta.pop("resourceVersion", None)
        if res.kind in _GENERATION_KINDS or res.custom:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if not res.custom:
            defaulting.default_object(obj, group=res.group, version=res.version, kind=res.kind)
            if res.kind == "Pod" and not res.group:
                admitting.admit_pod(obj, priority_classes=self._priority_classes())

            admitting.prepare_for_create(obj, group=res.group, version=res.version, kind=res.kind)
        if res.kind == "Service" and not res.group:
            spec = obj.setdefault("spec", {})
            if spec.get("type", "ClusterIP") != "ExternalName" and not spec.get("clusterIP"):
                self._ip_index += 1
                ip = admitting.allocate_cluster_ip(self._ip_index)
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]

    def _priority_classes(self) -> dict[str, Obj]:
        """The stored PriorityClasses by name."""
        found = self.store.scan("priorityclasses.scheduling.k8s.io")
        return {key[1]: entry.obj for key, entry in found}

    # update ------------------------------------------------------------------------------

    def update(
        self, res: Resource, key: Key, body: Any, opts: WriteOptions, *, subresource: str = ""
    ) -> Obj:
        obj = self._decode(res, body, opts)
        self._check_type(res, obj)
        entry = self.existing(res, key)
        given_rv = str(obj.get("metadata", {}).get("resourceVersion") or "")
        if given_rv and given_rv != str(entry.rv):
            raise errors.stale_resource_version(res.plural, key[1], group=res.group)
        return self._replace(res, key, entry, obj, opts, subresource=subresource)

    def _replace(
        self,
        res: Resource,
        key: Key,
        entry: Entry,
        obj: Obj,
        opts: WriteOptions,
        *,
        subresource: str,
        apply_managed: bool = False,
    ) -> Obj:
        old = entry.obj
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        if name and name != key[1]:
            raise errors.bad_request(
                f"the name of the object ({name}) does not match the name on the URL ({key[1]})"
            )
        namespace = meta.get("namespace")
        if res.namespaced and namespace and namespace != key[0]:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        new = self._strategy_update(res, old, obj, subresource=subresource)
        if not res.custom and not subresource:
            admitting.prepare_for_update(
                new, old, group=res.group, version=res.version, kind=res.kind
            )
            defaulting.default_object(new, group=res.group, version=res.version, kind=res.kind)
        self._validate(res, new, old)
        if not apply_managed:
            fieldmanaging.track_update(
                old=old, new=new, manager=opts.manager, subresource=subresource,
                time=self.now(), api_version=res.api_version, schema=self.schema(res),
            )  # fmt: skip
        self._webhooks(
            res, "UPDATE", key, obj=new, old=old, opts=opts, kind="UpdateOptions",
            subresource=subresource,
        )  # fmt: skip
        return self._commit(res, key, old, new, dry_run=opts.dry_run)

    def _strategy_update(self, res: Resource, old: Obj, obj: Obj, *, subresource: str) -> Obj:
        """What the resource's update strategy keeps from the old object."""
        old_meta = old.get("metadata", {})
        if subresource == "status":
            new: Obj = clone(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            # Status writers may move labels and annotations as well (the kubelet does not,
            # but controllers patch conditions together with annotations).
            for part in ("labels", "annotations"):
                if part in obj.get("metadata", {}):
                    new["metadata"][part] = obj["metadata"][part]
            return new
        new = obj
        meta = new["metadata"]
        for fixed in ("uid", "creationTimestamp", "name", "namespace", "generation"):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        for server_field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if server_field in old_meta:
                meta[server_field] = old_meta[server_field]
            else:
                meta.pop(server_field, None)
        if "managedFields" not in meta and "managedFields" in old_meta:
            meta["managedFields"] = old_meta["managedFields"]
        if res.subresource("status") is not None:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        if _generation_changed(res, old, new):
            meta["generation"] = int(old_meta.get("generation", 0)) + 1
        return new

    def _commit(self, res: Resource, key: Key, old: Obj, new: Obj, *, dry_run: bool) -> Obj:
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"].get("resourceVersion")
        if new == old:
            return old
        if dry_run:
            return new
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not int(meta.get("deletionGracePeriodSeconds") or 0)
        ):
            # The last finalizer gone and no grace period pending: the store deletes it.
            gone = self.store.remove(res.store_key, key)
            return gone if gone is not None else new
        return self.store.put(res.store_key, key, new, event="MODIFIED").obj

    # patch -------------------------------------------------------------------------------

    def patch(
        self,
        res: Resource,
        key: Key,
        body: bytes,
        opts: WriteOptions,
        *,
        content_type: str,
        subresource: str = "",
    ) -> Obj:
        kind = _PATCH_TYPES.get(content_type.split(";", maxsplit=1)[0].strip())
        if kind is None:
            raise errors.unsupported_media_type(content_type)
        if kind == "apply":
            return self.apply(res, key, body, opts, subresource=subresource)
        entry = self.existing(res, key)
        patch = decoding.load_json(body)
        schema = self.schema(res)
        current = entry.obj  # the patch engines never change their inputs
        try:
            if kind == "json":
                patched = patching.json_patch(current, patch)
            elif kind == "merge":
                patched = patching.merge_patch(current, patch)
            else:
                if not patching.strategic_supported(schema) or res.custom:
                    raise errors.unsupported_media_type(content_type)
                patched = patching.strategic_merge_patch(current, patch, schema)
        except patching.PatchError as exc:
            raise exc.to_api_error() from exc
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch did not produce an object")
        opts.raw = None
        stored_managed = entry.obj.get("metadata", {}).get("managedFields")
        obj = self._decode(res, patched, opts, stored_managed=stored_managed)
        self._check_type(res, obj)
        given_rv = str(obj.get("metadata", {}).get("resourceVersion") or "")
        if given_rv and given_rv != str(entry.rv):
            raise errors.stale_resource_version(res.plural, key[1], group=res.group)
        return self._replace(res, key, entry, obj, opts, subresource=subresource)

    def apply(
        self, res: Resource, key: Key, body: bytes, opts: WriteOptions, *, subresource: str = ""
    ) -> Obj:
        """Server-side apply: merge the applied configuration, track ownership, create if new."""
        applied = decoding.load_yaml_or_json(body)
        if not isinstance(applied, dict):
            raise errors.bad_request("the applied configuration must be an object")
        applied = self._decode(res, applied, opts)
        for required in ("apiVersion", "kind"):
            if not applied.get(required):
                raise errors.bad_request(f"{required} must be set in an applied configuration")
        self._check_type(res, applied)
        entry = self.store.get(res.store_key, key)
        schema = self.schema(res)
        if entry is None:
            if subresource:
                raise errors.not_found(res.plural, key[1], group=res.group)
            merged = applying.apply(
                live=None, applied=applied, manager=opts.manager, force=opts.force,
                time=self.now(), api_version=res.api_version, schema=schema,
            )  # fmt: skip
            meta = merged.setdefault("metadata", {})
            meta["name"] = key[1]
            if res.namespaced:
                meta["namespace"] = key[0]
            self._require_namespace(res, key[0], key[1])
            managed = meta.get("managedFields")
            self._prepare_create(res, merged)
            if managed is not None:
                merged["metadata"]["managedFields"] = managed
            self._admit_unowned(res, merged)
            self._validate(res, merged, None)
            self._webhooks(
                res, "CREATE", key, obj=merged, old=None, opts=opts, kind="CreateOptions"
            )
            if opts.dry_run:
                return merged
            return self.store.put(res.store_key, key, merged, event="ADDED").obj
        live = entry.obj
        merged = applying.apply(
            live=live, applied=applied, manager=opts.manager, force=opts.force,
            subresource=subresource, time=self.now(), api_version=res.api_version, schema=schema,
        )  # fmt: skip
        given_rv = str(applied.get("metadata", {}).get("resourceVersion") or "")
        if given_rv and given_rv != str(entry.rv):
            raise errors.stale_resource_version(res.plural, key[1], group=res.group)
        return self._replace(
            res, key, entry, merged, opts, subresource=subresource, apply_managed=True
        )

    # delete ------------------------------------------------------------------------------

    def delete(self, res: Resource, key: Key, options: DeleteOptions) -> tuple[Obj, bool]:
        """Delete or start deleting; returns the object and whether it is gone already."""
        entry = self.existing(res, key)
        obj = entry.obj
        meta = obj.get("metadata", {})
        if options.uid is not None and options.uid != meta.get("uid"):
            raise errors.conflict(
                res.plural,
                key[1],
                f"Precondition failed: UID in precondition: {options.uid}, UID in object meta: "
                f"{meta.get('uid')}",
                group=res.group,
            )
        if options.resource_version is not None and options.resource_version != str(entry.rv):
            raise errors.conflict(
                res.plural,
                key[1],
                "Precondition failed: ResourceVersion in precondition: "
                f"{options.resource_version}, ResourceVersion in object meta: {entry.rv}",
                group=res.group,
            )
        options.warnings.extend(admit(
            self.store, res, "DELETE", key, obj=None, old=obj, dry_run=options.dry_run,
            request_options=webhook_options(
                "DeleteOptions", dry_run=options.dry_run, gracePeriodSeconds=options.grace_seconds,
                propagationPolicy=options.propagation,
            ),
        ))  # fmt: skip
        new = clone(obj)
        new_meta = new["metadata"]
        finalizers: list[str] = list(new_meta.get("finalizers") or [])
        propagation = options.propagation or ("Background")
        if propagation == "Foreground" and _FOREGROUND not in finalizers:
            finalizers.append(_FOREGROUND)
        if propagation == "Orphan" and _ORPHAN not in finalizers:
            finalizers.append(_ORPHAN)
        if res.kind == "Namespace" and not res.group:
            # The namespace controller empties a namespace before it goes.
            new_meta.setdefault("deletionTimestamp", self.now())
            new_meta["deletionGracePeriodSeconds"] = 0
            new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
            new_meta["finalizers"] = finalizers or None
            if not finalizers:
                new_meta.pop("finalizers")
            return self._store_deleting(res, key, obj, new, options)
        grace = self._grace_seconds(res, obj, options)
        if finalizers or grace > 0:
            if grace > 0 and (
                not new_meta.get("deletionTimestamp")
                or int(new_meta.get("deletionGracePeriodSeconds") or 0) > grace
            ):
                when = self.clock.now() + timedelta(seconds=grace)
                new_meta["deletionTimestamp"] = rfc3339(when)
                new_meta["deletionGracePeriodSeconds"] = grace
            else:
                new_meta.setdefault("deletionTimestamp", self.now())
                new_meta.setdefault("deletionGracePeriodSeconds", 0)
            if finalizers:
                new_meta["finalizers"] = finalizers
            return self._store_deleting(res, key, obj, new, options)
        if options.dry_run:
            return obj, True
        gone = self.store.remove(res.store_key, key)
        assert gone is not None
        return gone, True

    def _store_deleting(
        self, res: Resource, key: Key, old: Obj, new: Obj, options: DeleteOptions
    ) -> tuple[Obj, bool]:
        if options.dry_run or new == old:
            return new, False
        return self.store.put(res.store_key, key, new, event="MODIFIED").obj, False

    def _grace_seconds(self, res: Resource, obj: Obj, options: DeleteOptions) -> int:
        """Only pods bound to a node and not finished are deleted gracefully."""
        if res.kind != "Pod" or res.group:
            return 0
        spec = obj.get("spec", {})
        phase = obj.get("status", {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if options.grace_seconds is not None:
            return max(0, options.grace_seconds)
        return int(spec.get("terminationGracePeriodSeconds", 30))

    def finish_deletion(self, res: Resource, key: Key) -> None:
        """Remove an object whose deletion is due (grace over, finalizers gone)."""
        self.store.remove(res.store_key, key)
