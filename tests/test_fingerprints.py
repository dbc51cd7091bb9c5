"""Cause fingerprints are stable: across runs, and across snapshots of the same cause."""

import copy
import random
from pathlib import Path

from kubemedic import checks
from kubemedic.demo import bundled_snapshots
from kubemedic.model.view import ClusterView
from kubemedic.snapshot.loading import load_snapshot


def causes(bodies: list[dict]) -> set[tuple[str, str]]:
    return {(f.check, f.cause) for f in checks.run_checks(ClusterView.build(bodies))}


def rehash_pods(bodies: list[dict], seed: int) -> list[dict]:
    """The same cluster after pods were recreated: new pod names, uids and order."""
    rng = random.Random(seed)
    renamed = copy.deepcopy(bodies)
    names: dict[tuple[str, str], str] = {}
    for body in renamed:
        if body.get("kind") != "Pod":
            continue
        meta = body["metadata"]
        old = meta["name"]
        stem, sep, _suffix = old.rpartition("-")
        new = (
            f"{stem}{sep}{''.join(rng.choices('bcdfghjklmnpqrstvwxz2456789', k=5))}" if sep else old
        )
        names[(meta.get("namespace", ""), old)] = new
        meta["name"] = new
        meta["uid"] = f"{rng.getrandbits(128):032x}"
    for body in renamed:
        involved = body.get("involvedObject")
        if body.get("kind") == "Event" and involved and involved.get("kind") == "Pod":
            key = (involved.get("namespace", ""), involved["name"])
            involved["name"] = names.get(key, involved["name"])
            involved.pop("uid", None)
        if body.get("kind") == "PodMetrics":
            meta = body["metadata"]
            meta["name"] = names.get((meta.get("namespace", ""), meta["name"]), meta["name"])
    rng.shuffle(renamed)
    return renamed


def test_every_bundled_incident_has_the_same_causes_after_its_pods_are_recreated() -> None:
    for directory in bundled_snapshots():
        bodies = load_snapshot(Path(directory)).bodies
        original = causes(bodies)
        assert causes(bodies) == original  # the same run twice
        assert causes(rehash_pods(bodies, seed=7)) == original, directory.name
