"""Containers of a pod by name: app containers and init containers (native sidecars) alike."""

from __future__ import annotations

from typing import Any

import pytest

from kubemedic.model import containers
from tests.factories import container, pod


def sidecar_pod() -> dict[str, Any]:
    body = pod(
        "web-1",
        containers=[container("app", requests={"cpu": "500m"})],
        init_containers=[
            container("setup"),
            container("proxy", requests={"cpu": "50m"}, restart_policy="Always"),
        ],
    )
    body["status"]["initContainerStatuses"] = [
        {"name": "setup", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
        {"name": "proxy", "restartCount": 4, "state": {"running": {}}},
    ]
    body["status"]["containerStatuses"] = [{"name": "app", "restartCount": 1}]
    return body


def test_app_and_init_containers_are_found_by_name() -> None:
    body = sidecar_pod()
    assert containers.spec(body, "app") == body["spec"]["containers"][0]
    assert containers.spec(body, "proxy") == body["spec"]["initContainers"][1]
    assert containers.status(body, "app") == {"name": "app", "restartCount": 1}
    assert containers.restarts(containers.status(body, "proxy")) == 4


def test_unknown_names_and_pods_without_status_find_nothing() -> None:
    body = sidecar_pod()
    assert containers.spec(body, "debugger") is None
    assert containers.status(body, "debugger") is None
    del body["status"]
    assert containers.status(body, "app") is None
    assert containers.restarts(containers.status(body, "app")) == 0


@pytest.mark.parametrize("status", [None, {}, {"restartCount": "3"}, {"restartCount": True}, []])
def test_missing_or_odd_restart_counts_read_as_zero(status: Any) -> None:
    assert containers.restarts(status) == 0


def test_malformed_entries_are_skipped() -> None:
    body = pod("odd", containers=[container("main")])
    body["spec"]["containers"].insert(0, "not a container")
    body["status"]["containerStatuses"] = [None, {"name": "main", "restartCount": 2}]
    assert containers.spec(body, "main") == container("main")
    assert containers.restarts(containers.status(body, "main")) == 2
