"""Reading cluster snapshots: what ``kubectl get ... -o json`` (or ``-o yaml``) prints.

A snapshot is a file or a directory of files (walked recursively, in name order, hidden files
skipped; ``reading`` finds them and reads them within limits). Each file is ``.json``, ``.yaml``
or ``.yml``, optionally gzip-compressed (``.gz``), and holds a single object, a ``List``
(``kubectl get -o json`` of several kinds), a typed list as the REST API returns it (``PodList``,
whose items carry no ``kind``: it is taken from the list), or several YAML documents. JSON files
may also hold several concatenated documents (``kubectl get -w -o json`` output). Every document
is parsed by :mod:`kubemedic.model.documents` (or, for a large list, piece by piece with the same
nesting limit), so nesting past ``documents.MAX_DEPTH`` and YAML alias bombs are refused.

The whole snapshot is read and checked before anything is judged, so a malformed file stops the
scan with ``SnapshotError`` naming the file and the line/column (or byte offset), document and
item at fault, and nothing is half-printed. A file holding no document, and a snapshot holding no
object at all (``EmptySnapshotError``, unless ``allow_empty``), are errors too. Objects of kinds
kubemedic does not use are counted, not kept (``collecting``, which also validates the
quantities the checks read).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from kubemedic.model import documents, objects
from kubemedic.model.view import ClusterView
from kubemedic.snapshot import collecting, reading
from kubemedic.snapshot.reading import MAX_FILE_BYTES, SUFFIXES, SnapshotError

__all__ = ["EmptySnapshotError", "LoadedSnapshot", "SnapshotError", "load_snapshot"]

FREEZE_OBJECTS = 20_000
_PIECE_BYTES = 8 * 1024**2
#: The strings of a large list are shared (``_share_strings``) in a snapshot whose files total
#: this much, and in any list once this much of it has been read (a compressed file may be far
#: larger than it looks): sharing saves memory that matters only for large snapshots, and costs
#: time (a second for every 250 MB of lists).
_SHARE_SNAPSHOT_BYTES = 256 * 1024**2
_SHARE_AFTER_BYTES = 128 * 1024**2
_ITEMS_OPENING = re.compile(rb'\n([ \t]+)"items": \[\n([ \t]+)\{\n')
_validate = collecting.validate  # one object's quantities (the benchmark times it alone)


class EmptySnapshotError(SnapshotError):
    """The snapshot holds no object at all (only empty lists)."""


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
    allow_empty: bool = False,
    progress: Callable[[str], None] | None = None,
) -> LoadedSnapshot:
    """Read every object under ``path``. Raises ``SnapshotError`` on any unreadable input, and
    ``EmptySnapshotError`` when it holds no object at all, unless ``allow_empty``.

    ``progress`` is told what is being done as it goes (the file being read, the objects read so
    far: after each file, and every few megabytes of a large one)."""
    if not os.fspath(path):
        raise SnapshotError("the snapshot path is empty: expected a file or directory")
    root = Path(path)
    loaded = LoadedSnapshot()
    files = list(reading.snapshot_files(root, loaded.skipped_files))
    share = _total_bytes(files) >= _SHARE_SNAPSHOT_BYTES
    found = 0
    with objects.gc_paused() as pause:
        for number, file in enumerate(files, 1):
            loaded.files.append(file)
            loaded.spans.append((len(loaded.bodies), file))
            told = None if progress is None else _reading(progress, file, number, files, loaded)
            found += _collect_file(file, loaded, told, share=share)
        if not loaded.files:
            raise SnapshotError(
                f"{root}: no snapshot files found (expected {', '.join(SUFFIXES)}, optionally .gz)"
            )
        if not found and not allow_empty:
            raise EmptySnapshotError(f"{root}: no Kubernetes objects in it (only empty lists)")
        if validate:
            if progress is not None:
                progress(f"checking the quantities of {len(loaded.bodies):,} objects")
            ends = [start for start, _ in loaded.spans[1:]] + [len(loaded.bodies)]
            for (start, file), end in zip(loaded.spans, ends, strict=True):
                for index in range(start, end):
                    collecting.validate(loaded.bodies[index], file=file)
        # A large snapshot is kept for the rest of the scan: leave it out of later collections.
        pause.freeze = len(loaded.bodies) >= FREEZE_OBJECTS
    return loaded


def _collect_file(
    file: Path, loaded: LoadedSnapshot, told: Callable[[int], None] | None, *, share: bool
) -> int:
    """Keep the objects of ``file``; how many it held."""
    found = 0
    any_document = False
    for document, locate in _documents(file, told, share=share):
        any_document = True
        try:
            found += collecting.collect(
                document,
                file=file,
                place="",
                kept=loaded.bodies,
                unknown=loaded.unknown_kinds,
            )
        except SnapshotError:
            place = locate()
            if place:  # the same error again, saying which document of the file it is in
                collecting.collect(document, file=file, place=place, kept=[], unknown=Counter())
            raise
    if not any_document:
        raise SnapshotError(
            f"{file}: no Kubernetes object or List in it (the file is empty or only comments)"
        )
    return found


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


def _total_bytes(files: list[Path]) -> int:
    total = 0
    for file in files:
        with contextlib.suppress(OSError):  # reading it reports the error
            total += file.stat().st_size
    return total


def _nowhere() -> str:
    return ""


Located = tuple[Any, Callable[[], str]]
"""A parsed document, and where it is in its file (``"document 2 (line 14): "``, built only
when an error needs it; ``""`` when the file holds one document)."""


def _documents(
    file: Path, parsed: Callable[[int], None] | None = None, *, share: bool = True
) -> Iterator[Located]:
    where = str(file)
    if reading.format_of(file) == "json":
        in_pieces = _list_in_pieces(file, parsed, share=share)
        if in_pieces is not None:
            yield in_pieces, _nowhere
            return
    raw = reading.read_bytes(file)
    if not raw.strip():
        return
    if reading.format_of(file) == "json":
        # orjson reads (and checks) UTF-8 itself: no decoded copy of a large file is made
        # unless the file is not a single valid document.
        try:
            document = documents.load_json(raw, where=where)
        except documents.DocumentError as error:
            first_error = error
        else:
            del raw
            yield document, _nowhere
            return
        text = reading.decode(file, raw)
        del raw
        concatenated = _concatenated(file, text)
        if concatenated is None:
            raise SnapshotError(str(first_error)) from None
        yield from concatenated
        return
    text = reading.decode(file, raw)
    del raw
    if text.lstrip()[:1] in ("{", "["):  # JSON in a .yaml file; else YAML's flow style
        try:
            document = documents.load_json(text, where=where)
        except documents.DocumentError:
            pass
        else:
            yield document, _nowhere
            return
    yield from _yaml_documents(file, text)


def _list_in_pieces(
    file: Path, parsed: Callable[[int], None] | None = None, *, share: bool = True
) -> dict[str, Any] | None:
    """A large pretty-printed ``List`` (as ``kubectl get -o json`` writes it), read and parsed a
    few megabytes of items at a time, so neither the whole file nor the JSON parser's working
    tree of it is ever held in memory beside the objects (for 150,000 pods that is over a
    gigabyte). None when the file is not such a list or anything about it is unexpected: it is
    then read whole, which also reports any error where it is. Nesting deeper than
    ``documents.MAX_DEPTH`` is refused here, as whole-file parsing refuses it."""
    where = str(file)
    try:
        with reading.open_regular(file) as plain:
            size = os.fstat(plain.fileno()).st_size
            if not _PIECE_BYTES <= size <= MAX_FILE_BYTES:
                return None
            stream: Any = plain
            if reading.is_gzip(file, plain.read(2)):
                plain.seek(0)
                stream = reading.Inflating(plain, file=file, size=size)
            else:
                plain.seek(0)
            document = _parse_pieces(stream, parsed, share_after=0 if share else None, where=where)
    except documents.DocumentError as error:
        raise SnapshotError(str(error)) from None
    except (OSError, EOFError, ValueError):  # JSONDecodeError is a ValueError
        return None
    if document is None:
        return None
    kind = document.get("kind")
    if kind is not None and not (isinstance(kind, str) and kind.endswith("List")):
        return None
    return document


def _parse_pieces(
    stream: Any,
    parsed: Callable[[int], None] | None = None,
    *,
    share_after: int | None = None,
    where: str = "snapshot",
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
    head = _object_from(buffer[: opening.start()].rstrip(), closing=b"}", where=where)
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
            piece = buffer[: close + width + 2]
            items.extend(_items_of(piece, shared if share else None, where=where))
            rest = buffer[close + len(closing) :] + stream.read()
            break
        cut = buffer.rfind(separator)
        if cut != -1:
            piece = buffer[: cut + width + 2]
            items.extend(_items_of(piece, shared if share else None, where=where))
            buffer = buffer[cut + width + 4 :]
            if parsed is not None:
                parsed(len(items))
        more = stream.read(_PIECE_BYTES)
        if not more:
            return None
        read += len(more)
        buffer += more
    rest = rest.lstrip()
    tail = _object_from(
        b"{" + (rest[1:] if rest.startswith(b",") else rest), closing=b"", where=where
    )
    if head is None or tail is None or "items" in head or "items" in tail:
        return None
    return {**head, **tail, "items": items}


_ITEM_DEPTH = documents.MAX_DEPTH - 1
"""The deepest an item of a list may nest (the document holds the list, which holds it)."""


def _items_of(piece: bytes, shared: dict[str, str] | None, *, where: str) -> list[Any]:
    """Parse a run of items; with ``shared``, make their equal strings one object."""
    if shared is None:
        items: list[Any] = orjson.loads(b"[" + piece + b"]")
        try:
            documents.check_depth(items, where=where, limit=_ITEM_DEPTH)
        except documents.DocumentError:
            raise _too_deep(where) from None
        return items
    return _share_strings(piece, shared, where=where)


def _too_deep(where: str) -> documents.DocumentError:
    return documents.DocumentError(f"{where}: nested deeper than {documents.MAX_DEPTH} levels")


def _share_strings(piece: bytes, shared: dict[str, str], *, where: str = "snapshot") -> list[Any]:
    """Parse a run of items, then make equal string values one object (and refuse nesting past
    ``documents.MAX_DEPTH``, in the same walk).

    Most values repeat from object to object (images, times, node names, label values, reasons)
    and a decoded string costs ~60 bytes: sharing them cuts a third of the memory the objects
    take (for a list of 150,000 pods, hundreds of megabytes; for a few thousand, too little to
    pay for the walk: ``_SHARE_SNAPSHOT_BYTES``). Done piece by piece, the freed duplicates are
    reused by the next piece's objects."""
    items: list[Any] = orjson.loads(b"[" + piece + b"]")
    share = shared.setdefault
    limit = _ITEM_DEPTH

    def in_map(node: dict[str, Any], depth: int) -> None:
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                node[key] = share(value, value)
            elif kind is dict:
                if depth >= limit:
                    raise _too_deep(where)
                in_map(value, depth + 1)
            elif kind is list:
                if depth >= limit:
                    raise _too_deep(where)
                in_list(value, depth + 1)

    def in_list(node: list[Any], depth: int) -> None:
        for index, value in enumerate(node):
            kind = type(value)
            if kind is dict:
                if depth >= limit:
                    raise _too_deep(where)
                in_map(value, depth + 1)
            elif kind is str:
                node[index] = share(value, value)
            elif kind is list:
                if depth >= limit:
                    raise _too_deep(where)
                in_list(value, depth + 1)

    in_list(items, 1)
    return items


def _object_from(text: bytes, *, closing: bytes, where: str) -> dict[str, Any] | None:
    if text.endswith(b",") and closing:
        text = text[:-1]
    parsed = orjson.loads(text + closing)
    if not isinstance(parsed, dict):
        return None
    documents.check_depth(parsed, where=where)
    return parsed


def _concatenated(file: Path, text: str) -> list[Located] | None:
    """Several JSON documents one after another (``kubectl get -w -o json``), each with where
    it starts, or None when the first is not one whole document (the file is then simply
    malformed). Once it is, a later malformed document is reported where it is."""
    decoder = json.JSONDecoder()
    found: list[Located] = []
    index = 0
    length = len(text)
    while index < length:
        while index < length and text[index].isspace():
            index += 1
        if index >= length:
            break
        place = _place(len(found) + 1, text.count("\n", 0, index) + 1)
        try:
            _, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError as error:
            if not found:
                return None
            raise SnapshotError(f"{file}: {_position(text, error.pos, error.msg)}") from None
        except RecursionError:  # the stdlib decoder recurses: far too deep for us anyway
            if not found:
                return None
            raise SnapshotError(
                f"{file}: {place}nested deeper than {documents.MAX_DEPTH} levels"
            ) from None
        # The one reader decodes what the stdlib only delimits: the same strictness and limits
        # as a single document (no lone surrogates, which could not be printed back as JSON).
        try:
            document = documents.load_json(text[index:end], where=f"{file}: {place[:-2]}")
        except documents.DocumentError as error:
            if not found and index == 0 and end == length:
                return None
            if "nested deeper" in str(error):
                raise SnapshotError(str(error)) from None
            raise SnapshotError(f"{file}: {_position_of(text, index, end)}") from None
        found.append((document, _fixed(place)))
        index = end
    return found if len(found) > 1 else None


def _position_of(text: str, start: int, end: int) -> str:
    """Where in ``text`` orjson finds the document at ``start:end`` invalid."""
    try:
        orjson.loads(text[start:end])
    except orjson.JSONDecodeError as error:
        return _position(text, start + error.pos, error.msg)
    return _position(text, start, "invalid JSON")


def _place(number: int, line: int) -> str:
    return f"document {number} (line {line}): "


def _fixed(place: str) -> Callable[[], str]:
    return lambda: place


def _position(text: str, position: int, message: str) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}: invalid JSON: {message}"


def _yaml_documents(file: Path, text: str) -> Iterator[Located]:
    try:
        parsed = documents.load_yaml_all(text, where=str(file))
    except documents.DocumentError as error:
        raise SnapshotError(str(error)) from None
    except yaml.reader.ReaderError as error:  # a character YAML does not allow, e.g. NUL
        line = text.count("\n", 0, error.position) + 1
        what = f"U+{error.character:04X}" if isinstance(error.character, int) else "a character"
        raise SnapshotError(f"{file}: line {line}: invalid YAML: {what} is not allowed") from None
    except yaml.YAMLError as error:
        raise SnapshotError(f"{file}: invalid YAML: {' '.join(str(error).split())}") from None
    if len(parsed) == 1:
        yield parsed[0], _nowhere
        return
    for index, document in enumerate(parsed):
        yield document, _yaml_place(text, index)


_NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def _yaml_place(text: str, index: int) -> Callable[[], str]:
    """Where the ``index``-th non-empty document of ``text`` is: its number among all the
    documents of the stream (as a reader counts ``---``) and the line its content starts on. Read
    from the parser's events (no objects are built), only when an error needs it."""

    def locate() -> str:
        number = kept = 0
        events = yaml.parse(text, Loader=yaml.SafeLoader)
        for event in events:
            if not isinstance(event, yaml.DocumentStartEvent):
                continue
            number += 1
            content = next(events)
            empty = (
                isinstance(content, yaml.ScalarEvent)
                and content.tag is None
                and content.implicit[0]
                and content.value in _NULLS
            )
            if empty:
                continue
            if kept == index:
                mark = content.start_mark
                return _place(number, mark.line + 1) if mark is not None else ""
            kept += 1
        return ""

    return locate
