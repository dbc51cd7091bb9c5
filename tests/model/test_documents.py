"""The one place user YAML and JSON are parsed: limits on nesting and aliases, the user's words."""

from __future__ import annotations

import time

import pytest

from kubemedic.errors import InputError
from kubemedic.model import documents
from kubemedic.model.documents import (
    MAX_DEPTH,
    DocumentError,
    load_json,
    load_yaml,
    load_yaml_all,
)

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_ordinary_documents_read_as_before() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: &l {app: x}}\nspec: {x: *l}\n"
    assert load_yaml(text, where="p.yaml") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a", "labels": {"app": "x"}},
        "spec": {"x": {"app": "x"}},
    }
    assert load_yaml_all("a: 1\n---\n# only a comment\n---\nb: 2\n", where="x") == [
        {"a": 1},
        {"b": 2},
    ]
    assert load_yaml("# nothing here\n", where="x") is None
    assert load_json(b'{"a": [1, {"b": null}]}', where="x") == {"a": [1, {"b": None}]}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_200, 100_000])
def test_deep_yaml_is_refused_with_the_line(depth: int) -> None:
    text = "a:\n  b:\n    " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(DocumentError, match=r"^deep.yaml: line \d+: nested deeper than 200"):
        load_yaml(text, where="deep.yaml")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_100, 100_000])
def test_deep_json_is_refused(depth: int) -> None:
    text = "[" * depth + "]" * depth
    with pytest.raises(DocumentError, match=r"^deep.json: .*nested deeper than 200 levels"):
        load_json(text, where="deep.json")


def test_depth_up_to_the_limit_is_fine() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_json(text, where="x") is not None
    assert load_yaml(text, where="x") is not None


def test_an_alias_bomb_is_refused_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(DocumentError, match=r"^bomb.yaml: line 1: YAML aliases expand"):
        load_yaml(BILLION_LAUGHS, where="bomb.yaml")
    assert time.monotonic() - started < 5


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(DocumentError, match="refers to an anchor that contains it"):
        load_yaml("a: &a [1, *a]\n", where="r.yaml")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: [1, 2\n", "line 2"),
        ("a: b: c\n", "line 1"),
        ("!!python/object:os.system {}\n", "line 1"),
        ("a: 1\n\tb: 2\n", "line 2"),
    ],
)
def test_invalid_yaml_names_the_file_and_line(text: str, words: str) -> None:
    with pytest.raises(DocumentError) as raised:
        load_yaml(text, where="c.yaml")
    message = str(raised.value)
    assert message.startswith("c.yaml: ") and words in message and "\n" not in message
    assert isinstance(raised.value, InputError)


def test_invalid_json_names_the_line_and_column() -> None:
    with pytest.raises(DocumentError, match=r"^s.json: line 2, column \d+: invalid JSON"):
        load_json('{"a": 1,\n "b": }', where="s.json")
    with pytest.raises(DocumentError, match=r"^s.json: line 1"):
        load_json(b"\xff\xfe", where="s.json")


def test_two_documents_where_one_is_expected() -> None:
    with pytest.raises(DocumentError, match="expected one YAML document, found 2"):
        load_yaml("a: 1\n---\nb: 2\n", where="c.yaml")


@pytest.mark.parametrize(("text", "line"), [("a: 1\nb: \x00\n", 2), ("\x07", 1)])
def test_a_character_yaml_forbids_names_the_line(text: str, line: int) -> None:
    with pytest.raises(DocumentError, match=rf"^n.yaml: line {line}: invalid YAML: character U\+"):
        load_yaml(text, where="n.yaml")


def test_libyaml_and_the_python_reader_read_manifests_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
        "  annotations: {a: '1', b: \"x: y\"}\nspec:\n  replicas: 3\n  template:\n    spec:\n"
        "      containers:\n        - name: app\n          args: [--a, --b=2]\n"
        "          env:\n            - {name: X, value: 'on'}\n"
        "          resources: &r\n            limits: {memory: 1Gi}\n"
        "      initContainers:\n        - name: init\n          resources: *r\n"
        "---\n# empty\n---\nkind: ConfigMap\ndata:\n  when: 2024-01-02\n  yes: yes\n"
    )
    fast = documents._load_all_with_libyaml(text, where="x")
    assert documents._nests_less_than(text, documents.MAX_DEPTH)
    assert fast is not None
    assert fast == documents.load_yaml_all(text, where="x")
    monkeypatch.setattr(documents, "_CLoader", None)  # the Python reader alone
    assert documents.load_yaml_all(text, where="x") == fast


def test_a_text_that_may_nest_deeply_is_left_to_the_guarded_python_reader() -> None:
    deep = "a:\n" + "".join(" " * (2 * level) + "b:\n" for level in range(1, 60))
    assert not documents._nests_less_than(deep, documents.MAX_DEPTH)
    assert not documents._nests_less_than("[" * 250, documents.MAX_DEPTH)
    assert documents._nests_less_than("a: 1\nb: [1, 2]\n", documents.MAX_DEPTH)
