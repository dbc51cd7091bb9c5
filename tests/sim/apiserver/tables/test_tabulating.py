"""Server-side printing: the cells ``kubectl get`` shows, reasoned through printers.go per case."""

from datetime import timedelta

import pytest

from kubemedic.sim.apiserver.tables.aging import human_duration
from kubemedic.sim.apiserver.tables.tabulating import (
    accepts_table,
    include_object_from,
    negotiate_table,
    table,
)
from kubemedic.sim.machinery.errors import StatusError
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import (
    container,
    deployment,
    event,
    node,
    node_metrics,
    pod,
    pod_metrics,
    replicaset,
    stamp,
)

NOW = BASE_TIME + timedelta(minutes=5)
KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def render(plural, *objects, group="", **options):
    options.setdefault("list_meta", {"resourceVersion": "42"})
    return table(plural, group, list(objects), now=NOW, **options)


def cells(plural, obj, group="", **options):
    return render(plural, obj, group=group, **options)["rows"][0]["cells"]


def columns(plural, group=""):
    return [(c["name"], c["priority"]) for c in render(plural, group=group)["columnDefinitions"]]


def terminated(reason=None, exit_code=1, finished=None, signal=None):
    state = {"exitCode": exit_code, "finishedAt": stamp(finished or timedelta(minutes=2))}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return state


def status(name, **fields):
    """A container status; ``fields`` override the not-ready, never-restarted defaults."""
    return {"name": name, "ready": False, "restartCount": 0, **fields}


# ---------------------------------------------------------------- durations and negotiation


@pytest.mark.parametrize(
    ("delta", "shown"),
    [
        (timedelta(seconds=-1), "0s"),
        (timedelta(seconds=-2), "<invalid>"),
        (timedelta(0), "0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(seconds=119, milliseconds=999), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(minutes=5, seconds=30), "5m30s"),
        (timedelta(minutes=10, seconds=59), "10m"),
        (timedelta(minutes=179), "179m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=7, minutes=59), "7h59m"),
        (timedelta(hours=8, minutes=30), "8h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=2), "2d"),
        (timedelta(days=2, hours=3), "2d3h"),
        (timedelta(days=7, hours=23), "7d23h"),
        (timedelta(days=8, hours=5), "8d"),
        (timedelta(days=729), "729d"),
        (timedelta(days=730), "2y"),
        (timedelta(days=3 * 365 + 45), "3y45d"),
        (timedelta(days=8 * 365 + 100), "8y"),
    ],
)
def test_ages_read_like_duration_human_duration(delta, shown):
    assert human_duration(delta) == shown


def test_kubectl_get_accept_header_negotiates_a_v1_table():
    assert negotiate_table(KUBECTL_ACCEPT) == "meta.k8s.io/v1"
    assert accepts_table(KUBECTL_ACCEPT)


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        (
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
            "meta.k8s.io/v1beta1",
        ),
        ("application/json", None),
        ("*/*", None),
        (None, None),
        ("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", None),
        ("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json;q=0.9", None),
        ("application/yaml,application/json;as=Table;v=v1;g=meta.k8s.io", "meta.k8s.io/v1"),
        (
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,"
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "meta.k8s.io/v1",
        ),
    ],
)
def test_first_acceptable_accept_clause_decides_whether_a_table_is_served(accept, version):
    assert negotiate_table(accept) == version


def test_include_object_defaults_to_metadata_and_rejects_unknown_values():
    assert include_object_from({}) == "Metadata"
    assert include_object_from({"includeObject": "Object"}) == "Object"
    assert include_object_from({"includeObject": "None"}) == "None"
    with pytest.raises(StatusError) as caught:
        include_object_from({"includeObject": "All"})
    assert caught.value.code == 400
    assert caught.value.message == 'unrecognized includeObject value: "All"'


# ---------------------------------------------------------------- the envelope


def test_table_envelope_carries_list_meta_columns_and_partial_metadata_rows():
    running = pod("web-1", node_name="n1")
    result = render("pods", running, list_meta={"resourceVersion": "42", "continue": "tok"})
    assert result["kind"] == "Table" and result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "42", "continue": "tok"}
    name = result["columnDefinitions"][0]
    assert name["name"] == "Name" and name["format"] == "name" and name["type"] == "string"
    assert name["description"].startswith("Name must be unique within a namespace.")
    assert result["columnDefinitions"][4]["description"].startswith("CreationTimestamp is")
    assert result["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": running["metadata"],
    }


def test_include_object_selects_the_row_object_and_no_headers_drops_columns():
    running = pod("web-1")
    assert render("pods", running, include_object="Object")["rows"][0]["object"] is running
    assert render("pods", running, include_object="None")["rows"][0]["object"] is None
    beta = render("pods", running, api_version="meta.k8s.io/v1beta1", no_headers=True)
    assert beta["columnDefinitions"] is None
    assert beta["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    assert render("pods")["rows"] == [] and render("pods", list_meta={})["metadata"] == {}


# ---------------------------------------------------------------- pods


def test_pod_columns_include_the_wide_priority_one_columns():
    assert columns("pods") == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]


def test_running_pod():
    running = pod("web-1", node_name="n1")
    running["status"]["podIP"] = "10.0.0.7"
    assert cells("pods", running) == ["web-1", "1/1", "Running", "0", "5m", "10.0.0.7", "n1",
                                      "<none>", "<none>"]  # fmt: skip


def test_pending_unscheduled_pod_has_no_ip_or_node():
    pending = pod("web-1", phase="Pending")
    assert cells("pods", pending) == ["web-1", "0/1", "Pending", "0", "5m", "<none>", "<none>",
                                      "<none>", "<none>"]  # fmt: skip


def test_crash_looping_container_shows_waiting_reason_and_last_restart():
    crashing = pod("web-1")
    crashing["status"]["containerStatuses"][0].update(
        ready=False,
        restartCount=5,
        state={"waiting": {"reason": "CrashLoopBackOff"}},
        lastState={"terminated": terminated("Error", finished=timedelta(minutes=2))},
    )
    assert cells("pods", crashing)[1:4] == ["0/1", "CrashLoopBackOff", "5 (3m ago)"]


def test_oom_killed_container_shows_terminated_reason():
    killed = pod("web-1")
    killed["status"]["containerStatuses"][0].update(
        ready=False, restartCount=1, state={"terminated": terminated("OOMKilled", 137)}
    )
    assert cells("pods", killed)[1:4] == ["0/1", "OOMKilled", "1"]


def test_terminated_container_without_reason_shows_signal_or_exit_code():
    killed = pod("web-1")
    killed["status"]["containerStatuses"][0].update(state={"terminated": terminated(signal=9)})
    assert cells("pods", killed)[2] == "Signal:9"
    killed["status"]["containerStatuses"][0].update(state={"terminated": terminated(exit_code=3)})
    assert cells("pods", killed)[2] == "ExitCode:3"


def test_evicted_pod_shows_the_status_reason_and_a_completed_row_condition():
    evicted = pod("web-1", phase="Failed", reason="Evicted", message="low on memory")
    row = render("pods", evicted)["rows"][0]
    assert row["cells"][1:3] == ["0/1", "Evicted"]
    assert row["conditions"] == [
        {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
    ]


def test_completed_job_pod():
    done = pod("job-1", phase="Succeeded")
    done["status"]["containerStatuses"] = [
        status("main", state={"terminated": terminated("Completed", 0)})
    ]
    row = render("pods", done)["rows"][0]
    assert row["cells"][1:4] == ["0/1", "Completed", "0"]
    assert row["conditions"][0]["reason"] == "Succeeded"


def test_completed_container_beside_a_running_one_reads_running_or_not_ready():
    mixed = pod("web-1", containers=[container("app"), container("setup")])
    statuses = mixed["status"]["containerStatuses"]
    statuses[1].update(ready=False, state={"terminated": terminated("Completed", 0)})
    assert cells("pods", mixed)[1:3] == ["1/2", "Running"]
    mixed["status"]["conditions"][0]["status"] = "False"
    assert cells("pods", mixed)[2] == "NotReady"


def test_init_containers_in_progress_count_as_init_n_of_m():
    starting = pod(
        "web-1", phase="Pending", init_containers=[container("migrate"), container("warm")]
    )
    starting["status"]["initContainerStatuses"] = [
        status("migrate", state={"terminated": terminated("Completed", 0)}),
        status("warm", state={"running": {"startedAt": stamp()}}),
    ]
    starting["status"]["containerStatuses"] = [
        status("main", state={"waiting": {"reason": "PodInitializing"}})
    ]
    assert cells("pods", starting)[1:4] == ["0/1", "Init:1/2", "0"]


def test_failing_init_container_reads_init_reason_and_counts_its_restarts():
    failing = pod("web-1", phase="Pending", init_containers=[container("migrate")])
    failing["status"]["initContainerStatuses"] = [
        {
            "name": "migrate",
            "ready": False,
            "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": terminated("Error", finished=timedelta(minutes=4))},
        }
    ]
    assert cells("pods", failing)[1:4] == ["0/1", "Init:CrashLoopBackOff", "4 (60s ago)"]
    failing["status"]["initContainerStatuses"][0]["state"] = {"terminated": terminated()}
    assert cells("pods", failing)[2] == "Init:ExitCode:1"
    failing["status"]["initContainerStatuses"][0]["state"] = {"terminated": terminated("Error")}
    assert cells("pods", failing)[2] == "Init:Error"


def test_started_sidecar_init_container_counts_as_a_ready_container():
    sidecar = container("proxy", restart_policy="Always")
    running = pod("web-1", init_containers=[sidecar])
    running["status"]["initContainerStatuses"] = [
        status("proxy", ready=True, started=True, restartCount=2, state={"running": {}})
    ]
    assert cells("pods", running)[1:4] == ["2/2", "Running", "2"]


def test_deleted_pod_reads_terminating_unless_its_node_was_lost():
    leaving = pod("web-1")
    leaving["metadata"]["deletionTimestamp"] = stamp(timedelta(minutes=4))
    assert cells("pods", leaving)[2] == "Terminating"
    leaving["status"]["reason"] = "NodeLost"
    assert cells("pods", leaving)[2] == "Unknown"
    finished = pod("job-1", phase="Succeeded")
    finished["metadata"]["deletionTimestamp"] = stamp()
    assert cells("pods", finished)[2] == "Succeeded"


def test_scheduling_gated_pod_and_readiness_gates():
    gated = pod("web-1", phase="Pending")
    gated["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    assert cells("pods", gated)[2] == "SchedulingGated"
    gates = pod("web-1", node_name="n1")
    gates["spec"]["readinessGates"] = [{"conditionType": "a/lb"}, {"conditionType": "b/dns"}]
    gates["status"]["conditions"].append({"type": "a/lb", "status": "True"})
    gates["status"]["nominatedNodeName"] = "n2"
    gates["status"]["podIPs"] = [{"ip": "10.0.0.9"}]
    assert cells("pods", gates)[5:] == ["10.0.0.9", "n1", "n2", "1/2"]


# ---------------------------------------------------------------- nodes


def test_node_columns_and_ready_worker():
    assert [name for name, _ in columns("nodes")] == [
        "Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image",
        "Kernel-Version", "Container-Runtime",
    ]  # fmt: skip
    worker = node("n1", created=timedelta(days=-2, hours=-3))
    assert cells("nodes", worker) == [
        "n1", "Ready", "<none>", "2d3h", "v1.32.0", "<none>", "<none>", "Ubuntu 22.04.4 LTS",
        "5.15.0-119-generic", "containerd://1.7.24",
    ]  # fmt: skip


def test_node_status_roles_and_addresses():
    labels = {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "",
              "kubernetes.io/role": "master"}  # fmt: skip
    cordoned = node("cp1", labels=labels, unschedulable=True)
    cordoned["status"]["addresses"] = [
        {"type": "Hostname", "address": "cp1"},
        {"type": "InternalIP", "address": "10.1.0.1"},
        {"type": "ExternalIP", "address": "203.0.113.1"},
    ]
    row = cells("nodes", cordoned)
    assert row[1:3] == ["Ready,SchedulingDisabled", "control-plane,etcd,master"]
    assert row[5:7] == ["10.1.0.1", "203.0.113.1"]
    assert cells("nodes", node("n2", ready="False"))[1] == "NotReady"
    assert cells("nodes", node("n3", ready="Unknown"))[1] == "NotReady"
    silent = node("n4")
    silent["status"]["conditions"] = []
    silent["status"]["nodeInfo"] = {}
    assert cells("nodes", silent)[1:] == ["Unknown", "<none>", "5m", "", "<none>", "<none>",
                                           "<unknown>", "<unknown>", "<unknown>"]  # fmt: skip


# ---------------------------------------------------------------- workloads


def test_deployment_ready_up_to_date_available_and_wide_columns():
    assert columns("deployments", "apps") == [
        ("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0),
        ("Containers", 1), ("Images", 1), ("Selector", 1),
    ]  # fmt: skip
    web = deployment("web", replicas=3, created=timedelta(hours=-2))
    web["status"].update(readyReplicas=2, updatedReplicas=3, availableReplicas=2)
    assert cells("deployments", web, "apps") == [
        "web", "2/3", 3, 2, "125m", "web", "registry.example/web:1.0", "app.kubernetes.io/name=web",
    ]  # fmt: skip
    del web["spec"]["selector"]
    assert cells("deployments", web, "apps")[-1] == ""


def test_replicaset_counts_and_formatted_selector():
    rs = replicaset(deployment("web", replicas=2))
    rs["status"]["readyReplicas"] = 1
    row = cells("replicasets", rs, "apps")
    assert row[:5] == ["web-5d8f7c9b4", 2, 2, 1, "5m"]
    assert row[7] == "app.kubernetes.io/name=web,pod-template-hash=5d8f7c9b4"
    rs["spec"]["selector"] = None
    assert cells("replicasets", rs, "apps")[7] == "<none>"


def test_statefulset_and_daemonset():
    db = deployment("db", replicas=3)
    db["kind"] = "StatefulSet"
    db["status"] = {"replicas": 3, "readyReplicas": 1}
    assert cells("statefulsets", db, "apps") == ["db", "1/3", "5m", "db", "registry.example/db:1.0"]
    agent = deployment("agent")
    agent["kind"] = "DaemonSet"
    del agent["spec"]["replicas"]
    agent["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}
    agent["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                       "updatedNumberScheduled": 3, "numberAvailable": 2}  # fmt: skip
    assert cells("daemonsets", agent, "apps") == [
        "agent", 3, 3, 2, 3, 2, "kubernetes.io/os=linux", "5m", "agent",
        "registry.example/agent:1.0", "app.kubernetes.io/name=agent",
    ]  # fmt: skip


# ---------------------------------------------------------------- services and events


def service(name, **spec):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": stamp()},
            "spec": spec}  # fmt: skip


def test_service_type_ips_and_ports():
    web = service("web", type="ClusterIP", clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"],
                  ports=[{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                  selector={"app": "web"})  # fmt: skip
    assert cells("services", web) == ["web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP",
                                      "5m", "app=web"]  # fmt: skip
    edge = service("edge", type="LoadBalancer", clusterIP="10.96.0.11",
                   ports=[{"port": 443, "nodePort": 30443}])  # fmt: skip
    assert cells("services", edge)[2:5] == ["10.96.0.11", "<pending>", "443:30443/TCP"]
    edge["status"] = {
        "loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "lb.example"}]}
    }
    assert cells("services", edge)[3] == "203.0.113.9,lb.example"
    external = service("ext", type="ExternalName", externalName="db.example")
    assert cells("services", external)[1:5] == ["ExternalName", "<none>", "db.example", "<none>"]


def test_event_row_names_the_object_and_the_source():
    target = pod("web-1")
    warning = event(involved=target, reason="BackOff", message=" Back-off restarting ",
                    count=7, first=timedelta(minutes=-10), last=timedelta(minutes=2),
                    host="n1", field_path="spec.containers{main}")  # fmt: skip
    assert [name for name, _ in columns("events")] == [
        "Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen",
        "Count", "Name",
    ]  # fmt: skip
    assert cells("events", warning) == [
        "3m", "Warning", "BackOff", "pod/web-1", "spec.containers{main}", "kubelet, n1",
        "Back-off restarting", "15m", 7, warning["metadata"]["name"],
    ]  # fmt: skip


def test_event_series_and_missing_timestamps():
    target = node("n1")
    noted = event(involved=target, reason="Rebooted", message="m", count=0)
    noted["firstTimestamp"] = noted["lastTimestamp"] = None
    noted["eventTime"] = stamp(timedelta(minutes=1)).replace("Z", ".123456Z")
    noted["source"] = {}
    # eventTime is a MicroTime: 3m59.877s ago truncates to 3m59s
    assert cells("events", noted)[:9] == ["3m59s", "Warning", "Rebooted", "node/n1", "", "kubelet",
                                          "m", "3m59s", 1]  # fmt: skip
    noted["series"] = {"count": 4, "lastObservedTime": stamp(timedelta(minutes=4))}
    assert cells("events", noted)[0] == "60s" and cells("events", noted)[8] == 4


def test_events_k8s_io_shaped_events_print_like_core_events():
    core = event(involved=pod("web-1"), reason="Pulled", message="ok", type="Normal")
    shaped = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": core["metadata"],
        "regarding": core["involvedObject"],
        "note": core["message"],
        "reason": "Pulled",
        "type": "Normal",
        "deprecatedFirstTimestamp": core["firstTimestamp"],
        "deprecatedLastTimestamp": core["lastTimestamp"],
        "deprecatedCount": 1,
        "reportingController": "kubelet",
    }
    assert cells("events", shaped, "events.k8s.io") == cells("events", core)


# ---------------------------------------------------------------- the small printers


def meta(name, **extra):
    return {"metadata": {"name": name, "creationTimestamp": stamp()}, **extra}


def test_namespace_configmap_secret_serviceaccount_pdb_and_lease_rows():
    assert cells("namespaces", meta("prod", status={"phase": "Active"})) == ["prod", "Active", "5m"]
    cm = meta("cfg", data={"a": "1", "b": "2"}, binaryData={"c": "AA=="})
    assert cells("configmaps", cm) == ["cfg", 3, "5m"]
    assert cells("secrets", meta("s", type="Opaque", data={"k": "dg=="})) == [
        "s",
        "Opaque",
        1,
        "5m",
    ]
    assert cells("serviceaccounts", meta("default")) == ["default", 0, "5m"]
    pdb = meta("web", spec={"minAvailable": 2}, status={"disruptionsAllowed": 1})
    assert cells("poddisruptionbudgets", pdb, "policy") == ["web", "2", "N/A", 1, "5m"]
    pdb["spec"] = {"maxUnavailable": "25%"}
    assert cells("poddisruptionbudgets", pdb, "policy")[1:3] == ["N/A", "25%"]
    lease = meta("kube-scheduler", spec={"holderIdentity": "cp1_1234"})
    assert cells("leases", lease, "coordination.k8s.io") == ["kube-scheduler", "cp1_1234", "5m"]
    assert cells("leases", meta("free"), "coordination.k8s.io")[1] == ""


def test_missing_creation_timestamp_reads_unknown():
    assert cells("namespaces", {"metadata": {"name": "x"}}) == ["x", "", "<unknown>"]


@pytest.mark.parametrize(
    ("plural", "group", "obj"),
    [
        ("pods", "", pod("p")),
        ("nodes", "", node("n")),
        ("deployments", "apps", deployment("d")),
        ("replicasets", "apps", replicaset(deployment("d"))),
        ("statefulsets", "apps", deployment("s")),
        ("daemonsets", "apps", deployment("a")),
        ("services", "", service("svc")),
        ("events", "", event(involved=pod("p"), reason="r", message="m")),
        ("events", "events.k8s.io", event(involved=pod("p"), reason="r", message="m")),
        ("namespaces", "", meta("n")),
        ("configmaps", "", meta("c")),
        ("secrets", "", meta("s")),
        ("serviceaccounts", "", meta("sa")),
        ("poddisruptionbudgets", "policy", meta("pdb")),
        ("leases", "coordination.k8s.io", meta("l")),
        ("machines", "cluster.x-k8s.io", meta("m")),
        ("nodes", "metrics.k8s.io", node_metrics("n", cpu="250m", memory="1Gi")),
    ],
)
def test_every_printer_fills_one_cell_per_column_with_documented_columns(plural, group, obj):
    result = render(plural, obj, group=group)
    assert len(result["rows"][0]["cells"]) == len(result["columnDefinitions"])
    for column in result["columnDefinitions"]:
        assert set(column) == {"name", "type", "format", "description", "priority"}
        if group != "metrics.k8s.io":
            assert column["description"], column["name"]


# ---------------------------------------------------------------- custom resources and metrics


def test_custom_resource_without_printer_columns_gets_name_and_age():
    machine = meta("m1", spec={"clusterName": "c1"})
    result = render("machines", machine, group="cluster.x-k8s.io")
    assert [(c["name"], c["type"]) for c in result["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert result["columnDefinitions"][1]["description"].startswith("CreationTimestamp is")
    assert result["rows"][0]["cells"] == ["m1", "5m"]


def test_custom_resource_printer_columns_follow_their_json_paths_and_types():
    printer_columns = [
        {"name": "Cluster", "type": "string", "jsonPath": ".spec.clusterName"},
        {"name": "Ready", "type": "string",
         "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas", "priority": 1},
        {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
        {"name": "Ports", "type": "string", "jsonPath": ".spec.ports[1]"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Missing", "type": "string", "jsonPath": ".status.nothing", "description": "d"},
    ]  # fmt: skip
    md = meta("md1", spec={"clusterName": "c1", "paused": False, "ports": [80, {"n": 1}]},
              status={"replicas": 3.0,
                      "conditions": [{"type": "Ready", "status": "True"}]})  # fmt: skip
    result = render("machinedeployments", md, group="cluster.x-k8s.io",
                    printer_columns=printer_columns)  # fmt: skip
    assert result["rows"][0]["cells"] == ["md1", "c1", "True", 3, False, '{"n":1}', "5m", None]
    definitions = result["columnDefinitions"]
    assert definitions[1]["description"] == (
        "Custom resource definition column (in JSONPath format): .spec.clusterName"
    )
    assert definitions[3]["priority"] == 1 and definitions[7]["description"] == "d"


def test_metrics_tables_sum_container_usage_like_metrics_server():
    target = pod("web-1", containers=[container("app"), container("sidecar")])
    usage = {
        "app": {"cpu": "250m", "memory": "100Mi"},
        "sidecar": {"cpu": "750m", "memory": "28Mi"},
    }
    result = render("pods", pod_metrics(target, usage), group="metrics.k8s.io")
    assert [(c["name"], c["format"]) for c in result["columnDefinitions"]] == [
        ("Name", "name"), ("cpu", "quantity"), ("memory", "quantity"), ("Window", "duration"),
    ]  # fmt: skip
    assert result["rows"][0]["cells"] == ["web-1", "1", "128Mi", "30s"]
    assert render("nodes", node_metrics("n1", cpu="1500m", memory="2Gi"), group="metrics.k8s.io")[
        "rows"][0]["cells"] == ["n1", "1500m", "2Gi", "30s"]  # fmt: skip
    empty = render("nodes", group="metrics.k8s.io")
    assert empty["columnDefinitions"] is None and empty["rows"] is None
