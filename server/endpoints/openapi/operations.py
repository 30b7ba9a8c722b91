"""The REST operations of a group version, independent of OpenAPI version.

Mirrors what k8s.io/apiserver's installer registers for a Store with a status subresource
(endpoints/installer.go registerResourceHandlers): the same paths (including the deprecated /watch/
ones), operation names, descriptions, query parameters (from the *Options structs), bodies and
responses. v2.py and v3.py only render this model, so both documents list the same
operations and kubectl's "does PATCH accept fieldValidation" check sees the same answer in either.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from apis.runtime.kinds import GroupInfo, KindInfo
from registry.generic.custom_subresources import Connecter, CustomSubresource, CustomSubresources, Getter
from server.endpoints.openapi import autoscaling, meta
from server.endpoints.openapi import params as opts
from server.endpoints.openapi.params import Param

JSON = "application/json"
YAML = "application/yaml"
JSON_WATCH = "application/json;stream=watch"
BODY_TYPES: tuple[str, ...] = (JSON, YAML)
PRODUCES: tuple[str, ...] = (JSON, YAML)
PRODUCES_STREAM: tuple[str, ...] = (JSON, YAML, JSON_WATCH)


@dataclass(frozen=True, slots=True)
class Response:
    code: int
    description: str
    schema: str | None  # definition name; None for a response without a body (or an inline type)
    type: str = ""  # an inline schema type instead (a connecter's stream: "string")


@dataclass(frozen=True, slots=True)
class Operation:
    method: str  # get | put | post | delete | patch
    operation_id: str
    tag: str
    description: str
    action: str  # x-kubernetes-action
    gvk: tuple[str, str, str]
    params: tuple[Param, ...]
    body: str | None
    body_required: bool
    consumes: tuple[str, ...]
    produces: tuple[str, ...]
    responses: tuple[Response, ...]


@dataclass(frozen=True, slots=True)
class PathItem:
    path: str
    common: tuple[Param, ...]  # parameters every operation of the path takes (kube lifts them)
    operations: tuple[Operation, ...]


_UNAUTHORIZED = Response(401, "Unauthorized", None)
_OP_VERBS: tuple[str, ...] = (
    "get",
    "log",
    "read",
    "replace",
    "patch",
    "delete",
    "deletecollection",
    "watch",
    "connect",
    "proxy",
)
_OP_VERBS += ("list", "create")


def to_valid_operation_id(s: str, capitalize_first: bool) -> str:
    """apiserver openapi.ToValidOperationID: drop punctuation, camel-case what followed it."""
    out: list[str] = []
    capitalize = capitalize_first
    for i, ch in enumerate(s):
        if ch.isalpha() or ch == "_" or (i != 0 and ch.isdigit()):
            out.append(ch.upper() if capitalize else ch)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def operation_id_and_tag(operation: str, group: str, version: str) -> tuple[str, str]:
    """apiserver openapi.GetOperationIDAndTags for a path /apis/{group}/{version}/...

    The verb prefix is the *shortest* known verb the name starts with, which is why kube's
    deletecollection operations read "delete<Group><Version>Collection<Kind>".
    """
    prefix = min((v for v in _OP_VERBS if operation.startswith(v)), key=len)
    rest = operation[len(prefix) :]
    trimmed = group.removesuffix(".k8s.io")
    op_id = prefix + to_valid_operation_id(trimmed, True) + to_valid_operation_id(version, True)
    tag = to_valid_operation_id(trimmed, False) + "_" + to_valid_operation_id(version, False)
    return op_id + to_valid_operation_id(rest, True), tag


def definition_name(group: str, version: str, kind: str) -> str:
    """kube-openapi ToRESTFriendlyName("group/version/kind"): the CRD definition naming."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _article(noun: str) -> str:
    # endpoints.GetArticleForNoun with padding " ".
    if not noun.endswith("ss") and noun.endswith("s"):
        return " "
    return " an " if noun[:1].lower() in "aeiou" else " a "


@dataclass(frozen=True, slots=True)
class _Route:
    verb: str  # the installer's action verb: GET LIST PUT PATCH POST DELETE DELETECOLLECTION WATCH WATCHLIST
    path: str
    path_params: tuple[Param, ...]
    subresource: str = ""
    all_namespaces: bool = False
    custom: CustomSubresource | None = None


# The API verb each installer action serves.
_ROUTE_VERB: dict[str, str] = {
    "LIST": "list",
    "POST": "create",
    "DELETECOLLECTION": "deletecollection",
    "WATCHLIST": "watch",
    "GET": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
    "WATCH": "watch",
}


def _routes(prefix: str, kind: KindInfo, custom: CustomSubresources) -> list[_Route]:
    name = Param("name", "path", "string", f"name of the {kind.kind}")
    scope_params: tuple[Param, ...]
    if kind.namespaced:
        collection, scope_params = f"namespaces/{{namespace}}/{kind.resource}", (opts.NAMESPACE,)
    else:
        collection, scope_params = kind.resource, ()
    item, item_params = f"{collection}/{{name}}", (*scope_params, name)
    routes = [
        _Route("LIST", f"{prefix}/{collection}", scope_params),
        _Route("POST", f"{prefix}/{collection}", scope_params),
        _Route("DELETECOLLECTION", f"{prefix}/{collection}", scope_params),
        _Route("WATCHLIST", f"{prefix}/watch/{collection}", scope_params),
        _Route("GET", f"{prefix}/{item}", item_params),
        _Route("PUT", f"{prefix}/{item}", item_params),
        _Route("PATCH", f"{prefix}/{item}", item_params),
        _Route("DELETE", f"{prefix}/{item}", item_params),
        _Route("WATCH", f"{prefix}/watch/{item}", item_params),
    ]
    if kind.namespaced:
        routes.append(_Route("LIST", f"{prefix}/{kind.resource}", (), all_namespaces=True))
        routes.append(_Route("WATCHLIST", f"{prefix}/watch/{kind.resource}", (), all_namespaces=True))
    # The installer registers a route only for a verb the storage serves.
    routes = [r for r in routes if _ROUTE_VERB[r.verb] in kind.verbs]
    for sub in sorted(kind.subresources):
        path = f"{prefix}/{item}/{sub}"
        routes += [_Route(verb, path, item_params, subresource=sub) for verb in ("GET", "PUT", "PATCH")]
    for sub, impl in sorted(custom.get(kind.resource, {}).items()):
        path = f"{prefix}/{item}/{sub}"
        verbs = ("GET",) if isinstance(impl, Getter) else tuple(f"CONNECT_{v.upper()}" for v in impl.verbs)
        routes += [_Route(verb, path, item_params, subresource=sub, custom=impl) for verb in verbs]
    return routes


_CONNECT_METHODS = {"get": "GET", "create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}


def _connect_operation(
    route: _Route, group: str, version: str, kind: KindInfo, connecter: Connecter
) -> Operation:
    """A connecter's route as the installer documents it: `connect<Method>...`, any media type, a string
    answer, the connect options as query parameters (and no `pretty`)."""
    method = _CONNECT_METHODS[route.verb.removeprefix("CONNECT_").lower()]
    namespaced = "Namespaced" if kind.namespaced else ""
    sub = route.subresource
    op_id, tag = operation_id_and_tag(
        f"connect{method.title()}{namespaced}{kind.kind}{sub.title()}", group, version
    )
    params = tuple(opts.Param(p.name, "query", p.type, p.description) for p in connecter.parameters)
    return Operation(
        method=method.lower(),
        operation_id=op_id,
        tag=tag,
        description=f"connect {method} requests to {sub} of {kind.kind}",
        action="connect",
        gvk=(group, version, connecter.kind),
        params=(*params, *route.path_params),
        body=None,
        body_required=False,
        consumes=("*/*",),
        produces=("*/*",),
        responses=(Response(200, "OK", None, type="string"), _UNAUTHORIZED),
    )


def _operation(
    route: _Route, group: str, version: str, kind: KindInfo, patch_types: tuple[str, ...]
) -> Operation:
    if isinstance(route.custom, Connecter):
        return _connect_operation(route, group, version, kind, route.custom)
    k, sub = kind.kind, route.subresource
    namespaced = "Namespaced" if kind.namespaced and not route.all_namespaces else ""
    suffix = "ForAllNamespaces" if route.all_namespaces else ""
    obj, obj_list = definition_name(group, version, k), definition_name(group, version, kind.list_kind)
    gvk = kind.subresource_kind(group, version, sub)
    if route.custom is not None:  # a getter answers its own kind
        gvk = (group, version, route.custom.kind)
        obj = definition_name(*gvk)
    elif gvk != (group, version, k):  # /scale reads and writes autoscaling/v1 Scale
        obj = autoscaling.SCALE
    ok, created = Response(200, "OK", obj), Response(201, "Created", obj)
    body_types: tuple[str, ...] = BODY_TYPES
    body: str | None = None
    body_required = True
    params: tuple[Param, ...]
    responses: tuple[Response, ...]
    match route.verb:
        case "GET":
            name, method, action = "read", "get", "get"
            desc = f"read {sub} of the specified {k}" if sub else f"read the specified {k}"
            params, responses, produces = (), (ok,), PRODUCES
        case "LIST":
            name, method, action = "list", "get", "list"
            desc = f"list or watch objects of kind {k}"
            params, responses, produces = opts.LIST_OPTIONS, (Response(200, "OK", obj_list),), PRODUCES_STREAM
        case "PUT":
            name, method, action = "replace", "put", "put"
            desc = f"replace {sub} of the specified {k}" if sub else f"replace the specified {k}"
            params, responses, produces, body = opts.CREATE_OPTIONS, (ok, created), PRODUCES, obj
        case "PATCH":
            name, method, action = "patch", "patch", "patch"
            desc = (
                f"partially update {sub} of the specified {k}"
                if sub
                else f"partially update the specified {k}"
            )
            params, responses, produces, body = opts.PATCH_OPTIONS, (ok, created), PRODUCES, meta.PATCH
            body_types = patch_types
        case "POST":
            name, method, action, desc = "create", "post", "post", f"create{_article(k)}{k}"
            accepted = Response(202, "Accepted", obj)
            params, responses, produces, body = opts.CREATE_OPTIONS, (ok, created, accepted), PRODUCES, obj
        case "DELETE":
            name, method, action, desc = "delete", "delete", "delete", f"delete{_article(k)}{k}"
            status_ok, status_accepted = (
                Response(200, "OK", meta.STATUS),
                Response(202, "Accepted", meta.STATUS),
            )
            params, responses, produces = opts.DELETE_OPTIONS, (status_ok, status_accepted), PRODUCES
            body, body_required = meta.DELETE_OPTIONS, False
        case "DELETECOLLECTION":
            name, method, action, desc = (
                "deletecollection",
                "delete",
                "deletecollection",
                f"delete collection of {k}",
            )
            params = (*opts.DELETE_OPTIONS, *opts.DELETECOLLECTION_LIST_OPTIONS)
            responses, produces = (Response(200, "OK", meta.STATUS),), PRODUCES
            body, body_required = meta.DELETE_OPTIONS, False
        case "WATCH":
            name, method, action = "watch", "get", "watch"
            desc = (
                f"watch changes to an object of kind {k}. deprecated: use the 'watch' parameter with a "
                "list operation instead, filtered to a single item with the 'fieldSelector' parameter."
            )
            params, responses, produces = (
                opts.LIST_OPTIONS,
                (Response(200, "OK", meta.WATCH_EVENT),),
                PRODUCES_STREAM,
            )
        case "WATCHLIST":
            name, method, action = "watch", "get", "watchlist"
            desc = (
                f"watch individual changes to a list of {k}. deprecated: use the 'watch' parameter with a "
                "list operation instead."
            )
            params, responses, produces = (
                opts.LIST_OPTIONS,
                (Response(200, "OK", meta.WATCH_EVENT),),
                PRODUCES_STREAM,
            )
        case _:
            raise ValueError(route.verb)
    operation_name = (
        name + namespaced + k + sub.title() + ("List" if route.verb == "WATCHLIST" else "") + suffix
    )
    op_id, tag = operation_id_and_tag(operation_name, group, version)
    return Operation(
        method=method,
        operation_id=op_id,
        tag=tag,
        description=desc,
        action=action,
        gvk=gvk,
        params=(opts.PRETTY, *params, *route.path_params),
        body=body,
        body_required=body_required,
        consumes=body_types,
        produces=produces,
        responses=(*responses, _UNAUTHORIZED),
    )


def _sorted(params: list[Param]) -> tuple[Param, ...]:
    return tuple(sorted(params, key=lambda p: (p.name, p.location)))


def group_version_paths(
    group: GroupInfo, version: str, patch_types: tuple[str, ...], custom: CustomSubresources | None = None
) -> list[PathItem]:
    """Every path of one group version, sorted, with kube-openapi's common-parameter lifting;
    `custom` adds the group's getters and connecters."""
    prefix = f"/apis/{group.group}/{version}"
    by_path: dict[str, list[Operation]] = {}
    for kind in sorted(group.kinds, key=lambda k: k.resource):
        if version not in kind.versions:
            continue
        for route in _routes(prefix, kind, custom or {}):
            by_path.setdefault(route.path, []).append(
                _operation(route, group.group, version, kind, patch_types)
            )
    items = []
    for path, operations in sorted(by_path.items()):
        keys = [{(p.name, p.location) for p in op.params} for op in operations]
        common_keys = set.intersection(*keys)
        common = _sorted([p for p in operations[0].params if (p.name, p.location) in common_keys])
        ops = tuple(
            dataclasses.replace(
                op, params=_sorted([p for p in op.params if (p.name, p.location) not in common_keys])
            )
            for op in operations
        )
        items.append(PathItem(path=path, common=common, operations=ops))
    return items
