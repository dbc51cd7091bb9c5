"""The FailedScheduling grammar, the status patch, preemption's dry run and the queue (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from kubemedic.model.scheduling import parse_failed_scheduling
from kubemedic.sim.cluster.scheduler import framework
from kubemedic.sim.cluster.scheduler import unschedulable as fit
from kubemedic.sim.cluster.scheduler.filtering import PodInfo
from kubemedic.sim.cluster.scheduler.framework import Code, Diagnosis, Status

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _status(*reasons: str, code: Code = UNRESOLVABLE) -> Status:
    return Status(code, reasons)


def _diagnosis(counts: dict[str, int], **kwargs: object) -> Diagnosis:
    statuses: dict[str, Status] = {}
    for reason, count in counts.items():
        for _ in range(count):
            statuses[f"node-{len(statuses)}"] = _status(reason)
    return Diagnosis(statuses=statuses, **kwargs)  # type: ignore[arg-type]


def test_reasons_are_sorted_as_strings_not_numbers() -> None:
    diagnosis = _diagnosis({"node(s) were unschedulable": 6, "Insufficient cpu": 23})
    diagnosis.statuses["node-x"] = _status("node(s) didn't match the requested node name")
    message = fit.fit_error(30, diagnosis)
    assert message == (
        "0/30 nodes are available: 1 node(s) didn't match the requested node name, "
        "23 Insufficient cpu, 6 node(s) were unschedulable."
    )


def test_incident_histogram_puts_14_before_23_and_6_after_24() -> None:
    affinity = "node(s) didn't match Pod's node affinity/selector"
    counts = {
        framework.untolerated_taint("node.kubernetes.io/not-ready", ""): 96,
        framework.untolerated_taint("hub.jupyter.org_dedicated", "user"): 9,
        framework.untolerated_taint("node.kubernetes.io/network-unavailable", ""): 6,
        affinity: 14,
    }
    diagnosis = _diagnosis(counts)
    for i in range(24):
        reasons = ("Insufficient cpu", "Insufficient memory") if i else ("Insufficient memory",)
        diagnosis.statuses[f"full-{i}"] = Status(Code.UNSCHEDULABLE, reasons)
    assert fit.fit_error(126, diagnosis) == (
        "0/126 nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
        "23 Insufficient cpu, 24 Insufficient memory, 6 node(s) had untolerated taint "
        "{node.kubernetes.io/network-unavailable: }, 9 node(s) had untolerated taint "
        "{hub.jupyter.org_dedicated: user}, 96 node(s) had untolerated taint "
        "{node.kubernetes.io/not-ready: }."
    )


def test_taint_without_value_prints_empty_braces() -> None:
    assert framework.untolerated_taint("node.kubernetes.io/not-ready", "") == (
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    )
    assert (
        framework.untolerated_taint("dedicated", "gpu")
        == "node(s) had untolerated taint {dedicated: gpu}"
    )


def test_one_node_lacking_cpu_and_memory_counts_under_both_reasons() -> None:
    diagnosis = Diagnosis(
        statuses={"a": Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"))}
    )
    assert fit.histogram(1, diagnosis) == {"Insufficient cpu": 1, "Insufficient memory": 1}
    assert fit.fit_error(1, diagnosis) == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    )


def test_nodes_never_filtered_count_under_the_absent_status() -> None:
    reason = fit.absent_plugins_reason(["NodeAffinity"])
    assert reason == "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    diagnosis = Diagnosis(statuses={"a": _status("Too many pods", code=Code.UNSCHEDULABLE)})
    diagnosis.absent = _status(reason)
    assert fit.fit_error(5, diagnosis) == (
        "0/5 nodes are available: 1 Too many pods, "
        "4 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_prefilter_rejection_replaces_the_histogram() -> None:
    diagnosis = Diagnosis(prefilter_msg="pod affinity terms conflict")
    diagnosis.absent = _status("pod affinity terms conflict")
    diagnosis.postfilter_msg = fit.preemption_postfix(3)
    assert fit.fit_error(3, diagnosis) == (
        "0/3 nodes are available: pod affinity terms conflict. preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )


def test_postfix_counts_tried_nodes_and_the_rest_as_not_helpful() -> None:
    tried = {
        "a": _status(fit.NO_PREEMPTION_VICTIMS),
        "b": Status(Code.UNSCHEDULABLE, ("Insufficient memory",)),
    }
    assert fit.preemption_postfix(5, tried) == (
        "preemption: 0/5 nodes are available: 1 Insufficient memory, "
        "1 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling."
    )


def test_postfix_of_a_pod_that_may_not_preempt() -> None:
    never = fit.preemption_postfix(9, ineligible=fit.NOT_ELIGIBLE_NEVER)
    assert never == "preemption: not eligible due to preemptionPolicy=Never."


def test_postfix_is_appended_with_one_space_and_no_extra_dot() -> None:
    diagnosis = _diagnosis({"Insufficient cpu": 2})
    diagnosis.postfilter_msg = fit.preemption_postfix(
        2, {"node-0": _status(fit.NO_PREEMPTION_VICTIMS)}
    )
    message = fit.fit_error(2, diagnosis)
    assert message.endswith("Preemption is not helpful for scheduling.")
    assert ".." not in message


def test_message_reads_back_with_the_model_parser() -> None:
    diagnosis = _diagnosis({"Insufficient cpu": 3, framework.untolerated_taint("k", ""): 2})
    diagnosis.postfilter_msg = fit.preemption_postfix(5)
    parsed = parse_failed_scheduling(fit.fit_error(5, diagnosis))
    assert parsed is not None
    assert parsed.nodes_total == 5
    assert dict(parsed.reasons) == {"Insufficient cpu": 3, "node(s) had untolerated taint {k: }": 2}
    assert parsed.preemption is not None
    assert dict(parsed.preemption.reasons) == {fit.PREEMPTION_NOT_HELPFUL: 5}


def test_event_notes_are_cut_at_1024_bytes_with_an_ellipsis() -> None:
    long = "0/9 nodes are available: " + "x" * 2000
    note = fit.truncate_note(long)
    assert len(note.encode()) == 1024
    assert note.endswith(" ...")
    assert fit.truncate_note("short") == "short"


def test_merge_keeps_every_reason_and_the_strongest_code() -> None:
    merged = framework.merge(
        [Status(Code.UNSCHEDULABLE, ("Insufficient cpu",)), _status("node(s) were unschedulable")]
    )
    assert merged == Status(UNRESOLVABLE, ("Insufficient cpu", "node(s) were unschedulable"))
    assert framework.merge([]) is None


# -- the status patch -------------------------------------------------------------------------


def _unschedulable(message: str) -> dict[str, str]:
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
    }


def test_first_failure_adds_the_whole_condition() -> None:
    status = {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
    patch = fit.condition_patch(status, _unschedulable("m"), now="2026-01-01T00:00:00Z")
    assert patch == {
        "status": {
            "conditions": [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "m",
                }
            ],
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
        }
    }


def test_same_failure_again_writes_nothing() -> None:
    existing = {
        **_unschedulable("m"),
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status = {"conditions": [existing]}
    assert fit.condition_patch(status, _unschedulable("m"), now="2026-01-01T01:00:00Z") is None


def test_new_message_keeps_the_transition_time_and_sends_only_the_change() -> None:
    existing = {
        **_unschedulable("old"),
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patch = fit.condition_patch(
        {"conditions": [existing]}, _unschedulable("new"), now="2026-01-01T01:00:00Z", nominate="n1"
    )
    assert patch == {
        "status": {
            "conditions": [{"type": "PodScheduled", "message": "new"}],
            "$setElementOrder/conditions": [{"type": "PodScheduled"}],
            "nominatedNodeName": "n1",
        }
    }


# -- preemption dry run -----------------------------------------------------------------------


def _pod(name: str, priority: int, *, memory: int = 0, start: float = 0.0) -> PodInfo:
    return PodInfo(
        uid=name, namespace="ns", name=name, priority=priority, memory=memory, start=start,
        labels={"app": name},
    )  # fmt: skip


def _fits_when_freed(capacity: int, pods: Sequence[PodInfo], need: int):  # type: ignore[no-untyped-def]
    def check(removed: Sequence[PodInfo]) -> Status | None:
        used = sum(p.memory for p in pods if p not in removed)
        ok = capacity - used >= need
        return None if ok else Status(Code.UNSCHEDULABLE, ("Insufficient memory",))

    return check


def test_node_without_lower_priority_pods_has_no_victims() -> None:
    pods = [_pod("a", 10, memory=4)]
    outcome = fit.select_victims(
        "n", 10, pods, fits_without=_fits_when_freed(4, pods, 2), budgets=()
    )
    assert outcome == Status(UNRESOLVABLE, (fit.NO_PREEMPTION_VICTIMS,))


def test_victims_are_the_fewest_lower_priority_pods_needed() -> None:
    pods = [_pod("low", 0, memory=2), _pod("lower", -5, memory=2), _pod("high", 100, memory=2)]
    outcome = fit.select_victims("n", 50, pods, fits_without=_fits_when_freed(6, pods, 2))
    assert isinstance(outcome, fit.Candidate)
    assert [v.name for v in outcome.victims] == ["lower"]  # "low" is reprieved first


def test_node_still_too_small_after_evictions_keeps_its_reason() -> None:
    pods = [_pod("low", 0, memory=2)]
    outcome = fit.select_victims("n", 50, pods, fits_without=_fits_when_freed(3, pods, 5))
    assert outcome == Status(Code.UNSCHEDULABLE, ("Insufficient memory",))


def test_budget_protected_pods_are_reprieved_first_and_counted_when_evicted() -> None:
    pods = [_pod("guarded", 0, memory=2), _pod("free", 0, memory=2, start=5.0)]
    budget = fit.Budget("ns", lambda labels: labels.get("app") == "guarded", allowed=0)
    outcome = fit.select_victims(
        "n", 50, pods, fits_without=_fits_when_freed(4, pods, 2), budgets=[budget]
    )
    assert isinstance(outcome, fit.Candidate)
    assert [v.name for v in outcome.victims] == ["free"]
    assert outcome.violations == 0


def test_candidate_with_the_least_important_victims_is_picked() -> None:
    few = fit.Candidate("a", (_pod("x", 5),), 0)
    lower = fit.Candidate("b", (_pod("y", 1), _pod("z", 1)), 0)
    violating = fit.Candidate("c", (_pod("w", 0),), 1)
    assert fit.pick_candidate([few, lower, violating]).node == "b"


# -- the queue --------------------------------------------------------------------------------


def _queued(name: str, priority: int = 0, at: float = 0.0) -> fit.QueuedPod:
    return fit.QueuedPod(name, "ns", name, _pod(name, priority), at)


def test_higher_priority_pods_are_popped_first_then_older_ones() -> None:
    queue = fit.SchedulingQueue()
    for pod in (_queued("late", 0, 2.0), _queued("early", 0, 1.0), _queued("vip", 9, 3.0)):
        queue.add(pod)
    order = [queue.pop(10.0) for _ in range(3)]
    assert [p.name for p in order if p is not None] == ["vip", "early", "late"]


def test_backoff_doubles_per_attempt_up_to_ten_seconds() -> None:
    queue = fit.SchedulingQueue()
    pod = _queued("p")
    delays = []
    for attempts in range(1, 7):
        pod.attempts = attempts
        delays.append(queue.backoff_until(pod) - pod.timestamp)
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_parked_pod_waits_for_a_relevant_event_then_its_backoff() -> None:
    queue = fit.SchedulingQueue()
    queue.add(_queued("p"))
    pod = queue.pop(0.0)
    assert pod is not None
    queue.park(pod, frozenset({"TaintToleration"}), 0.0, error=False)
    queue.move(frozenset({"NodeResourcesFit"}))  # a pod was deleted: taints did not change
    queue.apply_moves(0.5)
    assert pod.where == "unschedulable"
    queue.move(None)  # a node was added
    queue.apply_moves(0.5)
    assert pod.where == "backoff"
    assert queue.pop(0.9) is None
    assert queue.pop(1.0) is pod


def test_event_during_the_attempt_sends_the_pod_to_backoff_not_parking() -> None:
    queue = fit.SchedulingQueue()
    queue.add(_queued("p"))
    pod = queue.pop(0.0)
    assert pod is not None
    queue.move(None)
    queue.park(pod, frozenset({"NodeAffinity"}), 0.0, error=False)
    assert pod.where == "backoff"


def test_parked_pods_are_retried_after_five_minutes() -> None:
    queue = fit.SchedulingQueue()
    queue.add(_queued("p"))
    pod = queue.pop(0.0)
    assert pod is not None
    queue.park(pod, frozenset({"NodeAffinity"}), 0.0, error=False)
    queue.flush_leftover(299.0)
    assert pod.where == "unschedulable"
    queue.flush_leftover(300.5)
    assert pod.where == "active"
