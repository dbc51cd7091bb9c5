"""A scenario played twice with the same seed gives the same cluster, object for object."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

from kubemedic.sim.apiserver import snapshotting
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios import timeline

_DIGEST = """
import hashlib, orjson, sys
from datetime import timedelta
from kubemedic.sim.apiserver import snapshot
from kubemedic.sim.scenarios import ScenarioRun, load
run = ScenarioRun(load("gitops-nodename-storm"), until=timedelta(minutes=6))
run.run()
body = orjson.dumps(snapshot(run.sim.server), option=orjson.OPT_SORT_KEYS)
print(hashlib.sha256(body).hexdigest(), run.sim.count("pods"))
"""


def _state(seed: int | None = None) -> bytes:
    import orjson

    run = timeline.ScenarioRun(
        scenarios.load("gitops-nodename-storm"), seed=seed, until=timedelta(minutes=6)
    )
    run.run()
    return orjson.dumps(snapshotting.snapshot(run.sim.server), option=orjson.OPT_SORT_KEYS)


def test_the_same_seed_replays_the_same_cluster() -> None:
    assert _state() == _state()


def test_another_seed_gives_another_cluster() -> None:
    assert _state(seed=1) != _state(seed=2)


def test_runs_repeat_across_processes_and_hash_seeds() -> None:
    digests = set()
    for hash_seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", _DIGEST],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env={"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin"},
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1
