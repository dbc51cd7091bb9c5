"""What the real API server refuses in a pod: the pod spec rules, and what a pod update may change.

``ValidatePodSpec`` (:func:`pod_spec`) holds for pods and for the pod templates of workloads
alike: unique volume and container names, images, ports, mounts of declared volumes, pull
policies, resource requests not above limits, one handler per probe, tolerations. A pod update
(``ValidatePodUpdate``) may change little: container images, ``activeDeadlineSeconds`` (only
down), tolerations (only additions, or their ``tolerationSeconds``) and a negative
``terminationGracePeriodSeconds`` to 1; anything else is ``Forbidden`` with a diff of the spec.
The stored spec is compared as the real server reads it back, defaulted
(:func:`defaulted_spec`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.apiserver.registry import defaulting
from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.errors import Cause

__all__ = ["EFFECTS", "PROTOCOLS", "RULES", "defaulted_spec", "pod_spec"]

PROTOCOLS = ("SCTP", "TCP", "UDP")
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_MAX_INT32 = 2147483647
_EMPTY_KEY_OPERATOR = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)


#: Results of the pure checks below by the JSON of their input: a write that leaves a spec as it
#: was (a label patch, a status update) is not validated again from scratch.
_MEMO: dict[tuple[str, bytes], Any] = {}
_MEMO_LIMIT = 4096


def _memo_key(what: str, value: Any) -> tuple[str, bytes] | None:
    try:
        key = (what, orjson.dumps(value))
    except TypeError:
        return None
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    return key


def pod_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidatePodSpec`` of the pod spec at ``path`` (``spec``, ``spec.template.spec``)."""
    key = _memo_key(f"pod_spec {path}", spec)
    known = _MEMO.get(key) if key is not None else None
    if known is None:
        known = tuple(_pod_spec(spec, path))
        if key is not None:
            _MEMO[key] = known
    return list(known)


def _pod_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    volumes: set[str] = set()
    for index, volume in naming.dicts(spec.get("volumes")):
        where = f"{path}.volumes[{index}].name"
        name = str(volume.get("name") or "")
        if not name:
            causes.append(naming.required(where))
        else:
            causes += naming.names(where, name, naming.dns1123_label(name))
        if name in volumes:
            causes.append(naming.duplicate(where, name))
        volumes.add(name)
    containers = naming.as_list(spec.get("containers"))
    if not containers:
        causes.append(naming.required(f"{path}.containers"))
    seen: set[str] = set()
    for part in ("containers", "initContainers"):
        for index, container in naming.dicts(spec.get(part)):
            where = f"{path}.{part}[{index}]"
            causes += _container(container, where, volumes, probes=part == "containers")
            name = str(container.get("name") or "")
            if name in seen:
                causes.append(naming.duplicate(f"{where}.name", name))
            seen.add(name)
    causes += naming.choice(spec, "restartPolicy", path, ("Always", "OnFailure", "Never"))
    causes += naming.choice(
        spec, "dnsPolicy", path, ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
    )
    causes += naming.labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for part in ("serviceAccountName", "nodeName", "priorityClassName"):
        if spec.get(part):
            causes += naming.names(
                f"{path}.{part}", str(spec[part]), naming.dns1123_subdomain(str(spec[part]))
            )
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= _MAX_INT32:
        causes.append(
            naming.invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                f"must be between 1 and {_MAX_INT32}, inclusive",
            )
        )
    for part in ("hostname", "subdomain"):
        if spec.get(part):
            causes += naming.names(
                f"{path}.{part}", str(spec[part]), naming.dns1123_label(str(spec[part]))
            )
    return causes + _tolerations(spec.get("tolerations"), f"{path}.tolerations")


def _container(
    container: Mapping[str, Any], path: str, volumes: set[str], *, probes: bool
) -> list[Cause]:
    causes: list[Cause] = []
    name = str(container.get("name") or "")
    if not name:
        causes.append(naming.required(f"{path}.name"))
    else:
        causes += naming.names(f"{path}.name", name, naming.dns1123_label(name))
    if not container.get("image"):
        causes.append(naming.required(f"{path}.image"))
    port_names: set[str] = set()
    for index, port in naming.dicts(container.get("ports")):
        where = f"{path}.ports[{index}]"
        port_name = str(port.get("name") or "")
        if port_name and naming.port_name(port_name):
            causes += naming.names(f"{where}.name", port_name, naming.port_name(port_name))
        elif port_name in port_names:
            causes.append(naming.duplicate(f"{where}.name", port_name))
        elif port_name:
            port_names.add(port_name)
        if not port.get("containerPort"):
            causes.append(naming.required(f"{where}.containerPort"))
        else:
            causes += [
                naming.invalid(f"{where}.containerPort", port["containerPort"], m)
                for m in naming.port_number(port["containerPort"])
            ]
        if port.get("hostPort"):
            causes += [
                naming.invalid(f"{where}.hostPort", port["hostPort"], m)
                for m in naming.port_number(port["hostPort"])
            ]
        causes += naming.choice(port, "protocol", where, PROTOCOLS)
    mount_paths: set[str] = set()
    for index, mount in naming.dicts(container.get("volumeMounts")):
        where = f"{path}.volumeMounts[{index}]"
        mount_name = str(mount.get("name") or "")
        if not mount_name:
            causes.append(naming.required(f"{where}.name"))
        if mount_name not in volumes:
            causes.append(
                Cause("FieldValueNotFound", f"Not found: {naming.go(mount_name)}", f"{where}.name")
            )
        mount_path = str(mount.get("mountPath") or "")
        if not mount_path:
            causes.append(naming.required(f"{where}.mountPath"))
        if mount_path in mount_paths:
            causes.append(naming.invalid(f"{where}.mountPath", mount_path, "must be unique"))
        mount_paths.add(mount_path)
    policy = container.get("imagePullPolicy")
    if not policy:
        causes.append(naming.required(f"{path}.imagePullPolicy"))
    elif policy not in ("Always", "IfNotPresent", "Never"):
        causes.append(
            naming.unsupported(
                f"{path}.imagePullPolicy", policy, ("Always", "IfNotPresent", "Never")
            )
        )
    causes += _resources(naming.as_map(container.get("resources")), f"{path}.resources")
    if probes:
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if isinstance(container.get(probe), Mapping):
                causes += _probe(
                    container[probe], f"{path}.{probe}", once=probe != "readinessProbe"
                )
    return causes


def _resources(resources: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    parsed: dict[str, dict[str, Any]] = {"limits": {}, "requests": {}}
    for part in ("limits", "requests"):
        values = naming.as_map(resources.get(part))
        for name in sorted(values):
            where = f"{path}.{part}[{name}]"
            standard = name in ("cpu", "memory", "ephemeral-storage") or name.startswith(
                "hugepages-"
            )
            if "/" not in name and not standard:
                causes.append(
                    naming.invalid(where, name, "must be a standard resource for containers")
                )
            try:
                quantity = parse_quantity(values[name])
            except QuantityError:
                continue  # the decoder has refused it already
            if quantity.value < 0:
                causes.append(naming.invalid(where, quantity.canonical(), naming.NEGATIVE))
            parsed[part][name] = quantity
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request.value > limit.value:
            causes.append(
                naming.invalid(
                    f"{path}.requests", request.canonical(),
                    f"must be less than or equal to {name} limit of {limit.canonical()}",
                )
            )  # fmt: skip
    return causes


def _probe(probe: Mapping[str, Any], path: str, *, once: bool) -> list[Cause]:
    handlers = [h for h in _HANDLERS if probe.get(h) is not None]
    causes: list[Cause] = []
    if not handlers:
        causes.append(naming.required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        causes.append(
            naming.forbidden(f"{path}.{extra}", "may not specify more than 1 handler type")
        )
    for part in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        value = probe.get(part)
        if isinstance(value, int) and value < 0:
            causes.append(naming.invalid(f"{path}.{part}", value, naming.NEGATIVE))
    if once and probe.get("successThreshold", 1) != 1:
        causes.append(
            naming.invalid(f"{path}.successThreshold", probe["successThreshold"], "must be 1")
        )
    return causes


def _tolerations(tolerations: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, toleration in naming.dicts(tolerations):
        where = f"{path}[{index}]"
        key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
        value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
        if key:
            causes += naming.names(f"{where}.key", key, naming.qualified_name(key))
        if not key and operator != "Exists":
            causes.append(
                naming.invalid(
                    f"{where}.operator",
                    operator,
                    _EMPTY_KEY_OPERATOR,
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                naming.invalid(
                    f"{where}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", "") and naming.label_value(value):
            causes.append(
                naming.invalid(f"{where}.operator", value, ";".join(naming.label_value(value)))
            )
        elif operator == "Exists" and value:
            seconds = "nil" if toleration.get("tolerationSeconds") is None else "0xc000012345"
            shown = (
                f"core.Toleration{{Key:{naming.go(key)}, Operator:{naming.go(operator)}, "
                f"Value:{naming.go(value)}, Effect:{naming.go(effect)}, "
                f"TolerationSeconds:(*int64)({seconds})}}"
            )
            causes.append(
                naming.invalid(
                    f"{where}.operator",
                    None,
                    "value must be empty when `operator` is 'Exists'",
                    shown=shown,
                )
            )
        elif operator not in ("Equal", "Exists", ""):
            causes.append(naming.unsupported(f"{where}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in EFFECTS:
            causes.append(naming.unsupported(f"{where}.effect", effect, EFFECTS))
    return causes


def defaulted_spec(old: Mapping[str, Any], *, group: str, kind: str) -> Mapping[str, Any]:
    """The stored spec as the real server reads it: defaulted when decoded from storage, so an
    object loaded without its defaults does not look changed by an update that has them.
    Callers must not change what they are given (it is remembered for the next write)."""
    key = _memo_key(f"defaulted {group}/{kind}", old.get("spec"))
    known = _MEMO.get(key) if key is not None else None
    if known is None:
        known = _defaulted_spec(old, group=group, kind=kind)
        if key is not None:
            _MEMO[key] = known
    spec: Mapping[str, Any] = known
    return spec


def _defaulted_spec(old: Mapping[str, Any], *, group: str, kind: str) -> Mapping[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps({"spec": old.get("spec")}))
    defaulting.default_object(copied, group=group, version="v1", kind=kind)
    return naming.as_map(copied.get("spec"))


def _pod(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes = pod_spec(spec, "spec")
    if old is None:
        return causes
    key = _memo_key("pod update", (spec, old.get("spec")))
    known = _MEMO.get(key) if key is not None else None
    if known is None:
        known = tuple(_pod_update(spec, old))
        if key is not None:
            _MEMO[key] = known
    return causes + list(known)


def _pod_update(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodUpdate`` beyond the spec rules (a pure function of both specs)."""
    causes: list[Cause] = []
    old_spec = defaulted_spec(old, group="", kind="Pod")
    for part in ("containers", "initContainers"):
        new_list, old_list = naming.as_list(spec.get(part)), naming.as_list(old_spec.get(part))
        if len(new_list) != len(old_list):
            causes.append(
                naming.forbidden(f"spec.{part}", "pod updates may not add or remove containers")
            )
            return causes
        for index, container in naming.dicts(new_list):
            image = str(container.get("image") or "")
            if image != image.strip():
                causes.append(
                    naming.invalid(
                        f"spec.{part}[{index}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    deadline, old_deadline = (
        spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    if deadline is not None and old_deadline is not None and deadline > old_deadline:
        causes.append(
            naming.invalid(
                "spec.activeDeadlineSeconds",
                deadline,
                "must be less than or equal to previous value",
            )
        )
        return causes
    if deadline is None and old_deadline is not None:
        causes.append(
            naming.invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    new_tolerations = [t for _, t in naming.dicts(spec.get("tolerations"))]
    for _, kept in naming.dicts(old_spec.get("tolerations")):
        plain = {k: v for k, v in kept.items() if k != "tolerationSeconds"}
        if not any(
            {k: v for k, v in t.items() if k != "tolerationSeconds"} == plain
            for t in new_tolerations
        ):
            causes.append(
                naming.forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
            break
    munged = dict(spec)
    for part in ("containers", "initContainers"):
        munged[part] = [
            {**c, "image": o.get("image")}
            if isinstance(c, Mapping) and isinstance(o, Mapping)
            else c
            for c, o in zip(
                naming.as_list(spec.get(part)), naming.as_list(old_spec.get(part)), strict=True
            )
        ]
        if part not in spec:
            munged.pop(part)
    for part in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged.pop(part, None)
        if part in old_spec:
            munged[part] = old_spec[part]
    grace, old_grace = (
        munged.get("terminationGracePeriodSeconds"),
        old_spec.get("terminationGracePeriodSeconds"),
    )
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != dict(old_spec):
        causes.append(naming.forbidden("spec", _POD_UPDATE + "\n" + _spec_diff(old_spec, munged)))
    return causes


_POD_UPDATE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)"
)


def _spec_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """A short rendering of what changed (the real server prints a ``cmp.Diff`` of Go structs)."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            title = key[:1].upper() + key[1:]
            if key in old:
                lines.append(f"- \t{title}: {json.dumps(old[key], sort_keys=True)},")
            if key in new:
                lines.append(f"+ \t{title}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines)


RULES: dict[tuple[str, str], naming.Rule] = {("", "Pod"): _pod}
