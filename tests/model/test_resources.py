from kubemedic.model import resources
from kubemedic.model.quantities import parse_quantity as q
from tests.factories import container, node, pod


def test_pod_request_is_the_sum_of_its_containers() -> None:
    body = pod(
        "web",
        containers=[
            container("app", requests={"cpu": "250m", "memory": "256Mi"}),
            container("proxy", requests={"cpu": "50m", "memory": "64Mi"}),
        ],
    )
    assert resources.pod_requests(body) == {"cpu": q("300m"), "memory": q("320Mi")}


def test_a_large_init_container_sets_the_floor_of_the_pod_request() -> None:
    body = pod(
        "web",
        containers=[container("app", requests={"cpu": "100m", "memory": "128Mi"})],
        init_containers=[container("migrate", requests={"cpu": "2", "memory": "64Mi"})],
    )
    assert resources.pod_requests(body) == {"cpu": q("2"), "memory": q("128Mi")}


def test_sidecars_add_to_the_pod_and_to_later_init_containers() -> None:
    # KEP-753: a restartable init container keeps running, so it counts beside the app
    # containers and beside every init container started after it.
    body = pod(
        "web",
        containers=[container("app", requests={"memory": "100Mi"})],
        init_containers=[
            container("mesh", requests={"memory": "50Mi"}, restart_policy="Always"),
            container("setup", requests={"memory": "120Mi"}),
        ],
    )
    # regular 100Mi + sidecar 50Mi = 150Mi; the init phase peaks at setup 120Mi + mesh 50Mi.
    assert resources.pod_requests(body)["memory"] == q("170Mi")


def test_pod_overhead_is_added_after_the_containers() -> None:
    body = pod(
        "kata",
        containers=[container("app", requests={"cpu": "1"})],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert resources.pod_requests(body) == {"cpu": q("1250m"), "memory": q("120Mi")}


def test_limits_count_only_containers_that_set_one_and_report_unbounded() -> None:
    body = pod(
        "web",
        containers=[
            container("app", limits={"memory": "1Gi"}),
            container("log", requests={"memory": "10Mi"}),
        ],
    )
    assert resources.pod_limits(body) == {"memory": q("1Gi")}
    assert resources.unbounded_limits(body) == {"cpu", "memory"}


def test_node_allocatable_falls_back_to_capacity() -> None:
    body = node("n1", cpu="8", memory="32Gi")
    del body["status"]["allocatable"]
    assert resources.node_allocatable(body)["memory"] == q("32Gi")
