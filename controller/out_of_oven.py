"""Taking a pizza out of the oven early: the controller's one delete.

A pizza deleted with a grace period (`kubectl delete pizza X --grace-period=N`) stays, marked, until
the period is over; the bakery does not make the customer wait for it. It deletes the pizza with a
grace period of 0 — as the kubelet ends a pod's period once its containers stopped — guarded by the
pizza's uid, so that a pizza of the same name created since is never the one removed.
"""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.rest import ApiException

from controller.status_apply import GROUP, VERSION


def take_out_of_oven(api: client.ApiClient, namespace: str, name: str, uid: str) -> bool:
    """Delete the pizza now; False when it is already gone or is another pizza by now (both fine:
    nothing is left for the controller to do)."""
    options = client.V1DeleteOptions(grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid))
    try:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(
            GROUP, VERSION, namespace, "pizzas", name, body=options
        )
    except ApiException as e:
        if e.status in (404, 409):
            return False
        raise
    return True
