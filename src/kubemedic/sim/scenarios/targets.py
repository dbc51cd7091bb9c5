"""What a scenario's targets and node selections name: a kind's default served version, and the
labels a node selection's ``selector`` requires (a map, or ``k=v,k2=v2`` text read by the one
label-selector parser). Part of the scenario format (:mod:`kubemedic.sim.scenarios.spec`)."""

from __future__ import annotations

from collections.abc import Mapping

from kubemedic.model.selectors import DOUBLE_EQUALS, EQUALS, LabelSelector, SelectorError
from kubemedic.sim.machinery.apiresources import RESOURCES

__all__ = ["default_api_version", "selector_labels"]

_VERSIONS = {r.kind: r.api_version for r in reversed(RESOURCES) if "create" in r.verbs}


def default_api_version(kind: str) -> str:
    """The version a target of ``kind`` is written with when the scenario names none: the
    first version the simulator serves for the kind ("" for a kind it does not serve)."""
    return _VERSIONS.get(kind, "")


def _parse_selector(text: str) -> dict[str, str]:
    """``k=v,k2=v2``: equalities only, read by the one label-selector parser."""
    try:
        parsed = LabelSelector.parse(text)
    except SelectorError as error:
        raise ValueError(error.message) from None
    out: dict[str, str] = {}
    for requirement in parsed.requirements:
        if requirement.operator not in (EQUALS, DOUBLE_EQUALS):
            raise ValueError(f"{str(requirement)!r} is not key=value")
        out[requirement.key] = requirement.values[0]
    return out


def selector_labels(selector: Mapping[str, str] | str | None) -> dict[str, str]:
    """The labels a node selection's ``selector`` requires (a map, or ``k=v,k2=v2`` text).
    Raises ValueError for text that is not a list of equalities."""
    if selector is None:
        return {}
    if isinstance(selector, str):
        return _parse_selector(selector)
    return dict(selector)
