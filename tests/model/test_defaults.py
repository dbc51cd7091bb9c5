"""The shared defaults table (:mod:`kubemedic.model.defaults`); the emulator's own tests
(tests/sim/apiserver/registry/test_defaulting.py) cover it kind by kind."""

from kubemedic.model.defaults import default_object, default_pod


def test_endpoint_ports_default_to_tcp() -> None:
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "solr"},
        "subsets": [{"ports": [{"port": 8080}, {"port": 8983, "protocol": "UDP"}]}],
    }
    default_object(endpoints, group="", version="v1", kind="Endpoints")
    assert [p["protocol"] for p in endpoints["subsets"][0]["ports"]] == ["TCP", "UDP"]


def test_pods_get_pod_only_defaults_and_templates_do_not() -> None:
    spec = {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1"}}}]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    default_object(pod, group="", version="v1", kind="Pod")
    assert pod["spec"]["enableServiceLinks"] is True
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    template = {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}
    default_object(template, group="", version="v1", kind="PodTemplate")
    assert "enableServiceLinks" not in template["template"]["spec"]
    bare = {"spec": {"containers": []}}
    default_pod(bare)
    assert bare["spec"]["dnsPolicy"] == "ClusterFirst"
