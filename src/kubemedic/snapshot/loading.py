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

import contextlib
import gzip
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from kubemedic.errors import InputError
from kubemedic.model import objects, resources
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import KNOWN_KINDS, ClusterView

__all__ = ["LoadedSnapshot", "SnapshotError", "load_snapshot"]

SUFFIXES = (".json", ".yaml", ".yml")
MAX_FILE_BYTES = 4 * 1024**3
FREEZE_OBJECTS = 20_000
_PIECE_BYTES = 8 * 1024**2
#: The strings of a large list are shared (``_share_strings``) in a snapshot whose files total
#: this much, and in any list once this much of it has been read (a compressed file may be far
#: larger than it looks): sharing saves memory that matters only for large snapshots, and costs
#: time (a second for every 250 MB of lists).
_SHARE_SNAPSHOT_BYTES = 256 * 1024**2
_SHARE_AFTER_BYTES = 128 * 1024**2
_ITEMS_OPENING = re.compile(rb'\n([ \t]+)"items": \[\n([ \t]+)\{\n')


class SnapshotError(InputError):
    """A snapshot cannot be read. ``str()`` names the file and where in it."""


@dataclass(slots=True)
class LoadedSnapshot:
    """The objects of a snapshot, with where each came from."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    skipped_files: list[Path] = field(default_factory=list)
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    spans: list[tuple[int, Path]] = field(default_factory=list)
    """``(index in bodies of the file's first object, file)``, in reading order."""

    def view(self, *, at: datetime | None = None) -> ClusterView:
        view = ClusterView.build(self.bodies, at=at)
        view.unknown_kinds.update(self.unknown_kinds)
        return view


def load_snapshot(
    path: str | os.PathLike[str],
    *,
    validate: bool = True,
    progress: Callable[[str], None] | None = None,
) -> LoadedSnapshot:
    """Read every object under ``path``. Raises ``SnapshotError`` on any unreadable input.

    ``progress`` is told what is being done as it goes (the file being read, the objects read so
    far: after each file, and every few megabytes of a large one)."""
    root = Path(path)
    if not root.exists():
        raise SnapshotError(f"{root}: no such file or directory")
    loaded = LoadedSnapshot()
    files = list(_files(root, loaded))
    share = _total_bytes(files) >= _SHARE_SNAPSHOT_BYTES
    with objects.gc_paused() as pause:
        for number, file in enumerate(files, 1):
            loaded.files.append(file)
            loaded.spans.append((len(loaded.bodies), file))
            told = None if progress is None else _reading(progress, file, number, files, loaded)
            for body in _documents(file, told, share=share):
                _collect(body, file=file, loaded=loaded)
        if not loaded.files:
            raise SnapshotError(
                f"{root}: no snapshot files found (expected {', '.join(SUFFIXES)}, optionally .gz)"
            )
        if validate:
            if progress is not None:
                progress(f"checking the quantities of {len(loaded.bodies):,} objects")
            ends = [start for start, _ in loaded.spans[1:]] + [len(loaded.bodies)]
            for (start, file), end in zip(loaded.spans, ends, strict=True):
                for index in range(start, end):
                    _validate(loaded.bodies[index], file=file)
        # A large snapshot is kept for the rest of the scan: leave it out of later collections.
        pause.freeze = len(loaded.bodies) >= FREEZE_OBJECTS
    return loaded


def _reading(
    progress: Callable[[str], None],
    file: Path,
    number: int,
    files: list[Path],
    loaded: LoadedSnapshot,
) -> Callable[[int], None]:
    """The progress of reading ``file``, told how many of its items are parsed so far."""
    kept = len(loaded.bodies)

    def tell(parsed: int) -> None:
        progress(f"reading {file.name} ({number} of {len(files)} files): {kept + parsed:,} objects")

    tell(0)
    return tell


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


def _read_bytes(file: Path) -> bytes:
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            raise SnapshotError(f"{file}: larger than {MAX_FILE_BYTES // 1024**3} GiB")
        raw = file.read_bytes()
        if file.name.lower().endswith(".gz") or raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise SnapshotError(f"{file}: cannot read: {error}") from None
    return raw


def _decode(file: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise SnapshotError(
            f"{file}: line {line} (byte {error.start}): not valid UTF-8 ({error.reason})"
        ) from None


def _total_bytes(files: list[Path]) -> int:
    total = 0
    for file in files:
        with contextlib.suppress(OSError):  # reading it reports the error
            total += file.stat().st_size
    return total


def _documents(
    file: Path, parsed: Callable[[int], None] | None = None, *, share: bool = True
) -> Iterator[Any]:
    if _format_of(file) == "json":
        in_pieces = _list_in_pieces(file, parsed, share=share)
        if in_pieces is not None:
            yield in_pieces
            return
    raw = _read_bytes(file)
    if _format_of(file) == "json":
        # orjson reads (and checks) UTF-8 itself: no decoded copy of a large file is made
        # unless the file is not a single valid document.
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            del raw
            yield document
            return
        text = _decode(file, raw)
        del raw
        yield from _json_documents(file, text)
        return
    text = _decode(file, raw)
    del raw
    if text.lstrip()[:1] in ("{", "["):
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
    decoded = _concatenated(file, text)
    if decoded is None:
        raise SnapshotError(f"{file}: {_json_position(text, first_error)}") from None
    yield from decoded


def _list_in_pieces(
    file: Path, parsed: Callable[[int], None] | None = None, *, share: bool = True
) -> dict[str, Any] | None:
    """A large pretty-printed ``List`` (as ``kubectl get -o json`` writes it), read and parsed a
    few megabytes of items at a time, so neither the whole file nor the JSON parser's working
    tree of it is ever held in memory beside the objects (for 150,000 pods that is over a
    gigabyte). None when the file is not such a list or anything about it is unexpected: it is
    then read whole, which also reports any error where it is."""
    try:
        if not _PIECE_BYTES <= file.stat().st_size <= MAX_FILE_BYTES:
            return None
        with file.open("rb") as plain:
            gzipped = file.name.lower().endswith(".gz") or plain.read(2) == b"\x1f\x8b"
        opener: Any = gzip.open if gzipped else open
        with opener(file, "rb") as stream:
            document = _parse_pieces(stream, parsed, share_after=0 if share else None)
    except (OSError, EOFError, ValueError, zlib.error):  # JSONDecodeError is a ValueError
        return None
    if document is None:
        return None
    kind = document.get("kind")
    if kind is not None and not (isinstance(kind, str) and kind.endswith("List")):
        return None
    return document


def _parse_pieces(
    stream: Any, parsed: Callable[[int], None] | None = None, *, share_after: int | None = None
) -> dict[str, Any] | None:
    """The list read piece by piece; strings are shared once ``share_after`` bytes are read
    (default: ``_SHARE_AFTER_BYTES``)."""
    share_from = _SHARE_AFTER_BYTES if share_after is None else share_after
    buffer: bytes = stream.read(_PIECE_BYTES)
    read = len(buffer)
    opening = _ITEMS_OPENING.search(buffer)
    if opening is None:
        return None
    outer, inner = opening.group(1), opening.group(2)
    if inner != outer * 2:
        return None
    head = _object_from(buffer[: opening.start()].rstrip(), closing=b"}")
    # Pretty printers put nothing else at an item's indentation: a line ``<inner>},`` followed by
    # ``<inner>{`` can only be the boundary between two items (strings hold no raw newline).
    separator = b"\n" + inner + b"},\n" + inner + b"{\n"
    closing = b"\n" + inner + b"}\n" + outer + b"]"
    width = len(inner)
    items: list[Any] = []
    shared: dict[str, str] = {}
    buffer = buffer[opening.end() - 2 :]
    while True:
        close = buffer.find(closing)
        share = read >= share_from
        if close != -1:
            items.extend(_items_of(buffer[: close + width + 2], shared if share else None))
            rest = buffer[close + len(closing) :] + stream.read()
            break
        cut = buffer.rfind(separator)
        if cut != -1:
            items.extend(_items_of(buffer[: cut + width + 2], shared if share else None))
            buffer = buffer[cut + width + 4 :]
            if parsed is not None:
                parsed(len(items))
        more = stream.read(_PIECE_BYTES)
        if not more:
            return None
        read += len(more)
        buffer += more
    rest = rest.lstrip()
    tail = _object_from(b"{" + (rest[1:] if rest.startswith(b",") else rest), closing=b"")
    if head is None or tail is None or "items" in head or "items" in tail:
        return None
    return {**head, **tail, "items": items}


def _items_of(piece: bytes, shared: dict[str, str] | None) -> list[Any]:
    """Parse a run of items; with ``shared``, make their equal strings one object."""
    if shared is None:
        items: list[Any] = orjson.loads(b"[" + piece + b"]")
        return items
    return _share_strings(piece, shared)


def _share_strings(piece: bytes, shared: dict[str, str]) -> list[Any]:
    """Parse a run of items, then make equal string values one object.

    Most values repeat from object to object (images, times, node names, label values, reasons)
    and a decoded string costs ~60 bytes: sharing them cuts a third of the memory the objects
    take (for a list of 150,000 pods, hundreds of megabytes; for a few thousand, too little to
    pay for the walk: ``_SHARE_SNAPSHOT_BYTES``). Done piece by piece, the freed duplicates are
    reused by the next piece's objects."""
    items: list[Any] = orjson.loads(b"[" + piece + b"]")
    share = shared.setdefault

    def in_map(node: dict[str, Any]) -> None:
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                node[key] = share(value, value)
            elif kind is dict:
                in_map(value)
            elif kind is list:
                in_list(value)

    def in_list(node: list[Any]) -> None:
        for index, value in enumerate(node):
            kind = type(value)
            if kind is dict:
                in_map(value)
            elif kind is str:
                node[index] = share(value, value)
            elif kind is list:
                in_list(value)

    in_list(items)
    return items


def _object_from(text: bytes, *, closing: bytes) -> dict[str, Any] | None:
    if text.endswith(b",") and closing:
        text = text[:-1]
    parsed = orjson.loads(text + closing)
    return parsed if isinstance(parsed, dict) else None


def _concatenated(file: Path, text: str) -> list[Any] | None:
    """Several JSON documents one after another, or None when the first is not one whole
    document (the file is then simply malformed). Once it is, a later malformed document is
    reported where it is."""
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
            _, end = decoder.raw_decode(text, index)
            # orjson decodes what the stdlib only delimits: the same strictness as a single
            # document (no lone surrogates, which could not be printed back as JSON).
            documents.append(orjson.loads(text[index:end]))
        except orjson.JSONDecodeError as error:  # a subclass: caught first
            if not documents and index == 0 and end == length:
                return None
            raise SnapshotError(
                f"{file}: {_position(text, index + error.pos, error.msg)}"
            ) from None
        except json.JSONDecodeError as error:
            if not documents:
                return None
            raise SnapshotError(f"{file}: {_position(text, error.pos, error.msg)}") from None
        index = end
    return documents if len(documents) > 1 else None


def _position(text: str, position: int, message: str) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}: invalid JSON: {message}"


def _json_position(text: str, error: orjson.JSONDecodeError) -> str:
    return _position(text, error.pos, error.msg)


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
    if kind not in KNOWN_KINDS:
        loaded.unknown_kinds[kind] += 1
        return
    body = objects.LoadedBody(document)
    body["kind"] = kind
    loaded.bodies.append(body)


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
