"""``kubemedic guard``: the validating admission webhook (docs/guard.md).

``guard serve`` answers kube-apiserver's AdmissionReviews over HTTPS with a certificate kept in
``--cert-dir`` (made on first start); ``guard render`` prints the
``ValidatingWebhookConfiguration`` calling it, with the same directory's authority as
``caBundle``. Both name the certificate's hosts the same way (``--service``/``--namespace``,
``--san``), so whichever runs first makes the certificates and the other reuses them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer

from kubemedic.cli._common import (
    ContextOption,
    KubeconfigOption,
    _fail,
    configure_logging,
    listen_address,
    out_console,
)

if TYPE_CHECKING:
    from kubemedic.guard.settings import GuardConfig

__all__ = ["register"]

guard_app = typer.Typer(
    name="guard",
    help="Admission webhook: warn about (or refuse) hand edits of GitOps-managed objects.",
    no_args_is_help=True,
)

CertDirOption = Annotated[
    Path,
    typer.Option("--cert-dir", help="Where the CA and serving certificate are kept (0600 keys)."),
]
ServiceOption = Annotated[
    str, typer.Option("--service", help="The guard's Service name (the certificate's host).")
]
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        help="The guard's namespace (default: $POD_NAMESPACE, else kubemedic).",
    ),
]
SanOption = Annotated[
    list[str] | None,
    typer.Option("--san", help="A further host name or IP address for the certificate."),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="YAML file with a guard: section (docs/guard.md)."),
]


def _namespace(namespace: str | None) -> str:
    return namespace or os.environ.get("POD_NAMESPACE") or "kubemedic"


def _hosts(service: str, namespace: str, sans: list[str] | None) -> tuple[str, ...]:
    from kubemedic.guard.certs import service_names  # noqa: PLC0415

    return (*service_names(service, namespace), *(sans or ()))


def _config(path: Path | None) -> GuardConfig:
    from kubemedic import config as configuration  # noqa: PLC0415
    from kubemedic.guard import settings as guard_settings  # noqa: PLC0415

    if path is None:
        return guard_settings.GuardConfig()
    try:
        return guard_settings.load(configuration.load_settings(path))
    except configuration.ConfigError as error:
        raise _fail(f"--config {error}") from None


@guard_app.command("serve")
def serve(
    *,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    listen: Annotated[
        str, typer.Option(help="Address of /validate, /healthz and /metrics (HOST:PORT).")
    ] = "0.0.0.0:8443",
    cert_dir: CertDirOption = Path("/var/run/kubemedic-guard"),
    service: ServiceOption = "kubemedic-guard",
    namespace: NamespaceOption = None,
    san: SanOption = None,
    config: ConfigOption = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Serve the webhook over HTTPS until stopped."""
    import asyncio  # noqa: PLC0415 - loaded when it runs

    from kubemedic.guard.certs import CertificateError  # noqa: PLC0415
    from kubemedic.guard.serving import GuardOptions, run_guard  # noqa: PLC0415
    from kubemedic.kube.config import KubeAccessError  # noqa: PLC0415

    configure_logging(log_level, quiet=("aiohttp.access",))
    host_text, port = listen_address(listen, example="0.0.0.0:8443")
    loaded = _config(config)
    options = GuardOptions(
        settings=loaded.guard,
        cert_dir=cert_dir,
        hosts=_hosts(service, _namespace(namespace), san),
        listen_host=host_text,
        listen_port=port,
        kubeconfig=kubeconfig,
        context=context,
    )
    try:
        asyncio.run(run_guard(options))
    except (KubeAccessError, CertificateError) as error:
        raise _fail(str(error)) from None
    except KeyboardInterrupt:
        return


@guard_app.command("render")
def render(
    *,
    service: ServiceOption = "kubemedic-guard",
    namespace: NamespaceOption = None,
    url: Annotated[
        str | None,
        typer.Option("--url", help="Call the guard at this https URL instead of the Service."),
    ] = None,
    cert_dir: CertDirOption = Path("/var/run/kubemedic-guard"),
    san: SanOption = None,
    failure_policy: Annotated[
        str, typer.Option("--failure-policy", help="Ignore (fail open, default) or Fail.")
    ] = "Ignore",
    timeout_seconds: Annotated[
        int, typer.Option("--timeout-seconds", help="1 to 30: how long a write waits for it.")
    ] = 5,
    config: ConfigOption = None,
    output: Annotated[str, typer.Option("--output", "-o", help="yaml or json.")] = "yaml",
) -> None:
    """Print the ValidatingWebhookConfiguration (caBundle from --cert-dir, made if missing)."""
    import json  # noqa: PLC0415

    from kubemedic.guard import certs  # noqa: PLC0415
    from kubemedic.guard.render import render_configuration  # noqa: PLC0415

    if output not in ("yaml", "json"):
        raise _fail(f"--output {output!r}: use yaml or json")
    loaded = _config(config)
    ns = _namespace(namespace)
    extra = list(san or ())
    if url is not None:
        host = urlsplit(url).hostname
        if host:
            extra.append(host)
    try:
        kept = certs.ensure(cert_dir, hosts=_hosts(service, ns, extra))
        manifest = render_configuration(
            ca_bundle=kept.ca_pem,
            service=None if url is not None else (service, ns),
            url=url,
            kinds=loaded.kinds,
            guard_namespace=ns,
            failure_policy=failure_policy,
            timeout_seconds=timeout_seconds,
        )
    except certs.CertificateError as error:
        raise _fail(str(error)) from None
    except ValueError as error:
        raise _fail(str(error)) from None
    if output == "json":
        text = json.dumps(manifest, indent=2)
    else:
        import yaml  # noqa: PLC0415

        text = yaml.safe_dump(manifest, sort_keys=False).rstrip("\n")
    out_console().print(text, markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``guard`` (serve, render) to ``app``."""
    app.add_typer(guard_app)
