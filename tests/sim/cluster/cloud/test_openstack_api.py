"""The simulated OpenStack cloud as openstacksdk sees it: both ways of authenticating, servers
that are the cluster's machines, reboots that give the node a new bootID, stop and start with
Nova's states and refusals, and the protocol details a client relies on (discovery, tokens,
microversions, errors)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import keystoneauth1.exceptions as ksa
import openstack
import openstack.config
import openstack.connection
import openstack.exceptions as sdk
import pytest

from kubemedic.sim.cluster import CLOUD_NAME
from tests.sim.cluster.cloud.serving import BOOTED, ServedCloud, serve_cloud


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCloud]:
    with serve_cloud(tmp_path) as served:
        yield served


def connect(path: Path) -> openstack.connection.Connection:
    config = openstack.config.OpenStackConfig(config_files=[str(path)], load_envvars=False)
    return openstack.connection.Connection(config=config.get_one(cloud=CLOUD_NAME))


def server_id(node: dict[str, Any]) -> str:
    provider_id = node["spec"]["providerID"]
    assert provider_id.startswith("openstack:///")
    return str(provider_id.removeprefix("openstack:///"))


def boot_id(node: dict[str, Any]) -> str:
    return str(node["status"]["nodeInfo"]["bootID"])


def ready(node: dict[str, Any]) -> str:
    return next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")


def request(
    served: ServedCloud,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", int(served.url.rsplit(":", 1)[1]), timeout=30)
    try:
        conn.request(
            method,
            path,
            body=None if body is None else json.dumps(body),
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        resp = conn.getresponse()
        text = resp.read().decode()
    finally:
        conn.close()
    return resp.status, json.loads(text) if text else None, dict(resp.getheaders())


@pytest.mark.parametrize("auth", ["application_credential", "password"])
def test_both_ways_of_authenticating_list_the_clusters_machines(
    served: ServedCloud, auth: str
) -> None:
    conn = connect(served.clouds_yaml[auth])
    servers = {s.name: s for s in conn.compute.servers()}
    nodes = served.nodes()
    assert set(servers) == set(nodes)
    for name, node in nodes.items():
        server = servers[name]
        assert server.id == server_id(node)
        assert server.status == "ACTIVE"
        assert server.vm_state == "active"
        assert server.power_state == 1
        assert server.availability_zone == "zone-a"
    one = next(iter(nodes))
    assert [s.name for s in conn.compute.servers(name=f"^{one}$")] == [one]
    assert conn.compute.find_server(one).id == server_id(nodes[one])


def test_a_hard_reboot_shows_hard_reboot_then_active_and_the_node_boots_again(
    served: ServedCloud,
) -> None:
    conn = connect(served.clouds_yaml["application_credential"])
    name, node = sorted(served.nodes().items())[0]
    before = boot_id(node)
    sid = server_id(node)

    conn.compute.reboot_server(sid, "HARD")
    server = conn.compute.get_server(sid)
    assert (server.status, server.task_state, server.power_state) == (
        "HARD_REBOOT",
        "reboot_started_hard",
        1,
    )

    served.advance(timedelta(seconds=15))
    server = conn.compute.get_server(sid)
    assert (server.status, server.task_state) == ("ACTIVE", None)

    served.advance(BOOTED)
    after = served.node(name)
    assert boot_id(after) != before
    assert ready(after) == "True"
    assert served.call(lambda: served.run.cluster.hosts.get(name).reboots) == 1


def test_stop_and_start_follow_novas_states_and_refusals(served: ServedCloud) -> None:
    conn = connect(served.clouds_yaml["password"])
    name, node = sorted(served.nodes().items())[1]
    sid = server_id(node)

    with pytest.raises(sdk.ConflictException) as refused:
        conn.compute.start_server(sid)
    assert f"Cannot 'start' instance {sid} while it is in vm_state active" in str(
        refused.value.response.json()
    )

    conn.compute.stop_server(sid)
    server = conn.compute.get_server(sid)
    assert (server.status, server.vm_state, server.power_state) == ("SHUTOFF", "stopped", 4)
    assert served.call(lambda: served.run.cluster.hosts.get(name).powered) is False
    with pytest.raises(sdk.ConflictException):
        conn.compute.stop_server(sid)
    with pytest.raises(sdk.ConflictException):
        conn.compute.reboot_server(sid, "SOFT")

    conn.compute.start_server(sid)
    assert conn.compute.get_server(sid).status == "ACTIVE"
    served.advance(BOOTED)
    assert ready(served.node(name)) == "True"
    assert boot_id(served.node(name)) != boot_id(node)


def test_a_soft_reboot_shows_reboot(served: ServedCloud) -> None:
    conn = connect(served.clouds_yaml["password"])
    sid = server_id(sorted(served.nodes().values(), key=lambda n: n["metadata"]["name"])[0])
    conn.compute.reboot_server(sid, "SOFT")
    assert conn.compute.get_server(sid).status == "REBOOT"
    # A hard reboot may interrupt a soft one; stopping may not.
    with pytest.raises(sdk.ConflictException):
        conn.compute.stop_server(sid)
    conn.compute.reboot_server(sid, "HARD")
    assert conn.compute.get_server(sid).status == "HARD_REBOOT"


def test_a_wrong_password_is_refused(served: ServedCloud, tmp_path: Path) -> None:
    text = served.clouds_yaml["password"].read_text()
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(text.replace(served.cloud.credentials.password, "not-the-password"))
    with pytest.raises(ksa.Unauthorized):
        list(connect(wrong).compute.servers())
    secret = served.cloud.credentials.application_credential_secret
    wrong.write_text(served.clouds_yaml["application_credential"].read_text().replace(secret, "x"))
    with pytest.raises(ksa.Unauthorized):
        list(connect(wrong).compute.servers())


def test_an_unknown_server_is_not_found(served: ServedCloud) -> None:
    conn = connect(served.clouds_yaml["application_credential"])
    unknown = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(sdk.NotFoundException):
        conn.compute.get_server(unknown)
    with pytest.raises(sdk.NotFoundException):
        conn.compute.reboot_server(unknown, "HARD")


def test_the_protocol_details_clients_rely_on(served: ServedCloud) -> None:
    status, body, _ = request(served, "GET", "/identity/v3")
    assert status == 200
    assert body["version"]["id"].startswith("v3.")
    assert body["version"]["links"][0]["href"] == f"{served.url}/identity/v3/"
    status, body, _ = request(served, "GET", "/identity")
    assert status == 300
    assert [v["id"] for v in body["versions"]["values"]] == [body["versions"]["values"][0]["id"]]
    status, body, _ = request(served, "GET", "/compute/")
    assert status == 200
    assert [v["id"] for v in body["versions"]] == ["v2.0", "v2.1"]

    creds = served.cloud.credentials
    auth = {
        "auth": {
            "identity": {
                "methods": ["application_credential"],
                "application_credential": {
                    "id": creds.application_credential_id,
                    "secret": creds.application_credential_secret,
                },
            }
        }
    }
    status, body, headers = request(served, "POST", "/identity/v3/auth/tokens", auth)
    assert status == 201
    token = headers["X-Subject-Token"]
    compute = next(s for s in body["token"]["catalog"] if s["type"] == "compute")
    assert {e["interface"] for e in compute["endpoints"]} == {"public", "internal", "admin"}
    assert compute["endpoints"][0]["url"] == f"{served.url}/compute/v2.1"
    assert body["token"]["project"]["id"] == creds.project_id

    status, body, _ = request(served, "GET", "/compute/v2.1/servers")
    assert (status, body["error"]["code"]) == (401, 401)
    sid = server_id(next(iter(served.nodes().values())))
    with_token = {"X-Auth-Token": token}
    path = f"/compute/v2.1/servers/{sid}"
    status, body, headers = request(
        served, "GET", path, headers={**with_token, "OpenStack-API-Version": "compute 2.79"}
    )
    assert status == 200
    assert headers["OpenStack-API-Version"] == "compute 2.79"
    status, body, _ = request(
        served, "GET", path, headers={**with_token, "OpenStack-API-Version": "compute 3.0"}
    )
    assert status == 406
    status, body, _ = request(
        served, "POST", path + "/action", {"reboot": {"type": "WARM"}}, headers=with_token
    )
    assert (status, body["badRequest"]["code"]) == (400, 400)
    status, body, _ = request(served, "POST", path + "/action", {"os-start": None}, with_token)
    assert status == 409
    assert body["conflictingRequest"]["message"] == (
        f"Cannot 'start' instance {sid} while it is in vm_state active"
    )
    status, body, _ = request(
        served, "GET", "/compute/v2.1/servers/detail?limit=1", headers=with_token
    )
    assert len(body["servers"]) == 1
    assert body["servers_links"][0]["rel"] == "next"


def test_tokens_expire_on_the_clusters_clock(served: ServedCloud) -> None:
    creds = served.cloud.credentials
    auth = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {
                        "name": creds.username,
                        "domain": {"name": "Default"},
                        "password": creds.password,
                    }
                },
            },
            "scope": {"project": {"id": creds.project_id}},
        }
    }
    _, _, headers = request(served, "POST", "/identity/v3/auth/tokens", auth)
    token = {"X-Auth-Token": headers["X-Subject-Token"]}
    assert request(served, "GET", "/compute/v2.1/servers", headers=token)[0] == 200
    served.advance(timedelta(hours=1, seconds=1))
    assert request(served, "GET", "/compute/v2.1/servers", headers=token)[0] == 401


def test_the_same_seed_makes_the_same_credentials(tmp_path: Path) -> None:
    with serve_cloud(tmp_path / "a") as a, serve_cloud(tmp_path / "b") as b:
        assert a.cloud.credentials == b.cloud.credentials
        assert sorted(map(server_id, a.nodes().values())) == sorted(
            map(server_id, b.nodes().values())
        )
