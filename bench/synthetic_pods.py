"""Synthetic pods' realism and usage: the fields real pods carry, and PodMetrics.

The builders make minimal pods; a snapshot read from a real cluster also carries what admission
and the kubelet add (host and pod IPs, QoS class, the default ``not-ready``/``unreachable``
NoExecute tolerations with ``tolerationSeconds: 300`` that the DefaultTolerationSeconds plugin
injects), and, with ``heavy``, the bulk of service-account volumes, env and ports that costs
parse time and memory although no check reads it. metrics-server reports on Running pods
only, and not on all of them between scrapes: PodMetrics cover about 60% of those.
"""

from __future__ import annotations

import random

from kubemedic.testing import bodies as b
from synthetic_templates import NOW, Obj


def add_extras(body: Obj, *, ip: int, heavy: bool) -> None:
    """Fields real pods carry that the builders leave out: addresses and the default tolerations
    always; with ``heavy``, also volumes, env, ports and mounts (they cost parse time and memory
    but no check reads them)."""
    body["status"].update(
        {
            "hostIP": f"10.1.{ip >> 8 & 255}.{ip & 255}",
            "qosClass": "Burstable",
            "podIP": f"10.8.{ip >> 8 & 255}.{ip & 255}",
        }
    )
    spec = body["spec"]
    spec["tolerations"] = [
        {
            "key": f"node.kubernetes.io/{k}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
        for k in ("not-ready", "unreachable")
    ]
    if not heavy:
        return
    spec.update(
        {
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "preemptionPolicy": "PreemptLowerPriority",
            "securityContext": {"runAsNonRoot": True, "fsGroup": 2000},
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                    },
                }
            ],
        }
    )
    for c in spec["containers"]:
        c["env"] = [
            {"name": "LOG_LEVEL", "value": "info"},
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
        ]
        c["ports"] = [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
        c["volumeMounts"] = [
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": "kube-api-access",
                "readOnly": True,
            }
        ]


def pod_metrics(rng: random.Random, pod_list: list[Obj]) -> list[Obj]:
    """PodMetrics for about 60% of the Running pods; Prometheus servers use 21Gi each (the
    memory hog beside the hubs), every other container 20-900Mi."""
    result = []
    for pod in pod_list:
        if pod["status"]["phase"] != "Running" or rng.random() > 0.6:
            continue
        meta = pod["metadata"]
        big = meta["name"].startswith("prometheus")
        usage = {
            c["name"]: {
                "cpu": f"{rng.randint(1, 900)}m",
                "memory": "21Gi" if big else f"{rng.randint(20, 900)}Mi",
            }
            for c in pod["spec"]["containers"]
        }
        result.append(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "PodMetrics",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "creationTimestamp": b.stamp(NOW),
                },
                "timestamp": b.stamp(NOW),
                "window": "30s",
                "containers": [{"name": n, "usage": u} for n, u in usage.items()],
            }
        )
    return result
