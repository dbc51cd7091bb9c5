"""Scenarios: finding, reading and checking the YAML files that tell an incident's story.

A scenario describes a cluster when the story begins (node pools and objects) and a timeline of
what happens to it; the format is documented in :mod:`kubemedic.sim.scenarios.spec`, which
defines it. :mod:`kubemedic.sim.scenarios.timeline` plays a scenario on a
:class:`~kubemedic.sim.cluster.assembly.Cluster`. The bundled scenarios live in the ``scenarios``
directory beside this module; ``kubemedic sim list`` shows them (:func:`available`) and
``kubemedic sim run NAME`` (or a path to a file) plays one (:func:`load`).

Reading a file is all or nothing: :func:`parse` checks the fields against the schema, then what
spans fields (an action's ``pool`` names a pool, targets and manifests are of kinds the simulator
serves, resource quantities and usage annotations parse, a node selection says what it selects),
and raises one :class:`ScenarioError` listing every problem by its field path in the file's own
terms (``timeline[3].at: "5x" is not a duration``; an unknown key gets a "did you mean").
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kubemedic.errors import InputError
from kubemedic.model import documents
from kubemedic.sim.machinery.apiresources import RESOURCES
from kubemedic.sim.scenarios.spec import (
    MAX_FIRINGS,
    MAX_NODES,
    MAX_PODS,
    Action,
    Apply,
    Autoscaling,
    ClusterSettings,
    Commit,
    Create,
    Delete,
    Edit,
    Fault,
    FileContent,
    GitOps,
    Manifest,
    NodePool,
    NodeSelection,
    ObjectGroup,
    Patch,
    Push,
    Reboot,
    Repeat,
    ScalePool,
    Scenario,
    StartupTaint,
    Sync,
    Taint,
    Target,
    Untaint,
    checked_quantity,
    default_api_version,
    parse_duration,
    selector_labels,
    show_value,
)

__all__ = [
    "BUNDLED",
    "Action",
    "NodePool",
    "NodeSelection",
    "Scenario",
    "ScenarioError",
    "ScenarioInfo",
    "available",
    "check_until",
    "default_api_version",
    "load",
    "parse",
    "parse_duration",
    "selector_labels",
]

#: The directory of the bundled scenarios (package data).
BUNDLED = Path(__file__).with_name("bundled")
USAGE_PREFIX = "usage.sim.kubemedic.io/"
USAGE_KEYS = (
    "memory", "memoryPerNode", "memoryPerHour", "memoryMax", "cpu", "cpuPerNode", "startupCpu",
)  # fmt: skip


class ScenarioError(InputError, ValueError):
    """A scenario file that cannot be played. The message names the file and, for each
    problem, the field path at fault (``timeline[3].at: "5x" is not a duration``)."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{where}: {what}" if where else what for where, what in problems]
        if len(lines) == 1:
            text = f"{source}: {lines[0]}"
        else:  # one line still: the first few, and how many more
            shown = "; ".join(lines[:_LISTED])
            more = f"; and {len(lines) - _LISTED} more" if len(lines) > _LISTED else ""
            text = f"{source}: {len(lines)} problems: {shown}{more}"
        super().__init__(text)


_LISTED = 5
"""Problems a ``ScenarioError`` message lists (``problems`` holds them all)."""

MAX_BYTES = 16 * 1024 * 1024
"""Largest scenario file read."""


@dataclass(frozen=True)
class ScenarioInfo:
    """A bundled scenario, as ``kubemedic sim list`` shows it."""

    name: str
    description: str
    path: Path
    duration: timedelta

    @property
    def title(self) -> str:
        """The description's first sentence."""
        first = re.split(r"(?<=[.;])\s", self.description, maxsplit=1)[0]
        return first.rstrip(".;")


# loading ----------------------------------------------------------------------------------


def available() -> list[ScenarioInfo]:
    """The bundled scenarios, by name."""
    out = []
    for path in sorted(BUNDLED.glob("*.yaml")):
        scenario = load(path)
        duration = timedelta(seconds=scenario.duration)
        out.append(ScenarioInfo(scenario.name, scenario.description, path, duration))
    return out


def load(name_or_path: str | Path) -> Scenario:
    """A bundled scenario by name, or a scenario file by path. Raises :class:`ScenarioError`."""
    path = Path(name_or_path)
    bundled = BUNDLED / f"{name_or_path}.yaml"
    if isinstance(name_or_path, str) and "/" not in name_or_path and bundled.is_file():
        path = bundled
    if not path.is_file():  # a FIFO or a device is not read: it could block for ever
        names = ", ".join(sorted(p.stem for p in BUNDLED.glob("*.yaml")))
        what = "not a regular file" if path.exists() else "no such scenario"
        raise ScenarioError(str(name_or_path), [("", f"{what} (bundled: {names})")])
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ScenarioError(str(path), [("", f"larger than {MAX_BYTES:,} bytes")])
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ScenarioError(str(path), [("", f"cannot read: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(str(path), [("", f"byte {exc.start}: not valid UTF-8")]) from None
    return parse(text, source=str(path), default_name=path.stem)


def parse(text: str, *, source: str = "<scenario>", default_name: str = "") -> Scenario:
    """Validate scenario YAML. Raises :class:`ScenarioError` naming ``source`` and the fields."""
    try:
        data = documents.load_yaml(text, where=source)
    except documents.DocumentError as exc:  # "<source>: line 3: invalid YAML: ..."
        message = str(exc).removeprefix(f"{source}: ")
        found = re.match(r"(line \d+): (.*)", message)
        where, what = (found[1], found[2]) if found else ("", message)
        raise ScenarioError(source, [(where, what)]) from None
    if not isinstance(data, dict):
        raise ScenarioError(source, [("", "a scenario is a mapping of keys (name, pools, ...)")])
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(source, [_describe(error, data) for error in exc.errors()]) from None
    problems = list(_check(scenario))
    if problems:
        raise ScenarioError(source, problems)
    name = scenario.name or default_name
    return scenario.model_copy(update={"name": name, "source": source})


# error messages ---------------------------------------------------------------------------

_KNOWN_KEYS = sorted(
    {
        field.alias or name
        for model in (
            Scenario,
            ClusterSettings,
            NodePool,
            Taint,
            StartupTaint,
            Autoscaling,
            ObjectGroup,
            Repeat,
            Target,
            NodeSelection,
            Apply,
            Create,
            Patch,
            Edit,
            Delete,
            Fault,
            Reboot,
            ScalePool,
            Untaint,
            GitOps,
            Commit,
            Push,
            Sync,
        )
        for name, field in model.model_fields.items()
    }
)


def _describe(error: Mapping[str, Any], data: object) -> tuple[str, str]:
    path = _path(error["loc"], data)
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(error["loc"][-1])
        close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        return path, f"unknown key{hint}"
    if kind == "union_tag_invalid":
        tags = str(ctx.get("expected_tags", "")).replace("'", "")
        tag = show_value(ctx.get("tag"))
        return _join(path, "action"), f"unknown action {tag} (one of: {tags})"
    if kind == "union_tag_not_found":
        return path, 'missing "action"'
    if kind == "missing":
        return path, "required"
    if kind == "value_error":
        return path, str(ctx.get("error", error["msg"]))
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return path, f"{show_value(value)} is not one of: {expected}"
    return path, f"expected {_expected(kind, ctx)}, got {_shown_input(value)}"


_EXPECTED = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "text",
    "dict": "a mapping",
    "model": "a mapping",
    "dataclass": "a mapping",
    "list": "a list",
    "tuple": "a list",
    "datetime": "a time such as 2026-01-01T00:00:00Z",
    "timezone": "a time with a time zone such as 2026-01-01T00:00:00Z",
}


def _expected(kind: str, ctx: Mapping[str, Any]) -> str:
    """What a pydantic error type says was expected, in the file's terms (never its sentence)."""
    if kind == "string_pattern_mismatch":
        return "lowercase letters, digits and '-' (a DNS label)"
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return "a non-empty text"
    if kind == "too_short":
        return f"at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} item(s)"
    for bound, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if bound in ctx:
            return f"a number {sign} {ctx[bound]}"
    for prefix, words in _EXPECTED.items():
        if kind.startswith(prefix):
            return words
    return "a valid value"


def _shown_input(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return show_value(value)


def _path(loc: tuple[Any, ...], data: object) -> str:
    """Field path in the user's terms: discriminator tags pydantic adds to ``loc`` removed."""
    out = ""
    node: object = data
    tagged = False
    for element in loc:
        if isinstance(element, int) and isinstance(node, list):
            out += f"[{element}]"
            node = node[element] if element < len(node) else None
            tagged = isinstance(node, dict) and "action" in node
        elif tagged and isinstance(node, dict) and node.get("action") == element:
            tagged = False
        else:
            tagged = False
            out = _join(out, str(element))
            node = node.get(element) if isinstance(node, dict) else None
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# semantic checks --------------------------------------------------------------------------

_KINDS = {(r.api_version, r.kind) for r in RESOURCES if "create" in r.verbs}


def _check(scenario: Scenario) -> Iterator[tuple[str, str]]:
    pools = {pool.name for pool in scenario.pools}
    seen: set[str] = set()
    for i, pool in enumerate(scenario.pools):
        if pool.name in seen:
            yield f"pools[{i}].name", f"duplicate pool {pool.name!r}"
        seen.add(pool.name)
        if pool.autoscaling is not None and pool.autoscaling.min > pool.autoscaling.max:
            yield f"pools[{i}].autoscaling", "min is above max"
        if pool.autoscaling is not None and pool.provider != "clusterapi":
            yield f"pools[{i}].autoscaling", 'needs provider "clusterapi"'
        if pool.agent is not None and pool.agent.self_repair and not pool.agent.enabled:
            yield f"pools[{i}].agent.selfRepair", "needs the agent enabled"
    for i, group in enumerate(scenario.objects):
        for j, manifest in enumerate(group.manifests):
            yield from _check_manifest(manifest, f"objects[{i}].manifests[{j}]")
    if scenario.gitops is not None:
        for i, commit in enumerate(scenario.gitops.commits):
            yield from _check_files(commit.files, f"gitops.commits[{i}].files")
    for i, action in enumerate(scenario.timeline):
        where = f"timeline[{i}]"
        if isinstance(action, Push | Sync) and scenario.gitops is None:
            yield f"{where}.action", f"{action.action} needs a gitops block (its repository)"
        if isinstance(action, Push):
            yield from _check_files(action.files, f"{where}.files")
        if isinstance(action, Apply | Create):
            for j, manifest in enumerate(action.manifests):
                yield from _check_manifest(manifest, f"{where}.manifests[{j}]")
        if isinstance(action, Patch | Edit | Delete):
            target = action.target
            if (target.api_version or default_api_version(target.kind), target.kind) not in _KINDS:
                yield f"{where}.target.kind", f"unknown kind {target.kind!r}"
        if isinstance(action, ScalePool):
            if action.pool not in pools:
                yield f"{where}.pool", f"no pool named {action.pool!r} ({_names(pools)})"
            if (action.replicas is None) == (action.add is None):
                yield where, "scale-pool needs one of replicas or add"
        if isinstance(action, Fault | Reboot | Untaint):
            nodes = action.nodes
            if nodes.pool is not None and nodes.pool not in pools:
                yield f"{where}.nodes.pool", f"no pool named {nodes.pool!r} ({_names(pools)})"
            if not (nodes.names or nodes.pool or nodes.zone or nodes.selector or nodes.all):
                yield f"{where}.nodes", "select nodes by names, pool, zone, selector or all"
            if nodes.fraction is not None and nodes.count is not None:
                yield f"{where}.nodes", "give fraction or count, not both"
            if isinstance(nodes.selector, str):
                try:
                    selector_labels(nodes.selector)
                except ValueError as exc:
                    yield f"{where}.nodes.selector", str(exc)
        if action.repeat is not None and action.repeat.every <= 0:
            yield f"{where}.repeat.every", "must be positive"
        elif _firings(scenario, action) > MAX_FIRINGS:
            yield f"{where}.repeat", f"fires more than {MAX_FIRINGS:,} times"
    yield from _check_size(scenario)


def _firings(scenario: Scenario, action: Any) -> int:
    """How often ``action`` fires (as the timeline schedules it)."""
    repeat = action.repeat
    if repeat is None:
        return 1
    if repeat.times is not None:
        return int(repeat.times)
    last = repeat.until if repeat.until is not None else scenario.duration
    return max(1, int((last - action.at) // repeat.every) + 1)


MAX_STEPS = 10_000_000
"""Most engine steps a scenario may take (its duration over its resolution)."""


def check_until(scenario: Scenario, until: timedelta) -> None:
    """Refuse to play ``scenario`` for ``until`` (``sim run --until``) when that is more than
    ``MAX_STEPS`` steps of its resolution; ``ScenarioError`` naming the flag."""
    steps = until.total_seconds() / scenario.cluster.resolution
    if steps > MAX_STEPS:
        problem = f"{steps:,.0f} steps of cluster.resolution; at most {MAX_STEPS:,}"
        raise ScenarioError(scenario.source or scenario.name, [("--until", problem)])


def _check_size(scenario: Scenario) -> Iterator[tuple[str, str]]:
    """Refuse a scenario that would build or run without end: more nodes, pods or steps than the
    limits, counted from the file before anything is built."""
    steps = scenario.duration / scenario.cluster.resolution
    if steps > MAX_STEPS:
        yield (
            "duration",
            f"{steps:,.0f} steps of cluster.resolution; at most {MAX_STEPS:,} "
            "(a longer resolution or a shorter duration)",
        )
    nodes = {pool.name: pool.count for pool in scenario.pools}
    for action in scenario.timeline:
        if isinstance(action, ScalePool) and action.pool in nodes:
            if action.replicas is not None:
                nodes[action.pool] = max(nodes[action.pool], action.replicas)
            if action.add is not None:
                nodes[action.pool] += action.add * _firings(scenario, action)
    most = sum(nodes.values())
    if most > MAX_NODES:
        yield "pools", f"up to {most:,} nodes; at most {MAX_NODES:,}"
    manifests = [m for group in scenario.objects for m in group.manifests]
    for action in scenario.timeline:
        if isinstance(action, Apply | Create):
            manifests.extend(action.manifests * _firings(scenario, action))
    daemonsets = sum(1 for m in manifests if m.get("kind") == "DaemonSet")
    pods = daemonsets * most + sum(_replicas(m) for m in manifests)
    for i, action in enumerate(scenario.timeline):
        if isinstance(action, Patch | Edit):
            asked = _replicas(action.patch)
            if asked > MAX_PODS:
                yield f"timeline[{i}].patch", f"{asked:,} replicas; at most {MAX_PODS:,}"
            pods += asked
    if pods > MAX_PODS:
        biggest = max(manifests, key=_replicas, default=None)
        most_of = ""
        if biggest is not None and _replicas(biggest) > 0:
            meta = biggest.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            most_of = f" (the most: {biggest.get('kind')} {name}, {_replicas(biggest):,} replicas)"
        elif daemonsets:
            most_of = f" ({daemonsets} DaemonSets on each of up to {most:,} nodes)"
        yield "objects", f"up to {pods:,} pods{most_of}; at most {MAX_PODS:,}"


def _replicas(value: object) -> int:
    """Pods a manifest (or patch) asks for: every ``replicas``, ``parallelism`` or
    ``completions`` it holds (a wrong-typed one is left to the API server to refuse)."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if key in ("replicas", "parallelism", "completions") and isinstance(inner, int):
                    total += max(0, inner)
                elif isinstance(inner, Mapping | list):
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(inner for inner in item if isinstance(inner, Mapping | list))
    return total


def _names(names: set[str]) -> str:
    return f"pools: {', '.join(sorted(names))}" if names else "no pools are defined"


def _check_manifest(manifest: Manifest, where: str) -> Iterator[tuple[str, str]]:
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        yield where, "a manifest needs apiVersion and kind"
        return
    if (api_version, kind) not in _KINDS:
        yield f"{where}.kind", f"the simulator does not serve {api_version} {kind}"
    meta = manifest.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        yield f"{where}.metadata.name", "required"
        return
    yield from _check_usage(meta, f"{where}.metadata")
    spec = manifest.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod_spec: object = spec if kind == "Pod" else None
    if isinstance(template, dict):
        template_meta = template.get("metadata")
        if isinstance(template_meta, dict):
            yield from _check_usage(template_meta, f"{where}.spec.template.metadata")
        pod_spec = template.get("spec")
        where = f"{where}.spec.template"
    if isinstance(pod_spec, dict):
        for field in ("containers", "initContainers"):
            listed = pod_spec.get(field) or []
            if not isinstance(listed, list):
                yield f"{where}.spec.{field}", f"expected a list, got {_shown_input(listed)}"
                continue
            for k, c in enumerate(listed):
                resources = c.get("resources") if isinstance(c, dict) else None
                if not isinstance(resources, dict):
                    continue
                for part in ("requests", "limits"):
                    path = f"{where}.spec.{field}[{k}].resources.{part}"
                    amounts = resources.get(part) or {}
                    if not isinstance(amounts, dict):
                        yield path, f"expected a mapping, got {_shown_input(amounts)}"
                        continue
                    for name, value in amounts.items():
                        try:
                            checked_quantity(value)
                        except ValueError as exc:
                            yield f"{path}.{name}", str(exc)


def _check_usage(meta: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        yield f"{where}.annotations", f"expected a mapping, got {_shown_input(annotations)}"
        return
    for key, value in annotations.items():
        if not str(key).startswith(USAGE_PREFIX):
            continue
        path = f'{where}.annotations["{key}"]'
        try:
            usage = json.loads(value) if isinstance(value, str) else None
        except json.JSONDecodeError:
            usage = None
        if not isinstance(usage, dict):
            yield path, 'a usage annotation is a JSON object such as {"memory": "1Gi"}'
            continue
        for name, amount in usage.items():
            if name not in USAGE_KEYS:
                yield path, f"unknown usage key {name!r} (one of: {', '.join(USAGE_KEYS)})"
                continue
            try:
                checked_quantity(amount)
            except ValueError as exc:
                yield path, f"{name}: {exc}"


def _check_files(files: Mapping[str, FileContent], where: str) -> Iterator[tuple[str, str]]:
    """A commit's files: relative paths inside the repository, manifests the simulator serves."""
    for path, content in files.items():
        at = f'{where}["{path}"]'
        parts = path.split("/")
        if not path or path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
            yield at, "a relative path inside the repository (no '..', '.git' or empty parts)"
            continue
        listed = content if isinstance(content, list) else [content]
        for j, manifest in enumerate(listed):
            if isinstance(manifest, dict):
                yield from _check_manifest(
                    manifest, f"{at}[{j}]" if isinstance(content, list) else at
                )
