"""Hypothesis strategies for Kubernetes-like objects: pods, deployments and a schemaless custom
resource with random labels, containers, ports, env and finalizers, and random edits of them
anywhere (values of the wrong shape, repeated list items, nulls), for property tests of the
emulator's write path."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from kubemedic.sim.machinery.definitions import SchemaNode, definitions
from tests.factories import container, deployment, pod
from tests.sim.manifests import manifest

Obj = dict[str, Any]

KINDS: dict[str, tuple[str, str, SchemaNode | None]] = {
    "Pod": ("", "v1", definitions().for_kind("", "v1", "Pod")),
    "Deployment": ("apps", "apps/v1", definitions().for_kind("apps", "v1", "Deployment")),
    "Machine": ("cluster.x-k8s.io", "cluster.x-k8s.io/v1beta1", None),
}
MANAGERS = ("kubectl", "kubectl-edit", "argocd-controller", "kubelet", "kube-controller-manager")
TIMES = ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", "2024-05-02T09:30:00Z")
NAMES = ("a", "b", "web", "x.io/name", "ü", "80")
#: Names and texts that pass validation as label keys and values, container and finalizer names.
VALID_NAMES = ("a", "b", "web", "x.io/name", "80")
VALID_TEXT = ("", "x", "web", "1", "true")
FAKE_UID = "0b6e4c1a-9a53-4a4e-8d0a-5f0c6f1c2d3e"

small_text = st.sampled_from(["", "x", "web", "1", "true", "ü<&>", "a b"])
scalars = st.one_of(small_text, st.integers(-2, 3), st.booleans(), st.none(), st.just(1.5))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def ports(draw: st.DrawFn) -> list[Obj]:
    out = []
    for number in draw(st.lists(st.integers(80, 82), max_size=3, unique=True)):
        port: Obj = {"containerPort": number}
        protocol = draw(st.sampled_from([None, "TCP", "UDP"]))
        if protocol is not None:
            port["protocol"] = protocol
        if draw(st.booleans()):
            port["name"] = draw(st.sampled_from(["http", "metrics"]))
        out.append(port)
    return out


@st.composite
def containers(draw: st.DrawFn, *, valid: bool = False) -> list[Obj]:
    out = []
    pool = ["main", "side"] if valid else ["main", "side", "ü"]
    for name in draw(st.lists(st.sampled_from(pool), min_size=1, unique=True)):
        body = container(name)
        body["image"] = draw(st.sampled_from(["nginx:1", "nginx:2"]))
        if draw(st.booleans()):
            body["ports"] = draw(ports())
        if draw(st.booleans()):
            names = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
            body["env"] = [{"name": name, "value": draw(small_text)} for name in names]
        if draw(st.booleans()):
            body["resources"] = {"limits": {"memory": draw(st.sampled_from(["64Mi", "1Gi"]))}}
        out.append(body)
    return out


@st.composite
def objects(draw: st.DrawFn, kind: str, *, valid: bool = False) -> Obj:
    """A ``kind`` as a user writes it; ``valid`` ones pass validation (names and labels)."""
    names = st.sampled_from(VALID_NAMES if valid else NAMES)
    texts = st.sampled_from(VALID_TEXT) if valid else small_text
    labels = draw(st.dictionaries(names, texts, max_size=3))
    if kind == "Machine":
        return {
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Machine",
            "metadata": {"name": "m", "namespace": "default", "labels": labels},
            "spec": draw(st.dictionaries(st.sampled_from(NAMES), json_values, max_size=4)),
        }
    if kind == "Pod":
        body = manifest(pod("p", namespace="default", labels=labels or None))
        spec = body["spec"]
    else:
        body = manifest(deployment("d", namespace="default", labels=labels or None))
        spec = body["spec"]["template"]["spec"]
        body["spec"]["replicas"] = draw(st.integers(0, 3))
    spec["containers"] = draw(containers(valid=valid))
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": draw(names), "operator": "Exists"}]
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(names, texts))
    if draw(st.booleans()):
        finalizer = st.sampled_from(["x.io/name", "kubernetes"]) if valid else names
        body["metadata"]["finalizers"] = draw(
            st.lists(finalizer, max_size=3, unique=valid or draw(st.booleans()))
        )
    if draw(st.booleans()):
        body["metadata"]["annotations"] = {"note": draw(texts)}
    return body


def somewhere(draw: st.DrawFn, obj: Obj) -> tuple[Any, Any]:
    """A random container (dict or list) inside ``obj`` and a key or index in it."""
    spots: list[tuple[Any, Any]] = [(obj, "spec")]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                spots.append((value, key))
                walk(item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                spots.append((value, index))
                walk(item)

    walk(obj)
    return spots[draw(st.integers(0, len(spots) - 1))]


@st.composite
def mutated(draw: st.DrawFn, obj: Obj) -> Obj:
    """``obj`` after a few edits of any kind anywhere: set, delete, duplicate, wrong shapes."""
    out = copy.deepcopy(obj)
    for _ in range(draw(st.integers(0, 4))):
        parent, key = somewhere(draw, out)
        actions = ["set", "delete", "add", "null", "label", "set", "delete", "add", "duplicate"]
        action = draw(st.sampled_from(actions))
        meta = out.get("metadata")
        if isinstance(parent, dict) and key not in parent:
            parent[key] = {}  # the spec picked in an object without one
        elif action == "label" and isinstance(meta, dict):
            labels = meta.setdefault("labels", {})
            if isinstance(labels, dict):
                labels[draw(st.sampled_from(NAMES))] = draw(small_text)
        elif action == "set":
            parent[key] = draw(json_values)
        elif action == "null":
            parent[key] = None
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif action == "add":
            _add(draw, parent[key])
    return out


def _add(draw: st.DrawFn, target: Any) -> None:
    if isinstance(target, dict):
        target[draw(st.sampled_from(NAMES))] = draw(json_values)
    elif isinstance(target, list) and target:
        item = copy.deepcopy(draw(st.sampled_from(target)))
        if isinstance(item, dict) and "name" in item:
            item["name"] = draw(st.sampled_from(["main", "side", "new"]))
        target.append(item)


@st.composite
def strategic_patches(draw: st.DrawFn, obj: Obj) -> Obj:
    """A strategic merge patch for ``obj`` as clients send them: labels set or removed,
    containers merged, deleted or reordered, maps replaced, primitives deleted, and now and
    then a value anywhere."""
    patch: Obj = {}
    if draw(st.booleans()):
        labels = {draw(st.sampled_from(NAMES)): draw(st.one_of(small_text, st.none()))}
        patch["metadata"] = {"labels": labels}
    if draw(st.booleans()):
        patch.setdefault("metadata", {})["$deleteFromPrimitiveList/finalizers"] = [
            draw(st.sampled_from(NAMES))
        ]
    spec: Obj = {}
    if draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(["main", "side", "new"]), max_size=2, unique=True))
        images = st.sampled_from(["a:1", "b:2"])
        items: list[Obj] = [{"name": n, "image": draw(images)} for n in names]
        if draw(st.booleans()):
            items.append({"$patch": "delete", "name": draw(st.sampled_from(["main", "side"]))})
        spec["containers"] = items
        if draw(st.booleans()):
            spec["$setElementOrder/containers"] = [{"name": n} for n in reversed(names)]
    if draw(st.booleans()):
        spec["nodeSelector"] = {"$patch": "replace", draw(st.sampled_from(NAMES)): "x"}
    if draw(st.booleans()):
        spec[draw(st.sampled_from(["restartPolicy", "hostname", "x"]))] = draw(json_values)
    if spec:
        patch["spec"] = {"template": {"spec": spec}} if obj.get("kind") == "Deployment" else spec
    if draw(st.booleans()):
        patch[draw(st.sampled_from(["status", "metadata", "spec"]))] = draw(json_values)
    return patch
