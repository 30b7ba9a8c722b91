"""LIST semantics in depth, on both backends: selectors and their 400s, paging snapshots, resourceVersion.

Complements test_list_paging.py (basic paging and selectors) with the error paths and the rules that
are easy to get subtly wrong: every selector operator, kube's parse errors verbatim, the single-name
read honouring resourceVersion, the legacy "rv + limit = exact" rule and kube's validation order.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures.objects import list_resource_version

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"
ALL_PIZZAS = f"/apis/{GROUP}/v1beta1/pizzas"


async def _names(api, path: str, **params: str) -> list[str]:
    r = await api.get(path, params=params)
    assert r.status == 200, r
    return [i["metadata"]["name"] for i in r.body["items"]]


async def test_every_label_selector_operator(any_api) -> None:
    api = any_api
    for name, labels in (
        ("red", {"color": "red", "hot": "yes"}),
        ("green", {"color": "green"}),
        ("blue", {"color": "blue", "hot": "no"}),
        ("plain", {}),
    ):
        assert (await api.post(api.toppings_path(), api.topping(name, labels=labels))).status == 201
    path = api.toppings_path()
    assert await _names(api, path, labelSelector="color=red") == ["red"]
    assert await _names(api, path, labelSelector="color==red") == ["red"]
    assert await _names(api, path, labelSelector="color!=red") == ["blue", "green", "plain"]
    assert await _names(api, path, labelSelector="color in (red, blue)") == ["blue", "red"]
    assert await _names(api, path, labelSelector="color notin (red,blue)") == ["green", "plain"]
    assert await _names(api, path, labelSelector="hot") == ["blue", "red"]
    assert await _names(api, path, labelSelector="!hot") == ["green", "plain"]
    # Requirements are ANDed; an empty selector selects everything.
    assert await _names(api, path, labelSelector="color,!hot") == ["green"]
    assert await _names(api, path, labelSelector="hot=yes,color in (red)") == ["red"]
    assert await _names(api, path, labelSelector="") == ["blue", "green", "plain", "red"]


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("color in (red", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("color b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("!!color", "unable to parse requirement: found '!', expected: identifier"),
        ("color notin red", "unable to parse requirement: found 'red' expected: '('"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("a=b@c", 'unable to parse requirement: values[0][a]: Invalid value: "b@c": a valid label must be'),
    ],
)
async def test_bad_label_selector_is_400_on_list_watch_and_deletecollection(api, selector, message) -> None:
    await api.create_toppings("keep")
    for method, extra in (("GET", {}), ("GET", {"watch": "true"}), ("DELETE", {})):
        r = await api.request(method, api.toppings_path(), params={"labelSelector": selector, **extra})
        assert r.status == 400, (method, extra, r)
        assert (r.body["kind"], r.body["status"], r.body["reason"]) == ("Status", "Failure", "BadRequest")
        assert r.body["message"].startswith(message), r.body["message"]
    # Nothing was deleted by the refused deletecollection.
    assert await _names(api, api.toppings_path()) == ["keep"]


async def test_field_selectors_supported_and_not(any_api) -> None:
    api = any_api
    await api.create_toppings("x", "y")
    for ns in ("n1", "n2"):
        for name in ("p", "q"):
            assert (await api.post(api.pizzas_path(namespace=ns), api.pizza(name, []))).status == 201
    assert await _names(api, api.toppings_path(), fieldSelector="metadata.name==y") == ["y"]
    assert await _names(api, api.toppings_path(), fieldSelector="metadata.name!=y") == ["x"]
    r = await api.get(ALL_PIZZAS, params={"fieldSelector": "metadata.namespace=n2,metadata.name!=p"})
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.body["items"]] == [("n2", "q")]
    r = await api.get(ALL_PIZZAS, params={"fieldSelector": "metadata.namespace!=n1"})
    assert sorted(i["metadata"]["name"] for i in r.body["items"]) == ["p", "q"]
    # Unsupported fields: a cluster-scoped kind has no metadata.namespace; spec fields are not selectable.
    for path, selector, field in (
        (api.toppings_path(), "metadata.namespace=n1", "metadata.namespace"),
        (api.toppings_path(), "spec.cost=1", "spec.cost"),
        (ALL_PIZZAS, "metadata.name=p,status.cost=0", "status.cost"),
    ):
        for extra in ({}, {"watch": "true"}):
            r = await api.get(path, params={"fieldSelector": selector, **extra})
            assert r.status == 400, r
            assert r.body["reason"] == "BadRequest"
            assert r.body["message"] == f"field label not supported: {field}"
    # Bad syntax.
    r = await api.get(api.toppings_path(), params={"fieldSelector": "metadata.name"})
    assert r.status == 400, r
    assert r.body["message"] == "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    r = await api.get(api.toppings_path(), params={"fieldSelector": "metadata.name=a=b"})
    assert r.status == 400, r
    assert r.body["message"] == "invalid field selector: unescaped character in value: 61"


async def test_single_name_list_honours_resource_version(any_api) -> None:
    """fieldSelector=metadata.name=x is one key read; resourceVersion semantics still apply to it."""
    api = any_api
    await api.create_toppings("x")
    old_rv = (await api.get(api.toppings_path("v1beta1", "x"))).body["metadata"]["resourceVersion"]
    r = await api.patch(api.toppings_path("v1beta1", "x"), {"spec": {"cost": 2}}, MERGE)
    new_rv = r.body["metadata"]["resourceVersion"]
    by_name = {"fieldSelector": "metadata.name=x"}

    r = await api.get(
        api.toppings_path(), params={**by_name, "resourceVersion": old_rv, "resourceVersionMatch": "Exact"}
    )
    assert r.status == 200, r
    assert [i["spec"]["cost"] for i in r.body["items"]] == [1]
    assert r.body["metadata"]["resourceVersion"] == old_rv

    # Unset: the newest state, and the list's resourceVersion is at least the object's.
    r = await api.get(api.toppings_path(), params=by_name)
    assert [i["spec"]["cost"] for i in r.body["items"]] == [2]
    assert int(r.body["metadata"]["resourceVersion"]) >= int(new_rv)

    # A name that does not exist is an empty list, not a 404.
    r = await api.get(api.toppings_path(), params={"fieldSelector": "metadata.name=ghost"})
    assert r.status == 200 and r.body["items"] == []

    # A revision the store has not reached: kube's "Too large resource version" timeout.
    future = str(int(new_rv) + 1000)
    for match in ("NotOlderThan", "Exact"):
        r = await api.get(
            api.toppings_path(), params={**by_name, "resourceVersion": future, "resourceVersionMatch": match}
        )
        assert r.status == 504, r
        assert r.body["reason"] == "Timeout"


async def test_single_name_list_at_a_compacted_revision_is_gone(storage_api) -> None:
    api = storage_api
    await api.create_toppings("x")
    old_rv = (await api.get(api.toppings_path("v1beta1", "x"))).body["metadata"]["resourceVersion"]
    r = await api.patch(api.toppings_path("v1beta1", "x"), {"spec": {"cost": 2}}, MERGE)
    await api.extra["storage"].compact(int(r.body["metadata"]["resourceVersion"]))
    params = {"fieldSelector": "metadata.name=x", "resourceVersion": old_rv, "resourceVersionMatch": "Exact"}
    r = await api.get(api.toppings_path(), params=params)
    assert r.status == 410, r
    assert (r.body["reason"], r.body["message"]) == (
        "Expired",
        "The resourceVersion for the provided list is too old.",
    )


async def test_legacy_rule_resource_version_with_limit_is_exact(any_api) -> None:
    """resourceVersion=N with a limit and no resourceVersionMatch reads at N (kube's legacy rule);
    without a limit it means "not older than N" and lists the newest state."""
    api = any_api
    await api.create_toppings("a", "b")
    rv = await list_resource_version(api, api.toppings_path())
    await api.create_toppings("c")
    r = await api.get(api.toppings_path(), params={"resourceVersion": rv, "limit": "10"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a", "b"]
    assert r.body["metadata"]["resourceVersion"] == rv
    r = await api.get(api.toppings_path(), params={"resourceVersion": rv, "limit": "1"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a"]
    assert r.body["metadata"]["resourceVersion"] == rv
    # The continue token carries the revision: the next page is still the old snapshot.
    r = await api.get(api.toppings_path(), params={"limit": "5", "continue": r.body["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["b"]
    assert r.body["metadata"]["resourceVersion"] == rv
    r = await api.get(api.toppings_path(), params={"resourceVersion": rv})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a", "b", "c"]
    # "0" means any state; with a limit it still pages.
    r = await api.get(api.toppings_path(), params={"resourceVersion": "0", "limit": "2"})
    assert r.status == 200
    assert len(r.body["items"]) == 2 and r.body["metadata"]["continue"]


async def test_paging_while_writing_is_one_snapshot(any_api) -> None:
    """Walk 20 objects in pages of 3 while another task keeps writing: every page has the first page's
    resourceVersion, the union is exactly the state at that revision, remainingItemCount counts down."""
    api = any_api
    names = [f"t{i:02d}" for i in range(20)]
    await api.create_toppings(*names)
    r = await api.get(api.toppings_path(), params={"limit": "3"})
    first = r.body
    snapshot_rv = first["metadata"]["resourceVersion"]
    stop = asyncio.Event()

    async def writer() -> int:
        writes = 0
        while not stop.is_set():
            target = names[writes % len(names)]
            r = await api.patch(
                api.toppings_path("v1beta1", target), {"spec": {"cost": 1 + writes / 1000}}, MERGE
            )
            assert r.status == 200, r
            if writes % 5 == 0:
                await api.create_toppings(f"new{writes}")
            writes += 1
        return writes

    task = asyncio.create_task(writer())
    seen = [(i["metadata"]["name"], i["spec"]["cost"]) for i in first["items"]]
    remaining = [first["metadata"]["remainingItemCount"]]
    token = first["metadata"]["continue"]
    while token:
        await asyncio.sleep(0.02)
        r = await api.get(api.toppings_path(), params={"limit": "3", "continue": token})
        assert r.status == 200, r
        assert r.body["metadata"]["resourceVersion"] == snapshot_rv
        seen += [(i["metadata"]["name"], i["spec"]["cost"]) for i in r.body["items"]]
        remaining.append(r.body["metadata"].get("remainingItemCount", 0))
        token = r.body["metadata"].get("continue")
    stop.set()
    writes = await task
    assert writes > 0
    assert seen == [(n, 1) for n in names]
    assert remaining == [17, 14, 11, 8, 5, 2, 0]
    # The same snapshot read exactly, in one go.
    r = await api.get(
        api.toppings_path(), params={"resourceVersion": snapshot_rv, "resourceVersionMatch": "Exact"}
    )
    assert [(i["metadata"]["name"], i["spec"]["cost"]) for i in r.body["items"]] == seen


async def test_list_options_are_validated_like_kube(api) -> None:
    """Every problem is reported, in the order of kube's ValidateListOptions (422, kind ListOptions)."""
    r = await api.get(api.toppings_path(), params={"resourceVersionMatch": "Bogus"})
    assert r.status == 422, r
    assert r.body["details"]["kind"] == "ListOptions" and r.body["details"]["group"] == "meta.k8s.io"
    assert [(c["reason"], c["field"]) for c in r.body["details"]["causes"]] == [
        ("FieldValueForbidden", "resourceVersionMatch"),
        ("FieldValueNotSupported", "resourceVersionMatch"),
    ]
    assert r.body["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is '
        'forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Bogus": '
        'supported values: "Exact", "NotOlderThan", ""]'
    )
    r = await api.get(api.toppings_path(), params={"resourceVersion": "0", "resourceVersionMatch": "Exact"})
    assert r.status == 422, r
    assert 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' in r.body["message"]
    r = await api.get(api.toppings_path(), params={"sendInitialEvents": "true"})
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "sendInitialEvents"
    # Unparseable values are 400s.
    for params in ({"limit": "ten"}, {"resourceVersion": "abc"}, {"continue": "not-a-token"}):
        r = await api.get(api.toppings_path(), params=params)
        assert r.status == 400, (params, r)
        assert r.body["reason"] == "BadRequest"


async def test_watch_options_are_validated_like_kube(api) -> None:
    base = {"watch": "true"}
    r = await api.get(
        api.toppings_path(), params={**base, "resourceVersionMatch": "Exact", "resourceVersion": "1"}
    )
    assert r.status == 422, r
    assert [(c["reason"], c["message"]) for c in r.body["details"]["causes"]] == [
        (
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        ("FieldValueNotSupported", 'Unsupported value: "Exact": supported values: "NotOlderThan"'),
    ]
    r = await api.get(
        api.toppings_path(), params={**base, "sendInitialEvents": "true", "allowWatchBookmarks": "true"}
    )
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["message"] == (
        "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    )
    r = await api.get(api.toppings_path(), params={**base, "resourceVersion": "x1"})
    assert r.status == 400, r
    r = await api.get(api.toppings_path(), params={**base, "allowWatchBookmarks": "maybe"})
    assert r.status == 400, r


async def test_get_resource_version_semantics(any_api) -> None:
    """GET: unset or "0" = any state (the newest here), N = not older than N; a revision the store
    has not reached is kube's "Too large resource version" 504; a malformed one is a 400."""
    api = any_api
    created = (await api.post(api.toppings_path(), api.topping("x"))).body
    path = api.toppings_path("v1beta1", "x")
    rv = created["metadata"]["resourceVersion"]
    for value in ("", "0", rv, str(int(rv) - 1)):
        r = await api.get(path, params={"resourceVersion": value})
        assert (r.status, r.body["metadata"]["resourceVersion"]) == (200, rv), (value, r)
    r = await api.get(path, params={"resourceVersion": str(int(rv) + 100)})
    assert r.status == 504, r
    assert r.body["reason"] == "Timeout"
    assert r.body["message"].startswith(f"Too large resource version: {int(rv) + 100}, current: ")
    r = await api.get(path, params={"resourceVersion": "-1"})
    assert r.status == 400, r
