"""Field validation and object validation, worded as kube-apiserver 1.32 words them.

The strict-decoding expectations are those of kube-apiserver's own integration test
(``test/integration/apiserver/field_validation_test.go``); the 422s are replayed from recorded
real responses (``../shared/peer/kubectl-edit``) where they exist.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubemedic.sim import defaulting, errors, validating
from kubemedic.sim.errors import Cause
from kubemedic.sim.schema import definitions
from tests.factories import container, deployment, event, node, pod, replicaset
from tests.sim.manifests import manifest, pdb

Obj = dict[str, Any]

RECORDED = Path(__file__).resolve().parents[3] / "shared" / "peer" / "kubectl-edit"
needs_recordings = pytest.mark.skipif(not RECORDED.is_dir(), reason="recordings not available")

_GROUPS = {
    "Deployment": "apps",
    "ReplicaSet": "apps",
    "StatefulSet": "apps",
    "DaemonSet": "apps",
    "PodDisruptionBudget": "policy",
    "Lease": "coordination.k8s.io",
}
_CLUSTER_SCOPED = {"Node", "Namespace"}


def stored(obj: Obj) -> Obj:
    """``obj`` as the emulator stores it: defaulted, server metadata kept."""
    out = copy.deepcopy(obj)
    kind = out["kind"]
    defaulting.default_object(out, group=_GROUPS.get(kind, ""), version="v1", kind=kind)
    return out


def check(obj: Obj, old: Obj | None = None) -> list[Cause]:
    kind = obj["kind"]
    return validating.validate(
        obj, old=old, group=_GROUPS.get(kind, ""), version="v1", kind=kind,
        namespaced=kind not in _CLUSTER_SCOPED,
    )  # fmt: skip


def messages(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" if c.field else c.message for c in causes]


def service(name: str = "web", **spec: Any) -> Obj:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
    }
    body["spec"] = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return stored(body)


def as_kind(obj: Obj, kind: str) -> Obj:
    out = copy.deepcopy(obj)
    out["kind"] = kind
    return out


# -- field validation (decoding) ----------------------------------------------------------------

DEPLOYMENT = definitions().for_kind("apps", "v1", "Deployment")

#: ``invalidBodyJSON`` of kube-apiserver's field validation integration test.
INVALID_BODY = b"""{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "dupename", "name": "web", "unknownMeta": "metaVal",
               "labels": {"app": "nginx"}},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
                               "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}
    }
  }
}"""


def test_strict_decoding_reports_unknown_and_duplicate_fields_in_document_order() -> None:
    problems = validating.unknown_fields(json.loads(INVALID_BODY), DEPLOYMENT, raw=INVALID_BODY)
    assert problems == [
        'duplicate field "metadata.name"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'duplicate field "spec.paused"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    ]


def test_strict_error_is_the_decoders_bad_request() -> None:
    problems = validating.unknown_fields(json.loads(INVALID_BODY), DEPLOYMENT, raw=INVALID_BODY)
    error = validating.strict_error(problems[:2], kind="Deployment", version="v1")
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'duplicate field "metadata.name", unknown field "metadata.unknownMeta"'
    )


def test_a_valid_body_has_no_field_problems() -> None:
    body = manifest(deployment("web"))
    raw = json.dumps(body).encode()
    assert validating.unknown_fields(body, DEPLOYMENT, raw=raw) == []


def test_without_the_body_bytes_only_unknown_fields_are_found() -> None:
    problems = validating.unknown_fields(json.loads(INVALID_BODY), DEPLOYMENT)
    assert problems == [
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
    ]


def test_a_yaml_body_falls_back_to_the_decoded_object() -> None:
    body = manifest(deployment("web"))
    body["spec"]["bogus"] = 1
    raw = b"apiVersion: apps/v1\nkind: Deployment\n"
    assert validating.unknown_fields(body, DEPLOYMENT, raw=raw) == ['unknown field "spec.bogus"']


def test_duplicate_map_keys_are_reported_with_their_path() -> None:
    raw = b'{"metadata": {"name": "web", "labels": {"app": "a", "app": "b"}}}'
    assert validating.unknown_fields(json.loads(raw), DEPLOYMENT, raw=raw) == [
        'duplicate field "metadata.labels.app"'
    ]


def test_free_form_values_accept_anything() -> None:
    body = manifest(deployment("web"))
    body["metadata"]["managedFields"] = [
        {"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:anything": {}}}}
    ]
    assert validating.unknown_fields(body, DEPLOYMENT) == []


def test_schemaless_custom_resources_check_only_metadata_after_duplicates() -> None:
    raw = (
        b'{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",'
        b' "metadata": {"name": "m1", "name": "m1", "unknownMeta": 1},'
        b' "spec": {"anything": {"goes": true, "goes": false}, "clusterName": "c"}}'
    )
    assert validating.unknown_fields(json.loads(raw), None, raw=raw) == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.anything.goes"',
        'unknown field "metadata.unknownMeta"',
    ]


def test_prune_unknown_drops_exactly_what_is_reported() -> None:
    body = json.loads(INVALID_BODY)
    validating.prune_unknown(body, DEPLOYMENT)
    assert validating.unknown_fields(body, DEPLOYMENT) == []
    assert "unknown1" not in body["spec"]
    assert body["spec"]["paused"] is False
    assert "unknownNested" not in body["spec"]["template"]["spec"]["containers"][0]

    machine = {"metadata": {"name": "m1", "bogus": 1}, "spec": {"free": {"form": 1}}}
    validating.prune_unknown(machine, None)
    assert machine == {"metadata": {"name": "m1"}, "spec": {"free": {"form": 1}}}


@pytest.mark.parametrize(
    ("quantity", "problem"),
    [
        ("1Gb", "unable to parse quantity's suffix"),
        ("lots", "quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ],
)  # fmt: skip
def test_a_value_that_is_no_quantity_is_a_bad_request(quantity: str, problem: str) -> None:
    body = manifest(pod("p", containers=[container("main", limits={"memory": quantity})]))
    error = validating.decoding_error(
        body, definitions().for_kind("", "v1", "Pod"), kind="Pod", version="v1"
    )
    assert error is not None
    assert error.code == 400
    assert error.message == f'Pod in version "v1" cannot be handled as a Pod: {problem}'


def test_a_value_of_the_wrong_json_type_is_a_bad_request() -> None:
    body = manifest(deployment("web"))
    body["spec"]["replicas"] = "three"
    error = validating.decoding_error(body, DEPLOYMENT, kind="Deployment", version="v1")
    assert error is not None
    assert error.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        "string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )


def test_decodable_bodies_pass() -> None:
    body = manifest(deployment("web", containers=[container("web", limits={"cpu": 2})]))
    body["spec"]["template"]["metadata"]["creationTimestamp"] = None
    assert validating.decoding_error(body, DEPLOYMENT, kind="Deployment", version="v1") is None
    assert validating.decoding_error({"x": 1}, None, kind="Machine", version="v1beta1") is None


# -- object metadata ---------------------------------------------------------------------------


def test_builder_objects_are_valid() -> None:
    objects = [
        pod(
            "p",
            node_name="n1",
            containers=[container("main", requests={"cpu": "1"}, limits={"cpu": "2"})],
        ),
        deployment("web"),
        replicaset(deployment("web")),
        node("n1", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        event(involved=pod("p"), reason="BackOff", message="restarting"),
        service(),
        pdb("web", min_available=1, labels={"app": "web"}),
    ]
    for body in objects:
        assert check(stored(body)) == [], body["kind"]


def test_a_name_is_required_unless_one_is_generated() -> None:
    body = stored(pod("p"))
    body["metadata"]["name"] = ""
    assert messages(check(body)) == [
        "metadata.name: Required value: name or generateName is required"
    ]
    body["metadata"]["generateName"] = "web-"
    assert messages(check(body)) == [
        "metadata.name: Required value: name or generateName is required"
    ]
    body["metadata"]["name"] = "web-x7k2p"  # the server generates it before validating
    assert check(body) == []
    body["metadata"]["generateName"] = "Web-"
    assert check(body)[0].field == "metadata.generateName"


SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def test_most_names_are_dns_subdomains() -> None:
    body = stored(pod("p"))
    body["metadata"]["name"] = "Web_1"
    assert messages(check(body)) == [f'metadata.name: Invalid value: "Web_1": {SUBDOMAIN_RULE}']
    body["metadata"]["name"] = "web.v1"
    assert check(body) == []


def test_namespace_names_are_dns_labels() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}
    assert messages(check(ns)) == ['metadata.name: Invalid value: "team.a": must not contain dots']
    ns["metadata"]["name"] = "team-a"
    assert check(ns) == []
    ns["metadata"]["name"] = "x" * 64
    assert messages(check(ns))[0].endswith(": must be no more than 63 characters")


def test_service_names_are_dns_1035_labels() -> None:
    body = service("1web")
    assert messages(check(body)) == [
        'metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an "
        "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]
    assert check(service("web1")) == []


def test_namespaced_objects_need_a_namespace_and_others_refuse_one() -> None:
    body = stored(pod("p"))
    del body["metadata"]["namespace"]
    assert messages(check(body)) == ["metadata.namespace: Required value"]
    machine = stored(node("n1"))
    machine["metadata"]["namespace"] = "default"
    assert messages(check(machine)) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_label_syntax() -> None:
    body = stored(pod("p", labels={"app": "web", "bad key": "ok", "tier": "-front"}))
    assert messages(check(body)) == [
        'metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'metadata.labels: Invalid value: "-front": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]
    good = stored(pod("p", labels={"example.com/app": "web", "empty": ""}))
    assert check(good) == []


def test_label_key_prefixes_are_subdomains() -> None:
    body = stored(pod("p", labels={"Example.com/app": "web"}))
    assert messages(check(body)) == [
        f'metadata.labels: Invalid value: "Example.com/app": prefix part {SUBDOMAIN_RULE}'
    ]


def test_annotations_may_not_exceed_256_kib() -> None:
    body = stored(pod("p"))
    body["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
    causes = check(body)
    assert [(c.reason, c.field, c.message) for c in causes] == [
        ("FieldValueTooLong", "metadata.annotations", "Too long: may not be more than 262144 bytes")
    ]
    body["metadata"]["annotations"] = {"big": "x" * (256 * 1024 - 3)}
    assert check(body) == []


def test_finalizers_must_be_qualified_or_standard() -> None:
    body = stored(pod("p"))
    body["metadata"]["finalizers"] = ["example.com/cleanup", "foregroundDeletion", "cleanup"]
    assert messages(check(body)) == [
        'metadata.finalizers[2]: Invalid value: "cleanup": name is neither a standard finalizer '
        "name nor is it fully qualified"
    ]


def test_owner_references_need_their_identity() -> None:
    body = stored(pod("p", owner=replicaset(deployment("web"))))
    assert check(body) == []
    del body["metadata"]["ownerReferences"][0]["uid"]
    assert messages(check(body)) == [
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty'
    ]


def test_metadata_identity_is_immutable() -> None:
    old = stored(pod("p"))
    new = copy.deepcopy(old)
    assert check(new, old) == []
    new["metadata"]["uid"] = "other"
    assert messages(check(new, old)) == ['metadata.uid: Invalid value: "other": field is immutable']


def test_no_new_finalizers_on_an_object_being_deleted() -> None:
    old = stored(pod("p"))
    old["metadata"]["deletionTimestamp"] = "2023-02-01T19:05:00Z"
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["example.com/late"]
    assert messages(check(new, old)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"example.com/late"}'
    ]


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
    defaulting.admit_pod(body)
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


# -- workloads ---------------------------------------------------------------------------------


def test_a_deployment_needs_a_selector_matching_its_template() -> None:
    body = stored(deployment("web"))
    del body["spec"]["selector"]
    assert messages(check(body)) == [
        "spec.selector: Required value",
        "spec.template.metadata.labels: Invalid value: "
        'map[string]string{"app.kubernetes.io/name":"web"}: `selector` does not match template '
        "`labels`",
    ]
    body["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "api"}}
    assert messages(check(body))[-1].endswith("`selector` does not match template `labels`")
    body["spec"]["selector"] = {
        "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["web"]}]
    }
    assert check(body) == []


def test_an_empty_selector_is_refused() -> None:
    body = stored(deployment("web"))
    body["spec"]["selector"] = {}
    assert messages(check(body)) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for "
        "deployment"
    ]


def test_selector_expressions_are_checked() -> None:
    body = stored(deployment("web"))
    body["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    assert messages(check(body)) == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'"
    ]


def test_a_workload_selector_is_immutable() -> None:
    for kind in ("Deployment", "ReplicaSet", "DaemonSet"):
        old = stored(as_kind(deployment("web"), kind))
        new = copy.deepcopy(old)
        new["spec"]["replicas"] = 5
        assert check(new, old) == [], kind
        new["spec"]["selector"]["matchLabels"]["tier"] = "front"
        new["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
        assert messages(check(new, old)) == [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
            '"app.kubernetes.io/name":"web", "tier":"front"}, '
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
        ], kind


def test_replicas_may_not_be_negative() -> None:
    body = stored(deployment("web"))
    body["spec"]["replicas"] = -1
    assert messages(check(body)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_workload_pods_must_restart_always() -> None:
    body = stored(deployment("web"))
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert messages(check(body)) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
    ]


def test_recreate_deployments_take_no_rolling_update_parameters() -> None:
    body = stored(deployment("web"))
    body["spec"]["strategy"]["type"] = "Recreate"
    assert messages(check(body)) == [
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
        "'Recreate'"
    ]
    del body["spec"]["strategy"]["rollingUpdate"]
    assert check(body) == []


def test_rolling_update_parameters() -> None:
    body = stored(deployment("web"))
    body["spec"]["strategy"]["rollingUpdate"] = {"maxUnavailable": "120%", "maxSurge": 0}
    assert messages(check(body)) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 120%: must not be greater "
        "than 100%"
    ]
    body["spec"]["strategy"]["rollingUpdate"] = {"maxUnavailable": 0, "maxSurge": "0%"}
    assert messages(check(body)) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
        "`maxSurge` is 0"
    ]


def test_statefulset_updates_are_limited_to_a_few_fields() -> None:
    old = stored(as_kind(deployment("db"), "StatefulSet"))
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "db:2"
    assert check(new, old) == []
    new["spec"]["serviceName"] = "other"
    assert messages(check(new, old)) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ]


def test_statefulset_pod_management_policy() -> None:
    body = stored(as_kind(deployment("db"), "StatefulSet"))
    body["spec"]["podManagementPolicy"] = "Random"
    assert messages(check(body)) == [
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
    ]


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
    defaulting.prepare_for_update(new, old, group="", version="v1", kind="Service")
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
    defaulting.prepare_for_update(new, old, group="", version="v1", kind="Service")

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
    defaulting.prepare_for_update(new, old, group="", version="v1", kind="Service")
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


def test_disruption_budget_takes_one_of_min_available_and_max_unavailable() -> None:
    budget = pdb("web", min_available=1, labels={"app": "web"})
    budget["spec"]["maxUnavailable"] = "10%"
    causes = check(budget)
    assert [(c.reason, c.field) for c in causes] == [("FieldValueInvalid", "spec")]
    assert causes[0].message.startswith("Invalid value: policy.PodDisruptionBudgetSpec{")
    assert causes[0].message.endswith(": minAvailable and maxUnavailable cannot be both set")
    del budget["spec"]["minAvailable"]
    assert check(budget) == []
    budget["spec"]["maxUnavailable"] = "ten"
    assert messages(check(budget)) == [
        "spec.maxUnavailable: Invalid value: ten: a valid percent string must be a numeric "
        "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is "
        "'[0-9]+%')"
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


def test_custom_resources_get_metadata_validation_only() -> None:
    machine = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": "m1", "namespace": "default", "finalizers": ["machine"]},
        "spec": {"anything": True},
    }

    def run() -> list[Cause]:
        return validating.validate(
            machine,
            old=None,
            group="cluster.x-k8s.io",
            version="v1beta1",
            kind="Machine",
            namespaced=True,
        )

    assert run() == []
    machine["metadata"]["name"] = "M1"
    assert [c.field for c in run()] == ["metadata.name"]


def test_identical_causes_are_reported_once() -> None:
    body = stored(pod("p", labels={"a": "-x", "b": "-x"}))
    assert len(check(body)) == 1


def test_an_update_is_compared_with_the_stored_object_as_defaulted() -> None:
    """The real server defaults what it reads from storage; objects loaded without their
    defaults (snapshots) must not make every later update look like a spec change."""
    loaded = pod("p", node_name="n1", containers=[container("main", limits={"cpu": "0.5"})])
    labelled = stored(loaded)
    labelled["metadata"]["labels"] = {"app": "web"}
    assert check(labelled, loaded) == []
    sts = as_kind(deployment("db"), "StatefulSet")
    scaled = stored(sts)
    scaled["spec"]["replicas"] = 4
    assert check(scaled, sts) == []
