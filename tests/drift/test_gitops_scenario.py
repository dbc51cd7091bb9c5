"""Acceptance: ``kubemedic drift`` against the storm scenario's own Git repository.

``sim run gitops-nodename-storm --serve --git-out DIR`` runs in its own process, paced; its Argo
CD applier syncs the Application from the repository it writes (the first commit, then the push
at 5m that restores ``replicas``). A commit the test makes to that repository meanwhile is picked
up at the applier's next reconcile. ``kubemedic drift`` without ``--git`` then finds the
Application in the cluster, reads the repository at its synced revision and reports the
``kubectl edit`` that added ``spec.template.spec.nodeName`` (live-only, manager
``kubectl-edit``, at the time of the edit), and not ``replicas``, which the sync restored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.drift.sources.conftest import GIT_ENV
from tests.inprocess import kubemedic, one_error_line
from tests.sim.conftest import KUBECTL, needs_kubectl

pytestmark = needs_kubectl

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]
RECONCILE = timedelta(minutes=3)  # the scenario's syncInterval, Argo CD's default


class Served:
    def __init__(self, kubeconfig: Path, repository: Path, proc: subprocess.Popen[str]) -> None:
        self.kubeconfig = kubeconfig
        self.repository = repository
        self.proc = proc

    def application(self) -> dict[str, Any]:
        assert KUBECTL is not None
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), "get", "applications.argoproj.io",
             "-n", "argocd", "api-gateway", "-o", "json"],
            capture_output=True, text=True, check=True, timeout=30,
        )  # fmt: skip
        body: dict[str, Any] = json.loads(done.stdout)
        return body

    def synced(self) -> str | None:
        return (self.application().get("status") or {}).get("sync", {}).get("revision")

    def wait_synced(self, revision: str, timeout: float = 40) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "sim run exited early"
            app = self.application()
            if (app.get("status") or {}).get("sync", {}).get("revision") == revision:
                return app
            time.sleep(0.2)
        raise AssertionError(f"the Application never synced {revision}")

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV, "HOME": str(self.repository.parent)}
        done = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", *args],
            cwd=self.repository, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    kubeconfig, repository = tmp_path / "kubeconfig", tmp_path / "gateway-ops"
    with subprocess.Popen(
        [*KUBEMEDIC, "sim", "run", "gitops-nodename-storm", "--serve", "--speed", "30",
         "--until", "15m", "--hold", "--git-out", str(repository),
         "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not kubeconfig.exists():
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "no kubeconfig written"
                time.sleep(0.1)
            yield Served(kubeconfig, repository, proc)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_drift_against_the_scenarios_repository_finds_the_edit_not_the_restored_replicas(
    capsys: pytest.CaptureFixture[str], served: Served
) -> None:
    # The repository's history is the story's: the first commit, then the push at 5m.
    log = served.git("log", "--format=%H %an %s", "main").splitlines()
    while len(log) < 2:
        time.sleep(0.2)
        log = served.git("log", "--format=%H %an %s", "main").splitlines()
    pushed, first = log[0].split()[0], log[-1].split()[0]
    assert [line.split(" ", 1)[1] for line in log] == [
        "Ken Dev api-gateway: route /v2 to the new backend",
        "Platform Team api-gateway: 12 replicas of nginx 1.27.2 behind a NodePort",
    ]
    assert first != pushed
    app = served.wait_synced(pushed)
    assert app["spec"]["source"]["repoURL"] == str(served.repository.resolve())
    assert app["status"]["sync"]["status"] == "Synced"  # Argo CD's blind spot: nodeName unseen

    # A commit made while the scenario runs is synced at the next reconcile.
    served.git("checkout", "-q", "main")
    routes = served.repository / "apps/api-gateway/routes.yaml"
    body = yaml.safe_load(routes.read_text())
    body["data"]["routes.conf"] += "location /v3/ { proxy_pass http://backend-v3; }\n"
    routes.write_text(yaml.safe_dump(body))
    served.git("commit", "-q", "-am", "api-gateway: route /v3")
    ours = served.git("rev-parse", "HEAD")
    app = served.wait_synced(ours)

    code, out, err = kubemedic(
        capsys, "drift", "--kubeconfig", str(served.kubeconfig), "-o", "json"
    )
    assert code == 1, err
    report = json.loads(out)
    (deployment,) = [d for d in report["drift"] if d["object"]["kind"] == "Deployment"]
    assert deployment["object"]["name"] == "api-gateway"
    fields = {f["path"]: f for f in deployment["drifts"]}
    assert "spec.replicas" not in fields  # restored by the sync at 5m
    pinned = fields["spec.template.spec.nodeName"]
    assert (pinned["kind"], pinned["live"], pinned["manager"]) == (
        "live-only",
        "workers-2",
        "kubectl-edit",
    )
    edited = _time(app["metadata"]["creationTimestamp"]) + timedelta(minutes=4)
    assert timedelta(0) <= _time(pinned["time"]) - edited <= RECONCILE
    assert {"op": "remove", "path": "/spec/template/spec/nodeName"} in deployment["patch"]
    # The ConfigMap is compared at the synced revision (the test's commit): no drift.
    assert all(d["object"]["kind"] != "ConfigMap" for d in report["drift"]), json.dumps(
        report["drift"]
    )
    assert report["compared"] == 4


def test_a_fast_run_writes_the_storys_repository(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_dir = tmp_path / "ops"
    code, out, err = kubemedic(
        capsys, "sim", "run", "gitops-nodename-storm", "--until", "6m", "--git-out", str(out_dir)
    )
    assert code == 0, err
    assert "gitops: Application argocd/api-gateway synced" in out
    log = subprocess.run(
        ["git", "-C", str(out_dir), "log", "--format=%s"], capture_output=True, text=True,
        check=True,
    ).stdout.splitlines()  # fmt: skip
    assert len(log) == 2


@pytest.mark.parametrize(
    ("scenario", "flags", "message"),
    [
        ("healthy", ("--git-out", "{tmp}/ops"), "--git-out: the scenario healthy has no gitops"),
        ("gitops-nodename-storm", ("--git-out", "{tmp}"), "not a new or empty directory"),
        ("gitops-nodename-storm", ("--git", "{tmp}"), "not a Git repository"),
        (
            "gitops-nodename-storm",
            ("--git", "{tmp}", "--git-out", "{tmp}/ops"),
            "--git-out and --git: give one",
        ),
    ],
)
def test_bad_git_flags_end_in_one_line_before_the_run(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    scenario: str,
    flags: tuple[str, ...],
    message: str,
) -> None:
    (tmp_path / "something").write_text("")
    args = [flag.format(tmp=tmp_path) for flag in flags]
    code, _, err = kubemedic(capsys, "sim", "run", scenario, *args)
    assert code == 2 and message in one_error_line(err)
