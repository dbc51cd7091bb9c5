"""The eviction-message parser: real kubelet wording, old wording, and anything else."""

from __future__ import annotations

import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.model.eviction import (
    Consumer,
    DisruptionKind,
    Eviction,
    classify,
    parse_eviction_message,
    pod_disruption,
    with_annotations,
)
from kubemedic.model.quantities import Quantity, parse_quantity
from tests.factories import pod
from tests.incident3 import HUB_EVICTION

INCIDENT_TEXT = (
    "The node was low on resource: memory. Threshold quantity: ..., available: .... "
    "Container <c> was using <x>, request is <y>, has larger consumption of memory."
)


def q(text: str) -> Quantity:
    return parse_quantity(text)


def as_json(found: Eviction) -> str:
    return json.dumps(found.to_json(), ensure_ascii=False)


# -- node-pressure messages --------------------------------------------------------------------


def test_hub_memory_eviction_yields_resource_threshold_available_and_container_usage() -> None:
    found = parse_eviction_message(HUB_EVICTION)
    assert found.kind is DisruptionKind.NODE_PRESSURE
    assert found.by_kubelet
    assert found.resource == "memory"
    assert found.threshold == q("100Mi")
    assert found.available == q("91436Ki")
    assert found.containers == (
        Consumer(name="hub", usage=q("318892Ki"), request=q("128Mi"), resource="memory"),
    )
    assert found.biggest_consumer is not None
    assert found.biggest_consumer.excess == q("318892Ki") - q("128Mi")


def test_incident_digest_wording_with_placeholders_keeps_raw_text() -> None:
    found = parse_eviction_message(INCIDENT_TEXT)
    assert found.kind is DisruptionKind.NODE_PRESSURE
    assert found.resource == "memory"
    assert found.threshold == "..."
    assert found.available == "..."
    assert [(c.name, c.usage, c.request) for c in found.containers] == [("<c>", "<x>", "<y>")]


def test_biggest_consumer_is_furthest_above_request_not_largest_user() -> None:
    message = (
        "The node was low on resource: memory. Threshold quantity: 750Mi, available: 512Mi. "
        "Container prometheus was using 21Gi, request is 20Gi, has larger consumption of memory. "
        "Container sidecar was using 3Gi, request is 0, has larger consumption of memory. "
    )
    found = parse_eviction_message(message)
    assert [c.name for c in found.containers] == ["prometheus", "sidecar"]
    assert found.containers[1].request == q("0")
    assert found.biggest_consumer is not None
    assert found.biggest_consumer.name == "sidecar"  # 3Gi over request beats 1Gi over


def test_pod_level_resources_sentence_is_the_pod_consumer() -> None:
    message = (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Pod web-0 was using 2Gi, request is 1Gi, has larger consumption of memory. "
    )
    found = parse_eviction_message(message)
    assert found.containers == ()
    assert found.pod == Consumer("web-0", q("2Gi"), q("1Gi"), "memory", scope="pod")
    assert found.biggest_consumer == found.pod


def test_disk_pressure_with_percentage_threshold_and_inodes() -> None:
    found = parse_eviction_message(
        "The node was low on resource: ephemeral-storage. Threshold quantity: 10587122Ki, "
        "available: 9861896Ki. Container app was using 1234Mi, request is 0, has larger "
        "consumption of ephemeral-storage. "
    )
    assert found.resource == "ephemeral-storage"
    assert found.threshold == q("10587122Ki")
    assert found.containers[0].resource == "ephemeral-storage"
    inodes = parse_eviction_message(
        "The node was low on resource: inodes. Threshold quantity: 32768, available: 1022. "
    )
    assert inodes.resource == "inodes"
    assert inodes.available == q("1022")


def test_negative_available_is_a_quantity() -> None:
    found = parse_eviction_message(
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: -3448Ki. "
    )
    assert found.available == q("-3448Ki")


def test_old_kubelet_wordings() -> None:
    condition_list = parse_eviction_message("The node was low on resource: [DiskPressure].")
    assert condition_list.kind is DisruptionKind.NODE_PRESSURE
    assert condition_list.conditions == ("DiskPressure",)
    assert condition_list.resource == "ephemeral-storage"
    exceeds = parse_eviction_message(
        "The node was low on resource: memory. "
        "Container worker was using 3Gi, which exceeds its request of 1Gi. "
    )
    assert exceeds.containers == (Consumer("worker", q("3Gi"), q("1Gi"), "memory"),)


def test_message_cut_before_first_sentence_still_reads_containers() -> None:
    found = parse_eviction_message(
        "Container hub was using 300Mi, request is 128Mi, has larger consumption of memory. "
    )
    assert found.kind is DisruptionKind.NODE_PRESSURE
    assert found.resource == "memory"


# -- local storage limits and admission --------------------------------------------------------


def test_local_storage_limit_messages() -> None:
    empty_dir = parse_eviction_message('Usage of EmptyDir volume "cache" exceeds the limit "1Gi". ')
    assert empty_dir.kind is DisruptionKind.LOCAL_STORAGE_LIMIT
    assert empty_dir.resource == "ephemeral-storage"
    assert [(x.scope, x.name, x.limit) for x in empty_dir.limits] == [
        ("emptyDir", "cache", q("1Gi"))
    ]
    pod_total = parse_eviction_message(
        "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. "
    )
    assert [(x.scope, x.limit) for x in pod_total.limits] == [("pod", q("2Gi"))]
    container = parse_eviction_message(
        'Container builder exceeded its local ephemeral storage limit "500Mi". '
    )
    assert [(x.scope, x.name, x.limit) for x in container.limits] == [
        ("container", "builder", q("500Mi"))
    ]


def test_go_quoted_volume_name_is_unescaped() -> None:
    found = parse_eviction_message(r'Usage of EmptyDir volume "we\"ird" exceeds the limit "1Gi". ')
    assert found.limits[0].name == 'we"ird'


def test_admission_rejection_under_pressure_names_the_conditions() -> None:
    found = classify("Evicted", "The node had condition: [MemoryPressure DiskPressure]. ")
    assert found.kind is DisruptionKind.ADMISSION_REJECTED
    assert found.conditions == ("MemoryPressure", "DiskPressure")
    assert found.resource == "memory"


# -- other disruptions --------------------------------------------------------------------------


def test_preemption_event_names_preemptor_and_node() -> None:
    found = classify("Preempted", "Preempted by pod 6f1c0d2e-1111 on node core-2")
    assert (found.kind, found.preemptor, found.node) == (
        DisruptionKind.PREEMPTION,
        "6f1c0d2e-1111",
        "core-2",
    )
    older = classify("Preempted", "Preempted by jhub/dask-worker-x on node user-7")
    assert (older.preemptor, older.node) == ("jhub/dask-worker-x", "user-7")
    assert not older.by_kubelet


def test_disruption_target_reasons_are_classified() -> None:
    assert classify("EvictionByEvictionAPI", "Eviction API: evicting").kind is (
        DisruptionKind.API_EVICTION
    )
    assert classify(
        "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"
    ).kind is (DisruptionKind.TAINT_MANAGER)
    assert classify("TaintManagerEviction", "Marking for deletion Pod a/b").kind is (
        DisruptionKind.TAINT_MANAGER
    )
    assert classify("DeletionByPodGC", "PodGC: node no longer exists").kind is DisruptionKind.POD_GC
    assert classify("TerminationByKubelet", HUB_EVICTION).kind is DisruptionKind.NODE_PRESSURE
    shutdown = classify("Terminated", "Pod was terminated in response to imminent node shutdown.")
    assert shutdown.kind is DisruptionKind.NODE_SHUTDOWN
    descheduler = classify("Evicted", "pod evicted from core-1 node by sigs.k8s.io/descheduler")
    assert descheduler.kind is DisruptionKind.API_EVICTION
    assert (
        classify("BackOff", "Back-off restarting failed container").kind is DisruptionKind.UNKNOWN
    )


def test_pod_disruption_reads_failed_evicted_status() -> None:
    body = pod("hub-1", phase="Failed", reason="Evicted", message=HUB_EVICTION)
    found = pod_disruption(body)
    assert found is not None
    assert found.kind is DisruptionKind.NODE_PRESSURE
    assert found.containers[0].name == "hub"


def test_pod_disruption_reads_disruption_target_condition_of_running_pod() -> None:
    body = pod("api-1")
    body["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
    )
    found = pod_disruption(body)
    assert found is not None
    assert found.kind is DisruptionKind.API_EVICTION


def test_healthy_or_plainly_failed_pod_has_no_disruption() -> None:
    assert pod_disruption(pod("fine")) is None
    assert pod_disruption(pod("job-1", phase="Failed", reason="Error")) is None
    assert pod_disruption({"status": "weird"}) is None
    assert pod_disruption({}) is None


def test_annotations_fill_what_a_truncated_message_lost() -> None:
    truncated = parse_eviction_message("The node was low on resource: memory. Threshold quant")
    found = with_annotations(
        truncated,
        {
            "starved_resource": "memory",
            "offending_containers": "hub,proxy",
            "offending_containers_usage": "300Mi,20Mi",
        },
    )
    assert [(c.name, c.usage, c.request) for c in found.containers] == [
        ("hub", q("300Mi"), None),
        ("proxy", q("20Mi"), None),
    ]
    assert with_annotations(truncated, "not a mapping") is truncated
    unknown = with_annotations(parse_eviction_message(""), {"starved_resource": "pids"})
    assert (unknown.kind, unknown.resource) == (DisruptionKind.NODE_PRESSURE, "pids")


# -- bad input ------------------------------------------------------------------------------------


def test_garbage_and_non_strings_are_unknown_not_errors() -> None:
    for value in (None, 42, 3.5, ["x"], {"a": 1}, "", "   ", "💥" * 50, "The node was low on"):
        found = parse_eviction_message(value)
        assert found.kind is DisruptionKind.UNKNOWN
        json.dumps(found.to_json())
    assert classify(None, None).kind is DisruptionKind.UNKNOWN


def test_invalid_quantities_are_kept_raw() -> None:
    found = parse_eviction_message(
        "The node was low on resource: memory. Threshold quantity: 12XB, available: lots. "
        "Container a was using ∞Gi, request is 1Gi, has larger consumption of memory. "
    )
    assert (found.threshold, found.available) == ("12XB", "lots")
    assert found.containers[0].usage == "∞Gi"
    assert found.biggest_consumer is not None  # still ranked, without an excess


def test_non_utf8_decoded_text_is_made_encodable() -> None:
    raw = b"The node was low on resource: memory. Container h\xffb was using 1Gi, request is 0, "
    raw += b"has larger consumption of memory. "
    for text in (raw.decode("utf-8", "surrogateescape"), raw.decode("latin-1"), raw):
        found = parse_eviction_message(text)
        assert found.resource == "memory"
        assert len(found.containers) == 1
        as_json(found).encode("utf-8")


def test_huge_input_is_bounded_in_time_and_kept_size() -> None:
    huge = "Container x was using " * 200_000 + HUB_EVICTION
    started = time.perf_counter()
    found = parse_eviction_message(huge)
    assert time.perf_counter() - started < 5
    assert len(found.message) <= 513
    assert found.kind is DisruptionKind.UNKNOWN  # the real sentence lies past the read limit
    long_name = parse_eviction_message(
        "The node was low on resource: memory. Container " + "a" * 10_000 + " was using 1Gi, "
    )
    assert long_name.containers == ()


_FRAGMENTS = st.sampled_from(
    [
        "The node was low on resource: ",
        "memory. ",
        "[DiskPressure]. ",
        "Threshold quantity: ",
        ", available: ",
        "Container ",
        "Pod ",
        " was using ",
        ", request is ",
        ", has larger consumption of ",
        ", which exceeds its request of ",
        'Usage of EmptyDir volume "',
        '" exceeds the limit "',
        "Pod ephemeral local storage usage exceeds the total limit of containers ",
        " exceeded its local ephemeral storage limit ",
        "The node had condition: [",
        "Preempted by pod ",
        " on node ",
        "1Gi",
        "-5e3",
        "\\",
        '"',
        ". ",
        "\udcff",
    ]
)
_TEXT = st.lists(
    st.one_of(_FRAGMENTS, st.text(alphabet=st.characters(blacklist_categories=()), max_size=20)),
    max_size=30,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    reason=st.one_of(st.none(), st.sampled_from(["Evicted", "Preempted", "Terminated"]), st.text()),
    text=_TEXT,
)
def test_fuzzed_messages_never_raise_and_serialise(reason: object, text: str) -> None:
    found = classify(reason, text)
    assert isinstance(found.kind, DisruptionKind)
    as_json(found).encode("utf-8")
    as_json(parse_eviction_message(text)).encode("utf-8")
    as_json(with_annotations(found, {"offending_containers": text, "starved_resource": text}))


@settings(max_examples=200, deadline=None)
@given(
    status=st.recursive(
        st.none() | st.text() | st.integers(),
        lambda inner: (
            st.dictionaries(st.text(max_size=12), inner, max_size=5) | st.lists(inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_fuzzed_pod_bodies_never_raise(status: object) -> None:
    pod_disruption({"status": status})
    pod_disruption({"status": {"phase": "Failed", "reason": "Evicted", "message": status}})
    pod_disruption(
        {
            "status": {
                "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": status}]
            }
        }
    )
