"""What the real API server fills in before it stores an object: the defaults of its types.

A request body is never stored as sent. On every create and update, in the request's version,
kube-apiserver 1.32 first runs the defaulting functions (``pkg/apis/<group>/v1/defaults.go`` and
the generated ``zz_generated.defaults.go`` that calls them for every nested type). This is why
``kubectl get -o yaml`` shows ``dnsPolicy: ClusterFirst`` nobody wrote, why
``imagePullPolicy`` depends on the image tag, and why a Service gets ``targetPort`` equal to
``port``. Pod templates inside workloads get the pod *spec* defaults but not the pod-only ones
(``enableServiceLinks``, requests copied from limits): those run for ``Pod`` objects alone.
Resource quantities are rounded up to milli-units and printed in canonical form (``0.5``
becomes ``500m``).

Pure (no I/O, stdlib only): the API emulator stores objects through it, and the drift engine
applies the same defaults to the desired state so that a default is never reported as drift.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity

__all__ = ["default_object", "default_pod"]

Obj = dict[str, Any]

_FILE_MODE = 420  # 0644: the default mode of configMap, secret, downwardAPI and projected files


def default_object(obj: Obj, *, group: str, version: str, kind: str) -> None:
    """Apply, in place, the defaults kube-apiserver 1.32 sets on ``kind`` of ``group/version``.

    Kinds without defaults (ConfigMap, Lease, Event, PodDisruptionBudget, custom resources) are
    left untouched. Defaults that need the stored object's uid (a Job's generated selector) are
    the API server's create strategy's, not defaults. Malformed parts (a string where a list
    belongs) are left for validation.
    """
    spec = obj.get("spec")
    if group == "" and version == "v1":
        if kind == "Pod":
            default_pod(obj)
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
        elif kind == "Endpoints":
            for subset in _dicts(obj, "subsets"):
                for port in _dicts(subset, "ports"):
                    port.setdefault("protocol", "TCP")  # SetDefaults_EndpointPort
        elif kind == "ReplicationController" and isinstance(spec, dict):
            _default_replication_controller(obj, spec)
    elif group == "batch" and version == "v1" and isinstance(spec, dict):
        if kind == "Job":
            _default_job(obj, spec)
        elif kind == "CronJob":
            _default_cronjob(spec)
    elif group == "admissionregistration.k8s.io" and kind == "ValidatingWebhookConfiguration":
        _default_validating_webhooks(obj)
    elif group == "scheduling.k8s.io" and version == "v1" and kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
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


def default_pod(pod: Obj) -> None:
    """SetDefaults_Pod and the pod spec defaults: what a ``Pod`` (not a template) gets."""
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


def _default_replication_controller(rc: Obj, spec: Obj) -> None:
    """SetDefaults_ReplicationController: selector and labels from the template's labels."""
    template = spec.get("template")
    _default_template(template)
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        rc_meta = rc.setdefault("metadata", {})
        if isinstance(rc_meta, dict) and not rc_meta.get("labels"):
            rc_meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def _default_job(job: Obj, spec: Obj) -> None:
    """SetDefaults_Job (with ``JobPodReplacementPolicy``, on by default in 1.32)."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        per_index = spec.get("backoffLimitPerIndex") is not None
        spec["backoffLimit"] = 2147483647 if per_index else 6
    template = spec.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    job_meta = job.get("metadata")
    if isinstance(labels, dict) and isinstance(job_meta, dict) and not job_meta.get("labels"):
        job_meta["labels"] = dict(labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in _dicts(policy, "rules"):
            for pattern in _dicts(rule, "onPodConditions"):
                if not pattern.get("status"):
                    pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        failed = isinstance(policy, dict)
        spec["podReplacementPolicy"] = "Failed" if failed else "TerminatedPodsOrFailed"
    _default_template(template)


def _default_cronjob(spec: Obj) -> None:
    """SetDefaults_CronJob; the job template's pod spec gets the pod spec defaults only (the
    Job defaults run when the controller creates a Job from it)."""
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict) and isinstance(job_template.get("spec"), dict):
        _default_template(job_template["spec"].get("template"))


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


def _default_validating_webhooks(configuration: Obj) -> None:
    """``SetDefaults_ValidatingWebhook``, ``SetDefaults_Rule``, ``SetDefaults_ServiceReference``
    of ``admissionregistration/v1``."""
    for hook in _dicts(configuration, "webhooks"):
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        for rule in _dicts(hook, "rules"):
            rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def _dicts(holder: Mapping[str, Any], *keys: str) -> Iterator[Obj]:
    for key in keys:
        items = holder.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))
