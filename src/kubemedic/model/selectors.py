"""Label selectors, parsed, matched and rejected exactly as the API server does.

They follow ``k8s.io/apimachinery/pkg/labels``: a hand-written lexer and recursive-descent
parser, not a regular expression, so the error wording ("unable to parse requirement: ...",
"found ',', expected: identifier") comes from the same decision points. Requirements are sorted by
key after parsing (the server's canonical form, which ``str()`` reproduces). Keys must be
qualified names (``[prefix/]name``, name at most 63 characters), values valid label values
(:mod:`kubemedic.model.names`); ``in``/``notin`` value lists are sets, and ``gt``/``lt`` (``x>1``)
are accepted too, because the server accepts them. A key/value error reads as a ``field.Error``
whose path is ``<nil>`` for keys and ``values[0][key]`` for values, exactly as 1.32 prints it.

**Selector objects** (``metav1.LabelSelector`` in Deployments, ReplicaSets, PDBs) convert like
``metav1.LabelSelectorAsSelector``: ``None`` selects *nothing*, ``{}`` selects *everything*.
That difference is load-bearing for PodDisruptionBudgets: in ``policy/v1`` a PDB whose
``spec.selector`` is ``{}`` covers every pod of its namespace, while a PDB without a selector
covers none. Services and ReplicationControllers use plain maps (:meth:`LabelSelector.from_set`,
where an empty map means everything).

This is the one label-selector parser: the checks' role selectors, the simulator's scenarios and
the API emulator all read selectors through it (the emulator answers its :class:`SelectorError`
as a 400 Status).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubemedic.errors import InputError
from kubemedic.model import names
from kubemedic.model.documents import value_kind

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EXISTS",
    "GREATER_THAN",
    "IN",
    "LESS_THAN",
    "NOT_EQUALS",
    "NOT_IN",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "parse_requirements",
]


class SelectorError(InputError, ValueError):
    """A label selector the API server would refuse; ``message`` is its wording."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# selection.Operator values.
IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
_BINARY = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)

# ---------------------------------------------------------------- messages

_INT64 = re.compile(r"[+-]?[0-9]+")


def _invalid(path: str, value: str, details: Iterable[str]) -> str:
    """``field.Invalid(path, value, ...).Error()`` for a string value."""
    return f"{path}: Invalid value: {names.go_quote(value)}: {'; '.join(details)}"


def _aggregate(messages: Sequence[str]) -> str:
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


@dataclass(frozen=True)
class Requirement:
    """One ``key op values`` term; ``values`` sorted and unique for ``in``/``notin``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: str, values: Sequence[str]) -> Requirement:
        """``labels.NewRequirement``: validate and build, raising :class:`SelectorError` with
        the joined errors."""
        problems: list[str] = []
        key_errs = names.qualified_name(key)
        if key_errs:
            problems.append(_invalid("key", key, key_errs))
        shown = "[]string{" + ", ".join(names.go_quote(v) for v in values) + "}"
        if operator in (IN, NOT_IN) and not values:
            problems.append(
                f"values: Invalid value: {shown}: for 'in', 'notin' operators, values set "
                "can't be empty"
            )
        elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
            problems.append(
                f"values: Invalid value: {shown}: exact-match compatibility requires one "
                "single value"
            )
        elif operator in (EXISTS, DOES_NOT_EXIST) and values:
            problems.append(
                f"values: Invalid value: {shown}: values set must be empty for exists and does "
                "not exist"
            )
        elif operator in (GREATER_THAN, LESS_THAN):
            if len(values) != 1:
                problems.append(
                    f"values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one "
                    "value is required"
                )
            for i, v in enumerate(values):
                if not _is_int64(v):
                    problems.append(
                        _invalid(
                            f"values[{i}]",
                            v,
                            ["for 'Gt', 'Lt' operators, the value must be an integer"],
                        )
                    )
        for i, v in enumerate(values):
            value_errs = names.label_value(v)
            if value_errs:
                problems.append(_invalid(f"values[{i}][{key}]", v, value_errs))
        if problems:
            raise SelectorError(_aggregate(problems))
        return cls(key, operator, tuple(values))

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return present and value in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not present or value not in self.values
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        if self.operator in (GREATER_THAN, LESS_THAN):
            if not present or len(self.values) != 1 or not _is_int64(value):
                return False
            if not _is_int64(self.values[0]):
                return False
            have, want = int(value), int(self.values[0])
            return have > want if self.operator == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        prefix = "!" if self.operator == DOES_NOT_EXIST else ""
        if self.operator in (EXISTS, DOES_NOT_EXIST):
            return prefix + self.key
        symbol = {IN: " in ", NOT_IN: " notin ", GREATER_THAN: ">", LESS_THAN: "<"}.get(
            self.operator, self.operator
        )
        joined = ",".join(sorted(self.values)) if len(self.values) > 1 else "".join(self.values)
        if self.operator in (IN, NOT_IN):
            joined = f"({joined})"
        return f"{self.key}{symbol}{joined}"


def _is_int64(text: str) -> bool:
    return bool(_INT64.fullmatch(text)) and -(2**63) <= int(text) < 2**63


# Tokens of the label selector lexer.
_EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(1, 14)
_SYMBOLS: Final = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DEQ,
    "=": _EQ,
    ">": _GT,
    "in": _IN,
    "<": _LT,
    "!=": _NEQ,
    "notin": _NOTIN,
    "(": _OPEN,
}
_SPECIAL = frozenset("=!(),><")
_SPACE = frozenset(" \t\r\n")
_BINARY_TOKENS: Final = {
    _IN: IN,
    _EQ: EQUALS,
    _DEQ: DOUBLE_EQUALS,
    _GT: GREATER_THAN,
    _LT: LESS_THAN,
    _NOTIN: NOT_IN,
    _NEQ: NOT_EQUALS,
}


def _lex(text: str) -> list[tuple[int, str]]:
    """The token stream of ``labels.Lexer``. Go reads a NUL byte as end of input: at the start
    of a token it ends the scan, inside a token it ends (and is swallowed by) that token."""
    items: list[tuple[int, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _SPACE:
            pos += 1
        if pos >= end or text[pos] == "\0":
            items.append((_EOS, ""))
            return items
        start, best = pos, (0, "")
        if text[pos] in _SPECIAL:
            while pos < end and text[pos] in _SPECIAL:
                pos += 1
                if text[start:pos] in _SYMBOLS:
                    best = (_SYMBOLS[text[start:pos]], text[start:pos])
                elif best[0]:
                    pos -= 1
                    break
            items.append(best)
        else:
            while pos < end and text[pos] not in _SPECIAL and text[pos] not in _SPACE:
                if text[pos] == "\0":
                    break
                pos += 1
            word = text[start:pos]
            items.append((_SYMBOLS[word] if word in ("in", "notin") else _ID, word))
        if pos < end and text[pos] == "\0":
            pos += 1


class _Parser:
    """``labels.Parser``: recursive descent over the scanned tokens."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[int, str]:
        token, literal = self.items[self.position]
        if values and token in (_IN, _NOTIN):
            token = _ID
        return token, literal

    def consume(self, values: bool = True) -> tuple[int, str]:
        found = self.lookahead(values)
        self.position += 1
        return found

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead()
            if token in (_ID, _NOT):
                try:
                    requirements.append(self.requirement())
                except SelectorError as error:
                    raise SelectorError(f"unable to parse requirement: {error.message}") from None
                token, literal = self.consume()
                if token == _EOS:
                    return requirements
                if token == _COMMA:
                    after, shown = self.lookahead()
                    if after not in (_ID, _NOT):
                        raise SelectorError(f"found '{shown}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            if token == _EOS:
                return requirements
            raise SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        operator = ""
        token, literal = self.consume()
        if token == _NOT:
            operator = DOES_NOT_EXIST
            token, literal = self.consume()
        if token != _ID:
            raise SelectorError(f"found '{literal}', expected: identifier")
        key_errs = names.qualified_name(literal)
        if key_errs:
            raise SelectorError(_invalid("<nil>", literal, key_errs))
        if self.lookahead()[0] in (_EOS, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return Requirement.new(literal, operator, [])
        token, shown = self.consume(values=False)
        if token not in _BINARY_TOKENS:
            raise SelectorError(f"found '{shown}', expected: {', '.join(_BINARY)}")
        operator = _BINARY_TOKENS[token]
        values = self.value_set() if operator in (IN, NOT_IN) else self.exact_value()
        return Requirement.new(literal, operator, sorted(values))

    def value_set(self) -> set[str]:
        token, literal = self.consume()
        if token != _OPEN:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead()
        if token == _CLOSE:
            self.consume()
            return {""}
        if token not in (_ID, _COMMA):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        found: set[str] = set()
        while True:
            token, literal = self.consume()
            if token == _ID:
                found.add(literal)
                after, shown = self.lookahead()
                if after == _COMMA:
                    continue
                if after == _CLOSE:
                    break
                raise SelectorError(f"found '{shown}', expected: ',' or ')'")
            if token != _COMMA:
                raise SelectorError(f"found '{literal}', expected: ',', or identifier")
            if not found:
                found.add("")
            after = self.lookahead()[0]
            if after == _CLOSE:
                found.add("")
                break
            if after == _COMMA:
                found.add("")
        self.consume()  # the ")" the loop stopped in front of
        return found

    def exact_value(self) -> set[str]:
        if self.lookahead()[0] in (_EOS, _COMMA):
            return {""}
        token, literal = self.consume()
        if token == _ID:
            return {literal}
        raise SelectorError(f"found '{literal}', expected: identifier")


def parse_requirements(text: str) -> list[Requirement]:
    """The requirements of a selector string in the order it writes them (a
    :class:`LabelSelector` sorts them by key, as the server does); :class:`SelectorError` on
    bad syntax."""
    return _Parser(text).parse()


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: requirements ANDed, sorted by key; or the Nothing selector."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse a selector string; :class:`SelectorError` with the server's wording on bad
        syntax."""
        return cls(tuple(sorted(parse_requirements(text), key=lambda r: r.key)))

    @classmethod
    def from_object(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """``metav1.LabelSelectorAsSelector``: None selects nothing, ``{}`` everything.

        An invalid selector raises :class:`SelectorError` with the Go function's error text;
        eviction and the disruption controller treat such a PDB as matching no pod, workload
        printers show ``<invalid>``/``<error>``."""
        if selector is None:
            return cls(nothing=True)
        if not isinstance(selector, Mapping):
            raise SelectorError(f"a label selector is an object, not {value_kind(selector)}")
        match_labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
        if not isinstance(match_labels, Mapping):
            raise SelectorError(f"matchLabels is an object, not {value_kind(match_labels)}")
        if not isinstance(expressions, list):
            raise SelectorError(f"matchExpressions is a list, not {value_kind(expressions)}")
        found = [Requirement.new(str(k), EQUALS, [str(v)]) for k, v in match_labels.items()]
        operators = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
        for expression in expressions:
            if not isinstance(expression, Mapping):
                raise SelectorError(
                    f"a matchExpressions entry is an object, not {value_kind(expression)}"
                )
            operator = operators.get(str(expression.get("operator", "")))
            if operator is None:
                raise SelectorError(
                    f"{names.go_quote(str(expression.get('operator', '')))} is not a valid label "
                    "selector operator"
                )
            raw_values = expression.get("values") or []
            if not isinstance(raw_values, list):
                raise SelectorError(f"values is a list, not {value_kind(raw_values)}")
            values = [str(v) for v in raw_values]
            found.append(Requirement.new(str(expression.get("key", "")), operator, values))
        return cls(tuple(sorted(found, key=lambda r: r.key)))

    @classmethod
    def from_set(cls, labels: Mapping[str, str] | None) -> LabelSelector:
        """``labels.SelectorFromSet`` (Service and ReplicationController selectors): empty or
        None selects everything; no validation, as in Go."""
        items = sorted((labels or {}).items())
        return cls(tuple(Requirement(k, EQUALS, (v,)) for k, v in items))

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Nothing`` is not empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)
