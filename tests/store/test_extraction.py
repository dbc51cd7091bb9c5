"""Archive records read from bodies: events, container terminations, evictions, node condition
transitions and metrics samples, as the API server and the kubelet write them."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.sim.cluster.kubelet import evicting
from kubemedic.store.extraction import (
    event_row,
    eviction_from_event,
    eviction_from_pod,
    metric_samples,
    node_transitions,
    terminations,
)
from kubemedic.store.records import (
    EventRow,
    EvictionRow,
    MetricSample,
    NodeTransition,
    TerminationRow,
)
from tests.factories import event, node, node_metrics, pod_metrics, stamp
from tests.incident3 import HUB_EVICTION, jupyterhub

T0 = datetime(2023, 2, 1, 19, 0, tzinfo=UTC)
MI = 1024 * 1024
HUB_ID = "containerd://" + "a1" * 32
NEW_HUB_ID = "containerd://" + "b2" * 32


def hub_pod() -> dict[str, Any]:
    """The JupyterHub hub pod (128Mi request, 1Gi limit) on core-2, as ``deployed`` made it."""
    _, _, hub = jupyterhub(
        "hub",
        node_name="core-2",
        requests={"cpu": "10m", "memory": "128Mi"},
        limits={"memory": "1Gi"},
    )
    return hub


def oom_killed_hub() -> dict[str, Any]:
    """The hub after the kernel OOM-killed it and the kubelet restarted it: the dead instance
    in ``lastState.terminated`` (OOMKilled, exit 137, its containerID), restartCount 1."""
    hub = hub_pod()
    hub["status"]["containerStatuses"][0].update(
        {
            "restartCount": 1,
            "containerID": NEW_HUB_ID,
            "state": {"running": {"startedAt": stamp(timedelta(minutes=41))}},
            "lastState": {
                "terminated": {
                    "exitCode": 137,
                    "reason": "OOMKilled",
                    "startedAt": stamp(timedelta(0)),
                    "finishedAt": stamp(timedelta(minutes=40)),
                    "containerID": HUB_ID,
                }
            },
        }
    )
    return hub


def evicted_hub() -> dict[str, Any]:
    """The hub as the simulator's eviction manager leaves it (``evicted_status``)."""
    hub = hub_pod()
    hub["status"].update(evicting.evicted_status(hub, HUB_EVICTION, now=stamp(T0)))
    return hub


def storable(row: object) -> None:
    """Every string encodes as UTF-8 without NUL; every integer fits int64."""
    for field in dataclasses.fields(row):  # type: ignore[arg-type]
        value = getattr(row, field.name)
        if isinstance(value, str):
            value.encode("utf-8")
            assert "\x00" not in value
            assert len(value) <= 4097
        elif isinstance(value, int):
            assert -(2**63) <= value < 2**63


# -- events -----------------------------------------------------------------------------------


def test_core_v1_event_becomes_a_row_with_the_kubelets_host_as_node() -> None:
    hub = hub_pod()
    body = event(
        involved=hub,
        reason="Unhealthy",
        message="Liveness probe failed: context deadline exceeded",
        count=30,
        first=timedelta(0),
        last=timedelta(minutes=5),
        host="core-2",
        field_path="spec.containers{hub}",
    )
    row = event_row(body)
    assert row == EventRow(
        uid=body["metadata"]["uid"],
        api_version="v1",
        namespace="jhub",
        name=body["metadata"]["name"],
        type="Warning",
        reason="Unhealthy",
        message="Liveness probe failed: context deadline exceeded",
        object_kind="Pod",
        object_namespace="jhub",
        object_name=hub["metadata"]["name"],
        object_uid=hub["metadata"]["uid"],
        field_path="spec.containers{hub}",
        source="kubelet",
        host="core-2",
        node="core-2",
        count=30,
        first_seen=T0,
        last_seen=T0 + timedelta(minutes=5),
        resource_version=body["metadata"]["resourceVersion"],
    )


def test_events_k8s_io_event_keeps_its_api_version_and_series_count() -> None:
    core = event(involved=hub_pod(), reason="BackOff", message="Back-off restarting", host="c2")
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": core["metadata"],
        "regarding": core["involvedObject"],
        "note": "Back-off restarting failed container hub",
        "reason": "BackOff",
        "type": "Warning",
        "eventTime": "2023-02-01T19:00:00.250000Z",
        "series": {"count": 7, "lastObservedTime": "2023-02-01T19:03:00.500000Z"},
        "reportingController": "kubelet",
        "reportingInstance": "core-2",
    }
    row = event_row(body)
    assert row is not None
    assert (row.api_version, row.count, row.source, row.node) == (
        "events.k8s.io/v1",
        7,
        "kubelet",
        "core-2",
    )
    assert row.message == "Back-off restarting failed container hub"
    assert row.last_seen == datetime(2023, 2, 1, 19, 3, 0, 500000, tzinfo=UTC)


def test_event_about_a_node_is_filed_under_that_node() -> None:
    body = event(
        involved=node("core-2"),
        reason="SystemOOM",
        message="System OOM encountered, victim process: jupyterhub, pid: 4242",
        host="core-2",
    )
    body["source"] = {"component": "kubelet"}  # no host: node comes from the object
    body["reportingInstance"] = ""
    row = event_row(body)
    assert row is not None
    assert (row.object_kind, row.node, row.host) == ("Node", "core-2", "")


def test_event_without_uid_or_not_a_mapping_gives_no_row() -> None:
    body = event(involved=hub_pod(), reason="Killing", message="Stopping container hub")
    del body["metadata"]["uid"]
    assert event_row(body) is None
    assert event_row([]) is None  # type: ignore[arg-type]


def test_event_strings_are_made_storable() -> None:
    body = event(involved=hub_pod(), reason="Killing", message="")
    body.update(reason="Bad\x00Reason", message="x\udcff" * 5000)
    row = event_row(body)
    assert row is not None
    assert row.reason == "Bad\ufffdReason"
    assert row.message.startswith("x?x?")
    storable(row)


# -- terminations -----------------------------------------------------------------------------


def test_oom_kill_of_the_hub_is_read_from_last_state() -> None:
    hub = oom_killed_hub()
    assert terminations(hub) == [
        TerminationRow(
            pod_uid=hub["metadata"]["uid"],
            namespace="jhub",
            pod=hub["metadata"]["name"],
            container="hub",
            key=HUB_ID,
            node="core-2",
            owner_kind="ReplicaSet",
            owner_name="hub-5d8f7c9b4",
            reason="OOMKilled",
            exit_code=137,
            signal=None,
            restart_count=1,
            started_at=T0,
            finished_at=T0 + timedelta(minutes=40),
            message="",
            memory_request=128 * MI,
            memory_limit=1024 * MI,
        )
    ]


def test_the_same_kill_read_before_and_after_the_restart_has_one_key() -> None:
    after = oom_killed_hub()
    before = copy.deepcopy(after)
    status = before["status"]["containerStatuses"][0]
    status.update(
        {
            "restartCount": 0,
            "containerID": HUB_ID,
            "state": status["lastState"],
            "lastState": {},
        }
    )
    [early] = terminations(before)
    [late] = terminations(after)
    assert early.key == late.key == HUB_ID
    assert (early.restart_count, late.restart_count) == (0, 1)


def test_crash_loop_gives_current_and_last_termination() -> None:
    hub = oom_killed_hub()
    status = hub["status"]["containerStatuses"][0]
    status["state"] = {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "message": "KeyError: 'JUPYTERHUB_CRYPT_KEY'",
            "startedAt": stamp(timedelta(minutes=41)),
            "finishedAt": stamp(timedelta(minutes=42)),
            "containerID": NEW_HUB_ID,
        }
    }
    found = terminations(hub)
    assert [(t.key, t.reason, t.exit_code) for t in found] == [
        (NEW_HUB_ID, "Error", 1),
        (HUB_ID, "OOMKilled", 137),
    ]
    assert found[0].message == "KeyError: 'JUPYTERHUB_CRYPT_KEY'"


def test_termination_without_container_id_is_keyed_by_its_times() -> None:
    hub = oom_killed_hub()
    del hub["status"]["containerStatuses"][0]["lastState"]["terminated"]["containerID"]
    [row] = terminations(hub)
    assert row.key == "2023-02-01T19:00:00Z/2023-02-01T19:40:00Z"


def test_evicted_pods_containers_are_container_status_unknown() -> None:
    [row] = terminations(evicted_hub())
    assert (row.reason, row.exit_code, row.key) == ("ContainerStatusUnknown", 137, "/")
    assert row.finished_at is None


def test_init_and_ephemeral_containers_count_and_signal_is_kept() -> None:
    hub = hub_pod()
    hub["spec"]["initContainers"] = [
        {"name": "proxy", "restartPolicy": "Always", "resources": {"limits": {"memory": "64Mi"}}}
    ]
    hub["spec"]["ephemeralContainers"] = [{"name": "debugger"}]
    killed = {
        "terminated": {
            "exitCode": 137,
            "signal": 9,
            "reason": "OOMKilled",
            "containerID": "containerd://" + "c3" * 32,
        }
    }
    hub["status"]["initContainerStatuses"] = [
        {"name": "proxy", "restartCount": 4, "state": {"running": {}}, "lastState": killed}
    ]
    done = {"terminated": {"exitCode": 0, "reason": "Completed", "containerID": "cri-o://d4"}}
    hub["status"]["ephemeralContainerStatuses"] = [{"name": "debugger", "state": done}]
    found = {row.container: row for row in terminations(hub)}
    assert set(found) == {"proxy", "debugger"}
    proxy = found["proxy"]
    assert (proxy.signal, proxy.restart_count) == (9, 4)
    # A limit without a request: the API server defaults the request to the limit.
    assert (proxy.memory_request, proxy.memory_limit) == (64 * MI, 64 * MI)
    assert (found["debugger"].memory_request, found["debugger"].memory_limit) == (None, None)


def test_invalid_quantities_and_wrong_types_read_as_absent() -> None:
    hub = oom_killed_hub()
    hub["spec"]["containers"][0]["resources"] = {
        "requests": {"memory": "lots"},
        "limits": {"memory": "1e999"},
    }
    status = hub["status"]["containerStatuses"][0]
    status["restartCount"] = "1"
    status["lastState"]["terminated"]["exitCode"] = 2**40
    status["lastState"]["terminated"]["finishedAt"] = 1675278000
    [row] = terminations(hub)
    assert (row.memory_request, row.memory_limit) == (None, None)
    assert (row.restart_count, row.exit_code, row.finished_at) == (0, None, None)


def test_pod_without_uid_gives_no_terminations() -> None:
    hub = oom_killed_hub()
    del hub["metadata"]["uid"]
    assert terminations(hub) == []


# -- evictions --------------------------------------------------------------------------------


def test_evicted_hub_status_gives_the_kubelets_numbers() -> None:
    hub = evicted_hub()
    assert eviction_from_pod(hub) == EvictionRow(
        pod_uid=hub["metadata"]["uid"],
        namespace="jhub",
        pod=hub["metadata"]["name"],
        node="core-2",
        owner_kind="ReplicaSet",
        owner_name="hub-5d8f7c9b4",
        at=T0,
        kind="node-pressure",
        resource="memory",
        threshold="100Mi",
        available="91436Ki",
        container="hub",
        usage=318892 * 1024,
        request=128 * MI,
        message=HUB_EVICTION,
        source="pod-status",
    )


def test_evicted_event_gives_the_same_eviction_from_the_other_side() -> None:
    hub = hub_pod()
    body = evicting.evicted_event(
        hub,
        HUB_EVICTION,
        {
            "offending_containers": "hub",
            "offending_containers_usage": "318892Ki",
            "starved_resource": "memory",
        },
        node="core-2",
        moment=T0,
    )
    body["metadata"]["uid"] = "e1"
    row = eviction_from_event(body)
    assert row is not None
    from_status = eviction_from_pod(evicted_hub())
    assert from_status is not None
    assert dataclasses.replace(row, owner_kind="ReplicaSet", owner_name="hub-5d8f7c9b4") == (
        dataclasses.replace(from_status, source="event")
    )


def test_truncated_evicted_event_is_completed_from_its_annotations() -> None:
    hub = hub_pod()
    body = event(
        involved=hub,
        reason="Evicted",
        message="The node was low on resource: memory. Threshold quantity: 100Mi, avai",
        host="core-2",
        annotations={
            "offending_containers": "hub",
            "offending_containers_usage": "318892Ki",
            "starved_resource": "memory",
        },
    )
    row = eviction_from_event(body)
    assert row is not None
    assert (row.kind, row.resource, row.container, row.usage, row.request) == (
        "node-pressure",
        "memory",
        "hub",
        318892 * 1024,
        None,
    )


def test_storage_limit_eviction_names_the_limit_and_container() -> None:
    hub = hub_pod()
    message = 'Container hub exceeded its local ephemeral storage limit "1Gi". '
    hub["status"].update(evicting.evicted_status(hub, message, now=stamp(T0)))
    row = eviction_from_pod(hub)
    assert row is not None
    assert (row.kind, row.resource, row.threshold, row.container) == (
        "local-storage-limit",
        "ephemeral-storage",
        "1Gi",
        "hub",
    )


def test_admission_rejected_under_pressure_is_a_kubelet_eviction() -> None:
    hub = hub_pod()
    hub["status"] = {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node had condition: [MemoryPressure]. ",
    }
    row = eviction_from_pod(hub)
    assert row is not None
    assert (row.kind, row.resource, row.at, row.usage) == (
        "admission-rejected",
        "memory",
        None,
        None,
    )


def test_disruptions_not_made_by_the_kubelet_are_not_evictions() -> None:
    drained = hub_pod()
    drained["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
    )
    assert eviction_from_pod(drained) is None
    assert eviction_from_pod(hub_pod()) is None
    descheduled = event(
        involved=hub_pod(), reason="Evicted", message="pod evicted from core-2 by descheduler"
    )
    assert eviction_from_event(descheduled) is None
    about_node = event(involved=node("core-2"), reason="Evicted", message=HUB_EVICTION)
    assert eviction_from_event(about_node) is None


def test_cpu_consumers_are_in_millicores() -> None:
    hub = hub_pod()
    message = (
        "The node was low on resource: cpu. Threshold quantity: 100m, available: 50m. "
        "Container hub was using 1500m, request is 10m, has larger consumption of cpu. "
    )
    hub["status"].update(evicting.evicted_status(hub, message, now=stamp(T0)))
    row = eviction_from_pod(hub)
    assert row is not None
    assert (row.usage, row.request) == (1500, 10)


# -- node condition transitions ---------------------------------------------------------------


def test_first_sight_of_a_node_records_every_condition() -> None:
    found = node_transitions(None, node("core-2"))
    assert [(t.condition, t.status, t.previous) for t in found] == [
        ("MemoryPressure", "False", ""),
        ("DiskPressure", "False", ""),
        ("PIDPressure", "False", ""),
        ("Ready", "True", ""),
    ]
    assert all(t.node == "core-2" and t.at == T0 for t in found)


def test_heartbeat_alone_is_no_transition_but_a_status_change_is() -> None:
    old = node("core-2")
    beat = node("core-2", heartbeat=timedelta(minutes=1))
    assert node_transitions(old, beat) == []
    down = node(
        "core-2",
        ready="Unknown",
        ready_reason="NodeStatusUnknown",
        ready_message="Kubelet stopped posting node status.",
        transition=timedelta(minutes=5),
    )
    assert node_transitions(old, down) == [
        NodeTransition(
            node="core-2",
            condition="Ready",
            status="Unknown",
            previous="True",
            reason="NodeStatusUnknown",
            message="Kubelet stopped posting node status.",
            at=T0 + timedelta(minutes=5),
        )
    ]


def test_condition_without_transition_time_uses_heartbeat_or_is_skipped() -> None:
    body = node("core-2")
    conditions = body["status"]["conditions"]
    del conditions[0]["lastTransitionTime"]
    del conditions[1]["lastTransitionTime"]
    del conditions[1]["lastHeartbeatTime"]
    found = node_transitions(None, body)
    assert [t.condition for t in found] == ["MemoryPressure", "PIDPressure", "Ready"]


# -- metrics ----------------------------------------------------------------------------------


def test_pod_metrics_give_one_sample_per_container() -> None:
    hub = hub_pod()
    body = pod_metrics(
        hub,
        {"hub": {"cpu": "7m", "memory": "318892Ki"}, "sidecar": {"cpu": "1500n"}},
        at=timedelta(minutes=39),
    )
    body["window"] = "1m0s"
    hub_sample, sidecar = metric_samples(body, node="core-2")
    assert hub_sample == MetricSample(
        kind="pod",
        namespace="jhub",
        name=hub["metadata"]["name"],
        container="hub",
        node="core-2",
        at=T0 + timedelta(minutes=39),
        window_seconds=60.0,
        cpu_millicores=7.0,
        memory_bytes=318892 * 1024,
    )
    assert sidecar.cpu_millicores is not None
    assert abs(sidecar.cpu_millicores - 0.0015) < 1e-12
    assert sidecar.memory_bytes is None


def test_node_metrics_give_one_node_sample() -> None:
    body = node_metrics("core-2", cpu="3200m", memory="24Gi", at=timedelta(minutes=40))
    assert metric_samples(body) == [
        MetricSample(
            "node", "", "core-2", "", "core-2", T0 + timedelta(minutes=40), 30.0, 3200.0, 24 << 30
        )
    ]


def test_metrics_with_bad_values_keep_what_parses() -> None:
    body = node_metrics("core-2", cpu="fast", memory="-5Gi")
    body["window"] = "soon"
    del body["timestamp"]
    [sample] = metric_samples(body)
    assert (sample.at, sample.window_seconds, sample.cpu_millicores) == (T0, None, None)
    assert sample.memory_bytes is None
    del body["metadata"]["creationTimestamp"]
    assert metric_samples(body) == []


@pytest.mark.parametrize(
    ("window", "seconds"),
    [("30s", 30.0), ("1m0s", 60.0), ("1h2m3.5s", 3723.5), ("250ms", 0.25), ("0", 0.0)]
    + [(bad, None) for bad in ("-30s", "30", "1m 0s", "", None, 30, "s", "1" * 65 + "s")],
)
def test_metrics_windows_are_go_durations(window: object, seconds: float | None) -> None:
    body = node_metrics("core-1", at=T0, cpu="100m", memory="1Gi")
    body["window"] = window
    (sample,) = metric_samples(body)
    assert sample.window_seconds == seconds


# -- anything at all --------------------------------------------------------------------------

_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(alphabet=st.characters(blacklist_categories=()), max_size=20),
    st.sampled_from(
        ["OOMKilled", "Evicted", "Pod", "Node", "1e999", "128Mi", "1m0s", "2023-02-01T19:00:00Z"]
    ),
    st.just("y" * 100_000),
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: (
        st.dictionaries(
            st.sampled_from(
                [
                    "metadata", "uid", "name", "namespace", "status", "spec", "state",
                    "lastState", "terminated", "containerStatuses", "containers", "resources",
                    "limits", "requests", "memory", "cpu", "usage", "reason", "message",
                    "involvedObject", "regarding", "conditions", "type", "timestamp", "window",
                    "kind", "containerID", "restartCount", "exitCode", "annotations",
                    "lastTransitionTime", "phase", "ownerReferences", "controller",
                ]
            ),
            inner,
            max_size=6,
        )
        | st.lists(inner, max_size=3)
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(body=_JSON, other=_JSON)
def test_fuzzed_bodies_never_raise_and_give_storable_records(body: Any, other: Any) -> None:
    found: list[object] = [
        event_row(body),
        eviction_from_pod(body),
        eviction_from_event(body),
        *terminations(body),
        *node_transitions(other, body),
        *node_transitions(None, body),
        *metric_samples(body, node="core-2"),
    ]
    for row in found:
        if row is not None:
            storable(row)


@settings(max_examples=200, deadline=None)
@given(
    message=st.text(alphabet=st.characters(blacklist_categories=()), max_size=200),
    usage=st.sampled_from(["318892Ki", "1e999", "-1Mi", "lots", "0.5", "\udcff"]),
)
def test_fuzzed_eviction_messages_never_raise(message: str, usage: str) -> None:
    hub = hub_pod()
    text = f"{message}Container hub was using {usage}, request is 128Mi, has larger "
    text += "consumption of memory. "
    hub["status"].update(evicting.evicted_status(hub, text, now=stamp(T0)))
    row = eviction_from_pod(hub)
    if row is not None:
        storable(row)
