"""The ``notify:`` section: checked before anything runs, errors naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubemedic.config import ConfigError, settings_from
from kubemedic.notify import settings
from kubemedic.notify.policy import SubjectKind


def _read(section: dict[str, Any]) -> settings.NotifyRun:
    return settings.read(section, source="kubemedic.yaml")


def test_no_section_means_no_notifications() -> None:
    assert settings.load(settings_from({}, source="x")) is None


def test_a_full_section_is_read_in_either_spelling(tmp_path: Path) -> None:
    url_file = tmp_path / "url"
    url_file.write_text("https://hooks.example.org/services/T/B/X\n")
    run = settings.load(
        settings_from(
            {
                "notify": {
                    "receivers": [
                        {"name": "oncall", "format": "alertmanager", "urlFile": str(url_file)},
                        {"name": "chat", "format": "slack", "url": "http://127.0.0.1:9/x"},
                    ],
                    "kinds": ["incident", "storm"],
                    "update_every": "15m",
                    "resolveAfter": "5m",
                    "attempts": 2,
                }
            },
            source="kubemedic.yaml",
        )
    )
    assert run is not None
    assert [r.name for r in run.receivers] == ["oncall", "chat"]
    assert run.kinds == {SubjectKind.INCIDENT, SubjectKind.STORM}
    assert (run.update_every.total_seconds(), run.resolve_after.total_seconds()) == (900, 300)
    assert run.attempts == 2
    assert settings.read_url(run.receivers[0]) == "https://hooks.example.org/services/T/B/X"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"receivers": [{"name": "a", "format": "teams", "url": "http://x"}]},
            r"notify\.receivers\[0\]\.format: expected one of alertmanager, slack, webhook, "
            r'got "teams"',
        ),
        (
            {"receivers": [{"name": "a", "format": "slack"}]},
            r"notify\.receivers\[0\]: give exactly one of url and urlFile",
        ),
        (
            {"receivers": [{"name": "a", "format": "slack", "url": "ftp://x/secret"}]},
            r"notify\.receivers\[0\]\.url: expected an http:// or https:// URL with a host$",
        ),
        (
            {"receivers": [{"format": "slack", "url": "http://x"}]},
            r"notify\.receivers\[0\]: missing name",
        ),
        (
            {
                "receivers": [
                    {"name": "a", "format": "slack", "url": "http://x"},
                    {"name": "a", "format": "webhook", "url": "http://y"},
                ]
            },
            r'notify\.receivers\[1\]\.name: "a" names two receivers',
        ),
        ({"kinds": ["incident", "pager"]}, r'notify\.kinds\[1\]: expected one of .*"pager"'),
        ({"minSeverity": "loud"}, r"notify\.minSeverity: expected one of info, warning"),
        ({"updateEvry": "5m"}, r"notify: unknown setting .*did you mean 'updateEvery'"),
        ({"attempts": 0}, r"notify\.attempts: expected"),
        ({"intervalSeconds": "0s"}, r"notify\.intervalSeconds: expected at least"),
    ],
)
def test_a_wrong_setting_names_its_key(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _read(section)


def test_a_url_file_that_cannot_be_read_is_named_and_its_content_never_echoed(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(ConfigError, match=r"receivers\[0\]\.urlFile: cannot read .*absent"):
        _read({"receivers": [{"name": "a", "format": "webhook", "urlFile": str(missing)}]})
    bad = tmp_path / "bad"
    bad.write_text("not-a-url-but-a-token-xyz\n")
    with pytest.raises(ConfigError) as raised:
        _read({"receivers": [{"name": "a", "format": "webhook", "urlFile": str(bad)}]})
    assert "token-xyz" not in str(raised.value)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        _read({"receivers": [{"name": "a", "format": "webhook", "urlFile": str(empty)}]})
