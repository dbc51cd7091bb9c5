"""``--config`` files and ``sim run`` scenario files: every check setting with hostile values
(both spellings of its key), bad selectors and quantities, deep nesting and alias bombs; and the
bundled scenarios mutated (huge counts, zero resolution, NaN and negative durations, wrong types
anywhere)."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import typing
from typing import Any

import yaml
from hypothesis import strategies as st

from kubemedic.checks import registry
from tests.fuzz import snapshots
from tests.fuzz.harness import Case
from tests.paths import ROOT

BUNDLED = ROOT / "src" / "kubemedic" / "sim" / "scenarios" / "bundled"
NUMBER = (int, float, float | None)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@functools.cache
def settings_table() -> list[tuple[str, tuple[str, ...], Any]]:
    """Every setting of every check: (check, path of snake_case keys, type); the fields of a
    nested settings dataclass (``critical``) one level down."""
    import kubemedic.checks  # noqa: F401 - registers the checks

    table: list[tuple[str, tuple[str, ...], Any]] = []
    for check, spec in sorted(registry.REGISTRY.items()):
        hints = typing.get_type_hints(spec.config_type)
        for f in dataclasses.fields(spec.config_type):
            kind = hints[f.name]
            if dataclasses.is_dataclass(kind) and isinstance(kind, type):
                inner = typing.get_type_hints(kind)
                for g in dataclasses.fields(kind):
                    table.append((check, (f.name, g.name), inner[g.name]))
            else:
                table.append((check, (f.name,), kind))
    return table


# value as YAML text -> validity for a number setting (None: depends on the setting)
NUMBER_VALUES = {
    ".nan": False,
    "-1": False,
    "-0.5": False,
    "-.inf": False,
    ".inf": False,
    "1e308": None,
    "123456789012345678901234567890": None,
    "0": None,
    "abc": False,
    "'12'": None,
    "[]": False,
    "{}": False,
    "true": None,
    "null": None,
    "''": False,
}
SIGNED = frozenset({"priority_threshold"})
"""Settings that take negative numbers."""
OTHER_VALUES = {
    ".nan": None,
    "-1": None,
    "[]": None,
    "{a: 1}": False,
    "''": None,
    "abc": None,
    "12XB": None,
    "null": None,
    "[[[[[[1]]]]]]": False,
}


def snapshot_files() -> tuple[tuple[str, bytes], ...]:
    return tuple((f"snap/{n}", snapshots.encode(d, "json")) for n, d in snapshots.base().items())


def config_case(label: str, text: str, *, valid: bool | None, names: str | None) -> Case:
    return Case(
        "config",
        label,
        ("scan", "--snapshot", "{d}/snap", "--config", "{d}/config.yaml"),
        (*snapshot_files(), ("config.yaml", text.encode("utf-8", "surrogateescape"))),
        valid=valid,
        names=names,
        inprocess=True,
    )


def _nest(check: str, keys: list[str], value: str) -> str:
    text = f"checks:\n  {check}:\n"
    for depth, key in enumerate(keys):
        text += "    " + "  " * depth + f"{key}:" + ("\n" if depth < len(keys) - 1 else "")
    return text + f" {value}\n"


@st.composite
def config_values(draw: st.DrawFn) -> Case:
    """One setting of one check set to a hostile value, under either spelling of its key."""
    check, path, kind = draw(st.sampled_from(settings_table()))
    keys = [draw(st.sampled_from((k, camel(k)))) for k in path]
    table = NUMBER_VALUES if kind in NUMBER else OTHER_VALUES
    value = draw(st.sampled_from(sorted(table)))
    valid = table[value]
    if path[-1] in SIGNED and value in ("-1", "-0.5"):
        valid = None  # a Pod priority may be negative (PriorityClass values are int32)
    return config_case(
        f"{check}: {'.'.join(keys)}: {value}",
        _nest(check, keys, value),
        valid=valid,
        names=keys[-1] if valid is False else None,
    )


@st.composite
def both_spellings(draw: st.DrawFn) -> Case:
    """A setting given under both its camelCase and snake_case keys: ambiguous, refused."""
    candidates = [row for row in settings_table() if len(row[1]) == 1 and "_" in row[1][0]]
    check, (key,), kind = draw(st.sampled_from(candidates))
    value = "1" if kind in NUMBER else "[]" if "tuple" in str(kind) else "true"
    text = f"checks:\n  {check}:\n    {key}: {value}\n    {camel(key)}: {value}\n"
    return config_case(f"{check}: {key} and {camel(key)}", text, valid=False, names=camel(key))


def config_cases() -> st.SearchStrategy[Case]:
    return st.one_of(config_values(), both_spellings())


def config_catalogue() -> list[Case]:
    """The issue's bad configs, and the shapes around them."""
    u, e, p, s = "critical-pod-underrequested", "evicted", "probe-restarts", "failed-pod-storm"
    bad = [
        (f"{u}: memoryFloor 12XB", _nest(u, ["memoryFloor"], "12XB"), "memoryFloor"),
        (f"{u}: cpuFloor abc", _nest(u, ["cpuFloor"], "abc"), "cpuFloor"),
        (f"{u}: roleFloors memory 12XB", _nest(u, ["roleFloors"], "[{role: dns, memory: 12XB}]"),
         "memory"),
        (f"{p}: starvationCpuRequest 5 cores", _nest(p, ["starvationCpuRequest"], "5 cores"),
         "starvationCpuRequest"),
        (f"{p}: windowSlack x", _nest(p, ["windowSlack"], "x"), "windowSlack"),
        (f"{p}: windowSlack -5m", _nest(p, ["windowSlack"], "-5m"), "windowSlack"),
        (f"{s}: recentMinutes .nan", _nest(s, ["recentMinutes"], ".nan"), "recentMinutes"),
        ("node-scale-burst: windowSeconds -1", _nest("node-scale-burst", ["windowSeconds"], "-1"),
         "windowSeconds"),
        ("node-scale-burst: windowSeconds 0", _nest("node-scale-burst", ["windowSeconds"], "0"),
         "windowSeconds"),
        (f"{e}: extraSelectors 'app in (a'",
         _nest(e, ["critical", "extraSelectors"], "[{role: x, selector: 'app in (a'}]"),
         "app in (a"),
        (f"{e}: extraSelectors ''", _nest(e, ["critical", "extraSelectors"],
         "[{role: x, selector: ''}]"), "extraSelectors"),
        (f"{e}: extraSelectors not a list", _nest(e, ["critical", "extraSelectors"], "x"),
         "extraSelectors"),
        ("unknown check", "checks:\n  no-such-check: {}\n", "no-such-check"),
        ("unknown top-level key", "chekcs: {}\n", "chekcs"),
        ("disabled not a list", "disabled: node-scale-burst\n", "disabled"),
        ("checks a list", "checks: [1, 2]\n", "checks"),
        ("a YAML scalar", "just words\n", "config.yaml"),
        ("a YAML list", "- 1\n- 2\n", "config.yaml"),
        ("invalid YAML", "checks: {a: [\n", "config.yaml"),
        ("YAML nested 5,000 deep", "checks: " + "[" * 5000 + "]" * 5000 + "\n", "config.yaml"),
        ("YAML alias bomb", _alias_bomb_config(), "config.yaml"),
        ("not UTF-8", "checks: {}\n# \udcff\n", "config.yaml"),
    ]  # fmt: skip
    return [config_case(label, text, valid=False, names=names) for label, text, names in bad]


def _alias_bomb_config(levels: int = 12) -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


# -- scenarios -------------------------------------------------------------------------------


@functools.cache
def scenario(name: str = "healthy") -> dict[str, Any]:
    """A bundled scenario, shortened to two minutes of cluster time (cheap to run)."""
    doc: dict[str, Any] = yaml.safe_load((BUNDLED / f"{name}.yaml").read_text())
    doc["duration"] = "2m"
    doc["timeline"] = [a for a in doc.get("timeline", []) if _minutes(a.get("at")) < 2]
    return doc


def _minutes(at: Any) -> float:
    match = re.fullmatch(r"(\d+)m", str(at))
    return float(match.group(1)) if match else 99.0


def scenario_case(
    label: str, doc: Any, *, valid: bool | None, names: str | None, extra: tuple[str, ...] = ()
) -> Case:
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False)
    return Case(
        "scenario",
        label,
        ("sim", "run", "{d}/story.yaml", *extra),
        (("story.yaml", text.encode("utf-8", "surrogateescape")),),
        valid=valid,
        names=names,
        timeout=30.0,
    )


@st.composite
def scenario_mutations(draw: st.DrawFn) -> Case:
    """A value of the wrong type (or a hostile number) at a random path of a bundled scenario,
    run for one minute of cluster time."""
    import copy

    name = draw(st.sampled_from(("healthy", "node-failures", "gitops-nodename-storm")))
    doc = copy.deepcopy(scenario(name))
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
    hostile: tuple[Any, ...] = (None, -1, 0, 10**12, float("nan"), "0s", "-5m", "x", [], {})
    value = draw(st.sampled_from(hostile))
    if path:
        snapshots.put(doc, tuple(path), value)
    dotted = ".".join(str(p) for p in path)
    return scenario_case(
        f"{name}: {dotted} = {value!r}", doc, valid=None, names=None, extra=("--until", "1m")
    )


def scenario_catalogue() -> list[Case]:
    """The issue's bad scenarios: each must exit 2 naming the field, in seconds."""

    def changed(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(json.dumps(scenario()))
        snapshots.put(doc, path, value)
        return doc

    bad: list[tuple[str, Any, str]] = [
        ("pools[0].count 1000000000", changed(("pools", 0, "count"), 1_000_000_000), "count"),
        ("resolution 0s", changed(("cluster", "resolution"), "0s"), "resolution"),
        ("resolution -1s", changed(("cluster", "resolution"), "-1s"), "resolution"),
        ("resolution 1e-300", changed(("cluster", "resolution"), 1e-300), "resolution"),
        ("duration .nan", changed(("duration",), float("nan")), "duration"),
        ("duration -5m", changed(("duration",), "-5m"), "duration"),
        ("duration inf", changed(("duration",), float("inf")), "duration"),
        ("eventTTL -5m", changed(("cluster", "eventTTL"), "-5m"), "eventTTL"),
        ("replicas 1000000000", changed(("objects", 0, "manifests", 1, "spec", "replicas"),
         1_000_000_000), "replicas"),
        ("a YAML alias bomb", _alias_bomb_config() + "name: bomb\n", "story.yaml"),
        ("YAML nested 5,000 deep", "name: deep\nduration: " + "[" * 5000 + "]" * 5000 + "\n",
         "story.yaml"),
        ("an empty file", "", "story.yaml"),
        ("a YAML list", "- 1\n", "story.yaml"),
        ("not UTF-8", "name: x\n# \udcff\n", "story.yaml"),
    ]  # fmt: skip
    return [scenario_case(label, doc, valid=False, names=names) for label, doc, names in bad]
