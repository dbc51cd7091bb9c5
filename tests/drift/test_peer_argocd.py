"""Peer suite: kubemedic's drift engine on Argo CD's own diff fixtures (gitops-engine).

Where Argo CD reports a difference kubemedic reports one, where Argo CD reports none kubemedic
reports none, except the field Argo CD cannot see: the container ``idle`` that a person added
with ``kubectl apply`` (manager ``kubectl-client-side-apply``) and that Git does not have. The
agreement table in docs/drift.md is regenerated here and must match.
"""

from __future__ import annotations

import pytest

from tests.drift.peer import CASES, FIXTURES, IDLE, UNUSED, Case, agreement_table
from tests.paths import ROOT

pytestmark = pytest.mark.skipif(
    not (FIXTURES / "CASES.md").is_file(), reason=f"Argo CD's diff fixtures not found at {FIXTURES}"
)

BEGIN = "<!-- peer-table:begin -->\n"
END = "<!-- peer-table:end -->"


@pytest.mark.parametrize("case", CASES, ids=[c.test for c in CASES])
def test_agrees_with_argocd(case: Case) -> None:
    drift = case.run()
    assert bool(drift.drifts) == case.argocd_modified, [str(d.path) for d in drift.drifts]


def test_reports_the_container_added_by_hand_that_argocd_misses() -> None:
    case = next(c for c in CASES if c.config.startswith("ssd-deploy-with-manual-apply"))
    drift = case.run()
    idle = next(d for d in drift.drifts if str(d.path) == IDLE)
    assert idle.kind == "live-only"
    assert idle.owner is not None
    assert (idle.owner.manager, idle.owner.operation) == ("kubectl-client-side-apply", "Update")
    assert idle.owner.time == "2025-02-25T01:29:34Z"
    assert idle.live["image"] == "spurin/idle:latest"
    ops = drift.patch
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "46835"}
    assert {"op": "remove", "path": "/spec/template/spec/containers/1"} in ops


def test_every_case_file_of_cases_md_is_used() -> None:
    used = {name for c in CASES for name in (c.config, c.live, c.predicted) if name}
    on_disk = {p.name for p in FIXTURES.iterdir()}
    fixtures = {n for n in on_disk if n.endswith((".json", ".yaml"))}
    assert fixtures - used == set(UNUSED)


def test_the_table_in_the_docs_is_current() -> None:
    text = (ROOT / "docs" / "drift.md").read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert table == agreement_table()
    assert "**no**" not in table
