"""Scenario files: the bundled ones load, and every kind of mistake gets a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.loading import ScenarioError, parse, parse_duration

BUNDLED = (
    "core-node-prometheus",
    "gitops-nodename-storm",
    "healthy",
    "node-failures",
    "node-repair",
)

MINIMAL = """
pools:
  - {name: workers, count: 2, capacity: {cpu: "4", memory: 8Gi}}
"""


def problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as caught:
        parse(text, source="story.yaml")
    assert str(caught.value).startswith("story.yaml: ")
    return caught.value.problems


def only_problem(text: str) -> tuple[str, str]:
    found = problems(text)
    assert len(found) == 1, found
    return found[0]


def test_bundled_scenarios_are_listed_with_their_descriptions() -> None:
    infos = scenarios.available()
    assert [info.name for info in infos] == list(BUNDLED)
    assert all(info.description and info.duration.total_seconds() > 0 for info in infos)
    storm = next(info for info in infos if info.name == "gitops-nodename-storm")
    assert storm.title.startswith("kubectl edit pins an Argo CD managed Deployment")


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_scenario_loads_by_name(name: str) -> None:
    scenario = scenarios.load(name)
    assert scenario.name == name
    assert scenario.pools and scenario.timeline


def test_scenario_loads_from_a_path_and_takes_its_name_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "my-story.yaml"
    path.write_text(MINIMAL)
    scenario = scenarios.load(path)
    assert scenario.name == "my-story"
    assert scenario.source == str(path)
    assert scenario.pools[0].prefix == "workers-"


def test_unknown_scenario_name_lists_the_bundled_ones() -> None:
    with pytest.raises(ScenarioError, match=r"no such scenario .*gitops-nodename-storm"):
        scenarios.load("no-such-story")


def test_malformed_yaml_names_the_line() -> None:
    where, what = only_problem("pools: [\n  {name: a\n")
    assert where == "line 3"
    assert what.startswith("invalid YAML")


def test_a_scenario_must_be_a_mapping() -> None:
    assert only_problem("- just\n- a list\n")[1].startswith("a scenario is a mapping")


def test_bad_duration_names_the_field_path() -> None:
    text = MINIMAL + "timeline:\n  - {at: 1m, action: mark}\n  - {at: 5x, action: mark}\n"
    with pytest.raises(ScenarioError) as caught:
        parse(text, source="story.yaml")
    assert 'story.yaml: timeline[1].at: "5x" is not a duration' in str(caught.value)


def test_unknown_key_is_an_error_with_a_suggestion() -> None:
    text = MINIMAL + (
        "timeline:\n  - at: 1m\n    action: patch\n    target: {kind: Deployment, name: x}\n"
        "    patch: {}\n    patchtype: merge\n"
    )
    assert only_problem(text) == (
        "timeline[0].patchtype",
        'unknown key (did you mean "patchType"?)',
    )


def test_unknown_action_kind_lists_the_known_ones() -> None:
    where, what = only_problem(MINIMAL + "timeline:\n  - {at: 1m, action: explode}\n")
    assert where == "timeline[0].action"
    assert what.startswith('unknown action "explode" (one of: apply, create, patch, edit')


def test_missing_action_and_missing_keys_are_named() -> None:
    found = problems(MINIMAL + "timeline:\n  - {at: 1m}\n  - {action: mark}\n")
    assert found == [("timeline[0]", 'missing "action"'), ("timeline[1].at", "required")]


def test_unknown_fault_lists_the_faults() -> None:
    text = MINIMAL + "timeline:\n  - {at: 1m, action: fault, fault: melt, nodes: {all: true}}\n"
    where, what = only_problem(text)
    assert where == "timeline[0].fault"
    assert what.startswith('"melt" is not one of: kubelet-stopped, kubelet-hung')


def test_invalid_quantity_in_a_pool_is_named() -> None:
    text = "pools:\n  - {name: a, count: 1, capacity: {cpu: 4, memory: 8Gix}}\n"
    assert only_problem(text) == (
        "pools[0].capacity.memory",
        '"8Gix" is not a quantity (e.g. 800Mi, 100m, 8)',
    )


def test_pool_capacity_needs_cpu_and_memory() -> None:
    text = "pools:\n  - {name: a, count: 1, capacity: {pods: 10}}\n"
    assert only_problem(text) == ("pools[0].capacity", "capacity needs cpu and memory")


def test_pool_agent_settings_are_read_and_checked() -> None:
    agent = "{selfRepair: true, cooldown: 5m, maxRestarts: 2, heartbeat: 1m}"
    text = f"pools:\n  - {{name: a, count: 1, capacity: {{cpu: 4, memory: 8Gi}}, agent: {agent}}}\n"
    (pool,) = parse(text, source="story.yaml").pools
    assert pool.agent is not None
    assert (pool.agent.enabled, pool.agent.self_repair, pool.agent.heartbeat) == (True, True, 60)
    assert (pool.agent.grace, pool.agent.cooldown, pool.agent.max_restarts) == (60.0, 300.0, 2)
    bad = text.replace("selfRepair: true", "selfRepair: true, enabled: false")
    assert only_problem(bad) == ("pools[0].agent.selfRepair", "needs the agent enabled")
    where, what = only_problem(text.replace("maxRestarts", "maxRestart"))
    assert where == "pools[0].agent.maxRestart"
    assert what.startswith("unknown key")
    where, _ = only_problem(text.replace("maxRestarts: 2", "maxRestarts: 0"))
    assert where == "pools[0].agent.maxRestarts"
    where, _ = only_problem(text.replace("heartbeat: 1m", "heartbeat: 2h"))
    assert where == "pools[0].agent.heartbeat"


def test_invalid_quantity_in_a_container_is_named_by_its_path() -> None:
    text = (
        MINIMAL
        + """
objects:
  - manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          template:
            spec:
              containers: [{name: web, resources: {requests: {memory: 12QQ}}}]
"""
    )
    where, what = only_problem(text)
    assert where == (
        "objects[0].manifests[0].spec.template.spec.containers[0].resources.requests.memory"
    )
    assert what.startswith('"12QQ" is not a quantity')


def test_usage_annotations_are_checked() -> None:
    text = (
        MINIMAL
        + """
objects:
  - manifests:
      - apiVersion: v1
        kind: Pod
        metadata:
          name: p
          annotations:
            usage.sim.kubemedic.io/a: '{"memory": "1Gx"}'
            usage.sim.kubemedic.io/b: '{"leak": "1Gi"}'
            usage.sim.kubemedic.io/c: 'not json'
"""
    )
    found = problems(text)
    assert [where.rsplit("/", 1)[-1] for where, _ in found] == ['a"]', 'b"]', 'c"]']
    assert found[0][1].startswith('memory: "1Gx" is not a quantity')
    assert found[1][1].startswith("unknown usage key 'leak'")
    assert found[2][1].startswith("a usage annotation is a JSON object")


def test_kinds_the_simulator_does_not_serve_are_rejected() -> None:
    text = (
        MINIMAL
        + "objects:\n  - manifests: [{apiVersion: networking.k8s.io/v1, kind: Ingress, "
        + "metadata: {name: s}}]\n"
    )
    assert only_problem(text) == (
        "objects[0].manifests[0].kind",
        "the simulator does not serve networking.k8s.io/v1 Ingress",
    )


def test_actions_must_name_existing_pools() -> None:
    text = MINIMAL + (
        "timeline:\n  - {at: 1m, action: scale-pool, pool: gpu, add: 3}\n"
        "  - {at: 1m, action: reboot, nodes: {pool: gpu}}\n"
    )
    assert problems(text) == [
        ("timeline[0].pool", "no pool named 'gpu' (pools: workers)"),
        ("timeline[1].nodes.pool", "no pool named 'gpu' (pools: workers)"),
    ]


def test_node_selection_must_select_something() -> None:
    text = MINIMAL + "timeline:\n  - {at: 1m, action: reboot, nodes: {fraction: 0.5}}\n"
    assert only_problem(text)[1] == "select nodes by names, pool, zone, selector or all"


def test_scale_pool_needs_replicas_or_add() -> None:
    text = MINIMAL + "timeline:\n  - {at: 1m, action: scale-pool, pool: workers}\n"
    assert only_problem(text) == ("timeline[0]", "scale-pool needs one of replicas or add")


def test_several_problems_are_all_listed() -> None:
    text = (
        "duration: soon\npools:\n  - {name: Bad_Name, count: -1, capacity: {cpu: 1, memory: 1Gi}}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        parse(text, source="story.yaml")
    message = str(caught.value)
    assert message.startswith("story.yaml: 3 problems: ")
    assert "\n" not in message
    assert 'duration: "soon" is not a duration' in message
    assert "; pools[0].name: " in message
    assert "; pools[0].count: expected a whole number from 0 to 100,000, got -1" in message


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("1h30m", 5400),
        ("1.5m", 90),
        ("500ms", 0.5),
        (42, 42),
        ("2d", 172800),
    ],
)
def test_durations_read_like_go_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5x", "", "m", "-1s", True, "1h 30m"])
def test_bad_durations_are_rejected(text: object) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


def test_duration_ranges_are_ordered() -> None:
    text = "pools:\n  - {name: a, count: 1, capacity: {cpu: 1, memory: 1Gi}, bootTime: [3m, 1m]}\n"
    assert only_problem(text) == (
        "pools[0].bootTime",
        'a duration range must not decrease: ["3m", "1m"]',
    )


def test_write_actions_default_to_the_real_field_managers() -> None:
    text = (
        MINIMAL
        + """
timeline:
  - {at: 1m, action: edit, target: {kind: Deployment, name: web}, patch: {}}
  - {at: 1m, action: patch, target: {kind: Deployment, name: web}, patch: {}}
  - {at: 1m, action: apply, manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}]}
  - {at: 1m, action: create, manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: d}}]}
  - {at: 1m, action: scale-pool, pool: workers, add: 1}
"""
    )
    managers = [getattr(action, "manager", None) for action in parse(text).timeline]
    assert managers == [
        "kubectl-edit",
        "kubectl-patch",
        "kubectl",
        "kubectl-create",
        "cluster-autoscaler",
    ]
