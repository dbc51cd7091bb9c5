"""The ``openstack`` provider: a node's server found, rebooted and powered on through Nova with
openstacksdk.

**Which cloud.** ``openstack.connect(cloud=NAME)`` with the cloud named by
``repair.openstack.cloud`` (``OpenStackSettings.cloud``, or ``extra["cloud"]``; empty:
openstacksdk's own default, ``OS_CLOUD``). The ``clouds.yaml`` is where openstacksdk looks for it
(``OS_CLIENT_CONFIG_FILE``, then ``./clouds.yaml``, ``~/.config/openstack/clouds.yaml``,
``/etc/openstack/clouds.yaml``), unless ``repair.openstack.cloudsFile``
(``OpenStackSettings.clouds_file``) or ``extra["clouds_yaml"]`` names one: then that file alone
(the ``OS_*`` environment is not read). The connection is made on first use and reused; every
request has ``ProviderContext.timeout`` (openstacksdk's ``api_timeout``, and the call as a whole).

**Which server.** The node's ``spec.providerID`` as the OpenStack cloud provider writes it:
``openstack:///<server-id>``, or ``openstack://<region>/<server-id>``.

**What it does.** :meth:`OpenStack.power` reads the server (``GET /servers/{id}``): Nova's
``ACTIVE`` is ``ON``, ``SHUTOFF`` ``OFF``, ``REBOOT`` and ``HARD_REBOOT`` ``REBOOTING``, a server
Nova does not know (404) ``ABSENT``, any other status (``BUILD``, ``ERROR``, ``PAUSED``...)
``UNKNOWN``. :meth:`OpenStack.reboot` asks for a ``HARD`` reboot (``{"reboot": {"type":
"HARD"}}``; a hard reboot also starts a stopped server) and :meth:`OpenStack.power_on` for
``os-start``; both return what Nova accepted, for the ledger. Replacing a machine is Cluster
API's (the ``clusterapi`` provider): it is not in :attr:`OpenStack.actions`.

**Errors** are :class:`~kubemedic.repair.providers.base.ProviderError` in one sentence naming the
node and the cause: a provider ID that is not OpenStack's, a cloud missing from ``clouds.yaml``,
credentials Keystone refuses, a cloud that cannot be reached or does not answer in time, a server
Nova does not know (for an action), and Nova's refusal (409) in its own words.

openstacksdk is synchronous: each call runs in a worker thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import keystoneauth1.exceptions as ksa
import openstack
import openstack.config
import openstack.connection
import openstack.exceptions as sdk

from kubemedic.model.durations import go_duration
from kubemedic.repair.policy.records import Action, Power
from kubemedic.repair.providers.base import Provider, ProviderContext, ProviderError, Target

__all__ = ["OpenStack", "make", "server_id"]

T = TypeVar("T")

_PROVIDER_ID = re.compile(r"^openstack://([^/]*)/([^/]+)$")
_POWER = {
    "ACTIVE": Power.ON,
    "SHUTOFF": Power.OFF,
    "REBOOT": Power.REBOOTING,
    "HARD_REBOOT": Power.REBOOTING,
}
#: Extra seconds the whole call gets beyond the per-request timeout (a token, then the request).
_GRACE = 5.0


def server_id(provider_id: str) -> str | None:
    """The server id in ``openstack:///<id>`` or ``openstack://<region>/<id>``; ``None`` for
    anything else."""
    match = _PROVIDER_ID.match(provider_id.strip())
    return match.group(2) if match else None


class OpenStack:
    """Nova's power controls for the nodes of one cloud."""

    name = "openstack"
    actions = frozenset({Action.REBOOT, Action.POWER_ON})
    #: Whether ``power`` can answer anything but UNKNOWN (the controller asks only then).
    tells_power = True

    def __init__(
        self,
        cloud: str = "",
        *,
        clouds_yaml: Path | None = None,
        timeout: timedelta = timedelta(minutes=2),
    ) -> None:
        self.cloud = cloud
        self.clouds_yaml = clouds_yaml
        self.timeout = timeout
        self._connection: openstack.connection.Connection | None = None
        self._lock = threading.Lock()

    @property
    def _label(self) -> str:
        return f"OpenStack cloud {self.cloud!r}" if self.cloud else "the default OpenStack cloud"

    # the Provider interface ------------------------------------------------------------------

    async def power(self, target: Target) -> Power:
        sid = self._server_id(target)

        def read(conn: openstack.connection.Connection) -> Power:
            try:
                server = conn.compute.get_server(sid)
            except sdk.NotFoundException:
                return Power.ABSENT
            return _POWER.get(str(server.status or "").upper(), Power.UNKNOWN)

        return await self._call(target, "read server", sid, read)

    async def reboot(self, target: Target) -> str:
        sid = self._server_id(target)

        def reboot(conn: openstack.connection.Connection) -> str:
            conn.compute.reboot_server(sid, "HARD")
            return f"Nova accepted a hard reboot of server {sid}"

        return await self._call(target, "reboot server", sid, reboot)

    async def power_on(self, target: Target) -> str:
        sid = self._server_id(target)

        def start(conn: openstack.connection.Connection) -> str:
            conn.compute.start_server(sid)
            return f"Nova accepted os-start of server {sid}"

        return await self._call(target, "start server", sid, start)

    async def replace(self, target: Target) -> str:
        raise ProviderError(
            f"node {target.node}: the openstack provider does not replace machines "
            "(the clusterapi provider does)"
        )

    async def close(self) -> None:
        with self._lock:
            conn, self._connection = self._connection, None
        if conn is not None:
            await asyncio.to_thread(conn.close)

    # calling openstacksdk --------------------------------------------------------------------

    def _server_id(self, target: Target) -> str:
        sid = server_id(target.provider_id)
        if sid is None:
            shown = repr(target.provider_id) if target.provider_id else "empty"
            raise ProviderError(
                f"node {target.node}: its provider ID is {shown}, not an OpenStack one "
                "(openstack:///<server-id>)"
            )
        return sid

    def _connect(self) -> openstack.connection.Connection:
        with self._lock:
            if self._connection is None:
                seconds = self.timeout.total_seconds()
                if self.clouds_yaml is None:
                    self._connection = openstack.connect(
                        cloud=self.cloud or None, api_timeout=seconds
                    )
                else:
                    config = openstack.config.OpenStackConfig(
                        config_files=[str(self.clouds_yaml)], load_envvars=False
                    )
                    region = config.get_one(cloud=self.cloud or None, api_timeout=seconds)
                    self._connection = openstack.connection.Connection(config=region)
            return self._connection

    async def _call(
        self,
        target: Target,
        what: str,
        sid: str,
        fn: Callable[[openstack.connection.Connection], T],
    ) -> T:
        def run() -> T:
            try:
                return fn(self._connect())
            except ProviderError:
                raise
            except Exception as exc:
                raise ProviderError(
                    f"node {target.node}: {what} {sid}: {self._explain(exc, sid)}"
                ) from exc

        try:
            return await asyncio.wait_for(
                asyncio.to_thread(run), self.timeout.total_seconds() + _GRACE
            )
        except TimeoutError:
            raise ProviderError(
                f"node {target.node}: {what} {sid}: the {self._label} did not answer within "
                f"{go_duration(self.timeout)}"
            ) from None

    def _explain(self, exc: Exception, sid: str) -> str:
        """The cause, in words (the clause after the node and the request)."""
        if isinstance(exc, ksa.Unauthorized) or (
            isinstance(exc, ksa.HttpError) and exc.http_status == 401
        ):
            return f"the {self._label} refused the credentials ({_first_line(exc)})"
        if isinstance(exc, ksa.ConnectionError | ksa.DiscoveryFailure):
            if _caused_by(exc, ksa.ConnectTimeout):
                return f"the {self._label} did not answer within {go_duration(self.timeout)}"
            return f"cannot reach the {self._label} ({_unreachable(exc)})"
        if isinstance(exc, sdk.NotFoundException):
            return f"Nova has no server {sid} (404)"
        if isinstance(exc, sdk.ConflictException):
            return f"Nova refused: {_nova_message(exc)} (409)"
        if isinstance(exc, sdk.HttpException):
            return f"Nova answered {exc.status_code}: {_nova_message(exc)}"
        if isinstance(exc, sdk.ConfigException | ksa.MissingRequiredOptions):
            where = f" in {self.clouds_yaml}" if self.clouds_yaml else ""
            return f"the {self._label} is not configured{where} ({_first_line(exc)})"
        return f"{type(exc).__name__}: {_first_line(exc)}"


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` or an exception it was raised from or during is a ``kind``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _unreachable(exc: BaseException) -> str:
    """``<url>: <the system's reason>`` out of requests' nested message, when it has both."""
    text = str(exc)
    url = re.search(r"https?://[^\s:/]+(?::\d+)?[^\s:]*", text)
    reason = re.search(r"\[Errno -?\d+\] ([^\"')]+)", text)
    if url and reason:
        return f"{url.group(0)}: {reason.group(1).strip().lower()}"
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _nova_message(exc: sdk.HttpException) -> str:
    """Nova's own sentence (``{"conflictingRequest": {"message": ...}}``), else the SDK's."""
    response: Any = getattr(exc, "response", None)
    try:
        body = response.json() if response is not None else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        for fault in body.values():
            if isinstance(fault, dict) and fault.get("message"):
                return str(fault["message"])
    return str(exc.details or _first_line(exc))


def make(context: ProviderContext) -> Provider:
    """The ``openstack`` provider from its settings (``context.settings``: the ``repair:``
    section's ``openstack`` part, ``OpenStackSettings(cloud, clouds_file)``, or the whole
    ``RepairSettings``), which ``context.extra`` (``cloud``, ``clouds_yaml``) overrides."""
    own = getattr(context.settings, "openstack", context.settings)
    cloud = str(context.extra.get("cloud") or getattr(own, "cloud", "") or "")
    path = str(context.extra.get("clouds_yaml") or getattr(own, "clouds_file", "") or "")
    return OpenStack(cloud, clouds_yaml=Path(path) if path else None, timeout=context.timeout)
