"""Argo CD's own diff fixtures (gitops-engine ``pkg/diff/testdata``) as drift cases.

Each case names the files of ``../shared/peer/gitops-engine-diff/`` it reads (in place), what
Argo CD's ``diff_test.go`` asserts (``Modified`` true or false), and how kubemedic is run: the
manifest with emulated server defaults, or, for Argo CD's server-side diff cases, the server's
dry-run answer (``predicted-live``) as the desired state. :func:`agreement_table` is the table of
docs/drift.md.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubemedic.drift import DriftRules, ObjectDrift, diff
from kubemedic.model.documents import load_json, load_yaml
from tests.paths import PEER

FIXTURES = PEER / "gitops-engine-diff"
IDLE = "spec.template.spec.containers[name=idle]"
#: Fixtures read by no case, and why.
UNUSED = {
    "smd-deploy2-predicted-live.json": "inconsistent with its own managedFields (see the case)",
}


def fixture(name: str) -> dict[str, Any]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    loaded = load_json(text, where=name) if name.endswith(".json") else load_yaml(text, where=name)
    assert isinstance(loaded, dict)
    return loaded


def _es_labels(config: dict[str, Any]) -> None:
    labels = config["metadata"]["labels"]
    labels["foo"] = "bar"
    labels["chart"] = "elasticsearch-1.7.1"
    del labels["release"]


def _redacted(config: dict[str, Any], live: dict[str, Any]) -> None:
    config["data"].update({"wordpress-password": "++++++++", "smtp-password": "++++++++"})
    live["data"].update({"wordpress-password": "++++++++++++", "smtp-password": "++++++++++++"})


@dataclass(frozen=True)
class Case:
    test: str
    config: str
    live: str
    argocd_modified: bool
    predicted: str | None = None
    rules: DriftRules = field(default_factory=DriftRules)
    edit_config: Callable[[dict[str, Any]], None] | None = None
    edit_both: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
    note: str = ""

    def run(self) -> ObjectDrift:
        config, live = fixture(self.config), fixture(self.live)
        if self.edit_config is not None:
            self.edit_config(config)
        if self.edit_both is not None:
            self.edit_both(config, live)
        dry_run = fixture(self.predicted) if self.predicted else None
        return diff(copy.deepcopy(config), live, rules=self.rules, dry_run=dry_run)

    @property
    def files(self) -> str:
        names = [self.config, self.live, *([self.predicted] if self.predicted else [])]
        return ", ".join(f"`{n}`" for n in names)


CASES = [
    Case("TestThreeWayDiffExample3", "deployment-config.json", "deployment-live.json", False),
    Case("TestThreeWayDiffExample2", "elasticsearch-config.json", "elasticsearch-live.json", False),
    Case(
        "TestThreeWayDiffExample2WithDifference",
        "elasticsearch-config.json",
        "elasticsearch-live.json",
        True,
        edit_config=_es_labels,
        note="label added, changed and removed in Git",
    ),
    Case(
        "TestThreeWayDiffExample4",
        "mutatingwebhookconfig-config.json",
        "mutatingwebhookconfig-live.json",
        False,
    ),
    Case(
        "TestThreeWayDiffExplicitNamespace",
        "spinnaker-sa-config.json",
        "spinnaker-sa-live.json",
        False,
    ),
    Case(
        "TestDiffOptionIgnoreAggregateRoles (true)",
        "aggr-clusterrole-config.json",
        "aggr-clusterrole-live.json",
        False,
    ),
    Case(
        "TestDiffOptionIgnoreAggregateRoles (false)",
        "aggr-clusterrole-config.json",
        "aggr-clusterrole-live.json",
        True,
        rules=DriftRules(ignore_aggregated_roles=False),
    ),
    Case("TestUnsortedEndpoints", "endpoints-config.json", "endpoints-live.json", False),
    Case(
        "TestNullRoleRule",
        "grafana-clusterrole-config.json",
        "grafana-clusterrole-live.json",
        False,
    ),
    Case("TestNullCreationTimestamp", "sealedsecret-config.json", "sealedsecret-live.json", False),
    Case("TestNullSecretData", "wordpress-config.json", "wordpress-live.json", False),
    Case(
        "TestRedactedSecretData",
        "wordpress-config.json",
        "wordpress-live.json",
        True,
        edit_both=_redacted,
        note="redacted values of different lengths",
    ),
    Case(
        "SMD: will apply default values", "smd-service-config.yaml", "smd-service-live.yaml", True
    ),
    Case(
        "SMD: will remove entries in list",
        "smd-service-config-2-ports.yaml",
        "smd-service-live.yaml",
        True,
    ),
    Case(
        "SMD: will remove previously added fields not present in desired state",
        "smd-service-config.yaml",
        "smd-service-live-with-type.yaml",
        True,
    ),
    Case(
        "SMD: will apply service with multiple ports",
        "smd-service-config-ports.yaml",
        "smd-service-live.yaml",
        True,
    ),
    Case(
        "SMD: will apply deployment defaults correctly",
        "smd-deploy-config.yaml",
        "smd-deploy-live.yaml",
        False,
    ),
    Case(
        "SSD: will ignore modifications done by mutation webhook by default",
        "ssd-service-config.yaml",
        "ssd-service-live.yaml",
        True,
        predicted="ssd-service-predicted-live.json",
    ),
    Case(
        "SSD: will test removing some field with undoing changes done by webhook",
        "smd-deploy2-config.yaml",
        "smd-deploy2-live.yaml",
        True,
        note="manifest compared: the recorded predicted-live holds port 8081/UDP that its own "
        "Apply entry does not own, so it is not a server's answer",
    ),
    Case(
        "SSD: will include nested fields like ports and env",
        "ssd-deploy-nested-config.yaml",
        "ssd-deploy-nested-live.yaml",
        True,
        predicted="ssd-deploy-nested-predicted-live.json",
    ),
    Case(
        "SSD: will add an extra container using kubectl apply and include mutation webhook",
        "ssd-deploy-with-manual-apply-config.yaml",
        "ssd-deploy-with-manual-apply-live.yaml",
        True,
        predicted="ssd-deploy-with-manual-apply-predicted-live.json",
    ),
    Case(
        "SSD: will reflect deletion of labels in predicted live",
        "ssd-svc-no-label-config.yaml",
        "ssd-svc-label-live.yaml",
        True,
        predicted="ssd-svc-no-label-predicted-live.json",
    ),
    Case(
        "SSD: will preserve composite key fields during diff",
        "ssd-deploy-composite-key-config.yaml",
        "ssd-deploy-composite-key-live.yaml",
        True,
        predicted="ssd-deploy-composite-key-predicted-live.json",
    ),
]


def summary(drift: ObjectDrift) -> str:
    if not drift.drifts:
        return "none"
    parts = []
    for found in drift.drifts:
        owner = found.owner
        by = f" ({owner.manager})" if owner is not None else ""
        parts.append(f"{found.kind} `{found.path}`{by}")
    return "; ".join(parts)


def verdict(case: Case, drift: ObjectDrift) -> str:
    if case.argocd_modified != bool(drift.drifts):
        return "**no**"
    extra = [d for d in drift.drifts if str(d.path) == IDLE]
    if extra:
        return "yes; kubemedic also reports the live-only `idle` container, which Argo CD misses"
    return "yes"


def agreement_table() -> str:
    lines = [
        "| Argo CD test | files | Argo CD | kubemedic | agree |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        drift = case.run()
        argocd = "difference" if case.argocd_modified else "none"
        test = case.test + (f" ({case.note})" if case.note else "")
        row = [test, case.files, argocd, summary(drift), verdict(case, drift)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - prints the table for docs/drift.md
    print(agreement_table(), end="")
    print(json.dumps(len(CASES)))
