"""Watch streams and fault injection over raw HTTP, as a reflector sees them.

Streams are read line by line with a socket timeout, so a stream that never ends fails the test
instead of hanging it.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from tests.sim.conftest import Running, start_emulator

Obj = dict[str, Any]

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
FAULTS = "/kubemedic.io/v1/faults"
MERGE = "application/merge-patch+json"


class Stream:
    """One watch request; ``next()`` returns the next event, or None once the server ends it."""

    def __init__(self, emulator: Running, path: str, *, timeout: float = 10) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", emulator.server.port, timeout=timeout)
        self.conn.request("GET", path)
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.headers = dict(self.response.getheaders())

    def next(self) -> Obj | None:
        line = self.response.readline()
        if not line:
            return None
        event: Obj = json.loads(line)
        return event

    def take(self, count: int) -> list[Obj]:
        events = []
        for _ in range(count):
            event = self.next()
            assert event is not None, f"stream ended after {events}"
            events.append(event)
        return events

    def rest(self) -> list[Obj]:
        """Every event until the server ends the stream."""
        events = []
        while (event := self.next()) is not None:
            events.append(event)
        return events

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def streams() -> Iterator[list[Stream]]:
    opened: list[Stream] = []
    yield opened
    for stream in opened:
        stream.close()


def watch(streams: list[Stream], emulator: Running, path: str, *, timeout: float = 10) -> Stream:
    stream = Stream(emulator, path, timeout=timeout)
    streams.append(stream)
    return stream


def config_map(name: str, *, labels: dict[str, str] | None = None, **data: str) -> Obj:
    meta: Obj = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def write(emulator: Running, method: str, path: str, body: Any = None) -> Obj:
    content_type = MERGE if method == "PATCH" else "application/json"
    status, got, _ = emulator.request(method, path, body, content_type=content_type)
    assert status in (200, 201), got
    return dict(got)


def current_rv(emulator: Running) -> int:
    _, listing, _ = emulator.request("GET", CONFIGMAPS)
    return int(listing["metadata"]["resourceVersion"])


def summary(events: list[Obj]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


# from a resourceVersion -------------------------------------------------------------------------


def test_a_watch_from_a_version_replays_later_changes_in_order(
    emulator: Running, streams: list[Stream]
) -> None:
    start = current_rv(emulator)
    write(emulator, "POST", CONFIGMAPS, config_map("a", k="1"))
    write(emulator, "PATCH", f"{CONFIGMAPS}/a", {"data": {"k": "2"}})
    write(emulator, "POST", CONFIGMAPS, config_map("b"))
    write(emulator, "DELETE", f"{CONFIGMAPS}/a")
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}")
    assert stream.status == 200
    assert stream.headers["Content-Type"] == "application/json"
    events = stream.take(4)
    assert summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    assert events[1]["object"]["data"] == {"k": "2"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > start
    # Live changes follow the replayed ones on the same stream.
    write(emulator, "PATCH", f"{CONFIGMAPS}/b", {"data": {"x": "y"}})
    live = stream.take(1)
    assert summary(live) == [("MODIFIED", "b")]
    assert int(live[0]["object"]["metadata"]["resourceVersion"]) > versions[-1]


def test_a_watch_without_a_version_starts_with_the_current_objects(
    emulator: Running, streams: list[Stream]
) -> None:
    write(emulator, "POST", CONFIGMAPS, config_map("a"))
    write(emulator, "POST", CONFIGMAPS, config_map("b"))
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=true")
    assert summary(stream.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
    write(emulator, "DELETE", f"{CONFIGMAPS}/b")
    assert summary(stream.take(1)) == [("DELETED", "b")]


def test_a_watch_sees_only_its_namespace(emulator: Running, streams: list[Stream]) -> None:
    start = current_rv(emulator)
    write(emulator, "POST", "/api/v1/namespaces/kube-system/configmaps", config_map("other"))
    write(emulator, "POST", CONFIGMAPS, config_map("mine"))
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}")
    assert summary(stream.take(1)) == [("ADDED", "mine")]
    everywhere = watch(streams, emulator, f"/api/v1/configmaps?watch=1&resourceVersion={start}")
    assert summary(everywhere.take(2)) == [("ADDED", "other"), ("ADDED", "mine")]


def test_a_selector_watch_reports_objects_leaving_and_entering_the_selection(
    emulator: Running, streams: list[Stream]
) -> None:
    start = current_rv(emulator)
    stream = watch(
        streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}&labelSelector=app%3Dweb"
    )
    write(emulator, "POST", CONFIGMAPS, config_map("a", labels={"app": "web"}))
    write(emulator, "POST", CONFIGMAPS, config_map("b", labels={"app": "api"}))
    write(emulator, "PATCH", f"{CONFIGMAPS}/a", {"data": {"k": "v"}})
    write(emulator, "PATCH", f"{CONFIGMAPS}/a", {"metadata": {"labels": {"app": "db"}}})
    write(emulator, "PATCH", f"{CONFIGMAPS}/b", {"metadata": {"labels": {"app": "web"}}})
    write(emulator, "PATCH", f"{CONFIGMAPS}/a", {"data": {"k": "w"}})  # unseen: not selected
    write(emulator, "DELETE", f"{CONFIGMAPS}/b")
    events = stream.take(5)
    assert summary(events) == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
        ("ADDED", "b"),
        ("DELETED", "b"),
    ]
    # The DELETED of an object leaving the selection carries the content the watcher last saw
    # match, at the version of the change that made it leave.
    assert events[2]["object"]["metadata"]["labels"] == {"app": "web"}
    assert events[2]["object"]["data"] == {"k": "v"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions[2] == versions[1] + 1  # the label change came right after the data change


# bookmarks, initial events, timeouts -----------------------------------------------------------


@pytest.fixture
def quick_bookmarks(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path, bookmark_seconds=0.1)


def test_bookmarks_carry_the_current_resource_version(
    quick_bookmarks: Running, streams: list[Stream]
) -> None:
    emulator = quick_bookmarks
    start = current_rv(emulator)
    stream = watch(
        streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}&allowWatchBookmarks=true"
    )
    write(emulator, "POST", "/api/v1/namespaces/kube-system/configmaps", config_map("elsewhere"))
    now = current_rv(emulator)
    mark = stream.take(1)[0]
    assert mark["type"] == "BOOKMARK"
    assert (mark["object"]["kind"], mark["object"]["apiVersion"]) == ("ConfigMap", "v1")
    assert mark["object"]["metadata"]["resourceVersion"] == str(now)


def test_no_bookmarks_unless_asked(quick_bookmarks: Running, streams: list[Stream]) -> None:
    emulator = quick_bookmarks
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={current_rv(emulator)}"
                   "&timeoutSeconds=1")  # fmt: skip
    assert stream.rest() == []


def test_send_initial_events_ends_with_an_annotated_bookmark(
    emulator: Running, streams: list[Stream]
) -> None:
    write(emulator, "POST", CONFIGMAPS, config_map("a"))
    write(emulator, "POST", CONFIGMAPS, config_map("b"))
    now = current_rv(emulator)
    stream = watch(
        streams, emulator,
        f"{CONFIGMAPS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&resourceVersion=",
    )  # fmt: skip
    events = stream.take(3)
    assert summary(events[:2]) == [("ADDED", "a"), ("ADDED", "b")]
    assert events[2]["type"] == "BOOKMARK"
    assert events[2]["object"]["kind"] == "ConfigMap"
    assert events[2]["object"]["metadata"]["resourceVersion"] == str(now)
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    write(emulator, "POST", CONFIGMAPS, config_map("c"))
    assert summary(stream.take(1)) == [("ADDED", "c")]


def test_timeout_seconds_ends_the_stream(emulator: Running, streams: list[Stream]) -> None:
    began = time.monotonic()
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion="
                   f"{current_rv(emulator)}&timeoutSeconds=1", timeout=5)  # fmt: skip
    assert stream.rest() == []
    assert 0.9 <= time.monotonic() - began < 3


# history window ----------------------------------------------------------------------------------


@pytest.fixture
def short_history(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path, history=5)


def test_a_version_older_than_the_history_gets_a_410_error_event(
    short_history: Running, streams: list[Stream]
) -> None:
    emulator = short_history
    start = current_rv(emulator)
    for i in range(8):
        write(emulator, "POST", CONFIGMAPS, config_map(f"cm-{i}"))
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}")
    assert stream.status == 200
    events = stream.rest()
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["status"], status["code"], status["reason"]) == (
        "Status", "Failure", 410, "Expired",
    )  # fmt: skip
    assert status["message"].startswith(f"too old resource version: {start} (")
    # A version inside the window still resumes.
    recent = current_rv(emulator) - 2
    resumed = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={recent}")
    assert summary(resumed.take(2)) == [("ADDED", "cm-6"), ("ADDED", "cm-7")]


# faults ------------------------------------------------------------------------------------------


def set_faults(emulator: Running, **faults: Any) -> Obj:
    status, body, _ = emulator.request("PUT", FAULTS, faults)
    assert status == 200, body
    return dict(body)


def test_watch_drop_after_closes_the_stream_after_n_events(
    emulator: Running, streams: list[Stream]
) -> None:
    set_faults(emulator, watch_drop_after=2)
    start = current_rv(emulator)
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}")
    for i in range(4):
        write(emulator, "POST", CONFIGMAPS, config_map(f"cm-{i}"))
    assert summary(stream.rest()) == [("ADDED", "cm-0"), ("ADDED", "cm-1")]


def test_force_gone_answers_every_resumed_watch_with_410(
    emulator: Running, streams: list[Stream]
) -> None:
    write(emulator, "POST", CONFIGMAPS, config_map("a"))
    start = current_rv(emulator)
    set_faults(emulator, force_gone=True)
    events = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&resourceVersion={start}").rest()
    assert [(e["type"], e["object"]["code"], e["object"]["reason"]) for e in events] == [
        ("ERROR", 410, "Expired")
    ]
    # A fresh watch (no version) still works: that is the relist path.
    fresh = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&timeoutSeconds=1")
    assert summary(fresh.rest()) == [("ADDED", "a")]


def test_throttling_answers_429_with_retry_after(emulator: Running) -> None:
    set_faults(emulator, throttle_rate=1, retry_after=7)
    status, body, headers = emulator.request("GET", CONFIGMAPS)
    # As API Priority and Fairness answers: plain text, not a Status.
    assert status == 429
    assert headers["Retry-After"] == "7"
    assert headers["Content-Type"].startswith("text/plain")
    assert body == "Too many requests, please try again later.\n"
    set_faults(emulator, throttle_status=True)
    status, body, headers = emulator.request("GET", CONFIGMAPS)
    assert (status, headers["Retry-After"]) == (429, "7")
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Too many requests, please try again later."
    assert body["details"] == {"retryAfterSeconds": 7}


def test_error_rate_one_answers_500(emulator: Running) -> None:
    set_faults(emulator, error_rate=1)
    status, body, headers = emulator.request("POST", CONFIGMAPS, config_map("a"))
    assert status == 500
    assert headers["Content-Type"] == "application/json"
    assert (body["kind"], body["reason"]) == ("Status", "InternalError")
    set_faults(emulator, error_rate=0)
    assert emulator.request("GET", f"{CONFIGMAPS}/a")[0] == 404  # the failed write stored nothing


def test_timeouts_answer_504_after_the_stall(emulator: Running) -> None:
    set_faults(emulator, timeout_rate=1, timeout_seconds=0.3)
    began = time.monotonic()
    status, body, _ = emulator.request("GET", CONFIGMAPS)
    assert time.monotonic() - began >= 0.3
    assert (status, body["reason"]) == (504, "Timeout")


def test_latency_slows_resource_requests_only(emulator: Running) -> None:
    set_faults(emulator, latency=0.4)
    began = time.monotonic()
    assert emulator.request("GET", CONFIGMAPS)[0] == 200
    assert time.monotonic() - began >= 0.4
    began = time.monotonic()
    assert emulator.request("GET", "/api/v1")[0] == 200
    assert time.monotonic() - began < 0.4


def test_a_rate_between_zero_and_one_fails_some_requests(emulator: Running) -> None:
    set_faults(emulator, error_rate=0.5, seed=3)
    codes = [emulator.request("GET", CONFIGMAPS)[0] for _ in range(40)]
    assert set(codes) == {200, 500}


@pytest.mark.parametrize(
    "path",
    ["/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/apis/metrics.k8s.io/v1beta1",
     "/version", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1", "/healthz",
     "/kubemedic.io/v1/clock"],
)  # fmt: skip
def test_discovery_and_openapi_are_never_faulted(emulator: Running, path: str) -> None:
    set_faults(emulator, throttle_rate=1, error_rate=1)
    status, body, _ = emulator.request("GET", path)
    assert status == 200, body


def test_unknown_faults_are_refused(emulator: Running) -> None:
    status, body, _ = emulator.request("PUT", FAULTS, {"explode": True})
    assert status == 400
    assert body["message"].startswith("unknown fault 'explode'; known: ")
    status, body, _ = emulator.request("PUT", FAULTS, {"error_rate": 2})
    assert status == 400
    assert body["message"] == "fault error_rate: expected a rate from 0 to 1, got 2"


def test_a_watch_response_is_dated_by_the_virtual_clock(
    emulator: Running, streams: list[Stream]
) -> None:
    _, clock, _ = emulator.request("PUT", "/kubemedic.io/v1/clock", {"paused": True})
    emulator.request("PUT", "/kubemedic.io/v1/clock", {"advanceSeconds": 86400 * 30})
    stopped = datetime.fromisoformat(clock["now"]) + timedelta(days=30)
    stream = watch(streams, emulator, f"{CONFIGMAPS}?watch=1&timeoutSeconds=1")
    assert stream.headers["Date"] == format_datetime(stopped, usegmt=True)
