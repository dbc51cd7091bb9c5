"""The storms page lists the live edits of GitOps-managed objects: the ``out-of-band-edit``
findings of incident 1's snapshot (scanned and recorded as the daemon records a scan), with who
made each edit, when, and which fields."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from fastapi.testclient import TestClient

from kubemedic import checks
from kubemedic.model.view import ClusterView
from kubemedic.snapshot.loading import load_snapshot
from kubemedic.store import episodes
from kubemedic.store.db import Archive
from kubemedic.web.app import create_app


def test_the_storms_page_names_who_edited_what_and_when(tmp_path: Path) -> None:
    snapshot = Path(str(resources.files("kubemedic") / "data" / "snapshots" / "1-live-edit-storm"))
    found = checks.run_checks(ClusterView.build(load_snapshot(snapshot).bodies))
    edits = [f for f in found if f.check == "out-of-band-edit"]
    assert edits, "incident 1's snapshot holds a hand edit"
    with Archive.open(str(tmp_path / "kubemedic.db")) as archive:
        with archive.transaction() as connection:
            episodes.record_findings(connection, "prod", found, datetime(2024, 5, 1, tzinfo=UTC))
        page = TestClient(create_app(archive)).get("/storms")
    assert page.status_code == 200
    section = page.text.split('id="live-edits"')[1]
    for edit in edits:
        assert edit.object.name in section
        assert str(edit.evidence["manager"]) in section
        for path in edit.evidence["fieldPaths"]:
            assert f"<code>{path}</code>" in section
    assert "spec.template.spec.nodeName" in section and "kubectl-edit" in section
