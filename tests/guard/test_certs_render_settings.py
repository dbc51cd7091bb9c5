"""The guard's certificates (made once, reused, renewed), its rendered configuration and its
``guard:`` settings."""

from __future__ import annotations

import base64
import datetime
import stat
from pathlib import Path

import pytest
from cryptography import x509

from kubemedic.config import ConfigError, settings_from
from kubemedic.guard import certs, render_configuration
from kubemedic.guard import settings as guard_settings
from kubemedic.guard.policy import GITOPS_SERVICE_ACCOUNTS, Policy

HOSTS = (*certs.service_names("kubemedic-guard", "ops"), "127.0.0.1")
NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.UTC)


def _serving(directory: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate((directory / "tls.crt").read_bytes())


def test_the_serving_certificate_names_the_service_and_extra_hosts_signed_by_the_ca(
    tmp_path: Path,
) -> None:
    made = certs.ensure(tmp_path / "c", hosts=HOSTS, now=NOW)
    assert made.renewed
    cert = _serving(made.directory)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "kubemedic-guard", "kubemedic-guard.ops", "kubemedic-guard.ops.svc",
        "kubemedic-guard.ops.svc.cluster.local",
    ]  # fmt: skip
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(made.ca_pem))
    for name in ("ca.key", "tls.key"):
        assert stat.S_IMODE((made.directory / name).stat().st_mode) == 0o600


def test_valid_certificates_are_reused_and_renewed_close_to_expiry_with_the_same_ca(
    tmp_path: Path,
) -> None:
    first = certs.ensure(tmp_path, hosts=HOSTS, now=NOW)
    serial = _serving(tmp_path).serial_number
    again = certs.ensure(tmp_path, hosts=HOSTS, now=NOW + datetime.timedelta(days=100))
    assert not again.renewed and _serving(tmp_path).serial_number == serial
    late = certs.ensure(tmp_path, hosts=HOSTS, now=NOW + datetime.timedelta(days=340))
    assert late.renewed and _serving(tmp_path).serial_number != serial
    assert late.ca_pem == first.ca_pem  # the caBundle stays the same


def test_a_new_host_or_a_foreign_certificate_is_replaced(tmp_path: Path) -> None:
    first = certs.ensure(tmp_path, hosts=HOSTS, now=NOW)
    assert certs.ensure(tmp_path, hosts=(*HOSTS, "10.0.0.7"), now=NOW).renewed
    (tmp_path / "tls.crt").write_text("not a certificate")
    again = certs.ensure(tmp_path, hosts=HOSTS, now=NOW)
    assert again.renewed and again.ca_pem == first.ca_pem


def test_an_unwritable_directory_is_an_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(certs.CertificateError, match="cannot keep the guard's certificates"):
        certs.ensure(blocker / "sub", hosts=HOSTS)


def test_the_configuration_fails_open_with_a_short_timeout_and_spares_system_namespaces() -> None:
    manifest = render_configuration(
        ca_bundle=b"PEM", service=("kubemedic-guard", "ops"), kinds=("configmaps",)
    )
    (hook,) = manifest["webhooks"]
    assert manifest["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert hook["clientConfig"] == {
        "caBundle": base64.b64encode(b"PEM").decode(),
        "service": {"name": "kubemedic-guard", "namespace": "ops", "path": "/validate",
                    "port": 443},
    }  # fmt: skip
    assert (hook["failurePolicy"], hook["timeoutSeconds"], hook["sideEffects"]) == (
        "Ignore", 5, "None"
    )  # fmt: skip
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
         "values": ["kube-system", "ops"]}
    ]  # fmt: skip
    apps = hook["rules"][0]
    assert apps["operations"] == ["CREATE", "UPDATE"] and "deployments" in apps["resources"]
    assert hook["rules"][-1] == {
        "operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["*"],
        "resources": ["configmaps"], "scope": "Namespaced",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"service": ("a", "b"), "url": "https://x/validate"}, "either a service"),
        ({"url": "http://x/validate"}, "https only"),
        ({"url": "https://x/", "failure_policy": "Never"}, "expected Ignore or Fail"),
        ({"url": "https://x/", "timeout_seconds": 31}, "expected 1 to 30"),
        ({"url": "https://x/", "kinds": ("Deployment",)}, "expected a resource"),
    ],
)
def test_bad_render_arguments_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render_configuration(ca_bundle=b"PEM", **options)  # type: ignore[arg-type]


def test_the_guard_section_is_read_and_checked() -> None:
    loaded = guard_settings.load(
        settings_from(
            {"guard": {"policy": "deny", "exemptGroups": ["ops"], "kinds": ["configmaps"]}},
            source="k.yaml",
        )
    )
    assert loaded.guard.policy is Policy.DENY and loaded.guard.exempt_groups == ("ops",)
    assert loaded.guard.exempt_users == GITOPS_SERVICE_ACCOUNTS
    assert guard_settings.load(settings_from({}, source="k.yaml")).policy is Policy.WARN


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"policy": "block"}, "k.yaml: guard.policy: expected warn or deny, got 'block'"),
        ({"polcy": "deny"}, "k.yaml: guard: unknown setting \"polcy\"; did you mean 'policy'?"),
        ({"kinds": ["Deploy ments"]}, "k.yaml: guard.kinds[0]: 'Deploy ments': expected"),
        ({"failOpen": "yes"}, "k.yaml: guard.failOpen: expected true or false"),
    ],
)
def test_a_bad_guard_section_is_an_error_naming_the_key(
    section: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        guard_settings.load(settings_from({"guard": section}, source="k.yaml"))
    assert message in str(caught.value)
