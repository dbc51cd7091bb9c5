"""Label and field selectors against the real server's parser, matcher and error wording."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.sim.machinery.errors import StatusError
from kubemedic.sim.machinery.fieldlabels import check_supported, selectable_fields
from kubemedic.sim.machinery.selecting import (
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    Requirement,
    escape_value,
)
from tests.factories import event, node, pod

LABELS = {"app": "web", "tier": "front", "version": "3"}

LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_RULE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def bad_request(call, *args):
    with pytest.raises(StatusError) as caught:
        call(*args)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    return caught.value.message


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=api", True),
        ("missing!=x", True),
        ("app in (api,web)", True),
        ("app in (api)", False),
        ("missing in (x)", False),
        ("app notin (api)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("version>2", True),
        ("version<3", False),
        ("app>1", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("  app   in\t(web) ,\ntier ", True),
        ("", True),
    ],
)
def test_every_operator_selects_like_the_server(text, selected):
    assert LabelSelector.parse(text).matches(LABELS) is selected


def test_selector_prints_canonically_sorted_by_key_with_sorted_value_sets():
    parsed = LabelSelector.parse("z notin (b,a), x in (foo,,baz),!w,y== 1 ,v>2")
    assert str(parsed) == "v>2,!w,x in (,baz,foo),y==1,z notin (a,b)"


def test_in_and_notin_keywords_are_plain_identifiers_in_value_position():
    parsed = LabelSelector.parse("notin=in,in in (notin)")
    assert parsed.matches({"notin": "in", "in": "notin"})


def test_empty_value_set_means_the_empty_value():
    assert LabelSelector.parse("x in ()").matches({"x": ""})
    assert not LabelSelector.parse("x in ()").matches({"x": "a"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
        ("x in", "unable to parse requirement: found '' expected: '('"),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("x in =", "unable to parse requirement: found '=' expected: '('"),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        ("x,", "found '', expected: identifier after ','"),
        ("x=a,,y", "found ',', expected: identifier after ','"),
        (",x", "found ',', expected: !, identifier, or 'end of string'"),
        ("!=x", "found '!=', expected: !, identifier, or 'end of string'"),
        ("!,x", "unable to parse requirement: found ',', expected: identifier"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x=-bad",
            f'unable to parse requirement: values[0][x]: Invalid value: "-bad": {LABEL_VALUE_RULE}',
        ),
        ("Bad_", f'unable to parse requirement: <nil>: Invalid value: "Bad_": {NAME_RULE}'),
        (
            "/x",
            'unable to parse requirement: <nil>: Invalid value: "/x": '
            "prefix part must be non-empty",
        ),
        (
            "example.com/",
            'unable to parse requirement: <nil>: Invalid value: "example.com/": '
            f"name part must be non-empty; {NAME_RULE}",
        ),
        (
            "a" * 64,
            f'unable to parse requirement: <nil>: Invalid value: "{"a" * 64}": '
            "name part must be no more than 63 characters",
        ),
    ],
)
def test_invalid_label_selector_is_a_bad_request_with_the_server_wording(text, message):
    assert bad_request(LabelSelector.parse, text) == message


def test_several_invalid_values_aggregate_in_brackets():
    message = bad_request(LabelSelector.parse, "x in (-b,-a)")
    assert message == (
        "unable to parse requirement: ["
        f'values[0][x]: Invalid value: "-a": {LABEL_VALUE_RULE}, '
        f'values[1][x]: Invalid value: "-b": {LABEL_VALUE_RULE}]'
    )


def test_prefixed_keys_are_checked_as_dns_subdomains():
    message = bad_request(LabelSelector.parse, "Example.com/app")
    assert message.startswith(
        'unable to parse requirement: <nil>: Invalid value: "Example.com/app": prefix part a '
        "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
    )
    assert LabelSelector.parse("app.kubernetes.io/name=web").matches(
        {"app.kubernetes.io/name": "web"}
    )


def test_label_selector_object_nil_selects_nothing_and_empty_selects_everything():
    assert not LabelSelector.from_object(None).matches(LABELS)
    assert not LabelSelector.from_object(None).empty
    assert LabelSelector.from_object({}).matches({})
    assert LabelSelector.from_object({}).empty


def test_label_selector_object_combines_match_labels_and_expressions():
    selector = LabelSelector.from_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "version", "operator": "Exists"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({**LABELS, "canary": "yes"})
    assert str(selector) == "app=web,!canary,tier in (edge,front),version,zone notin (b)"


def test_label_selector_object_errors_read_like_label_selector_as_selector():
    assert (
        bad_request(
            LabelSelector.from_object, {"matchExpressions": [{"key": "a", "operator": "Gt"}]}
        )
        == '"Gt" is not a valid label selector operator'
    )
    assert (
        bad_request(
            LabelSelector.from_object, {"matchExpressions": [{"key": "a", "operator": "In"}]}
        )
        == "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be "
        "empty"
    )
    assert bad_request(LabelSelector.from_object, {"matchLabels": {"a": "-x"}}) == (
        f'values[0][a]: Invalid value: "-x": {LABEL_VALUE_RULE}'
    )


def test_set_selector_of_a_service_matches_every_pair_and_empty_selects_everything():
    assert LabelSelector.from_set({"app": "web"}).matches(LABELS)
    assert not LabelSelector.from_set({"app": "api"}).matches(LABELS)
    assert LabelSelector.from_set({}).matches({}) and LabelSelector.from_set(None).empty


# ---------------------------------------------------------------- field selectors


def test_field_selector_terms_and_operators():
    selector = FieldSelector.parse("status.phase=Running,spec.nodeName!=n1,metadata.name==p")
    assert selector.requirements == (
        FieldRequirement("metadata.name", "=", "p"),
        FieldRequirement("spec.nodeName", "!=", "n1"),
        FieldRequirement("status.phase", "=", "Running"),
    )
    assert selector.matches(
        {"status.phase": "Running", "spec.nodeName": "n2", "metadata.name": "p"}
    )
    assert not selector.matches({"status.phase": "Running", "spec.nodeName": "n1"})


def test_field_missing_from_the_object_compares_as_empty():
    assert FieldSelector.parse("status.podIPs=").matches({})
    assert FieldSelector.parse("spec.nodeName!=n1").matches({})


def test_field_selector_values_unescape_backslash_comma_and_equals():
    selector = FieldSelector.parse(r"metadata.name=a\,b\=c\\d,x=y")
    assert selector.requirements[0] == FieldRequirement("metadata.name", "=", "a,b=c\\d")
    assert str(selector) == r"metadata.name=a\,b\=c\\d,x=y"
    assert escape_value("a,b=c\\") == r"a\,b\=c\\"


def test_empty_terms_are_skipped_and_empty_selector_selects_everything():
    assert FieldSelector.parse(",a=b,").requirements == (FieldRequirement("a", "=", "b"),)
    assert FieldSelector.parse("").empty and FieldSelector.parse("").matches({"x": "y"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("status.phase", "invalid selector: 'status.phase'; can't understand 'status.phase'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_invalid_field_selector_is_a_bad_request_with_the_server_wording(text, message):
    assert bad_request(FieldSelector.parse, text) == message


@pytest.mark.parametrize(
    ("plural", "group", "text", "message"),
    [
        ("pods", "", "status.hostIP=1.2.3.4", "field label not supported: status.hostIP"),
        ("nodes", "", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("namespaces", "", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("events", "", "regarding.kind=Pod", "field label not supported: regarding.kind"),
        (
            "events",
            "events.k8s.io",
            "involvedObject.kind=Pod",
            "field label not supported: involvedObject.kind",
        ),
        (
            "replicasets",
            "apps",
            "status.replicas=0",
            '"status.replicas" is not a known field selector: only "metadata.name", '
            '"metadata.namespace"',
        ),
        (
            "deployments",
            "apps",
            "spec.paused=true",
            '"spec.paused" is not a known field selector: only "metadata.name", '
            '"metadata.namespace"',
        ),
        (
            "poddisruptionbudgets",
            "policy",
            "a\tb=x",
            '"a\\tb" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_unsupported_field_label_is_refused_with_the_kind_specific_message(
    plural, group, text, message
):
    assert bad_request(check_supported, plural, group, FieldSelector.parse(text)) == message


def test_supported_labels_are_renamed_to_what_the_registry_matches():
    renamed = check_supported("pods", "", FieldSelector.parse("spec.host=n1,status.phase=Running"))
    assert str(renamed) == "spec.nodeName=n1,status.phase=Running"
    events = check_supported(
        "events",
        "events.k8s.io",
        FieldSelector.parse("regarding.name=web,reportingController=kubelet,type=Warning"),
    )
    assert str(events) == "involvedObject.name=web,reportingComponent=kubelet,type=Warning"
    assert str(
        check_supported("leases", "coordination.k8s.io", FieldSelector.parse("metadata.name=a"))
    )


def test_custom_resources_accept_metadata_and_their_selectable_fields():
    selector = FieldSelector.parse("spec.clusterName=c1,metadata.namespace=default")
    kept = check_supported(
        "machines", "cluster.x-k8s.io", selector, custom=True, selectable=("spec.clusterName",)
    )
    assert kept == selector
    assert (
        bad_request(check_supported, "machines", "cluster.x-k8s.io", FieldSelector.parse("a=b"))
        == '"a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )  # without custom=True the resource is treated as a built-in without conversions
    refused = FieldSelector.parse("spec.other=x")
    with pytest.raises(StatusError, match=r"field label not supported: spec\.other"):
        check_supported("machines", "cluster.x-k8s.io", refused, custom=True)
    with pytest.raises(StatusError, match=r"field label not supported: metadata\.namespace"):
        check_supported(
            "clusterthings",
            "example.com",
            FieldSelector.parse("metadata.namespace=x"),
            custom=True,
            namespaced=False,
        )


def test_pod_fields_are_rendered_as_the_registry_renders_them():
    running = pod("web-1", node_name="n1")
    running["status"]["podIPs"] = [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]
    fields = selectable_fields("pods", "", running)
    assert fields == {
        "metadata.name": "web-1",
        "metadata.namespace": "default",
        "spec.nodeName": "n1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "",
        "spec.hostNetwork": "false",
        "status.phase": "Running",
        "status.podIP": "10.0.0.7",
        "status.nominatedNodeName": "",
    }
    selector = check_supported("pods", "", FieldSelector.parse("spec.host=n1,status.phase!=Failed"))
    assert selector.matches(fields)


def test_node_and_event_fields():
    cordoned = node("n1", unschedulable=True)
    assert selectable_fields("nodes", "", cordoned) == {
        "metadata.name": "n1",
        "spec.unschedulable": "true",
    }
    target = pod("web-1")
    warning = event(involved=target, reason="BackOff", message="m", host="n1")
    fields = selectable_fields("events", "", warning)
    assert fields["involvedObject.kind"] == "Pod"
    assert fields["involvedObject.name"] == "web-1"
    assert fields["involvedObject.uid"] == target["metadata"]["uid"]
    assert fields["source"] == "kubelet" and fields["reportingComponent"] == "kubelet"
    assert fields["type"] == "Warning" and fields["reason"] == "BackOff"
    del warning["source"]
    assert selectable_fields("events", "", warning)["source"] == "kubelet"


def test_unknown_resources_expose_name_and_namespace_and_crd_fields():
    obj = {"metadata": {"name": "m1", "namespace": "ns"}, "spec": {"ready": True, "count": 3}}
    fields = selectable_fields(
        "machines", "cluster.x-k8s.io", obj, extra_fields=("spec.ready", "spec.count", "spec.none")
    )
    assert fields == {
        "metadata.name": "m1",
        "metadata.namespace": "ns",
        "spec.ready": "true",
        "spec.count": "3",
        "spec.none": "",
    }


# ---------------------------------------------------------------- round trips

_name = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?", fullmatch=True)
_prefix = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,4}[a-z0-9])?(\.[a-z0-9]{1,4}){0,2}", fullmatch=True)
_key = st.one_of(_name, st.builds(lambda p, n: f"{p}/{n}", _prefix, _name))
_value = st.one_of(st.just(""), _name)


@st.composite
def requirements(draw):
    key = draw(_key)
    operator = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"]))
    if operator in ("exists", "!"):
        values = []
    elif operator in ("gt", "lt"):
        values = [str(draw(st.integers(0, 2**63 - 1)))]
    elif operator in ("in", "notin"):
        values = sorted(set(draw(st.lists(_value, min_size=1, max_size=4))))
    else:
        values = [draw(_value)]
    return Requirement.new(key, operator, values)


@given(st.lists(requirements(), max_size=5))
def test_label_selector_round_trips_through_its_string(found):
    selector = LabelSelector(tuple(sorted(found, key=lambda r: r.key)))
    reparsed = LabelSelector.parse(str(selector))
    assert reparsed == selector
    assert str(reparsed) == str(selector)


@given(st.lists(requirements(), max_size=5), st.dictionaries(_key, _value, max_size=5))
def test_parsed_selector_matches_like_its_requirements(found, labels):
    selector = LabelSelector.parse(",".join(str(r) for r in found))
    assert selector.matches(labels) == all(r.matches(labels) for r in found)


_field = st.from_regex(r"[a-zA-Z][a-zA-Z.]{0,10}", fullmatch=True)


@given(
    st.lists(
        st.builds(FieldRequirement, _field, st.sampled_from(["=", "!="]), st.text()), max_size=4
    )
)
def test_field_selector_round_trips_any_value_through_escaping(found):
    selector = FieldSelector(tuple(found))
    reparsed = FieldSelector.parse(str(selector))
    key = lambda r: (r.field, r.operator, r.value)  # noqa: E731
    assert sorted(reparsed.requirements, key=key) == sorted(found, key=key)
