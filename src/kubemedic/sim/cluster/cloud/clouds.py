"""The simulated OpenStack cloud as a whole: Keystone and Nova on the API server's port, and the
``clouds.yaml`` that lets openstacksdk (``openstack.connect(cloud="kubemedic-sim")``) reach it.

:meth:`Cloud.serve_on` adds the cloud's routes to an :class:`~kubemedic.sim.apiserver.server.
ApiServer` before it starts, so Keystone answers under ``/identity`` and Nova under
``/compute`` of the same ``http://127.0.0.1:<port>`` as the Kubernetes API.
:meth:`Cloud.clouds_yaml` is the ``clouds.yaml`` document for one cloud named
:data:`CLOUD_NAME` (``auth_url``, ``region_name``, ``interface: public``,
``identity_api_version: 3``) that authenticates with the generated application credential
(``auth_type: v3applicationcredential``) or, with ``auth="password"``, with the user's password
and project scope; :meth:`Cloud.write_clouds_yaml` writes it atomically (``sim run --serve
--clouds-out FILE``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from aiohttp import web

from kubemedic.output.files import write_atomically
from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.cluster.cloud.compute import Compute
from kubemedic.sim.cluster.cloud.identity import IDENTITY, Credentials, Identity
from kubemedic.sim.cluster.cloud.servers import Servers
from kubemedic.sim.cluster.infra.providers import Infrastructure
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts

__all__ = ["CLOUD_NAME", "AuthMethod", "Cloud"]

CLOUD_NAME = "kubemedic-sim"

AuthMethod = Literal["application_credential", "password"]


class Cloud:
    """Keystone and Nova over one simulation's VMs and hosts.

    ``region`` defaults to the infrastructure provider's (``RegionOne``). The credentials come
    from the simulation's seed (:class:`~kubemedic.sim.cluster.cloud.identity.Credentials`).
    """

    def __init__(self, sim: Simulation, hosts: Hosts, *, region: str | None = None) -> None:
        infrastructure = sim.find(Infrastructure)
        self.region = region or (infrastructure.region if infrastructure else "RegionOne")
        self.credentials = Credentials.generate(sim.seed)
        self.identity = Identity(sim, self.credentials, region=self.region)
        self.servers = Servers(sim, hosts)
        self.compute = Compute(self.identity, self.servers)
        self.identity.compute_path = self.compute.path

    def add_routes(self, app: web.Application) -> None:
        self.identity.add_routes(app)
        self.compute.add_routes(app)

    def serve_on(self, server: ApiServer) -> Cloud:
        """Serve the cloud on ``server``'s port (call before ``server.start``)."""
        server.routes.append(self.add_routes)
        return self

    def clouds_yaml(
        self, url: str, *, auth: AuthMethod = "application_credential", name: str = CLOUD_NAME
    ) -> dict[str, Any]:
        """The ``clouds.yaml`` document for the cloud served at ``url`` (the server's base URL)."""
        creds = self.credentials
        entry: dict[str, Any]
        if auth == "password":
            entry = {
                "auth_type": "password",
                "auth": {
                    "auth_url": f"{url}{IDENTITY}/v3",
                    "username": creds.username,
                    "password": creds.password,
                    "user_domain_name": creds.domain_name,
                    "project_name": creds.project_name,
                    "project_domain_name": creds.domain_name,
                },
            }
        else:
            entry = {
                "auth_type": "v3applicationcredential",
                "auth": {
                    "auth_url": f"{url}{IDENTITY}/v3",
                    "application_credential_id": creds.application_credential_id,
                    "application_credential_secret": creds.application_credential_secret,
                },
            }
        entry.update(region_name=self.region, interface="public", identity_api_version=3)
        return {"clouds": {name: entry}}

    def write_clouds_yaml(
        self,
        path: Path,
        url: str,
        *,
        auth: AuthMethod = "application_credential",
        force: bool = False,
        flag: str = "--clouds-out",
    ) -> None:
        """Write :meth:`clouds_yaml` atomically, never over a directory, link or special file
        unless ``force``."""
        text = yaml.safe_dump(self.clouds_yaml(url, auth=auth), sort_keys=False)
        write_atomically(path, text.encode(), flag=flag, force=force)
