"""``kubemedic guard``: the command line's errors, one line each, naming the flag or key."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubemedic.model import documents
from tests.inprocess import kubemedic, one_error_line


def test_render_prints_a_configuration_and_keeps_the_certificates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = kubemedic(
        capsys, "guard", "render", "--service", "guard", "--namespace", "ops",
        "--cert-dir", str(tmp_path), "--timeout-seconds", "3",
    )  # fmt: skip
    assert code == 0, err
    manifest = documents.load_yaml(out, where="stdout")
    hook = manifest["webhooks"][0]
    assert hook["clientConfig"]["service"]["name"] == "guard"
    assert hook["timeoutSeconds"] == 3 and hook["failurePolicy"] == "Ignore"
    assert {p.name for p in tmp_path.iterdir()} == {"ca.crt", "ca.key", "tls.crt", "tls.key"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["render", "--failure-policy", "Never"], "failurePolicy 'Never': expected Ignore or Fail"),
        (["render", "--url", "http://x/validate"], "kube-apiserver calls webhooks over https"),
        (["serve", "--listen", "8443"], "--listen '8443': expected HOST:PORT"),
    ],
)
def test_bad_flags_are_one_line_naming_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    code, _, err = kubemedic(capsys, "guard", *args, "--cert-dir", str(tmp_path))
    assert code == 2
    assert message in one_error_line(err)


def test_a_bad_guard_section_names_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "kubemedic.yaml"
    config.write_text("guard:\n  policy: block\n")
    code, _, err = kubemedic(
        capsys, "guard", "render", "--config", str(config), "--cert-dir", str(tmp_path / "c")
    )
    assert code == 2
    assert "guard.policy: expected warn or deny, got 'block'" in one_error_line(err)
