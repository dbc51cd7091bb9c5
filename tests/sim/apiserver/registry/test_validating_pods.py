"""Pod validation worded as kube-apiserver 1.32 words it: the pod spec, and pod updates."""

from __future__ import annotations

import copy
from typing import Any

from kubemedic.sim.apiserver.registry import admitting
from tests.factories import container, pod
from tests.sim.validations import check, messages, stored

Obj = dict[str, Any]


# -- pods --------------------------------------------------------------------------------------


def test_a_pod_needs_containers() -> None:
    body = stored(pod("p"))
    body["spec"]["containers"] = []
    assert messages(check(body)) == ["spec.containers: Required value"]


def test_container_names_are_unique_dns_labels() -> None:
    body = stored(
        pod(
            "p",
            containers=[container("main"), container("main")],
            init_containers=[container("Init")],
        )
    )
    assert messages(check(body)) == [
        'spec.containers[1].name: Duplicate value: "main"',
        'spec.initContainers[0].name: Invalid value: "Init": a lowercase RFC 1123 label must '
        "consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]
    twin = stored(pod("p", containers=[container("main")], init_containers=[container("main")]))
    assert messages(check(twin)) == ['spec.initContainers[0].name: Duplicate value: "main"']


def test_a_container_needs_an_image() -> None:
    body = stored(pod("p"))
    body["spec"]["containers"][0]["image"] = ""
    assert messages(check(body)) == ["spec.containers[0].image: Required value"]


def test_requests_may_not_exceed_limits() -> None:
    body = stored(
        pod("p", containers=[container("main", requests={"cpu": "2"}, limits={"cpu": "1500m"})])
    )
    causes = check(body)
    assert [(c.reason, c.field, c.message) for c in causes] == [
        (
            "FieldValueInvalid",
            "spec.containers[0].resources.requests",
            'Invalid value: "2": must be less than or equal to cpu limit of 1500m',
        )
    ]
    ok = stored(
        pod("p", containers=[container("main", requests={"cpu": "1500m"}, limits={"cpu": "1.5"})])
    )
    assert check(ok) == []


def test_resource_names_and_signs() -> None:
    body = stored(
        pod("p", containers=[container("main", requests={"cpus": "1", "memory": "-1Gi"})])
    )
    assert messages(check(body)) == [
        'spec.containers[0].resources.requests[cpus]: Invalid value: "cpus": must be a standard '
        "resource for containers",
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater '
        "than or equal to 0",
    ]
    gpu = stored(pod("p", containers=[container("main", limits={"nvidia.com/gpu": "1"})]))
    assert check(gpu) == []


def test_mounts_need_a_volume_of_that_name() -> None:
    body = stored(pod("p"))
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    assert messages(check(body)) == ['spec.containers[0].volumeMounts[0].name: Not found: "data"']
    body["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    assert check(body) == []


def test_enumerated_pod_fields() -> None:
    body = stored(pod("p"))
    body["spec"]["restartPolicy"] = "Sometimes"
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "HTTP"}]
    assert messages(check(body)) == [
        'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: '
        '"SCTP", "TCP", "UDP"',
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"',
    ]


def test_tolerations_and_probes() -> None:
    body = stored(
        pod("p", containers=[container("main", liveness={"exec": {"command": ["true"]}})])
    )
    assert check(body) == []
    body["spec"]["containers"][0]["livenessProbe"]["successThreshold"] = 2
    body["spec"]["tolerations"] = [
        {"key": "a", "operator": "Equal", "effect": "NoSchedule", "tolerationSeconds": 5}
    ]
    assert messages(check(body)) == [
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
        "when `tolerationSeconds` is set",
    ]


def _running() -> Obj:
    body = stored(pod("p", node_name="n1"))
    admitting.admit_pod(body)
    return body


def test_a_pod_update_may_change_images() -> None:
    old = _running()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "registry.example/main:2.0"
    new["metadata"]["labels"] = {"app": "web"}
    assert check(new, old) == []


def test_a_pod_update_may_not_change_other_spec_fields() -> None:
    old = _running()
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "n2"

    causes = check(new, old)

    assert [(c.reason, c.field) for c in causes] == [("FieldValueForbidden", "spec")]
    first_line, diff = causes[0].message.split("\n", 1)
    assert first_line == (
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
        "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
        "set to 1 if it was previously negative)"
    )
    assert '- \tNodeName: "n1",' in diff and '+ \tNodeName: "n2",' in diff


def test_a_pod_update_may_add_tolerations_but_not_change_them() -> None:
    old = _running()
    new = copy.deepcopy(old)
    new["spec"]["tolerations"].append({"key": "gpu", "operator": "Exists"})
    new["spec"]["tolerations"][0]["tolerationSeconds"] = 60
    assert check(new, old) == []
    del new["spec"]["tolerations"][1]
    assert messages(check(new, old)) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds"
    ]


def test_a_pod_update_may_not_add_containers() -> None:
    old = _running()
    new = copy.deepcopy(old)
    new["spec"]["containers"].append(copy.deepcopy(new["spec"]["containers"][0]) | {"name": "two"})
    assert messages(check(new, old)) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]


def test_active_deadline_may_only_shrink() -> None:
    old = _running()
    old["spec"]["activeDeadlineSeconds"] = 600
    new = copy.deepcopy(old)
    new["spec"]["activeDeadlineSeconds"] = 300
    assert check(new, old) == []
    new["spec"]["activeDeadlineSeconds"] = 900
    assert messages(check(new, old)) == [
        "spec.activeDeadlineSeconds: Invalid value: 900: must be less than or equal to previous "
        "value"
    ]
    del new["spec"]["activeDeadlineSeconds"]
    assert messages(check(new, old)) == [
        "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive "
        "integer to nil value"
    ]


def test_grace_period_may_go_from_negative_to_one_only() -> None:
    old = _running()
    old["spec"]["terminationGracePeriodSeconds"] = -1
    new = copy.deepcopy(old)
    new["spec"]["terminationGracePeriodSeconds"] = 1
    assert check(new, old) == []
    new["spec"]["terminationGracePeriodSeconds"] = 5
    assert [c.field for c in check(new, old)] == ["spec"]
