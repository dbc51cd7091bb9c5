"""What the real API server refuses in Services, Namespaces, Nodes, ConfigMaps, Leases and Events.

A Service (``ValidateService``) needs ports with unique names and protocol/port pairs, a known
type, and cluster IPs that agree with ``clusterIP``; on update its allocated cluster IPs may not
change. A Namespace's ``spec.finalizers`` must be standard or qualified names; a Node's taints
unique by key and effect, and its ``podCIDRs`` and ``providerID`` set once. ConfigMap keys are
config keys and not in both ``data`` and ``binaryData``. A core Event must be in the namespace
of the object it is about (``default`` may hold events of cluster-scoped ones); an
``events.k8s.io`` Event also needs ``eventTime``, its reporting fields, ``action`` and
``reason``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubemedic.sim.apiserver.registry import validating_pods
from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.errors import Cause

__all__ = ["RULES"]

_CONFIG_KEY_MESSAGE = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


# -- services -----------------------------------------------------------------------------------


def _service(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    kind = spec.get("type")
    ips = [str(ip) for ip in naming.as_list(spec.get("clusterIPs"))] or (
        [str(spec["clusterIP"])] if spec.get("clusterIP") else []
    )
    headless = spec.get("clusterIP") == "None"
    causes: list[Cause] = []
    if old is not None:
        causes += _cluster_ips_update(spec, ips, naming.as_map(old.get("spec")))
    ports = list(naming.dicts(spec.get("ports")))
    if not ports and not headless and kind != "ExternalName":
        causes.append(naming.required("spec.ports"))
    if kind == "ExternalName":
        if ips:
            causes.append(
                naming.forbidden("spec.clusterIPs", "may not be set for ExternalName services")
            )
        name = str(spec.get("externalName") or "").removesuffix(".")
        if name:
            causes += naming.names("spec.externalName", name, naming.dns1123_subdomain(name))
        else:
            causes.append(naming.required("spec.externalName"))
    names: set[str] = set()
    for index, port in ports:
        where = f"spec.ports[{index}]"
        name = str(port.get("name") or "")
        if len(ports) > 1 and not name:
            causes.append(naming.required(f"{where}.name"))
        elif name:
            causes += naming.names(f"{where}.name", name, naming.dns1123_label(name))
            if name in names:
                causes.append(naming.duplicate(f"{where}.name", name))
            names.add(name)
        causes += [
            naming.invalid(f"{where}.port", port.get("port"), m)
            for m in naming.port_number(port.get("port"))
        ]
        causes += naming.choice(port, "protocol", where, validating_pods.PROTOCOLS)
        target = port.get("targetPort")
        if isinstance(target, str):
            causes += naming.names(f"{where}.targetPort", target, naming.port_name(target))
        elif target is not None:
            causes += [
                naming.invalid(f"{where}.targetPort", target, m) for m in naming.port_number(target)
            ]
    causes += naming.labels(spec.get("selector"), "spec.selector")
    causes += naming.choice(spec, "sessionAffinity", "spec", ("ClientIP", "None"))
    if not kind:
        causes.append(naming.required("spec.type"))
    elif kind not in ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"):
        causes.append(
            naming.unsupported(
                "spec.type", kind, ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
            )
        )
    seen: dict[tuple[Any, Any], int] = {}
    for index, port in ports:
        key = (port.get("protocol"), port.get("port"))
        if key in seen:
            shown = (
                f'core.ServicePort{{Name:"", Protocol:{naming.go(key[0] or "")}, '
                f"AppProtocol:(*string)(nil), Port:{key[1]}, "
                'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
            )
            causes.append(naming.duplicate(f"spec.ports[{index}]", None, shown=shown))
        seen[key] = index
    if kind != "ExternalName":
        causes += _cluster_ips(spec, ips)
    return causes


def _cluster_ips(spec: Mapping[str, Any], ips: list[str]) -> list[Cause]:
    causes: list[Cause] = []
    if spec.get("clusterIP") and ips and ips[0] != spec["clusterIP"]:
        causes.append(
            naming.invalid(
                "spec.clusterIPs",
                None,
                "first value must match `clusterIP`",
                shown=naming.go_strings(ips),
            )
        )
    elif not spec.get("clusterIP") and ips:
        causes.append(
            naming.invalid(
                "spec.clusterIPs",
                None,
                "must be empty when `clusterIP` is not specified",
                shown=naming.go_strings(ips),
            )
        )
    families = [str(f) for f in naming.as_list(spec.get("ipFamilies"))]
    for index, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            causes.append(naming.unsupported(f"spec.ipFamilies[{index}]", family, ("IPv4", "IPv6")))
        if family in families[:index]:
            causes.append(naming.duplicate(f"spec.ipFamilies[{index}]", family))
    policy = spec.get("ipFamilyPolicy")
    if policy and policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        causes.append(
            naming.unsupported(
                "spec.ipFamilyPolicy",
                policy,
                ("PreferDualStack", "RequireDualStack", "SingleStack"),
            )
        )
    for index, ip in enumerate(ips):
        if index == 0 and ip == "None":
            if len(ips) > 1:
                causes.append(
                    naming.invalid(
                        "spec.clusterIPs",
                        None,
                        "'None' must be the first and only value",
                        shown=naming.go_strings(ips),
                    )
                )
            continue
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            causes.append(
                naming.invalid(
                    f"spec.clusterIPs[{index}]",
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    return causes


def _cluster_ips_update(
    spec: Mapping[str, Any], ips: list[str], old: Mapping[str, Any]
) -> list[Cause]:
    if "ExternalName" in (spec.get("type"), old.get("type")):
        return []
    old_ips = [str(ip) for ip in naming.as_list(old.get("clusterIPs"))] or (
        [str(old["clusterIP"])] if old.get("clusterIP") else []
    )
    if spec.get("clusterIP") == "None" and old.get("clusterIP") == "None":
        return []
    shown = naming.go_strings(ips)
    if len(old_ips) == len(ips):
        return [
            naming.invalid(f"spec.clusterIPs[{i}]", None, "may not change once set", shown=shown)
            for i, ip in enumerate(old_ips)
            if ip != ips[i]
        ]
    if not ips:
        return [
            naming.invalid(
                "spec.clusterIPs[0]", None, "primary clusterIP can not be unset", shown=shown
            )
        ]
    if old_ips and old_ips[0] != ips[0]:
        return [naming.invalid("spec.clusterIPs[0]", None, "may not change once set", shown=shown)]
    return []


# -- other kinds --------------------------------------------------------------------------------


def _namespace(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    for finalizer in naming.as_list(naming.as_map(obj.get("spec")).get("finalizers")):
        causes += naming.names(
            "spec.finalizers", str(finalizer), naming.qualified_name(str(finalizer))
        )
        if "/" not in str(finalizer) and finalizer not in naming.STANDARD_FINALIZERS:
            causes.append(
                naming.invalid(
                    "spec.finalizers",
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def _node(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes: list[Cause] = []
    unique: set[tuple[str, str]] = set()
    for index, taint in naming.dicts(spec.get("taints")):
        where = f"spec.taints[{index}]"
        key, value, effect = (str(taint.get(k) or "") for k in ("key", "value", "effect"))
        causes += naming.names(f"{where}.key", key, naming.qualified_name(key))
        if naming.label_value(value):
            causes.append(
                naming.invalid(f"{where}.value", value, ";".join(naming.label_value(value)))
            )
        if not effect:
            causes.append(naming.required(f"{where}.effect"))
        elif effect not in validating_pods.EFFECTS:
            causes.append(naming.unsupported(f"{where}.effect", effect, validating_pods.EFFECTS))
        if (key, effect) in unique:
            shown = (
                f"core.Taint{{Key:{naming.go(key)}, Value:{naming.go(value)}, "
                f"Effect:{naming.go(effect)}, TimeAdded:(*v1.Time)(nil)}}"
            )
            causes.append(
                naming.duplicate(
                    where, None, shown=shown, detail="taints must be unique by key and effect pair"
                )
            )
        unique.add((key, effect))
    if old is not None:
        old_spec = naming.as_map(old.get("spec"))
        if old_spec.get("podCIDRs") and naming.as_list(spec.get("podCIDRs")) != naming.as_list(
            old_spec.get("podCIDRs")
        ):
            causes.append(
                naming.forbidden(
                    "spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'
                )
            )
        if old_spec.get("providerID") and spec.get("providerID") != old_spec["providerID"]:
            causes.append(
                naming.forbidden(
                    "spec.providerID",
                    'node updates may not change providerID except from "" to valid',
                )
            )
    return causes


def _lease(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes: list[Cause] = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if isinstance(duration, int) and duration <= 0:
        causes.append(
            naming.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    if isinstance(transitions, int) and transitions < 0:
        causes.append(naming.invalid("spec.leaseTransitions", transitions, naming.NEGATIVE))
    return causes


def _config_map(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    binary = naming.as_map(obj.get("binaryData"))
    for part in ("data", "binaryData"):
        for key in sorted(naming.as_map(obj.get(part))):
            where = f"{part}[{key}]"
            problems = [naming.max_len(253)] if len(key) > 253 else []
            if not naming.matches("[-._a-zA-Z0-9]+", key):
                problems.append(
                    naming.regex_error(
                        _CONFIG_KEY_MESSAGE,
                        "[-._a-zA-Z0-9]+",
                        "key.name",
                        "KEY_NAME",
                        "key-name",
                    )
                )
            if key in (".", ".."):
                problems.append(f"must not be '{key}'")
            elif key.startswith(".."):
                problems.append("must not start with '..'")
            causes += naming.names(where, key, problems)
            if part == "data" and key in binary:
                causes.append(naming.invalid(where, key, "duplicate of key present in binaryData"))
    return causes


def _event(obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, new_api: bool) -> list[Cause]:
    meta = naming.as_map(obj.get("metadata"))
    namespace = str(meta.get("namespace") or "")
    involved = naming.as_map(obj.get("regarding" if new_api else "involvedObject"))
    involved_ns = str(involved.get("namespace") or "")
    causes: list[Cause] = []
    if new_api:
        if not obj.get("eventTime"):
            causes.append(naming.required("eventTime"))
        if obj.get("type") not in ("Normal", "Warning"):
            causes.append(naming.invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
        for part in ("reportingController", "reportingInstance", "action", "reason"):
            if not obj.get(part):
                causes.append(naming.required(part))
        if involved_ns == "" and namespace not in ("default", "kube-system"):
            causes.append(
                naming.invalid(
                    "involvedObject.namespace", involved_ns, "does not match event.namespace"
                )
            )
    elif not obj.get("eventTime") and (
        (involved_ns == "" and namespace not in ("", "default"))
        or (involved_ns and involved_ns != namespace)
    ):
        causes.append(
            naming.invalid(
                "involvedObject.namespace", involved_ns, "does not match event.namespace"
            )
        )
    return causes


RULES: dict[tuple[str, str], naming.Rule] = {
    ("", "Service"): _service,
    ("", "Namespace"): _namespace,
    ("", "Node"): _node,
    ("", "ConfigMap"): _config_map,
    ("", "Event"): lambda obj, old: _event(obj, old, new_api=False),
    ("events.k8s.io", "Event"): lambda obj, old: _event(obj, old, new_api=True),
    ("coordination.k8s.io", "Lease"): _lease,
}
