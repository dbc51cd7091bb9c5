"""Reading a source at a revision: local checkouts and file:// URLs, branches, tags, SHAs, HEAD,
the committed tree rather than the work tree, and the fetch cache."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubemedic.drift import sources
from kubemedic.errors import InputError
from tests.drift.sources.conftest import GitRepo, configmap, deployment, dump


def names(desired: sources.DesiredSet) -> list[str]:
    return [item.name for item in desired.objects]


def two_commits(repo: GitRepo) -> tuple[str, str]:
    """v1 (a tag) with web-1; main one commit later with web-2 as well."""
    repo.write("apps/web/deploy.yaml", dump(deployment("web-1")))
    first = repo.commit("first")
    repo.tag("v1")
    repo.write("apps/web/second.yaml", dump(deployment("web-2")))
    second = repo.commit("second")
    return first, second


def test_each_kind_of_revision_reads_the_tree_of_its_commit(repo: GitRepo) -> None:
    first, second = two_commits(repo)
    repo.git("branch", "stable", first)
    repo.tag("v1-annotated", annotated=True)  # on the second commit, peeled to it
    for revision, commit in [
        ("v1", first),
        ("stable", first),
        (first, first),
        (first[:10], first),
        ("main~1", first),
        ("main", second),
        ("HEAD", second),
        (None, second),
        ("v1-annotated", second),
        ("refs/tags/v1", first),
    ]:
        desired = sources.load(sources.Source(repository=str(repo.path), revision=revision))
        assert desired.commit == commit, revision
        expected = ["web-1"] if commit == first else ["web-1", "web-2"]
        assert names(desired) == expected, revision


def test_the_committed_tree_is_read_not_the_work_tree(repo: GitRepo) -> None:
    repo.write("apps/cm.yaml", dump(configmap("settings", mode="git")))
    commit = repo.commit("settings")
    repo.write("apps/cm.yaml", dump(configmap("settings", mode="edited-not-committed")))
    repo.write("apps/untracked.yaml", dump(configmap("untracked")))
    repo.write("apps/broken.yaml", "kind: [unclosed\n")  # not committed: never read

    desired = sources.load(sources.Source(repository=str(repo.path), path="apps"))

    assert desired.commit == commit
    [item] = desired.objects
    assert item.body["data"] == {"mode": "git"}


def test_a_branch_that_is_not_checked_out_is_read(repo: GitRepo) -> None:
    repo.write("cm.yaml", dump(configmap("base")))
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("feature.yaml", dump(configmap("feature-only")))
    feature = repo.commit("feature")
    repo.git("checkout", "-q", "main")

    desired = sources.load(sources.Source(repository=str(repo.path), revision="feature"))

    assert desired.commit == feature
    assert sorted(names(desired)) == ["base", "feature-only"]


def test_every_object_carries_its_origin(repo: GitRepo) -> None:
    first, _ = two_commits(repo)
    desired = sources.load(
        sources.Source(repository=str(repo.path), path="apps/web", revision="v1")
    )
    [item] = desired.objects
    assert item.origin == sources.Origin(
        repository=str(repo.path),
        revision="v1",
        commit=first,
        path="apps/web",
        file="apps/web/deploy.yaml",
        document=1,
    )
    assert str(item.origin) == f"{repo.path}@{first[:12]}:apps/web/deploy.yaml#1"
    assert item.ref == sources.ObjectRef("apps", "Deployment", "web", "web-1")


def test_a_directory_inside_the_checkout_is_read_from_its_place_in_the_repository(
    repo: GitRepo,
) -> None:
    two_commits(repo)
    desired = sources.load(sources.Source(repository=str(repo.path / "apps"), revision="v1"))
    assert [item.origin.file for item in desired.objects] == ["apps/web/deploy.yaml"]


def test_an_unknown_revision_or_path_is_an_input_error_naming_it(repo: GitRepo) -> None:
    two_commits(repo)
    with pytest.raises(sources.GitError, match="no revision 'nope'"):
        sources.load(sources.Source(repository=str(repo.path), revision="nope"))
    with pytest.raises(sources.GitError, match=r"no path 'apps/db' in the tree"):
        sources.load(sources.Source(repository=str(repo.path), path="apps/db", revision="v1"))
    with pytest.raises(InputError, match="leaves the repository"):
        sources.load(sources.Source(repository=str(repo.path), path="../etc"))
    with pytest.raises(sources.GitError, match="no such directory"):
        sources.load(sources.Source(repository=str(repo.path / "missing")))


def test_a_plain_directory_is_read_from_disk_and_takes_no_revision(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "cm.yaml").write_text(dump(configmap("on-disk")))

    desired = sources.load(sources.Source(repository=str(plain)))

    assert desired.commit is None
    assert names(desired) == ["on-disk"]
    assert desired.objects[0].origin.file == "cm.yaml"
    with pytest.raises(sources.GitError, match="not a Git repository"):
        sources.load(sources.Source(repository=str(plain), revision="main"))


def test_a_file_url_is_cloned_into_the_cache_and_refreshed_on_each_load(
    repo: GitRepo, tmp_path: Path
) -> None:
    first, second = two_commits(repo)
    cache = tmp_path / "cache"
    source = sources.Source(repository=repo.url, path="apps")

    desired = sources.load(source, cache=cache)

    assert desired.commit == second
    assert names(desired) == ["web-1", "web-2"]
    [cached] = list(cache.glob("*.git"))
    assert (cached / "HEAD").is_file() and not (cached / ".git").exists()  # bare
    assert (
        sources.load(sources.Source(repository=repo.url, revision="v1"), cache=cache).commit
        == first
    )

    repo.write("apps/web/third.yaml", dump(deployment("web-3")))
    third = repo.commit("third")
    repo.git("branch", "-q", "release")
    again = sources.load(source, cache=cache)
    assert again.commit == third
    assert names(again) == ["web-1", "web-2", "web-3"]
    assert list(cache.glob("*.git")) == [cached]  # the same cache, fetched again
    release = sources.load(sources.Source(repository=repo.url, revision="release"), cache=cache)
    assert release.commit == third


def test_a_url_that_cannot_be_fetched_is_an_input_error(tmp_path: Path) -> None:
    missing = (tmp_path / "nowhere").as_uri()
    with pytest.raises(sources.GitError, match="cannot fetch the repository") as caught:
        sources.load(sources.Source(repository=missing), cache=tmp_path / "cache")
    assert isinstance(caught.value, InputError)
    assert missing in str(caught.value)


def test_urls_and_paths_are_told_apart() -> None:
    for url in [
        "https://github.com/org/ops.git",
        "ssh://git@host/ops",
        "file:///srv/ops",
        "git@github.com:org/ops.git",
    ]:
        assert sources.is_url(url), url
    for path in ["/srv/ops", "ops", "./ops", "C-drive/ops"]:
        assert not sources.is_url(path), path


def test_the_default_cache_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBEMEDIC_GIT_CACHE", str(tmp_path / "explicit"))
    assert sources.default_cache() == tmp_path / "explicit"
    monkeypatch.delenv("KUBEMEDIC_GIT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sources.default_cache() == tmp_path / "xdg" / "kubemedic" / "git"


def test_a_password_in_a_url_never_reaches_a_message_or_the_cache(tmp_path: Path) -> None:
    url = "https://deploy:s3cret-token@127.0.0.1:9/ops.git"  # nothing listens on port 9
    cache = tmp_path / "cache"
    with pytest.raises(sources.GitError) as caught:
        sources.load(sources.Source(repository=url), cache=cache)
    message = str(caught.value)
    assert message.startswith("https://deploy:***@127.0.0.1:9/ops.git: cannot fetch")
    assert "s3cret" not in message
    assert str(sources.Source(repository=url)) == "https://deploy:***@127.0.0.1:9/ops.git ."
    for config in cache.glob("*.git/config"):
        assert "s3cret" not in config.read_text()


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[str]:
    """``git daemon`` serving the test's directory over git:// (a smart transport: shallow
    fetches work there, unlike file://); the base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--export-all",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={tmp_path}",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_a_remote_is_fetched_shallow_and_deepened_for_a_commit_behind_the_tips(
    repo: GitRepo, git_daemon: str, tmp_path: Path
) -> None:
    first, second = two_commits(repo)
    repo.write("apps/web/third.yaml", dump(deployment("web-3")))
    third = repo.commit("third")
    url = f"{git_daemon}/ops"
    cache = tmp_path / "cache"

    tip = sources.load(sources.Source(repository=url), cache=cache)
    assert (tip.commit, tip.shallow) == (third, True)
    tagged = sources.load(sources.Source(repository=url, revision="v1"), cache=cache)
    assert (tagged.commit, names(tagged)) == (first, ["web-1"])  # a tag is a tip too

    behind = sources.load(sources.Source(repository=url, revision=second), cache=cache)

    assert (behind.commit, behind.shallow) == (second, False)
    assert names(behind) == ["web-1", "web-2"]
