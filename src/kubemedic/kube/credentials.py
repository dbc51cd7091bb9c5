"""Credentials from a kubeconfig's exec plugin (``users[].user.exec``), checked.

client-go runs the plugin and reads an ``ExecCredential`` from its standard output
(``{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
"status": {"token": "..."}}``); it runs it again when the server answers ``401`` (the token
expired). lightkube does the same, but a plugin that is missing, fails, hangs, or prints
something else ends there in a ``FileNotFoundError``, a ``JSONDecodeError`` or a ``TypeError``.
Here each of those is a ``KubeAccessError`` naming the user, the plugin and what was expected,
and a plugin gets ``EXEC_TIMEOUT`` seconds to answer.

Only bearer tokens are read (``status.token``); a plugin answering with a client certificate
(``status.clientCertificateData``) is refused with a message saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncGenerator
from typing import Any, Final

import httpx2
from lightkube.config.models import UserExec

from kubemedic.errors import InputError
from kubemedic.model import documents

__all__ = ["EXEC_TIMEOUT", "CredentialError", "ExecCredentials"]

EXEC_TIMEOUT: Final = 30.0
"""Seconds an exec plugin may take to print its credential."""

_MAX_OUTPUT: Final = 1024 * 1024


class CredentialError(InputError):
    """The kubeconfig's exec plugin gave no usable credential; ``str()`` names the user, the
    plugin and what went wrong."""


class ExecCredentials(httpx2.Auth):
    """Bearer tokens from the exec plugin ``exec_`` of user ``user`` (in ``source``)."""

    def __init__(self, exec_: UserExec, *, user: str, source: str) -> None:
        self.exec = exec_
        self.where = f"the exec plugin {_shown(exec_.command)} of user {user!r}"
        self._bearer: str | None = None

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._bearer:
            request.headers["Authorization"] = self._bearer
            response = yield request
            if response.status_code != 401:
                return
        token = await self.token()
        self._bearer = f"Bearer {token}"
        request.headers["Authorization"] = self._bearer
        yield request

    async def token(self) -> str:
        """Run the plugin and read the token of the ``ExecCredential`` it prints."""
        output = await self._run()
        try:
            credential = documents.load_json(output, where="its output")
        except documents.DocumentError as error:
            raise CredentialError(
                f"{self.where}: printed something that is not JSON ({error}); expected an "
                "ExecCredential"
            ) from None
        return self._token(credential)

    async def _run(self) -> bytes:
        env = dict(os.environ)
        for variable in self.exec.env or ():
            env[variable.name] = variable.value
        command = [self.exec.command, *(self.exec.args or ())]
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # so a timeout ends whatever the plugin started too
            )
        except OSError as error:
            raise CredentialError(
                f"{self.where}: cannot run it: {error.strerror or error}"
            ) from None
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), EXEC_TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            raise CredentialError(
                f"{self.where}: gave no credential within {EXEC_TIMEOUT:g} s"
            ) from None
        if process.returncode != 0:
            said = " ".join(stderr.decode("utf-8", "replace").split())
            detail = f": {_shown(said)}" if said else ""
            raise CredentialError(f"{self.where}: exited with status {process.returncode}{detail}")
        if len(stdout) > _MAX_OUTPUT:
            raise CredentialError(
                f"{self.where}: printed {len(stdout)} bytes; expected an ExecCredential"
            )
        return stdout

    def _token(self, credential: Any) -> str:
        expected = 'expected an ExecCredential with status.token ({"kind": "ExecCredential", ...})'
        if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
            found = (
                f"kind {_shown(str(credential.get('kind')))!r}"
                if isinstance(credential, dict)
                else f"a JSON {_json_type(credential)}"
            )
            raise CredentialError(f"{self.where}: printed {found}; {expected}")
        status = credential.get("status")
        token = status.get("token") if isinstance(status, dict) else None
        if isinstance(token, str) and token.strip() and "\n" not in token:
            return token.strip()
        if isinstance(status, dict) and status.get("clientCertificateData"):
            raise CredentialError(
                f"{self.where}: answered with a client certificate, which kubemedic does not "
                "support; expected status.token"
            )
        raise CredentialError(
            f"{self.where}: printed an ExecCredential without a token; {expected}"
        )


def _json_type(value: Any) -> str:
    names = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _shown(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "…"
