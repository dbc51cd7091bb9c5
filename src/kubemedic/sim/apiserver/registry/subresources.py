"""Eviction, binding and scale: the subresources that do more than write a field.

* ``POST pods/<name>/eviction`` is how ``kubectl drain`` and node repair remove pods without
  breaking budgets. As the real registry (pkg/registry/core/pod/storage/eviction.go): a pod that
  is not running or not ready is deleted without consulting budgets; a pod covered by more than
  one PodDisruptionBudget is refused (500); a budget with no disruption left answers
  ``429 TooManyRequests`` ("Cannot evict pod as it would violate the pod's disruption budget.",
  cause ``DisruptionBudget``), which drain retries every five seconds. An allowed eviction
  records the pod in the budget's ``disruptedPods`` and spends one disruption before deleting,
  so two concurrent evictions cannot both take the last one.
* ``POST pods/<name>/binding`` is the scheduler's write: it sets ``spec.nodeName`` once.
* ``scale`` reads and writes ``spec.replicas`` through an ``autoscaling/v1`` ``Scale``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.sim.apiserver.registry.collecting import budget_status, pod_is_healthy
from kubemedic.sim.apiserver.registry.writing import DeleteOptions, WriteOptions, Writer
from kubemedic.sim.machinery import errors, selecting
from kubemedic.sim.machinery.apiresources import Registry, Resource
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Key, Obj, clone

_PDB_STORE = "poddisruptionbudgets.policy"
_EVICTION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."


def evict(
    writer: Writer, registry: Registry, key: Key, body: Mapping[str, Any], *, dry_run: bool
) -> Obj:
    """Evict one pod; returns the ``Status`` the real server answers (201 Success)."""
    pods = registry.lookup("", "v1", "pods")
    assert pods is not None
    entry = writer.existing(pods, key)
    pod = entry.obj
    name = (body.get("metadata") or {}).get("name")
    if name and name != key[1]:
        raise errors.bad_request(
            f"name in URL does not match name in Eviction object: {key[1]}, {name}"
        )
    delete_options = body.get("deleteOptions") or {}
    options = DeleteOptions(
        grace_seconds=delete_options.get("gracePeriodSeconds"),
        uid=(delete_options.get("preconditions") or {}).get("uid"),
        resource_version=(delete_options.get("preconditions") or {}).get("resourceVersion"),
        dry_run=dry_run or bool(delete_options.get("dryRun")),
    )
    if pod["metadata"].get("deletionTimestamp"):
        # Already terminating: nothing to spend, the deletion just proceeds.
        writer.delete(pods, key, options)
        return _success()
    phase = pod.get("status", {}).get("phase")
    if phase in ("Succeeded", "Failed", "Pending") or not pod_is_healthy(pod):
        writer.delete(pods, key, options)
        return _success()
    budgets = _budgets_for(writer, pod)
    if len(budgets) > 1:
        # The registry answers a bare Status (code 500, no reason), not an InternalError.
        raise errors.StatusError(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support.",
        )
    if budgets:
        pdb_key, pdb = budgets[0]
        _spend_disruption(writer, registry, pdb_key, pdb, pod_name=key[1], dry_run=options.dry_run)
    writer.delete(pods, key, options)
    return _success()


def _success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _budgets_for(writer: Writer, pod: Mapping[str, Any]) -> list[tuple[Key, Obj]]:
    namespace = pod["metadata"].get("namespace", "")
    labels = pod["metadata"].get("labels") or {}
    found = []
    for key, entry in writer.store.scan(_PDB_STORE, namespace=namespace):
        selector_obj = (entry.obj.get("spec") or {}).get("selector")
        if selector_obj is None:
            continue  # policy/v1: a nil selector matches no pods
        if selecting.LabelSelector.from_object(selector_obj).matches(labels):
            found.append((key, entry.obj))
    return found


def _spend_disruption(
    writer: Writer,
    registry: Registry,
    pdb_key: Key,
    pdb: Obj,
    *,
    pod_name: str,
    dry_run: bool,
) -> None:
    namespace = pdb_key[0]
    pods = [e.obj for _, e in writer.store.scan("pods", namespace=namespace)]
    status = budget_status(pdb, pods, now=writer.clock.now())
    generation = pdb["metadata"].get("generation", 1)
    name = pdb_key[1]
    observed = (pdb.get("status") or {}).get("observedGeneration")
    if observed != generation:
        raise errors.too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            retry_after=10,
            causes=[
                errors.Cause(
                    "DisruptionBudget",
                    f"The disruption budget {name} is still being processed by the server.",
                )
            ],
        )
    if status["disruptionsAllowed"] <= 0:
        raise errors.too_many_requests(
            _EVICTION_MESSAGE,
            retry_after=0,
            causes=[
                errors.Cause(
                    "DisruptionBudget",
                    f"The disruption budget {name} needs {status['desiredHealthy']} healthy pods "
                    f"and has {status['currentHealthy']} currently",
                )
            ],
        )
    if dry_run:
        return
    new = clone(pdb)
    status["disruptionsAllowed"] -= 1
    if status["disruptionsAllowed"] == 0:
        # pdbhelper.UpdateDisruptionAllowedCondition: the last disruption spent flips it now.
        status["conditions"] = [
            {**c, "status": "False", "reason": "InsufficientPods", "message": "",
             "lastTransitionTime": rfc3339(writer.clock.now())}
            if c.get("type") == "DisruptionAllowed" and c.get("status") == "True" else c
            for c in status.get("conditions") or []
        ]  # fmt: skip
    status.setdefault("disruptedPods", {})[pod_name] = rfc3339(writer.clock.now())
    new["status"] = status
    res = registry.lookup("policy", "v1", "poddisruptionbudgets")
    assert res is not None
    writer.update(res, pdb_key, new, WriteOptions(manager="kube-apiserver"), subresource="status")


def bind(
    writer: Writer, registry: Registry, key: Key, body: Mapping[str, Any], opts: WriteOptions
) -> Obj:
    """Set ``spec.nodeName`` of an unbound pod (the scheduler's binding)."""
    pods = registry.lookup("", "v1", "pods")
    assert pods is not None
    entry = writer.existing(pods, key)
    target = body.get("target") or {}
    node = target.get("name")
    if not node:
        raise errors.invalid(
            "Binding", key[1], [errors.Cause("FieldValueRequired", "Required value", "target.name")]
        )
    current = entry.obj.get("spec", {}).get("nodeName")
    if current:
        raise errors.conflict(
            "pods/binding", key[1], f'pod {key[1]} is already assigned to node "{current}"'
        )
    if entry.obj["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            "pods/binding", key[1], f"pod {key[1]} is being deleted, cannot be assigned to a host"
        )
    new = clone(entry.obj)
    new["spec"]["nodeName"] = node
    conditions = [
        c
        for c in new.setdefault("status", {}).get("conditions") or []
        if c.get("type") != "PodScheduled"
    ]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(writer.clock.now()),
        }
    )
    new["status"]["conditions"] = conditions
    # The binding registry writes spec and status together, bypassing the update strategy.
    writer.store.put(pods.store_key, key, new, event="MODIFIED")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def scale_of(res: Resource, obj: Mapping[str, Any]) -> Obj:
    """The ``autoscaling/v1`` Scale view of a workload."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    selector = status.get("selector") if res.custom else None
    if selector is None:
        sel = spec.get("selector") or {}
        if res.kind == "ReplicationController":  # a plain label map, not a LabelSelector
            selector = str(selecting.LabelSelector.from_set(sel))
        else:
            selector = str(selecting.LabelSelector.from_object(sel)) if sel else ""
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": {"replicas": int(spec.get("replicas", 0))},
        "status": {"replicas": int(status.get("replicas", 0)), "selector": selector},
    }


def write_scale(
    writer: Writer, res: Resource, key: Key, scale: Mapping[str, Any], opts: WriteOptions
) -> Obj:
    entry = writer.existing(res, key)
    given_rv = str((scale.get("metadata") or {}).get("resourceVersion") or "")
    if given_rv and given_rv != str(entry.rv):
        raise errors.stale_resource_version(res.plural, key[1], group=res.group)
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.invalid(
            "Scale",
            key[1],
            [
                errors.Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "spec.replicas",
                )
            ],
            group="autoscaling",
        )
    new = clone(entry.obj)
    new.setdefault("spec", {})["replicas"] = replicas
    stored = writer.update(res, key, new, opts, subresource="scale")
    return scale_of(res, stored)
