"""Label and field selectors as the API server parses, matches and rejects them.

**Label selectors** are :mod:`kubemedic.model.selectors`' (the one parser, shared with the
checks and the scenarios); :class:`LabelSelector` here answers a bad one as the server does, with
a 400 :class:`~kubemedic.sim.machinery.errors.StatusError` worded by the parser.

**Field selectors** (``?fieldSelector=``) follow ``k8s.io/apimachinery/pkg/fields``: terms split
on unescaped commas, each term split at the first ``!=``, ``==`` or ``=``; values unescape
``\\,`` ``\\=`` ``\\\\`` (``fields.EscapeValue``) and anything else after a backslash is an
error. There is no set syntax in 1.32. Which fields a resource can be selected by, and the
values its objects have for them, are :mod:`kubemedic.sim.machinery.fieldlabels`' business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from kubemedic.model import selectors
from kubemedic.model.selectors import EQUALS, NOT_EQUALS, Requirement
from kubemedic.sim.machinery import errors

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "escape_value",
]


class LabelSelector(selectors.LabelSelector):
    """The model's label selector, answering a bad selector as the API server does: a 400
    :class:`~kubemedic.sim.machinery.errors.StatusError` with the parser's wording."""

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        try:
            return cast(LabelSelector, super().parse(text))
        except selectors.SelectorError as error:
            raise errors.bad_request(error.message) from None

    @classmethod
    def from_object(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        try:
            return cast(LabelSelector, super().from_object(selector))
        except selectors.SelectorError as error:
            raise errors.bad_request(error.message) from None


# ---------------------------------------------------------------- field selectors


@dataclass(frozen=True)
class FieldRequirement:
    """``fields.Requirement``: ``operator`` is ``=`` (also for ``==``) or ``!=``."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        equal = fields.get(self.field, "") == self.value
        return equal if self.operator == EQUALS else not equal

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


_ESCAPES = {"\\": "\\\\", ",": "\\,", "=": "\\="}


def escape_value(value: str) -> str:
    """``fields.EscapeValue``: make any string safe as a field selector value."""
    return "".join(_ESCAPES.get(ch, ch) for ch in value)


def _unescape_value(value: str) -> str:
    if not any(ch in value for ch in "\\,="):
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise errors.bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise errors.bad_request(
                f"invalid field selector: unescaped character in value: {ord(ch)}"
            )
        else:
            out.append(ch)
    if escaped:
        raise errors.bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    if not text:
        return []
    terms: list[str] = []
    start, escaped = 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: its terms ANDed, in the server's (sorted raw term) order."""

    requirements: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse ``?fieldSelector=``; 400 BadRequest with the server's wording on bad syntax."""
        found: list[FieldRequirement] = []
        for part in sorted(_split_terms(text)):
            if not part:
                continue
            for i in range(len(part)):
                op = next((o for o in ("!=", "==", "=") if part.startswith(o, i)), None)
                if op is not None:
                    value = _unescape_value(part[i + len(op) :])
                    operator = NOT_EQUALS if op == "!=" else EQUALS
                    found.append(FieldRequirement(part[:i], operator, value))
                    break
            else:
                raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        return cls(tuple(found))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    def transform(self, fn: Callable[[str, str], tuple[str, str]]) -> FieldSelector:
        """``Selector.Transform``: rewrite each term's (field, value); errors propagate."""
        renamed = []
        for r in self.requirements:
            field, value = fn(r.field, r.value)
            renamed.append(FieldRequirement(field, r.operator, value))
        return FieldSelector(tuple(renamed))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)
