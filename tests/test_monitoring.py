"""deploy/monitoring: every PromQL expression of the PrometheusRule and the Grafana dashboard
parses (Prometheus' grammar, ``promql-parser``) and names only metrics that ``kubemedic run``,
``agent`` and ``guard`` export (collected from the registries the code builds); every alert has
a severity and a runbook; every exported metric is on the dashboard or in an alert, and in
docs/metrics.md; the kustomization renders both."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import promql_parser
import pytest
from prometheus_client import CollectorRegistry

from kubemedic.agent.metrics import AgentMetrics
from kubemedic.guard.policy import GuardSettings, StaticKnowledge
from kubemedic.guard.serving import Guard
from kubemedic.model import documents
from kubemedic.run.metrics import RunMetrics
from tests.paths import ROOT
from tests.sim.conftest import KUBECTL, needs_kubectl

MONITORING = ROOT / "deploy" / "monitoring"
RULE = MONITORING / "prometheusrule.yaml"
DASHBOARD = MONITORING / "dashboard.json"
DOCS = ROOT / "docs" / "metrics.md"

SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
}
"""The series names a family of each type is exposed as (prometheus_client's naming)."""


def registries() -> dict[str, CollectorRegistry]:
    guard = Guard(settings=GuardSettings(), knowledge=StaticKnowledge())
    return {
        "run": RunMetrics().registry,
        "agent": AgentMetrics().registry,
        "guard": guard.registry,
    }


def families() -> dict[str, str]:
    """Every exported family: name -> type."""
    found: dict[str, str] = {}
    for registry in registries().values():
        for family in registry.collect():
            found[family.name] = family.type
    return found


def exported() -> set[str]:
    """Every series name a scrape can show."""
    return {name + suffix for name, kind in families().items() for suffix in SUFFIXES[kind]}


def rule() -> dict[str, Any]:
    loaded = documents.load_yaml(RULE.read_text(), where=str(RULE))
    assert isinstance(loaded, dict)
    return loaded


def alerts() -> list[dict[str, Any]]:
    return [r for group in rule()["spec"]["groups"] for r in group["rules"]]


def panels(items: list[dict[str, Any]] | None = None) -> Iterator[dict[str, Any]]:
    for panel in items if items is not None else json.loads(DASHBOARD.read_text())["panels"]:
        yield panel
        yield from panels(panel.get("panels") or [])


def expressions() -> list[tuple[str, str]]:
    """(where, expression) of every alert and every dashboard query."""
    found = [(f"alert {a['alert']}", str(a["expr"])) for a in alerts()]
    for panel in panels():
        for target in panel.get("targets") or []:
            found.append((f"panel {panel['title']!r}", str(target["expr"])))
    return found


def metric_names(expression: str) -> set[str]:
    """The metric names an expression selects (by name or by ``__name__``)."""
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                names.add(node.name)
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__":
                    names.add(matcher.value)

    promql_parser.walk(promql_parser.parse(expression), visit)
    return names


def test_the_registries_export_kubemedic_names_with_help() -> None:
    for process, registry in registries().items():
        for family in registry.collect():
            assert family.name.startswith("kubemedic_"), (process, family.name)
            assert family.documentation.strip(), (process, family.name)
    assert "kubemedic_findings" in families()
    assert "kubemedic_agent_probes" in families()
    assert "kubemedic_guard_reviews" in families()


@pytest.mark.parametrize("where, expression", expressions(), ids=lambda v: str(v)[:60])
def test_every_expression_parses_and_names_exported_metrics(where: str, expression: str) -> None:
    names = metric_names(expression)  # raises ValueError on a syntax error
    assert names, f"{where}: selects no metric"
    unknown = names - exported()
    assert not unknown, f"{where}: {sorted(unknown)} are not exported by kubemedic"


def test_a_broken_expression_or_an_unknown_metric_is_caught() -> None:
    with pytest.raises(ValueError, match="parenthesis"):
        metric_names("sum(rate(kubemedic_scans_total[5m])")
    assert metric_names('absent({__name__="kubemedic_nope"})') == {"kubemedic_nope"}
    assert "kubemedic_nope" not in exported()
    # A counter is scraped with _total, never bare.
    assert "kubemedic_scans_total" in exported() and "kubemedic_scans" not in exported()


def test_every_alert_has_severity_summary_runbook_and_a_valid_for() -> None:
    document = rule()
    assert (document["apiVersion"], document["kind"]) == (
        "monitoring.coreos.com/v1",
        "PrometheusRule",
    )
    names = [a["alert"] for a in alerts()]
    assert len(names) == len(set(names)), "alert names repeat"
    for alert in alerts():
        assert alert["alert"].startswith("Kubemedic"), alert["alert"]
        assert alert["labels"]["severity"] in {"critical", "warning", "info"}, alert["alert"]
        annotations = alert["annotations"]
        assert annotations["summary"].strip(), alert["alert"]
        assert len(annotations["runbook"].split()) >= 25, f"{alert['alert']}: a runbook says more"
        assert "What to do" in annotations["runbook"], alert["alert"]
        promql_parser.parse_duration(alert["for"])


def test_the_alerts_cover_what_a_platform_team_is_paged_for() -> None:
    used = {name for a in alerts() for name in metric_names(str(a["expr"]))}
    for metric in (
        "kubemedic_repair_held_nodes",
        "kubemedic_nodes",
        "kubemedic_breaker_storms",
        "kubemedic_archive_lag_seconds",
        "kubemedic_watch_relists_total",
        "kubemedic_leader",
        "kubemedic_guard_reviews_total",
        "kubemedic_agent_heartbeat_timestamp_seconds",
    ):
        assert metric in used, metric


def test_every_exported_metric_is_shown_or_alerted_on_and_documented() -> None:
    used = {name for _, expression in expressions() for name in metric_names(expression)}
    docs = DOCS.read_text()
    for name, kind in families().items():
        series = {name + suffix for suffix in SUFFIXES[kind] if suffix != "_created"}
        assert series & used, f"{name} is neither on the dashboard nor in an alert"
        assert any(f"`{s}" in docs for s in series), f"{name} is not in docs/metrics.md"
    for alert in alerts():
        assert alert["alert"] in docs, f"{alert['alert']} is not in docs/metrics.md"


def test_the_dashboard_panels_are_well_formed() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "kubemedic"
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids))
    for panel in panels():
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["description"], panel
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


@needs_kubectl
def test_the_kustomization_renders_the_rule_and_the_dashboard() -> None:
    assert KUBECTL is not None
    rendered = subprocess.run(
        [KUBECTL, "kustomize", str(MONITORING)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    objects = {
        (o["kind"], o["metadata"]["name"]): o
        for o in documents.load_yaml_all(rendered, where="kubectl kustomize")
    }
    assert set(objects) == {("PrometheusRule", "kubemedic"), ("ConfigMap", "kubemedic-dashboard")}
    config_map = objects["ConfigMap", "kubemedic-dashboard"]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["kubemedic.json"]) == json.loads(DASHBOARD.read_text())
    assert objects["PrometheusRule", "kubemedic"]["spec"] == rule()["spec"]
