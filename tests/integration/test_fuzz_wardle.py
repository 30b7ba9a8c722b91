"""Property, for the wardle group: no input gets a 500, and a write that fails leaves storage as it was.

The same property as test_fuzz_no_500.py (whose machinery this reuses), on the kinds that differ most
from restaurant's: Fischer (cluster-scoped, no spec, one version) and Flunder (a hand-written v1alpha1
conversion, stored in v1alpha1, served preferred in v1beta1). Bounded and derandomized like it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.integration.test_fuzz_no_500 import (
    DELETE,
    ThreadedServer,
    assert_no_500,
    content_types,
    create_checked,
    fuzz,
    json_patches,
    keys,
    mutate,
    queries,
    query_string,
    values,
)

GROUP = "wardle.example.com"
FLUNDER_VERSIONS = ("v1alpha1", "v1beta1")
FISCHER, FLUNDER = "fz-fischer", "fz-flunder"
APPLY = "application/apply-patch+yaml"


def fischers(name: str = "") -> str:
    return f"/apis/{GROUP}/v1alpha1/fischers" + (f"/{name}" if name else "")


def flunders(version: str = "v1beta1", name: str = "") -> str:
    return f"/apis/{GROUP}/{version}/namespaces/default/flunders" + (f"/{name}" if name else "")


def fischer(name: str) -> dict[str, Any]:
    meta = {"name": name, "labels": {"fuzz": "yes"}}
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Fischer",
        "metadata": meta,
        "disallowedFlunders": ["x"],
    }


def flunder(name: str, version: str = "v1beta1") -> dict[str, Any]:
    spec = (
        {"reference": FISCHER, "referenceType": "Fischer"}
        if version == "v1alpha1"
        else {"fischerReference": FISCHER, "referenceType": "Fischer"}
    )
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Flunder", "metadata": {"name": name}, "spec": spec}


# fmt: off
DOTTED_PATHS = [
    "apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace", "metadata.labels",
    "metadata.resourceVersion", "metadata.finalizers", "metadata.managedFields", "metadata.generation",
    "disallowedFlunders", "disallowedFlunders.0", "spec", "spec.reference", "spec.referenceType",
    "spec.flunderReference", "spec.fischerReference", "status",
]
# fmt: on
PATHS = [tuple(int(step) if step.isdigit() else step for step in p.split(".")) for p in DOTTED_PATHS]
paths = st.sampled_from(PATHS) | st.tuples(st.sampled_from(["", "metadata", "spec"]), keys).map(
    lambda t: tuple(p for p in t if p) or ("",)
)
mutations = st.lists(st.tuples(paths, st.just(DELETE) | values), min_size=1, max_size=3)
reference_values = st.sampled_from(
    ["Flunder", "Fischer", "", "fz-fischer", "https://example.com/x", "x" * 300]
)
mutations = mutations | st.lists(
    st.tuples(st.sampled_from(PATHS[-6:-1]), reference_values), min_size=1, max_size=3
)
writable = st.sampled_from([("Fischer", "v1alpha1"), ("Flunder", "v1alpha1"), ("Flunder", "v1beta1")])


def target(kind: str, version: str, name: str = "") -> str:
    return fischers(name) if kind == "Fischer" else flunders(version, name)


def snapshot(server: ThreadedServer) -> tuple[Any, ...]:
    """Both collections as stored; a list's resourceVersion is the global revision: any write moves it."""
    return tuple(server.get(path).body for path in (fischers(), f"/apis/{GROUP}/v1beta1/flunders"))


def check_write(server: ThreadedServer, r: Any, before: Any, context: Any) -> None:
    assert_no_500(r, context)
    if r.status >= 300 or "dryRun=All" in str(context):
        assert snapshot(server) == before, (context, r)
        return
    obj = r.body
    assert obj.get("kind") in ("Fischer", "Flunder"), (context, r)
    versions = ("v1alpha1",) if obj["kind"] == "Fischer" else FLUNDER_VERSIONS
    for version in versions:
        path = target(obj["kind"], version, obj["metadata"]["name"])
        got = server.get(path)
        assert got.status == 200, (context, path, got)
        # What was stored reads back in every version and is accepted again as it reads.
        again = server.send("PUT", path, got.body, query="dryRun=All")
        assert again.status == 200, (context, path, again)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    threaded = ThreadedServer(tmp_path_factory.mktemp("fuzz-wardle") / "data")
    threaded.start()
    try:
        yield threaded
    finally:
        threaded.stop()


@pytest.fixture(autouse=True)
def baseline(server: ThreadedServer) -> None:
    """Each test starts with the fixture objects in place, whatever an earlier one managed to do."""
    if server.get(fischers(FISCHER)).status == 404:
        assert server.send("POST", fischers(), fischer(FISCHER)).status == 201
    if server.get(flunders("v1beta1", FLUNDER)).status == 404:
        assert server.send("POST", flunders(), flunder(FLUNDER)).status == 201


# What a create and an update of either kind are fuzzed with.
full_writes = given(
    kind_version=writable,
    changes=mutations,
    content_type=content_types,
    params=queries(st.sampled_from(["dryRun", "fieldValidation", "fieldManager"])),
)


@fuzz(60)
@full_writes
def test_create(
    server: ThreadedServer, kind_version: tuple[str, str], changes: Any, content_type: str, params: Any
) -> None:
    kind, version = kind_version
    base = fischer("fz-new") if kind == "Fischer" else flunder("fz-new", version)
    body = mutate(base, changes)
    create_checked(
        server, target(kind, version), body, content_type, params, snapshot=snapshot, check=check_write
    )


@fuzz(60)
@full_writes
def test_update(
    server: ThreadedServer, kind_version: tuple[str, str], changes: Any, content_type: str, params: Any
) -> None:
    kind, version = kind_version
    path = target(kind, version, FISCHER if kind == "Fischer" else FLUNDER)
    body = mutate(server.get(path).body, changes)
    before = snapshot(server)
    query = query_string(params)
    check_write(
        server, server.send("PUT", path, body, content_type, query=query), before, (path, query, body)
    )


@fuzz(80)
@given(
    kind_version=writable,
    patch_type=st.sampled_from(
        [
            "application/merge-patch+json",
            "application/json-patch+json",
            APPLY,
            "application/strategic-merge-patch+json",
        ]
    ),
    changes=mutations,
    operations=json_patches,
    params=queries(st.sampled_from(["dryRun", "fieldValidation", "fieldManager", "force"])),
)
def test_patch(
    server: ThreadedServer,
    kind_version: tuple[str, str],
    patch_type: str,
    changes: Any,
    operations: Any,
    params: Any,
) -> None:
    kind, version = kind_version
    name = FISCHER if kind == "Fischer" else FLUNDER
    path = target(kind, version, name)
    if patch_type == "application/json-patch+json":
        document = operations
    elif patch_type == APPLY:
        base = fischer(name) if kind == "Fischer" else flunder(name, version)
        document = mutate(base, changes)
        params = [*params, ("fieldManager", "fuzz")]
    else:
        document = mutate({}, changes)
    before = snapshot(server)
    query = query_string(params)
    r = server.send("PATCH", path, document, patch_type, query=query)
    check_write(server, r, before, (path, patch_type, query, document))
