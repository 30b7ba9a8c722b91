"""Property: no input gets a 500, and a write that fails leaves storage exactly as it was.

One real server (HTTPS, admin client cert) runs for the whole module on an event loop of its own
thread, so hypothesis drives it from plain sync tests without fighting pytest-asyncio's loop. Every
budget is fixed and derandomized: the same inputs every run, bounded in time. Hand-written cases live
in test_bad_input.py; the explicit regressions at the end are the 500s this fuzzing found.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import itertools
import json
import math
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from yarl import URL

from apis.restaurant.v1alpha1 import generated_pb2 as restaurant_v1alpha1
from apis.restaurant.v1beta1 import generated_pb2 as restaurant_v1beta1
from apis.runtime import protobuf as wire
from apis.runtime.proto_json import to_message
from apis.runtime.protobuf import ProtobufError
from tests.fixtures import objects
from tests.fixtures.server import RunningServer, running_server

GROUP = "restaurant.programming-kubernetes.info"
VERSIONS = ("v1alpha1", "v1beta1")
BASE_TOPPINGS = ("salami", "mozzarella", "tomato", "ham")
TOPPING, PIZZA = "fz-topping", "fz-pizza"
REQUEST_TIMEOUT = 10.0


# CI runs the fixed budget below; FUZZ_SCALE=10 FUZZ_RANDOM=1 explores further (and differently) by hand.
SCALE = float(os.environ.get("FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        derandomize=not os.environ.get("FUZZ_RANDOM"),
        database=None,
        # No "explain" phase: it re-runs a failing case hundreds of times against a live server.
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


_names = itertools.count()


@dataclass
class Reply:
    status: int
    headers: Any
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw)

    def __repr__(self) -> str:
        return f"Reply({self.status}, {self.raw[:500]!r})"


class ThreadedServer:
    """The server and one client session on a private event loop; sync callers submit coroutines."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self.session: aiohttp.ClientSession | None = None
        self.error: BaseException | None = None

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with running_server(self.data_dir) as server, server.session() as session:
                self.server: RunningServer = server
                self.session = session
                self.ready.set()
                await self._stop.wait()
        except BaseException as e:  # surfaced to the fixture instead of hanging it
            self.error = e
            self.ready.set()

    def start(self) -> None:
        self.thread.start()
        assert self.ready.wait(60), "server did not start"
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)
        if not self.thread.is_alive():
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = REQUEST_TIMEOUT * 2) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _request(self, method: str, url: str | URL, data: Any, headers: dict[str, str]) -> Reply:
        assert self.session is not None
        async with asyncio.timeout(REQUEST_TIMEOUT):
            async with self.session.request(method, url, data=data, headers=headers) as r:
                return Reply(r.status, r.headers, await r.read())

    def request(
        self,
        method: str,
        path: str | URL,
        *,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        query: str = "",
    ) -> Reply:
        url = URL(f"{path}?{query}", encoded=True) if query else path
        return self.run(self._request(method, url, data, headers or {}))

    def get(self, path: str, query: str = "") -> Reply:
        return self.request("GET", path, query=query)

    def send(
        self, method: str, path: str, body: Any, content_type: str = "application/json", **kw: Any
    ) -> Reply:
        return self.request(
            method, path, data=encode(body, content_type), headers={"Content-Type": content_type}, **kw
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    threaded = ThreadedServer(tmp_path_factory.mktemp("fuzz") / "data")
    threaded.start()
    try:
        for name in (*BASE_TOPPINGS, TOPPING):
            assert threaded.send("POST", toppings(), topping(name)).status == 201
        assert threaded.send("POST", pizzas(), pizza(PIZZA)).status == 201
        yield threaded
    finally:
        threaded.stop()


@pytest.fixture(autouse=True)
def baseline(server: ThreadedServer) -> None:
    """Each test starts with the fixture objects in place, whatever an earlier one managed to do."""
    for name in (*BASE_TOPPINGS, TOPPING):
        if server.get(toppings("v1beta1", name)).status == 404:
            assert server.send("POST", toppings(), topping(name)).status == 201
    if server.get(pizzas("v1beta1", PIZZA)).status == 404:
        assert server.send("POST", pizzas(), pizza(PIZZA)).status == 201


# --- objects and paths -----------------------------------------------------------------------------


def toppings(version: str = "v1beta1", name: str = "") -> str:
    return f"/apis/{GROUP}/{version}/toppings" + (f"/{name}" if name else "")


def pizzas(version: str = "v1beta1", name: str = "", namespace: str = "default") -> str:
    return f"/apis/{GROUP}/{version}/namespaces/{namespace}/pizzas" + (f"/{name}" if name else "")


def topping(name: str, version: str = "v1beta1") -> dict[str, Any]:
    # Cost 1.5 and the label are what the tests below rewrite in the serialized body.
    return objects.topping(name, 1.5, version, labels={"fuzz": "yes"})


def pizza(name: str, version: str = "v1beta1") -> dict[str, Any]:
    toppings_ = (
        ["salami", "ham", "ham"]
        if version == "v1alpha1"
        else [{"name": "salami"}, {"name": "ham", "quantity": 2}]
    )
    meta = {"name": name, "annotations": {"a": "b"}}
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Pizza",
        "metadata": meta,
        "spec": {"toppings": toppings_},
    }


def jsonable(value: Any) -> Any:
    """JSON has no NaN/Infinity: they travel as the strings a careless client would send."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def encode(value: Any, content_type: str) -> bytes:
    if content_type.startswith("application/yaml"):
        try:
            return yaml.safe_dump(value, allow_unicode=True).encode("utf-8", "surrogatepass")
        except (yaml.YAMLError, UnicodeError):
            pass  # YAML is a superset of JSON: send that instead
    return json.dumps(jsonable(value)).encode()


# --- strategies --------------------------------------------------------------------------------------

# fmt: off
DIRECTIVES = ["$patch", "$retainKeys", "$setElementOrder/toppings", "$setElementOrder/finalizers",
              "$deleteFromPrimitiveList/toppings", "$deleteFromPrimitiveList/finalizers"]
FIELDS_V1_KEYS = ["f:spec", "f:cost", "f:metadata", "f:labels", 'k:{"name":"ham"}', "k:{bad", "v:1", 'v:"x"',
                  "i:0", ".", "x"]
keys = st.text(max_size=6) | st.sampled_from(
    ["", "name", "cost", "toppings", "quantity", "metadata", "spec", "status", "kind", "apiVersion",
     *DIRECTIVES, *FIELDS_V1_KEYS]
)
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    | st.sampled_from([0, -1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30, 10**400])
    | st.sampled_from(["", "ham", "salami", "replace", "delete", "merge", "a/b", "2024-01-01T00:00:00Z", "0",
                       "1e400", "\ud800", "x" * 300])
)
json_values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(keys, c, max_size=4), max_leaves=10
)
# Values that look nearly right, so decoding gets past the first check and reaches deeper code.
plausible = st.sampled_from([
    {"a": "b"}, {"": ""}, {"x/y": "z", "a" * 70: "b"}, ["example.com/f"], ["orphan", "foregroundDeletion"],
    [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u", "controller": True}],
    [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u", "controller": "yes"}],
    [{"manager": "m", "operation": "Update", "apiVersion": f"{GROUP}/v1beta1", "fieldsType": "FieldsV1"}],
    [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
      "fieldsV1": {"f:spec": {"f:cost": {}}}}],
    [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"k:{bad": {".": {}}}}],
    [{"manager": "", "operation": "Bogus", "time": "yesterday", "fieldsType": "FieldsV2"}],
    [{"name": "ham", "quantity": 0}, {"name": "ham"}], [{"name": "salami", "quantity": 2**40}],
    [{"quantity": 3}], ["ham", "ham", "salami"], ["nosuch"],
    "2024-01-01T00:00:00Z", "not-a-time", -5, 1e308, 2**53 + 1,
])
# fmt: on
values = st.one_of(json_values, plausible, json_values.map(lambda v: {"$patch": v}))
# fmt: off
DOTTED_PATHS = [
    "apiVersion", "kind", "metadata", "metadata.name", "metadata.generateName", "metadata.namespace",
    "metadata.labels", "metadata.labels.k", "metadata.annotations", "metadata.resourceVersion",
    "metadata.uid", "metadata.generation", "metadata.finalizers", "metadata.ownerReferences",
    "metadata.managedFields", "metadata.creationTimestamp", "metadata.deletionTimestamp",
    "metadata.deletionGracePeriodSeconds",
    "metadata.selfLink", "spec", "spec.cost", "spec.toppings", "spec.toppings.0", "spec.toppings.0.name",
    "spec.toppings.0.quantity", "status", "status.cost",
]
# fmt: on
PATHS = [tuple(int(step) if step.isdigit() else step for step in p.split(".")) for p in DOTTED_PATHS]
paths = st.sampled_from(PATHS) | st.tuples(st.sampled_from(["", "metadata", "spec", "status"]), keys).map(
    lambda t: tuple(p for p in t if p) or ("",)
)
DELETE = object()
mutations = st.lists(st.tuples(paths, st.just(DELETE) | values), min_size=1, max_size=3)


def mutate(obj: Any, changes: list[tuple[tuple[Any, ...], Any]]) -> Any:
    """Set (or delete) each path, making containers on the way where the object has none."""
    obj = json.loads(json.dumps(obj))
    for path, value in changes:
        node = obj
        for step, next_step in itertools.pairwise(path):
            container = [] if isinstance(next_step, int) else {}
            if isinstance(node, dict):
                if not isinstance(node.get(step), dict | list):
                    node[step] = container
                node = node[step]
            elif isinstance(node, list):
                if not node:
                    node.append(container)
                node = node[min(step, len(node) - 1)] if isinstance(step, int) else node[0]
            if not isinstance(node, dict | list):
                break
        last = path[-1]
        if isinstance(node, dict):
            if value is DELETE:
                node.pop(last, None)
            else:
                node[last] = copy.deepcopy(value)  # strategies share their sample values
        elif isinstance(node, list) and node and isinstance(last, int):
            if value is DELETE:
                node.pop(min(last, len(node) - 1))
            else:
                node[min(last, len(node) - 1)] = copy.deepcopy(value)
    return obj


# fmt: off
content_types = (  # half of them acceptable, so that most bodies get decoded
    st.sampled_from(["application/json", "application/yaml", "application/json; charset=utf-8"])
    | st.sampled_from(["text/plain", "application/xml", "application/vnd.kubernetes.protobuf", "", "*/*",
                       'application/json;x="', ";"])
)
printable = st.characters(min_codepoint=0x20, max_codepoint=0x7E)  # what an HTTP client lets through
accepts = st.none() | st.text(printable, max_size=20) | st.sampled_from([
    "application/json", "application/yaml", "*/*", "text/html", ",,;", "application/json;as",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v9;g=meta.k8s.io", "application/json;as=Table",
    "application/json;q=x", "application/json;q=0", "application/yaml;as=Table;v=v1;g=meta.k8s.io",
])
PARAM_VALUES = {
    "labelSelector": ["", "a=b", "fuzz=yes", "a in (b,c)", "!a", "a,b!=c", "a notin ()", "a=" + "x" * 70,
                      "a>1", "x/y=z"],
    "fieldSelector": ["", "metadata.name=fz-topping", "metadata.namespace=default", "metadata.name!=x",
                      "spec.cost=1", "a==b", "metadata.name=\\"],
    "limit": ["1", "0", "-1", "500", str(2**63), str(10**30), "1.5", " 1", "1_0", "1" * 5000],
    "continue": ["", "x", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0", "e30", "bnVsbA"],
    "resourceVersion": ["", "0", "1", "-1", "abc", str(2**63), str(2**64), "1_0", " 1", "1" * 5000],
    "resourceVersionMatch": ["", "Exact", "NotOlderThan", "exact", "Bogus"],
    "sendInitialEvents": ["true", "false", "", "maybe"],
    "allowWatchBookmarks": ["true", "false", "", "2"],
    "dryRun": ["All", "", "all", "None"],
    "fieldValidation": ["Strict", "Warn", "Ignore", "", "strict", "Bogus"],
    "fieldManager": ["", "m", "x" * 200, "\x01", "kubectl"],
    "includeObject": ["Object", "Metadata", "None", "", "bogus"],
    "pretty": ["true", "x"],
    "force": ["true"],
    "gracePeriodSeconds": ["0", "-1", "x", str(2**70), "1" * 5000],
    "propagationPolicy": ["Orphan", "Foreground", "Background", "x"],
    "orphanDependents": ["true", "x"],
}
# fmt: on
param_names = st.sampled_from(sorted(PARAM_VALUES)) | st.text(max_size=6)


# Tokens shaped like kube's (base64url of {"v","rv","start"}) with what a forger might put inside.
continue_tokens = st.fixed_dictionaries(
    {},
    optional={
        "v": st.just("meta.k8s.io/v1") | scalars,
        "rv": st.integers(-3, 10**4) | scalars,
        "start": st.sampled_from(
            ["fz-topping\x00", "default/fz-pizza", "../x", "a//b", "/", "\ud800", "x" * 300]
        )
        | scalars,
    },
).map(lambda token: base64.urlsafe_b64encode(json.dumps(jsonable(token)).encode()).rstrip(b"=").decode())


@st.composite
def queries(draw: st.DrawFn, names: st.SearchStrategy[str] = param_names) -> list[tuple[str, str]]:
    params = []
    for name in draw(st.lists(names, max_size=5)):
        value = draw(
            st.sampled_from(PARAM_VALUES.get(name, [""]))
            | st.text(max_size=8)
            | raw_escapes
            | (continue_tokens if name == "continue" else st.nothing())
        )
        params.append((name, value))
    return params


class Raw(str):
    """A query value sent exactly as written: percent escapes that do not decode to UTF-8, or none."""


raw_escapes = st.sampled_from(
    ["%ff", "%ED%A0%80", "%", "%zz", "%00", "a%2Cb", "%C3%A9", "a=b", "&", "%E2%82"]
).map(Raw)


def query_string(params: list[tuple[str, str]]) -> str:
    def escaped(text: str) -> str:
        return text if isinstance(text, Raw) else quote(text, safe="")

    return "&".join(f"{escaped(k)}={escaped(v)}" for k, v in params)


# --- the properties --------------------------------------------------------------------------------


def assert_no_500(r: Reply, context: Any) -> None:
    # A resourceVersion from the future is kube's 504 "Too large resource version"; nothing else may be 5xx.
    event(f"HTTP {r.status}")
    if r.status == 504 and b"Too large resource version" in r.raw:
        return
    assert r.status < 500, (context, r)
    if r.status >= 400:
        body = r.body
        assert isinstance(body, dict) and body.get("kind") == "Status", (context, r)
        assert body.get("code") == r.status, (context, r)


def snapshot(server: ThreadedServer) -> tuple[Any, Any]:
    """Both collections as stored; a list's resourceVersion is the global revision: any write moves it."""
    return tuple(server.get(path).body for path in (toppings(), f"/apis/{GROUP}/v1beta1/pizzas"))


def check_write(server: ThreadedServer, r: Reply, before: Any, context: Any) -> None:
    assert_no_500(r, context)
    dry = "dryRun=All" in str(context)
    if r.status >= 300 or dry:
        assert snapshot(server) == before, (context, r)
        return
    obj = r.body
    assert obj.get("kind") in ("Topping", "Pizza"), (context, r)
    name = obj["metadata"]["name"]
    for version in VERSIONS:
        path = toppings(version, name) if obj["kind"] == "Topping" else pizzas(version, name)
        got = server.get(path)
        assert got.status == 200, (context, path, got)
        # Whatever was stored must be acceptable again as it reads back (nothing invalid got in).
        again = server.send("PUT", path, got.body, query="dryRun=All")
        assert again.status == 200, (context, path, again)
    for version in VERSIONS:
        for path in (toppings(version), f"/apis/{GROUP}/{version}/pizzas"):
            assert server.get(path).status == 200, (context, path)


def create_checked(
    server: ThreadedServer,
    path: str,
    body: Any,
    content_type: str,
    params: Any,
    *,
    snapshot: Callable[[ThreadedServer], Any] = snapshot,
    check: Callable[[ThreadedServer, Reply, Any, Any], None] = check_write,
) -> None:
    """POST `body`, hold the outcome to `check` like any write, and delete what it made (the names
    repeat across examples). Another group's fuzz passes its own `snapshot` and `check`."""
    before = snapshot(server)
    query = query_string(params)
    r = server.send("POST", path, body, content_type, query=query)
    check(server, r, before, (path, query, body))
    if r.status == 201 and "dryRun=All" not in query:
        assert_no_500(server.request("DELETE", f"{path}/{r.body['metadata']['name']}"), "cleanup")


@fuzz(150)
@given(
    kind=st.sampled_from(["Topping", "Pizza"]),
    body_version=st.sampled_from(VERSIONS),
    url_version=st.sampled_from(VERSIONS),
    changes=mutations,
    content_type=content_types,
    params=queries(st.sampled_from(["dryRun", "fieldValidation", "fieldManager", "pretty"])),
)
def test_create(
    server: ThreadedServer,
    kind: str,
    body_version: str,
    url_version: str,
    changes: Any,
    content_type: str,
    params: Any,
) -> None:
    name = f"fz-{next(_names)}"
    base = topping(name, body_version) if kind == "Topping" else pizza(name, body_version)
    body = mutate(base, changes)
    path = toppings(url_version) if kind == "Topping" else pizzas(url_version)
    create_checked(server, path, body, content_type, params)


targets = st.sampled_from([("Topping", ""), ("Pizza", ""), ("Pizza", "status")])


def target_path(kind: str, version: str, subresource: str = "") -> str:
    path = toppings(version, TOPPING) if kind == "Topping" else pizzas(version, PIZZA)
    return f"{path}/{subresource}" if subresource else path


@fuzz(150)
@given(
    target=targets,
    version=st.sampled_from(VERSIONS),
    changes=mutations,
    content_type=content_types,
    params=queries(st.sampled_from(["dryRun", "fieldValidation", "fieldManager"])),
)
def test_update(
    server: ThreadedServer, target: Any, version: str, changes: Any, content_type: str, params: Any
) -> None:
    path = target_path(target[0], version, target[1])
    current = server.get(path).body
    before = snapshot(server)
    body = mutate(current, changes)
    query = query_string(params)
    check_write(
        server, server.send("PUT", path, body, content_type, query=query), before, (path, query, body)
    )


patch_documents = st.one_of(
    mutations.map(lambda changes: mutate({}, changes)),
    st.dictionaries(keys, values, max_size=3),
    json_values,
)


@fuzz(150)
@given(
    target=targets,
    version=st.sampled_from(VERSIONS),
    document=patch_documents,
    params=queries(st.sampled_from(["dryRun", "fieldValidation", "fieldManager", "force"])),
)
def test_merge_patch(server: ThreadedServer, target: Any, version: str, document: Any, params: Any) -> None:
    path = target_path(target[0], version, target[1])
    before = snapshot(server)
    query = query_string(params)
    r = server.send("PATCH", path, document, "application/merge-patch+json", query=query)
    check_write(server, r, before, (path, query, document))


# fmt: off
POINTERS = [
    "", "/", "/spec", "/spec/cost", "/spec/toppings", "/spec/toppings/0", "/spec/toppings/0/quantity",
    "/spec/toppings/-", "/spec/toppings/99", "/spec/toppings/-1", "/spec/toppings/01", "/metadata",
    "/metadata/labels", "/metadata/labels/a~1b", "/metadata/name", "/metadata/namespace",
    "/metadata/resourceVersion", "/metadata/finalizers", "/metadata/finalizers/-",
    "/metadata/managedFields/0/fieldsV1", "/status", "/status/cost", "/kind", "/apiVersion", "/x~2", "spec",
]
# fmt: on
pointers = st.sampled_from(POINTERS) | st.lists(keys, min_size=1, max_size=3).map(
    lambda parts: "/" + "/".join(parts)
)
operations = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]) | scalars,
        "path": pointers | scalars,
    },
    optional={"value": values, "from": pointers | scalars},
)
json_patches = st.lists(operations, max_size=4) | json_values


@fuzz(150)
@given(
    target=targets,
    version=st.sampled_from(VERSIONS),
    document=json_patches,
    params=queries(st.sampled_from(["dryRun", "fieldValidation"])),
)
def test_json_patch(server: ThreadedServer, target: Any, version: str, document: Any, params: Any) -> None:
    path = target_path(target[0], version, target[1])
    before = snapshot(server)
    query = query_string(params)
    r = server.send("PATCH", path, document, "application/json-patch+json", query=query)
    check_write(server, r, before, (path, query, document))


directive_values = st.sampled_from(["replace", "delete", "merge", "bogus", ""]) | values
smp_toppings_items = st.lists(
    st.dictionaries(
        st.sampled_from(["name", "quantity", "$patch", "$retainKeys", ""]), directive_values, max_size=3
    )
    | st.sampled_from(["ham", "salami"])
    | scalars,
    max_size=3,
)
smp_specs = st.dictionaries(
    st.sampled_from(
        [
            "toppings",
            "cost",
            "$patch",
            "$retainKeys",
            "$setElementOrder/toppings",
            "$deleteFromPrimitiveList/toppings",
        ]
    ),
    smp_toppings_items | directive_values,
    max_size=3,
)
smp_metas = st.dictionaries(
    st.sampled_from(
        [
            "labels",
            "finalizers",
            "$patch",
            "$retainKeys",
            "$setElementOrder/finalizers",
            "$deleteFromPrimitiveList/finalizers",
            "ownerReferences",
        ]
    ),
    directive_values | st.lists(st.sampled_from(["a/b", "c/d"]) | scalars, max_size=3),
    max_size=3,
)
smp_documents = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "spec": smp_specs,
            "metadata": smp_metas,
            "status": directive_values,
            "$patch": directive_values,
            "$retainKeys": directive_values,
        },
    ),
    patch_documents,
)


@fuzz(150)
@given(
    target=targets,
    version=st.sampled_from(VERSIONS),
    document=smp_documents,
    params=queries(st.sampled_from(["dryRun", "fieldValidation"])),
)
def test_strategic_merge_patch(
    server: ThreadedServer, target: Any, version: str, document: Any, params: Any
) -> None:
    path = target_path(target[0], version, target[1])
    before = snapshot(server)
    query = query_string(params)
    r = server.send("PATCH", path, document, "application/strategic-merge-patch+json", query=query)
    check_write(server, r, before, (path, query, document))


def valid_json(kind: str, version: str) -> bytes:
    return json.dumps(topping("fz-raw", version) if kind == "Topping" else pizza("fz-raw", version)).encode()


# fmt: off
RAW_TOKENS = ["1e400", "-1e400", "NaN", "Infinity", "-0", "1E-400", "9" * 30, '"\\ud800"', '"\\u0000"',
              "0x10", "01", "tru", ".inf", "!!binary AAAA", "&a 1", "{}", "[]"]
# fmt: on
raw_bodies = st.one_of(
    st.binary(max_size=64),
    st.tuples(st.sampled_from(["Topping", "Pizza"]), st.sampled_from(VERSIONS), st.integers(0, 400)).map(
        lambda t: valid_json(t[0], t[1])[: t[2]]
    ),
    st.tuples(st.sampled_from(["Topping", "Pizza"]), st.sampled_from(VERSIONS), st.integers(0, 400)).map(
        lambda t: yaml.safe_dump(json.loads(valid_json(t[0], t[1]))).encode()[: t[2]]
    ),
    # A valid object with one raw token spliced in where a value goes: what json.dumps never writes.
    st.tuples(
        st.sampled_from(["Topping", "Pizza"]),
        st.sampled_from(RAW_TOKENS),
        st.sampled_from(['"cost": 1.5', '"name": "fz-raw"', '"quantity": 2', '"a": "b"']),
    ).map(
        lambda t: valid_json(t[0], "v1beta1").replace(
            t[2].encode(), t[2].split(":")[0].encode() + b": " + t[1].encode()
        )
    ),
)


# fmt: off
yaml_tokens = st.sampled_from([
    "!!binary AAAA", "!!set {a, b}", "!!omap [a: 1]", "!!pairs [a: 1, a: 2]", "!!str 1", "!!int x",
    "!!float x", "!!float .nan", ".inf", "-.Inf", "!custom x", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "0o17", "0x1F",
    "1_000", "0b101", "190:20:30", "~", "=", "<<: {a: 1}", "{? [a, b]: 1}", "{? {a: 1}: 1}",
    "{1: a, 2.5: b, null: c, true: d}", '"\\ud800"', '"\\x00"', "&x 1", "|-\n  text",
])
# fmt: on
yaml_bodies = st.tuples(
    st.sampled_from(["Topping", "Pizza"]),
    st.sampled_from(VERSIONS),
    st.sampled_from(["cost: 1.5", "name: fz-raw", "a: b", "quantity: 2", "- ham"]),
    yaml_tokens,
).map(
    lambda t: (
        yaml.safe_dump(json.loads(valid_json(t[0], t[1])))
        .replace(t[2], t[2].split(":")[0].rstrip() + (": " if ":" in t[2] else " ") + t[3])
        .encode()
    )
)


@fuzz(150)
@given(
    kind=st.sampled_from(["Topping", "Pizza"]),
    version=st.sampled_from(VERSIONS),
    method=st.sampled_from(["POST", "PUT"]),
    data=yaml_bodies,
    params=queries(st.sampled_from(["fieldValidation"])),
)
def test_yaml_bodies(
    server: ThreadedServer, kind: str, version: str, method: str, data: bytes, params: Any
) -> None:
    path = toppings(version) if kind == "Topping" else pizzas(version)
    if method == "PUT":
        path += "/fz-raw"
    before = snapshot(server)
    query = query_string(params)
    r = server.request(method, path, data=data, headers={"Content-Type": "application/yaml"}, query=query)
    check_write(server, r, before, (method, path, query, data))
    if r.status in (200, 201):
        assert_no_500(
            server.request("DELETE", f"{path.removesuffix('/fz-raw')}/{r.body['metadata']['name']}"),
            "cleanup",
        )


# "." and ".." are left out: the client normalizes them away before sending.
name_segments = st.text(min_size=1, max_size=12).filter(lambda t: t not in (".", "..")).map(
    lambda t: quote(t, safe="")
) | st.sampled_from(
    [
        "%ff",
        "%ED%A0%80",
        "%2F",
        "%2e%2e",
        "%2e",
        "a" * 300,
        "A",
        "fz-topping%00",
        "%",
        "x%zz",
        "%C3%A9",
        "-",
        "a%0A",
    ]
)


@fuzz(150)
@given(
    kind=st.sampled_from(["Topping", "Pizza"]),
    version=st.sampled_from(VERSIONS),
    method=st.sampled_from(["GET", "PUT", "PATCH", "DELETE"]),
    name=name_segments,
    namespace=st.just("default") | name_segments,
    subresource=st.sampled_from(["", "", "status", "scale", "%ff"]),
)
def test_object_names(
    server: ThreadedServer, kind: str, version: str, method: str, name: str, namespace: str, subresource: str
) -> None:
    """Names and namespaces in the URL that no object has, or could have."""
    if kind == "Topping":
        path = f"/apis/{GROUP}/{version}/toppings/{name}"
    else:
        path = f"/apis/{GROUP}/{version}/namespaces/{namespace}/pizzas/{name}"
    if subresource:
        path += f"/{subresource}"
    body = topping(name, version) if kind == "Topping" else pizza(name, version)
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    data = None if method in ("GET", "DELETE") else json.dumps(body).encode()
    before = snapshot(server)
    # Dry run: `toppings/%2F` is the collection (kube's RequestInfo trims slashes too), so its DELETE is
    # a deletecollection, which would take every fixture object with it.
    r = server.request(
        method, URL(path, encoded=True), data=data, headers={"Content-Type": content_type}, query="dryRun=All"
    )
    assert_no_500(r, (method, path))
    assert snapshot(server) == before, (method, path, r)


@fuzz(150)
@given(
    target=targets,
    method=st.sampled_from(["POST", "PUT", "PATCH"]),
    version=st.sampled_from(VERSIONS),
    data=raw_bodies,
    content_type=content_types
    | st.sampled_from(
        [
            "application/merge-patch+json",
            "application/json-patch+json",
            "application/strategic-merge-patch+json",
        ]
    ),
)
def test_raw_bodies(
    server: ThreadedServer, target: Any, method: str, version: str, data: bytes, content_type: str
) -> None:
    path = target_path(target[0], version, target[1])
    if method == "POST":
        path = toppings(version) if target[0] == "Topping" else pizzas(version)
    before = snapshot(server)
    r = server.request(method, path, data=data, headers={"Content-Type": content_type})
    check_write(server, r, before, (method, path, content_type, data))
    if method == "POST" and r.status == 201:
        assert_no_500(server.request("DELETE", f"{path}/{r.body['metadata']['name']}"), "cleanup")


PROTOBUF = "application/vnd.kubernetes.protobuf"
MESSAGES = {
    ("Topping", "v1alpha1"): restaurant_v1alpha1.Topping,
    ("Topping", "v1beta1"): restaurant_v1beta1.Topping,
    ("Pizza", "v1alpha1"): restaurant_v1alpha1.Pizza,
    ("Pizza", "v1beta1"): restaurant_v1beta1.Pizza,
}


def protobuf_body(kind: str, version: str, obj: Any) -> bytes:
    """`obj` in kube's protobuf, or the untouched object's when the mutation made it unencodable."""
    cls = MESSAGES[kind, version]
    try:
        message = to_message(obj, cls)
    except ProtobufError:
        base = topping("x", version) if kind == "Topping" else pizza("x", version)
        message = to_message(base, cls)
    return wire.encode_message(f"{GROUP}/{version}", kind, message)


# Byte-level damage to an encoded body: cut it, flip bytes in it, or splice arbitrary bytes in.
damage = st.one_of(
    st.tuples(st.just("cut"), st.integers(0, 400)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.integers(0, 400), st.integers(1, 255)), max_size=4)),
    st.tuples(st.just("splice"), st.tuples(st.integers(0, 400), st.binary(max_size=16))),
    st.just(("none", None)),
)


def damaged(data: bytes, how: tuple[str, Any]) -> bytes:
    kind, arg = how
    if kind == "cut":
        return data[: arg % (len(data) + 1)]
    if kind == "flip":
        out = bytearray(data)
        for at, mask in arg:
            out[at % len(out)] ^= mask
        return bytes(out)
    if kind == "splice":
        at, extra = arg
        at %= len(data) + 1
        return data[:at] + extra + data[at:]
    return data


@fuzz(150)
@given(
    target=targets,
    method=st.sampled_from(["POST", "PUT"]),
    version=st.sampled_from(VERSIONS),
    changes=mutations,
    how=damage,
)
def test_protobuf_bodies(
    server: ThreadedServer, target: Any, method: str, version: str, changes: Any, how: Any
) -> None:
    """Create and update bodies in kube's protobuf, from valid to damaged: never a 500, nothing half
    written (what a write leaves is held to the same checks as a JSON write's)."""
    kind = target[0]
    path = target_path(kind, version, target[1])
    if method == "POST":
        base = (
            topping(f"fzp-{next(_names)}", version)
            if kind == "Topping"
            else pizza(f"fzp-{next(_names)}", version)
        )
        path = toppings(version) if kind == "Topping" else pizzas(version)
    else:
        base = server.get(path).body
    data = damaged(protobuf_body(kind, version, mutate(base, changes)), how)
    before = snapshot(server)
    r = server.request(method, path, data=data, headers={"Content-Type": PROTOBUF})
    check_write(server, r, before, (method, path, data))
    if method == "POST" and r.status == 201:
        assert_no_500(server.request("DELETE", f"{path}/{r.body['metadata']['name']}"), "cleanup")


read_paths = st.sampled_from(
    [
        toppings("v1alpha1"),
        toppings("v1beta1"),
        toppings("v1beta1", TOPPING),
        pizzas("v1alpha1"),
        pizzas("v1beta1", PIZZA),
        pizzas("v1beta1", PIZZA) + "/status",
        f"/apis/{GROUP}/v1beta1/pizzas",
        f"/apis/{GROUP}/v1alpha1/namespaces/fz-empty/pizzas",
    ]
)


@fuzz(200)
@given(path=read_paths, params=queries(), accept=accepts)
def test_get_and_list(server: ThreadedServer, path: str, params: Any, accept: str | None) -> None:
    params = [(k, v) for k, v in params if k != "watch"]
    headers = {"Accept": accept} if accept is not None else {}
    query = query_string(params)
    r = server.request("GET", path, headers=headers, query=query)
    assert_no_500(r, (path, query, accept))
    if r.status == 200 and "yaml" not in r.headers.get("Content-Type", ""):
        assert isinstance(r.body, dict), (path, query, r)


async def _watch(
    server: ThreadedServer, path: str, query: str, headers: dict[str, str]
) -> tuple[Reply, list[Any]]:
    """Status and every event of one watch; timeoutSeconds=1 ends it, the client timeout bounds the read."""
    assert server.session is not None
    url = URL(f"{path}?{query}", encoded=True)
    async with asyncio.timeout(REQUEST_TIMEOUT):
        async with server.session.get(url, headers=headers) as r:
            raw = await r.read()
    reply = Reply(r.status, r.headers, raw)
    if r.status != 200 or "json" not in r.headers.get("Content-Type", ""):
        return reply, []
    return reply, [json.loads(line) for line in raw.splitlines() if line.strip()]


watch_cases = st.tuples(
    st.sampled_from(
        [
            toppings("v1alpha1"),
            pizzas("v1beta1"),
            f"/apis/{GROUP}/v1beta1/pizzas",
            f"/apis/{GROUP}/v1alpha1/namespaces/fz-empty/pizzas",
            f"/apis/{GROUP}/v1beta1/watch/toppings/{TOPPING}",
            f"/apis/{GROUP}/v1alpha1/watch/namespaces/default/pizzas/{PIZZA}",
            f"/apis/{GROUP}/v1beta1/watch/pizzas",
        ]
    ),
    queries(param_names.filter(lambda n: n not in ("timeoutSeconds", "watch"))),
    accepts,
    st.sampled_from(["1", "1", "1", "x", "1.5", "-", "0x1", "9" * 5000]),
)


@fuzz(8)
@given(cases=st.lists(watch_cases, min_size=25, max_size=25))
def test_watch(server: ThreadedServer, cases: list[Any]) -> None:
    """Twenty-five watches at once per example: each lasts up to its one-second timeout, so they overlap."""
    requests = []
    for path, params, accept, timeout in cases:
        query = query_string([("watch", "1"), *params, ("timeoutSeconds", timeout)])
        requests.append((path, query, {"Accept": accept} if accept is not None else {}))

    async def all_watches() -> list[tuple[Reply, list[Any]]]:
        return await asyncio.gather(*(_watch(server, *req) for req in requests))

    for req, (reply, events) in zip(requests, server.run(all_watches()), strict=True):
        assert_no_500(reply, req)
        for item in events:
            assert item["type"] in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"), (req, item)
            if item["type"] == "ERROR":
                assert item["object"]["code"] < 500, (req, item)


delete_bodies = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["DeleteOptions", "Pod"]) | scalars,
        "apiVersion": st.sampled_from(["v1", "meta.k8s.io/v1"]) | scalars,
        "preconditions": st.fixed_dictionaries({}, optional={"uid": values, "resourceVersion": values})
        | values,
        "gracePeriodSeconds": values,
        "propagationPolicy": st.sampled_from(["Orphan", "Foreground", "Background"]) | values,
        "orphanDependents": values,
        "dryRun": st.just(["All"]) | values,
    },
)


@fuzz(150)
@given(
    collection=st.booleans(),
    body=delete_bodies,
    params=queries(
        st.sampled_from(
            ["dryRun", "gracePeriodSeconds", "propagationPolicy", "orphanDependents", "labelSelector"]
        )
    ),
    raw=st.none() | raw_bodies,
)
def test_delete(server: ThreadedServer, collection: bool, body: Any, params: Any, raw: bytes | None) -> None:
    """DELETE of a victim topping (re-created when it goes) or of an empty namespace's pizzas."""
    name = "fz-victim"
    if server.get(toppings("v1beta1", name)).status == 404:
        assert server.send("POST", toppings(), topping(name)).status == 201
    path = pizzas("v1beta1", namespace="fz-empty") if collection else toppings("v1beta1", name)
    data = raw if raw is not None else (None if body is None else encode(body, "application/json"))
    before = snapshot(server)
    query = query_string(params)
    r = server.request("DELETE", path, data=data, headers={"Content-Type": "application/json"}, query=query)
    assert_no_500(r, (path, query, data))
    if r.status >= 300:
        assert snapshot(server) == before, (path, query, data, r)


# --- regressions: what the properties above found, as plain cases ------------------------------------


def assert_status(r: Reply, code: int) -> dict[str, Any]:
    assert r.status == code, r
    body = r.body
    assert (body["kind"], body["code"]) == ("Status", code), r
    return body


def post_raw(server: ThreadedServer, data: bytes, content_type: str, query: str = "") -> Reply:
    return server.request("POST", toppings(), data=data, headers={"Content-Type": content_type}, query=query)


def test_lone_surrogate_escape_becomes_a_replacement_character(server: ThreadedServer) -> None:
    """Python's json and yaml decode "\\ud800" to a lone surrogate that nothing can encode again: it was a
    500 wherever it went, an error message (below: the 422 of a patch) or the stored object (a 201)."""
    before = snapshot(server)
    r = server.request(
        "PATCH",
        target_path("Topping", "v1beta1"),
        data=b'{"metadata": {"labels": "\\ud800"}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert "\ufffd" in assert_status(r, 422)["message"]
    assert snapshot(server) == before
    for name, content_type in [
        ("fz-surrogate-json", "application/json"),
        ("fz-surrogate-yaml", "application/yaml"),
    ]:
        # An escape JSON cannot pair; YAML reads JSON text the same way.
        text = json.dumps(topping(name)).replace(
            '"labels": {"fuzz": "yes"}', '"annotations": {"note": "\\ud800"}'
        )
        r = post_raw(server, text.encode(), content_type, "fieldValidation=Ignore")
        assert r.status == 201, r
        assert r.body["metadata"]["annotations"] == {"note": "\ufffd"}
        assert server.request("DELETE", toppings("v1beta1", name)).status == 200
        r = post_raw(server, text.encode(), content_type)
        assert r.status == 201, r
        assert server.get(toppings("v1alpha1", name)).body["metadata"]["annotations"] == {"note": "\ufffd"}
        assert server.request("DELETE", toppings("v1beta1", name)).status == 200


@pytest.mark.parametrize(
    ("content_type", "value"),
    [
        ("application/json", "1e400"),
        ("application/json", "-1e400"),
        ("application/json", "NaN"),
        ("application/json", "Infinity"),
        ("application/yaml", ".inf"),
        ("application/yaml", ".nan"),
        ("application/yaml", "!!float -.inf"),
    ],
)
def test_numbers_that_are_not_finite_are_400(server: ThreadedServer, content_type: str, value: str) -> None:
    """Go's decoder refuses them (strconv range error, or not JSON at all); Python's made inf/nan."""
    text = json.dumps(topping("fz-infinite")).replace("1.5", value)
    before = snapshot(server)
    for query in ("", "fieldValidation=Strict", "fieldValidation=Ignore"):
        assert_status(post_raw(server, text.encode(), content_type, query), 400)
    assert snapshot(server) == before


def test_yaml_tags_decode_to_json_values(server: ThreadedServer) -> None:
    """`!!binary` made bytes and `!!set` a set, which no JSON encoder takes: a 500 in the Status naming
    them. They are strings and null-valued maps, as go-yaml decodes them for kube."""
    body = yaml.safe_dump(topping("fz-tags")).replace("fuzz: 'yes'", "fuzz: !!binary eWVz")
    r = post_raw(server, body.encode(), "application/yaml")
    assert r.status == 201, r
    assert r.body["metadata"]["labels"] == {"fuzz": "yes"}
    assert server.request("DELETE", toppings("v1beta1", "fz-tags")).status == 200
    before = snapshot(server)
    for value in ("!!binary AAAA", "!!set {a, b}", "!!omap [a: 1]", "!!pairs [a: 1, a: 2]", "{? [a]: 1}"):
        r = post_raw(
            server, yaml.safe_dump(topping("fz-tags")).replace("fz-tags", value).encode(), "application/yaml"
        )
        assert 400 <= r.status < 500 and r.body["kind"] == "Status", (value, r)
    assert snapshot(server) == before


def test_quantity_is_bounded_so_reading_v1alpha1_stays_small(server: ThreadedServer) -> None:
    """v1alpha1 spells a quantity as repeated names: `quantity: 1e12` was accepted, and every later
    v1alpha1 read of it (a GET, a list, a watch) then built a list of 10^12 names."""
    before = snapshot(server)
    huge = pizza("fz-huge")
    huge["spec"]["toppings"] = [{"name": "ham", "quantity": 10**12}]
    assert_status(server.send("POST", pizzas("v1beta1"), huge), 422)
    # A v1beta1 body is refused by the v1alpha1 URL before validation, as kube refuses it.
    assert_status(server.send("POST", pizzas("v1alpha1"), huge), 400)
    many = pizza("fz-huge")
    many["spec"]["toppings"] = [{"name": f"t{i}"} for i in range(101)]
    assert_status(server.send("POST", pizzas(), many), 422)
    assert_status(
        server.send(
            "POST", pizzas("v1alpha1"), pizza("fz-huge", "v1alpha1") | {"spec": {"toppings": ["ham"] * 101}}
        ),
        422,
    )
    assert snapshot(server) == before
    most = pizza("fz-most")
    # The most a pizza holds is 30 portions (its CEL rule), well inside the quantity bound.
    most["spec"]["toppings"] = [{"name": "ham", "quantity": 30}]
    assert server.send("POST", pizzas(), most).status == 201
    assert server.get(pizzas("v1alpha1", "fz-most")).body["spec"]["toppings"] == ["ham"] * 30
    assert server.request("DELETE", pizzas("v1beta1", "fz-most")).status == 200


def test_name_with_a_newline_is_a_status(server: ThreadedServer) -> None:
    """The resource route once matched `.+`, which stops at a newline: aiohttp's text 404 answered."""
    r = server.request("GET", URL(toppings("v1beta1") + "/a%0A", encoded=True))
    assert_status(r, 404)


@pytest.mark.parametrize(
    "query",
    [
        "resourceVersion=%201",
        "resourceVersion=1_0",
        "resourceVersion=%D9%A1",  # an Arabic-Indic digit one, which Python's int() reads as 1
        f"resourceVersion={2**64}",
        f"limit={2**63}",
        "limit=1_0",
        "timeoutSeconds=%201",
        "limit=" + "1" * 5000,  # int() refuses more than 4300 digits with a ValueError: was a 500
        "resourceVersion=" + "1" * 5000,
    ],
)
def test_numbers_in_the_query_are_parsed_like_go(server: ThreadedServer, query: str) -> None:
    """strconv.ParseUint/ParseInt take ASCII digits (and a sign) within 64 bits; int() took more."""
    assert_status(server.get(toppings(), query), 400)
    if query.startswith("resourceVersion"):
        assert_status(server.get(toppings("v1beta1", TOPPING), query), 400)


def test_huge_numeric_query_values_are_400(server: ThreadedServer) -> None:
    # Python's int() refuses over 4300 digits with ValueError; it must never surface as a 500.
    digits = "9" * 5000
    for query in (f"limit={digits}", f"resourceVersion={digits}", f"timeoutSeconds={digits}"):
        r = server.request("GET", URL(toppings("v1beta1") + "?" + query, encoded=True))
        assert_status(r, 400)
