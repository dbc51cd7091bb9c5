"""The rollback spec: the defaults hold, every refusal says why (exit 2 through the CLI)."""

from __future__ import annotations

from typing import Any

import pytest

from kubemedic.errors import InputError
from kubemedic.rollback.spec import (
    DEFAULT_KEEP,
    DEFAULT_OVERLAY,
    Bind,
    RollbackSpec,
    SpecError,
    load_spec,
    parse_spec,
)


def test_the_defaults_are_the_talks_and_pass_their_own_validation() -> None:
    spec = parse_spec({})
    assert spec == RollbackSpec()
    assert set(DEFAULT_OVERLAY) == {"/etc", "/home", "/opt", "/usr", "/var"}
    for kept in ("/var/log", "/var/lib/containerd", "/etc/kubernetes", "/opt/cni/bin"):
        assert kept in DEFAULT_KEEP
    assert {"/etc/cni/net.d", "/usr/libexec/kubernetes", "/var/lib/kubelet"} <= set(DEFAULT_KEEP)
    assert spec.tmpfs_option() == "10%"
    assert parse_spec(spec.as_document()) == spec


def test_an_empty_document_is_the_defaults_and_yaml_reads_through_documents() -> None:
    assert load_spec("# nothing\n", where="f") == RollbackSpec()
    spec = load_spec(
        "overlay: [/home, /opt/]\nkeep: [/opt/cni/bin]\ntmpfsSize: 512Mi\n"
        "binds: [{source: /srv/ssh, target: /home/admin/.ssh}]\n",
        where="f",
    )
    assert spec.overlay == ("/home", "/opt")
    assert spec.binds == (Bind("/srv/ssh", "/home/admin/.ssh"),)
    assert spec.tmpfs_option() == str(512 * 2**20)


def test_kept_directories_are_mounted_outer_first() -> None:
    spec = parse_spec(
        {"overlay": ["/var"], "keep": ["/var/lib/kubelet", "/var/log", "/var/lib/containerd"]}
    )
    assert spec.ordered_keep() == ("/var/log", "/var/lib/containerd", "/var/lib/kubelet")


REFUSALS: list[tuple[dict[str, Any], str]] = [
    ({"overlay": ["etc"]}, "expected an absolute path"),
    ({"overlay": ["/etc/../var"]}, "canonical"),
    ({"overlay": ["/etc//x"]}, "canonical"),
    ({"overlay": ["/"]}, "the root itself"),
    ({"overlay": ["/proc"]}, "/proc is the kernel's"),
    ({"overlay": ["/sys/fs"]}, "/sys is the kernel's"),
    ({"overlay": ["/dev"]}, "/dev"),
    ({"overlay": ["/run/x"]}, "/run"),
    ({"overlay": ["/my dir"]}, "commas, colons or spaces"),
    ({"overlay": ["/a,b"]}, "commas, colons or spaces"),
    ({"overlay": ["/etc", "/etc"], "keep": ["/etc/kubernetes"]}, "listed twice"),
    ({"overlay": ["/var", "/var/lib"]}, "cannot be nested"),
    ({"overlay": ["/etc/kubernetes"], "keep": ["/etc/kubernetes"]}, "is the kept directory"),
    ({"overlay": ["/etc/kubernetes/pki"], "keep": ["/etc/kubernetes"]}, "inside the kept"),
    ({"overlay": ["/home"], "keep": ["/opt/cni/bin"]}, "not inside any overlaid directory"),
    ({"overlay": ["/var"], "keep": ["/var/lib", "/var/lib/kubelet"]}, "inside the kept /var/lib"),
    ({"overlay": ["/etc"], "keep": []}, "without keeping /etc/kubernetes"),
    (
        {"overlay": ["/var"], "keep": ["/var/log", "/var/lib/containerd"]},
        "without keeping /var/lib/kubelet",
    ),
    (
        {"overlay": ["/var"], "keep": ["/var/lib/kubelet"]},
        "without keeping runtimeRoot /var/lib/containerd",
    ),
    (
        {
            "overlay": ["/var"],
            "keep": ["/var/lib/kubelet", "/var/lib/containerd"],
            "runtimeRoot": "/var/lib/containers",
        },
        "/var/lib/containers",
    ),
    ({"overlay": []}, "at least one directory"),
    ({"overlay": "/etc"}, "expected a list of paths"),
    ({"tmpfsSize": "0%"}, "from 1% to 100%"),
    ({"tmpfsSize": "150%"}, "from 1% to 100%"),
    ({"tmpfsSize": "lots"}, "expected a quantity"),
    ({"tmpfsSize": "1Ki"}, "at least 1Mi"),
    ({"tmpfsSize": True}, "tmpfsSize"),
    ({"size": "1Gi"}, "unknown key(s) size"),
    ({"binds": [{"source": "/srv/a"}]}, "exactly source and target"),
    ({"binds": [{"source": "/srv/a", "target": "/srv/b"}]}, "must lie inside an overlaid"),
    ({"binds": [{"source": "/srv/a", "target": "/etc"}]}, "must lie inside an overlaid"),
    ({"binds": [{"source": "/etc/ssh", "target": "/etc/ssh"}]}, "use keep"),
    ({"binds": [{"source": "/srv/a", "target": "/etc/kubernetes/a"}]}, "overlaps the kept"),
    (
        {
            "binds": [
                {"source": "/srv/a", "target": "/etc/a"},
                {"source": "/srv/b", "target": "/etc/a/b"},
            ]
        },
        "overlaps the target /etc/a",
    ),
]


@pytest.mark.parametrize(("document", "reason"), REFUSALS, ids=[r for _, r in REFUSALS])
def test_a_spec_is_refused_with_its_reason(document: dict[str, Any], reason: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec(document, where="spec.yaml")
    assert reason in str(refused.value)
    assert str(refused.value).startswith("spec.yaml: ")
    assert isinstance(refused.value, InputError)


def test_the_kubelet_rule_names_what_kubeadm_writes() -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec({"overlay": ["/var"], "keep": ["/var/log", "/var/lib/containerd"]})
    message = str(refused.value)
    assert "kubelet-client-current.pem" in message
    assert "add /var/lib/kubelet to keep" in message


def test_a_kept_ancestor_satisfies_the_kubelet_rule() -> None:
    spec = parse_spec({"overlay": ["/var"], "keep": ["/var/lib"]})
    assert spec.keep == ("/var/lib",)


def test_a_document_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(SpecError, match="expected a mapping, got a list"):
        load_spec("- /etc\n", where="f")
