"""The guard's TLS: a certificate authority and a serving certificate, made once and kept.

kube-apiserver calls a webhook over HTTPS only, verifying the server against the
``clientConfig.caBundle`` of the ``ValidatingWebhookConfiguration`` and checking that the
certificate names the host it called: ``SERVICE.NAMESPACE.svc`` for a service reference (the
name it dials). So the serving certificate carries the DNS names ``SERVICE``,
``SERVICE.NAMESPACE``, ``SERVICE.NAMESPACE.svc`` and ``SERVICE.NAMESPACE.svc.cluster.local``,
plus any extra names or IP addresses asked for (``127.0.0.1`` when the webhook is called by URL
in tests).

Files in the directory (keys ``0600``, written whole or not at all):

- ``ca.crt`` / ``ca.key``: the authority (ECDSA P-256, ten years); ``ca.crt`` is the
  ``caBundle``;
- ``tls.crt`` / ``tls.key``: the serving certificate (one year), signed by the authority, with
  the ``serverAuth`` extended key usage.

:func:`ensure` reuses what is there while it is valid: the serving certificate is renewed (by
the same authority, so the ``caBundle`` stays the same) when it expires within ``renew_before``
(30 days), does not name every host asked for, or was not signed by ``ca.crt``; the authority is
replaced (and the configuration must be rendered again) only when it is missing, unreadable or
expires within ``renew_before``.

**A directory kept by someone else.** A directory with ``tls.crt`` and ``tls.key`` but no
``ca.key`` (cert-manager's Secret, mounted read-only: ``ca.crt``, ``tls.crt``, ``tls.key``) is
used as it is and never written: its keeper renews it. The serving certificate must still be an
ECDSA one naming every host; :func:`ensure` reports it ``renewed`` each time, so that a running
server loads the files again at each check and follows the keeper's renewals.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubemedic.errors import KubemedicError

__all__ = ["CertificateError", "Certificates", "ensure", "service_names"]

CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE = datetime.timedelta(days=30)
_SKEW = datetime.timedelta(minutes=5)
_SERVING = datetime.timedelta(days=SERVING_DAYS)


class CertificateError(KubemedicError):
    """The certificate directory cannot be read or written."""


@dataclass(frozen=True, slots=True)
class Certificates:
    """Where the files are, and the authority's PEM (the ``caBundle``, base64-encoded)."""

    directory: Path
    ca_pem: bytes
    renewed: bool
    """Whether :func:`ensure` wrote anything this time."""

    @property
    def cert_file(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.directory / "tls.key"

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.crt"


def service_names(service: str, namespace: str) -> tuple[str, ...]:
    """The DNS names a Service is dialled by inside the cluster."""
    base = f"{service}.{namespace}"
    return (service, base, f"{base}.svc", f"{base}.svc.cluster.local")


def ensure(
    directory: Path,
    *,
    hosts: tuple[str, ...],
    now: datetime.datetime | None = None,
    renew_before: datetime.timedelta = RENEW_BEFORE,
) -> Certificates:
    """The authority and a serving certificate for ``hosts`` (DNS names or IP addresses) in
    ``directory`` (created ``0700`` if missing), reused or renewed as the module says."""
    if not hosts:
        raise CertificateError("a serving certificate needs at least one host name")
    at = now or datetime.datetime.now(datetime.UTC)
    if _kept_elsewhere(directory):
        return _external(directory, hosts)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        ca = _read_pair(directory / "ca.crt", directory / "ca.key")
        renewed = False
        if ca is None or ca[0].not_valid_after_utc - renew_before <= at:
            ca = _new_ca(at)
            _write(directory / "ca.key", _key_pem(ca[1]))
            _write(directory / "ca.crt", _cert_pem(ca[0]))
            renewed = True
        serving = _read_pair(directory / "tls.crt", directory / "tls.key")
        if renewed or serving is None or not _usable(serving[0], ca[0], hosts, at, renew_before):
            cert, key = _new_serving(ca, hosts, at)
            _write(directory / "tls.key", _key_pem(key))
            _write(directory / "tls.crt", _cert_pem(cert))
            renewed = True
    except OSError as error:
        raise CertificateError(
            f"{directory}: cannot keep the guard's certificates: {error.strerror or error}"
        ) from None
    return Certificates(directory, _cert_pem(ca[0]), renewed)


_Pair = tuple[x509.Certificate, ec.EllipticCurvePrivateKey]


def _kept_elsewhere(directory: Path) -> bool:
    return (directory / "tls.crt").is_file() and not (directory / "ca.key").exists()


def _external(directory: Path, hosts: tuple[str, ...]) -> Certificates:
    serving = _read_pair(directory / "tls.crt", directory / "tls.key")
    if serving is None:
        raise CertificateError(
            f"{directory}: tls.crt and tls.key are not a matching ECDSA certificate and key"
        )
    missing = [host for host in hosts if _canonical(host) not in _names(serving[0])]
    if missing:
        raise CertificateError(
            f"{directory}/tls.crt does not name {', '.join(missing)}: the webhook is called so"
        )
    try:
        ca_pem = (directory / "ca.crt").read_bytes()
    except OSError:
        ca_pem = _cert_pem(serving[0])
    return Certificates(directory, ca_pem, renewed=True)


def _read_pair(cert_file: Path, key_file: Path) -> _Pair | None:
    if not cert_file.is_file() or not key_file.is_file():
        return None
    try:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    except ValueError:
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        return None
    public = cert.public_key()
    if not isinstance(public, ec.EllipticCurvePublicKey):
        return None
    if public.public_numbers() != key.public_key().public_numbers():
        return None
    return cert, key


def _usable(
    cert: x509.Certificate,
    ca: x509.Certificate,
    hosts: tuple[str, ...],
    at: datetime.datetime,
    renew_before: datetime.timedelta,
) -> bool:
    if cert.not_valid_after_utc - renew_before <= at or cert.not_valid_before_utc > at:
        return False
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    have = _names(cert)
    return bool(have) and all(_canonical(host) in have for host in hosts)


def _names(cert: x509.Certificate) -> set[str]:
    """The DNS names and IP addresses of the subject alternative names."""
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    have = {str(n) for n in names.get_values_for_type(x509.DNSName)}
    have |= {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    return have


def _canonical(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _new_ca(at: datetime.datetime) -> _Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("kubemedic-guard-ca")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(at - _SKEW)
        .not_valid_after(at + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _new_serving(ca: _Pair, hosts: tuple[str, ...], at: datetime.datetime) -> _Pair:
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(at - _SKEW)
        .not_valid_after(
            min(at + datetime.timedelta(days=SERVING_DAYS), ca_cert.not_valid_after_utc)
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` whole (a temporary file renamed over ``path``), ``0600``."""
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)
