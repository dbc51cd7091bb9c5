"""Kubeconfig resolution as kubectl does it, checked against the emulator over HTTP (and over
HTTPS with real certificates, for the paths that only matter with TLS)."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from kubemedic.kube import config, kinds
from kubemedic.kube.config import KubeAccessError
from kubemedic.sim.apiserver.server import kubeconfig
from tests.sim.conftest import Running, start_emulator

OPENSSL = shutil.which("openssl")
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason="openssl is not installed")


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


def write(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def kubeconfig_of(
    *,
    clusters: dict[str, dict[str, Any]] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, dict[str, Any]] | None = None,
    current: str | None = None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in (clusters or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
        "contexts": [{"name": n, "context": c} for n, c in (contexts or {}).items()],
    }
    if current is not None:
        document["current-context"] = current
    return document


def resolve_in(tmp_path: Path, **kwargs: Any) -> config.Resolved:
    """Resolve with nothing of this machine's own configuration in sight."""
    kwargs.setdefault("env", {})
    kwargs.setdefault("home", tmp_path / "no-home")
    kwargs.setdefault("service_account_dir", tmp_path / "no-service-account")
    return config.resolve(**kwargs)


def list_nodes(resolved: config.Resolved) -> list[str]:
    async def main() -> list[str]:
        api = config.connect(resolved)
        try:
            await config.probe(api, resolved)
            page = await api.list_page(kinds.NODES)
        finally:
            await api.close()
        return [item["metadata"]["name"] for item in page["items"]]

    return asyncio.run(main())


# -- where the configuration comes from -------------------------------------------------------


def test_explicit_kubeconfig_wins_over_KUBECONFIG_and_home(tmp_path: Path) -> None:
    explicit = write(tmp_path / "explicit", kubeconfig("http://explicit:1", name="explicit"))
    listed = write(tmp_path / "listed", kubeconfig("http://listed:1", name="listed"))
    write(tmp_path / "home/.kube/config", kubeconfig("http://home:1", name="home"))
    env = {"KUBECONFIG": str(listed)}
    resolved = resolve_in(tmp_path, kubeconfig=explicit, env=env, home=tmp_path / "home")
    assert (resolved.context, resolved.server, resolved.source) == (
        "explicit",
        "http://explicit:1",
        str(explicit),
    )
    assert resolve_in(tmp_path, env=env, home=tmp_path / "home").server == "http://listed:1"
    assert resolve_in(tmp_path, home=tmp_path / "home").server == "http://home:1"
    # An empty KUBECONFIG is unset, as for kubectl.
    assert resolve_in(tmp_path, env={"KUBECONFIG": ""}, home=tmp_path / "home").cluster == "home"


def test_KUBECONFIG_merges_files_and_the_first_to_define_a_name_wins(tmp_path: Path) -> None:
    first = write(
        tmp_path / "first.yaml",
        kubeconfig_of(
            clusters={"shared": {"server": "https://first:6443"}},
            contexts={"one": {"cluster": "shared"}},
            current="one",
        ),
    )
    second = write(
        tmp_path / "second.yaml",
        kubeconfig_of(
            # Loses to the first file's "shared" wholesale: not even its extra field is kept.
            clusters={
                "shared": {"server": "https://second:6443", "insecure-skip-tls-verify": True},
                "own": {"server": "https://own:6443"},
            },
            users={"admin": {"token": "t"}},
            contexts={
                "one": {"cluster": "own"},
                "two": {"cluster": "shared", "user": "admin", "namespace": "prod"},
            },
            current="two",
        ),
    )
    listed = os.pathsep.join([str(first), str(tmp_path / "missing.yaml"), str(second)])
    resolved = resolve_in(tmp_path, env={"KUBECONFIG": listed})
    assert (resolved.context, resolved.cluster, resolved.server) == (
        "one",
        "shared",
        "https://first:6443",
    )
    assert resolved.config.cluster.insecure is False
    assert resolved.source == os.pathsep.join([str(first), str(second)])
    two = resolve_in(tmp_path, env={"KUBECONFIG": listed}, context="two")
    assert (two.server, two.namespace, two.user) == ("https://first:6443", "prod", "admin")
    assert two.config.user is not None and two.config.user.token == "t"


def test_missing_files_in_KUBECONFIG_are_skipped_but_none_existing_is_an_error(
    tmp_path: Path,
) -> None:
    missing = [str(tmp_path / "a"), str(tmp_path / "b")]
    with pytest.raises(KubeAccessError) as error:
        resolve_in(tmp_path, env={"KUBECONFIG": os.pathsep.join(missing)})
    assert "KUBECONFIG" in str(error.value)
    assert all(path in str(error.value) for path in missing)


def test_relative_paths_resolve_against_the_file_that_defined_them(tmp_path: Path) -> None:
    for name in ("ca.crt", "client.crt", "client.key", "token"):
        write(tmp_path / "clusters" / "pki" / name, "x")
        write(tmp_path / "users" / "pki" / name, "x")
    clusters = write(
        tmp_path / "clusters" / "config",
        kubeconfig_of(
            clusters={"c": {"server": "https://c:6443", "certificate-authority": "pki/ca.crt"}},
            contexts={"ctx": {"cluster": "c", "user": "u"}},
            current="ctx",
        ),
    )
    users = write(
        tmp_path / "users" / "config",
        kubeconfig_of(
            users={
                "u": {
                    "client-certificate": "pki/client.crt",
                    "client-key": "pki/client.key",
                    "tokenFile": "pki/token",
                }
            }
        ),
    )
    env = {"KUBECONFIG": os.pathsep.join([str(clusters), str(users)])}
    resolved = resolve_in(tmp_path, env=env)
    assert resolved.config.cluster.certificate_auth == str(tmp_path / "clusters/pki/ca.crt")
    user = resolved.config.user
    assert user is not None
    assert user.client_cert == str(tmp_path / "users/pki/client.crt")
    assert user.client_key == str(tmp_path / "users/pki/client.key")
    assert user.token_file == str(tmp_path / "users/pki/token")


def test_context_flag_picks_a_context_and_an_unknown_one_lists_the_known(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "config",
        kubeconfig_of(
            clusters={"a": {"server": "http://a:1"}, "b": {"server": "http://b:1"}},
            contexts={"ctx-a": {"cluster": "a"}, "ctx-b": {"cluster": "b"}},
            current="ctx-a",
        ),
    )
    assert resolve_in(tmp_path, kubeconfig=path).server == "http://a:1"
    assert resolve_in(tmp_path, kubeconfig=path, context="ctx-b").server == "http://b:1"
    with pytest.raises(KubeAccessError) as error:
        resolve_in(tmp_path, kubeconfig=path, context="ctx-c")
    assert "--context ctx-c" in str(error.value)
    assert "ctx-a, ctx-b" in str(error.value)


def test_a_resolved_emulator_kubeconfig_lists_nodes_over_http(
    emulator: Running, tmp_path: Path
) -> None:
    emulator.load({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    resolved = resolve_in(tmp_path, env={"KUBECONFIG": str(emulator.kubeconfig)})
    assert resolved.server == emulator.url
    assert list_nodes(resolved) == ["n1"]


def test_a_server_without_a_scheme_is_https(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig("10.0.0.1:6443"))
    assert resolve_in(tmp_path, kubeconfig=path).server == "https://10.0.0.1:6443"


# -- errors ----------------------------------------------------------------------------------

_OK_CLUSTER = {"c": {"server": "http://c:1"}}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            "clusters: [\n  - name: a\n   bad", ["config", "line", "invalid YAML"], id="yaml"
        ),
        pytest.param(
            "- just\n- a list\n", ["config", "not a kubeconfig", "list"], id="not-mapping"
        ),
        pytest.param(
            kubeconfig_of(clusters=_OK_CLUSTER, contexts={"x": {"cluster": "c"}}),
            ["no current-context", "--context", "x"],
            id="no-current-context",
        ),
        pytest.param(
            kubeconfig_of(clusters=_OK_CLUSTER, contexts={"x": {"cluster": "gone"}}, current="x"),
            ["context 'x'", "cluster 'gone' is not defined", "clusters: c"],
            id="missing-cluster",
        ),
        pytest.param(
            kubeconfig_of(
                clusters=_OK_CLUSTER, contexts={"x": {"cluster": "c", "user": "u"}}, current="x"
            ),
            ["context 'x'", "user 'u' is not defined"],
            id="missing-user",
        ),
        pytest.param(
            kubeconfig_of(
                clusters={"c": {"insecure-skip-tls-verify": True}},
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            ["cluster 'c'", "no server"],
            id="no-server",
        ),
        pytest.param(
            kubeconfig_of(
                clusters={"c": {"server": "https://c:1", "certificate-authority": "nope/ca.crt"}},
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            ["cluster 'c'", "certificate-authority", "nope/ca.crt", "no such file"],
            id="missing-ca",
        ),
        pytest.param(
            kubeconfig_of(
                clusters=_OK_CLUSTER,
                users={"u": {"client-certificate": "client.crt", "client-key": "client.key"}},
                contexts={"x": {"cluster": "c", "user": "u"}},
                current="x",
            ),
            ["user 'u'", "client-certificate", "client.crt", "no such file"],
            id="missing-client-cert",
        ),
        pytest.param(
            kubeconfig_of(
                clusters=_OK_CLUSTER,
                users={"u": {"client-certificate-data": base64.b64encode(b"x").decode()}},
                contexts={"x": {"cluster": "c", "user": "u"}},
                current="x",
            ),
            ["user 'u'", "client-key", "missing"],
            id="cert-without-key",
        ),
        pytest.param(
            kubeconfig_of(
                clusters={"c": {"server": "http://c:1", "insecure-skip-tls-verify": "maybe"}},
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            ["cluster 'c'", "insecure-skip-tls-verify"],
            id="wrong-type",
        ),
        pytest.param({"clusters": {"c": {}}}, ["clusters: expected a list"], id="clusters-map"),
    ],
)
def test_a_broken_kubeconfig_is_a_clear_error(
    tmp_path: Path, content: Any, expected: list[str]
) -> None:
    path = write(tmp_path / "config", content)
    with pytest.raises(KubeAccessError) as error:
        resolve_in(tmp_path, kubeconfig=path)
    message = str(error.value)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message


def test_a_missing_or_unreadable_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeAccessError, match=r"--kubeconfig .*nowhere: no such file"):
        resolve_in(tmp_path, kubeconfig=tmp_path / "nowhere")
    (tmp_path / "a-directory").mkdir()
    with pytest.raises(KubeAccessError, match="a-directory: cannot read"):
        resolve_in(tmp_path, kubeconfig=tmp_path / "a-directory")
    with pytest.raises(KubeAccessError, match=r"--kubeconfig .*aaa…: File name too long"):
        resolve_in(tmp_path, kubeconfig=tmp_path / ("a" * 300))


def test_no_configuration_anywhere_says_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(KubeAccessError) as error:
        resolve_in(tmp_path)
    message = str(error.value)
    for fragment in ("--kubeconfig", "KUBECONFIG", ".kube/config", "KUBERNETES_SERVICE_HOST"):
        assert fragment in message


def test_an_unreachable_server_names_the_server_and_context(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    resolved = resolve_in(tmp_path, kubeconfig=write(tmp_path / "config", kubeconfig(url)))
    with pytest.raises(KubeAccessError) as error:
        list_nodes(resolved)
    assert "cannot reach the API server" in str(error.value)
    assert url in str(error.value)
    assert "kubemedic-sim" in str(error.value)


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- TLS: client certificates and the in-cluster service account -------------------------------


def make_certificates(directory: Path) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made by openssl."""
    assert OPENSSL is not None
    directory.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run([OPENSSL, *args], cwd=directory, check=True, capture_output=True)

    curve = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=kubemedic-test-ca")  # fmt: skip
    for name, usage in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ):
        (directory / f"{name}.ext").write_text(
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n" + usage
        )
        openssl("req", *curve, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
                "-extfile", f"{name}.ext")  # fmt: skip
    return directory


TlsServe = Callable[..., tuple[int, list[str]]]


@pytest.fixture
def serve_tls(emulator: Running) -> Iterator[TlsServe]:
    """Serve the emulator's API over HTTPS too: ``serve_tls(pki, client_certificates=...)``
    returns the port and the Authorization headers requests carried."""
    runners: list[web.AppRunner] = []

    def serve(pki: Path, *, client_certificates: bool) -> tuple[int, list[str]]:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(pki / "server.crt", pki / "server.key")
        if client_certificates:
            context.load_verify_locations(pki / "ca.crt")
            context.verify_mode = ssl.CERT_REQUIRED
        seen: list[str] = []

        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            seen.append(request.headers.get("Authorization", ""))
            response: web.StreamResponse = await handler(request)
            return response

        async def start() -> int:
            app = emulator.server.app()
            app.middlewares.append(record)
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            runners.append(runner)
            site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
            await site.start()
            return int(runner.addresses[0][1])

        port = asyncio.run_coroutine_threadsafe(start(), emulator.loop).result(timeout=30)
        return port, seen

    yield serve

    async def stop() -> None:
        for runner in runners:
            await runner.cleanup()

    asyncio.run_coroutine_threadsafe(stop(), emulator.loop).result(timeout=30)


@needs_openssl
def test_relative_client_certificate_paths_authenticate_over_tls(
    emulator: Running, serve_tls: TlsServe, tmp_path: Path
) -> None:
    pki = make_certificates(tmp_path / "home" / "pki")
    port, _ = serve_tls(pki, client_certificates=True)
    emulator.load({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tls-node"}})
    path = write(
        tmp_path / "home" / "config",
        kubeconfig_of(
            clusters={
                "tls": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority": "pki/ca.crt",
                }
            },
            users={"me": {"client-certificate": "pki/client.crt", "client-key": "pki/client.key"}},
            contexts={"tls": {"cluster": "tls", "user": "me"}},
            current="tls",
        ),
    )
    # Resolved from another working directory: the paths are the file's, not ours.
    resolved = resolve_in(tmp_path, kubeconfig=path)
    assert list_nodes(resolved) == ["tls-node"]


@needs_openssl
def test_in_cluster_service_account_verifies_the_ca_and_sends_the_token(
    emulator: Running, serve_tls: TlsServe, tmp_path: Path
) -> None:
    pki = make_certificates(tmp_path / "pki")
    port, seen = serve_tls(pki, client_certificates=False)
    emulator.load({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "in-pod"}})
    account = tmp_path / "serviceaccount"
    account.mkdir()
    shutil.copy(pki / "ca.crt", account / "ca.crt")
    (account / "token").write_text("sa-token\n")
    (account / "namespace").write_text("kubemedic")
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port)}
    resolved = resolve_in(tmp_path, env=env, service_account_dir=account)
    assert resolved.server == f"https://127.0.0.1:{port}"
    assert (resolved.context, resolved.cluster, resolved.namespace) == (
        "in-cluster",
        "in-cluster",
        "kubemedic",
    )
    assert str(account) in resolved.source
    assert list_nodes(resolved) == ["in-pod"]
    assert seen and all(header == "Bearer sa-token" for header in seen)


def test_in_cluster_needs_the_environment_and_a_token(tmp_path: Path) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    # No token: not a pod with a service account, so nothing is configured.
    with pytest.raises(KubeAccessError, match="KUBERNETES_SERVICE_HOST"):
        resolve_in(tmp_path, env=env, service_account_dir=account)
    (account / "token").write_text("t")
    # A token but no ca.crt: named.
    with pytest.raises(KubeAccessError, match=r"ca\.crt .*no such file"):
        resolve_in(tmp_path, env=env, service_account_dir=account)
    # A kubeconfig in the home directory comes first.
    write(tmp_path / "home/.kube/config", kubeconfig("http://home:1", name="home"))
    resolved = resolve_in(tmp_path, env=env, service_account_dir=account, home=tmp_path / "home")
    assert resolved.cluster == "home"
