"""The scheduler's FitError grammar, read back (kubemedic.model.scheduling)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.model.scheduling import (
    SchedulingFailure,
    dominant_class,
    format_failed_scheduling,
    parse_failed_scheduling,
    reason_class,
)
from tests.incident3 import FIT_ERROR, FIT_ERROR_REASONS


def test_incident_3_message_reads_every_count_verbatim() -> None:
    failure = parse_failed_scheduling(FIT_ERROR)
    assert failure is not None
    assert failure.nodes_total == 126
    assert dict(failure.reasons) == FIT_ERROR_REASONS
    assert failure.prefilter is None
    assert failure.preemption is None
    assert failure.postfilter is None
    assert not failure.partial


def test_incident_3_message_is_what_the_scheduler_formats() -> None:
    assert format_failed_scheduling(126, FIT_ERROR_REASONS) == FIT_ERROR


def test_formatting_sorts_the_histogram_as_strings_not_numbers() -> None:
    text = format_failed_scheduling(20, {"Insufficient cpu": 9, "Insufficient memory": 10})
    assert text == "0/20 nodes are available: 10 Insufficient memory, 9 Insufficient cpu."


def test_incident_3_dominant_class_is_the_not_ready_taint() -> None:
    failure = parse_failed_scheduling(FIT_ERROR)
    assert failure is not None
    assert dominant_class(failure) == "taint:node.kubernetes.io/not-ready"


def test_preemption_postfix_is_parsed_as_its_own_fit_error() -> None:
    message = (
        "0/7 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label), 6 node(s) had volume node affinity conflict. "
        "preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None
    assert dict(failure.reasons) == {
        "node(s) didn't match pod topology spread constraints (missing required label)": 1,
        "node(s) had volume node affinity conflict": 6,
    }
    assert failure.postfilter == (
        "preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
    )
    assert failure.preemption == SchedulingFailure(
        nodes_total=7, reasons={"Preemption is not helpful for scheduling": 7}
    )
    assert dominant_class(failure) == "volume"


def test_preemption_with_mixed_victim_reasons() -> None:
    message = (
        "0/3 nodes are available: 1 node(s) had untolerated taint "
        "{node-role.kubernetes.io/control-plane: }, 2 Insufficient memory. preemption: 0/3 nodes "
        "are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found "
        "for incoming pod."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None and failure.preemption is not None
    assert dict(failure.preemption.reasons) == {
        "Preemption is not helpful for scheduling": 1,
        "No preemption victims found for incoming pod": 2,
    }
    assert dominant_class(failure) == "insufficient-memory"


def test_ineligible_preemption_keeps_its_text_without_a_histogram() -> None:
    message = (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None
    assert dict(failure.reasons) == {"Insufficient cpu": 3}
    assert failure.preemption is None
    assert failure.postfilter == "preemption: not eligible due to preemptionPolicy=Never."


def test_pre_1_27_double_period_postfix_is_tolerated() -> None:
    message = (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None and failure.preemption is not None
    assert dict(failure.preemption.reasons) == {"No preemption victims found for incoming pod": 2}
    assert failure.postfilter is not None and not failure.postfilter.endswith("..")


def test_prefilter_message_is_not_mistaken_for_a_histogram() -> None:
    message = (
        "0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None
    assert failure.prefilter == "pod has unbound immediate PersistentVolumeClaims"
    assert dict(failure.reasons) == {}
    assert dominant_class(failure) == "volume"


def test_quoted_prefilter_with_commas_stays_whole() -> None:
    message = '0/4 nodes are available: persistentvolumeclaim "data, logs" not found.'
    failure = parse_failed_scheduling(message)
    assert failure is not None
    assert failure.prefilter == 'persistentvolumeclaim "data, logs" not found'


def test_old_taint_wording_with_comma_outside_braces_stays_one_reason() -> None:
    message = (
        "0/6 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, "
        "that the pod didn't tolerate, 5 Insufficient memory."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None
    assert dict(failure.reasons) == {
        "node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate": 1,
        "Insufficient memory": 5,
    }
    assert dominant_class(failure) == "insufficient-memory"


def test_extended_resources_and_anti_affinity_reasons() -> None:
    message = (
        "0/10 nodes are available: 2 node(s) didn't match pod anti-affinity rules, "
        "8 Insufficient nvidia.com/gpu."
    )
    failure = parse_failed_scheduling(message)
    assert failure is not None
    assert failure.reasons == {
        "node(s) didn't match pod anti-affinity rules": 2,
        "Insufficient nvidia.com/gpu": 8,
    }
    assert dominant_class(failure) == "insufficient-nvidia.com/gpu"


def test_scheduler_truncated_message_drops_the_cut_item_and_flags_partial() -> None:
    cut = FIT_ERROR[: FIT_ERROR.index("96 node(s)") + 30] + " ..."
    failure = parse_failed_scheduling(cut)
    assert failure is not None
    assert failure.partial
    assert failure.nodes_total == 126
    assert "Insufficient memory" in failure.reasons
    assert sum(failure.reasons.values()) == 14 + 23 + 24 + 6 + 9


def test_empty_cluster_message_reads_as_zero_nodes() -> None:
    failure = parse_failed_scheduling("no nodes available to schedule pods")
    assert failure == SchedulingFailure(nodes_total=0)
    assert dominant_class(failure) == "no-nodes"


def test_messages_that_are_not_fit_errors_give_none() -> None:
    assert parse_failed_scheduling("") is None
    assert parse_failed_scheduling(None) is None
    assert parse_failed_scheduling(42) is None
    assert parse_failed_scheduling('running PreBind plugin "VolumeBinding": timed out') is None
    assert parse_failed_scheduling("1/3 nodes are available: 3 Insufficient cpu.") is None


def test_garbage_histogram_items_flag_partial_without_raising() -> None:
    failure = parse_failed_scheduling("0/3 nodes are available: 3 Insufficient cpu, {{{, ((( .")
    assert failure is not None
    assert failure.nodes_total == 3


def test_huge_message_is_capped_and_partial() -> None:
    reasons = {f"Insufficient example.com/r{i}": i + 1 for i in range(10000)}
    failure = parse_failed_scheduling(format_failed_scheduling(99999, reasons))
    assert failure is not None
    assert failure.partial
    assert 0 < len(failure.reasons) < 10000


def test_absurd_counts_do_not_overflow_int_parsing() -> None:
    assert parse_failed_scheduling("0/" + "9" * 5000 + " nodes are available: 1 x.") is None
    failure = parse_failed_scheduling("0/3 nodes are available: " + "7" * 5000 + " x.")
    assert failure is not None


def test_reason_classes() -> None:
    assert reason_class("Insufficient cpu") == "insufficient-cpu"
    assert reason_class("Too many pods") == "too-many-pods"
    assert reason_class("node(s) didn't match Pod's node affinity/selector") == "node-affinity"
    assert reason_class("node(s) didn't satisfy existing pods anti-affinity rules") == (
        "pod-anti-affinity"
    )
    assert reason_class("node(s) didn't match pod affinity rules") == "pod-affinity"
    assert reason_class("node(s) were unschedulable") == "node-unschedulable"
    assert reason_class("node(s) had volume node affinity conflict") == "volume"
    assert reason_class('persistentvolumeclaim "x" not found') == "volume"
    assert reason_class("node(s) didn't have free ports for the requested pod ports") == (
        "host-ports"
    )
    assert reason_class("node(s) had taints that the pod didn't tolerate") == "taint"
    assert reason_class("something new in 1.40") == "other"


# Scheduler reasons never end in a period: the grammar's own terminator follows them.
_WORD = st.from_regex(r"[A-Za-z](?:[A-Za-z'./\-]{0,10}[A-Za-z])?", fullmatch=True)
_TAINT_KEY = st.from_regex(r"[a-z][a-z0-9.\-]{0,20}(/[a-z0-9\-]{1,12})?", fullmatch=True)
_REASON = st.one_of(
    st.sampled_from(
        [
            "node(s) didn't match Pod's node affinity/selector",
            "node(s) didn't match pod topology spread constraints (missing required label)",
            "node(s) had volume node affinity conflict",
            "node(s) were unschedulable",
            "Too many pods",
            "Preemption is not helpful for scheduling",
        ]
    ),
    _WORD.map(lambda resource: f"Insufficient {resource}"),
    st.tuples(_TAINT_KEY, st.from_regex(r"[a-z0-9_.\-]{0,10}", fullmatch=True)).map(
        lambda kv: f"node(s) had untolerated taint {{{kv[0]}: {kv[1]}}}"
    ),
    st.lists(_WORD, min_size=1, max_size=5).map(" ".join),
)


@given(
    nodes=st.integers(min_value=0, max_value=100000),
    reasons=st.dictionaries(_REASON, st.integers(min_value=1, max_value=100000), max_size=12),
    preempt=st.dictionaries(_REASON, st.integers(min_value=1, max_value=1000), max_size=3),
)
@settings(max_examples=300)
def test_any_formatted_histogram_parses_back_to_the_same_counts(
    nodes: int, reasons: dict[str, int], preempt: dict[str, int]
) -> None:
    postfilter = "preemption: " + format_failed_scheduling(nodes, preempt) if preempt else None
    failure = parse_failed_scheduling(
        format_failed_scheduling(nodes, reasons, postfilter=postfilter)
    )
    assert failure is not None
    assert failure.nodes_total == nodes
    assert dict(failure.reasons) == reasons
    assert not failure.partial
    if preempt:
        assert failure.preemption is not None
        assert dict(failure.preemption.reasons) == preempt


@given(st.text(max_size=400))
@settings(max_examples=500)
def test_random_text_never_raises(text: str) -> None:
    parse_failed_scheduling(text)
    parse_failed_scheduling("0/12 nodes are available: " + text)
    parse_failed_scheduling("0/12 nodes are available: 3 " + text + " preemption: " + text)


@given(st.text(alphabet='0123456789 ,.{}()[]":/a', max_size=300))
@settings(max_examples=500)
def test_punctuation_soup_never_raises_and_counts_stay_non_negative(text: str) -> None:
    failure = parse_failed_scheduling("0/5 nodes are available: " + text)
    assert failure is not None
    assert all(count >= 0 for count in failure.reasons.values())
    if failure.reasons or failure.prefilter or failure.nodes_total:
        dominant_class(failure)
