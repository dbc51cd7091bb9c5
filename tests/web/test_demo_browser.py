"""The dashboard in a real browser against the demo's live run: ``kubemedic demo --keep-running``
in its own process, as the README tells a person to run it, and Debian's chromium driven by
Playwright over the dashboard it leaves up. Every page loads; a person goes from the overview to
the hub's incident, reads its timeline, follows a same-cause incident (or the next incident when
there is none) and from there to the node; the repaired, replaced and quarantined nodes show their
ladder; the storm page shows the revert. Screenshots are kept in ``$KUBEMEDIC_ARTIFACTS/demo``
(when set) or the test's temporary directory. SIGINT then ends the demo with status 0.

Skipped when chromium or Playwright is missing, saying which; under ``CI`` that fails instead.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubemedic.demo import DONE
from tests.paths import ROOT
from tests.web.test_auth import free_port
from tests.web.test_browser import CHROMIUM, _missing

pytestmark = pytest.mark.timeout(900)

FLAPPING = "sim-workers-zone-b-vgmg7-8qnxk"
PERSISTENT = "sim-workers-zone-b-vgmg7-dd47g"
KUBELET_STOPPED = "sim-workers-zone-a-mtpxj-5djxk"


@dataclass
class Demo:
    process: subprocess.Popen[str]
    base: str
    lines: list[str] = field(default_factory=list)

    @property
    def out(self) -> str:
        return "\n".join(self.lines)


def _read(demo: Demo) -> None:
    assert demo.process.stdout is not None
    for line in demo.process.stdout:
        demo.lines.append(line.rstrip("\n"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {missing}")
        pytest.skip(missing)
    port = free_port()
    archive = tmp_path_factory.mktemp("demo") / "demo.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "kubemedic.cli", "demo", "--keep-running", "--port", str(port),
         "--archive", str(archive)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    running = Demo(process, f"http://127.0.0.1:{port}")
    reader = threading.Thread(target=_read, args=(running,), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 600
        while not any(line.startswith(DONE) for line in running.lines):
            if process.poll() is not None:
                reader.join(timeout=10)
                stderr = process.stderr.read() if process.stderr else ""
                pytest.fail(f"the demo ended early ({process.returncode}): {stderr[-3000:]}")
            assert time.monotonic() < deadline, "the demo never said it was done"
            time.sleep(0.5)
        assert f"The dashboard: {running.base}/" in running.out
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def browser(demo: Demo) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    named = os.environ.get("KUBEMEDIC_ARTIFACTS")
    where = Path(named) / "demo" if named else tmp_path / "screenshots"
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
        ("/?cluster=gitops-storm", "Cluster gitops-storm"),
        ("/?cluster=node-repair", "Cluster node-repair"),
        ("/?cluster=jupyterhub", "Cluster jupyterhub"),
        ("/incidents?cluster=jupyterhub", "Incidents"),
        ("/incidents?cluster=gitops-storm", "Incidents"),
        ("/events?cluster=jupyterhub&reason=Evicted", "Events"),
        ("/storms?cluster=gitops-storm", "Storms and reverts"),
        (f"/nodes/{FLAPPING}?cluster=node-repair", f"Node {FLAPPING}"),
        ("/nodes/core-2?cluster=jupyterhub", "Node core-2"),
    ],
)
def test_every_page_loads(page: Any, demo: Demo, shots: Path, path: str, heading: str) -> None:
    response = page.goto(demo.base + path)
    assert response.status == 200
    assert page.locator("h1").inner_text() == heading
    name = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "overview"
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def test_every_address_the_demo_tells_answers(page: Any, demo: Demo) -> None:
    told = sorted(set(re.findall(rf"{re.escape(demo.base)}/\S*", demo.out)))
    assert len(told) >= 8, told
    for address in told:
        assert page.goto(address).status == 200, address


def test_hub_incident_timeline_related_incident_node(page: Any, demo: Demo, shots: Path) -> None:
    page.goto(demo.base + "/?cluster=jupyterhub")
    hub = page.locator("a.incident-link", has_text="JupyterHub hub evicted").first
    title = hub.inner_text()
    hub.click()
    page.wait_for_url("**/incidents/inc-*")
    first = page.url
    assert page.locator("h1").inner_text() == title
    chart = page.locator("svg.chart")
    assert chart.is_visible()
    assert chart.locator("circle.signal.eviction").count() >= 1
    assert page.get_by_text("Suspected cause").is_visible()
    page.screenshot(path=str(shots / "hub-incident.png"), full_page=True)
    chart.screenshot(path=str(shots / "hub-timeline.png"))

    page.locator("nav.toc a", has_text="Timeline").click()
    page.wait_for_url("**#timeline")
    related = page.locator("a.related-link")
    if related.count():
        related.first.click()
    else:  # no incident with the same cause: the next one of the list
        page.goto(demo.base + "/incidents?cluster=jupyterhub")
        others = page.locator("a.incident-link")
        links = [others.nth(i) for i in range(others.count())]
        nxt = next(link for link in links if link.inner_text() != title)
        nxt.click()
    page.wait_for_url("**/incidents/inc-*")
    assert page.url.split("#")[0] != first.split("#")[0]
    assert page.locator("svg.chart").is_visible()
    page.screenshot(path=str(shots / "second-incident.png"), full_page=True)

    page.goto(first.split("#")[0])
    page.locator("ul.nodes a.node-link", has_text="core-2").click()
    page.wait_for_url("**/nodes/core-2*")
    assert page.locator("h1").inner_text() == "Node core-2"
    assert page.locator("ol.ladder li").all_inner_texts() == [
        "restart",
        "reboot",
        "replace",
        "quarantine",
    ]
    page.screenshot(path=str(shots / "core-2.png"), full_page=True)


def test_the_nodes_show_what_repair_did(page: Any, demo: Demo, shots: Path) -> None:
    page.goto(demo.base + "/?cluster=node-repair")
    assert page.get_by_text("quarantined").first.is_visible()
    page.locator("a.node-link", has_text=FLAPPING).first.click()
    page.wait_for_url(f"**/nodes/{FLAPPING}*")
    assert page.locator("h1").inner_text() == f"Node {FLAPPING}"
    assert page.locator("ol.ladder li.current").inner_text() == "quarantine"
    assert page.get_by_text("flapping").first.is_visible()
    page.screenshot(path=str(shots / "quarantined-node.png"), full_page=True)
    page.goto(f"{demo.base}/nodes/{PERSISTENT}?cluster=node-repair")
    assert page.get_by_text("replaced").first.is_visible()
    page.screenshot(path=str(shots / "replaced-node.png"), full_page=True)
    page.goto(f"{demo.base}/nodes/{KUBELET_STOPPED}?cluster=node-repair")
    assert page.get_by_text("restart-kubelet").first.is_visible()
    page.screenshot(path=str(shots / "restarted-node.png"), full_page=True)


def test_the_storm_page_shows_the_revert(page: Any, demo: Demo, shots: Path) -> None:
    page.goto(demo.base + "/storms?cluster=gitops-storm")
    assert page.get_by_text("revert-out-of-band").first.is_visible()
    assert page.get_by_text("/spec/template/spec/nodeName").first.is_visible()
    assert page.get_by_text("gateway/Deployment/api-gateway").first.is_visible()
    page.screenshot(path=str(shots / "storms.png"), full_page=True)


def test_sigint_stops_the_demo_and_its_dashboard(demo: Demo) -> None:
    demo.process.send_signal(signal.SIGINT)
    assert demo.process.wait(timeout=60) == 0
    with pytest.raises(OSError):  # nothing listens any more
        urllib.request.urlopen(demo.base + "/", timeout=5)
