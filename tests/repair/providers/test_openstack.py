"""The ``openstack`` provider against the simulated cloud over HTTP, with the real openstacksdk:
power read from Nova, a hard reboot that gives the node a new bootID, a stopped server started
again, and every failure a one-sentence ProviderError naming the node."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Coroutine, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubemedic.repair.policy.records import Action, Power
from kubemedic.repair.policy.settings import OpenStackSettings, RepairSettings
from kubemedic.repair.providers.base import ProviderContext, ProviderError, Target
from kubemedic.repair.providers.openstack import OpenStack, make, server_id
from kubemedic.repair.providers.registry import make_provider
from kubemedic.sim.cluster import CLOUD_NAME
from tests.sim.cluster.cloud.serving import BOOTED, ServedCloud, serve_cloud

T = TypeVar("T")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCloud]:
    with serve_cloud(tmp_path) as served:
        yield served


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def provider(
    path: Path, *, timeout: timedelta = timedelta(seconds=20), cloud: str = CLOUD_NAME
) -> OpenStack:
    made = make(
        ProviderContext(
            api=None,
            identity="kubemedic-test",
            settings=OpenStackSettings(cloud=cloud, clouds_file=str(path)),
            timeout=timeout,
        )
    )
    assert isinstance(made, OpenStack)
    return made


def targets(served: ServedCloud) -> list[Target]:
    return [
        Target(node=name, provider_id=node["spec"]["providerID"])
        for name, node in sorted(served.nodes().items())
    ]


def boot_id(served: ServedCloud, name: str) -> str:
    return str(served.node(name)["status"]["nodeInfo"]["bootID"])


def test_provider_ids_of_openstack_and_others() -> None:
    assert server_id("openstack:///5f0c9c4e-7b4e-4bd1-9f55-3a1f1a2b8c11") == (
        "5f0c9c4e-7b4e-4bd1-9f55-3a1f1a2b8c11"
    )
    assert server_id("openstack://RegionOne/abc") == "abc"
    for other in ("", "aws:///us-east-1a/i-0abc", "openstack:///", "kubemedic-sim:///a/b"):
        assert server_id(other) is None


def test_it_reboots_hard_and_powers_on_but_does_not_replace() -> None:
    assert OpenStack.actions == frozenset({Action.REBOOT, Action.POWER_ON})
    assert OpenStack.tells_power


def test_the_registry_makes_it_by_name() -> None:
    context = ProviderContext(
        api=None, identity="kubemedic-test", settings=OpenStackSettings(cloud=CLOUD_NAME)
    )
    assert isinstance(make_provider("openstack", context), OpenStack)


@pytest.mark.parametrize("auth", ["application_credential", "password"])
def test_a_hard_reboot_is_seen_as_rebooting_then_on_with_a_new_boot_id(
    served: ServedCloud, auth: str
) -> None:
    hands = provider(served.clouds_yaml[auth])
    target = targets(served)[0]
    before = boot_id(served, target.node)

    async def reboot() -> tuple[Power, str, Power]:
        try:
            first = await hands.power(target)
            said = await hands.reboot(target)
            return first, said, await hands.power(target)
        finally:
            await hands.close()

    first, said, during = run(reboot())
    assert (first, during) == (Power.ON, Power.REBOOTING)
    assert "hard reboot" in said
    served.advance(BOOTED)
    assert run(hands.power(target)) == Power.ON
    assert boot_id(served, target.node) != before
    run(hands.close())


def test_a_stopped_server_is_off_until_powered_on(served: ServedCloud) -> None:
    hands = provider(served.clouds_yaml["application_credential"])
    target = targets(served)[1]
    served.call(lambda: served.run.cluster.clusterapi.infrastructure.power_off(target.node))  # type: ignore[union-attr]

    async def start() -> tuple[Power, str, Power]:
        try:
            off = await hands.power(target)
            said = await hands.power_on(target)
            return off, said, await hands.power(target)
        finally:
            await hands.close()

    off, said, on = run(start())
    assert (off, on) == (Power.OFF, Power.ON)
    assert "os-start" in said


def test_nova_refusing_is_an_error_in_its_own_words(served: ServedCloud) -> None:
    hands = provider(served.clouds_yaml["application_credential"])
    target = targets(served)[0]
    with pytest.raises(ProviderError) as refused:
        run(hands.power_on(target))
    message = str(refused.value)
    assert message.startswith(f"node {target.node}: ")
    assert "while it is in vm_state active" in message
    assert "409" in message


def test_an_unknown_server_is_absent_and_cannot_be_rebooted(served: ServedCloud) -> None:
    hands = provider(served.clouds_yaml["password"])
    gone = Target(node="gone-1", provider_id="openstack:///00000000-0000-4000-8000-000000000000")
    assert run(hands.power(gone)) == Power.ABSENT
    with pytest.raises(ProviderError) as refused:
        run(hands.reboot(gone))
    assert str(refused.value) == (
        "node gone-1: reboot server 00000000-0000-4000-8000-000000000000: Nova has no server "
        "00000000-0000-4000-8000-000000000000 (404)"
    )


def test_a_wrong_password_is_a_clear_error(served: ServedCloud, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.yaml"
    password = served.cloud.credentials.password
    wrong.write_text(served.clouds_yaml["password"].read_text().replace(password, "nope"))
    target = targets(served)[0]
    with pytest.raises(ProviderError) as refused:
        run(provider(wrong).power(target))
    message = str(refused.value)
    assert message.startswith(f"node {target.node}: read server ")
    assert f"the OpenStack cloud '{CLOUD_NAME}' refused the credentials" in message
    assert "\n" not in message


def test_a_provider_id_that_is_not_openstacks_is_an_error(served: ServedCloud) -> None:
    hands = provider(served.clouds_yaml["password"])
    for provider_id, shown in (
        ("kubemedic-sim:///zone-a/w-1", "'kubemedic-sim:///zone-a/w-1'"),
        ("", "empty"),
    ):
        with pytest.raises(ProviderError) as refused:
            run(hands.power(Target(node="w-1", provider_id=provider_id)))
        assert str(refused.value) == (
            f"node w-1: its provider ID is {shown}, not an OpenStack one (openstack:///<server-id>)"
        )
    with pytest.raises(ProviderError, match="does not replace machines"):
        run(hands.replace(targets(served)[0]))


def test_a_cloud_missing_from_clouds_yaml_is_an_error(served: ServedCloud) -> None:
    hands = provider(served.clouds_yaml["password"], cloud="elsewhere")
    with pytest.raises(ProviderError) as refused:
        run(hands.power(targets(served)[0]))
    assert "the OpenStack cloud 'elsewhere' is not configured in " in str(refused.value)


def test_an_unreachable_cloud_is_an_error(served: ServedCloud, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    moved = tmp_path / "moved.yaml"
    moved.write_text(
        served.clouds_yaml["password"].read_text().replace(served.url, f"http://127.0.0.1:{port}")
    )
    with pytest.raises(ProviderError) as refused:
        run(provider(moved).power(targets(served)[0]))
    assert f"cannot reach the OpenStack cloud '{CLOUD_NAME}'" in str(refused.value)


def test_a_cloud_that_does_not_answer_times_out(served: ServedCloud, tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        mute = tmp_path / "mute.yaml"
        mute.write_text(
            served.clouds_yaml["password"]
            .read_text()
            .replace(served.url, f"http://127.0.0.1:{port}")
        )
        with pytest.raises(ProviderError) as refused:
            run(provider(mute, timeout=timedelta(seconds=1)).power(targets(served)[0]))
    assert f"the OpenStack cloud '{CLOUD_NAME}' did not answer within 1s" in str(refused.value)


def test_os_client_config_file_is_honoured_without_a_path(
    served: ServedCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(served.clouds_yaml["application_credential"]))
    hands = make(
        ProviderContext(
            api=None,
            identity="kubemedic-test",
            settings=RepairSettings(
                provider="openstack", openstack=OpenStackSettings(cloud=CLOUD_NAME)
            ),
            timeout=timedelta(seconds=20),
        )
    )
    assert run(hands.power(targets(served)[0])) == Power.ON
    run(hands.close())


def test_extra_overrides_the_settings(served: ServedCloud) -> None:
    hands = make(
        ProviderContext(
            api=None,
            identity="kubemedic-test",
            settings=RepairSettings(provider="openstack", openstack=OpenStackSettings(cloud="x")),
            extra={"cloud": CLOUD_NAME, "clouds_yaml": str(served.clouds_yaml["password"])},
        )
    )
    assert run(hands.power(targets(served)[0])) == Power.ON
    run(hands.close())
