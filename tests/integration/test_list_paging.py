"""LIST with limit/continue (one consistent snapshot), remainingItemCount and selectors."""

from __future__ import annotations

GROUP = "restaurant.programming-kubernetes.info"


async def test_paging_is_a_consistent_snapshot(any_api) -> None:
    api = any_api
    names = [f"t{i}" for i in range(7)]
    await api.create_toppings(*names)

    r = await api.get(api.toppings_path(), params={"limit": "3"})
    assert r.status == 200
    page1 = r.body
    assert [i["metadata"]["name"] for i in page1["items"]] == ["t0", "t1", "t2"]
    assert page1["metadata"]["remainingItemCount"] == 4
    token = page1["metadata"]["continue"]
    snapshot_rv = page1["metadata"]["resourceVersion"]

    # Writes between pages are not seen by the pages that follow.
    await api.create_toppings("t3a")
    assert (await api.delete(api.toppings_path("v1beta1", "t5"))).status == 200
    r = await api.patch(
        api.toppings_path("v1beta1", "t4"), {"spec": {"cost": 2}}, "application/merge-patch+json"
    )
    assert r.status == 200

    r = await api.get(api.toppings_path(), params={"limit": "3", "continue": token})
    assert r.status == 200, r
    page2 = r.body
    assert [i["metadata"]["name"] for i in page2["items"]] == ["t3", "t4", "t5"]
    assert page2["items"][1]["spec"] == {"cost": 1}
    assert page2["metadata"]["resourceVersion"] == snapshot_rv
    assert page2["metadata"]["remainingItemCount"] == 1

    r = await api.get(api.toppings_path(), params={"limit": "3", "continue": page2["metadata"]["continue"]})
    page3 = r.body
    assert [i["metadata"]["name"] for i in page3["items"]] == ["t6"]
    assert "continue" not in page3["metadata"]
    assert "remainingItemCount" not in page3["metadata"]
    assert page3["metadata"]["resourceVersion"] == snapshot_rv

    # A fresh list sees the writes.
    r = await api.get(api.toppings_path())
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["t0", "t1", "t2", "t3", "t3a", "t4", "t6"]
    assert int(r.body["metadata"]["resourceVersion"]) > int(snapshot_rv)


async def test_exact_page_boundary_has_no_continue(api) -> None:
    await api.create_toppings("a", "b", "c")
    r = await api.get(api.toppings_path(), params={"limit": "3"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a", "b", "c"]
    assert "continue" not in r.body["metadata"]
    r = await api.get(api.toppings_path(), params={"limit": "2"})
    assert r.body["metadata"]["remainingItemCount"] == 1
    r = await api.get(api.toppings_path(), params={"limit": "0"})
    assert len(r.body["items"]) == 3


async def test_paging_pizzas_across_namespaces(any_api) -> None:
    api = any_api
    for ns in ("a", "b", "c"):
        for name in ("p1", "p2"):
            r = await api.post(api.pizzas_path(namespace=ns), api.pizza(name, []))
            assert r.status == 201, r
    seen = []
    params = {"limit": "4"}
    for _ in range(5):
        r = await api.get(f"/apis/{GROUP}/v1beta1/pizzas", params=params)
        assert r.status == 200, r
        seen += [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.body["items"]]
        token = r.body["metadata"].get("continue")
        if not token:
            break
        params = {"limit": "4", "continue": token}
    assert seen == [(ns, n) for ns in ("a", "b", "c") for n in ("p1", "p2")]


async def test_label_selectors(any_api) -> None:
    api = any_api
    for name, labels in (
        ("red", {"color": "red", "hot": "yes"}),
        ("green", {"color": "green"}),
        ("plain", {}),
    ):
        r = await api.post(api.toppings_path(), api.topping(name, labels=labels))
        assert r.status == 201

    async def names(selector: str, **extra: str) -> list[str]:
        r = await api.get(api.toppings_path(), params={"labelSelector": selector, **extra})
        assert r.status == 200, r
        return [i["metadata"]["name"] for i in r.body["items"]]

    assert await names("color=red") == ["red"]
    assert await names("color!=red") == ["green", "plain"]
    assert await names("color") == ["green", "red"]
    assert await names("!color") == ["plain"]
    assert await names("color in (red,green),hot") == ["red"]
    assert await names("color notin (red)") == ["green", "plain"]
    assert await names("color=blue") == []
    # With a selector, pages still fill up and remainingItemCount is not reported.
    r = await api.get(api.toppings_path(), params={"labelSelector": "color", "limit": "1"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["green"]
    assert "remainingItemCount" not in r.body["metadata"]
    r = await api.get(
        api.toppings_path(),
        params={"labelSelector": "color", "limit": "1", "continue": r.body["metadata"]["continue"]},
    )
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["red"]


async def test_field_selector_metadata_name(any_api) -> None:
    api = any_api
    await api.create_toppings("x", "y")
    r = await api.get(api.toppings_path(), params={"fieldSelector": "metadata.name=x"})
    assert r.status == 200
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["x"]
    assert int(r.body["metadata"]["resourceVersion"]) > 0
    r = await api.get(api.toppings_path(), params={"fieldSelector": "metadata.name!=x"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["y"]
    r = await api.get(api.toppings_path(), params={"fieldSelector": "metadata.name=nope"})
    assert r.body["items"] == []

    for ns in ("n1", "n2"):
        assert (await api.post(api.pizzas_path(namespace=ns), api.pizza("same", []))).status == 201
    r = await api.get(f"/apis/{GROUP}/v1beta1/pizzas", params={"fieldSelector": "metadata.name=same"})
    assert sorted(i["metadata"]["namespace"] for i in r.body["items"]) == ["n1", "n2"]
    r = await api.get(api.pizzas_path(namespace="n1"), params={"fieldSelector": "metadata.name=same"})
    assert [i["metadata"]["namespace"] for i in r.body["items"]] == ["n1"]
    r = await api.get(
        f"/apis/{GROUP}/v1beta1/pizzas", params={"fieldSelector": "metadata.namespace=n2,metadata.name=same"}
    )
    assert [i["metadata"]["namespace"] for i in r.body["items"]] == ["n2"]


async def test_list_resource_version_semantics(any_api) -> None:
    api = any_api
    await api.create_toppings("a")
    rv = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    await api.create_toppings("b")
    # resourceVersion=0: any state is fine; NotOlderThan an old rv gives the newest.
    r = await api.get(api.toppings_path(), params={"resourceVersion": "0"})
    assert r.status == 200
    r = await api.get(
        api.toppings_path(), params={"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}
    )
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a", "b"]
    # Exact reads the past.
    r = await api.get(api.toppings_path(), params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert r.status == 200, r
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a"]
    assert r.body["metadata"]["resourceVersion"] == rv
    # resourceVersionMatch without a resourceVersion is invalid.
    r = await api.get(api.toppings_path(), params={"resourceVersionMatch": "Exact"})
    assert r.status == 422, r
    assert r.body["details"]["kind"] == "ListOptions"
    assert r.body["details"]["group"] == "meta.k8s.io"
    # A resourceVersion from the future is a timeout, like kube's "Too large resource version".
    r = await api.get(api.toppings_path(), params={"resourceVersion": str(int(rv) + 1000)})
    assert r.status == 504, r
    assert r.body["reason"] == "Timeout"
    assert r.body["message"].startswith("Too large resource version")


async def test_continue_token_after_compaction_is_expired(storage_api) -> None:
    api = storage_api
    await api.create_toppings("a", "b", "c")
    r = await api.get(api.toppings_path(), params={"limit": "1"})
    token = r.body["metadata"]["continue"]
    await api.patch(api.toppings_path("v1beta1", "b"), {"spec": {"cost": 2}}, "application/merge-patch+json")
    current = int((await api.get(api.toppings_path())).body["metadata"]["resourceVersion"])
    await api.extra["storage"].compact(current)
    r = await api.get(api.toppings_path(), params={"limit": "1", "continue": token})
    assert r.status == 410, r
    assert r.body["reason"] == "Expired"
    assert r.body["message"].startswith("The provided continue parameter is too old to display a consistent")
    # kube hands out a token that goes on at the newest state (an inconsistent, but complete, list).
    fresh = r.body["metadata"]["continue"]
    r = await api.get(api.toppings_path(), params={"limit": "5", "continue": fresh})
    assert r.status == 200, r
    assert [(i["metadata"]["name"], i["spec"]["cost"]) for i in r.body["items"]] == [("b", 2), ("c", 1)]
    assert int(r.body["metadata"]["resourceVersion"]) >= current
    # A list at a compacted revision is 410 with kube's list message.
    r = await api.get(api.toppings_path(), params={"resourceVersion": "2", "resourceVersionMatch": "Exact"})
    assert r.status == 410, r
    assert r.body["message"] == "The resourceVersion for the provided list is too old."


async def test_continue_token_with_resource_version_is_400(api) -> None:
    await api.create_toppings("a", "b")
    token = (await api.get(api.toppings_path(), params={"limit": "1"})).body["metadata"]["continue"]
    r = await api.get(api.toppings_path(), params={"limit": "1", "continue": token, "resourceVersion": "5"})
    assert r.status == 400, r
    assert r.body["message"] == "specifying resource version is not allowed when using continue"
