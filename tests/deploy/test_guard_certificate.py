"""The guard with a certificate kept by someone else: cert-manager's Secret (``ca.crt``,
``tls.crt``, ``tls.key``, no ``ca.key``) mounted read-only at ``--cert-dir``
(deploy/components/guard-cert-manager). It is used as it is, never written, and reported
renewed at each check so that the server loads the keeper's renewals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cryptography import x509

from kubemedic.guard import certs
from kubemedic.guard.serving import server_context

HOSTS = certs.service_names("kubemedic-guard", "kubemedic")


def _kept(tmp_path: Path, hosts: tuple[str, ...] = HOSTS) -> Path:
    """A directory laid out as cert-manager's Secret is."""
    made = certs.ensure(tmp_path / "made", hosts=hosts)
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    for name in ("ca.crt", "tls.crt", "tls.key"):
        shutil.copy(made.directory / name, mounted / name)
    return mounted


def _files(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}


def test_a_directory_without_the_authoritys_key_is_used_as_it_is(tmp_path: Path) -> None:
    mounted = _kept(tmp_path)
    before = _files(mounted)
    kept = certs.ensure(mounted, hosts=HOSTS)
    assert _files(mounted) == before, "nothing written"
    assert kept.renewed, "reported renewed: the server reloads the files at each check"
    assert kept.ca_pem == (mounted / "ca.crt").read_bytes()
    server_context(kept)  # the serving pair loads
    again = certs.ensure(mounted, hosts=HOSTS)
    assert _files(mounted) == before and again.ca_pem == kept.ca_pem


def test_a_kept_certificate_for_other_names_is_an_error_naming_them(tmp_path: Path) -> None:
    mounted = _kept(tmp_path, ("other.example",))
    with pytest.raises(certs.CertificateError, match=r"does not name kubemedic-guard"):
        certs.ensure(mounted, hosts=HOSTS)


def test_a_kept_pair_that_does_not_match_is_an_error(tmp_path: Path) -> None:
    mounted = _kept(tmp_path)
    other = _kept(tmp_path / "other")
    shutil.copy(other / "tls.key", mounted / "tls.key")
    with pytest.raises(certs.CertificateError, match="not a matching ECDSA"):
        certs.ensure(mounted, hosts=HOSTS)


def test_with_the_authoritys_key_the_directory_is_kubemedics_own(tmp_path: Path) -> None:
    made = certs.ensure(tmp_path / "own", hosts=HOSTS)
    serving = x509.load_pem_x509_certificate((made.directory / "tls.crt").read_bytes())
    again = certs.ensure(made.directory, hosts=(*HOSTS, "127.0.0.1"))
    assert again.renewed and again.ca_pem == made.ca_pem
    renewed = x509.load_pem_x509_certificate((made.directory / "tls.crt").read_bytes())
    assert renewed.serial_number != serving.serial_number
