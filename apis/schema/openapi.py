"""A kind's structural schema as kube-apiserver publishes a CRD's in /openapi/v3 and /openapi/v2.

Follows apiextensions-apiserver's pkg/controller/openapi/builder (buildKubeNative): the schema is
unfolded (x-kubernetes-int-or-string gains `anyOf: [{type: integer}, {type: string}]`), the root's
apiVersion/kind become TypeMeta's and metadata a reference to ObjectMeta (with its description; in v3
kube-openapi's builder3 then wraps every $ref that has siblings into `allOf`), embedded resources get
the same three properties and require apiVersion and kind, and the GVK extension is added.

v2 additionally goes through openapi/v2/conversion.go (ToStructuralOpenAPIV2), because kubectl's
client-side validation mis-reads some v3 constructs: allOf/anyOf/oneOf/not are dropped, a nullable
node loses its type, properties and items (and its parent's `required` entry for it), nodes that
preserve unknown fields lose properties and items, and `type: object`/`array` left without them is
dropped. A root that preserves unknown fields is published as a bare `{type: object}`. Finally the
v2 controller prunes every `default` (handler.PruneDefaults), while v3 keeps them (KEP-1929).
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]

V3_OBJECT_META_REF = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
V2_OBJECT_META_REF = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
METADATA_DESCRIPTION = f"Standard object's metadata. More info: {_CONVENTIONS}#metadata"
# TypeMeta's generated OpenAPI definition, used for the root's apiVersion and kind.
_TYPE_META = {
    "apiVersion": {
        "description": "APIVersion defines the versioned schema of this representation of an object. "
        "Servers should convert recognized schemas to the latest internal value, and may reject "
        f"unrecognized values. More info: {_CONVENTIONS}#resources",
        "type": "string",
    },
    "kind": {
        "description": "Kind is a string value representing the REST resource this object represents. "
        "Servers may infer this from the endpoint the client submits requests to. Cannot be updated. "
        f"In CamelCase. More info: {_CONVENTIONS}#types-kinds",
        "type": "string",
    },
}
# builder.addEmbeddedProperties overrides the descriptions for embedded resources.
_EMBEDDED_DESCRIPTIONS = {
    "apiVersion": "apiVersion defines the versioned schema of this representation of an object. "
    f"More info: {_CONVENTIONS}#resources",
    "kind": f"kind is a string value representing the type of this object. In CamelCase. More info: "
    f"{_CONVENTIONS}#types-kinds",
}
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")


def published_v3(
    schema: Schema, meta_ref: str = V3_OBJECT_META_REF, gvk: dict[str, str] | None = None
) -> Schema:
    """The schema of the kind as /openapi/v3 shows it; `schema` is left untouched."""
    out = copy.deepcopy(schema)
    _unfold(out)
    _add_type_meta(out, meta_ref)
    _add_embedded(out, meta_ref, v2=False)
    _add_gvk(out, gvk)
    return _wrap_refs(out)


def published_v2(
    schema: Schema, meta_ref: str = V2_OBJECT_META_REF, gvk: dict[str, str] | None = None
) -> Schema:
    """The schema of the kind as /openapi/v2 shows it; `schema` is left untouched."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        out: Schema = {"type": "object"}
    else:
        out = copy.deepcopy(schema)
        _unfold(out)
        _to_v2(out)
        _add_type_meta(out, meta_ref)
        _add_embedded(out, meta_ref, v2=True)
        _prune_defaults(out)
    _add_gvk(out, gvk)
    return out


def _subschemas(s: Schema) -> list[Schema]:
    """The nested structural schemas: properties, items and map values (not value validations)."""
    subs = list((s.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(s.get(key), dict):
            subs.append(s[key])
    return subs


def _unfold(s: Schema) -> None:
    """Structural.Unfold: spell out what x-kubernetes-int-or-string means for OpenAPI readers."""
    if s.get("x-kubernetes-int-or-string"):
        any_of = s.get("anyOf")
        all_of = s.get("allOf") or []
        already = any_of == _INT_OR_STRING or bool(all_of and all_of[0].get("anyOf") == _INT_OR_STRING)
        if not already:
            if any_of is None:
                s["anyOf"] = copy.deepcopy(_INT_OR_STRING)
            else:
                s["allOf"] = [{"anyOf": copy.deepcopy(_INT_OR_STRING)}, *all_of]
    for sub in _subschemas(s):
        _unfold(sub)


def _to_v2(s: Schema) -> None:
    """ToStructuralOpenAPIV2 on one node, then on its children (the visitor goes parent-first)."""
    for key in _JUNCTORS:
        s.pop(key, None)
    if s.get("nullable"):
        for key in ("type", "nullable", "items", "properties"):
            s.pop(key, None)
    if s.get("x-kubernetes-preserve-unknown-fields"):
        s.pop("items", None)
        s.pop("properties", None)
    if "items" not in s and s.get("type") == "array":
        s.pop("type")
    if s.get("x-kubernetes-preserve-unknown-fields") and s.get("type") == "object":
        s.pop("type")
    nullable_props = {name for name, p in (s.get("properties") or {}).items() if p.get("nullable")}
    if nullable_props and "required" in s:
        s["required"] = [r for r in s["required"] if r not in nullable_props]
    extra = s.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("nullable"):
        s.pop("required", None)
    if not s.get("required"):
        s.pop("required", None)
    for sub in _subschemas(s):
        _to_v2(sub)


def _metadata_ref(meta_ref: str) -> Schema:
    return {"description": METADATA_DESCRIPTION, "$ref": meta_ref}


def _add_type_meta(s: Schema, meta_ref: str) -> None:
    props = s.setdefault("properties", {})
    props["metadata"] = _metadata_ref(meta_ref)
    props["apiVersion"] = dict(_TYPE_META["apiVersion"])
    props["kind"] = dict(_TYPE_META["kind"])


def _add_embedded(s: Schema, meta_ref: str, *, v2: bool) -> None:
    for sub in _subschemas(s):
        _add_embedded(sub, meta_ref, v2=v2)
    if v2 and s.get("x-kubernetes-preserve-unknown-fields"):
        return  # kubectl would refuse unknown fields next to these properties
    if s.get("x-kubernetes-embedded-resource"):
        props = s.setdefault("properties", {})
        for key in ("apiVersion", "kind"):
            props[key] = {**_TYPE_META[key], "description": _EMBEDDED_DESCRIPTIONS[key]}
        props["metadata"] = _metadata_ref(meta_ref)
        required = s.setdefault("required", [])
        for key in ("kind", "apiVersion"):
            if key not in required:
                required.append(key)


def _add_gvk(s: Schema, gvk: dict[str, str] | None) -> None:
    if gvk is not None:
        s["x-kubernetes-group-version-kind"] = [
            {"group": gvk["group"], "version": gvk["version"], "kind": gvk["kind"]}
        ]


def _all_subschemas(s: Schema) -> list[Schema]:
    subs = _subschemas(s)
    for key in ("allOf", "anyOf", "oneOf"):
        subs.extend(x for x in s.get(key) or [] if isinstance(x, dict))
    if isinstance(s.get("not"), dict):
        subs.append(s["not"])
    return subs


def _prune_defaults(s: Schema) -> None:
    s.pop("default", None)
    for sub in _all_subschemas(s):
        _prune_defaults(sub)


def _wrap_refs(s: Schema) -> Schema:
    """builder3's WrapRefs: in v3 a $ref may not have siblings, so it moves into a one-element allOf."""
    for sub in _all_subschemas(s):
        _wrap_refs(sub)
    if "$ref" in s and len(s) > 1:
        ref = s.pop("$ref")
        s["allOf"] = [{"$ref": ref}]
    return s
