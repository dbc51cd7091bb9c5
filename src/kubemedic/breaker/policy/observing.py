"""Pods and pinned templates as the breaker sees them, read from a :class:`ClusterView`.

``observe`` turns every pod with a controller into a :class:`PodObservation` (the admission rules
are the ``failed-pod-storm`` check's, ``checks.storm.rejected_at_admission``); ``predict`` turns
the ``pinned-node-name`` check's findings into :class:`Prediction` values, so the replicas x
requests vs free allocatable arithmetic is the check's (``kubemedic.model.resources``), not a
second copy.
"""

from __future__ import annotations

from kubemedic.breaker.policy.records import PodObservation, Prediction
from kubemedic.checks.pinned import PinnedNodeNameConfig, pinned_node_name
from kubemedic.checks.storm import rejected_at_admission
from kubemedic.model import objects, owners, timing
from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView

__all__ = ["observe", "predict"]


def observe(
    view: ClusterView, *, extra_reasons: tuple[str, ...] = ()
) -> tuple[PodObservation, ...]:
    """Every pod of the view that has a controller, with its outermost owner."""
    extra = frozenset(extra_reasons)
    out: list[PodObservation] = []
    for pod in view.pods:
        chain = view.owner_chain(pod)
        if not chain:
            continue
        status = objects.get_map(pod, "status")
        out.append(
            PodObservation(
                namespace=objects.get_str(pod, "metadata", "namespace") or "default",
                name=objects.get_str(pod, "metadata", "name") or "",
                owner=owners.recover_deployment(view, chain[-1], pod=pod),
                phase=objects.get_str(status, "phase") or "",
                reason=objects.get_str(status, "reason") or "",
                created=timing.created_at(pod),
                rejected=rejected_at_admission(pod, extra),
                node=objects.get_str(pod, "spec", "nodeName") or "",
                message=objects.get_str(status, "message") or "",
            )
        )
    return tuple(out)


def predict(view: ClusterView) -> tuple[Prediction, ...]:
    """Pinned templates whose node admits fewer replicas than asked (``excessReplicas > 0``)."""
    out: list[Prediction] = []
    for finding in pinned_node_name(view, PinnedNodeNameConfig(report_zero_replicas=False)):
        evidence = finding.evidence
        fits, replicas = evidence.get("fitsReplicas"), evidence.get("replicas")
        if not isinstance(fits, int) or not isinstance(replicas, int) or fits >= replicas:
            continue
        out.append(
            Prediction(
                owner=finding.object,
                node=str(evidence.get("nodeName") or ""),
                replicas=replicas,
                fits=fits,
                limiting=evidence.get("limitingResource"),
                blockers=tuple(evidence.get("admissionBlockers") or ()),
                resource_version=_resource_version(view, finding.object),
            )
        )
    return tuple(out)


def _resource_version(view: ClusterView, ref: ObjectRef) -> str | None:
    body = view.workload(ref.kind, ref.namespace, ref.name)
    return None if body is None else objects.get_str(body, "metadata", "resourceVersion")
