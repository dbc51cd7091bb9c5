"""``PUT /kubemedic.io/v1/faults`` over HTTP: a setting that is not one is ``400 BadRequest``
with a ``Status`` naming the fault and what it takes, checked by the same validator as
``sim serve --fault`` (one range per setting), and a refused change changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubemedic.sim.apiserver import FaultError, Faults, parse_assignments
from tests.sim.conftest import Running

FAULTS = "/kubemedic.io/v1/faults"

# (the JSON body, the flag that says the same, what both must say is expected); the value is
# echoed as given: as JSON over HTTP, quoted text for a flag.
REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"error_rate": -0.1}, "error-rate=-0.1", "expected a rate from 0 to 1"),
    ({"error_rate": 2}, "error-rate=2", "expected a rate from 0 to 1"),
    ({"throttle_rate": 1.5}, "throttle-rate=1.5", "expected a rate from 0 to 1"),
    ({"latency": -1}, "latency=-1", "expected a number of seconds from 0 to 3600"),
    (
        {"timeout_seconds": 3601},
        "timeout-seconds=3601",
        "expected a number of seconds from 0 to 3600",
    ),
    ({"retry_after": -1}, "retry-after=-1", "expected a whole number from 0 to 3600"),
    ({"retry_after": 1.5}, "retry-after=1.5", "expected a whole number from 0 to 3600"),
    (
        {"watch_drop_after": -1},
        "watch-drop-after=-1",
        "expected a whole number from 0 to 2147483647",
    ),
    ({"seed": 2**31}, f"seed={2**31}", "expected a whole number from 0 to 2147483647"),
    ({"watch_stall": "maybe"}, "watch-stall=maybe", "expected true or false"),
]

# Values JSON has no other way to carry, and JSON values of the wrong type.
WRONG_TYPES: list[tuple[dict[str, Any], str]] = [
    ({"error_rate": "nan"}, 'fault error_rate: expected a rate from 0 to 1, got "nan"'),
    ({"latency": "inf"}, 'fault latency: expected a number of seconds from 0 to 3600, got "inf"'),
    ({"latency": "-Infinity"}, "fault latency: expected a number of seconds from 0 to 3600"),
    ({"error_rate": "0.1"}, 'fault error_rate: expected a rate from 0 to 1, got "0.1"'),
    ({"error_rate": True}, "fault error_rate: expected a rate from 0 to 1, got true"),
    ({"error_rate": None}, "fault error_rate: expected a rate from 0 to 1, got null"),
    ({"watch_drop_after": [1]}, "fault watch_drop_after: expected a whole number from 0 to"),
    ({"seed": {"a": 1}}, 'fault seed: expected a whole number from 0 to 2147483647, got {"a":1}'),
    ({"watch_stall": 1}, "fault watch_stall: expected true or false, got 1"),
    ({"force_gone": "true"}, 'fault force_gone: expected true or false, got "true"'),
]


def put(emulator: Running, body: Any) -> tuple[int, Any]:
    status, answer, _ = emulator.request("PUT", FAULTS, body)
    return status, answer


def assert_bad_request(status: int, body: Any, message: str) -> None:
    assert status == 400, body
    assert (body["kind"], body["apiVersion"], body["status"]) == ("Status", "v1", "Failure")
    assert (body["reason"], body["code"]) == ("BadRequest", 400)
    assert message in body["message"], body["message"]


@pytest.mark.parametrize(("body", "flag", "expected"), REFUSED, ids=str)
def test_a_fault_out_of_range_is_refused_over_http_as_the_flag_is(
    emulator: Running, body: dict[str, Any], flag: str, expected: str
) -> None:
    status, answer = put(emulator, body)
    ((name, value),) = body.items()
    assert_bad_request(status, answer, f"fault {name}: {expected}, got {json.dumps(value)}")
    with pytest.raises(FaultError) as refused:
        parse_assignments([flag])
    spelt, _, text = flag.partition("=")
    assert str(refused.value) == f"--fault {spelt}: {expected}, got {text!r}"


@pytest.mark.parametrize(("body", "message"), WRONG_TYPES, ids=str)
def test_a_fault_of_the_wrong_json_type_is_refused(
    emulator: Running, body: dict[str, Any], message: str
) -> None:
    status, answer = put(emulator, body)
    assert_bad_request(status, answer, message)


def test_an_unknown_fault_is_refused_with_the_known_field_names(emulator: Running) -> None:
    status, answer = put(emulator, {"explode": True})
    assert_bad_request(status, answer, "unknown fault 'explode'; known: error_rate, force_gone,")


def test_a_body_that_is_not_an_object_is_refused(emulator: Running) -> None:
    status, answer = put(emulator, [{"error_rate": 0.5}])
    assert_bad_request(status, answer, "the request body must be a JSON object")
    status, answer, _ = emulator.request("PUT", FAULTS, '{"latency": NaN}')
    assert_bad_request(status, answer, "json parse error")
    status, answer, _ = emulator.request("PUT", FAULTS, '{"latency": 1e999}')
    assert_bad_request(status, answer, "json parse error")


def test_a_refused_change_changes_nothing(emulator: Running) -> None:
    _, before, _ = emulator.request("GET", FAULTS)
    status, answer = put(emulator, {"error_rate": 0.5, "latency": 0.25, "seed": 7, "x": 1})
    assert status == 400, answer
    status, answer = put(emulator, {"error_rate": 0.5, "timeout_rate": 5})
    assert status == 400, answer
    _, after, _ = emulator.request("GET", FAULTS)
    assert after == before


def test_good_settings_are_applied_typed_in_either_spelling(emulator: Running) -> None:
    status, answer = put(
        emulator,
        {"error-rate": 0, "timeout_seconds": 3600, "retry_after": 0, "watch_stall": False},
    )
    assert status == 200, answer
    assert answer["error_rate"] == 0.0 and isinstance(answer["error_rate"], float)
    assert (answer["timeout_seconds"], answer["retry_after"]) == (3600.0, 0)
    _, shown, _ = emulator.request("GET", FAULTS)
    assert shown == answer


def test_the_flags_become_the_same_typed_settings_as_json() -> None:
    flags = ["error-rate=0.25", "watch_stall=on", "retry-after=+3", "latency=1e-3", "seed=7"]
    from_flags, from_json = Faults(), Faults()
    from_flags.update(parse_assignments(flags))
    from_json.update(
        json.loads(
            '{"error_rate": 0.25, "watch_stall": true, "retry_after": 3, '
            '"latency": 0.001, "seed": 7}'
        )
    )
    assert from_flags == from_json
    assert from_flags.as_dict()["watch_stall"] is True


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("error-rate", "--fault: expected NAME=VALUE such as error-rate=0.1, got 'error-rate'"),
        ("=1", "--fault: expected NAME=VALUE such as error-rate=0.1, got '=1'"),
        ("error_rate=nan", "--fault error-rate: expected a rate from 0 to 1, got 'nan'"),
        ("latency=inf", "--fault latency: expected a number of seconds from 0 to 3600, got 'inf'"),
        ("seed=" + "9" * 5000, "--fault seed: expected a whole number from 0 to 2147483647"),
        ("retry-after=²", "--fault retry-after: expected a whole number from 0 to 3600"),
        ("unknown=1", "--fault: unknown fault 'unknown'; known: error-rate, force-gone, latency"),
    ],
)
def test_a_bad_flag_names_the_flag_and_what_it_takes(flag: str, message: str) -> None:
    with pytest.raises(FaultError) as refused:
        parse_assignments([flag])
    assert str(refused.value).startswith(message)
    assert len(str(refused.value)) < 400
