"""Generate the protobuf field tables of the API emulator from the upstream definitions.

Usage, from the project root::

    python3 tests/sim/apiserver/protobuf/make_tables.py API_GIT_DIR APIMACHINERY_GIT_DIR \
        > src/kubemedic/sim/apiserver/protobuf/tables.py

where both are git directories (kubernetes/api and kubernetes/apimachinery) holding tag v0.32.0.
Field numbers and types come from ``generated.proto``; the JSON name, pointer-ness and
``omitempty`` of each field from the Go struct tags of the same tag (``types.go``).
"""

from __future__ import annotations

import re
import subprocess
import sys

TAG = "v0.32.0"
PROTO_PACKAGES = {
    # proto package -> (checkout index, dir, short prefix)
    "k8s.io.api.core.v1": (0, "core/v1", "core"),
    "k8s.io.api.apps.v1": (0, "apps/v1", "apps"),
    "k8s.io.api.batch.v1": (0, "batch/v1", "batch"),
    "k8s.io.api.scheduling.v1": (0, "scheduling/v1", "scheduling"),
    "k8s.io.api.policy.v1": (0, "policy/v1", "policy"),
    "k8s.io.apimachinery.pkg.apis.meta.v1": (1, "pkg/apis/meta/v1", "meta"),
    "k8s.io.apimachinery.pkg.runtime": (1, "pkg/runtime", "runtime"),
    "k8s.io.apimachinery.pkg.util.intstr": (1, "pkg/util/intstr", "intstr"),
    "k8s.io.apimachinery.pkg.api.resource": (1, "pkg/api/resource", "resource"),
}
ROOTS = [
    "core.Namespace",
    "core.ConfigMap",
    "core.Secret",
    "core.ServiceAccount",
    "core.Service",
    "core.Pod",
    "core.ReplicationController",
    "apps.Deployment",
    "apps.ReplicaSet",
    "apps.StatefulSet",
    "apps.DaemonSet",
    "batch.Job",
    "batch.CronJob",
    "scheduling.PriorityClass",
    "policy.PodDisruptionBudget",
    "policy.Eviction",
]
#: Embedded structs whose protobuf tag names no field: inlined in JSON like the others.
INLINE = {("core.EphemeralContainer", "ephemeralContainerCommon")}
#: Types with their own JSON form: decoded by code, not by a table.
SPECIAL = {
    "meta.Time",
    "meta.MicroTime",
    "meta.Duration",
    "meta.FieldsV1",
    "resource.Quantity",
    "intstr.IntOrString",
    "runtime.RawExtension",
}
SCALARS = {
    "string": "s",
    "int32": "i",
    "int64": "i",
    "bool": "b",
    "bytes": "y",
    "double": "d",
    "float": "f",
    "uint32": "u",
    "uint64": "u",
    "fixed64": "x",
    "fixed32": "w",
}


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


FIELD = re.compile(r"^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;")
MAP = re.compile(r"^\s*map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")
GO_FIELD = re.compile(r'^\s+(?:(\w+)\s+)?(\*?[\w.\[\]]+)\s+`json:"([^"]*)".*?protobuf:"([^"]*)"')


def main() -> None:
    repos = sys.argv[1:3]
    messages: dict[str, list[tuple[str, str, int, str]]] = {}  # short -> (label, type, name, num)
    go_tags: dict[
        str, dict[str, tuple[str, bool, bool]]
    ] = {}  # short -> protoname -> (json, ptr, omitempty)
    for package, (index, path, short) in PROTO_PACKAGES.items():
        text = git(repos[index], "show", f"{TAG}:{path}/generated.proto")
        current = None
        for line in text.splitlines():
            if line.startswith("message "):
                current = f"{short}.{line.split()[1]}"
                messages[current] = []
            elif line.startswith("}"):
                current = None
            elif current:
                if m := FIELD.match(line):
                    messages[current].append((m[1], resolve(m[2], package), m[3], int(m[4])))
                elif m := MAP.match(line):
                    kv = f"{resolve(m[1], package)}:{resolve(m[2], package)}"
                    messages[current].append(("map", kv, m[3], int(m[4])))
        files = git(repos[index], "ls-tree", "--name-only", TAG, path + "/").split()
        for name in files:
            if (
                not name.endswith(".go")
                or name.endswith("_test.go")
                or "zz_generated" in name
                or name.endswith(".pb.go")
            ):
                continue
            struct = None
            for line in git(repos[index], "show", f"{TAG}:{name}").splitlines():
                if m := re.match(r"^type (\w+) struct \{", line):
                    struct = f"{short}.{m[1]}"
                    go_tags.setdefault(struct, {})
                elif line.startswith("}"):
                    struct = None
                elif struct and (m := GO_FIELD.match(line)) and m[4]:
                    json_name, _, opts = m[3].partition(",")
                    proto_name = re.search(r"name=(\w+)", m[4])
                    key = proto_name[1] if proto_name else m[1]
                    go_tags[struct][key] = (json_name, m[2].startswith("*"), "omitempty" in opts)
    wanted: list[str] = []
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in wanted or name in SPECIAL:
            continue
        wanted.append(name)
        for _, typ, _, _ in messages[name]:
            for part in typ.split(":"):
                if part in messages and part not in wanted:
                    todo.append(part)
    print(f"# {len(wanted)} messages", file=sys.stderr)
    out = []
    for name in sorted(wanted):
        tags = go_tags.get(name, {})
        entries = []
        for label, typ, proto_name, num in messages[name]:
            json_name, pointer, omit = tags.get(proto_name, (proto_name, False, True))
            if name not in go_tags:
                print(f"# no Go struct for {name}", file=sys.stderr)
            elif proto_name not in tags and (name, proto_name) not in INLINE:
                print(f"# no Go tag for {name}.{proto_name}", file=sys.stderr)
            code = code_of(typ)
            if label == "repeated":
                code = "*" + code
            flag = "?" if pointer else ("" if omit else "!")
            if json_name == "" or (name, proto_name) in INLINE:
                flag, json_name = "^", proto_name
            entries.append(f"{num}{flag}{code}={json_name}")
        out.append((name, " ".join(entries)))
    emit(out)


def code_of(typ: str) -> str:
    if ":" in typ:
        key, value = typ.split(":")
        return "{" + code_of(key) + code_of(value) + "}"
    if typ in SCALARS:
        return SCALARS[typ]
    return "." + typ


def resolve(typ: str, package: str) -> str:
    if typ in SCALARS:
        return typ
    if typ.startswith("."):
        pkg, _, name = typ[1:].rpartition(".")
        if pkg in PROTO_PACKAGES:
            return f"{PROTO_PACKAGES[pkg][2]}.{name}"
        return "?" + typ
    return f"{PROTO_PACKAGES[package][2]}.{typ}"


def emit(out: list[tuple[str, str]]) -> None:
    print(HEADER, end="")
    for name, text in out:
        words = text.split(" ")
        lines, line = [], ""
        for word in words:
            if line and len(line) + len(word) + 1 > 84:
                lines.append(line + " ")
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        if len(lines) == 1 and len(name) + len(line) < 88:
            print(f'    "{name}": "{line}",')
        else:
            print(f'    "{name}": (')
            for part in lines:
                line = f'        "{part}"'
                print(line + ("  # noqa: E501" if len(line) > 100 else ""))
            print("    ),")
    print("}")


HEADER = '''"""The wire contract: the fields of each message by number, from ``generated.proto``.

Generated by ``tests/sim/apiserver/protobuf/make_tables.py`` from ``k8s.io/api`` and
``k8s.io/apimachinery`` at tag v0.32.0 (the Kubernetes 1.32 types): field numbers and types from
``generated.proto``, JSON names, pointers and ``omitempty`` from the Go struct tags of the same
tag. Do not edit by hand; regenerate (then ``ruff format``).

One entry per message, ``package.Message``, its fields separated by spaces, each written
``NUMBER FLAG TYPE = JSON_NAME``:

- FLAG: ``?`` a pointer (present means set, zero included), ``!`` no ``omitempty`` (a zero value
  is printed), ``^`` embedded inline (its fields join the parent's JSON object), none: a zero
  value is omitted, as Go's encoder omits it.
- TYPE: ``*`` first for a repeated field; ``s`` string, ``i`` integer (int32 or int64, varint),
  ``b`` bool, ``y`` bytes (base64 in JSON); ``{KV}`` a map of key and value types;
  ``.package.Message`` a nested message (``meta.Time``, ``meta.FieldsV1``,
  ``resource.Quantity`` and ``intstr.IntOrString`` have their own JSON forms).
"""

MESSAGES: dict[str, str] = {
'''

if __name__ == "__main__":
    main()
