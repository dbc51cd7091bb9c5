"""The breaker's controller over the archive: a restarted (or newly elected) replica resumes the
storms the archive holds and announces none of them again; one with an empty archive would."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.breaker import controller
from kubemedic.breaker import settings as breaker_settings
from kubemedic.breaker.controller import Round
from kubemedic.kube.api import Api
from kubemedic.model.objects import parse_time
from kubemedic.store.db import Archive
from kubemedic.testing.incidents import live_edit_storm
from tests.repair.served import Served, serve

STORM = "KubemedicBreakerStorm"


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.at = now

    def now(self) -> datetime:
        return self.at

    async def sleep(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)


def _cluster() -> tuple[list[dict[str, Any]], datetime, set[str]]:
    """Incident 1's cluster (a Deployment pinned by kubectl edit, its Failed pods), the time
    just after its last rejected pod, and the namespaces of its workloads."""
    bodies = [b for b in live_edit_storm() if b["kind"] != "Event"]
    failed = [
        parse_time(b["metadata"]["creationTimestamp"])
        for b in bodies
        if b["kind"] == "Pod" and b.get("status", {}).get("phase") == "Failed"
    ]
    last = max(t for t in failed if t is not None)
    namespaces = {str(b["metadata"].get("namespace")) for b in bodies if b["kind"] == "Pod"}
    return bodies, last + timedelta(seconds=5), namespaces


def _round(served: Served, archive: Archive, bodies: list[dict[str, Any]], at: datetime) -> Round:
    run = breaker_settings.read({"actions": ["alert"], "dryRun": False}, source="test")

    async def scenario(api: Api) -> Round:
        breaker = controller.build(
            api=api,
            archive=archive,
            run=run,
            cluster="prod",
            clock=_Clock(at),
            identity="kubemedic-0",
            bodies=lambda: bodies,
        )
        await breaker.load()
        return await breaker.round()

    return served.run(scenario)


def _storm_events(served: Served, namespaces: set[str]) -> list[dict[str, Any]]:
    return [
        e
        for ns in sorted(namespaces)
        for e in served.get(f"/api/v1/namespaces/{ns}/events")["items"]
        if e["reason"] == STORM
    ]


def test_a_restarted_breaker_resumes_its_storms_without_announcing_them_again(
    served: Served, tmp_path: Path
) -> None:
    bodies, after, namespaces = _cluster()
    for ns in namespaces - {"default", "kube-system"}:
        served.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            path="/api/v1/namespaces",
            manager="kubectl-create",
        )
    with Archive.open(f"sqlite:///{tmp_path}/archive.db") as archive:
        first = _round(served, archive, bodies, after)
        storms = [d for d in first.plan.decisions if d.reason == STORM]
        assert storms, [d.reason for d in first.plan.decisions]
        owners = {d.owner for d in storms}
        # A new process over the same archive, ten seconds later: the same storms, in progress.
        again = _round(served, archive, bodies, after + timedelta(seconds=10))
        assert not [d for d in again.plan.decisions if d.reason == STORM]
        assert {s.owner for s in again.plan.state.storms.values()} >= owners
        decided = archive.breaker_decisions("prod")
        assert len([d for d in decided if d["reason"] == STORM]) == len(storms)
    events = _storm_events(served, namespaces)
    assert len(events) == len(owners) and all(e["count"] == 1 for e in events), events
    # Without the archive's memory the same round announces them again.
    with Archive.open(f"sqlite:///{tmp_path}/empty.db") as empty:
        fresh = _round(served, empty, bodies, after + timedelta(seconds=10))
    assert {d.owner for d in fresh.plan.decisions if d.reason == STORM} == owners
