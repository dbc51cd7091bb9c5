"""Nova v2.1, the part that shows servers and controls their power.

- ``GET /compute`` lists the API versions (``v2.0`` supported, ``v2.1`` current with
  microversions ``2.1`` to :data:`MAX_MICROVERSION`) and ``GET /compute/v2.1`` describes one,
  without a token, as Nova does; openstacksdk reads them to pick a microversion.
- With a token Keystone issued (``X-Auth-Token``; ``401`` otherwise): ``GET
  /compute/v2.1/servers`` and ``/servers/detail`` (filters ``name``, a regular expression as in
  Nova, ``uuid``, ``status``; paging by ``limit`` and ``marker`` with a ``servers_links`` next
  link), ``GET /compute/v2.1/servers/{id}`` (``404 itemNotFound`` for an unknown server) and
  ``POST /compute/v2.1/servers/{id}/action`` with ``reboot`` (``{"reboot": {"type":
  "HARD"|"SOFT"}}``), ``os-stop`` or ``os-start``: ``202`` and no body, ``409
  conflictingRequest`` when the server's state forbids it, ``400 badRequest`` for anything else.
- The microversion asked for in ``OpenStack-API-Version: compute X.Y`` (or
  ``X-OpenStack-Nova-API-Version``) is answered in the same headers; one outside the range gets
  ``406``. Server bodies have the fields of the newest microversion (the flavor embedded, as
  since 2.47), which older clients ignore.

Servers, their states and what the actions do are :mod:`.servers`'.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from kubemedic.model.quantities import Quantity
from kubemedic.sim.cluster.cloud.identity import Identity, base_url, respond, unauthorized
from kubemedic.sim.cluster.cloud.servers import Conflict, Instance, Servers
from kubemedic.sim.machinery.clock import rfc3339

__all__ = ["COMPUTE", "MAX_MICROVERSION", "Compute"]

#: Where Nova is served (as DevStack serves it).
COMPUTE = "/compute"
MIN_MICROVERSION = "2.1"
MAX_MICROVERSION = "2.96"
_HEADERS = ("OpenStack-API-Version", "X-OpenStack-Nova-API-Version")
_VERSION = re.compile(r"^(?:compute\s+)?(\d+)\.(\d+)$|^(?:compute\s+)?latest$", re.IGNORECASE)


def _fault(kind: str, code: int, message: str) -> web.Response:
    return respond({kind: {"code": code, "message": message}}, status=code)


def _pair(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return int(major), int(minor)


def _datetime(seconds: float) -> str:
    return rfc3339(datetime.fromtimestamp(seconds, UTC))


class Compute:
    """Nova's routes over :class:`Servers`, behind :class:`Identity`'s tokens."""

    path = COMPUTE + "/v2.1"

    def __init__(self, identity: Identity, servers: Servers) -> None:
        self.identity = identity
        self.servers = servers

    def add_routes(self, app: web.Application) -> None:
        for path in (COMPUTE, COMPUTE + "/"):
            app.router.add_get(path, self.versions)
        for path in (self.path, self.path + "/"):
            app.router.add_get(path, self.version)
        app.router.add_get(self.path + "/servers", self.list_servers)
        app.router.add_get(self.path + "/servers/detail", self.list_servers)
        app.router.add_get(self.path + "/servers/{id}", self.show)
        app.router.add_post(self.path + "/servers/{id}/action", self.action)

    # discovery ---------------------------------------------------------------------------------

    def _versions(self, base: str) -> list[dict[str, Any]]:
        return [
            {
                "id": "v2.0",
                "status": "SUPPORTED",
                "version": "",
                "min_version": "",
                "updated": "2011-01-21T11:33:21Z",
                "links": [{"rel": "self", "href": f"{base}{COMPUTE}/v2/"}],
            },
            {
                "id": "v2.1",
                "status": "CURRENT",
                "version": MAX_MICROVERSION,
                "min_version": MIN_MICROVERSION,
                "updated": "2013-07-23T11:33:21Z",
                "links": [{"rel": "self", "href": f"{base}{self.path}/"}],
            },
        ]

    async def versions(self, request: web.Request) -> web.Response:
        return respond({"versions": self._versions(base_url(request))})

    async def version(self, request: web.Request) -> web.Response:
        version = self._versions(base_url(request))[1]
        version["links"].append(
            {"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"}
        )
        version["media-types"] = [
            {
                "base": "application/json",
                "type": "application/vnd.openstack.compute+json;version=2.1",
            }
        ]
        return respond({"version": version})

    # the API -----------------------------------------------------------------------------------

    def _microversion(self, request: web.Request) -> str | web.Response:
        asked = next((request.headers[h] for h in _HEADERS if h in request.headers), "")
        if not asked:
            return MIN_MICROVERSION
        match = _VERSION.match(asked.strip())
        if match is None:
            return _fault("badRequest", 400, f"Invalid format for API version {asked!r}")
        if match.group(1) is None:
            return MAX_MICROVERSION
        version = f"{int(match.group(1))}.{int(match.group(2))}"
        if not _pair(MIN_MICROVERSION) <= _pair(version) <= _pair(MAX_MICROVERSION):
            return _fault(
                "computeFault",
                406,
                f"Version {version} is not supported by the API. Minimum is "
                f"{MIN_MICROVERSION} and maximum is {MAX_MICROVERSION}.",
            )
        return version

    def _authorized(self, request: web.Request) -> str | web.Response:
        """The microversion, or the response that refuses the request."""
        if self.identity.valid(request.headers.get("X-Auth-Token")) is None:
            return unauthorized()
        return self._microversion(request)

    @staticmethod
    def _answer(response: web.Response, version: str) -> web.Response:
        response.headers["OpenStack-API-Version"] = f"compute {version}"
        response.headers["X-OpenStack-Nova-API-Version"] = version
        response.headers["Vary"] = ", ".join(_HEADERS)
        return response

    async def list_servers(self, request: web.Request) -> web.Response:
        version = self._authorized(request)
        if isinstance(version, web.Response):
            return version
        query = request.query
        try:
            name = re.compile(query["name"]) if "name" in query else None
        except re.error:
            name = None
        found = [
            s
            for s in self.servers
            if (name is None or name.search(s.name))
            and query.get("uuid", s.id) == s.id
            and query.get("status", "").upper() in ("", self.servers.state(s).status)
        ]
        if "marker" in query:
            at = next((i for i, s in enumerate(found) if s.id == query["marker"]), None)
            if at is None:
                return self._answer(
                    _fault("badRequest", 400, f"marker [{query['marker']}] not found"), version
                )
            found = found[at + 1 :]
        links = []
        limit = query.get("limit", "")
        if limit.isdigit() and len(found) > int(limit):
            found = found[: int(limit)]
            base = f"{base_url(request)}{self.path}/servers"
            next_query = "&".join(f"{k}={v}" for k, v in query.items() if k != "marker")
            links.append(
                {"rel": "next", "href": f"{base}/detail?{next_query}&marker={found[-1].id}"}
            )
        detailed = request.path.endswith("/detail")
        body: dict[str, Any] = {
            "servers": [
                self._server(s, request) if detailed else self._brief(s, request) for s in found
            ]
        }
        if links:
            body["servers_links"] = links
        return self._answer(respond(body), version)

    async def show(self, request: web.Request) -> web.Response:
        version = self._authorized(request)
        if isinstance(version, web.Response):
            return version
        server = self.servers.get(request.match_info["id"])
        if server is None:
            return self._answer(self._not_found(request.match_info["id"]), version)
        return self._answer(respond({"server": self._server(server, request)}), version)

    async def action(self, request: web.Request) -> web.Response:
        version = self._authorized(request)
        if isinstance(version, web.Response):
            return version
        sid = request.match_info["id"]
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return self._answer(_fault("badRequest", 400, "Malformed request body"), version)
        if not isinstance(body, dict) or len(body) != 1:
            return self._answer(
                _fault("badRequest", 400, "There is no such action: " + ",".join(body or [])),
                version,
            )
        ((name, argument),) = body.items()
        server = self.servers.get(sid)
        try:
            if name == "reboot":
                kind = (argument or {}).get("type") if isinstance(argument, dict) else None
                if not isinstance(kind, str) or kind.upper() not in ("HARD", "SOFT"):
                    return self._answer(
                        _fault(
                            "badRequest",
                            400,
                            f"Invalid input for field/attribute type. Value: {kind}. "
                            "'type' must be one of 'HARD', 'SOFT'",
                        ),
                        version,
                    )
                if server is None:
                    return self._answer(self._not_found(sid), version)
                self.servers.reboot(server, kind.upper())
            elif name in ("os-stop", "os-start"):
                if server is None:
                    return self._answer(self._not_found(sid), version)
                (self.servers.stop if name == "os-stop" else self.servers.start)(server)
            else:
                return self._answer(
                    _fault("badRequest", 400, f"There is no such action: {name}"), version
                )
        except Conflict as exc:
            return self._answer(_fault("conflictingRequest", 409, str(exc)), version)
        return self._answer(web.Response(status=202), version)

    # bodies ------------------------------------------------------------------------------------

    @staticmethod
    def _not_found(sid: str) -> web.Response:
        return _fault("itemNotFound", 404, f"Instance {sid} could not be found.")

    def _links(self, server: Instance, request: web.Request) -> list[dict[str, str]]:
        base = base_url(request)
        return [
            {"rel": "self", "href": f"{base}{self.path}/servers/{server.id}"},
            {"rel": "bookmark", "href": f"{base}{COMPUTE}/servers/{server.id}"},
        ]

    def _brief(self, server: Instance, request: web.Request) -> dict[str, Any]:
        return {"id": server.id, "name": server.name, "links": self._links(server, request)}

    def _server(self, server: Instance, request: web.Request) -> dict[str, Any]:
        creds = self.identity.credentials
        state = self.servers.state(server)
        flavor = server.flavor
        host_id = hashlib.sha224(f"{creds.project_id}{server.zone}".encode()).hexdigest()
        created = _datetime(server.created)
        mac = hashlib.sha256(server.id.encode()).hexdigest()
        return {
            "id": server.id,
            "name": server.name,
            "status": state.status,
            "tenant_id": creds.project_id,
            "user_id": creds.user_id,
            "metadata": {},
            "hostId": host_id,
            "image": {"id": "", "links": []},
            "flavor": {
                "vcpus": _whole(flavor.cpu),
                "ram": _whole(flavor.memory) // 2**20,
                "disk": _whole(flavor.ephemeral_storage) // 2**30,
                "ephemeral": 0,
                "swap": 0,
                "original_name": flavor.instance_type,
                "extra_specs": {},
            },
            "created": created,
            "updated": created,
            "addresses": {
                "private": [
                    {
                        "version": 4,
                        "addr": server.address,
                        "OS-EXT-IPS:type": "fixed",
                        "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:"
                        + ":".join(mac[i : i + 2] for i in (0, 2, 4)),
                    }
                ]
                if server.address
                else []
            },
            "accessIPv4": "",
            "accessIPv6": "",
            "links": self._links(server, request),
            "OS-DCF:diskConfig": "MANUAL",
            "OS-EXT-AZ:availability_zone": server.zone or "nova",
            "config_drive": "",
            "key_name": None,
            "OS-SRV-USG:launched_at": created.rstrip("Z") + ".000000",
            "OS-SRV-USG:terminated_at": None,
            "security_groups": [{"name": "default"}],
            "OS-EXT-STS:task_state": state.task_state,
            "OS-EXT-STS:vm_state": state.vm_state,
            "OS-EXT-STS:power_state": state.power_state,
            "os-extended-volumes:volumes_attached": [],
            "locked": False,
            "locked_reason": None,
            "description": None,
            "tags": [],
            "trusted_image_certificates": None,
            "server_groups": [],
            "pinned_availability_zone": None,
        }


def _whole(quantity: str) -> int:
    """A quantity in whole base units (``16Gi`` -> bytes), 0 for an unreadable one."""
    try:
        return int(Quantity.parse(quantity).value)
    except ValueError:
        return 0
