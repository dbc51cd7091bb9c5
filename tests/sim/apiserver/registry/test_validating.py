"""Object validation worded as kube-apiserver 1.32 words it: the metadata every kind shares.

The kinds' own rules are pinned in ``test_validating_pods``, ``test_validating_workloads`` and
``test_validating_kinds``; field validation while decoding in ``test_decoding``.
"""

from __future__ import annotations

import copy

from kubemedic.sim.apiserver.registry import validating
from kubemedic.sim.machinery.errors import Cause
from tests.factories import container, deployment, event, node, pod, replicaset
from tests.sim.manifests import pdb
from tests.sim.validations import as_kind, check, messages, service, stored

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


# -- every kind --------------------------------------------------------------------------------


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
