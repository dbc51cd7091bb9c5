"""The jq subset of Argo CD's ``jqPathExpressions``."""

import pytest

from kubemedic.drift.jqpaths import JqPathError, locations

POD = {
    "metadata": {"annotations": {"example.com/x": "1"}},
    "spec": {
        "containers": [{"name": "app", "image": "a"}, {"name": "istio-proxy", "image": "b"}],
        "initContainers": [{"name": "istio-init", "image": "c"}],
    },
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (".spec.containers[0].image", [("spec", "containers", 0, "image")]),
        ('.spec.containers[] | select(.name == "istio-proxy")', [("spec", "containers", 1)]),
        (
            '.spec.containers[] | select(.name != "app") | .image',
            [("spec", "containers", 1, "image")],
        ),
        (".spec.initContainers[]?", [("spec", "initContainers", 0)]),
        ('.metadata.annotations."example.com/x"', [("metadata", "annotations", "example.com/x")]),
        ('.metadata.annotations["example.com/x"]', [("metadata", "annotations", "example.com/x")]),
        (".spec.missing.field", []),
        (".", [()]),
        (".spec.containers[-1].name", [("spec", "containers", 1, "name")]),
    ],
)
def test_locations(expression: str, expected: list[tuple[object, ...]]) -> None:
    assert locations(expression, POD) == expected


@pytest.mark.parametrize(
    "expression", ["spec", ".spec | keys", ".a[", "select(.a == x)", ".a | select(.b > 1)"]
)
def test_unsupported_syntax_is_refused(expression: str) -> None:
    with pytest.raises(JqPathError):
        locations(expression, POD)
