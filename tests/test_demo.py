"""``kubemedic demo``, the README's main job: the three incidents played on the simulator with
kubemedic acting on them (storm breaker, guard, node repair, the archive), told, with the
dashboard up; run once for the module as a user runs it, in its own process.

Every process the demo starts inherits a marker in its environment, so the test can tell
afterwards that none of them is left (``/proc/*/environ``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.demo import DONE, bundled_snapshots
from kubemedic.store import schema
from kubemedic.store.db import Archive
from tests.cli.terminal import fake_terminal, shown
from tests.paths import ROOT

pytestmark = pytest.mark.timeout(600)

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]
MARK = "KUBEMEDIC_DEMO_TEST_MARK"

FLAPPING = "sim-workers-zone-b-vgmg7-8qnxk"
PERSISTENT = "sim-workers-zone-b-vgmg7-dd47g"
KUBELET_STOPPED = "sim-workers-zone-a-mtpxj-5djxk"
RUNTIME_HUNG = "sim-workers-zone-b-vgmg7-cz4lt"
TRANSIENT = "sim-workers-zone-a-mtpxj-k8g8w"


def environment(mark: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), MARK: mark}


def marked(mark: str) -> list[str]:
    """The processes whose environment carries ``mark``: the demo's, and their children."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone, or not ours to read
        if f"{MARK}={mark}".encode() in environ.split(b"\0"):
            found.append(f"{entry.name}: {command}")
    return found


@dataclass
class Played:
    done: subprocess.CompletedProcess[str]
    db: Path
    mark: str

    def act(self, number: int) -> str:
        out = self.done.stdout
        start = out.index(f"Act {number}: ")
        following = out.find(f"Act {number + 1}: ", start)
        return out[start : following if following >= 0 else len(out)]

    def kubemedic(self, *args: str) -> Any:
        answer = subprocess.run(
            [*KUBEMEDIC, *args, "--db", str(self.db), "--output", "json"],
            capture_output=True, text=True, timeout=120, check=False,
            env=environment("none"),
        )  # fmt: skip
        assert answer.returncode == 0, answer.stderr
        return json.loads(answer.stdout)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    mark = uuid.uuid4().hex
    done = subprocess.run(
        [*KUBEMEDIC, "demo", "--archive", str(db), "--port", "0"],
        capture_output=True, text=True, timeout=560, check=False, env=environment(mark),
    )  # fmt: skip
    return Played(done, db, mark)


def test_the_demo_ends_well_and_leaves_no_process_behind(played: Played) -> None:
    assert played.done.returncode == 0, played.done.stderr[-3000:]
    assert DONE in played.done.stdout
    assert marked(played.mark) == []
    assert "The dashboard: http://127.0.0.1:" in played.done.stdout


def test_act_1_tells_the_edit_the_storm_its_revert_and_the_guard_s_refusal(
    played: Played,
) -> None:
    act = played.act(1)
    # Who and when, from managedFields, while Argo CD says Synced.
    assert "the Application argocd/api-gateway is Synced" in act
    assert "spec.template.spec.nodeName = workers-2 is live-only" in act
    assert "managedFields name kubectl-edit at 00:04:00" in act
    assert "KubemedicBreakerStorm: Deployment gateway/api-gateway" in act
    assert "KubemedicBreakerRevertOutOfBand (done: removed /spec/template/spec/nodeName)" in act
    assert "the Deployment has 12/12 replicas available, no nodeName" in act
    assert 'admission webhook "guard.kubemedic.io" denied the request' in act
    assert "/storms?cluster=gitops-storm" in act
    assert "/incidents/inc-" in act


def test_the_archive_holds_the_breaker_s_one_revert(played: Played) -> None:
    with Archive.open(str(played.db), migrate=False) as archive:
        decisions = archive.breaker_decisions("gitops-storm")
    reverts = [d for d in decisions if d["action"] == "revert-out-of-band"]
    assert len(reverts) == 1 and reverts[0]["outcome"].startswith("done"), decisions
    assert any(d["reason"] == "KubemedicBreakerStorm" for d in decisions)


def test_act_2_tells_each_node_s_repair_and_why(played: Played) -> None:
    act = played.act(2)
    assert f"{KUBELET_STOPPED}: healthy; restart-kubelet repaired" in act
    assert f"{RUNTIME_HUNG}: healthy; restart-runtime repaired" in act
    assert f"{TRANSIENT}: healthy; cordon done, drain done, reboot done, uncordon done" in act
    assert "bootID " in act
    assert f"{PERSISTENT}: gone; cordon done, drain done, reboot failed, replace replaced" in act
    assert f"{FLAPPING}: quarantined" in act and "flapping: 3 Ready -> NotReady" in act
    assert "correlated failure: 4 of the 10 nodes of zone zone-c" in act
    assert "blocked by payments/ledger" in act
    assert f"/nodes/{FLAPPING}?cluster=node-repair" in act


def test_the_archive_holds_the_repair_ledger(played: Played) -> None:
    nodes = {n["name"]: n for n in played.kubemedic("nodes", "--cluster", "node-repair")}
    assert nodes[FLAPPING]["state"] == "quarantined"
    assert nodes[PERSISTENT]["state"] == "gone"
    assert [s["outcome"] for s in nodes[PERSISTENT]["repairs"]][-1] == "replaced"
    for name in (KUBELET_STOPPED, RUNTIME_HUNG):
        assert [s["outcome"] for s in nodes[name]["repairs"]] == ["repaired"], nodes[name]


def test_act_3_explains_the_hub_from_expired_events_and_sizes_it(played: Played) -> None:
    act = played.act(3)
    assert "none of the evictions" in act
    assert "JupyterHub hub evicted" in act
    assert "# JupyterHub hub evicted: memory overcommit on core pool" in act
    assert "what kubemedic recommends: a hub memory request of" in act
    assert "/nodes/core-2?cluster=jupyterhub" in act
    engine = sa.create_engine(f"sqlite:///{played.db}")
    try:
        with engine.connect() as connection:
            events = schema.events
            expired = connection.execute(
                sa.select(sa.func.count()).where(
                    events.c.cluster == "jupyterhub",
                    events.c.reason == "Evicted",
                    events.c.deleted_at.is_not(None),
                )
            ).scalar_one()
    finally:
        engine.dispose()
    assert expired >= 10  # every eviction Event, deleted by the API server, kept


def test_the_summary_names_each_incident(played: Played) -> None:
    out = played.done.stdout
    table = out[out.index("What happened, what kubemedic saw, what it did") :]
    flat = re.sub(r"[\s│]", "", table)  # the cells' text, wherever the table wrapped it
    for text in ("1.kubectleditpins", "2.sim-workers-zone-a", "3.JupyterHub'shub", "heldevery"):
        assert text in flat, table


def test_a_child_that_dies_is_named_and_the_demo_fails(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    with subprocess.Popen(
        [*KUBEMEDIC, "demo", "--archive", str(tmp_path / "demo.db"), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(mark),
    ) as demo:  # fmt: skip
        deadline = time.monotonic() + 120
        victim = None
        while victim is None and time.monotonic() < deadline and demo.poll() is None:
            victim = next((p for p in marked(mark) if " run --db " in p), None)
            time.sleep(0.2)
        assert victim is not None, "kubemedic run never started"
        os.kill(int(victim.split(":")[0]), signal.SIGKILL)
        _, err = demo.communicate(timeout=120)
    assert demo.returncode != 0
    assert "kubemedic run (act 1, cluster gitops-storm) exited unexpectedly" in err, err
    assert marked(mark) == []


def test_an_existing_archive_is_refused(tmp_path: Path) -> None:
    kept = tmp_path / "demo.db"
    kept.write_bytes(b"")
    result = CliRunner().invoke(app, ["demo", "--archive", str(kept)])
    assert result.exit_code == 2
    assert "exists" in result.output


def test_the_demo_can_scan_the_bundled_snapshots_instead() -> None:
    result = CliRunner().invoke(app, ["demo", "--snapshots"])
    assert result.exit_code == 0
    assert "failed-pod-storm" in result.output
    assert "0 findings: 0 critical, 0 warning, 0 info" in result.output


def test_on_a_terminal_the_snapshots_demo_names_each_step_and_quiet_silences_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = fake_terminal(monkeypatch)
    result = CliRunner().invoke(app, ["demo", "--snapshots"])
    assert result.exit_code == 0
    text = shown(buffer)
    for directory in bundled_snapshots():
        assert f"scanning the snapshot {directory.name}" in text
    buffer.truncate(0)
    quiet = CliRunner().invoke(app, ["-q", "demo", "--snapshots"])
    assert quiet.exit_code == 0
    assert buffer.getvalue() == ""
    assert quiet.stdout == result.stdout
