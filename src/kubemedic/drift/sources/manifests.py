"""From a manifest file's bytes to the Kubernetes objects it declares, as ``kubectl apply -f``
and Argo CD's directory applications read them.

* ``.yaml``/``.yml`` files may hold several documents (``---``); ``.json`` files one value.
  Both are parsed by ``kubemedic.model.documents`` (safe types only, depth and alias limits).
* A ``List`` (``kubectl get -o yaml`` of several objects) or a typed list (``DeploymentList``)
  is flattened into its items; items of a typed list may leave out ``kind`` and ``apiVersion``
  (they are the list's).
* A file none of whose documents has ``apiVersion`` or ``kind`` is not a manifest (Helm's
  ``values.yaml`` and ``Chart.yaml``, a tool's configuration) and is skipped with that reason;
  so is Kustomize's own configuration (``kustomize.config.k8s.io``: ``Kustomization``,
  ``Component``), which is rendered, not applied.
* Anything else that cannot be applied is a ``ManifestError`` naming the file, the document and
  its line: YAML or JSON that does not parse, a document of a manifest that is not an object,
  ``kind``/``apiVersion`` missing or not strings, ``metadata.name`` missing (an object with only
  ``generateName`` is skipped instead: a new object is made at each apply, so there is no live
  object to compare it with).

Pure: bytes in, objects out. May import: kubemedic.model.documents and
kubemedic.drift.sources.errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubemedic.drift.sources.errors import ManifestError
from kubemedic.model import documents

__all__ = [
    "KUSTOMIZATION_FILES",
    "MANIFEST_SUFFIXES",
    "Parsed",
    "is_manifest_name",
    "parse_manifest",
    "parse_rendered",
]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""The names ``kustomize build`` looks for in a directory, in its order."""

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
"""What Argo CD's directory applications and ``kubectl apply -f DIR`` read."""

_KUSTOMIZE_CONFIG = ("kustomize.config.k8s.io/", "config.kubernetes.io/")
_DOCUMENT_START = re.compile(r"^---(?:[ \t].*)?$", re.MULTILINE)


@dataclass(slots=True)
class Parsed:
    """What a file declares: ``objects`` as ``(document number, body)`` (1-based, a list's
    items sharing their list's number), ``skipped`` objects as ``(document number, reason)``,
    and ``skip_reason`` when the whole file is not a manifest."""

    objects: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    skip_reason: str | None = None


def is_manifest_name(name: str) -> bool:
    """Whether a file name is one a directory of manifests is read for."""
    return name.lower().endswith(MANIFEST_SUFFIXES)


def parse_manifest(data: bytes, *, where: str, name: str) -> Parsed:
    """The objects of one file; ``where`` names it in messages (``repo@sha:path/file.yaml``)
    and ``name`` is its file name (which decides JSON or YAML)."""
    text = _decode(data, where=where)
    if not text.strip():
        return Parsed(skip_reason="empty file")
    try:
        if name.lower().endswith(".json"):
            values = [documents.load_json(text, where=where)]
        else:
            values = documents.load_yaml_all(text, where=where)
    except documents.DocumentError as error:
        raise ManifestError(str(error)) from None
    if not values:
        return Parsed(skip_reason="no YAML document (only comments or empty documents)")
    return _objects_of(values, text=text, where=where)


def parse_rendered(text: str, *, where: str) -> Parsed:
    """The objects ``kubectl kustomize`` printed (a YAML stream of objects)."""
    try:
        values = documents.load_yaml_all(text, where=where)
    except documents.DocumentError as error:
        raise ManifestError(str(error)) from None
    return _objects_of(values, text=text, where=where) if values else Parsed()


def _decode(data: bytes, *, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ManifestError(
            f"{where}: line {line} (byte {error.start}): not valid UTF-8 ({error.reason})"
        ) from None


def _looks_like_object(value: Any) -> bool:
    return isinstance(value, Mapping) and ("apiVersion" in value or "kind" in value)


def _objects_of(values: list[Any], *, text: str, where: str) -> Parsed:
    parsed = Parsed()
    if not any(_looks_like_object(value) for value in values):
        parsed.skip_reason = (
            "not a Kubernetes manifest: no document has apiVersion or kind "
            "(values, chart metadata or another tool's configuration)"
        )
        return parsed
    config = [
        value
        for value in values
        if isinstance(value, Mapping)
        and str(value.get("apiVersion", "")).startswith(_KUSTOMIZE_CONFIG)
    ]
    if len(config) == len(values):
        kind = config[0].get("kind") or "Kustomization"
        parsed.skip_reason = f"Kustomize configuration ({kind}), rendered with its directory"
        return parsed
    for index, value in enumerate(values):
        number = index + 1
        if not isinstance(value, Mapping):
            raise ManifestError(
                f"{where}: {_place(text, index, len(values))}expected a Kubernetes object, found "
                f"{documents.value_kind(value, mapping='a mapping')}"
            )
        _collect(
            value,
            number=number,
            parsed=parsed,
            where=where,
            text=text,
            index=index,
            count=len(values),
            inherited=None,
            item="",
        )
    return parsed


def _collect(
    value: Mapping[str, Any],
    *,
    number: int,
    parsed: Parsed,
    where: str,
    text: str,
    index: int,
    count: int,
    inherited: tuple[str, str] | None,
    item: str,
) -> None:
    def fail(problem: str) -> ManifestError:
        return ManifestError(f"{where}: {_place(text, index, count)}{item}{problem}")

    kind = value.get("kind")
    api_version = value.get("apiVersion")
    if inherited is not None:
        kind = kind or inherited[0]
        api_version = api_version or inherited[1]
    if not isinstance(kind, str) or not kind:
        found = "no kind" if kind is None else f"kind {documents.value_kind(kind)}"
        raise fail(f"{found}: expected a Kubernetes object with kind (Deployment, ConfigMap, ...)")
    if kind.endswith("List") and "items" in value:
        items = value.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise fail(f"items: expected a list of objects, found {documents.value_kind(items)}")
        item_kind = kind[: -len("List")] or None
        for position, entry in enumerate(items):
            label = f"{item}items[{position}]: "
            if not isinstance(entry, Mapping):
                raise ManifestError(
                    f"{where}: {_place(text, index, count)}{label}expected a Kubernetes object, "
                    f"found {documents.value_kind(entry, mapping='a mapping')}"
                )
            share = (item_kind, api_version) if item_kind and isinstance(api_version, str) else None
            _collect(
                entry,
                number=number,
                parsed=parsed,
                where=where,
                text=text,
                index=index,
                count=count,
                inherited=share,
                item=label,
            )
        return
    if not isinstance(api_version, str) or not api_version:
        found = (
            "no apiVersion"
            if api_version is None
            else "apiVersion " + documents.value_kind(api_version)
        )
        raise fail(f"{kind} with {found}: expected apiVersion (v1, apps/v1, ...)")
    if api_version.startswith(_KUSTOMIZE_CONFIG):
        parsed.skipped.append((number, f"Kustomize configuration ({kind}), not an object"))
        return
    metadata = value.get("metadata")
    if not isinstance(metadata, Mapping):
        found = "no metadata" if metadata is None else documents.value_kind(metadata)
        raise fail(f"{kind} with {found}: expected metadata with a name")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        if isinstance(metadata.get("generateName"), str):
            parsed.skipped.append(
                (
                    number,
                    f"{kind} with generateName and no name: a new object at every apply, "
                    "none to compare",
                )
            )
            return
        raise fail(f"{kind} with no metadata.name")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise fail(
            f"{kind} {name}: metadata.namespace: expected a string, "
            f"found {documents.value_kind(namespace)}"
        )
    body = dict(value)
    body["kind"] = kind
    body["apiVersion"] = api_version
    parsed.objects.append((number, body))


def _place(text: str, index: int, count: int) -> str:
    """``document 2 (line 14): `` for the ``index``-th non-empty document of a stream of
    ``count``, ``""`` for a file of one document. Documents are found by their ``---`` lines
    (at column 0, where YAML's document marker is), empty ones passed over as the parser does."""
    if count <= 1:
        return ""
    starts = [0] + [match.end() for match in _DOCUMENT_START.finditer(text)]
    kept = 0
    for start in starts:
        end = text.find("\n---", start)
        body = text[start : end if end >= 0 else len(text)]
        content = [
            line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")
        ]
        if start == 0 and text.startswith("---"):
            continue
        if not content or content == ["..."]:
            continue
        if kept == index:
            offset = start + body.find(content[0])
            return f"document {index + 1} (line {text.count(chr(10), 0, offset) + 1}): "
        kept += 1
    return f"document {index + 1}: "
