"""Keystone v3, the part a client needs to reach Nova: version discovery and tokens.

- ``GET /identity`` answers ``300 Multiple Choices`` with the one version (``v3.14``) and ``GET
  /identity/v3`` its version document, as keystoneauth's discovery reads them.
- ``POST /identity/v3/auth/tokens`` issues a token for the ``password`` method (the user by id,
  or by name with its domain by id or name; the project scope by id, or by name with its domain)
  or the ``application_credential`` method (by id, or by name with its user), answering ``201``
  with the token in ``X-Subject-Token`` and a body holding the user, the project, the roles and
  the service catalog (Nova's ``compute`` endpoint and Keystone's own ``identity`` one, each with
  the ``public``, ``internal`` and ``admin`` interfaces in the cloud's region). Wrong credentials
  answer ``401`` in Keystone's words; a malformed request ``400``.
- Tokens expire after :attr:`Identity.token_seconds` of cluster time (Keystone's default
  ``[token] expiration`` is an hour); a client that presents an expired or unknown token to Nova
  gets ``401`` and authenticates again (keystoneauth does so on its own). keystoneauth judges a
  token's ``expires_at`` by its own wall clock, so when the cluster's clock is behind it (a
  scenario that starts in the past) it finds every token stale and authenticates before each
  request it makes, several times per openstacksdk call. That is what a real Keystone whose
  clock lags the client's would see; to keep it cheap, the same credentials asking again within
  one second of cluster time get the token already issued, so tokens held number at most one
  per second of their lifetime.

Credentials are made once from the simulation's seed (:class:`Credentials`): a user ``kubemedic``
with a password in project ``kubemedic`` of the ``Default`` domain, and an application
credential of that user. URLs in answers are built from the request's own host, so they hold
whatever port the cloud is served on.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from kubemedic.sim.cluster.runtime.engine import Simulation

__all__ = ["IDENTITY", "Credentials", "Identity", "base_url", "respond", "unauthorized"]

#: Where Keystone is served (as DevStack serves it behind its web server).
IDENTITY = "/identity"
VERSION = "v3.14"
UPDATED = "2020-04-07T00:00:00Z"
DOMAIN = {"id": "default", "name": "Default"}


def respond(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def base_url(request: web.Request) -> str:
    """``scheme://host:port`` as the client reached the server."""
    return f"{request.scheme}://{request.host}"


def _rfc3339(seconds: float) -> str:
    """Keystone's timestamps: microseconds and ``Z``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Credentials:
    """The one user, project and application credential of the simulated cloud."""

    user_id: str
    username: str
    password: str
    project_id: str
    project_name: str
    application_credential_id: str
    application_credential_name: str
    application_credential_secret: str
    domain_name: str = DOMAIN["name"]

    @classmethod
    def generate(cls, seed: int) -> Credentials:
        """The same credentials for the same seed, drawn from their own source."""
        rng = random.Random(f"kubemedic-cloud-credentials-{seed}")  # noqa: S311 (a simulation)

        def hexid() -> str:
            return uuid.UUID(int=rng.getrandbits(128), version=4).hex

        def secret() -> str:
            return "".join(rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")
                           for _ in range(32))  # fmt: skip

        return cls(
            user_id=hexid(),
            username="kubemedic",
            password=secret(),
            project_id=hexid(),
            project_name="kubemedic",
            application_credential_id=hexid(),
            application_credential_name="kubemedic-repair",
            application_credential_secret=secret(),
        )


@dataclass(frozen=True)
class Token:
    id: str
    methods: tuple[str, ...]
    issued: float
    expires: float
    application_credential: bool


class Unauthorized(Exception):
    """Keystone's 401."""


class BadRequest(Exception):
    """Keystone's 400 (the message says what is wrong with the request)."""


def _error(code: int, title: str, message: str) -> web.Response:
    return respond({"error": {"code": code, "title": title, "message": message}}, status=code)


def unauthorized() -> web.Response:
    return _error(401, "Unauthorized", "The request you have made requires authentication.")


class Identity:
    """Keystone for the simulated cloud: checks credentials, issues and validates tokens."""

    token_seconds = 3600.0

    def __init__(self, sim: Simulation, credentials: Credentials, *, region: str) -> None:
        self.sim = sim
        self.credentials = credentials
        self.region = region
        self.tokens: dict[str, Token] = {}
        #: The token last issued per (methods, scope, cluster second): asked again within the
        #: same second, Keystone's answer is that token (see the module's docstring).
        self._issued: dict[tuple[tuple[str, ...], bool, int], Token] = {}
        self._ids = random.Random(f"kubemedic-cloud-tokens-{sim.seed}")  # noqa: S311
        #: Filled by the cloud: the compute endpoint's path (``/compute/v2.1``).
        self.compute_path = ""

    def add_routes(self, app: web.Application) -> None:
        for path in (IDENTITY, IDENTITY + "/"):
            app.router.add_get(path, self.versions)
        for path in (IDENTITY + "/v3", IDENTITY + "/v3/"):
            app.router.add_get(path, self.version)
        app.router.add_post(IDENTITY + "/v3/auth/tokens", self.issue)

    # discovery ---------------------------------------------------------------------------------

    def _version(self, request: web.Request) -> dict[str, Any]:
        return {
            "id": VERSION,
            "status": "stable",
            "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base_url(request)}{IDENTITY}/v3/"}],
            "media-types": [
                {"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}
            ],
        }

    async def versions(self, request: web.Request) -> web.Response:
        return respond({"versions": {"values": [self._version(request)]}}, status=300)

    async def version(self, request: web.Request) -> web.Response:
        return respond({"version": self._version(request)})

    # tokens ------------------------------------------------------------------------------------

    def valid(self, token_id: str | None) -> Token | None:
        """The token if Keystone would still accept it now."""
        token = self.tokens.get(token_id or "")
        if token is None or token.expires <= self.sim.seconds():
            return None
        return token

    async def issue(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
            auth = body["auth"]
            methods = tuple(auth["identity"]["methods"])
            if not methods:
                raise BadRequest("Invalid input for field 'identity/methods': [] is too short")
            for method in methods:
                if method == "password":
                    self._check_password(auth["identity"]["password"])
                elif method == "application_credential":
                    self._check_application_credential(auth["identity"][method])
                else:
                    raise Unauthorized
            scoped = self._check_scope(
                auth.get("scope"), application="application_credential" in methods
            )
        except Unauthorized:
            return unauthorized()
        except BadRequest as exc:
            return _error(400, "Bad Request", str(exc))
        except (ValueError, KeyError, TypeError, AttributeError):
            return _error(400, "Bad Request", "Invalid input for field 'auth'.")
        now = self.sim.seconds()
        key = (methods, scoped, int(now))
        token = self._issued.get(key)
        if token is None or token.expires <= now:
            token = Token(
                id="gAAAAA" + uuid.UUID(int=self._ids.getrandbits(128), version=4).hex,
                methods=methods,
                issued=now,
                expires=now + self.token_seconds,
                application_credential="application_credential" in methods,
            )
            if len(self._issued) > 64:
                self._issued.clear()
            self._issued[key] = token
            self.tokens = {k: t for k, t in self.tokens.items() if t.expires > now}
            self.tokens[token.id] = token
        return respond(
            {"token": self._token_body(token, request, scoped=scoped)},
            status=201,
            headers={"X-Subject-Token": token.id},
        )

    def _domain_matches(self, domain: Any) -> bool:
        if not isinstance(domain, dict):
            raise BadRequest("a name must come with its domain")
        return domain.get("id") == DOMAIN["id"] or domain.get("name") == DOMAIN["name"]

    def _user_matches(self, user: Any) -> bool:
        creds = self.credentials
        if not isinstance(user, dict):
            raise BadRequest("Invalid input for field 'identity/user'.")
        if "id" in user:
            return bool(user["id"] == creds.user_id)
        return user.get("name") == creds.username and self._domain_matches(user.get("domain"))

    def _check_password(self, method: Mapping[str, Any]) -> None:
        user = method["user"]
        if not (self._user_matches(user) and user.get("password") == self.credentials.password):
            raise Unauthorized

    def _check_application_credential(self, method: Mapping[str, Any]) -> None:
        creds = self.credentials
        if "id" in method:
            known = method["id"] == creds.application_credential_id
        else:
            known = method.get("name") == creds.application_credential_name and self._user_matches(
                method.get("user")
            )
        if not (known and method.get("secret") == creds.application_credential_secret):
            raise Unauthorized

    def _check_scope(self, scope: Any, *, application: bool) -> bool:
        """Whether the token is scoped to the project (an application credential's always is)."""
        if scope is None:
            return application
        if application:
            # Keystone refuses a scope alongside an application credential.
            raise Unauthorized
        project = scope.get("project") if isinstance(scope, dict) else None
        if not isinstance(project, dict):
            raise Unauthorized  # domain or system scope: no role there
        if "id" in project:
            if project["id"] != self.credentials.project_id:
                raise Unauthorized
        elif project.get("name") != self.credentials.project_name or not self._domain_matches(
            project.get("domain")
        ):
            raise Unauthorized
        return True

    def _token_body(self, token: Token, request: web.Request, *, scoped: bool) -> dict[str, Any]:
        creds = self.credentials
        body: dict[str, Any] = {
            "methods": list(token.methods),
            "user": {
                "id": creds.user_id,
                "name": creds.username,
                "domain": dict(DOMAIN),
                "password_expires_at": None,
            },
            "audit_ids": [token.id[-22:]],
            "issued_at": _rfc3339(token.issued),
            "expires_at": _rfc3339(token.expires),
        }
        if not scoped:
            return body
        body["project"] = {
            "id": creds.project_id,
            "name": creds.project_name,
            "domain": dict(DOMAIN),
        }
        body["is_domain"] = False
        body["roles"] = [
            {"id": uuid.UUID(int=n + 1).hex, "name": name}
            for n, name in enumerate(("member", "reader"))
        ]
        if token.application_credential:
            body["application_credential"] = {
                "id": creds.application_credential_id,
                "name": creds.application_credential_name,
                "restricted": True,
            }
        body["catalog"] = self.catalog(base_url(request))
        return body

    def catalog(self, base: str) -> list[dict[str, Any]]:
        services = (
            ("compute", "nova", base + self.compute_path),
            ("identity", "keystone", base + IDENTITY),
        )
        catalog = []
        for n, (kind, name, url) in enumerate(services):
            endpoints = [
                {
                    "id": uuid.UUID(int=(n + 1) * 16 + i).hex,
                    "interface": interface,
                    "region": self.region,
                    "region_id": self.region,
                    "url": url,
                }
                for i, interface in enumerate(("public", "internal", "admin"))
            ]
            catalog.append(
                {"id": uuid.UUID(int=n + 1).hex, "type": kind, "name": name, "endpoints": endpoints}
            )
        return catalog
