"""Reading the YAML and JSON a user supplies, with limits: the one place kubemedic parses them.

Snapshots, the configuration file, scenario files and kubeconfigs are read here, so each gets
the same guarantees instead of a traceback or a hang:

* nesting deeper than ``MAX_DEPTH`` levels is refused with the line where it passes the limit
  (Kubernetes objects nest about 20 levels; a parser or a recursive walk would otherwise end in
  ``RecursionError``);
* YAML aliases may not expand a document by more than ``MAX_ALIAS_NODES`` nodes, and an anchor
  may not contain an alias to itself (the "billion laughs" document, a few hundred bytes that
  expand to 10^9 nodes, is refused at once);
* only YAML's safe types are built (``yaml.SafeLoader``): no Python objects, ever;
* every error is a ``DocumentError`` (an ``InputError``) whose message starts with ``where``
  (the file, or ``--config``) and gives the line, in the user's words.

Pure: text in, Python values out; no I/O. May import: kubemedic.errors, PyYAML and orjson.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import orjson
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubemedic.errors import InputError

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "DocumentError",
    "check_depth",
    "load_json",
    "load_yaml",
    "load_yaml_all",
    "value_kind",
]

MAX_DEPTH = 200
"""Deepest nesting of mappings and lists accepted (a Kubernetes object nests about 20)."""

MAX_ALIAS_NODES = 1_000_000
"""How many nodes YAML aliases may add to a document by repeating what an anchor holds."""


class DocumentError(InputError, ValueError):
    """A YAML or JSON document could not be read; the message says where and why."""


def load_json(data: bytes | str, *, where: str) -> Any:
    """The JSON value of ``data``; ``DocumentError`` naming ``where`` and the line when it is not
    JSON, or nests deeper than ``MAX_DEPTH``."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        reason = str(error.msg).rstrip(".:") if error.msg else "invalid JSON"
        if "recursion" in reason.lower() or "depth" in reason.lower():
            raise DocumentError(
                f"{where}: line {error.lineno}: nested deeper than {MAX_DEPTH} levels"
            ) from None
        raise DocumentError(
            f"{where}: line {error.lineno}, column {error.colno}: invalid JSON: {reason}"
        ) from None
    check_depth(value, where=where)
    return value


def check_depth(value: Any, *, where: str, limit: int = MAX_DEPTH) -> None:
    """Refuse a parsed value nested deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise DocumentError(f"{where}: nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def load_yaml(text: str, *, where: str) -> Any:
    """The one YAML document of ``text`` (``None`` when it is empty or only comments)."""
    documents = load_yaml_all(text, where=where)
    if len(documents) > 1:
        raise DocumentError(
            f"{where}: expected one YAML document, found {len(documents)} (separated by ---)"
        )
    return documents[0] if documents else None


def load_yaml_all(text: str, *, where: str) -> list[Any]:
    """Every document of a YAML stream (``---`` separated), empty documents left out."""
    if _CLoader is not None and _nests_less_than(text, MAX_DEPTH):
        fast = _load_all_with_libyaml(text, where=where)
        if fast is not None:
            return fast
    try:
        loader = _Loader(text)  # reading checks the characters: a NUL is an error here
    except yaml.reader.ReaderError as error:
        raise DocumentError(f"{where}: {_reader_problem(text, error)}") from None
    loader.where = where
    documents: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            _check_aliases(node, where=where)
            documents.append(loader.construct_document(node))
    except DocumentError:
        raise
    except yaml.reader.ReaderError as error:
        raise DocumentError(f"{where}: {_reader_problem(text, error)}") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = " ".join(str(error.problem or error.context or "invalid YAML").split())
        raise DocumentError(f"{where}: {line}invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise DocumentError(f"{where}: invalid YAML: {' '.join(str(error).split())}") from None
    except RecursionError:  # a construction path the depth limit did not foresee
        raise DocumentError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    return [document for document in documents if document is not None]


_CLoader: Any = getattr(yaml, "CSafeLoader", None)
"""libyaml's safe loader, when PyYAML was built with it: six times faster than the Python
parser. It composes nodes in C, without the depth guard of ``_Loader``, so it is used only for
a text whose nesting is bounded below ``MAX_DEPTH`` by ``_nests_less_than``."""

_LINE_START = re.compile(r"^( *)((?:[-?:][ \t]+)*)", re.MULTILINE)


def _nests_less_than(text: str, limit: int) -> bool:
    """Whether ``text`` cannot nest ``limit`` levels deep, by a bound read from its lines: a
    block collection nested in another is indented further, except a sequence that is a
    mapping's value (same column), so a line indented ``n`` columns after ``k`` indicators
    (``- ``, ``? ``, ``: ``) is at most ``2 * (n + 2k + 1) + 1`` levels deep; every flow
    collection (``[``, ``{``) may add one more."""
    flow = text.count("[") + text.count("{")
    if flow >= limit:
        return False
    deepest = 0
    for indent, indicators in _LINE_START.findall(text):
        columns = len(indent) + len(indicators)
        deepest = max(deepest, columns)
    return 2 * (2 * deepest + 1) + 1 + flow < limit


def _load_all_with_libyaml(text: str, *, where: str) -> list[Any] | None:
    """The documents of ``text`` read by libyaml, or ``None`` when it finds anything wrong: the
    Python reader then reads the text again, so that every error is reported in one way."""
    loader = _CLoader(text)
    documents: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if "&" in text:  # anchors, so perhaps aliases: the same limits as the Python reader
                _check_aliases(node, where=where)
            documents.append(loader.construct_document(node))
    except (yaml.YAMLError, DocumentError, RecursionError, ValueError, TypeError):
        return None
    finally:
        loader.dispose()
    return [document for document in documents if document is not None]


def _reader_problem(text: str, error: yaml.reader.ReaderError) -> str:
    """A character YAML does not allow, with its line: ``line 3: invalid YAML: character
    U+0000 is not allowed``."""
    line = text.count("\n", 0, max(error.position, 0)) + 1
    character = error.character
    code = ord(character) if isinstance(character, str) else int(character)
    return f"line {line}: invalid YAML: character U+{code:04X} is not allowed"


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing nesting past ``MAX_DEPTH`` while it composes (composition is
    recursive, one Python frame per level)."""

    where = ""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise DocumentError(
                    f"{self.where or 'YAML'}: line {mark.line + 1}: "
                    f"nested deeper than {MAX_DEPTH} levels"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_aliases(root: Node, *, where: str) -> None:
    """Refuse a document whose aliases refer to an enclosing anchor (a cycle) or repeat more
    than ``MAX_ALIAS_NODES`` nodes in all."""
    expanded: dict[int, int] = {}  # id(node) -> nodes it stands for, aliases expanded
    unique = 0
    on_path: set[int] = set()
    # An explicit stack: (node, children visited yet?)
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, visited = stack.pop()
        key = id(node)
        children = _children(node)
        if visited:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in children)
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise DocumentError(
                f"{where}: line {node.start_mark.line + 1}: a YAML alias refers to an anchor "
                "that contains it (a recursive document)"
            )
        on_path.add(key)
        unique += 1
        stack.append((node, True))
        for child in children:
            child_key = id(child)
            if child_key in on_path:
                raise DocumentError(
                    f"{where}: line {child.start_mark.line + 1}: a YAML alias refers to an "
                    "anchor that contains it (a recursive document)"
                )
            if child_key not in expanded:
                stack.append((child, False))
    if expanded[id(root)] - unique > MAX_ALIAS_NODES:
        raise DocumentError(
            f"{where}: line {root.start_mark.line + 1}: YAML aliases expand the document past "
            f"{MAX_ALIAS_NODES:,} nodes (an alias bomb?)"
        )


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, ScalarNode):
        return []
    return []


def value_kind(value: Any, *, mapping: str = "an object") -> str:
    """What a parsed value is, in the words of a JSON or YAML user (``null``, ``a number``,
    ``an empty list``), for messages that say what was found instead of what was expected;
    ``mapping`` is what a mapping is called (``an object`` in JSON, ``a mapping`` in YAML)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    if isinstance(value, list | tuple):
        return "a list" if value else "an empty list"
    if isinstance(value, Mapping):
        return mapping
    if isinstance(value, datetime | date):
        return "a timestamp"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, set | frozenset):
        return "a set"
    return "a value of another type"
