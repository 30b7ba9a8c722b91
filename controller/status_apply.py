"""The one place the controller writes: a Pizza's status through `/status` with server-side apply.

Server-side apply (PATCH `application/apply-patch+yaml`, fieldManager `pizza-controller`,
force=true) makes the controller the owner of exactly the status fields it sends: a field it stops
sending (cost of a pizza whose topping was deleted) is removed, fields other managers own are left
alone, and no resourceVersion precondition is needed — the controller's view of the fields it owns is
the truth, so force resolves conflicts with anyone else who wrote them.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

GROUP = "restaurant.programming-kubernetes.info"
VERSION = "v1beta1"
FIELD_MANAGER = "pizza-controller"


def apply_pizza_status(api: client.ApiClient, namespace: str, name: str, status: dict[str, Any]) -> Any:
    """Apply `status` as the controller's whole intent for the pizza's status; returns the pizza."""
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Pizza",
        "metadata": {"name": name, "namespace": namespace},
        "status": status,
    }
    return client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        "pizzas",
        name,
        body,  # the client encodes it as JSON, which is YAML, under the apply content type
        field_manager=FIELD_MANAGER,
        force=True,
        _content_type="application/apply-patch+yaml",
    )
