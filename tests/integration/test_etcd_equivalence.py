"""Embedded and etcd give the same answers: one scripted sequence of requests against each backend.

Bodies are compared after normalising what must differ between two runs (uids, timestamps, continue
tokens); resourceVersions are replaced by their rank, so both backends must still order and equate
them the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from apis.restaurant.v1alpha1.conversion import ORDER_NUMBER_ANNOTATION
from tests.fixtures.server import running_server
from tests.integration.conftest import GROUP, Api
from tests.integration.test_etcd_server import etcd_api, unique_prefix

pytestmark = pytest.mark.etcd

# Fields that legitimately differ between two runs of the same requests: normalised before comparing.
# A pizza's order number is drawn at random (v1alpha1 shows it as an annotation).
VOLATILE_FIELDS = frozenset(
    {
        "uid",
        "creationTimestamp",
        "continue",
        "deletionTimestamp",
        "time",
        "orderNumber",
        ORDER_NUMBER_ANNOTATION,
    }
)


def resource_versions(body: Any) -> set[int]:
    """Every resourceVersion anywhere in `body`."""
    if isinstance(body, dict):
        found = {int(body["resourceVersion"])} if str(body.get("resourceVersion", "")).isdigit() else set()
        return found.union(*(resource_versions(v) for v in body.values()))
    if isinstance(body, list):
        return set().union(*(resource_versions(item) for item in body))
    return set()


def normalise(body: Any, ranks: dict[int, int]) -> Any:
    """`body` with VOLATILE_FIELDS replaced by a marker and each resourceVersion by its rank in `ranks`.

    Two backends number revisions differently (a shared etcd has other tests' revisions too), but
    the same requests must produce the same order and the same equalities between them.
    """
    if isinstance(body, dict):
        out: dict[str, Any] = {}
        for k, v in body.items():
            if k == "resourceVersion" and str(v).isdigit():
                out[k] = f"<rv #{ranks[int(v)]}>"
            elif k in VOLATILE_FIELDS and v not in (None, ""):
                out[k] = f"<{k}>"
            else:
                out[k] = normalise(v, ranks)
        return out
    if isinstance(body, list):
        return [normalise(item, ranks) for item in body]
    return body


# --- 7. embedded and etcd answer the same -----------------------------------------------------------


async def scripted_requests(api: Api) -> list[tuple[str, int, Any]]:
    """A fixed sequence of requests touching every verb; each answer as (step, status, normalised body)."""
    answers: list[tuple[str, int, Any]] = []

    def record(step: str, status: int, body: Any) -> Any:
        answers.append((step, status, body))
        return body

    async def call(step: str, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        if method == "PATCH":
            reply = await api.patch(path, body, kw.pop("content_type"), **kw)
        else:
            reply = await api.request(method, path, json=body, **kw)
        return record(step, reply.status, reply.body if reply.raw else None)

    pizzas, toppings = api.pizzas_path, api.toppings_path
    start = await call("list empty", "GET", pizzas())
    for name, cost in (("salami", 1), ("mozzarella", 0.5), ("tomato", 2)):
        await call(f"create topping {name}", "POST", toppings(), api.topping(name, cost))
    await call("create duplicate topping", "POST", toppings(), api.topping("salami", 9))
    await call("create invalid topping", "POST", toppings(), api.topping("bad", -1))
    await call(
        "create pizza v1alpha1",
        "POST",
        pizzas("v1alpha1"),
        api.pizza("extra", ["mozzarella", "salami", "mozzarella"], "v1alpha1", labels={"menu": "classic"}),
    )
    await call("create pizza defaulted", "POST", pizzas(), api.pizza("plain"))
    await call(
        "create pizza elsewhere", "POST", pizzas(namespace="other"), api.pizza("far", [{"name": "tomato"}])
    )
    await call("create pizza unknown topping", "POST", pizzas(), api.pizza("bad", [{"name": "pineapple"}]))
    await call(
        "create pizza dry-run",
        "POST",
        pizzas(),
        api.pizza("dry", [{"name": "salami"}]),
        params={"dryRun": "All"},
    )
    await call("get dry-run pizza", "GET", pizzas(name="dry"))
    extra = await call("get v1beta1", "GET", pizzas(name="extra"))
    await call("get v1alpha1", "GET", pizzas("v1alpha1", name="extra"))
    await call("list page 1", "GET", pizzas(), params={"limit": "1"})
    first = await api.get(pizzas(), params={"limit": "1"})
    await call(
        "list page 2", "GET", pizzas(), params={"limit": "1", "continue": first.body["metadata"]["continue"]}
    )
    await call("list all namespaces", "GET", f"/apis/{GROUP}/v1beta1/pizzas")
    await call("list by label", "GET", pizzas(), params={"labelSelector": "menu=classic"})
    await call("list by field", "GET", pizzas(), params={"fieldSelector": "metadata.name=plain"})
    changed = {**extra, "spec": {"toppings": [{"name": "tomato", "quantity": 3}]}}
    await call("update", "PUT", pizzas(name="extra"), changed)
    await call("update stale", "PUT", pizzas(name="extra"), extra)
    await call(
        "merge patch",
        "PATCH",
        pizzas(name="plain"),
        {"metadata": {"labels": {"menu": "x"}}},
        content_type="application/merge-patch+json",
    )
    await call(
        "json patch",
        "PATCH",
        toppings(name="tomato"),
        [{"op": "replace", "path": "/spec/cost", "value": 3}],
        content_type="application/json-patch+json",
    )
    await call(
        "strategic merge patch",
        "PATCH",
        pizzas(name="extra"),
        {"spec": {"toppings": [{"name": "salami", "quantity": 2}]}},
        content_type="application/strategic-merge-patch+json",
    )
    await call("delete pizza", "DELETE", pizzas(name="plain"))
    await call("delete missing", "DELETE", pizzas(name="plain"))
    await call("get deleted", "GET", pizzas(name="plain"))
    await call("delete collection", "DELETE", pizzas(namespace="other"))
    await call("list after", "GET", f"/apis/{GROUP}/v1alpha1/pizzas")
    # Every change to pizzas since the start, replayed by a watch that ends by itself.
    watch = await api.get(
        pizzas(),
        params={"watch": "1", "resourceVersion": start["metadata"]["resourceVersion"], "timeoutSeconds": "1"},
    )
    events = [orjson.loads(line) for line in watch.raw.splitlines() if line.strip()]
    record("watch", watch.status, events)
    ranks = {v: i for i, v in enumerate(sorted(set().union(*(resource_versions(b) for _, _, b in answers))))}
    return [(step, status, normalise(body, ranks)) for step, status, body in answers]


async def test_embedded_and_etcd_give_the_same_answers(etcd_server, tmp_path: Path) -> None:
    async with running_server(tmp_path / "embedded") as server, server.session() as session:
        embedded = await scripted_requests(Api(server, session))
    async with etcd_api(tmp_path / "etcd", [etcd_server.client_url], unique_prefix()) as api:
        on_etcd = await scripted_requests(api)

    assert [step for step, _, _ in on_etcd] == [step for step, _, _ in embedded]
    for (step, status, body), (_, e_status, e_body) in zip(on_etcd, embedded, strict=True):
        assert (status, body) == (e_status, e_body), f"{step}: etcd and embedded differ"
    statuses = {step: status for step, status, _ in on_etcd}
    assert statuses["create pizza v1alpha1"] == 201
    assert statuses["create duplicate topping"] == 409
    assert statuses["create invalid topping"] == 422
    assert statuses["create pizza unknown topping"] == 403
    assert statuses["get dry-run pizza"] == 404
    assert statuses["update"] == statuses["merge patch"] == statuses["json patch"] == 200
    # kube refuses SMP for custom resources; this server applies it with the schema's patch metadata.
    assert statuses["strategic merge patch"] == 200
    assert statuses["update stale"] == 409
    assert statuses["delete missing"] == statuses["get deleted"] == 404
    events = next(body for step, _, body in on_etcd if step == "watch")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "extra"),
        ("ADDED", "plain"),
        ("MODIFIED", "extra"),
        ("MODIFIED", "plain"),
        ("MODIFIED", "extra"),
        ("DELETED", "plain"),
    ]
