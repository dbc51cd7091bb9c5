"""Field-manager names, as the real components and clients write them into managedFields.

One place for each, so the simulator's components, its scenarios and the emulator's own
collectors name themselves alike (and as kubemedic's checks expect them on a real cluster).
"""

from __future__ import annotations

__all__ = [
    "ARGOCD_APPLICATION_CONTROLLER",
    "ARGOCD_CONTROLLER",
    "BEFORE_FIRST_APPLY",
    "CAPI_MACHINEDEPLOYMENT",
    "CAPI_MACHINESET",
    "CAPI_MANAGER",
    "CLUSTER_AUTOSCALER",
    "INFRASTRUCTURE_PROVIDER",
    "KUBECTL",
    "KUBECTL_CREATE",
    "KUBECTL_EDIT",
    "KUBECTL_PATCH",
    "KUBECTL_TAINT",
    "KUBELET",
    "KUBE_CONTROLLER_MANAGER",
    "KUBE_SCHEDULER",
    "METRICS_SERVER",
]

KUBE_CONTROLLER_MANAGER = "kube-controller-manager"
KUBE_SCHEDULER = "kube-scheduler"
KUBELET = "kubelet"
CLUSTER_AUTOSCALER = "cluster-autoscaler"
METRICS_SERVER = "metrics-server"
#: Cluster API's core controller binary calls itself ``manager``.
CAPI_MANAGER = "manager"
#: Cluster API's server-side applies of MachineSets and Machines.
CAPI_MACHINEDEPLOYMENT = "capi-machinedeployment"
CAPI_MACHINESET = "capi-machineset"
INFRASTRUCTURE_PROVIDER = "infrastructure-provider"
#: ``kubectl apply --server-side``'s default; the other kubectl verbs name themselves.
KUBECTL = "kubectl"
KUBECTL_CREATE = "kubectl-create"
KUBECTL_EDIT = "kubectl-edit"
KUBECTL_PATCH = "kubectl-patch"
KUBECTL_TAINT = "kubectl-taint"
#: The manager server-side apply gives fields a client-side apply set before the first
#: server-side apply took them over.
BEFORE_FIRST_APPLY = "before-first-apply"
#: Argo CD's server-side applies of an application's objects (``ArgoCDSSAManager``).
ARGOCD_CONTROLLER = "argocd-controller"
#: Argo CD's application controller writing its Applications (the binary's name).
ARGOCD_APPLICATION_CONTROLLER = "argocd-application-controller"
