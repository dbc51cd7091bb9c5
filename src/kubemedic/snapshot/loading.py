"""Reading cluster snapshots: what ``kubectl get ... -o json`` (or ``-o yaml``) prints.

A snapshot is a file or a directory of files (walked recursively, in name order, hidden files
skipped). Each file is ``.json``, ``.yaml`` or ``.yml``, optionally gzip-compressed (``.gz``), and
holds a single object, a ``List`` (``kubectl get -o json`` of several kinds), a typed list as the
REST API returns it (``PodList``, whose items carry no ``kind``: it is taken from the list), or
several YAML documents. JSON files may also hold several concatenated documents (``kubectl get -w
-o json`` output).

The whole snapshot is read and checked before anything is judged, so a malformed file stops the
scan with ``SnapshotError`` naming the file and the line/column (or byte offset) at fault, and
nothing is half-printed. Objects of kinds kubemedic does not use are counted, not kept.

Quantities in the objects the checks read (container requests/limits, pod overhead, node
capacity/allocatable) are validated here too: the API server would have refused an invalid one,
so it marks a damaged or hand-edited file, reported with the file, object and field.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from kubemedic.model import objects, resources
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import KNOWN_KINDS, ClusterView

__all__ = ["LoadedSnapshot", "SnapshotError", "load_snapshot"]

SUFFIXES = (".json", ".yaml", ".yml")
MAX_FILE_BYTES = 4 * 1024**3


class SnapshotError(Exception):
    """A snapshot cannot be read. ``str()`` names the file and where in it."""


@dataclass(slots=True)
class LoadedSnapshot:
    """The objects of a snapshot, with where each came from."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    skipped_files: list[Path] = field(default_factory=list)
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    source_of: dict[int, Path] = field(default_factory=dict)

    def view(self, *, at: datetime | None = None) -> ClusterView:
        view = ClusterView.build(self.bodies, at=at)
        view.unknown_kinds.update(self.unknown_kinds)
        return view


def load_snapshot(path: str | os.PathLike[str], *, validate: bool = True) -> LoadedSnapshot:
    """Read every object under ``path``. Raises ``SnapshotError`` on any unreadable input."""
    root = Path(path)
    if not root.exists():
        raise SnapshotError(f"{root}: no such file or directory")
    loaded = LoadedSnapshot()
    for file in _files(root, loaded):
        loaded.files.append(file)
        for body in _documents(file):
            _collect(body, file=file, loaded=loaded)
    if not loaded.files:
        raise SnapshotError(
            f"{root}: no snapshot files found (expected {', '.join(SUFFIXES)}, optionally .gz)"
        )
    if validate:
        for body in loaded.bodies:
            _validate(body, file=loaded.source_of.get(id(body), root))
    return loaded


def _files(root: Path, loaded: LoadedSnapshot) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(names):
            candidate = Path(directory) / name
            if name.startswith("."):
                continue
            if _format_of(candidate) is None:
                loaded.skipped_files.append(candidate)
                continue
            yield candidate


def _format_of(file: Path) -> str | None:
    name = file.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return "json" if suffix == ".json" else "yaml"
    return None


def _read_text(file: Path) -> str:
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            raise SnapshotError(f"{file}: larger than {MAX_FILE_BYTES // 1024**3} GiB")
        raw = file.read_bytes()
        if file.name.lower().endswith(".gz") or raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise SnapshotError(f"{file}: cannot read: {error}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise SnapshotError(
            f"{file}: line {line} (byte {error.start}): not valid UTF-8 ({error.reason})"
        ) from None


def _documents(file: Path) -> Iterator[Any]:
    text = _read_text(file)
    kind = _format_of(file) or "json"
    if kind == "json" or text.lstrip()[:1] in ("{", "["):
        yield from _json_documents(file, text)
    else:
        yield from _yaml_documents(file, text)


def _json_documents(file: Path, text: str) -> Iterator[Any]:
    try:
        yield orjson.loads(text)
        return
    except orjson.JSONDecodeError as error:
        first_error = error
    # Several concatenated documents (``kubectl get -w -o json``)?
    decoded = _concatenated(text)
    if decoded is None:
        raise SnapshotError(f"{file}: {_json_position(text, first_error)}") from None
    yield from decoded


def _concatenated(text: str) -> list[Any] | None:
    decoder = json.JSONDecoder()
    documents: list[Any] = []
    index = 0
    length = len(text)
    while index < length:
        while index < length and text[index].isspace():
            index += 1
        if index >= length:
            break
        try:
            document, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            return None
        documents.append(document)
    return documents if len(documents) > 1 else None


def _json_position(text: str, error: orjson.JSONDecodeError) -> str:
    position = error.pos
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}: invalid JSON: {error.msg}"


def _yaml_documents(file: Path, text: str) -> Iterator[Any]:
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = error.problem or error.context or "malformed"
        raise SnapshotError(f"{file}: {where}invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise SnapshotError(f"{file}: invalid YAML: {error}") from None
    yield from (document for document in documents if document is not None)


def _collect(
    document: Any, *, file: Path, loaded: LoadedSnapshot, list_kind: str | None = None
) -> None:
    if not isinstance(document, Mapping):
        raise SnapshotError(
            f"{file}: expected a Kubernetes object or List, found a {type(document).__name__}"
        )
    kind = document.get("kind")
    items = document.get("items")
    if isinstance(items, list) and (
        kind is None or (isinstance(kind, str) and kind.endswith("List"))
    ):
        item_kind = kind[: -len("List")] if isinstance(kind, str) and kind != "List" else None
        for item in items:
            _collect(item, file=file, loaded=loaded, list_kind=item_kind)
        return
    if not isinstance(kind, str) or not kind:
        if list_kind is None:
            loaded.unknown_kinds["<no kind>"] += 1
            return
        kind = list_kind
        document = {**document, "kind": kind}
    if kind not in KNOWN_KINDS:
        loaded.unknown_kinds[kind] += 1
        return
    body = dict(document)
    loaded.bodies.append(body)
    loaded.source_of[id(body)] = file


def _validate(body: Mapping[str, Any], *, file: Path) -> None:
    try:
        kind = body.get("kind")
        if kind == "Pod":
            resources.pod_requests(body)
            resources.pod_limits(body)
        elif kind == "Node":
            resources.node_allocatable(body)
            resources.node_capacity(body)
        elif kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"):
            template = {
                "kind": kind,
                "metadata": objects.get_map(body, "metadata"),
                "spec": objects.get_map(body, "spec", "template", "spec"),
            }
            resources.pod_requests(template, prefix="spec.template.")
            resources.pod_limits(template, prefix="spec.template.")
    except QuantityError as error:
        raise SnapshotError(f"{file}: {error}") from None
