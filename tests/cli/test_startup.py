"""Start-up loads only what the command runs: ``--version`` and a snapshot scan never load the
database stack, the HTTP clients, the simulator, the daemon, incidents or the Kubernetes
client. Each command runs in a fresh interpreter, which then reports every module it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import node, pod

FORBIDDEN = (
    "sqlalchemy",
    "alembic",
    "aiohttp",
    "lightkube",
    "httpx2",
    "psycopg",
    "kubemedic.sim",
    "kubemedic.store",
    "kubemedic.run",
    "kubemedic.incidents",
    "kubemedic.kube",
    "kubemedic.web",
    "fastapi",
    "uvicorn",
    "jinja2",
)

# Reports the modules loaded when the command is done: when ``main()`` returns, or when it ends
# the process at once (``os._exit``, as a scan does once its output is written).
PROBE = """
import json, os, sys
sys.argv = ["kubemedic", *sys.argv[1:]]

def report():
    sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
    sys.stderr.flush()

leave = os._exit

def reporting_exit(code):
    report()
    leave(code)

os._exit = reporting_exit
from kubemedic.cli import main
try:
    main()
except SystemExit:
    pass
report()
"""


def loaded_modules(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = done.stderr.rsplit("\nMODULES ", 1)[-1]
    return set(json.loads(line))


def forbidden_in(modules: set[str]) -> list[str]:
    return sorted(
        name
        for name in modules
        if any(name == root or name.startswith(root + ".") for root in FORBIDDEN)
    )


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "cluster.json"
    items = [node("core-1"), pod("web-1", node_name="core-1")]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_version_loads_none_of_the_heavy_parts() -> None:
    modules = loaded_modules("--version")
    assert "kubemedic.cli" in modules
    assert forbidden_in(modules) == []
    assert "kubemedic.checks" not in modules  # nor any check


def test_a_snapshot_scan_loads_none_of_the_heavy_parts(snapshot: Path) -> None:
    modules = loaded_modules("scan", "--snapshot", str(snapshot), "--output", "json")
    assert "kubemedic.snapshot.loading" in modules  # it did scan
    assert forbidden_in(modules) == []


def test_the_probe_sees_what_a_command_loads(tmp_path: Path) -> None:
    """The same probe, on a command that needs the database: it must show it (so an empty list
    above means the modules were absent, not that the probe saw nothing)."""
    modules = loaded_modules("events", "--db", str(tmp_path / "absent.db"))
    assert "sqlalchemy" in forbidden_in(modules)


def test_the_daemon_loads_the_web_stack_only_with_web() -> None:
    """``kubemedic run`` imports its daemon; the dashboard's modules come with ``--web`` only."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys; import kubemedic.cli.daemon, kubemedic.run.daemon; "
            "print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules = set(json.loads(done.stdout))
    assert "kubemedic.run.daemon" in modules
    web = ("kubemedic.web", "fastapi", "uvicorn", "jinja2")
    assert sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in web)) == []
