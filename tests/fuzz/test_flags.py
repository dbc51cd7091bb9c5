"""Every flag of every command with hostile values, and the issue's bad flag values."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.fuzz import flags
from tests.fuzz.harness import Case, budget, check_case

pytestmark = pytest.mark.timeout(600)


def test_every_command_with_value_flags_is_driven() -> None:
    driven = {path for path, _ in flags.options()}
    assert {("scan",), ("sim", "run"), ("events",), ("oom",), ("incidents", "list")} <= driven


@budget(60)
@given(case=flags.flag_cases())
def test_a_hostile_flag_value_keeps_the_contract(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", flags.flag_catalogue(), ids=lambda c: c.label)
def test_each_known_bad_flag_value_exits_2_naming_the_flag(case: Case) -> None:
    check_case(case)
