"""Pod status as the kubelet writes it: container statuses, conditions and the status patch.

What ``generateAPIPodStatus`` and the status manager (``pkg/kubelet/status``, Kubernetes 1.32)
produce, and the event messages the kubelet's image and container managers record.

**Conditions** the kubelet owns, in the order it generates them: ``PodReadyToStartContainers``
(the sandbox exists and has networking), ``Initialized`` (init containers done; ``False`` with
``ContainersNotInitialized`` and ``containers with incomplete status: [a]``), ``Ready`` (copies
``ContainersReady`` when that is not ``True``), ``ContainersReady`` (``ContainersNotReady`` with
``containers with unready status: [a b]``; ``PodCompleted``/``PodFailed`` once terminal) and
``PodScheduled``. The status manager keeps conditions owned by others (``DisruptionTarget``
from an eviction) in front of them, and a condition's ``lastTransitionTime`` only moves when its
status does.

**Container statuses** carry ``restartCount`` and ``lastState`` across writes: the list has no
merge key, so a strategic merge patch replaces it whole, and a writer must start from the stored
list (other parts of the kubelet, OOM kills and probes, change it too).

**Images** are reported as containerd normalises them (``nginx`` runs as
``docker.io/library/nginx:latest``, with an ``imageID`` ``docker.io/library/nginx@sha256:...``),
while events quote the image as the spec names it, with ``:latest`` added when pulling.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubemedic.model.durations import go_duration

__all__ = [
    "KUBELET_CONDITIONS",
    "addresses",
    "conditions",
    "container_events",
    "default_tag",
    "every_status",
    "grace_seconds",
    "image_id",
    "killing_events",
    "last_state",
    "needs_pull",
    "normalized_image",
    "pending",
    "pod_ip",
    "readied",
    "rejection_patch",
    "restartable",
    "resynced",
    "running",
    "sandbox_blocker",
    "started",
    "status_patch",
    "stopped",
    "terminated",
    "waiting",
]

Obj = dict[str, Any]

KUBELET_CONDITIONS = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)

REJECTED_PREFIX = "Pod was rejected: "
SANDBOX_CHANGED = "Pod sandbox changed, it will be killed and re-created."
STATUS_UNKNOWN_MESSAGE = "The container could not be located when the pod was terminated"


# -- images -------------------------------------------------------------------------------------


def _has_tag_or_digest(image: str) -> bool:
    last = image.rsplit("/", 1)[-1]
    return "@" in image or ":" in last


def default_tag(image: str) -> str:
    """``applyDefaultImageTag``: ``:latest`` when the reference has neither tag nor digest."""
    return image if _has_tag_or_digest(image) else f"{image}:latest"


def normalized_image(image: str) -> str:
    """The reference containerd reports: Docker Hub names get ``docker.io/`` (and
    ``library/`` for official images), and a missing tag becomes ``latest``."""
    first = image.split("/", 1)[0]
    if "/" not in image:
        image = f"docker.io/library/{image}"
    elif "." not in first and ":" not in first and first != "localhost":
        image = f"docker.io/{image}"
    return default_tag(image)


def image_id(image: str) -> str:
    """A stable ``repo@sha256:<digest>`` for an image (the same image gives the same id)."""
    ref = normalized_image(image)
    repo = ref.split("@", 1)[0]
    last = repo.rsplit("/", 1)
    if ":" in last[-1]:
        repo = repo[: repo.rindex(":")]
    return f"{repo}@sha256:{hashlib.sha256(ref.encode()).hexdigest()}"


def image_size(image: str) -> int:
    """A plausible compressed size in bytes (20 MB to 420 MB), stable per image."""
    digest = hashlib.sha256(image.encode()).digest()
    return 20_000_000 + int.from_bytes(digest[:4], "big") % 400_000_000


# -- container statuses -------------------------------------------------------------------------


def restartable(container: Mapping[str, Any]) -> bool:
    """A native sidecar: an init container with ``restartPolicy: Always``."""
    return container.get("restartPolicy") == "Always"


def _mounts(container: Mapping[str, Any]) -> list[Obj]:
    found: list[Obj] = []
    for mount in container.get("volumeMounts") or ():
        entry: Obj = {"name": mount.get("name"), "mountPath": mount.get("mountPath")}
        if mount.get("readOnly"):
            entry["readOnly"] = True
            entry["recursiveReadOnly"] = "Disabled"
        found.append(entry)
    return found


def waiting(
    container: Mapping[str, Any],
    *,
    reason: str = "ContainerCreating",
    previous: Mapping[str, Any] | None = None,
) -> Obj:
    """A container the runtime has not started (yet, or again)."""
    prev = previous or {}
    return {
        "name": container.get("name"),
        "state": {"waiting": {"reason": reason}},
        "lastState": prev.get("lastState") or {},
        "ready": False,
        "restartCount": int(prev.get("restartCount") or 0),
        "image": container.get("image"),
        "imageID": prev.get("imageID") or "",
        "started": False,
    }


def running(
    container: Mapping[str, Any],
    *,
    container_id: str,
    started_at: str,
    ready: bool,
    previous: Mapping[str, Any] | None = None,
    restarted: bool = False,
    last_state: Mapping[str, Any] | None = None,
) -> Obj:
    """A running container; ``restarted`` counts one more restart (``restartCount`` and
    ``lastState`` otherwise come from ``previous``, the stored status)."""
    prev = previous or {}
    status: Obj = {
        "name": container.get("name"),
        "state": {"running": {"startedAt": started_at}},
        "lastState": dict(last_state) if last_state is not None else prev.get("lastState") or {},
        "ready": ready,
        "restartCount": int(prev.get("restartCount") or 0) + (1 if restarted else 0),
        "image": normalized_image(str(container.get("image") or "")),
        "imageID": image_id(str(container.get("image") or "")),
        "containerID": container_id,
        "started": True,
    }
    mounts = _mounts(container)
    if mounts:
        status["volumeMounts"] = mounts
    return status


def terminated(current: Mapping[str, Any], *, finished_at: str) -> Obj:
    """``current`` (a stored container status) after its container exited on SIGTERM
    (``Completed``, 0). A container that was not running (never started, or waiting in
    back-off) is ``ContainerStatusUnknown`` with exit code 137: the runtime has nothing to
    report for it once the pod is terminal."""
    run = (current.get("state") or {}).get("running")
    state: Obj = {"exitCode": 0, "reason": "Completed", "startedAt": (run or {}).get("startedAt")}
    if run is None:
        state = {"exitCode": 137, "reason": "ContainerStatusUnknown"}
        state["message"] = STATUS_UNKNOWN_MESSAGE
    state["finishedAt"] = finished_at
    if current.get("containerID"):
        state["containerID"] = current["containerID"]
    return {**current, "state": {"terminated": state}, "ready": False, "started": False}


def completed_init(container: Mapping[str, Any], *, container_id: str, at: str) -> Obj:
    """An init container that ran to completion."""
    status = running(container, container_id=container_id, started_at=at, ready=False)
    done = {"exitCode": 0, "reason": "Completed", "startedAt": at, "finishedAt": at}
    status["state"] = {"terminated": {**done, "containerID": container_id}}
    return {**status, "started": False}


def last_state(previous: Mapping[str, Any] | None, *, finished_at: str) -> Obj | None:
    """What a reboot leaves of a running container: exited, reason ``Unknown``, code 255
    (the runtime finds the old container dead when it comes back)."""
    if previous is None:
        return None
    run = (previous.get("state") or {}).get("running") or {}
    state: Obj = {"exitCode": 255, "reason": "Unknown"}
    if run.get("startedAt"):
        state["startedAt"] = run["startedAt"]
    state["finishedAt"] = finished_at
    if previous.get("containerID"):
        state["containerID"] = previous["containerID"]
    return {"terminated": state}


def started(
    spec: Mapping[str, Any],
    *,
    previous: Sequence[Mapping[str, Any]],
    new_id: Callable[[], str],
    stamp: str,
    restarted: bool = False,
    down_at: str = "",
) -> tuple[Obj, float]:
    """A pod once the pod worker started it (:func:`status_patch` arguments), and the
    shortest readiness delay still to wait (0: all ready now).

    Init containers ran to completion (sidecars keep running); a container whose readiness
    probe has an ``initialDelaySeconds`` stays unready that long. ``restarted`` (after a
    reboot) counts a restart and keeps the dead container as ``lastState``; ``previous`` are
    the stored statuses, which give the restart counts.
    """
    old = {s.get("name"): s for s in previous}
    delays: list[float] = []

    def one(container: Mapping[str, Any]) -> Obj:
        delay = float((container.get("readinessProbe") or {}).get("initialDelaySeconds") or 0)
        if delay > 0:
            delays.append(delay)
        prev = old.get(container.get("name"))
        return running(
            container,
            container_id=new_id(),
            started_at=stamp,
            ready=delay <= 0,
            previous=prev,
            restarted=restarted and prev is not None,
            last_state=last_state(prev, finished_at=down_at) if restarted else None,
        )

    inits = [
        one(c) if restartable(c) else completed_init(c, container_id=new_id(), at=stamp)
        for c in spec.get("initContainers") or ()
    ]
    statuses = [one(c) for c in spec.get("containers") or ()]
    fields = {"phase": "Running", "statuses": statuses, "init_statuses": inits}
    return {**fields, "sandbox_ready": True}, min(delays, default=0.0)


def stopped(status: Mapping[str, Any], *, stamp: str) -> Obj:
    """A deleted pod once the kubelet stopped it (:func:`status_patch` arguments): phase
    ``Succeeded`` when every container exited 0, else ``Failed`` (Kubernetes 1.27+ gives a
    deleted pod a terminal phase before it goes)."""
    statuses = [
        s if "terminated" in (s.get("state") or {}) else terminated(s, finished_at=stamp)
        for s in status.get("containerStatuses") or ()
    ]
    codes = [((s.get("state") or {}).get("terminated") or {}).get("exitCode") for s in statuses]
    return {
        "phase": "Succeeded" if all(code == 0 for code in codes) else "Failed",
        "statuses": statuses,
        "init_statuses": status.get("initContainerStatuses") or (),
        "sandbox_ready": False,
    }


def readied(status: Mapping[str, Any]) -> Obj:
    """A running pod once its readiness probes passed (:func:`status_patch` arguments)."""

    def ready(statuses: Sequence[Mapping[str, Any]]) -> list[Obj]:
        return [
            {**s, "ready": "running" in (s.get("state") or {}) or s.get("ready")} for s in statuses
        ]

    return {
        "phase": status.get("phase") or "Running",
        "statuses": ready(status.get("containerStatuses") or ()),
        "init_statuses": ready(status.get("initContainerStatuses") or ()),
        "sandbox_ready": True,
    }


def resynced(pod: Mapping[str, Any]) -> Obj | None:
    """The status manager's reconcile of a running pod: when a stored kubelet condition
    disagrees with the containers (the node lifecycle controller marked the pod not ready while
    the kubelet could not post), the fields that write them back; None when they agree."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    fields: Obj = {
        "phase": "Running",
        "statuses": list(status.get("containerStatuses") or ()),
        "init_statuses": list(status.get("initContainerStatuses") or ()),
        "sandbox_ready": True,
    }
    have = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
    wanted = conditions(pod.get("spec") or {}, stamp="", **fields)
    drifted = any(c["type"] in have and have[c["type"]] != c["status"] for c in wanted)
    return fields if drifted else None


# -- conditions ---------------------------------------------------------------------------------


def _names(items: Sequence[str]) -> str:
    return "[" + " ".join(items) + "]"  # Go's %s of a []string


def _by_name(statuses: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(s.get("name")): s for s in statuses}


def _containers_ready(
    spec: Mapping[str, Any], statuses: Mapping[str, Mapping[str, Any]], phase: str
) -> tuple[str, str, str]:
    expected = [c for c in spec.get("initContainers") or () if restartable(c)]
    expected += list(spec.get("containers") or ())
    unknown = [str(c.get("name")) for c in expected if c.get("name") not in statuses]
    unready = [
        str(c.get("name"))
        for c in expected
        if c.get("name") in statuses and not statuses[c.get("name")].get("ready")
    ]
    if phase == "Succeeded" and not unknown:
        return "False", "PodCompleted", ""
    if phase == "Failed":
        return "False", "PodFailed", ""
    parts = []
    if unknown:
        parts.append(f"containers with unknown status: {_names(unknown)}")
    if unready:
        parts.append(f"containers with unready status: {_names(unready)}")
    if parts:
        return "False", "ContainersNotReady", ", ".join(parts)
    return "True", "", ""


def _initialized(
    spec: Mapping[str, Any], statuses: Mapping[str, Mapping[str, Any]], phase: str
) -> tuple[str, str, str]:
    inits = list(spec.get("initContainers") or ())
    if not inits:
        return "True", "", ""
    unknown = [str(c.get("name")) for c in inits if c.get("name") not in statuses]
    if phase == "Succeeded" and not unknown:
        return "True", "PodCompleted", ""
    incomplete = []
    for c in inits:
        status = statuses.get(c.get("name"))
        if status is None:
            continue
        state = status.get("state") or {}
        done = (state.get("terminated") or {}).get("exitCode") == 0 and not restartable(c)
        if not done and not (restartable(c) and status.get("started")):
            incomplete.append(str(c.get("name")))
    parts = []
    if unknown:
        parts.append(f"containers with unknown status: {_names(unknown)}")
    if incomplete:
        parts.append(f"containers with incomplete status: {_names(incomplete)}")
    if parts:
        return "False", "ContainersNotInitialized", ", ".join(parts)
    return "True", "", ""


def conditions(
    spec: Mapping[str, Any],
    *,
    phase: str,
    statuses: Sequence[Mapping[str, Any]],
    init_statuses: Sequence[Mapping[str, Any]] = (),
    sandbox_ready: bool,
    stamp: str,
    previous: Sequence[Mapping[str, Any]] = (),
) -> list[Obj]:
    """The five kubelet conditions as patch entries; ``previous`` (the stored ones) keeps
    transition times, and a reason or message no longer there is removed."""
    every = _by_name([*init_statuses, *statuses])
    ready = _containers_ready(spec, every, phase)
    values = {
        "PodReadyToStartContainers": ("True" if sandbox_ready else "False", "", ""),
        "Initialized": _initialized(spec, every, phase),
        "Ready": ready,
        "ContainersReady": ready,
        "PodScheduled": ("True", "", ""),
    }
    before = {c.get("type"): c for c in previous}
    result: list[Obj] = []
    for type_ in KUBELET_CONDITIONS:
        status, reason, message = values[type_]
        old = before.get(type_)
        entry: Obj = {"type": type_, "status": status}
        if old is None:
            entry["lastProbeTime"] = None  # metav1.Time without omitempty: printed as null
        kept = old.get("lastTransitionTime") if old and old.get("status") == status else None
        entry["lastTransitionTime"] = kept or stamp
        # As a two-way merge patch: a reason or message that went away is sent as null.
        for key, value in (("reason", reason), ("message", message)):
            if value or (old is not None and old.get(key)):
                entry[key] = value or None
        result.append(entry)
    return result


# -- patches ------------------------------------------------------------------------------------


def pending(spec: Mapping[str, Any]) -> Obj:
    """An admitted pod before its sandbox exists (:func:`status_patch` arguments): containers
    ``ContainerCreating``, or ``PodInitializing`` when they wait for init containers."""
    inits = [waiting(c) for c in spec.get("initContainers") or ()]
    reason = "PodInitializing" if inits else "ContainerCreating"
    statuses = [waiting(c, reason=reason) for c in spec.get("containers") or ()]
    return {
        "phase": "Pending",
        "statuses": statuses,
        "init_statuses": inits,
        "sandbox_ready": False,
    }


def addresses(host_ip: str, pod_ip: str = "", *, previous: Mapping[str, Any] | None = None) -> Obj:
    """``hostIP``/``hostIPs`` and, once the sandbox has its network, ``podIP``/``podIPs``.
    ``hostIPs`` and ``podIPs`` merge by ``ip``: addresses the stored status (``previous``) has
    and the pod no longer has are deleted, as a two-way merge patch does."""
    found: Obj = {"hostIP": host_ip}
    wanted = {"hostIPs": host_ip} | ({"podIP": pod_ip, "podIPs": pod_ip} if pod_ip else {})
    for key, ip in wanted.items():
        if key.endswith("s"):
            gone = [a.get("ip") for a in (previous or {}).get(key) or () if a.get("ip") != ip]
            found[key] = [{"ip": ip}, *({"$patch": "delete", "ip": old} for old in gone)]
        else:
            found[key] = ip
    return found


def every_status(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Init container statuses, then container statuses."""
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def status_patch(
    pod: Mapping[str, Any],
    *,
    phase: str,
    statuses: Sequence[Mapping[str, Any]],
    init_statuses: Sequence[Mapping[str, Any]] = (),
    sandbox_ready: bool,
    stamp: str,
    extra: Mapping[str, Any] | None = None,
) -> Obj:
    """The status manager's strategic merge patch of ``pods/status``.

    ``metadata.uid`` makes it a precondition (a pod recreated under the same name is not
    patched); the kubelet's conditions follow the ones owned by others; ``startTime`` is set
    once and then kept; ``extra`` adds ``hostIP``, ``podIP``, ``reason``... as given.
    """
    stored = pod.get("status") or {}
    old_conditions = [c for c in stored.get("conditions") or () if isinstance(c, dict)]
    foreign = [
        str(c.get("type")) for c in old_conditions if c.get("type") not in KUBELET_CONDITIONS
    ]
    body: Obj = {
        "$setElementOrder/conditions": [{"type": t} for t in (*foreign, *KUBELET_CONDITIONS)],
        "phase": phase,
        "conditions": conditions(
            pod.get("spec") or {},
            phase=phase,
            statuses=statuses,
            init_statuses=init_statuses,
            sandbox_ready=sandbox_ready,
            stamp=stamp,
            previous=old_conditions,
        ),
        "containerStatuses": list(statuses),
    }
    if init_statuses:
        body["initContainerStatuses"] = list(init_statuses)
    if not stored.get("startTime"):
        body["startTime"] = stamp
    body.update(extra or {})
    return {"metadata": {"uid": (pod.get("metadata") or {}).get("uid")}, "status": body}


def rejection_patch(pod: Mapping[str, Any], reason: str, message: str, *, stamp: str) -> Obj:
    """``rejectPod``: phase ``Failed`` with the admission reason and ``Pod was rejected: ``
    before its message; the status manager adds ``startTime``."""
    status: Obj = {"phase": "Failed", "reason": reason, "message": REJECTED_PREFIX + message}
    if not (pod.get("status") or {}).get("startTime"):
        status["startTime"] = stamp
    return {"metadata": {"uid": (pod.get("metadata") or {}).get("uid")}, "status": status}


# -- event messages -----------------------------------------------------------------------------


def pulling_message(image: str) -> str:
    return f'Pulling image "{default_tag(image)}"'


def pulled_message(image: str, *, seconds: float) -> str:
    took = go_duration(round(seconds, 3))
    return (
        f'Successfully pulled image "{default_tag(image)}" in {took} ({took} including '
        f"waiting). Image size: {image_size(image)} bytes."
    )


def needs_pull(container: Mapping[str, Any], images: set[str]) -> bool:
    """``shouldPullImage``: ``Always``, or ``IfNotPresent`` and not on the node."""
    policy = container.get("imagePullPolicy") or "IfNotPresent"
    return policy == "Always" or (policy == "IfNotPresent" and container.get("image") not in images)


def sandbox_blocker(
    pod: Mapping[str, Any], *, runtime_hung: bool, network: Sequence[str]
) -> tuple[str, str] | None:
    """Why the pod worker cannot create the sandbox (event reason and message): the runtime
    does not answer (``FailedCreatePodSandBox``), or the CNI is not ready for a pod on the pod
    network (``NetworkNotReady``: ``network is not ready: <error>``)."""
    if runtime_hung:
        detail = "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
        return "FailedCreatePodSandBox", f"Failed to create pod sandbox: {detail}"
    if network and not (pod.get("spec") or {}).get("hostNetwork"):
        return "NetworkNotReady", f"network is not ready: {network[0]}"
    return None


def killing_events(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``Killing`` events (field path, message) for the running containers of a pod."""
    return [
        (f"spec.containers{{{s.get('name')}}}", f"Stopping container {s.get('name')}")
        for s in (pod.get("status") or {}).get("containerStatuses") or ()
        if "running" in (s.get("state") or {})
    ]


def grace_seconds(pod: Mapping[str, Any]) -> float:
    """The grace period the kubelet gives the containers of a pod being deleted."""
    grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    return float(grace)


def container_events(
    container: Mapping[str, Any], *, pulled: float | None, pulling: bool = False
) -> list[tuple[str, str]]:
    """The events (reason, message) of one container being started: ``Pulling`` (when the
    pull starts now), ``Pulled`` (after ``pulled`` seconds, or already present), ``Created``,
    ``Started``."""
    name, image = str(container.get("name")), str(container.get("image"))
    found = [("Pulling", pulling_message(image))] if pulling else []
    if pulled is not None:
        found.append(("Pulled", pulled_message(image, seconds=pulled)))
    else:
        found.append(("Pulled", f'Container image "{image}" already present on machine'))
    return [
        *found,
        ("Created", f"Created container {name}"),
        ("Started", f"Started container {name}"),
    ]


def pod_ip(cidr: str, *, node_index: int, used: set[str], after: int) -> tuple[str, int]:
    """The next free address of the node's pod CIDR (``spec.podCIDR``; without one, a /24 of
    ``10.244.0.0/14`` by node) after host number ``after``, wrapping round from .254 to .2;
    returns the address and its host number."""
    base = cidr.split("/", 1)[0].rsplit(".", 1)[0] if cidr else ""
    base = base or f"10.{244 + node_index // 256}.{node_index % 256}"
    number = after
    for _ in range(253):
        number = number + 1 if number < 254 else 2
        if f"{base}.{number}" not in used:
            break
    return f"{base}.{number}", number
