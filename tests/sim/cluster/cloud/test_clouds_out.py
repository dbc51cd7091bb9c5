"""``kubemedic sim run --serve --clouds-out FILE`` as a user runs it: the file appears once the
port answers, and openstacksdk finds the cloud through ``OS_CLIENT_CONFIG_FILE``."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import openstack
import pytest

from kubemedic.model import documents
from kubemedic.sim.cluster import CLOUD_NAME
from tests.sim.cluster.cloud.serving import SCENARIO

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]


def test_clouds_out_writes_a_clouds_yaml_openstacksdk_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "openstack-cloud.yaml"
    scenario.write_text(SCENARIO)
    clouds = tmp_path / "out" / "clouds.yaml"
    with subprocess.Popen(
        [*KUBEMEDIC, "sim", "run", str(scenario), "--serve", "--speed", "10", "--hold",
         "--clouds-out", str(clouds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not clouds.exists():
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "no clouds.yaml written"
                time.sleep(0.1)
            entry = documents.load_yaml(clouds.read_text(), where=str(clouds))["clouds"][CLOUD_NAME]
            assert entry["auth_type"] == "v3applicationcredential"
            assert entry["identity_api_version"] == 3
            assert entry["region_name"] == "RegionOne"
            assert entry["interface"] == "public"
            assert entry["auth"]["auth_url"].endswith("/identity/v3")
            monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
            conn = openstack.connect(cloud=CLOUD_NAME)
            servers = list(conn.compute.servers())
            assert len(servers) == 2
            assert {s.status for s in servers} == {"ACTIVE"}
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail("sim run did not stop on SIGINT")
        assert proc.returncode == 0, err


def test_clouds_out_needs_serve(tmp_path: Path) -> None:
    done = subprocess.run(
        [*KUBEMEDIC, "sim", "run", "healthy", "--clouds-out", str(tmp_path / "clouds.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "--clouds-out" in done.stderr
    assert "--serve" in done.stderr
    assert not (tmp_path / "clouds.yaml").exists()
