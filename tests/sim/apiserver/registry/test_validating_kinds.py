"""Validation of Services, Namespaces, Nodes, Leases, ConfigMaps and Events, worded as
kube-apiserver 1.32 words it; Service errors are replayed from recorded real responses
(``../shared/peer/kubectl-edit``) where they exist."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubemedic.sim.apiserver.registry import admitting, validating
from kubemedic.sim.machinery import errors
from tests import paths
from tests.factories import event, node, pod
from tests.sim.validations import check, messages, service, stored

Obj = dict[str, Any]

RECORDED = paths.PEER / "kubectl-edit"
needs_recordings = pytest.mark.skipif(not RECORDED.is_dir(), reason="recordings not available")


# -- services ----------------------------------------------------------------------------------


def test_a_cluster_ip_service_needs_ports() -> None:
    body = service(ports=[])
    assert messages(check(body)) == ["spec.ports: Required value"]
    assert check(service(clusterIP="None", ports=[])) == []


def test_service_ports() -> None:
    body = service(ports=[{"port": 80, "name": "http"}, {"port": 0}, {"port": 80, "name": "http"}])
    assert messages(check(body)) == [
        "spec.ports[1].name: Required value",
        "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        # defaulted from the port, so just as wrong
        "spec.ports[1].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[2].name: Duplicate value: "http"',
        'spec.ports[2]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", '
        "AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, "
        'StrVal:""}, NodePort:0}',
    ]


def test_external_name_services() -> None:
    body = service(type="ExternalName", ports=[])
    assert messages(check(body)) == ["spec.externalName: Required value"]
    assert check(service(type="ExternalName", externalName="db.example.com.", ports=[])) == []


def test_cluster_ip_must_be_an_ip_and_may_not_change() -> None:
    old = service(clusterIP="10.96.0.10")
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.96.0.11"
    admitting.prepare_for_update(new, old, group="", version="v1", kind="Service")
    assert messages(check(new, old)) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.11"}: may not change once set'
    ]
    assert messages(check(service(clusterIP="300.0.0.1"))) == [
        'spec.clusterIPs[0]: Invalid value: "300.0.0.1": must be a valid IP address, (e.g. '
        "10.9.8.7 or 2001:db8::ffff)"
    ]


def _recorded_service(path: str) -> Obj:
    body: Obj = json.loads((RECORDED / path).read_text())
    for key in ("selfLink",):
        body["metadata"].pop(key, None)
    return stored(body)


def _recorded_causes(path: str) -> list[tuple[str, str]]:
    status = json.loads((RECORDED / path).read_text())
    return [(c["reason"], c["field"]) for c in status["details"]["causes"]]


#: 1.32 names the list (``spec.clusterIPs[0]``) where the recorded 2017 server named
#: ``spec.clusterIP``, and words the messages anew; the reasons and their order are unchanged.
_RENAMED = {"spec.clusterIP": "spec.clusterIPs[0]"}


@needs_recordings
def test_recorded_create_with_a_bad_protocol_and_a_bad_ip() -> None:
    body = _recorded_service("testcase-create-list-error/3.request")
    causes = check(body)
    expected = _recorded_causes("testcase-create-list-error/3.response")
    assert [(c.reason, c.field) for c in causes] == [(r, _RENAMED.get(f, f)) for r, f in expected]
    error = errors.invalid("Service", "svc2", causes)
    assert error.message == (
        'Service "svc2" is invalid: [spec.ports[0].protocol: Unsupported value: "VHF": supported '
        'values: "SCTP", "TCP", "UDP", spec.clusterIPs[0]: Invalid value: "10.0.0.182.1": must '
        "be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)]"
    )


@needs_recordings
@pytest.mark.parametrize(
    ("stored_at", "response"),
    [
        ("testcase-edit-error-reedit/0.response", "testcase-edit-error-reedit/2.response"),
        ("testcase-repeat-error/0.response", "testcase-repeat-error/2.response"),
    ],
)
def test_recorded_edit_of_cluster_ip_to_a_bad_address(stored_at: str, response: str) -> None:
    old = _recorded_service(stored_at)
    new = copy.deepcopy(old)
    request = json.loads((RECORDED / response.replace("response", "request")).read_text())
    new["spec"].update(request["spec"])  # the strategic merge patch kubectl sent
    admitting.prepare_for_update(new, old, group="", version="v1", kind="Service")

    causes = check(new, old)

    expected = _recorded_causes(response)
    assert [(c.reason, c.field) for c in causes] == [(r, _RENAMED.get(f, f)) for r, f in expected]


@needs_recordings
def test_recorded_edits_of_a_service_list() -> None:
    listing = json.loads((RECORDED / "testcase-list-errors/1.response").read_text())
    old = stored({"apiVersion": "v1", "kind": "Service", **listing["items"][0]})
    # 3.request: clusterIP changed and protocol VHF on the port keyed 82.
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.0.0.10"
    new["spec"]["ports"][0]["protocol"] = "VHF"
    admitting.prepare_for_update(new, old, group="", version="v1", kind="Service")
    expected = _recorded_causes("testcase-list-errors/3.response")
    causes = check(new, old)
    assert [(c.reason, c.field) for c in causes] == [(r, _RENAMED.get(f, f)) for r, f in expected]
    # 6.request: port 82 replaced by port 83 with protocol VHF.
    new = copy.deepcopy(old)
    new["spec"]["ports"] = [{"name": "80", "port": 83, "protocol": "VHF", "targetPort": 81}]
    expected = _recorded_causes("testcase-list-errors/6.response")
    assert [(c.reason, c.field) for c in check(new, old)] == expected


# -- other kinds -------------------------------------------------------------------------------


def test_namespace_finalizers() -> None:
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "a"},
        "spec": {"finalizers": ["kubernetes"]},
    }
    assert check(ns) == []
    ns["spec"]["finalizers"] = ["custom"]
    assert messages(check(ns)) == [
        'spec.finalizers: Invalid value: "custom": name is neither a standard finalizer name nor '
        "is it fully qualified"
    ]


def test_node_taints() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    body = stored(node("n1", taints=[taint, dict(taint), {"key": "x", "effect": "Sometimes"}]))
    assert messages(check(body)) == [
        'spec.taints[1]: Duplicate value: core.Taint{Key:"dedicated", Value:"gpu", '
        'Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and '
        "effect pair",
        'spec.taints[2].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
    ]


def test_node_provider_id_is_set_once() -> None:
    old = stored(node("n1"))
    new = copy.deepcopy(old)
    new["spec"]["unschedulable"] = True
    assert check(new, old) == []
    new["spec"]["providerID"] = "openstack:///other"
    assert messages(check(new, old)) == [
        'spec.providerID: Forbidden: node updates may not change providerID except from "" to valid'
    ]


def test_lease_durations() -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "n1", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40},
    }
    assert check(lease) == []
    lease["spec"]["leaseDurationSeconds"] = 0
    assert messages(check(lease)) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    ]


def test_config_map_keys() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
    }
    cm["data"] = {"app.yaml": "x", "bad key": "y"}
    assert messages(check(cm)) == [
        'data[bad key]: Invalid value: "bad key": a valid config key must consist of '
        "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
        "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
    ]


def test_an_event_lives_in_its_objects_namespace() -> None:
    body = event(involved=pod("p", namespace="team-a"), reason="BackOff", message="restarting")
    assert check(body) == []
    body["metadata"]["namespace"] = "default"
    assert messages(check(body)) == [
        'involvedObject.namespace: Invalid value: "team-a": does not match event.namespace'
    ]


def test_events_api_events_need_their_reporter() -> None:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "default"},
        "eventTime": "2023-02-01T19:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "BackOff",
        "action": "Restarting",
        "type": "Warning",
        "reportingController": "kubelet",
        "reportingInstance": "n1",
    }
    causes = validating.validate(
        body, old=None, group="events.k8s.io", version="v1", kind="Event", namespaced=True
    )
    assert causes == []
    del body["reportingController"]
    causes = validating.validate(
        body, old=None, group="events.k8s.io", version="v1", kind="Event", namespaced=True
    )
    assert messages(causes) == ["reportingController: Required value"]
