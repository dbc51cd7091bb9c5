"""Replay of kubectl edit sessions recorded against a real API server (kubectl's own test data).

Each ``testcase-*`` directory of ``shared/peer/kubectl-edit`` holds a ``test.yaml`` whose
``request`` steps give what kubectl sent (method, path, content type, ``N.request``) and what the
server answered (status code, ``N.response``). The objects the recorded GETs returned are loaded
into the emulator as stored; then every request is sent again verbatim, and the emulator must
answer the same status and the same name, labels, annotations and ``spec``/``data`` (for 422: the
same reason and causes).

The recordings come from 2017-era servers (one from 2021), so the comparison allows exactly the
differences listed below, each caused by a later Kubernetes change or by the recordings themselves.
"""

from __future__ import annotations

import copy
import http.client
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.sim.conftest import Running

Obj = dict[str, Any]

PEER = paths.PEER / "kubectl-edit"

#: Request paths the emulator does not serve, and why (their steps are not replayed).
UNSERVED = {
    "/apis/storage.k8s.io/": "storageclasses are not among the emulator's resources",
    "/apis/company.com/": "bars.company.com is a custom resource of the recording's cluster only",
    "/apis/extensions/v1beta1/": "extensions/v1beta1 was removed in Kubernetes 1.16",
}

#: Service fields the server has defaulted since the recordings were made, with their values:
#: dual-stack (1.20) fills clusterIPs, ipFamilies and ipFamilyPolicy for a single-stack cluster;
#: internalTrafficPolicy (1.22) defaults to Cluster.
SERVICE_DEFAULTS_SINCE_2017 = {
    "ipFamilies": ["IPv4"],
    "ipFamilyPolicy": "SingleStack",
    "internalTrafficPolicy": "Cluster",
}
#: sessionAffinity ClientIP gained sessionAffinityConfig (1.7) with a 3-hour default timeout.
CLIENT_IP_AFFINITY_DEFAULT = {"clientIP": {"timeoutSeconds": 10800}}

#: Validation causes whose field moved: since dual-stack (1.20) the clusterIP checks (format and
#: immutability) report ``spec.clusterIPs[0]``.
CAUSE_FIELD_RENAMES = {"spec.clusterIP": "spec.clusterIPs[0]"}


@dataclass(frozen=True)
class Anomaly:
    """A recorded response that does not follow from its request (the upstream harness replays
    responses without checking them, and some were edited by hand). ``expect`` says what the
    emulator must answer instead: ``"requested"`` (the value the request's patch sets) or
    ``"unchanged"`` (the value before the request)."""

    field: str
    expect: str
    why: str


ANOMALIES = {
    ("testcase-apply-edit-last-applied-list", "4"): Anomaly(
        "annotations", "requested",
        "the recorded last-applied annotation lacks the apiVersion the request sets",
    ),
    ("testcase-list-record", "3"): Anomaly(
        "annotations", "unchanged",
        "the change-cause of the removed --record flag is in the response, not in the request",
    ),
    ("testcase-list-record", "4"): Anomaly(
        "annotations", "unchanged",
        "the change-cause of the removed --record flag is in the response, not in the request",
    ),
    ("testcase-not-update-annotation", "2"): Anomaly(
        "annotations", "unchanged",
        "the response is testcase-update-annotation's; this request leaves annotations alone",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Step:
    number: str
    method: str
    path: str
    content_type: str | None
    request: bytes
    status: int
    response: Any


def cases() -> list[Any]:
    if not PEER.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{PEER} is missing"))]
    return [pytest.param(d, id=d.name) for d in sorted(PEER.glob("testcase-*")) if d.is_dir()]


def read_steps(case: Path) -> tuple[Obj, list[Step]]:
    spec = yaml.safe_load((case / "test.yaml").read_text())
    steps = []
    for raw in spec.get("steps") or []:
        if raw["type"] != "request":
            continue
        text = (case / raw["resultingOutput"]).read_text()
        steps.append(
            Step(
                number=raw["expectedInput"].split(".")[0],
                method=raw["expectedMethod"],
                path=raw["expectedPath"],
                content_type=raw.get("expectedContentType"),
                request=(case / raw["expectedInput"]).read_bytes(),
                status=int(raw["resultingStatusCode"]),
                response=json.loads(text) if text.strip() else None,
            )
        )
    return spec, steps


def unserved(path: str) -> str | None:
    return next((why for prefix, why in UNSERVED.items() if path.startswith(prefix)), None)


def stored_objects(steps: list[Step]) -> list[Obj]:
    """What the recorded GETs show the server held (list items get their kind back)."""
    found: list[Obj] = []
    for step in steps:
        body = step.response
        if step.method != "GET" or step.status != 200 or not isinstance(body, dict):
            continue
        kind = str(body.get("kind", ""))
        if kind.endswith("List"):
            found += [{"apiVersion": body["apiVersion"], "kind": kind[:-4], **item}
                      for item in body.get("items", [])]  # fmt: skip
        elif kind != "Status":
            found.append(body)
    return found


def send(emulator: Running, step: Step) -> tuple[int, Any]:
    """The request exactly as kubectl sent it: method, path, Content-Type and body bytes."""
    conn = http.client.HTTPConnection("127.0.0.1", emulator.server.port, timeout=30)
    headers = {"Accept": "application/json"}
    if step.content_type:
        headers["Content-Type"] = step.content_type
    try:
        conn.request(step.method, step.path, body=step.request or None, headers=headers)
        response = conn.getresponse()
        status, text = response.status, response.read()
        assert response.getheader("Content-Type") == "application/json"
    finally:
        conn.close()
    return status, json.loads(text)


def replay(emulator: Running, case: Path) -> list[tuple[Step, int, Any]]:
    """Load the recorded state, send every served request; returns step, status, body."""
    spec, steps = read_steps(case)
    served = [s for s in steps if unserved(s.path) is None]
    if not served:
        reasons = sorted({str(unserved(s.path)) for s in steps})
        pytest.skip(f"no request of {case.name} is served: {'; '.join(reasons)}")
    namespace = spec.get("namespace")
    if namespace:  # the recording's cluster had it (its test.yaml says it was created first)
        emulator.load({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    emulator.load(*stored_objects(steps))
    answers = []
    for step in served:
        status, body = send(emulator, step)
        answers.append((step, status, body))
    return answers


# expectations -------------------------------------------------------------------------------------


def upgraded_spec(kind: str, spec: Obj, *, got: Obj, request: Any) -> Obj:
    """The recorded spec as a 1.32 server shows it (the documented differences only)."""
    expected = copy.deepcopy(spec)
    if kind != "Service" or expected.get("type") == "ExternalName":
        return expected
    requested = (request or {}).get("spec", {}) if isinstance(request, dict) else {}
    if "clusterIP" not in requested and got.get("clusterIP") != expected.get("clusterIP"):
        # Allocated by the server: 2017's local-up-cluster used 10.0.0.0/24, 1.32 defaults to
        # 10.96.0.0/12; any address the emulator's range gives is right.
        assert ipaddress.ip_address(got["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
        expected["clusterIP"] = got["clusterIP"]
    expected.setdefault("clusterIPs", [expected["clusterIP"]])
    for name, value in SERVICE_DEFAULTS_SINCE_2017.items():
        expected.setdefault(name, value)
    if expected.get("sessionAffinity") == "ClientIP":
        expected.setdefault("sessionAffinityConfig", CLIENT_IP_AFFINITY_DEFAULT)
    return expected


def assert_same_object(
    got: Obj, recorded: Obj, *, case: str, step: Step, before: Obj | None
) -> None:
    kind = str(recorded.get("kind") or got.get("kind"))
    meta, want = got.get("metadata", {}), dict(recorded.get("metadata", {}))
    anomaly = ANOMALIES.get((case, step.number))
    if anomaly is not None:
        if anomaly.expect == "unchanged":
            assert before is not None
            want[anomaly.field] = before["metadata"].get(anomaly.field)
        else:
            request = json.loads(step.request)
            want[anomaly.field] = {**want.get(anomaly.field, {}),
                                   **request["metadata"][anomaly.field]}  # fmt: skip
    for field in ("name", "labels", "annotations"):
        assert meta.get(field) == want.get(field), (case, step.number, field)
    request = json.loads(step.request) if step.request.strip() else None
    if "spec" in recorded:
        # Reads too: the server defaults what it reads back from storage.
        expected = upgraded_spec(kind, recorded["spec"], got=got["spec"], request=request)
        assert got["spec"] == expected, (case, step.number)
    assert got.get("data") == recorded.get("data"), (case, step.number)


def cause_fields(status: Obj, *, renamed: bool) -> list[tuple[str, str]]:
    causes = status.get("details", {}).get("causes", [])
    rename = CAUSE_FIELD_RENAMES if renamed else {}
    return [(c["reason"], rename.get(c["field"], c["field"])) for c in causes]


# tests --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases())
def test_recorded_kubectl_edit_session(emulator: Running, case: Path) -> None:
    before: dict[str, Obj] = {}
    for obj in stored_objects(read_steps(case)[1]):
        before[obj["metadata"]["name"]] = obj
    for step, status, got in replay(emulator, case):
        assert status == step.status, (case.name, step.number, got)
        recorded = step.response
        if status in (200, 201):
            assert (got["kind"], got["apiVersion"]) == (recorded["kind"], recorded["apiVersion"])
            if recorded["kind"].endswith("List"):
                assert [i["metadata"]["name"] for i in got["items"]] == [
                    i["metadata"]["name"] for i in recorded["items"]
                ]
                for item, want in zip(got["items"], recorded["items"], strict=True):
                    assert_same_object(item, want, case=case.name, step=step, before=None)
                continue
            name = got["metadata"]["name"]
            assert_same_object(got, recorded, case=case.name, step=step, before=before.get(name))
            before[name] = got
        elif status == 422:
            assert (got["kind"], got["reason"], got["code"]) == ("Status", "Invalid", 422)
            assert got["details"]["name"] == recorded["details"]["name"]
            assert got["details"]["kind"] == recorded["details"]["kind"]
            assert cause_fields(got, renamed=False) == cause_fields(recorded, renamed=True)
        else:
            # Other failures (404) have kept their wording since 2017: the whole Status agrees.
            assert got == recorded


#: Writes of the recordings that change nothing (the same data again): the server answers with
#: the object's version unchanged. The recording agrees for step 7 (2017, as step 4); its step 10
#: answers 2071 for the same no-op request, which the server's no-op rule cannot produce.
NO_OP_WRITES = {("testcase-list-errors", "7"), ("testcase-list-errors", "10")}


@pytest.mark.parametrize("case", cases())
def test_writes_return_increasing_resource_versions(emulator: Running, case: Path) -> None:
    """Each write that changes an object returns a version above every version returned
    before it; a write that changes nothing returns the object's version unchanged."""
    highest = 0
    latest: dict[str, tuple[int, Obj]] = {}
    no_ops = set()
    for step, status, got in replay(emulator, case):
        if status not in (200, 201):
            continue
        if got["kind"].endswith("List"):
            list_rv = int(got["metadata"]["resourceVersion"])
            assert list_rv >= highest
            highest = list_rv
            for item in got["items"]:
                latest[item["metadata"]["name"]] = (int(item["metadata"]["resourceVersion"]),
                                                    content_of(item))  # fmt: skip
            continue
        rv = int(got["metadata"]["resourceVersion"])
        name = got["metadata"]["name"]
        previous = latest.get(name)
        if step.method == "GET":
            assert rv <= highest or previous is None
        elif previous is not None and previous[1] == content_of(got):
            assert rv == previous[0], (case.name, step.number)
            no_ops.add((case.name, step.number))
        else:
            assert rv > highest, (case.name, step.number, rv, highest)
        latest[name] = (rv, content_of(got))
        highest = max(highest, rv)
    assert no_ops == {n for n in NO_OP_WRITES if n[0] == case.name}


def content_of(obj: Obj) -> Obj:
    """What a write can change, without the server's bookkeeping."""
    meta = obj["metadata"]
    return {**{k: v for k, v in obj.items() if k != "metadata"},
            "labels": meta.get("labels"), "annotations": meta.get("annotations")}  # fmt: skip


def test_only_the_unserved_steps_are_left_out() -> None:
    if not PEER.is_dir():
        pytest.skip(f"{PEER} is missing")
    left_out = {
        (case.name, step.number, unserved(step.path))
        for case in sorted(PEER.glob("testcase-*"))
        for step in read_steps(case)[1]
        if unserved(step.path) is not None
    }
    storage, bars, extensions = UNSERVED.values()
    assert left_out == {
        ("testcase-edit-subresource-status", "0", extensions),
        ("testcase-schemaless-list", "1", bars),
        ("testcase-schemaless-list", "2", bars),
        ("testcase-schemaless-list", "5", bars),
        ("testcase-schemaless-list", "6", bars),
        ("testcase-unknown-field-known-group-kind", "0", storage),
        ("testcase-unknown-field-known-group-kind", "2", storage),
        ("testcase-unknown-version-known-group-kind", "0", storage),
        ("testcase-unknown-version-known-group-kind", "2", storage),
    }


def test_every_listed_anomaly_is_one() -> None:
    """The recorded value of each anomaly really differs from what its request implies, so the
    list cannot hide a real disagreement."""
    if not PEER.is_dir():
        pytest.skip(f"{PEER} is missing")
    for (name, number), anomaly in ANOMALIES.items():
        _, steps = read_steps(PEER / name)
        step = next(s for s in steps if s.number == number)
        recorded = step.response["metadata"].get(anomaly.field)
        if anomaly.expect == "unchanged":
            before = stored_objects(steps)
            holder = next(o for o in before if o["metadata"]["name"] == step.path.split("/")[-1])
            assert recorded != holder["metadata"].get(anomaly.field), (name, number)
        else:
            requested = json.loads(step.request)["metadata"][anomaly.field]
            assert {**recorded, **requested} != recorded, (name, number)
