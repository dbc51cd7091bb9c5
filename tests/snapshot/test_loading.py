import gzip
import json
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from kubemedic.checks import run_checks
from kubemedic.snapshot import loading
from kubemedic.snapshot.loading import SnapshotError, load_snapshot
from tests.factories import container, deployment, node, node_lease, pod


def as_list(*items: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": list(items),
    }


def test_a_directory_of_json_yaml_and_gzip_files_is_read_in_full(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(as_list(node("n1"), node("n2"))))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod("a"), pod("b")]))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deploy.json.gz").write_bytes(
        gzip.compress(json.dumps(deployment("d")).encode())
    )
    (tmp_path / "notes.txt").write_text("not a snapshot")
    (tmp_path / ".hidden.json").write_text("{")
    loaded = load_snapshot(tmp_path)
    assert sorted(b["kind"] for b in loaded.bodies) == ["Deployment", "Node", "Node", "Pod", "Pod"]
    assert [p.name for p in loaded.skipped_files] == ["notes.txt"]


def test_typed_lists_from_the_rest_api_give_their_items_a_kind(tmp_path: Path) -> None:
    item = pod("a")
    del item["kind"], item["apiVersion"]
    (tmp_path / "pods.json").write_text(
        json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [item]})
    )
    assert load_snapshot(tmp_path).bodies[0]["kind"] == "Pod"


def test_unknown_kinds_are_counted_and_ignored(tmp_path: Path) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    (tmp_path / "all.json").write_text(json.dumps(as_list(configmap, configmap, node("n1"))))
    loaded = load_snapshot(tmp_path)
    assert loaded.unknown_kinds == {"ConfigMap": 2}
    assert len(loaded.bodies) == 1


def test_node_leases_are_kept_and_keep_a_quiet_node_healthy(tmp_path: Path) -> None:
    # kubectl get nodes -o json; kubectl get leases -n kube-node-lease -o json (a LeaseList
    # through the REST API: items without a kind).
    quiet = node("n1", heartbeat=timedelta(minutes=-7))
    (tmp_path / "nodes.json").write_text(json.dumps(as_list(quiet)))
    lease = node_lease("n1", renewed=timedelta(seconds=-5))
    del lease["kind"], lease["apiVersion"]
    leases = {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1", "items": [lease]}
    (tmp_path / "leases.json").write_text(json.dumps(leases))
    loaded = load_snapshot(tmp_path)
    assert sorted(b["kind"] for b in loaded.bodies) == ["Lease", "Node"]
    view = loaded.view()
    assert view.node_lease("n1") is not None
    assert run_checks(view, names=["node-not-ready"]) == []
    (tmp_path / "leases.json").unlink()  # without the Lease the heartbeat alone is stale
    [finding] = run_checks(load_snapshot(tmp_path).view(), names=["node-not-ready"])
    assert finding.evidence["leaseSeen"] is False


def test_concatenated_json_documents_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "watch.json").write_text(json.dumps(pod("a")) + "\n" + json.dumps(pod("b")))
    assert len(load_snapshot(tmp_path).bodies) == 2


def test_malformed_json_names_the_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "pods.json"
    bad.write_text('{\n  "kind": "Pod",\n  "metadata": {"name": "a",}\n}\n')
    with pytest.raises(SnapshotError, match=r"pods\.json: line 3, column \d+: invalid JSON"):
        load_snapshot(tmp_path)


def test_malformed_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "pods.yaml"
    bad.write_text("kind: Pod\nmetadata:\n  name: [unclosed\n")
    with pytest.raises(SnapshotError, match=r"pods\.yaml: line \d+: invalid YAML"):
        load_snapshot(bad)


def test_non_utf8_input_names_the_byte(tmp_path: Path) -> None:
    bad = tmp_path / "events.json"
    bad.write_bytes(b'{"kind": "Event", "message": "\xff\xfe"}')
    with pytest.raises(SnapshotError, match=r"events\.json: line 1 \(byte 30\): not valid UTF-8"):
        load_snapshot(bad)


def test_a_truncated_gzip_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "pods.json.gz"
    bad.write_bytes(gzip.compress(b'{"kind": "Pod"}')[:12])
    with pytest.raises(SnapshotError, match=r"pods\.json\.gz: cannot read"):
        load_snapshot(bad)


def test_an_invalid_quantity_names_file_object_and_field(tmp_path: Path) -> None:
    bad = pod("web", namespace="shop", containers=[container("app", requests={"memory": "12Gb"})])
    (tmp_path / "pods.json").write_text(json.dumps(bad))
    with pytest.raises(SnapshotError) as caught:
        load_snapshot(tmp_path)
    message = str(caught.value)
    assert "pods.json" in message
    assert "Pod shop/web spec.containers[name=app].resources.requests.memory" in message
    assert "'12Gb'" in message


def test_a_scalar_document_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("just a string\n")
    with pytest.raises(
        SnapshotError, match=r"expected a Kubernetes object or List, found a string$"
    ):
        load_snapshot(tmp_path)


def test_missing_path_and_empty_directory_are_errors(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no such file"):
        load_snapshot(tmp_path / "nope")
    with pytest.raises(SnapshotError, match="no snapshot files found"):
        load_snapshot(tmp_path)


# -- large pretty-printed lists are parsed piece by piece; the result must not differ ----------


def big_list(count: int) -> dict:
    pods = [
        pod(
            f"web-{i}",
            namespace=f"ns-{i % 3}",
            node_name=f"n{i % 4}",
            containers=[container("app", requests={"cpu": "100m", "memory": f"{64 + i}Mi"})],
        )
        for i in range(count)
    ]
    for index, item in enumerate(pods):
        item["metadata"]["annotations"] = {"note": 'a "quoted" },\n  { brace line', "i": str(index)}
    return {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "42"},
        "items": pods,
    }


@pytest.mark.parametrize("indent", [2, 4, "\t"])
@pytest.mark.parametrize("compress", [False, True])
def test_pieces_give_exactly_what_whole_file_parsing_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | str, compress: bool
) -> None:
    text = json.dumps(big_list(60), indent=indent).encode()
    path = tmp_path / ("pods.json.gz" if compress else "pods.json")
    path.write_bytes(gzip.compress(text) if compress else text)
    whole = load_snapshot(path).bodies
    monkeypatch.setattr(loading, "_PIECE_BYTES", 700)
    assert loading._list_in_pieces(path) is not None  # the piece path really ran
    pieces = load_snapshot(path).bodies
    assert pieces == whole
    assert len(pieces) == 60
    assert pieces[59]["metadata"]["annotations"]["i"] == "59"


def test_a_truncated_large_list_falls_back_and_names_the_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps(big_list(40), indent=4)
    path = tmp_path / "pods.json"
    path.write_text(text[: len(text) * 2 // 3])
    monkeypatch.setattr(loading, "_PIECE_BYTES", 700)
    with pytest.raises(SnapshotError, match=r"pods\.json: line \d+, column \d+: invalid JSON"):
        load_snapshot(path)


def test_trailing_garbage_after_a_large_list_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(big_list(40), indent=4) + "\n}}garbage")
    monkeypatch.setattr(loading, "_PIECE_BYTES", 700)
    with pytest.raises(SnapshotError, match=r"pods\.json"):
        load_snapshot(path)


def test_a_large_non_list_document_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = pod("big")
    body["metadata"]["annotations"] = {"blob": "x" * 5000}
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(body, indent=4))
    monkeypatch.setattr(loading, "_PIECE_BYTES", 700)
    assert [b["metadata"]["name"] for b in load_snapshot(path).bodies] == ["big"]


def test_concatenated_documents_are_as_strict_as_single_ones(tmp_path: Path) -> None:
    bad = tmp_path / "watch.json"
    bad.write_text(json.dumps(pod("a")) + "\n" + '{"kind": "Pod", "metadata": {"name": "\\udcff"}}')
    with pytest.raises(SnapshotError, match=r"watch\.json: line 2, column \d+: invalid JSON"):
        load_snapshot(bad)


def test_progress_names_each_file_and_counts_objects_as_pieces_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-nodes.json").write_text(json.dumps(as_list(node("n1"), node("n2"))))
    (tmp_path / "b-pods.json").write_text(json.dumps(big_list(40), indent=2))
    monkeypatch.setattr(loading, "_PIECE_BYTES", 700)
    told: list[str] = []
    loaded = load_snapshot(tmp_path, progress=told.append)
    assert len(loaded.bodies) == 42
    assert told[0] == "reading a-nodes.json (1 of 2 files): 0 objects"
    assert told[1] == "reading b-pods.json (2 of 2 files): 2 objects"
    pieces = [line for line in told if line.startswith("reading b-pods.json")][1:]
    assert len(pieces) > 3  # every few (here: hundred) bytes of a large list
    counts = [int(line.rsplit(": ", 1)[1].split()[0]) for line in pieces]
    assert counts == sorted(counts) and counts[-1] <= 42
    assert told[-1] == "checking the quantities of 42 objects"


def test_equal_strings_of_a_large_list_become_one_object_in_a_large_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(big_list(60), indent=2))
    monkeypatch.setattr(loading, "_PIECE_BYTES", 700)
    plain = load_snapshot(path).bodies
    assert plain[-1]["metadata"]["namespace"] is not plain[-4]["metadata"]["namespace"]
    # A list that proves large as it is read: shared from then on.
    monkeypatch.setattr(loading, "_SHARE_AFTER_BYTES", 3000)
    later = load_snapshot(path).bodies
    assert later == plain
    assert later[-1]["metadata"]["namespace"] is later[-4]["metadata"]["namespace"]  # ns-2
    assert later[0]["metadata"]["namespace"] is not later[3]["metadata"]["namespace"]
    # A large snapshot: shared from the first item.
    monkeypatch.setattr(loading, "_SHARE_SNAPSHOT_BYTES", path.stat().st_size)
    shared = load_snapshot(path).bodies
    assert shared == plain
    assert shared[0]["metadata"]["namespace"] is shared[3]["metadata"]["namespace"]  # ns-0
