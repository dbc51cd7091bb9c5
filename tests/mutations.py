"""Hypothesis strategies for hostile edits of a valid YAML document: one value anywhere replaced
by one of the wrong type, NaN, an infinity, a negative or huge number, a deep nest or long text;
a key added, misspelt or given in both spellings. For the fuzz tests of every file a user writes
(the configuration file, scenario files): each edit must end in a clean error or be accepted."""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml
from hypothesis import strategies as st

DEEP = "__deeply_nested__"
"""Placeholder ``render`` replaces with a list nested past the readers' depth limit."""

#: Values a careless or hostile user writes where something else was expected.
WRONG: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(
        [
            float("nan"),
            float("inf"),
            float("-inf"),
            -1,
            -1.5,
            0,
            0.0,
            10**9,
            10**30,
            1e300,
            1e-300,
            2**63,
            True,
            False,
            None,
            "",
            " ",
            "x",
            "-5m",
            "0s",
            "12XB",
            "1e400",
            ".nan",
            "app in (a",
            "x" * 5000,
            [],
            {},
            [1, 2],
            {"a": 1},
            DEEP,
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value`` (mapping keys and list indexes), the root first."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found.extend(paths(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found.extend(paths(inner, (*prefix, index)))
    return found


def _camel(name: str) -> str:
    head, *rest = re.split(r"[_-]", name)
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@st.composite
def mutated(
    draw: st.DrawFn, document: Any, *, edits: int = 3, skip: frozenset[str] = frozenset()
) -> Any:
    """``document`` with up to ``edits`` hostile edits at places drawn from it (none below a
    key in ``skip``)."""
    value = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, edits))):
        places = [p for p in paths(value) if not skip.intersection(map(str, p))]
        where = draw(st.sampled_from(places))
        parent: Any = value
        for step in where[:-1]:
            parent = parent[step]
        how = draw(st.sampled_from(["replace", "replace", "add-key", "respell", "misspell"]))
        if not where:
            if how == "replace":
                value = copy.deepcopy(draw(WRONG))
            continue
        key = where[-1]
        if how == "replace" or not isinstance(parent, dict) or not isinstance(key, str):
            parent[key] = copy.deepcopy(draw(WRONG))  # the samples are shared: never edit them
        elif how == "add-key":
            added = draw(st.sampled_from(["colour", "x", key + "s", ""]))
            parent[added] = copy.deepcopy(draw(WRONG))
        elif how == "respell":  # the same key in its other spelling, beside it
            other = _snake(key) if _camel(key) == key else _camel(key)
            parent[other] = parent[key]
        else:
            parent[key[:-1] or "k"] = parent.pop(key)
    return value


def render(value: Any) -> str:
    """``value`` as YAML text, ``DEEP`` replaced by a list nested 1,000 levels."""
    text = yaml.safe_dump(value, sort_keys=False, allow_unicode=True)
    return text.replace(DEEP, "[" * 1000 + "]" * 1000)
