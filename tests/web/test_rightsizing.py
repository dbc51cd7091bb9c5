"""Right-sizing on the dashboard: the recommendations API and page over the archive
``kubemedic recommend``'s tests read (the hub evicted at 2200Mi with a 128Mi request, an
OOM-killed worker), the same numbers as the command, the window, and bad parameters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kubemedic.cli import app as cli
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from kubemedic.web.app import create_app
from tests.recommend import archived
from tests.web import filling

WINDOW = {"since": "2023-01-25T00:00:00Z", "until": "2023-02-02T00:00:00Z"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sizing") / "kubemedic.db"
    archived.fill(path)
    return path


@pytest.fixture(scope="module")
def client(db: Path) -> Iterator[TestClient]:
    with Archive.open(str(db), migrate=False) as archive:
        yield TestClient(create_app(archive))


def _items(client: TestClient, **params: str) -> list[dict[str, Any]]:
    response = client.get("/api/v1/recommendations", params={**WINDOW, **params})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["items"]
    return found


def test_the_api_answers_what_kubemedic_recommend_prints(client: TestClient, db: Path) -> None:
    items = _items(client)
    window = ["--since", WINDOW["since"], "--until", WINDOW["until"]]
    printed = CliRunner().invoke(cli, ["recommend", "--db", str(db), "-o", "json", *window])
    assert printed.exit_code == 0, printed.output
    assert items == json.loads(printed.stdout)["recommendations"]
    hub = next(i for i in items if i["workload"] == "prod/Deployment/hub")
    assert hub["recommended"]["requests"]["memory"] == "2530Mi"  # above the 2200Mi it used
    assert any(r["rule"] == "eviction-floor" for r in hub["reasons"])


def test_a_workload_and_a_namespace_narrow_the_answer(client: TestClient) -> None:
    (hub,) = _items(client, workload="Deployment/hub")
    assert hub["container"] == "hub"
    assert {i["namespace"] for i in _items(client, namespace="support")} == {"support"}
    assert _items(client, namespace="nowhere") == []


def test_the_window_defaults_to_the_archives_last_two_weeks(client: TestClient) -> None:
    response = client.get("/api/v1/recommendations")
    assert response.status_code == 200
    body = response.json()
    assert body["settings"]["cpuPercentile"] == 95.0
    # This archive holds no events, so its "now" is the clock's: its 2023 samples are too old.
    assert body["items"] == []
    assert body["since"] < body["until"]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"workload": "hub"}, "workload 'hub': expected KIND/NAME"),
        ({"workload": "Deployment/hub/x"}, "workload 'Deployment/hub/x'"),
        ({"since": "yesterday"}, "since 'yesterday'"),
    ],
)
def test_a_bad_parameter_answers_400_naming_it(
    client: TestClient, params: dict[str, str], named: str
) -> None:
    response = client.get("/api/v1/recommendations", params=params)
    assert response.status_code == 400
    assert named in response.json()["error"]


def test_the_page_shows_each_change_and_why(client: TestClient) -> None:
    page = client.get("/recommendations", params=WINDOW)
    assert page.status_code == 200
    html = page.text
    assert "Right-sizing" in html and "prod/Deployment/hub" in html
    assert '<td class="change change-raise">128Mi → 2530Mi</td>' in html
    assert "2200Mi named by the kubelet&#39;s message at the eviction" in html
    empty = client.get("/recommendations", params={"namespace": "nowhere", **WINDOW})
    assert "No usage samples in this window" in empty.text
    assert client.get("/recommendations", params={"workload": "x"}).status_code == 400


def test_the_schema_documents_the_route(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    route = schema["paths"]["/api/v1/recommendations"]["get"]
    assert {p["name"] for p in route["parameters"]} >= {"cluster", "namespace", "workload"}


def test_an_incident_page_sizes_the_workloads_it_harmed(tmp_path: Path) -> None:
    # The dashboard's incidents (the hub evicted beside Prometheus), with the hub's samples.
    with Archive.open(str(tmp_path / "kubemedic.db")) as archive:
        filling.fill(archive)
        archive.write(Batch(archived.CLUSTER, samples=archived.samples()))
        client = TestClient(create_app(archive))
        listed = client.get("/api/v1/incidents", params={"limit": 500}).json()["items"]
        # The second day's eviction, with the first day's samples behind it.
        latest = max(
            (i for i in listed if "prod/Deployment/hub" in i["harmed"]), key=lambda i: i["start"]
        )
        page = client.get("/incidents/" + latest["id"]).text
        listing = client.get("/recommendations").text
        asked = client.get(
            "/api/v1/recommendations",
            params={"workload": "Deployment/hub", "namespace": "prod", "until": latest["end"]},
        ).json()["items"]
    box = page.split('id="sizing"')[1].split('id="findings"')[0]
    (hub,) = asked
    assert "prod/Deployment/hub" in box
    shown = hub["recommended"]["requests"]["memory"]
    current = hub["current"]["requests"]["memory"]
    assert shown == "2530Mi" and f"{current} → {shown}</td>" in box
    assert f"{hub['history']['samples']} samples" in box
    involved = listing.split("Workloads the incidents involve")[1]
    assert "/recommendations?namespace=prod&amp;workload=Deployment%2Fhub" in involved


def test_more_samples_than_the_budget_ask_for_a_workload(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubemedic.web import rightsizing

    monkeypatch.setattr(rightsizing, "SAMPLE_BUDGET", 10)
    rightsizing.forget()
    response = client.get("/api/v1/recommendations", params={"namespace": "prod", **WINDOW})
    assert response.status_code == 400
    error = response.json()["error"]
    assert "the namespace prod holds more usage samples" in error
    assert "kubemedic recommend -n prod" in error
    # One workload is always sized, whatever the namespace holds.
    (hub,) = _items(client, namespace="prod", workload="Deployment/hub")
    assert hub["recommended"]["requests"]["memory"] == "2530Mi"
    page = client.get("/recommendations", params=WINDOW)
    assert page.status_code == 200
    assert 'class="too-many"' in page.text and "the cluster leap holds more" in page.text
