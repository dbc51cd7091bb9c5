"""What the real API server fills in before it stores an object: defaults, admission, strategy.

A request body is never stored as sent. kube-apiserver 1.32 runs, in this order:

1. **Defaulting** (:func:`default_object`), on every create and update, in the request's
   version (``pkg/apis/<group>/v1/defaults.go`` and the generated ``zz_generated.defaults.go``
   that calls them for every nested type). This is why ``kubectl get -o yaml`` shows
   ``dnsPolicy: ClusterFirst`` nobody wrote, why ``imagePullPolicy`` depends on the image tag,
   and why a Service gets ``targetPort`` equal to ``port``. Pod templates inside workloads get
   the pod *spec* defaults but not the pod-only ones (``enableServiceLinks``, requests copied
   from limits): those run for ``Pod`` objects alone. Resource quantities are rounded up to
   milli-units and printed in canonical form (``0.5`` becomes ``500m``).
2. **Admission** (:func:`admit_pod`), on pod creation only: ``DefaultTolerationSeconds`` adds
   five-minute ``NoExecute`` tolerations for ``not-ready`` and ``unreachable`` nodes (that is
   the eviction delay of a dead node), ``Priority`` resolves ``priorityClassName`` into
   ``priority`` and ``preemptionPolicy``, and ``ServiceAccount`` names the ``default`` account.
3. **Strategy** (:func:`prepare_for_create`, :func:`prepare_for_update`): status starts over on
   create (a pod is ``Pending`` with its QoS class), a namespace gets the ``kubernetes``
   finalizer once (later writes keep the stored finalizers: only the namespace controller
   removes it, through ``/finalize``), and a Service keeps the cluster IPs and node ports it was
   allocated when an update omits them (``kubectl replace`` with the original manifest).
   Call :func:`prepare_for_update` before :func:`default_object` so IP families are adopted from
   the stored Service rather than defaulted afresh.

Cluster IPs come from the service CIDR ``10.96.0.0/12`` (:func:`allocate_cluster_ip`), node
ports from ``30000-32767`` (:func:`allocate_node_port`).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity
from kubemedic.sim import errors

__all__ = [
    "admit_pod",
    "allocate_cluster_ip",
    "allocate_node_port",
    "default_object",
    "prepare_for_create",
    "prepare_for_update",
    "qos_class",
]

Obj = dict[str, Any]

_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
_SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
_SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/12")
_NODE_PORTS = (30000, 32767)
_FILE_MODE = 420  # 0644: the default mode of configMap, secret, downwardAPI and projected files


# -- defaulting ---------------------------------------------------------------------------------


def default_object(obj: Obj, *, group: str, version: str, kind: str) -> None:
    """Apply, in place, the defaults kube-apiserver 1.32 sets on ``kind`` of ``group/version``.

    Kinds without defaults (ConfigMap, Lease, Event, PodDisruptionBudget, custom resources) are
    left untouched. Malformed parts (a string where a list belongs) are left for validation.
    """
    spec = obj.get("spec")
    if group == "" and version == "v1":
        if kind == "Pod":
            _default_pod(obj)
        elif kind == "PodTemplate":
            _default_template(obj.get("template"))
        elif kind == "Service" and isinstance(spec, dict):
            _default_service(obj, spec)
        elif kind == "Namespace":
            _default_namespace(obj)
        elif kind == "Node":
            _default_node(obj)
        elif kind == "Secret":
            obj.setdefault("type", "Opaque")
        elif kind == "PersistentVolumeClaim":
            _default_claim(obj)
    elif group == "apps" and version == "v1" and isinstance(spec, dict):
        _default_template(spec.get("template"))
        if kind == "Deployment":
            _default_deployment(spec)
        elif kind == "ReplicaSet":
            spec.setdefault("replicas", 1)
        elif kind == "StatefulSet":
            _default_statefulset(spec)
        elif kind == "DaemonSet":
            _default_daemonset(spec)


def _default_pod(pod: Obj) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    # SetDefaults_Pod: only real pods, not templates.
    for container in _dicts(spec, "containers", "initContainers"):
        resources = container.get("resources")
        if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
            if not resources["limits"]:
                continue
            requests = resources.get("requests")
            if not isinstance(requests, dict):
                requests = resources["requests"] = {}
            for name, value in resources["limits"].items():
                requests.setdefault(name, value)
    spec.setdefault("enableServiceLinks", True)
    if spec.get("hostNetwork"):
        for container in _dicts(spec, "containers", "initContainers"):
            for port in _dicts(container, "ports"):
                if not port.get("hostPort") and "containerPort" in port:
                    port["hostPort"] = port["containerPort"]
    _default_pod_spec(spec)
    _round_resources(spec, "overhead")


def _default_template(template: Any) -> None:
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        _default_pod_spec(template["spec"])


def _default_pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec and everything nested in a pod spec."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    # v1 conversion keeps the deprecated serviceAccount in step with serviceAccountName.
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:
        spec["serviceAccountName"] = spec["serviceAccount"] = account
    for volume in _dicts(spec, "volumes"):
        _default_volume(volume)
    for container in _dicts(spec, "containers", "initContainers", "ephemeralContainers"):
        _default_container(container)


def _default_volume(volume: Obj) -> None:
    sources = [key for key in volume if key != "name"]
    if not sources:
        volume["emptyDir"] = {}
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", _FILE_MODE)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")
    if isinstance(volume.get("downwardAPI"), dict):
        for item in _dicts(volume["downwardAPI"], "items"):
            _default_field_ref(item.get("fieldRef"))
    if isinstance(volume.get("projected"), dict):
        for projection in _dicts(volume["projected"], "sources"):
            if isinstance(projection.get("downwardAPI"), dict):
                for item in _dicts(projection["downwardAPI"], "items"):
                    _default_field_ref(item.get("fieldRef"))
            if isinstance(projection.get("serviceAccountToken"), dict):
                projection["serviceAccountToken"].setdefault("expirationSeconds", 3600)
    ephemeral = volume.get("ephemeral")
    if isinstance(ephemeral, dict) and isinstance(ephemeral.get("volumeClaimTemplate"), dict):
        _default_claim_spec(ephemeral["volumeClaimTemplate"].get("spec"))


def _default_container(container: Obj) -> None:
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = (
            "Always"
            if _image_tag(str(container.get("image") or "")) == "latest"
            else "IfNotPresent"
        )
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    for port in _dicts(container, "ports"):
        port.setdefault("protocol", "TCP")
    for env in _dicts(container, "env"):
        source = env.get("valueFrom")
        if isinstance(source, dict):
            _default_field_ref(source.get("fieldRef"))
    resources = container.get("resources")
    if isinstance(resources, dict):
        _round_resources(resources, "limits")
        _round_resources(resources, "requests")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(probe_name)
        if isinstance(probe, dict):
            for setting, value in (
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ):
                if not probe.get(setting):
                    probe[setting] = value
            _default_handler(probe)
            if isinstance(probe.get("grpc"), dict):
                probe["grpc"].setdefault("service", "")
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                _default_handler(lifecycle[hook])


def _default_handler(handler: Obj) -> None:
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        if not http_get.get("path"):
            http_get["path"] = "/"
        if not http_get.get("scheme"):
            http_get["scheme"] = "HTTP"


def _default_field_ref(ref: Any) -> None:
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _image_tag(image: str) -> str:
    """The tag the kubelet would pull: ``latest`` when neither tag nor digest is given.

    Mirrors ``parsers.ParseImageName``: a name the reference grammar rejects (upper case in the
    repository) has no tag at all, so it defaults to ``IfNotPresent``.
    """
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else ""
    repository = name[: len(name) - len(tag) - 1] if tag else name
    if not repository or repository != repository.lower() or " " in image:
        return ""
    return tag or ("" if digest else "latest")


def _round_resources(holder: Obj, key: str) -> None:
    """SetDefaults_ResourceList: round each quantity up to milli-units, print it canonically."""
    values = holder.get(key)
    if not isinstance(values, dict):
        return
    for name, raw in values.items():
        try:
            quantity = parse_quantity(raw)
        except QuantityError:
            continue  # rejected when the body is decoded
        milli = quantity.value * 1000
        rounded = Fraction(math.ceil(milli) if milli >= 0 else math.floor(milli), 1000)
        values[name] = Quantity(rounded, quantity.format).canonical()


def _default_deployment(spec: Obj) -> None:
    spec.setdefault("replicas", 1)
    strategy = spec.get("strategy")
    if not isinstance(strategy, dict):
        strategy = spec["strategy"] = {}
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = strategy["rollingUpdate"] = {}
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def _default_daemonset(spec: Obj) -> None:
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = strategy["rollingUpdate"] = {}
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)


def _default_statefulset(spec: Obj) -> None:
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("serviceName", "")  # no omitempty in 1.32: always printed
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if not isinstance(strategy.get("rollingUpdate"), dict):
            strategy["rollingUpdate"] = {}
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
        rolling.setdefault("partition", 0)
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if not isinstance(retention, dict):
        retention = spec["persistentVolumeClaimRetentionPolicy"] = {}
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    for claim in _dicts(spec, "volumeClaimTemplates"):
        _default_claim(claim)


def _default_claim(claim: Obj) -> None:
    status = claim.get("status")
    if not isinstance(status, dict):
        status = claim["status"] = {}
    status.setdefault("phase", "Pending")
    _default_claim_spec(claim.get("spec"))


def _default_claim_spec(spec: Any) -> None:
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")


def _default_service(service: Obj, spec: Obj) -> None:
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client_ip = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    kind = spec.setdefault("type", "ClusterIP")
    for port in _dicts(spec, "ports"):
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, "") and "port" in port:
            port["targetPort"] = port["port"]
    externally = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )
    if externally:
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
        status = service.get("status")
        balancer = status.get("loadBalancer") if isinstance(status, dict) else None
        for ingress in _dicts(balancer or {}, "ingress"):
            if ingress.get("ip"):
                ingress.setdefault("ipMode", "VIP")
    if kind == "ExternalName":
        return
    # The v1 conversion fills clusterIPs from clusterIP; the allocator infers IP families.
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    headless_selectorless = spec.get("clusterIP") == "None" and not spec.get("selector")
    if not spec.get("ipFamilyPolicy"):
        spec["ipFamilyPolicy"] = "RequireDualStack" if headless_selectorless else "SingleStack"
    families = list(spec.get("ipFamilies") or [])
    for index, ip in enumerate(spec.get("clusterIPs") or []):
        if ip == "None" or index < len(families):
            continue
        families.append("IPv6" if ":" in str(ip) else "IPv4")
    if not families:
        families = ["IPv4"]
    if headless_selectorless and spec["ipFamilyPolicy"] != "SingleStack" and len(families) < 2:
        families.append("IPv6" if families[0] == "IPv4" else "IPv4")
    spec["ipFamilies"] = families


def _default_namespace(namespace: Obj) -> None:
    meta = namespace.get("metadata")
    if isinstance(meta, dict) and meta.get("name"):
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels["kubernetes.io/metadata.name"] = meta["name"]
    status = namespace.get("status")
    if not isinstance(status, dict):
        status = namespace["status"] = {}
    if not status.get("phase"):
        status["phase"] = "Active"


def _default_node(node: Obj) -> None:
    status = node.get("status")
    if not isinstance(status, dict):
        status = node["status"] = {}
    # Neither struct is omitempty-able in Go: a node always shows them, empty strings included
    # (clients such as lightkube require every nodeInfo field).
    info = status.get("nodeInfo")
    if not isinstance(info, dict):
        info = status["nodeInfo"] = {}
    for key in _NODE_INFO:
        info.setdefault(key, "")
    if not isinstance(status.get("daemonEndpoints"), dict):
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 0}}
    if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])
    _round_resources(status, "capacity")
    _round_resources(status, "allocatable")


_NODE_INFO = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


def _dicts(holder: Mapping[str, Any], *keys: str) -> Iterator[Obj]:
    for key in keys:
        items = holder.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))


# -- admission ----------------------------------------------------------------------------------


def admit_pod(pod: Obj, *, priority_classes: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Run the mutating admission plugins a default kube-apiserver applies to a new pod.

    ``priority_classes`` maps PriorityClass names to their objects (the built-in
    ``system-node-critical`` and ``system-cluster-critical`` need not be given). Raises the
    ``Forbidden`` the ``Priority`` plugin answers for an unknown class or a mismatched
    ``priority``. The ``ServiceAccount`` plugin's token volume is not added.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    name = str(pod.get("metadata", {}).get("name") or "")
    _default_toleration_seconds(spec)
    _admit_priority(spec, name, priority_classes or {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account


def _default_toleration_seconds(spec: Obj) -> None:
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    for key in (_NOT_READY, _UNREACHABLE):
        covered = any(
            isinstance(t, dict)
            and t.get("key", "") in (key, "")
            and t.get("effect", "") in ("NoExecute", "")
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations


def _admit_priority(spec: Obj, pod_name: str, classes: Mapping[str, Mapping[str, Any]]) -> None:
    class_name = spec.get("priorityClassName") or ""
    preemption = "PreemptLowerPriority"
    if not class_name:
        default = next((c for c in classes.values() if c.get("globalDefault")), None)
        if default is None:
            priority = 0
        else:
            class_name = str(default.get("metadata", {}).get("name", ""))
            priority = int(default.get("value", 0))
            preemption = str(default.get("preemptionPolicy") or preemption)
            spec["priorityClassName"] = class_name
    elif class_name in classes:
        found = classes[class_name]
        priority = int(found.get("value", 0))
        preemption = str(found.get("preemptionPolicy") or preemption)
    elif class_name in _SYSTEM_PRIORITY_CLASSES:
        priority = _SYSTEM_PRIORITY_CLASSES[class_name]
    else:
        raise errors.forbidden(
            "pods", pod_name, f"no PriorityClass with name {class_name} was found"
        )
    given = spec.get("priority")
    if given is not None and given != priority:
        raise errors.forbidden(
            "pods",
            pod_name,
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name",
        )
    given_policy = spec.get("preemptionPolicy")
    if given_policy and given_policy != preemption:
        raise errors.forbidden(
            "pods",
            pod_name,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod "
            f"spec; priority admission controller computed {preemption} from the given "
            "PriorityClass name",
        )
    spec["priority"] = priority
    spec["preemptionPolicy"] = preemption


# -- strategy -----------------------------------------------------------------------------------


def prepare_for_create(obj: Obj, *, group: str, version: str, kind: str) -> None:
    """The create strategy: status starts empty (or at its initial phase), finalizers set.

    Run after :func:`default_object` (the QoS class reads the defaulted requests).
    """
    if group == "" and kind == "Pod":
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
    elif group == "" and kind == "Service":
        obj["status"] = {"loadBalancer": {}}
    elif group == "" and kind == "Namespace":
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = spec["finalizers"] = []
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
    elif (group, kind) in _EMPTY_STATUS:
        obj["status"] = dict.fromkeys(_EMPTY_STATUS[group, kind], 0)


#: Status counters without ``omitempty`` (``required`` in the OpenAPI schema): Go prints them
#: even when zero, so a new object shows them.
_EMPTY_STATUS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): (),
    ("apps", "ReplicaSet"): ("replicas",),
    ("apps", "StatefulSet"): ("replicas",),
    ("apps", "DaemonSet"): (
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
    ),
    ("policy", "PodDisruptionBudget"): (
        "disruptionsAllowed",
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
    ),
}


def prepare_for_update(
    new: Obj, old: Mapping[str, Any], *, group: str, version: str, kind: str
) -> None:
    """The update strategy's carry-overs from the stored object ``old`` into ``new``."""
    if group != "":
        return
    if kind == "Namespace":
        spec = new.get("spec")
        if not isinstance(spec, dict):
            spec = new["spec"] = {}
        kept = old.get("spec", {}).get("finalizers")
        if kept is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = list(kept)
    elif kind == "Service" and isinstance(new.get("spec"), dict):
        _carry_service_allocations(new["spec"], old.get("spec") or {})


def _carry_service_allocations(spec: Obj, old: Mapping[str, Any]) -> None:
    """NormalizeClusterIPs and patchAllocatedValues of the service registry."""
    old_ips = list(old.get("clusterIPs") or [])
    old_ip = old.get("clusterIP") or ""
    ip = spec.get("clusterIP") or ""
    if old_ips and not spec.get("clusterIPs") and old_ip == ip:
        spec["clusterIPs"] = list(old_ips)
    if old_ip != ip:
        same_ips = list(spec.get("clusterIPs") or []) == old_ips
        if old_ip and not ip and same_ips:
            spec.pop("clusterIPs", None)
        elif same_ips:
            spec["clusterIPs"] = [ip]
    if old.get("type", "ClusterIP") != "ExternalName" and spec.get("type", "ClusterIP") != (
        "ExternalName"
    ):
        if not spec.get("clusterIP") and old_ip:
            spec["clusterIP"] = old_ip
        if not spec.get("clusterIPs") and old_ips:
            spec["clusterIPs"] = list(old_ips)
        for key in ("ipFamilyPolicy", "ipFamilies"):
            if not spec.get(key) and old.get(key):
                spec[key] = old[key] if isinstance(old[key], str) else list(old[key])
    if _needs_node_ports(old) and _needs_node_ports(spec):
        old_ports = [p for p in old.get("ports") or [] if isinstance(p, dict)]
        new_ports = list(_dicts(spec, "ports"))
        used = {p.get("nodePort") for p in old_ports} & {p.get("nodePort") for p in new_ports}
        by_name = {p.get("name", ""): p.get("nodePort") for p in old_ports}
        for port in new_ports:
            if not port.get("nodePort"):
                carried = by_name.get(port.get("name", ""))
                if carried and carried not in used:
                    port["nodePort"] = carried


def _needs_node_ports(spec: Mapping[str, Any]) -> bool:
    kind = spec.get("type", "ClusterIP")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True) is not False
    )


def qos_class(pod: Mapping[str, Any]) -> str:
    """``status.qosClass`` as the API server computes it (``qos.ComputePodQOS``).

    Only cpu and memory count. BestEffort: no positive request or limit anywhere. Guaranteed:
    every container limits both, and the summed requests equal the summed limits. Otherwise
    Burstable.
    """
    spec = pod.get("spec") or {}
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in _dicts(spec, "containers", "initContainers"):
        resources = container.get("resources") or {}
        for part, totals in (("requests", requests), ("limits", limits)):
            found = set()
            for name, raw in (resources.get(part) or {}).items():
                if name not in ("cpu", "memory"):
                    continue
                try:
                    value = parse_quantity(raw).value
                except QuantityError:
                    continue
                if value > 0:
                    totals[name] = totals.get(name, Fraction(0)) + value
                    found.add(name)
            if part == "limits" and found != {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    balanced = all(limits.get(name) == value for name, value in requests.items())
    if guaranteed and balanced and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# -- allocation ---------------------------------------------------------------------------------

# Multipliers coprime with the pool sizes (2 * 524287 addresses, 2768 ports) spread allocations
# over the range, as the real allocators' random picks do, deterministic and collision-free.
_IP_STRIDE = 40503
_PORT_STRIDE = 1009


def allocate_cluster_ip(index: int) -> str:
    """The ``index``-th cluster IP of ``10.96.0.0/12``; distinct for distinct indexes.

    Index 0 is ``10.96.0.1``, the address kube-apiserver reserves for the ``kubernetes``
    Service in ``default``; later indexes are spread over the range like the allocator's
    random picks (``10.96.158.56``, ``10.97.60.111``...). ``ValueError`` once the range is full.
    """
    usable = _SERVICE_CIDR.num_addresses - 2  # neither the network nor the broadcast address
    if not 0 <= index < usable:
        raise ValueError(f"the service IP range {_SERVICE_CIDR} is full")
    offset = (index * _IP_STRIDE) % usable
    return str(_SERVICE_CIDR.network_address + 1 + offset)


def allocate_node_port(index: int) -> int:
    """The ``index``-th node port of ``30000-32767``; distinct for distinct indexes."""
    low, high = _NODE_PORTS
    size = high - low + 1
    if not 0 <= index < size:
        raise ValueError(f"the node port range {low}-{high} is full")
    return low + (index * _PORT_STRIDE) % size
