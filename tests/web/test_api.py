"""The JSON API over an archive filled by the project's writers: every list walked page by
page (no row twice, none missed, in order), the filters, incidents with their related links,
nodes with their repair ladder and ledger, the breaker's revert patch, the OpenAPI schema."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from kubemedic.store import schema
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from kubemedic.web import pages
from kubemedic.web.app import create_app
from tests.store.rows import event
from tests.web.filling import CLUSTER, EVENTS, PATCH


def walk(client: TestClient, path: str, limit: int, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    token: str | None = None
    pages = 0
    while True:
        query = {**params, "limit": limit, **({"continue": token} if token else {})}
        response = client.get(path, params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        assert len(body["items"]) <= limit
        found.extend(body["items"])
        pages += 1
        token = body["continue"]
        if token is None:
            return found
        assert len(body["items"]) == limit
        assert pages < 1000


def table_ids(path: Path, table: sa.Table, *where: Any) -> set[int]:
    with Archive.open(str(path), migrate=False) as archive, archive.engine.connect() as c:
        return {row[0] for row in c.execute(sa.select(table.c.id).where(*where))}


def newest_first(rows: list[dict[str, Any]], column: str) -> None:
    keys = [(row[column] is None, row[column] or "", row["id"]) for row in rows]
    timed = [key for key in keys if not key[0]]
    assert keys == timed + [key for key in keys if key[0]], "untimed rows come last"
    for before, after in itertools.pairwise(timed):
        assert (before[1], before[2]) > (after[1], after[2])
    untimed = [key[2] for key in keys if key[0]]
    assert untimed == sorted(untimed, reverse=True)


@pytest.mark.parametrize("limit", [1, 7, 100, 500])
def test_events_walk_every_page_once_newest_first(
    client: TestClient, archive_path: Path, limit: int
) -> None:
    rows = walk(client, "/api/v1/events", limit)
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids))
    assert set(ids) == table_ids(archive_path, schema.events)
    assert len(ids) > EVENTS
    newest_first(rows, "last_seen")
    assert any(row["last_seen"] is None for row in rows)


@pytest.mark.parametrize(
    ("path", "table", "column"),
    [
        ("/api/v1/evictions", schema.evictions, "at"),
        ("/api/v1/findings", schema.findings, "last_seen"),
        ("/api/v1/storms", schema.breaker_decisions, "at"),
    ],
)
def test_the_other_lists_walk_every_row_once(
    client: TestClient, archive_path: Path, path: str, table: sa.Table, column: str
) -> None:
    rows = walk(client, path, 2)
    ids = [row["id"] for row in rows]
    assert sorted(ids) == sorted(table_ids(archive_path, table))
    newest_first(rows, column)


def test_oom_kills_are_the_oom_killed_terminations_only(
    client: TestClient, archive_path: Path
) -> None:
    rows = walk(client, "/api/v1/oom-kills", 1)
    t = schema.terminations.c
    assert {row["id"] for row in rows} == table_ids(
        archive_path, schema.terminations, t.reason == "OOMKilled"
    )
    assert rows and all(row["reason"] == "OOMKilled" for row in rows)
    assert {row["pod"] for row in rows} == {"dask-worker-6bfd56fdcf-wd6db"}


@pytest.mark.parametrize(
    ("params", "keep"),
    [
        ({"namespace": "web"}, lambda e: e["namespace"] == "web"),
        ({"reason": "Unhealthy"}, lambda e: e["reason"] == "Unhealthy"),
        ({"type": "normal"}, lambda e: e["type"] == "Normal"),
        ({"kind": "po", "name": "api-bulk-0003"}, lambda e: e["object_name"] == "api-bulk-0003"),
        ({"kind": "nodes"}, lambda e: e["object_kind"] == "Node"),
        ({"node": "worker-2", "reason": "BackOff"},
         lambda e: e["node"] == "worker-2" and e["reason"] == "BackOff"),
        ({"since": "2023-02-01T20:30:00Z"},
         lambda e: e["last_seen"] is not None and e["last_seen"] >= "2023-02-01T20:30:00Z"),
        ({"until": "2023-02-01T19:06:00Z"},
         lambda e: e["first_seen"] is not None and e["first_seen"] <= "2023-02-01T19:06:00Z"),
    ],
)  # fmt: skip
def test_event_filters_keep_what_kubectl_would_show(
    client: TestClient, params: dict[str, str], keep: Any
) -> None:
    everything = walk(client, "/api/v1/events", 500)
    expected = [row["id"] for row in everything if keep(row)]
    assert expected, "the filter must keep something"
    assert len(expected) < len(everything), "and leave something out"
    assert [row["id"] for row in walk(client, "/api/v1/events", 9, **params)] == expected


def test_since_takes_a_duration_back_from_the_archive_s_newest_row(client: TestClient) -> None:
    everything = walk(client, "/api/v1/events", 500)
    newest_event = max(row["last_seen"] for row in everything if row["last_seen"])
    newest_finding = client.get("/api/v1/findings").json()["items"][0]["last_seen"]
    assert newest_finding > newest_event  # the second day's scans: the archive's "now"
    floor = datetime.fromisoformat(newest_finding) - timedelta(hours=23)
    expected = [
        row["id"]
        for row in everything
        if row["last_seen"] and datetime.fromisoformat(row["last_seen"]) >= floor
    ]
    assert 0 < len(expected) < len(everything)
    recent = walk(client, "/api/v1/events", 50, since="23h")
    assert [row["id"] for row in recent] == expected
    assert recent[0]["last_seen"] == newest_event


@pytest.mark.parametrize(
    "params",
    [
        {"continue": "not-a-token"},
        {"since": "yesterday"},
        {"cluster": "elsewhere"},
    ],
)
def test_bad_parameters_are_refused_saying_why(client: TestClient, params: dict[str, str]) -> None:
    response = client.get("/api/v1/events", params=params)
    assert response.status_code in (400, 404)
    assert response.json()["error"]


def test_a_token_of_one_list_is_refused_by_another(client: TestClient) -> None:
    token = client.get("/api/v1/events", params={"limit": 1}).json()["continue"]
    response = client.get("/api/v1/findings", params={"continue": token})
    assert response.status_code == 400
    assert "not one this list gave" in response.json()["error"]


@pytest.mark.parametrize("limit", [0, 501])
def test_limit_is_bounded(client: TestClient, limit: int) -> None:
    assert client.get("/api/v1/events", params={"limit": limit}).status_code == 422


def test_rows_written_while_paging_neither_repeat_nor_shift_the_pages(
    archive_path: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(archive_path.read_bytes())
    with Archive.open(str(copy), migrate=False) as archive:
        client = TestClient(create_app(archive))
        first = client.get("/api/v1/events", params={"limit": 50}).json()
        archive.write(Batch(CLUSTER, events=[event(f"late-{i}", count=500) for i in range(30)]))
        rest = walk(client, "/api/v1/events", 50, **{"continue": first["continue"]})
        seen = [row["id"] for row in first["items"] + rest]
        assert len(seen) == len(set(seen))
        assert not any(row["uid"].startswith("late-") for row in rest)
        assert len(seen) == len(table_ids(copy, schema.events)) - 30


def test_incidents_list_link_and_show_their_timeline(client: TestClient) -> None:
    listed = walk(client, "/api/v1/incidents", 1)
    assert len(listed) == 2
    newer, older = listed
    assert newer["start"] > older["start"]
    assert newer["cause"] == older["cause"]
    detail = client.get(f"/api/v1/incidents/{newer['id']}").json()
    assert detail["timeline"] and detail["findings"] and detail["signals"]
    assert detail["suspectedCause"]["evidence"]
    assert [r["id"] for r in detail["related"]] == [older["id"]]
    assert [r["id"] for r in detail["relatedIncidents"]] == [older["id"]]
    assert "core-2" in detail["nodes"]
    assert client.get("/api/v1/incidents/inc-00000000").status_code == 404


def test_open_incidents_are_those_still_going_at_the_archive_s_newest_row(
    client: TestClient,
) -> None:
    newer, _ = client.get("/api/v1/incidents").json()["items"]
    opened = client.get("/api/v1/incidents", params={"state": "open"}).json()["items"]
    assert [incident["id"] for incident in opened] == [newer["id"]]
    assert client.get("/api/v1/incidents", params={"state": "closed"}).status_code == 422


def test_a_node_shows_its_state_ladder_step_ledger_decisions_and_conditions(
    client: TestClient,
) -> None:
    node = client.get("/api/v1/nodes/core-2").json()
    assert node["state"]["state"] == "quarantined"
    assert node["state"]["step"] == "quarantine"
    assert [entry["outcome"] for entry in node["ledger"]] == ["quarantined"]
    assert [step["action"] for step in node["ledger"][0]["steps"]] == ["reboot", "quarantine"]
    assert [d["reason"] for d in node["decisions"]] == ["KubemedicRepairQuarantined"]
    conditions = [(t["condition"], t["status"]) for t in node["transitions"]]
    assert conditions == [("MemoryPressure", "True"), ("Ready", "True"), ("Ready", "False")]
    assert len(node["incidents"]) == 2
    assert client.get("/api/v1/nodes/nowhere").status_code == 404


def test_nodes_list_states_and_commitment_by_pool(client: TestClient) -> None:
    nodes = {node["name"]: node for node in client.get("/api/v1/nodes").json()["items"]}
    assert nodes["core-2"]["state"] == "quarantined"
    assert nodes["core-2"]["pool"] == "core-pool"
    assert nodes["core-2"]["memory"]["requestsPercent"] == 93.0
    assert nodes["worker-1"]["state"] == "healthy"


def test_storms_show_who_when_and_the_revert_patch(client: TestClient) -> None:
    (decision,) = client.get("/api/v1/storms").json()["items"]
    assert decision["owner"] == "gateway/Deployment/api-gateway"
    assert decision["at"] == "2023-02-01T19:25:00Z"
    assert decision["body"]["patch"] == PATCH
    state = client.get("/api/v1/breaker").json()["state"]
    assert list(state["storms"]) == ["gateway/Deployment/api-gateway"]


def test_the_openapi_schema_documents_every_endpoint_and_the_continue_token(
    client: TestClient,
) -> None:
    document = client.get("/openapi.json").json()
    paths = set(document["paths"])
    assert paths == {
        "/api/v1/clusters",
        "/api/v1/events",
        "/api/v1/oom-kills",
        "/api/v1/evictions",
        "/api/v1/findings",
        "/api/v1/incidents",
        "/api/v1/incidents/{incident_id}",
        "/api/v1/nodes",
        "/api/v1/nodes/{name}",
        "/api/v1/storms",
        "/api/v1/breaker",
        "/api/v1/recommendations",
    }
    names = {p["name"] for p in document["paths"]["/api/v1/events"]["get"]["parameters"]}
    assert {"continue", "limit", "namespace", "kind", "name", "reason", "type"} <= names
    assert all(list(item) == ["get"] for item in document["paths"].values())


@pytest.mark.parametrize(
    ("path", "seen"),
    [
        ("/", ["Nodes by state", "quarantined", "core-pool", "Earlier incidents"]),
        ("/incidents", ["JupyterHub hub evicted"]),
        ("/nodes/core-2", ["Node core-2", "Repair ladder", "Ready=False for 5m", "<svg"]),
        ("/events?reason=BackOff", ["BackOff", "Older events"]),
        ("/events?reason=Nothing", ["No events match"]),
        ("/storms", ["gateway/Deployment/api-gateway", "/spec/template/spec/nodeName"]),
    ],
)
def test_every_page_renders(client: TestClient, path: str, seen: list[str]) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    for text in seen:
        assert text in response.text, text


def test_an_incident_page_draws_its_timeline_and_links_the_same_cause(
    client: TestClient,
) -> None:
    newer, older = client.get("/api/v1/incidents").json()["items"]
    page = client.get(f"/incidents/{newer['id']}").text
    assert '<svg class="chart"' in page
    assert 'class="signal eviction"' in page
    assert f'href="/incidents/{older["id"]}"' in page
    assert 'href="/nodes/core-2"' in page
    assert client.get("/incidents/inc-00000000").status_code == 404


def test_a_quarantined_node_without_a_step_stands_on_the_quarantine_rung() -> None:
    # kubemedic run records a finished quarantine with no step (the repair is over); the
    # ladder must still show where the node stands.
    assert pages.current_rung({"state": "quarantined", "step": None}) == "quarantine"
    assert pages.current_rung({"state": "repairing", "step": "reboot"}) == "reboot"
    assert pages.current_rung({"state": "healthy", "step": None}) == ""
