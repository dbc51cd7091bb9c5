"""The subset of jq that Argo CD's ``jqPathExpressions`` are written in, as locations.

Argo CD evaluates each expression with ``path(...)`` and drops the fields it reaches. The
expressions its documentation shows, and that this module reads, are pipelines of:

* paths: ``.spec.replicas``, ``.metadata.annotations."example.com/key"``,
  ``.metadata.labels["example.com/key"]``, ``.spec.containers[]`` (every item, ``[]?`` too),
  ``.spec.containers[0]``, and ``.`` alone;
* filters: ``select(PATH == LITERAL)`` and ``select(PATH != LITERAL)`` with a JSON literal
  (``"text"``, a number, ``true``, ``false``, ``null``).

For example ``.spec.template.spec.initContainers[] | select(.name == "istio-init") | .image``.
Anything else is an :class:`JqPathError` naming the position, never a silently ignored rule.
The result is the list of concrete locations (map keys and list positions) that exist in the
object; a path through a missing field reaches nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeAlias

from kubemedic.errors import InputError

__all__ = ["JqPathError", "Location", "locations"]

Location: TypeAlias = tuple[str | int, ...]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?[0-9]+")
_LITERAL = re.compile(
    r'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null'
)


class JqPathError(InputError, ValueError):
    """A ``jqPathExpressions`` entry outside the supported subset."""

    def __init__(self, reason: str, *, text: str, position: int) -> None:
        super().__init__(f"jq path expression {text!r}: {reason} at position {position}")


@dataclass(frozen=True, slots=True)
class _Step:
    kind: str  # "field", "index", "each", "select"
    field: str = ""
    index: int = 0
    path: tuple[_Step, ...] = ()
    negate: bool = False
    literal: Any = None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str) -> JqPathError:
        return JqPathError(reason, text=self.text, position=self.pos)

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def take(self, token: str) -> None:
        if not self.peek(token):
            raise self.fail(f"expected {token!r}")
        self.pos += len(token)

    def pipeline(self) -> tuple[_Step, ...]:
        steps = list(self.stage())
        while self.peek("|"):
            self.take("|")
            steps.extend(self.stage())
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("unsupported syntax")
        return tuple(steps)

    def stage(self) -> tuple[_Step, ...]:
        if self.peek("select"):
            self.take("select")
            self.take("(")
            path = self.path()
            self.skip()
            if self.peek("=="):
                self.take("==")
                negate = False
            elif self.peek("!="):
                self.take("!=")
                negate = True
            else:
                raise self.fail("expected == or != in select()")
            self.skip()
            match = _LITERAL.match(self.text, self.pos)
            if match is None:
                raise self.fail("expected a JSON literal")
            self.pos = match.end()
            self.take(")")
            literal = json.loads(match.group())
            return (_Step("select", path=path, negate=negate, literal=literal),)
        return self.path()

    def path(self) -> tuple[_Step, ...]:
        self.skip()
        if not self.peek("."):
            raise self.fail("expected a path starting with '.'")
        steps: list[_Step] = []
        self.pos += 1
        first = True
        while True:
            if self.pos < len(self.text) and self.text[self.pos] == "[":
                steps.append(self.bracket())
            elif self.pos < len(self.text) and self.text[self.pos] == '"' and first:
                steps.append(_Step("field", field=self.string()))
            elif first and (match := _IDENT.match(self.text, self.pos)):
                self.pos = match.end()
                steps.append(_Step("field", field=match.group()))
            elif self.text.startswith(".", self.pos):
                self.pos += 1
                first = True
                continue
            else:
                return tuple(steps)
            first = False

    def string(self) -> str:
        match = _LITERAL.match(self.text, self.pos)
        if match is None or not match.group().startswith('"'):
            raise self.fail("expected a string")
        self.pos = match.end()
        return str(json.loads(match.group()))

    def bracket(self) -> _Step:
        self.pos += 1
        if self.text.startswith("]", self.pos):
            self.pos += 1
            if self.text.startswith("?", self.pos):
                self.pos += 1
            return _Step("each")
        if self.text.startswith('"', self.pos):
            step = _Step("field", field=self.string())
        elif match := _INT.match(self.text, self.pos):
            self.pos = match.end()
            step = _Step("index", index=int(match.group()))
        else:
            raise self.fail("expected ], a string or an index")
        if not self.text.startswith("]", self.pos):
            raise self.fail("expected ]")
        self.pos += 1
        return step


def _walk(steps: tuple[_Step, ...], loc: Location, value: Any) -> Iterator[tuple[Location, Any]]:
    if not steps:
        yield loc, value
        return
    step, rest = steps[0], steps[1:]
    if step.kind == "field":
        if isinstance(value, dict) and step.field in value:
            yield from _walk(rest, (*loc, step.field), value[step.field])
    elif step.kind == "index":
        if isinstance(value, list) and -len(value) <= step.index < len(value):
            position = step.index % len(value)
            yield from _walk(rest, (*loc, position), value[position])
    elif step.kind == "each":
        if isinstance(value, list):
            for position, item in enumerate(value):
                yield from _walk(rest, (*loc, position), item)
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from _walk(rest, (*loc, key), item)
    else:
        found = [item for _, item in _walk(step.path, (), value)]
        subject = found[0] if found else None
        same = type(subject) is type(step.literal) and subject == step.literal
        if same != step.negate:
            yield from _walk(rest, loc, value)


def locations(expression: str, obj: Any) -> list[Location]:
    """The locations of ``obj`` that ``expression`` reaches (``[()]`` for ``.``)."""
    steps = _Parser(expression).pipeline()
    return [loc for loc, _ in _walk(steps, (), obj)]
