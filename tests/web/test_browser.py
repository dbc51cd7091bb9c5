"""The dashboard in a real browser: Debian's chromium driven by Playwright (never a browser
download), against ``kubemedic web`` serving an archive. Every page loads; a person goes from
the overview to an incident, reads its timeline, follows the same-cause link to the other
incident and from there to the node, and sees what each page is about. Screenshots are kept
in ``$KUBEMEDIC_ARTIFACTS`` (when set) or the test's temporary directory.

Skipped when chromium or Playwright is missing, saying which; under ``CI`` that fails instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT
from tests.web.test_auth import free_port, wait_for

CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.timeout(300)


def _missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is missing (apt-get install -y --no-install-recommends chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (python3 -m pip install playwright)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def base(archive_path: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "kubemedic.cli", "web", "--db", str(archive_path),
         "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(f"{url}/api/v1/clusters", process).status_code == 200
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    named = os.environ.get("KUBEMEDIC_ARTIFACTS")
    where = Path(named) / "web" if named else tmp_path / "screenshots"
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("requestfailed", lambda request: errors.append(f"failed {request.url}"))
    yield opened
    context.close()
    assert errors == []


@pytest.mark.parametrize(
    ("path", "heading"),
    [
        ("/", "Cluster leap"),
        ("/incidents", "Incidents"),
        ("/events", "Events"),
        ("/storms", "Storms and reverts"),
        ("/recommendations", "Right-sizing"),
        ("/nodes/core-2", "Node core-2"),
    ],
)
def test_every_page_loads(page: Any, base: str, shots: Path, path: str, heading: str) -> None:
    response = page.goto(base + path)
    assert response.status == 200
    assert page.locator("h1").inner_text() == heading
    name = path.strip("/").replace("/", "-") or "overview"
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def test_incident_timeline_related_incident_node(page: Any, base: str, shots: Path) -> None:
    page.goto(base + "/")
    assert page.get_by_text("quarantined").first.is_visible()
    assert page.locator("svg.heatmap rect.heat").count() >= 2
    open_incidents = page.locator("h2:has-text('Open incidents') + table a.incident-link")
    assert open_incidents.count() == 1
    title = open_incidents.first.inner_text()
    assert title.startswith("JupyterHub hub evicted")
    open_incidents.first.click()

    page.wait_for_url("**/incidents/inc-*")
    first_url = page.url
    assert page.locator("h1").inner_text() == title
    chart = page.locator("svg.chart")
    assert chart.is_visible()
    assert chart.locator("circle.signal.eviction").count() == 2
    assert chart.locator("rect.finding").count() >= 5
    assert page.get_by_text("Suspected cause").is_visible()
    page.screenshot(path=str(shots / "incident.png"), full_page=True)
    chart.screenshot(path=str(shots / "timeline.png"))

    page.locator("nav.toc a", has_text="Timeline").click()
    page.wait_for_url("**#timeline")
    chart.scroll_into_view_if_needed()
    related = page.locator("a.related-link")
    assert related.count() == 1
    related.first.click()
    page.wait_for_url("**/incidents/inc-*")
    assert page.url != first_url
    assert page.locator("a.related-link").first.get_attribute("href") in first_url
    assert page.locator("svg.chart circle.signal.eviction").count() == 3
    page.screenshot(path=str(shots / "related-incident.png"), full_page=True)

    page.locator("ul.nodes a.node-link", has_text="core-2").click()
    page.wait_for_url("**/nodes/core-2")
    assert page.locator("h1").inner_text() == "Node core-2"
    assert page.locator("ol.ladder li.current").inner_text() == "quarantine"
    assert page.get_by_text("Ready=False for 5m").is_visible()
    assert page.locator("svg.chart rect.condition").count() == 3
    page.screenshot(path=str(shots / "node.png"), full_page=True)


def test_event_search_filters_and_pages(page: Any, base: str, shots: Path) -> None:
    page.goto(base + "/events")
    page.fill("input[name=reason]", "BackOff")
    page.fill("input[name=type]", "Warning")
    page.click("button[type=submit]")
    page.wait_for_url("**/events?*reason=BackOff*")
    rows = page.locator("table.events tr:has(td)")
    assert rows.count() == 100
    assert set(rows.locator("td:nth-child(3)").all_inner_texts()) == {"BackOff"}
    assert set(rows.locator("td:nth-child(2)").all_inner_texts()) == {"Warning"}
    page.screenshot(path=str(shots / "events.png"), full_page=True)
    page.click("a.next")
    more = page.locator("table.events tr:has(td)")
    assert 0 < more.count() < 100
    assert set(more.locator("td:nth-child(3)").all_inner_texts()) == {"BackOff"}
    assert page.locator("a.next").count() == 0
