"""Snapshot inputs for ``scan --snapshot``: a small valid snapshot cut from a bundled one, and
strategies that mutate it (bytes, structure, values) into JSON, YAML, gzip files or directories.

The base is the healthy control (``src/kubemedic/data/snapshots/4-healthy-control``, what
tests/test_incident_snapshots.py scans) cut to a few objects of each kind, plus a CronJob and a
ReplicationController built from one of its Deployments (the templates the issue found unchecked).
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz.harness import Case
from tests.paths import SNAPSHOTS

Doc = dict[str, Any]
CONTROL = SNAPSHOTS / "4-healthy-control"
SCAN = ("scan", "--snapshot")
BAD_QUANTITIES = ("12XB", "abc", "1.2.3", "Mi", "5 Gi", "NaN", "inf", "0x10", "++1", "1..5Gi")
WRONG_VALUES: tuple[Any, ...] = (None, True, 0, -1, 1e300, "x", "", [], {}, [1], {"a": 1})


def _list(items: list[Doc]) -> Doc:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def _items(name: str) -> list[Doc]:
    loaded: Doc = json.loads((CONTROL / name).read_bytes())
    items: list[Doc] = loaded["items"]
    return items


@functools.cache
def base() -> dict[str, Doc]:
    """The small valid snapshot: file name -> its ``List``."""
    nodes = _items("nodes.json")[:3]
    pods = _items("pods.json")[:6]
    metrics = _items("metrics.json")
    workloads = _items("workloads.json")
    deployment = next(w for w in workloads if w["kind"] == "Deployment")
    template = deployment["spec"]["template"]
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {**deployment["metadata"], "name": "nightly", "uid": "c0ffee00-0000-4000-8"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template}}},
    }
    controller = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {**deployment["metadata"], "name": "legacy", "uid": "c0ffee00-0000-4000-9"},
        "spec": {"replicas": 1, "selector": {"app": "legacy"}, "template": template},
    }
    return {
        "nodes.json": _list(nodes),
        "pods.json": _list(pods),
        "metrics.json": _list(
            [m for m in metrics if m["kind"] == "PodMetrics"][:4]
            + [m for m in metrics if m["kind"] == "NodeMetrics"][:2]
        ),
        "workloads.json": _list([deployment, cronjob, controller]),
        "events.json": _list(_items("events.json")[:3]),
    }


def quantity_paths() -> list[tuple[str, tuple[str | int, ...]]]:
    """Every resource quantity the checks read, as (file, path into its List)."""
    container = ("resources", "requests", "memory")
    paths: list[tuple[str, tuple[str | int, ...]]] = []
    for i in range(3):
        paths += [("nodes.json", ("items", i, "status", "allocatable", "memory"))]
        paths += [("nodes.json", ("items", i, "status", "capacity", "cpu"))]
    for i in range(6):
        paths += [("pods.json", ("items", i, "spec", "containers", 0, *container))]
    for i in range(4):
        paths += [("metrics.json", ("items", i, "containers", 0, "usage", "memory"))]
    paths += [("metrics.json", ("items", 4, "usage", "cpu"))]
    paths += [("metrics.json", ("items", 5, "usage", "memory"))]
    cron = ("items", 1, "spec", "jobTemplate", "spec", "template", "spec", "containers", 0)
    paths += [("workloads.json", (*cron, *container))]
    controller = ("items", 2, "spec", "template", "spec", "containers", 0)
    paths += [("workloads.json", (*controller, *container))]
    return paths


def put(doc: Any, path: tuple[str | int, ...], value: Any) -> None:
    """Set ``value`` at ``path`` in ``doc``, making the mappings on the way."""
    for step in path[:-1]:
        doc = doc[step] if not isinstance(step, str) else doc.setdefault(step, {})
    doc[path[-1]] = value


def encode(doc: Any, fmt: str) -> bytes:
    """``doc`` as the bytes of a file of format ``json``, ``yaml``, ``json.gz`` or ``yaml.gz``."""
    if fmt.startswith("yaml"):
        data = yaml.safe_dump(doc, sort_keys=False).encode()
    else:
        data = json.dumps(doc, indent=2).encode()
    return gzip.compress(data, mtime=0) if fmt.endswith(".gz") else data


FORMATS = ("json", "yaml", "json.gz", "yaml.gz", "dir")


def snapshot_case(
    label: str,
    target: str,
    content: bytes,
    fmt: str,
    *,
    valid: bool | None,
    inprocess: bool = True,
    extra_args: tuple[str, ...] = (),
) -> Case:
    """A scan of ``content`` as the file ``target`` (a name of the base, whose suffix ``fmt``
    decides), alone or (``dir``) in a directory with the rest of the base."""
    stem = target.rsplit(".", 1)[0]
    if fmt == "dir":
        files = [(f"snap/{n}", encode(d, "json")) for n, d in base().items() if n != target]
        name = target
        files.append((f"snap/{name}", content))
        where = "{d}/snap"
    else:
        name = f"{stem}.{fmt}"
        files = [(name, content)]
        where = "{d}/" + name
    return Case(
        "snapshot",
        f"{label} ({name}{' in a directory' if fmt == 'dir' else ''})",
        (*SCAN, where, *extra_args),
        tuple(files),
        valid=valid,
        names=name,
        inprocess=inprocess,
    )


@st.composite
def wrong_types(draw: st.DrawFn) -> Case:
    """A value of the wrong type at a random path of a random object."""
    target = draw(st.sampled_from(sorted(base())))
    doc = copy.deepcopy(base()[target])
    node: Any = doc
    path: list[str | int] = []
    while isinstance(node, dict | list) and node and (not path or draw(st.booleans())):
        if isinstance(node, dict):
            key: str | int = draw(st.sampled_from(sorted(node)))
            node = node[key]
        else:
            key = draw(st.integers(0, len(node) - 1))
            node = node[key]
        path.append(key)
    value = draw(st.sampled_from(WRONG_VALUES))
    if path:
        put(doc, tuple(path), value)
    fmt = draw(st.sampled_from(FORMATS))
    dotted = ".".join(str(p) for p in path) or "(top)"
    content = encode(doc, _file_fmt(fmt))
    return snapshot_case(f"{dotted} = {value!r}", target, content, fmt, valid=None)


def _file_fmt(fmt: str) -> str:
    return "json" if fmt == "dir" else fmt


@st.composite
def bad_quantities(draw: st.DrawFn) -> Case:
    """An invalid quantity where a check reads one: invalid input, to be refused at load."""
    target, path = draw(st.sampled_from(quantity_paths()))
    bad = draw(st.sampled_from(BAD_QUANTITIES))
    doc = copy.deepcopy(base()[target])
    put(doc, path, bad)
    fmt = draw(st.sampled_from(FORMATS))
    dotted = ".".join(str(p) for p in path)
    content = encode(doc, _file_fmt(fmt))
    return snapshot_case(f"{dotted} = {bad!r}", target, content, fmt, valid=False)


@st.composite
def byte_mutations(draw: st.DrawFn) -> Case:
    """Truncation, byte flips, invalid UTF-8 or deep nesting of a file's bytes."""
    target = draw(st.sampled_from(sorted(base())))
    fmt = draw(st.sampled_from(("json", "yaml", "dir")))
    data = encode(base()[target], _file_fmt(fmt)).rstrip()
    how = draw(st.sampled_from(("truncate", "flip", "utf8", "deep", "gz-truncate")))
    valid: bool | None = None
    if how == "truncate":
        cut = draw(st.integers(0, len(data) - 1))
        data, label = data[:cut], f"truncated at byte {cut}"
        valid = False if fmt != "yaml" else None
    elif how == "flip":
        at = draw(st.integers(0, len(data) - 1))
        byte = draw(st.integers(0, 255))
        data, label = data[:at] + bytes([byte]) + data[at + 1 :], f"byte {at} = {byte:#x}"
    elif how == "utf8":
        at = data.index(b"name") + 2
        data, label, valid = data[:at] + b"\xff\xfe" + data[at:], "invalid UTF-8", False
    elif how == "deep":
        depth = draw(st.integers(1_000, 20_000))
        deep = b"[" * depth + b"]" * depth
        data = data.replace(b'"resourceVersion": ""', b'"resourceVersion": ' + deep, 1)
        data = data.replace(b"resourceVersion: ''", b"resourceVersion: " + deep, 1)
        label, valid = f"nested {depth} deep", False
    else:
        packed = gzip.compress(data, mtime=0)
        cut = draw(st.integers(0, len(packed) - 1))
        data, label, valid, fmt = packed[:cut], f"gzip cut at byte {cut}", False, "json.gz"
    return snapshot_case(label, target, data, fmt, valid=valid)


def snapshot_cases() -> st.SearchStrategy[Case]:
    return st.one_of(wrong_types(), bad_quantities(), byte_mutations())


def catalogue() -> list[Case]:
    """The known bad snapshots of the issue, one case each (each also a regression case)."""
    pod = base()["pods.json"]["items"][0]
    docs: list[tuple[str, bytes, str]] = [
        ("a List whose items is a mapping", _json({"kind": "List", "items": {"a": pod}}), "json"),
        ("a List whose items is a string", _json({"kind": "List", "items": "pods"}), "json"),
        ("a List with a null item", _json({"kind": "List", "items": [pod, None]}), "json"),
        ("a List with a string item", _json({"kind": "List", "items": ["pod"]}), "json"),
        ("an unknown top-level kind", _json({"kind": "Bogus", "items": [pod]}), "json"),
        ("no kind at all", _json({"items": [pod]}), "json"),
        ("an object without a kind", _json({"apiVersion": "v1", "metadata": {}}), "json"),
        ("{}", b"{}", "json"),
        ("[]", b"[]", "json"),
        ("null", b"null", "json"),
        ("a number", b"42", "json"),
        ("an empty JSON file", b"", "json"),
        ("an empty YAML file", b"", "yaml"),
        ("a comment-only YAML file", b"# nothing here\n# at all\n", "yaml"),
        ("a YAML stream of empty documents", b"---\n---\n", "yaml"),
        ("a YAML scalar", b"just words\n", "yaml"),
        ("a YAML alias bomb", _alias_bomb(), "yaml"),
        ("JSON nested 1,000 deep", b"[" * 1000 + b"]" * 1000, "json"),
        ("JSON nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "json"),
        ("YAML nested 5,000 deep", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "yaml"),
        ("a broken gzip stream", gzip.compress(_json(base()["pods.json"]))[:40], "json.gz"),
        ("gzip of nothing", gzip.compress(b""), "json.gz"),
        ("not gzip at all", b"plain text", "json.gz"),
    ]
    cases = [snapshot_case(label, "pods.json", data, fmt, valid=False) for label, data, fmt in docs]
    cases.append(
        snapshot_case(
            "an empty snapshot with --allow-empty",
            "pods.json",
            _json({"kind": "List", "apiVersion": "v1", "items": []}),
            "json",
            valid=True,
            extra_args=("--allow-empty",),
        )
    )
    cases.append(
        snapshot_case(
            "an empty List",
            "pods.json",
            _json({"kind": "List", "apiVersion": "v1", "items": []}),
            "json",
            valid=False,
        )
    )
    return cases


def _json(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def _alias_bomb(levels: int = 12) -> bytes:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    lines.append(f"kind: List\nitems: *a{levels - 1}")
    return ("\n".join(lines) + "\n").encode()
