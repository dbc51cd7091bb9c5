"""``--config`` files and ``sim run`` scenario files."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.fuzz import documents
from tests.fuzz.harness import Case, budget, check_case

pytestmark = pytest.mark.timeout(600)


def test_every_check_setting_is_in_the_table() -> None:
    assert len(documents.settings_table()) >= 44


def test_a_valid_config_is_accepted() -> None:
    text = "checks:\n  probe-restarts:\n    windowSlack: 90s\n  node-scale-burst:\n"
    text += "    window_seconds: 600\ndisabled: [evicted]\n"
    check_case(documents.config_case("valid", text, valid=True, names=None))


@budget(60)
@given(case=documents.config_cases())
def test_a_hostile_setting_keeps_the_contract(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", documents.config_catalogue(), ids=lambda c: c.label)
def test_each_known_bad_config_exits_2_naming_the_key(case: Case) -> None:
    check_case(Case(**{**case.__dict__, "inprocess": False}))


def test_a_shortened_bundled_scenario_is_valid() -> None:
    check_case(documents.scenario_case("healthy", documents.scenario(), valid=True, names=None))


@budget(6)
@given(case=documents.scenario_mutations())
def test_a_mutated_scenario_keeps_the_contract(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", documents.scenario_catalogue(), ids=lambda c: c.label)
def test_each_known_bad_scenario_exits_2_naming_the_field(case: Case) -> None:
    check_case(Case(**{**case.__dict__, "timeout": 20.0}))
