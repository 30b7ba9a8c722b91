"""The wardle.example.com group of k8s.io/sample-apiserver, served next to restaurant over real HTTPS.

What sample-apiserver does is the expected behaviour: Flunder in v1beta1 (preferred) and v1alpha1
(deprecated, the storage version), Fischer in v1alpha1 only with a top-level `disallowedFlunders` and
no spec, the BanFlunder admission plugin, kube's deprecation warning on every v1alpha1 response.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.fixtures.server import running_server
from tests.integration.conftest import Api

GROUP = "wardle.example.com"
DEPRECATED = (
    '299 - "wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+"',
    '299 - "wardle.example.com/v1alpha1 Fischer is deprecated in v1.3+, unavailable in v1.10+"',
)
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
def wardle(storage_api: Api) -> Api:
    """An admin client of a server on each storage backend (wardle is served next to restaurant)."""
    return storage_api


def flunders(version: str = "v1beta1", name: str = "", namespace: str = "default") -> str:
    base = f"/apis/{GROUP}/{version}/namespaces/{namespace}/flunders"
    return f"{base}/{name}" if name else base


def fischers(name: str = "") -> str:
    base = f"/apis/{GROUP}/v1alpha1/fischers"
    return f"{base}/{name}" if name else base


def flunder(name: str, version: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Flunder", "metadata": {"name": name}, "spec": spec}


def fischer(name: str, *disallowed: str) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Fischer", "metadata": {"name": name}}
    if disallowed:
        body["disallowedFlunders"] = list(disallowed)
    return body


async def test_flunder_in_both_versions_stored_in_v1alpha1(wardle: Api) -> None:
    r = await wardle.post(flunders(), flunder("f1", flunderReference="f0", referenceType="Flunder"))
    assert r.status == 201, r
    assert r.body["spec"] == {"flunderReference": "f0", "referenceType": "Flunder"}
    assert r.body["status"] == {}
    # sample-apiserver's strategies set no generation.
    assert "generation" not in r.body["metadata"]
    alpha = (await wardle.get(flunders("v1alpha1", "f1"))).body
    assert alpha["apiVersion"] == f"{GROUP}/v1alpha1"
    assert alpha["spec"] == {"reference": "f0", "referenceType": "Flunder"}
    kv = await wardle.extra["storage"].get(f"/{GROUP}/flunders/default/f1")
    stored = orjson.loads(kv.value)
    assert stored["apiVersion"] == f"{GROUP}/v1alpha1"
    assert stored["spec"] == {"reference": "f0", "referenceType": "Flunder"}


async def test_v1alpha1_defaults_and_drops_unknown_reference_types(wardle: Api) -> None:
    r = await wardle.post(flunders("v1alpha1"), flunder("f2", "v1alpha1", reference="fi"))
    assert r.status == 201, r
    assert r.body["spec"] == {"reference": "fi", "referenceType": "Flunder"}
    beta = (await wardle.get(flunders("v1beta1", "f2"))).body
    assert beta["spec"] == {"flunderReference": "fi", "referenceType": "Flunder"}
    # sample-apiserver's conversion keeps only the two known types.
    other = flunder("f3", "v1alpha1", reference="x", referenceType="Other")
    r = await wardle.post(flunders("v1alpha1"), other)
    assert r.status == 201, r
    assert r.body["spec"] == {}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"flunderReference": "a", "fischerReference": "b", "referenceType": "Flunder"},
            'spec.fischerReference: Invalid value: "b": cannot be set with flunderReference at the same time',
        ),
        (
            {"fischerReference": "b", "referenceType": "Flunder"},
            'spec.fischerReference: Invalid value: "b": cannot be set if referenceType is not Fischer',
        ),
        (
            {"referenceType": "Fischer"},
            'spec.fischerReference: Invalid value: "": cannot be empty if referenceType is Fischer',
        ),
        (
            {"referenceType": "Other"},
            'spec.referenceType: Invalid value: "Other": must be Flunder or Fischer',
        ),
    ],
)
async def test_flunder_validation(wardle: Api, spec: dict[str, str], message: str) -> None:
    r = await wardle.post(flunders(), flunder("bad", **spec))
    assert r.status == 422, r
    assert message in r.body["message"]


async def test_fischer_without_spec_labels_and_patches(wardle: Api) -> None:
    """A kind without spec through every write path (labelling one used to be a 500)."""
    r = await wardle.post(fischers(), fischer("fi", "evil"))
    assert r.status == 201, r
    assert r.body["disallowedFlunders"] == ["evil"]
    for content_type, patch in (
        (MERGE, {"metadata": {"labels": {"a": "b"}}}),
        ("application/strategic-merge-patch+json", {"metadata": {"labels": {"c": "d"}}}),
        ("application/json-patch+json", [{"op": "add", "path": "/disallowedFlunders/-", "value": "bad"}]),
    ):
        r = await wardle.patch(fischers("fi"), patch, content_type)
        assert r.status == 200, r
    assert r.body["metadata"]["labels"] == {"a": "b", "c": "d"}
    assert r.body["disallowedFlunders"] == ["evil", "bad"]
    put = r.body | {"disallowedFlunders": []}
    r = await wardle.put(fischers("fi"), put)
    assert r.status == 200, r
    assert "disallowedFlunders" not in r.body
    listed = await wardle.get(fischers(), params={"labelSelector": "a=b"})
    assert [item["metadata"]["name"] for item in listed.body["items"]] == ["fi"]
    assert (await wardle.delete(fischers("fi"))).status == 200


async def test_server_side_apply_on_a_kind_without_spec(wardle: Api) -> None:
    """Apply owns top-level fields of a kind without spec as it owns spec's: create, conflict on the
    atomic list, force, and giving fields up."""

    async def apply(manager: str, body: dict[str, Any], **params: str) -> Any:
        query = {"fieldManager": manager, **params}
        return await wardle.patch(fischers("ssa"), orjson.dumps(body), APPLY, params=query)

    r = await apply("alice", fischer("ssa", "evil") | {"metadata": {"name": "ssa", "labels": {"a": "1"}}})
    assert r.status == 201, r
    [alice] = r.body["metadata"]["managedFields"]
    assert (alice["manager"], alice["operation"], alice["apiVersion"]) == (
        "alice",
        "Apply",
        f"{GROUP}/v1alpha1",
    )
    assert alice["fieldsV1"] == {"f:disallowedFlunders": {}, "f:metadata": {"f:labels": {"f:a": {}}}}
    r = await apply("bob", fischer("ssa", "evil", "worse"))
    assert r.status == 409, r
    assert r.body["message"] == 'Apply failed with 1 conflict: conflict with "alice": .disallowedFlunders'
    assert r.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".disallowedFlunders"}
    ]
    r = await apply("bob", fischer("ssa", "evil", "worse"), force="true")
    assert r.status == 200, r
    assert r.body["disallowedFlunders"] == ["evil", "worse"]
    owners = {e["manager"]: e["fieldsV1"] for e in r.body["metadata"]["managedFields"]}
    assert owners == {
        "alice": {"f:metadata": {"f:labels": {"f:a": {}}}},
        "bob": {"f:disallowedFlunders": {}},
    }
    # alice gives up her label: it goes, bob's list stays.
    r = await apply("alice", fischer("ssa"))
    assert r.status == 200, r
    assert "labels" not in r.body["metadata"] and r.body["disallowedFlunders"] == ["evil", "worse"]


async def test_watch_a_kind_without_spec_and_flunders_in_both_versions(wardle: Api) -> None:
    rv = (await wardle.get(fischers())).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with wardle.session.get(fischers(), params=params) as stream:
        assert (await wardle.post(fischers(), fischer("w", "x"))).status == 201
        patch = {"disallowedFlunders": ["x", "y"]}
        assert (await wardle.patch(fischers("w"), patch, MERGE)).status == 200
        assert (await wardle.delete(fischers("w"))).status == 200
        events = await wardle.read_events(stream, 3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert [e["object"]["disallowedFlunders"] for e in events] == [["x"], ["x", "y"], ["x", "y"]]
    # One watch per version of the same objects: each event in its watcher's version.
    rv = (await wardle.get(flunders())).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with (
        wardle.session.get(flunders("v1alpha1"), params=params) as alpha,
        wardle.session.get(flunders("v1beta1"), params=params) as beta,
    ):
        assert (
            await wardle.post(flunders(), flunder("fw", fischerReference="w", referenceType="Fischer"))
        ).status == 201
        [a] = await wardle.read_events(alpha, 1)
        [b] = await wardle.read_events(beta, 1)
    assert a["object"]["spec"] == {"reference": "w", "referenceType": "Fischer"}
    assert b["object"]["spec"] == {"fischerReference": "w", "referenceType": "Fischer"}


async def test_ban_flunder(wardle: Api) -> None:
    assert (await wardle.post(fischers(), fischer("no-evil", "evil"))).status == 201
    r = await wardle.post(flunders(), flunder("evil"))
    assert r.status == 403, r
    assert r.body["reason"] == "Forbidden"
    assert r.body["message"] == (
        'flunders.wardle.example.com "evil" is forbidden: '
        "this name may not be used, please change the resource name"
    )
    assert (await wardle.post(flunders(), flunder("good"))).status == 201
    # Only creation is checked, as by sample-apiserver's plugin (admission.NewHandler(admission.Create)).
    assert (await wardle.post(fischers(), fischer("no-good", "good"))).status == 201
    good = (await wardle.get(flunders(name="good"))).body
    assert (await wardle.put(flunders(name="good"), good)).status == 200
    # Lifting the ban takes effect at once: the plugin reads Fischers consistently.
    assert (await wardle.delete(fischers("no-evil"))).status == 200
    assert (await wardle.post(flunders(), flunder("evil"))).status == 201


async def test_deprecated_version_warns_on_every_response(wardle: Api) -> None:
    r = await wardle.post(flunders("v1alpha1"), flunder("w", "v1alpha1"))
    assert r.status == 201, r
    assert r.headers.getall("Warning") == [DEPRECATED[0]]
    for path in (flunders("v1alpha1"), flunders("v1alpha1", "w"), flunders("v1alpha1", "missing")):
        r = await wardle.get(path)
        assert r.headers.getall("Warning") == [DEPRECATED[0]], path
    assert (await wardle.get(fischers())).headers.getall("Warning") == [DEPRECATED[1]]
    # The handler's own warnings follow the deprecation warning, as kube records them.
    body = flunder("w2", "v1alpha1") | {"bogus": 1}
    r = await wardle.post(flunders("v1alpha1"), body, params={"fieldValidation": "Warn"})
    assert r.headers.getall("Warning") == [DEPRECATED[0], '299 - "unknown field \\"bogus\\""']
    async with wardle.session.get(flunders("v1alpha1"), params={"watch": "1", "timeoutSeconds": "1"}) as w:
        assert w.headers.getall("Warning") == [DEPRECATED[0]]
        await asyncio.wait_for(w.read(), 10)
    # The preferred version and the restaurant group carry none.
    preferred = (flunders("v1beta1"), flunders("v1beta1", "w"), wardle.pizzas_path())
    for path in (*preferred, f"/apis/{GROUP}/v1alpha1"):
        assert "Warning" not in (await wardle.get(path)).headers, path


async def test_body_in_another_version_is_refused(wardle: Api) -> None:
    r = await wardle.post(flunders("v1beta1"), flunder("x", "v1alpha1"))
    assert r.status == 400, r
    assert r.body["message"] == (
        f"the API version in the data ({GROUP}/v1alpha1) does not match "
        f"the expected API version ({GROUP}/v1beta1)"
    )


# The texts below are sample-apiserver 1.36.2's answers to the same requests: wardle's kinds are Go
# types of a scheme, decoded by k8s.io/apiserver's typed handlers, not custom resources.
FISCHER_SPEC_IS_UNKNOWN = (
    'Fischer in version "v1alpha1" cannot be handled as a Fischer: '
    'strict decoding error: unknown field "spec"'
)


async def test_strict_decoding_errors_name_the_kind_as_k8s_apiserver_does(wardle: Api) -> None:
    strict = {"fieldValidation": "Strict"}
    r = await wardle.post(fischers(), fischer("st") | {"spec": {}}, params=strict)
    assert r.status == 400, r
    assert r.body["message"] == FISCHER_SPEC_IS_UNKNOWN
    r = await wardle.post(flunders(), flunder("st", x="1"), params=strict)
    assert r.status == 400, r
    assert r.body["message"] == (
        'Flunder in version "v1beta1" cannot be handled as a Flunder: '
        'strict decoding error: unknown field "spec.x"'
    )
    assert (await wardle.post(fischers(), fischer("st"))).status == 201
    current = (await wardle.get(fischers("st"))).body
    r = await wardle.put(fischers("st"), current | {"spec": {}}, params=strict)
    assert r.status == 400, r
    assert r.body["message"] == FISCHER_SPEC_IS_UNKNOWN
    # Inside a patch the decoder's message is the cause, bare, as for a custom resource.
    r = await wardle.patch(fischers("st"), {"spec": {}}, MERGE, params=strict)
    assert r.status == 422, r
    assert r.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert r.body["message"].endswith('}": strict decoding error: unknown field "spec"')


async def test_a_body_of_the_other_kind_does_not_convert(wardle: Api) -> None:
    """A 400 from the decoder (no conversion from one kind into the other), before any check of the
    version: a Fischer posted to v1beta1 flunders says so too, not that its version is wrong."""
    for version in ("v1alpha1", "v1beta1"):
        r = await wardle.post(flunders(version), fischer("other"))
        assert r.status == 400, r
        assert r.body["message"] == (
            'Fischer in version "v1alpha1" cannot be handled as a Flunder: '
            "converting (v1alpha1.Fischer) to (wardle.Flunder): unknown conversion"
        )
    r = await wardle.post(fischers(), flunder("other", "v1alpha1"))
    assert r.status == 400, r
    assert r.body["message"] == (
        'Flunder in version "v1alpha1" cannot be handled as a Fischer: '
        "converting (v1alpha1.Flunder) to (wardle.Fischer): unknown conversion"
    )
    # Changing the kind by a patch: kube's 422 on `patch`, with the same conversion error.
    assert (await wardle.post(fischers(), fischer("kept"))).status == 201
    r = await wardle.patch(fischers("kept"), {"kind": "Flunder"}, MERGE)
    assert r.status == 422, r
    assert r.body["message"].endswith(
        '}": converting (v1alpha1.Flunder) to (wardle.Fischer): unknown conversion'
    )


async def test_field_selectors_beyond_metadata_are_refused_by_the_scheme(wardle: Api) -> None:
    unknown = '"spec.reference" is not a known field selector: only "metadata.name", "metadata.namespace"'
    params = {"fieldSelector": "spec.reference=x"}
    r = await wardle.get(flunders("v1alpha1"), params=params)
    assert (r.status, r.body["message"]) == (400, unknown), r
    r = await wardle.get(flunders(), params={**params, "watch": "1"})
    assert (r.status, r.body["message"]) == (400, unknown), r
    r = await wardle.delete(flunders(), params=params)
    assert (r.status, r.body["message"]) == (400, unknown), r
    # The scheme's default conversion knows metadata.namespace whatever the kind's scope.
    assert (await wardle.post(fischers(), fischer("scoped"))).status == 201
    r = await wardle.get(fischers(), params={"fieldSelector": "metadata.namespace="})
    assert r.status == 200, r
    assert [item["metadata"]["name"] for item in r.body["items"]] == ["scoped"]
    r = await wardle.get(fischers(), params={"fieldSelector": "metadata.namespace=default"})
    assert (r.status, r.body["items"]) == (200, [])


async def test_fischer_is_not_served_in_v1beta1(wardle: Api) -> None:
    assert (await wardle.get(f"/apis/{GROUP}/v1beta1/fischers")).status == 404
    resources = (await wardle.get(f"/apis/{GROUP}/v1beta1")).body["resources"]
    assert [r["name"] for r in resources] == ["flunders"]
    resources = (await wardle.get(f"/apis/{GROUP}/v1alpha1")).body["resources"]
    assert sorted(r["name"] for r in resources) == ["fischers", "flunders"]
    assert (await wardle.get(f"/apis/{GROUP}")).body["preferredVersion"]["version"] == "v1beta1"


async def test_names_are_checked_as_path_segments(wardle: Api) -> None:
    """sample-apiserver checks names only with ValidatePathSegmentName: not DNS subdomains."""
    r = await wardle.post(fischers(), fischer("Not_A.DNS-Name"))
    assert r.status == 201, r
    r = await wardle.post(fischers(), fischer("a%b"))
    assert r.status == 422, r
    assert "metadata.name: Invalid value: \"a%b\": may not contain '%'" in r.body["message"]


async def test_a_server_built_with_only_the_groups_it_needs(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data", "--api-groups", GROUP) as server,
        server.session() as session,
    ):
        api = Api(server, session)
        assert [g["name"] for g in (await api.get("/apis")).body["groups"]] == [GROUP]
        assert (await api.get(api.pizzas_path())).status == 404
        assert (await api.post(fischers(), fischer("only"))).status == 201
