"""Zero values of fields without omitempty appear as the real server prints them."""

from __future__ import annotations

from kubemedic.sim.apiserver.registry.zeroing import fill_required_scalars
from kubemedic.sim.machinery.definitions import definitions
from tests.factories import pod


def test_container_statuses_gain_image_id_restart_count_and_ready() -> None:
    body = pod("web-0", node_name="node-a")
    body["status"]["containerStatuses"] = [{"name": "main", "image": "web:1"}]
    fill_required_scalars(body, definitions().for_kind("", "v1", "Pod"))
    status = body["status"]["containerStatuses"][0]
    assert status == {
        "name": "main",
        "image": "web:1",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
    }


def test_present_values_and_optional_fields_are_left_alone() -> None:
    body = pod("web-0", node_name="node-a")
    body["status"]["containerStatuses"] = [
        {"name": "main", "image": "web:1", "imageID": "sha256:1", "ready": True, "restartCount": 4}
    ]
    before = {k: v for k, v in body["spec"].items()}
    fill_required_scalars(body, definitions().for_kind("", "v1", "Pod"))
    assert body["status"]["containerStatuses"][0]["imageID"] == "sha256:1"
    assert body["status"]["containerStatuses"][0]["restartCount"] == 4
    assert "nodeSelector" not in body["spec"]  # optional: not added
    assert {k: body["spec"][k] for k in before} == before


def test_schemaless_objects_are_untouched() -> None:
    obj = {"spec": {"anything": [1, 2]}}
    fill_required_scalars(obj, None)
    assert obj == {"spec": {"anything": [1, 2]}}
