"""Hostile or malformed requests: always a 4xx Status, never a 500, never anything half-written."""

from __future__ import annotations

import json

import orjson
import pytest

GROUP = "restaurant.programming-kubernetes.info"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"
PIZZAS = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"


async def _nothing_written(api) -> None:
    for path in (TOPPINGS, PIZZAS, f"/apis/{GROUP}/v1beta1/pizzas"):
        r = await api.get(path)
        assert r.status == 200
        assert r.body["items"] == [], r


def _assert_status(r, code: int, reason: str) -> dict:
    assert r.status == code, r
    assert r.headers["Content-Type"] == "application/json"
    body = r.body
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert (body["status"], body["code"], body["reason"]) == ("Failure", code, reason)
    return body


BAD_BODIES = [
    pytest.param(b'{"apiVersion": ', "application/json", id="truncated-json"),
    pytest.param(b"not json at all", "application/json", id="garbage-json"),
    pytest.param(b"\xff\xfe\x00", "application/json", id="binary"),
    pytest.param(b"", "application/json", id="empty"),
    pytest.param(b"apiVersion: [unclosed\nkind: Topping\n", "application/yaml", id="malformed-yaml"),
    pytest.param(b"key: value\n  bad indentation: x\n", "application/yaml", id="bad-indent-yaml"),
    pytest.param(b"[1, 2, 3]", "application/json", id="json-array"),
    pytest.param(b'"just a string"', "application/json", id="json-string"),
    pytest.param(b"null", "application/json", id="json-null"),
    pytest.param(b"- a\n- b\n", "application/yaml", id="yaml-list"),
    pytest.param(b"1" * 5000, "application/json", id="huge-integer"),
]


@pytest.mark.parametrize(("data", "content_type"), BAD_BODIES)
async def test_malformed_bodies_are_400(api, data: bytes, content_type: str) -> None:
    for path in (TOPPINGS, PIZZAS):
        r = await api.request("POST", path, data=data, headers={"Content-Type": content_type})
        _assert_status(r, 400, "BadRequest")
    await api.create_toppings("ham")
    current = (await api.get(f"{TOPPINGS}/ham")).body
    r = await api.request("PUT", f"{TOPPINGS}/ham", data=data, headers={"Content-Type": content_type})
    _assert_status(r, 400, "BadRequest")
    r = await api.request(
        "PATCH", f"{TOPPINGS}/ham", data=data, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert r.status in (400, 422), r
    assert (await api.get(f"{TOPPINGS}/ham")).body == current


async def test_yaml_alias_bomb_is_400(api) -> None:
    # Each level refers nine times to the one before: 9**9 strings once expanded.
    bomb = "\n".join(
        ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        + [f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(8)]
        + [
            "apiVersion: restaurant.programming-kubernetes.info/v1beta1",
            "kind: Topping",
            "metadata: {name: bomb}",
            "spec: {cost: 1}",
        ]
    )
    r = await api.request("POST", TOPPINGS, data=bomb, headers={"Content-Type": "application/yaml"})
    _assert_status(r, 400, "BadRequest")
    await _nothing_written(api)


async def test_body_over_3_mib_is_413(api) -> None:
    body = {
        **api.topping("big"),
        "metadata": {"name": "big", "annotations": {"a": "x" * (3 * 1024 * 1024 + 10)}},
    }
    r = await api.post(TOPPINGS, body)
    _assert_status(r, 413, "RequestEntityTooLarge")
    # Chunked (no Content-Length) is capped as well.

    async def chunks():
        data = orjson.dumps(body)
        for i in range(0, len(data), 256 * 1024):
            yield data[i : i + 256 * 1024]

    async with api.session.post(TOPPINGS, data=chunks(), headers={"Content-Type": "application/json"}) as r:
        assert r.status == 413
        assert (await r.json())["reason"] == "RequestEntityTooLarge"
    await _nothing_written(api)


async def test_deep_nesting_is_400(api) -> None:
    deep = "[" * 150 + "]" * 150
    text = (
        f'{{"apiVersion":"{GROUP}/v1beta1","kind":"Topping","metadata":{{"name":"deep"}},'
        f'"spec":{{"cost":1,"x":{deep}}}}}'
    )
    r = await api.request("POST", TOPPINGS, data=text, headers={"Content-Type": "application/json"})
    body = _assert_status(r, 400, "BadRequest")
    assert "nesting" in body["message"] or "depth" in body["message"]
    very_deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    r = await api.request("POST", TOPPINGS, data=very_deep, headers={"Content-Type": "application/json"})
    _assert_status(r, 400, "BadRequest")
    yaml_deep = "a: " + "[" * 150 + "]" * 150
    r = await api.request("POST", TOPPINGS, data=yaml_deep, headers={"Content-Type": "application/yaml"})
    _assert_status(r, 400, "BadRequest")
    r = await api.patch(f"{TOPPINGS}/deep", text, "application/merge-patch+json")
    assert r.status in (400, 404), r
    await _nothing_written(api)


async def test_wrong_kind_is_422(api) -> None:
    body = {**api.topping("wrong"), "apiVersion": f"{GROUP}/v1beta1"}
    r = await api.post(PIZZAS, body)
    status = _assert_status(r, 422, "Invalid")
    assert (
        status["message"]
        == f'Pizza.{GROUP} "wrong" is invalid: kind: Invalid value: "Topping": must be Pizza'
    )
    assert status["details"]["kind"] == "Pizza"
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "Topping": must be Pizza', "field": "kind"}
    ]
    await _nothing_written(api)


@pytest.mark.parametrize("api_version", ["apps/v1", "v1", "other.example.com/v1beta1", f"{GROUP}/v9"])
async def test_wrong_api_version_is_400(api, api_version: str) -> None:
    body = {**api.topping("wrong"), "apiVersion": api_version}
    r = await api.post(TOPPINGS, body)
    _assert_status(r, 400, "BadRequest")
    await _nothing_written(api)


async def test_missing_kind_and_api_version_are_400(api) -> None:
    body = api.topping("nokind")
    del body["kind"]
    r = await api.post(TOPPINGS, body)
    status = _assert_status(r, 400, "BadRequest")
    assert "Kind" in status["message"]
    body = api.topping("noversion")
    del body["apiVersion"]
    r = await api.post(TOPPINGS, body)
    _assert_status(r, 400, "BadRequest")
    await _nothing_written(api)


# kube-apiserver 1.36.2's answer for a custom resource (the same handlers as built-in types).
STRICT_SPEC_BOGUS = (
    'Topping in version "v1beta1" cannot be handled as a Topping: '
    'strict decoding error: unknown field "spec.bogus"'
)


async def test_field_validation_strict(api) -> None:
    body = api.topping("strict")
    body["spec"]["bogus"] = 1
    r = await api.post(TOPPINGS, body, params={"fieldValidation": "Strict"})
    status = _assert_status(r, 400, "BadRequest")
    assert status["message"] == STRICT_SPEC_BOGUS
    body["metadata"]["unknownMeta"] = "x"
    r = await api.post(TOPPINGS, body, params={"fieldValidation": "Strict"})
    status = _assert_status(r, 400, "BadRequest")
    assert 'unknown field "spec.bogus"' in status["message"]
    assert 'unknown field "metadata.unknownMeta"' in status["message"]
    await _nothing_written(api)

    # PUT answers 400 the same way; a merge PATCH answers 422 with cause field "patch".
    await api.create_toppings("ham")
    current = (await api.get(f"{TOPPINGS}/ham")).body
    r = await api.put(
        f"{TOPPINGS}/ham", {**current, "spec": {"cost": 2, "bogus": 1}}, params={"fieldValidation": "Strict"}
    )
    status = _assert_status(r, 400, "BadRequest")
    assert status["message"] == STRICT_SPEC_BOGUS
    r = await api.patch(
        f"{TOPPINGS}/ham",
        {"spec": {"cost": 2, "bogus": 1}},
        "application/merge-patch+json",
        params={"fieldValidation": "Strict"},
    )
    status = _assert_status(r, 422, "Invalid")
    # kube's patch handler: empty kind and name, one cause "patch" whose value is the patched object.
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert status["message"].endswith('": strict decoding error: unknown field "spec.bogus"')
    [cause] = status["details"]["causes"]
    assert set(status["details"]) == {"causes"}
    assert cause["field"] == "patch"
    assert cause["reason"] == "FieldValueInvalid"
    assert '\\"bogus\\":1' in cause["message"] or '"bogus":1' in cause["message"]
    assert cause["message"].endswith('strict decoding error: unknown field "spec.bogus"')
    assert (await api.get(f"{TOPPINGS}/ham")).body == current


async def test_field_validation_warn_is_default(api) -> None:
    for params in ({"fieldValidation": "Warn"}, None):
        name = "warn" if params else "default"
        body = api.topping(name)
        body["spec"]["bogus"] = 1
        r = await api.post(TOPPINGS, body, params=params)
        assert r.status == 201, r
        assert r.headers.getall("Warning") == ['299 - "unknown field \\"spec.bogus\\""']
        assert r.body["spec"] == {"cost": 1}
        assert (await api.get(f"{TOPPINGS}/{name}")).body["spec"] == {"cost": 1}


async def test_field_validation_ignore_prunes_silently(api) -> None:
    body = api.topping("ignore")
    body["spec"]["bogus"] = 1
    body["extra"] = {"x": 1}
    r = await api.post(TOPPINGS, body, params={"fieldValidation": "Ignore"})
    assert r.status == 201, r
    assert "Warning" not in r.headers
    assert r.body["spec"] == {"cost": 1}
    assert "extra" not in r.body
    got = (await api.get(f"{TOPPINGS}/ignore")).body
    assert got["spec"] == {"cost": 1} and "extra" not in got


async def test_field_validation_bad_value_is_rejected(api) -> None:
    r = await api.post(TOPPINGS, api.topping("x"), params={"fieldValidation": "Sloppy"})
    assert r.status in (400, 422), r
    assert r.status != 201
    await _nothing_written(api)


async def test_duplicate_fields(api) -> None:
    text = (
        f'{{"apiVersion":"{GROUP}/v1beta1","kind":"Topping","metadata":{{"name":"dup"}},'
        '"spec":{"cost":1,"cost":2}}'
    )
    r = await api.request(
        "POST",
        TOPPINGS,
        data=text,
        headers={"Content-Type": "application/json"},
        params={"fieldValidation": "Strict"},
    )
    status = _assert_status(r, 400, "BadRequest")
    assert status["message"] == (
        'Topping in version "v1beta1" cannot be handled as a Topping: '
        'strict decoding error: duplicate field "spec.cost"'
    )
    await _nothing_written(api)
    r = await api.request("POST", TOPPINGS, data=text, headers={"Content-Type": "application/json"})
    assert r.status == 201, r
    assert r.headers.getall("Warning") == ['299 - "duplicate field \\"spec.cost\\""']
    assert r.body["spec"] == {"cost": 2}


async def test_duplicate_yaml_fields_strict(api) -> None:
    text = (
        f"apiVersion: {GROUP}/v1beta1\nkind: Topping\nmetadata:\n  name: dup\n  name: dup2\n"
        + "spec: {cost: 1}\n"
    )
    r = await api.request(
        "POST",
        TOPPINGS,
        data=text,
        headers={"Content-Type": "application/yaml"},
        params={"fieldValidation": "Strict"},
    )
    status = _assert_status(r, 400, "BadRequest")
    assert 'duplicate field "metadata.name"' in status["message"]
    await _nothing_written(api)


@pytest.mark.parametrize(
    "params",
    [
        {"labelSelector": "a in (b"},
        {"labelSelector": "!!"},
        {"labelSelector": "a=b=c"},
        {"fieldSelector": "nonsense"},
    ],
)
async def test_bad_selectors_are_400(api, params: dict) -> None:
    r = await api.get(TOPPINGS, params=params)
    _assert_status(r, 400, "BadRequest")
    async with api.session.get(TOPPINGS, params={**params, "watch": "1"}) as resp:
        assert resp.status == 400
        assert (await resp.json())["reason"] == "BadRequest"


async def test_unsupported_field_selector_is_400(api) -> None:
    r = await api.get(TOPPINGS, params={"fieldSelector": "spec.cost=1"})
    status = _assert_status(r, 400, "BadRequest")
    assert status["message"] == "field label not supported: spec.cost"
    r = await api.get(TOPPINGS, params={"fieldSelector": "metadata.namespace=default"})
    _assert_status(r, 400, "BadRequest")
    r = await api.get(PIZZAS, params={"fieldSelector": "metadata.namespace=default"})
    assert r.status == 200


@pytest.mark.parametrize("rv", ["abc", "-1", "1.5", "0x10"])
async def test_bad_resource_version_is_400(api, rv: str) -> None:
    for path in (TOPPINGS, f"{TOPPINGS}/ham"):
        r = await api.get(path, params={"resourceVersion": rv})
        assert r.status == 400, (path, r)
    async with api.session.get(TOPPINGS, params={"watch": "true", "resourceVersion": rv}) as resp:
        assert resp.status == 400


@pytest.mark.parametrize("params", [{"limit": "x"}, {"continue": "not-a-token"}, {"timeoutSeconds": "soon"}])
async def test_bad_list_parameters_are_400(api, params: dict) -> None:
    r = await api.get(TOPPINGS, params=params)
    _assert_status(r, 400, "BadRequest")


async def test_namespace_mismatch_is_400(api) -> None:
    await api.create_toppings("ham")
    body = api.pizza("ns", [{"name": "ham"}], namespace="other")
    r = await api.post(PIZZAS, body)
    status = _assert_status(r, 400, "BadRequest")
    assert status["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    created = await api.create_pizza("ns", [{"name": "ham"}])
    r = await api.put(f"{PIZZAS}/ns", {**created, "metadata": {**created["metadata"], "namespace": "other"}})
    _assert_status(r, 400, "BadRequest")
    r = await api.get(f"/apis/{GROUP}/v1beta1/namespaces/other/pizzas")
    assert r.body["items"] == []


async def test_post_to_cluster_scoped_path_with_namespace_is_404(api) -> None:
    r = await api.post(f"/apis/{GROUP}/v1beta1/namespaces/default/toppings", api.topping("nsd"))
    _assert_status(r, 404, "NotFound")
    r = await api.get(f"/apis/{GROUP}/v1beta1/namespaces/default/toppings/nsd")
    _assert_status(r, 404, "NotFound")
    await _nothing_written(api)


async def test_unsupported_content_type_is_415(api) -> None:
    r = await api.request(
        "POST", TOPPINGS, data=json.dumps(api.topping("x")), headers={"Content-Type": "text/plain"}
    )
    _assert_status(r, 415, "UnsupportedMediaType")
    r = await api.request(
        "POST",
        TOPPINGS,
        data=json.dumps(api.topping("x")),
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    # Protobuf is a body type the kinds accept: JSON sent as protobuf is kube's 400 decoding error.
    body = _assert_status(r, 400, "BadRequest")
    assert "provided data does not appear to be a protobuf message" in body["message"]
    await _nothing_written(api)


async def test_unacceptable_accept_is_406(api) -> None:
    r = await api.get(TOPPINGS, headers={"Accept": "text/html"})
    body = _assert_status(r, 406, "NotAcceptable")
    assert body["message"].startswith(
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf"
    )
    r = await api.post(TOPPINGS, api.topping("x"), headers={"Accept": "text/html"})
    assert r.status == 406, r
    await _nothing_written(api)


async def test_json_patch_errors(api) -> None:
    await api.create_toppings("ham")
    current = (await api.get(f"{TOPPINGS}/ham")).body
    path = f"{TOPPINGS}/ham"
    cases = [
        ({"op": "replace"}, 400),  # not a list
        ([{"op": "explode", "path": "/spec"}], 400),
        ([{"op": "remove", "path": "/spec/nothing"}], 422),
        ([{"op": "replace", "path": "/spec/cost", "value": "expensive"}], 422),
        ([{"op": "remove", "path": ""}], 422),
        ([{"op": "replace", "path": "/kind", "value": "Pizza"}], 422),
        ([{"op": "replace", "path": "/metadata/name", "value": "other"}], 400),
    ]
    for ops, code in cases:
        r = await api.patch(path, ops, "application/json-patch+json")
        assert r.status == code, (ops, r)
        assert r.body["kind"] == "Status"
    assert (await api.get(path)).body == current
    assert (await api.get(f"{TOPPINGS}/other")).status == 404


async def test_merge_patch_must_be_an_object(api) -> None:
    await api.create_toppings("ham")
    for body in ("[]", '"x"', "3"):
        r = await api.patch(f"{TOPPINGS}/ham", body, "application/merge-patch+json")
        assert r.status in (400, 422), (body, r)
    r = await api.patch(f"{TOPPINGS}/ham", {"spec": None}, "application/merge-patch+json")
    assert r.status == 422, r
    assert (await api.get(f"{TOPPINGS}/ham")).body["spec"] == {"cost": 1}


async def test_unknown_verbs_and_methods(api) -> None:
    r = await api.request("POST", f"{TOPPINGS}/ham", json=api.topping("ham"))
    assert r.status in (404, 405), r
    r = await api.request("PUT", TOPPINGS, json=api.topping("ham"))
    assert r.status in (404, 405), r
    await _nothing_written(api)
