"""Which cluster to talk to, and with what credentials: kubeconfig resolution as kubectl does it.

Where the configuration comes from (client-go ``clientcmd.ClientConfigLoadingRules`` and
``DeferredLoadingClientConfig``):

1. ``--kubeconfig PATH``: that file alone, unmerged; a missing file is an error.
2. else ``KUBECONFIG``: a list of files joined by ``os.pathsep``. Empty entries and repeats are
   dropped and missing files skipped, and the rest are merged: for the named lists (clusters,
   users, contexts) the first file to define a name wins and its entry is never changed, not
   even by non-conflicting fields of a later file's entry of the same name; ``current-context``
   is the first file's that sets one. A file that cannot be read or parsed is an error, even
   when others could serve. (kubectl warns and carries on when no file exists; kubemedic stops
   with an error naming them, so a typo never silently means "some other cluster".)
3. else ``~/.kube/config``.
4. else, inside a pod, the service account (client-go ``rest.InClusterConfig``): the API
   server at ``KUBERNETES_SERVICE_HOST``:``KUBERNETES_SERVICE_PORT`` over HTTPS, verified
   with ``ca.crt``, authenticated by ``token`` (re-read when the server answers 401, since the
   kubelet rotates projected tokens), namespace from ``namespace``. It is possible only when
   both variables are set and the token file exists (``inClusterClientConfig.Possible``).

Relative paths in a kubeconfig (``certificate-authority``, ``client-certificate``,
``client-key``, ``tokenFile``, and an exec plugin's ``command`` when it contains a path
separator) are resolved against the directory of the file that defined them
(``ResolveLocalPaths``), before merging, so each keeps its own file's directory.

Everything that would otherwise fail later with a puzzling message (or, with lightkube, an
``AssertionError``) is checked here and raised as ``KubeAccessError`` naming the file, context,
cluster or user and the field at fault.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import lightkube
import msgspec
import yaml
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import Cluster, Context, User
from lightkube.core.exceptions import ConfigError

from kubemedic.errors import InputError
from kubemedic.kube import credentials
from kubemedic.kube.api import Api, ApiError, ConnectionLost, Unauthorized
from kubemedic.model import documents

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "KubeAccessError",
    "Resolved",
    "connect",
    "probe",
    "resolve",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
IN_CLUSTER = "in-cluster"
#: Exec credential plugin versions lightkube speaks.
_EXEC_VERSIONS = ("client.authentication.k8s.io/v1alpha1", "client.authentication.k8s.io/v1beta1")
_CLUSTER_PATHS = ("certificate-authority",)
_USER_PATHS = ("client-certificate", "client-key", "tokenFile")
MAX_KUBECONFIG_BYTES = 16 * 1024 * 1024


class KubeAccessError(InputError):
    """The cluster cannot be reached as configured. ``str()`` names the file, context, cluster
    or user and the field at fault (or the server that did not answer)."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """A chosen context, ready for ``connect``."""

    config: SingleConfig
    context: str
    cluster: str
    """The kubeconfig's name for the cluster (the archive's ``cluster`` column)."""
    server: str
    source: str
    """The file(s) read, joined by ``os.pathsep``, or ``in-cluster service account (DIR)``."""
    namespace: str = "default"
    user: str = ""
    files: tuple[Path, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    body: dict[str, Any]
    file: Path


@dataclass(slots=True)
class _Merged:
    files: list[Path] = field(default_factory=list)
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current_context: str | None = None


def resolve(
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    home: Path | None = None,
    service_account_dir: Path | None = None,
) -> Resolved:
    """Find the configuration (see the module docstring for the order) and pick ``context``
    (default: the ``current-context``). Raises ``KubeAccessError`` on anything wrong with it."""
    account_dir = service_account_dir or SERVICE_ACCOUNT_DIR
    files = _files(kubeconfig, env=env, home=home)
    if not files:
        if _in_cluster_possible(env, account_dir):
            if context is not None:
                raise KubeAccessError(
                    f"--context {context}: there is no kubeconfig to choose a context from "
                    f"(running in-cluster with the service account in {account_dir})"
                )
            return _in_cluster(env, account_dir)
        home_config = (home or _home(env)) / ".kube" / "config"
        raise KubeAccessError(
            f"no cluster configured: give --kubeconfig PATH or set KUBECONFIG; {home_config} "
            "does not exist, and this is not a pod with a service account "
            "(KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset or no token in "
            f"{account_dir})"
        )
    merged = _Merged()
    for file in files:
        _merge(merged, file, _read(file))
    return _choose(merged, context)


def connect(resolved: Resolved, *, timeout: float = 10.0) -> Api:
    """A lightkube ``AsyncClient`` for ``resolved``, wrapped as ``Api``. Nothing is sent yet:
    ``await probe(api, resolved)`` to find out whether the server answers."""
    try:
        client = lightkube.AsyncClient(resolved.config, timeout=httpx2.Timeout(timeout))
    except (OSError, ssl.SSLError, ValueError, ConfigError) as error:
        # Unreadable or mismatched PEM material: ssl reads it when the client is built.
        raise KubeAccessError(
            f"context {resolved.context!r} (from {resolved.source}): cannot set up TLS for "
            f"{resolved.server}: {error}"
        ) from None
    api = Api(client, cluster=resolved.cluster)
    exec_ = resolved.config.user.exec if resolved.config.user is not None else None
    if exec_ is not None:
        # lightkube's own runner ends a missing or misbehaving plugin in a traceback.
        api.use_auth(credentials.ExecCredentials(exec_, user=resolved.user, source=resolved.source))
    return api


async def probe(api: Api, resolved: Resolved, *, timeout: float = 10.0) -> dict[str, Any]:
    """``GET /version`` (readable by anyone, ``system:public-info-viewer``): proves the server
    answers and takes our credentials. Returns the version document ({} when not readable)."""
    where = f"context {resolved.context!r} (from {resolved.source})"
    try:
        answer = await api.request("GET", "/version", timeout=timeout)
    except ConnectionLost as error:
        raise KubeAccessError(
            f"cannot reach the API server {resolved.server} of {where}: {error}"
        ) from None
    except ConfigError as error:  # an exec credential plugin failed
        raise KubeAccessError(f"{where}: cannot get credentials: {error}") from None
    except credentials.CredentialError as error:
        raise KubeAccessError(f"cannot get credentials for {where}: {error}") from None
    except Unauthorized as error:
        raise KubeAccessError(
            f"the API server {resolved.server} rejected the credentials of user "
            f"{resolved.user or '(none)'} of {where}: {error.message or error.reason}"
        ) from None
    except ApiError:
        return {}
    return answer if isinstance(answer, dict) else {}


# -- finding the files ----------------------------------------------------------------------


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def _files(kubeconfig: Path | None, *, env: Mapping[str, str], home: Path | None) -> list[Path]:
    if kubeconfig is not None:
        path = Path(kubeconfig).expanduser()
        try:
            found = path.exists()
        except OSError as error:  # a name too long, a parent that cannot be searched
            raise KubeAccessError(f"--kubeconfig {_shown(str(path))}: {error.strerror}") from None
        if not found:
            raise KubeAccessError(f"--kubeconfig {path}: no such file")
        return [path]
    listed = env.get("KUBECONFIG", "")
    if listed:
        entries: list[Path] = []
        for entry in listed.split(os.pathsep):
            listed_path = Path(entry).expanduser()
            if entry and listed_path not in entries:
                entries.append(listed_path)
        existing = [path for path in entries if path.exists()]
        if not existing:
            raise KubeAccessError(
                f"KUBECONFIG={listed}: none of its files exist "
                f"({', '.join(str(path) for path in entries) or 'no file named'})"
            )
        return existing
    default = (home or _home(env)) / ".kube" / "config"
    return [default] if default.exists() else []


def _read(file: Path) -> dict[str, Any]:
    if not file.is_file():
        kind = "a directory" if file.is_dir() else "not a regular file"
        raise KubeAccessError(f"{file}: cannot read a kubeconfig: it is {kind}")
    try:
        if file.stat().st_size > MAX_KUBECONFIG_BYTES:
            raise KubeAccessError(
                f"{file}: {file.stat().st_size} bytes: a kubeconfig of at most "
                f"{MAX_KUBECONFIG_BYTES // (1024 * 1024)} MiB was expected"
            )
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise KubeAccessError(
            f"{file}: not UTF-8 text (byte {error.start}): expected a YAML kubeconfig"
        ) from None
    except OSError as error:
        raise KubeAccessError(f"{file}: cannot read: {error.strerror or error}") from None
    try:
        document = documents.load_yaml(text, where=str(file))
    except documents.DocumentError as error:
        raise KubeAccessError(f"{error} (expected a YAML kubeconfig)") from None
    except yaml.YAMLError as error:  # the reader's own errors (a NUL, a control character)
        said = " ".join(str(error).split())[:200]
        raise KubeAccessError(
            f"{file}: invalid YAML: {said} (expected a YAML kubeconfig)"
        ) from None
    if document is None:
        return {}  # an empty file is an empty configuration, as for kubectl
    if not isinstance(document, dict):
        raise KubeAccessError(
            f"{file}: not a kubeconfig: expected a mapping with clusters, users and contexts, "
            f"found {_a(document)}"
        )
    return document


# -- merging ---------------------------------------------------------------------------------


def _merge(merged: _Merged, file: Path, document: dict[str, Any]) -> None:
    merged.files.append(file)
    base = Path(os.path.abspath(file.parent))
    for key, inner, into, paths in (
        ("clusters", "cluster", merged.clusters, _CLUSTER_PATHS),
        ("users", "user", merged.users, _USER_PATHS),
        ("contexts", "context", merged.contexts, ()),
    ):
        for entry in _named(document, file=file, key=key, inner=inner):
            if entry.name in into:
                continue  # the first file to define a name wins, wholesale
            _absolutise(entry.body, paths, base)
            if key == "users":
                _absolutise_exec(entry.body, base)
            into[entry.name] = entry
    current = document.get("current-context")
    if merged.current_context is None and isinstance(current, str) and current:
        merged.current_context = current


def _named(document: dict[str, Any], *, file: Path, key: str, inner: str) -> list[_Entry]:
    items = document.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise KubeAccessError(f"{file}: {key}: expected a list, found {_a(items)}")
    entries = []
    for index, item in enumerate(items):
        where = f"{file}: {key}[{index}]"
        if not isinstance(item, dict):
            raise KubeAccessError(f"{where}: expected a mapping, found {_a(item)}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise KubeAccessError(f"{where}: no name")
        body = item.get(inner)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise KubeAccessError(
                f"{where} ({name}): {inner}: expected a mapping, found {_a(body)}"
            )
        entries.append(_Entry(name, dict(body), file))
    return entries


def _absolutise(body: dict[str, Any], keys: tuple[str, ...], base: Path) -> None:
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            body[key] = str(base / Path(value).expanduser())


def _absolutise_exec(body: dict[str, Any], base: Path) -> None:
    exec_ = body.get("exec")
    if isinstance(exec_, dict):
        command = exec_.get("command")
        # Only a command with a path separator is a file path; a bare name is looked up in PATH.
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            body["exec"] = {**exec_, "command": str(base / command)}


# -- choosing a context ------------------------------------------------------------------------


def _choose(merged: _Merged, wanted: str | None) -> Resolved:
    source = os.pathsep.join(str(file) for file in merged.files)
    known = ", ".join(sorted(merged.contexts)) or "none"
    name = wanted or merged.current_context
    if name is None:
        raise KubeAccessError(
            f"{source}: no current-context is set and no --context was given (contexts: {known})"
        )
    entry = merged.contexts.get(name)
    if entry is None:
        flag = "--context" if wanted else "current-context"
        raise KubeAccessError(f"{flag} {name}: no such context in {source} (contexts: {known})")
    where = f"context {name!r} (in {entry.file})"
    try:
        context = msgspec.convert(entry.body, Context)
    except msgspec.ValidationError as error:
        raise KubeAccessError(f"{where}: {error}") from None
    if not context.cluster:
        raise KubeAccessError(f"{where}: names no cluster")
    cluster_entry = merged.clusters.get(context.cluster)
    if cluster_entry is None:
        clusters = ", ".join(sorted(merged.clusters)) or "none"
        raise KubeAccessError(
            f"{where}: cluster {context.cluster!r} is not defined in {source} "
            f"(clusters: {clusters})"
        )
    cluster = _cluster(cluster_entry)
    user = User()
    if context.user:
        user_entry = merged.users.get(context.user)
        if user_entry is None:
            users = ", ".join(sorted(merged.users)) or "none"
            raise KubeAccessError(
                f"{where}: user {context.user!r} is not defined in {source} (users: {users})"
            )
        user = _user(user_entry)
    config = SingleConfig(
        context_name=name, context=context, cluster=cluster, user=user, fname=entry.file
    )
    return Resolved(
        config=config,
        context=name,
        cluster=context.cluster,
        server=cluster.server,
        source=source,
        namespace=config.namespace,
        user=context.user or "",
        files=tuple(merged.files),
    )


def _cluster(entry: _Entry) -> Cluster:
    where = f"cluster {entry.name!r} (in {entry.file})"
    server = entry.body.get("server")
    if not isinstance(server, str) or not server.strip():
        raise KubeAccessError(f"{where}: no server")
    server = server.strip().rstrip("/")
    if "://" not in server:
        server = f"https://{server}"  # client-go's DefaultServerURL: TLS unless told otherwise
    scheme = server.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise KubeAccessError(f"{where}: server {_shown(server)}: expected an http or https URL")
    _check_server(server, where=where)
    try:
        cluster = msgspec.convert({**entry.body, "server": server}, Cluster)
    except msgspec.ValidationError as error:
        raise KubeAccessError(f"{where}: {error}") from None
    _check_file(cluster.certificate_auth, where=where, field_name="certificate-authority")
    _check_base64(
        cluster.certificate_auth_data, where=where, field_name="certificate-authority-data"
    )
    return cluster


def _user(entry: _Entry) -> User:
    where = f"user {entry.name!r} (in {entry.file})"
    try:
        user = msgspec.convert(entry.body, User)
    except msgspec.ValidationError as error:
        raise KubeAccessError(f"{where}: {error}") from None
    has_cert = bool(user.client_cert or user.client_cert_data)
    has_key = bool(user.client_key or user.client_key_data)
    if has_cert != has_key:
        missing = "client-key" if has_cert else "client-certificate"
        raise KubeAccessError(f"{where}: {missing} (or {missing}-data) is missing")
    _check_file(user.client_cert, where=where, field_name="client-certificate")
    _check_file(user.client_key, where=where, field_name="client-key")
    _check_file(user.token_file, where=where, field_name="tokenFile")
    _check_base64(user.client_cert_data, where=where, field_name="client-certificate-data")
    _check_base64(user.client_key_data, where=where, field_name="client-key-data")
    if user.auth_provider:
        raise KubeAccessError(
            f"{where}: auth-provider plugins are not supported (use an exec credential plugin)"
        )
    if user.exec is not None and user.exec.apiVersion not in _EXEC_VERSIONS:
        raise KubeAccessError(
            f"{where}: exec.apiVersion {user.exec.apiVersion}: expected one of "
            f"{', '.join(_EXEC_VERSIONS)}"
        )
    return user


def _a(value: object) -> str:
    """What a YAML value is, in the user's words: ``a list``, ``a string``, ``a mapping``."""
    return documents.value_kind(value, mapping="a mapping")


def _shown(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "…"


def _check_server(server: str, *, where: str) -> None:
    """``https://HOST[:PORT][/PATH]`` with a host and a port from 1 to 65535."""
    expected = "expected https://HOST:PORT (a port from 1 to 65535)"
    try:
        parts = urllib.parse.urlsplit(server)
        port = parts.port
    except ValueError as error:
        problem = "the port is not a number from 1 to 65535" if "ort" in str(error) else ""
        raise KubeAccessError(
            f"{where}: server {_shown(server)}: {problem or 'not a URL'}; {expected}"
        ) from None
    if not parts.hostname:
        raise KubeAccessError(f"{where}: server {_shown(server)}: names no host; {expected}")
    if port is not None and not 1 <= port <= 65535:
        raise KubeAccessError(f"{where}: server {_shown(server)}: port {port}: {expected}")
    if parts.query or parts.fragment or any(c.isspace() for c in server):
        raise KubeAccessError(f"{where}: server {_shown(server)}: {expected}")


def _check_file(path: str | None, *, where: str, field_name: str) -> None:
    if not path:
        return
    file = Path(path)
    if not file.is_file():
        raise KubeAccessError(f"{where}: {field_name} {file}: no such file")
    if not os.access(file, os.R_OK):
        raise KubeAccessError(f"{where}: {field_name} {file}: not readable")


def _check_base64(data: str | None, *, where: str, field_name: str) -> None:
    if not data:
        return
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise KubeAccessError(f"{where}: {field_name}: not valid base64: {error}") from None


# -- in-cluster ------------------------------------------------------------------------------


def _in_cluster_possible(env: Mapping[str, str], account_dir: Path) -> bool:
    return bool(
        env.get("KUBERNETES_SERVICE_HOST")
        and env.get("KUBERNETES_SERVICE_PORT")
        and (account_dir / "token").is_file()
    )


def _in_cluster(env: Mapping[str, str], account_dir: Path) -> Resolved:
    host = env["KUBERNETES_SERVICE_HOST"]
    port = env["KUBERNETES_SERVICE_PORT"]
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address (net.JoinHostPort)
    server = f"https://{host}:{port}"
    source = f"in-cluster service account ({account_dir})"
    where = f"in-cluster service account ({account_dir})"
    ca = account_dir / "ca.crt"
    token = account_dir / "token"
    _check_file(str(ca), where=where, field_name="ca.crt")
    _check_file(str(token), where=where, field_name="token")
    namespace = "default"
    namespace_file = account_dir / "namespace"
    if namespace_file.is_file():
        try:
            namespace = namespace_file.read_text(encoding="utf-8").strip() or "default"
        except (OSError, UnicodeDecodeError) as error:
            raise KubeAccessError(f"{where}: namespace: cannot read: {error}") from None
    cluster = Cluster(server=server, certificate_auth=str(ca))
    context = Context(cluster=IN_CLUSTER, user=IN_CLUSTER, namespace=namespace)
    # tokenFile, not token: lightkube re-reads it on 401, as the kubelet rotates it.
    user = User(token_file=str(token))
    config = SingleConfig(context_name=IN_CLUSTER, context=context, cluster=cluster, user=user)
    return Resolved(
        config=config,
        context=IN_CLUSTER,
        cluster=IN_CLUSTER,
        server=server,
        source=source,
        namespace=namespace,
        user=IN_CLUSTER,
    )
