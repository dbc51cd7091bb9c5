"""Every bad snapshot ends in one clear error naming the file (and where in it): never a
traceback, a hang, or a silent "0 objects read"."""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubemedic.snapshot import reading
from kubemedic.snapshot.loading import EmptySnapshotError, SnapshotError, load_snapshot
from tests.factories import container, deployment, node, node_metrics, pod, pod_metrics


def as_list(*items: object, kind: str = "List") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": kind, "items": list(items)}


def refused(path: Path, *, allow_empty: bool = False) -> str:
    with pytest.raises(SnapshotError) as caught:
        load_snapshot(path, allow_empty=allow_empty)
    message = str(caught.value)
    assert "\n" not in message
    assert "NoneType" not in message and "Error" not in message
    return message


# -- nesting -------------------------------------------------------------------------------


def test_json_nested_thousands_deep_is_refused_with_the_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"kind": "Pod", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    assert refused(deep) == f"{deep}: line 1: nested deeper than 200 levels"


def test_json_nested_past_the_limit_but_within_the_parsers_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"kind": "Pod", "x": ' + "[" * 500 + "]" * 500 + "}")
    assert "deep.json" in refused(deep) and "nested deeper than 200 levels" in refused(deep)


def test_yaml_nested_thousands_deep_is_refused_with_the_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("kind: Pod\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    assert refused(deep) == f"{deep}: line 2: nested deeper than 200 levels"


def test_deep_nesting_in_a_later_concatenated_document_names_it(tmp_path: Path) -> None:
    deep = tmp_path / "watch.json"
    deep.write_text(json.dumps(pod("a")) + "\n" + "[" * 3000 + "]" * 3000)
    message = refused(deep)
    assert message.startswith(f"{deep}: document 2 (line 2): nested deeper than 200 levels")


@pytest.mark.parametrize("shared", [False, True])
def test_deep_nesting_in_a_large_list_read_in_pieces_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    from kubemedic.snapshot import loading

    items = [pod(f"p{i}") for i in range(30)]
    nested: object = []
    for _ in range(400):
        nested = [nested]
    items[20]["metadata"]["annotations"] = {"x": nested}  # type: ignore[index]
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(as_list(*items, kind="PodList"), indent=2))
    monkeypatch.setattr(loading, "_PIECE_BYTES", 2000)
    if shared:
        monkeypatch.setattr(loading, "_SHARE_SNAPSHOT_BYTES", 0)
    with pytest.raises(SnapshotError, match="nested deeper than 200 levels"):
        loading._list_in_pieces(path, share=shared)  # refused by the piece path itself
    assert refused(path) == f"{path}: nested deeper than 200 levels"


# -- pipes, sockets, devices, unreadable entries ------------------------------------------


def test_a_named_pipe_given_as_the_snapshot_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "pods.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert refused(fifo) == f"{fifo} is a named pipe, not a file or directory"
    assert time.monotonic() - started < 5


def test_a_named_pipe_in_a_snapshot_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(node("n1")))
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "pods.yaml")
    assert (
        refused(tmp_path)
        == f"{tmp_path / 'sub' / 'pods.yaml'} is a named pipe, not a file or directory"
    )


def test_a_pipe_with_another_name_in_a_directory_is_skipped_unopened(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(node("n1")))
    os.mkfifo(tmp_path / "notes.txt")
    assert [p.name for p in load_snapshot(tmp_path).skipped_files] == ["notes.txt"]


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "events.json"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        yield path
    finally:
        server.close()


def test_a_socket_is_refused(unix_socket: Path) -> None:
    assert refused(unix_socket) == f"{unix_socket} is a socket, not a file or directory"
    assert refused(unix_socket.parent).endswith("is a socket, not a file or directory")


def test_a_device_is_refused() -> None:
    assert refused(Path("/dev/null")) == "/dev/null is a character device, not a file or directory"


def test_a_file_swapped_for_a_pipe_is_refused_once_open(tmp_path: Path) -> None:
    fifo = tmp_path / "pods.json"
    os.mkfifo(fifo)
    with pytest.raises(SnapshotError, match="is a named pipe, not a file or directory"):
        reading.read_bytes(fifo)


def test_a_dangling_symlink_in_a_snapshot_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(node("n1")))
    (tmp_path / "pods.json").symlink_to(tmp_path / "gone.json")
    message = refused(tmp_path)
    assert message == f"{tmp_path / 'pods.json'}: cannot read it: a symlink to nothing (dangling)"


def test_a_directory_that_cannot_be_listed_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(node("n1")))
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "pods.json").write_text(json.dumps(pod("a")))
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):  # root reads anything: make listing fail another way
            locked.chmod(0o755)
            (locked / "pods.json").unlink()
            locked.rmdir()
            locked.symlink_to(locked)  # a symlink loop: cannot be examined (ELOOP)
        message = refused(tmp_path)
    finally:
        if locked.is_dir() and not locked.is_symlink():
            locked.chmod(0o755)
    assert message.startswith(f"{locked}: cannot ")


def test_symlinks_to_files_and_directories_are_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "nodes.json").write_text(json.dumps(node("n1")))
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "pods.json").symlink_to(real / "nodes.json")
    (snap / "more").symlink_to(real)
    assert len(load_snapshot(snap).bodies) == 2


def test_a_symlink_back_to_an_enclosing_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(node("n1")))
    (tmp_path / "again").symlink_to(tmp_path)
    assert "a symlink back to a directory that contains it" in refused(tmp_path)


def test_an_empty_path_is_refused() -> None:
    with pytest.raises(SnapshotError, match="the snapshot path is empty"):
        load_snapshot("")


# -- compression ---------------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_quickly_naming_the_file(tmp_path: Path) -> None:
    bomb = tmp_path / "pods.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        chunk = b" " * 1024**2
        for _ in range(256):
            out.write(chunk)
    started = time.monotonic()
    message = refused(bomb)
    assert time.monotonic() - started < 5
    assert message.startswith(f"{bomb}: cannot read: it inflates more than 100 times its size")


def test_the_inflated_size_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pods.json.gz"
    path.write_bytes(gzip.compress(os.urandom(300_000)))
    monkeypatch.setattr(reading, "MAX_INFLATED_BYTES", 100_000)
    assert "inflates to more than" in refused(path)


def test_several_gzip_members_and_zero_padding_are_read(tmp_path: Path) -> None:
    path = tmp_path / "all.json.gz"
    first = json.dumps(node("n1")).encode()
    second = json.dumps(node("n2")).encode()
    path.write_bytes(gzip.compress(first + b"\n") + gzip.compress(second) + b"\0" * 16)
    assert len(load_snapshot(path).bodies) == 2


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (gzip.compress(b'{"kind": "Pod"}' * 100)[:-9], "ends early"),
        (b"\x1f\x8bnot really gzip", "not valid gzip data"),
        (gzip.compress(b'{"kind": "Node"}') + b"trailing", "not gzip"),
    ],
)
def test_broken_gzip_is_an_error_naming_the_file(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "nodes.json.gz"
    path.write_bytes(content)
    message = refused(path)
    assert message.startswith(f"{path}: cannot read: ") and reason in message


# -- documents that are not Kubernetes objects ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "a.json",
            '{"kind": "List", "items": {"a": 1}}',
            "items: expected a list of objects, found an object",
        ),
        (
            "a.json",
            '{"kind": "Frob", "items": [{"kind": "Pod"}]}',
            "kind 'Frob' holds items, but only a list does",
        ),
        (
            "a.json",
            '{"items": [{"kind": "Pod"}]}',
            "an object with items but no kind: expected kind: List",
        ),
        (
            "a.json",
            "{}",
            "an object with no kind: expected a Kubernetes object (kind: Pod, Node, ...) or List",
        ),
        (
            "a.json",
            '{"metadata": {"name": "web", "namespace": "shop"}}',
            "object 'shop/web' with no kind",
        ),
        ("a.json", "null", "expected a Kubernetes object or List, found null"),
        ("a.json", "42", "expected a Kubernetes object or List, found a number"),
        ("a.json", '"pod"', "expected a Kubernetes object or List, found a string"),
        ("a.json", "[1, 2]", "expected a Kubernetes object or List, found a list"),
        (
            "a.json",
            '{"kind": "List", "items": [1]}',
            "items[0]: expected a Kubernetes object, found a number",
        ),
        (
            "a.json",
            '{"kind": "List", "items": [{"kind": "Pod"}, {"metadata": {"name": "x"}}]}',
            "items[1]: object 'x' with no kind",
        ),
        ("a.json", '{"kind": 5}', "kind: expected a string such as Pod, found a number"),
        ("a.json", "", "no Kubernetes object or List in it (the file is empty or only comments)"),
        ("a.yaml", "", "no Kubernetes object or List in it (the file is empty or only comments)"),
        ("a.yaml", "# nothing\n---\n# here\n", "no Kubernetes object or List in it"),
        (
            "a.yaml",
            "kind: Pod\nmetadata: {name: a}\n---\n42\n",
            "document 2 (line 4): expected a Kubernetes object or List, found a number",
        ),
        (
            "a.yaml",
            "kind: Pod\n---\n---\n- 1\n",
            "document 3 (line 4): expected a Kubernetes object or List, found a list",
        ),
        (
            "a.yaml",
            "kind: List\nitems:\n- true\n",
            "items[0]: expected a Kubernetes object, found true",
        ),
        (
            "a.json",
            '{"kind": "Pod"}\n{"kind": "List", "items": [null]}',
            "document 2 (line 2): items[0]: expected a Kubernetes object, found null",
        ),
    ],
)
def test_a_document_that_is_not_an_object_or_list_names_file_document_and_item(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    message = refused(path)
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_items_that_are_null_are_an_empty_list(tmp_path: Path) -> None:
    (tmp_path / "events.json").write_text('{"kind": "EventList", "items": null}')
    (tmp_path / "nodes.json").write_text(json.dumps(node("n1")))
    assert len(load_snapshot(tmp_path).bodies) == 1


def test_a_snapshot_of_empty_lists_is_an_error_unless_allowed(tmp_path: Path) -> None:
    (tmp_path / "pods.json").write_text(json.dumps(as_list(kind="PodList")))
    (tmp_path / "nodes.yaml").write_text("kind: NodeList\nitems: []\n")
    with pytest.raises(EmptySnapshotError, match="no Kubernetes objects in it"):
        load_snapshot(tmp_path)
    assert load_snapshot(tmp_path, allow_empty=True).bodies == []


def test_objects_of_unused_kinds_count_as_objects(tmp_path: Path) -> None:
    (tmp_path / "cm.json").write_text(json.dumps({"kind": "ConfigMap", "metadata": {"name": "x"}}))
    loaded = load_snapshot(tmp_path)
    assert loaded.unknown_kinds == {"ConfigMap": 1}


# -- quantities of the other kinds the checks read -----------------------------------------


def cronjob(*, memory: str) -> dict[str, object]:
    template = deployment("nightly", containers=[container("job", requests={"memory": memory})])
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ops"},
        "spec": {
            "schedule": "0 1 * * *",
            "jobTemplate": {"spec": {"template": template["spec"]["template"]}},
        },  # type: ignore[index]
    }


def replication_controller(*, cpu: str) -> dict[str, object]:
    body = deployment("legacy", namespace="old", containers=[container("app", limits={"cpu": cpu})])
    body.update({"apiVersion": "v1", "kind": "ReplicationController"})
    return body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            cronjob(memory="12XB"),
            "CronJob ops/nightly spec.jobTemplate.spec.template.spec.containers[name=job]"
            ".resources.requests.memory",
        ),
        (
            replication_controller(cpu="lots"),
            "ReplicationController old/legacy spec.template.spec.containers[name=app]"
            ".resources.limits.cpu",
        ),
        (
            pod_metrics(pod("web", namespace="shop"), {"app": {"memory": "12Gb"}}),
            "PodMetrics shop/web containers[name=app].usage.memory",
        ),
        (node_metrics("n1", cpu="2 cores", memory="1Gi"), "NodeMetrics n1 usage.cpu"),
    ],
)
def test_an_invalid_quantity_of_a_template_or_metrics_names_file_object_and_field(
    tmp_path: Path, body: dict[str, object], field: str
) -> None:
    path = tmp_path / "objects.json"
    path.write_text(json.dumps(as_list(body, node("n1"))))
    message = refused(path)
    assert message.startswith(f"{path}: invalid quantity ")
    assert f" in {field}: expected a number" in message


def test_valid_templates_and_metrics_are_accepted(tmp_path: Path) -> None:
    bodies = [
        cronjob(memory="1Gi"),
        replication_controller(cpu="500m"),
        pod_metrics(pod("web"), {"app": {"memory": "12Mi", "cpu": "3m"}}),
        node_metrics("n1", cpu="2", memory="1Gi"),
    ]
    (tmp_path / "all.json").write_text(json.dumps(as_list(*bodies)))
    assert len(load_snapshot(tmp_path).bodies) == 4


# -- kept as they were ---------------------------------------------------------------------


def test_invalid_utf8_names_the_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_bytes(b"kind: Pod\nmetadata:\n  name: \xff\n")
    assert refused(path) == f"{path}: line 3 (byte 28): not valid UTF-8 (invalid start byte)"


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(as_list(pod("a")), indent=2)[:-40])
    assert "invalid JSON" in refused(path) and refused(path).startswith(f"{path}: line ")
