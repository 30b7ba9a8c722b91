"""Strategic merge patch (SMP) applied to a versioned object, with the patch metadata of its schema.

A port of the apply half of k8s.io/apimachinery/pkg/util/strategicpatch (StrategicMergeMapPatch with
MergeParallelList and IgnoreUnmatchedNulls, as kube-apiserver's patch handler calls it), reading the
patch metadata where kubectl's client side reads it, from the published OpenAPI extensions:

- `x-kubernetes-patch-strategy` ("merge", "replace", "retainKeys", "merge,retainKeys") decides how a
  list (or map) is patched; a list without it is replaced, whatever its `x-kubernetes-list-type`.
  kubectl computes its patches (`apply`, `edit`) from the same extension, so a server that merged a
  list the client meant to replace would silently keep items the client removed.
- `x-kubernetes-patch-merge-key` names the key of a merged list of objects; a merged list without one
  falls back to its single `x-kubernetes-list-map-keys` entry.

Directives: `$patch: replace|delete|merge` in maps and list items, `$retainKeys`,
`$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`. Errors carry kube's messages and
are typed by how kube's handler answers them (interpretStrategicMergePatchError).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apis.goformat import go_float

DIRECTIVE = "$patch"
_DELETE, _REPLACE, _MERGE = "delete", "replace", "merge"
_RETAIN_KEYS_STRATEGY = "retainKeys"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

Schema = Mapping[str, Any]


class PatchError(ValueError):
    """A patch that cannot be applied (kube answers 500; the API layer answers 422)."""


class BadPatchFormat(PatchError):
    """A malformed directive (mergepatch.ErrBadPatchFormatFor*): 400 Bad Request."""


class UnprocessablePatch(PatchError):
    """mergepatch.ErrNoListOfLists: 422 with kube's generic message."""


def go_format(value: Any) -> str:
    """Go's %v of a decoded JSON value: kube's patch errors print patches and items this way."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return go_float(value) if isinstance(value, float) else str(value)


_PRIMITIVE_LIST = "invalid patch format of primitive list"
_RETAIN_KEYS_FORMAT = "invalid patch format of retainKeys"
_SET_ELEMENT_ORDER_FORMAT = "invalid patch format of setElementOrder list"


def _no_merge_key(item: Any, key: str) -> PatchError:
    return PatchError(f"map: {go_format(item)} does not contain declared merge key: {key}")


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string" if isinstance(value, str) else "<nil>"


def _bad_arg_type(expected: str, actual: Any) -> PatchError:
    return PatchError(f"expected a {expected}, but received a {_go_type(actual)}")


def _same(a: Any, b: Any) -> bool:
    """Go's == on interface{} values: same dynamic type and value (1 and 1.0 differ)."""
    return _go_type(a) == _go_type(b) and a == b


# --- patch metadata -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Meta:
    strategies: tuple[str, ...] = ()
    merge_key: str = ""


def _lookup(schema: Schema | None, key: str) -> tuple[Schema | None, _Meta]:
    """The schema of field `key` and its patch metadata; unknown fields have neither."""
    if schema is None:
        return None, _Meta()
    child = (schema.get("properties") or {}).get(key)
    if child is None:
        extra = schema.get("additionalProperties")
        child = extra if isinstance(extra, dict) else None
    if child is None:
        return None, _Meta()
    strategies = tuple(s for s in str(child.get("x-kubernetes-patch-strategy") or "").split(",") if s)
    merge_key = str(child.get("x-kubernetes-patch-merge-key") or "")
    keys = child.get("x-kubernetes-list-map-keys") or []
    if not merge_key and _MERGE in strategies and len(keys) == 1:
        merge_key = keys[0]
    return child, _Meta(strategies, merge_key)


def _lookup_slice(schema: Schema | None, key: str) -> tuple[Schema | None, _Meta]:
    child, meta = _lookup(schema, key)
    return (child.get("items") if child is not None else None), meta


def _strategy(strategies: tuple[str, ...]) -> str:
    """extractRetainKeysPatchStrategy, keeping only the non-retainKeys strategy."""
    if len(strategies) == 0:
        return ""
    if len(strategies) == 1:
        return "" if strategies[0] == _RETAIN_KEYS_STRATEGY else strategies[0]
    if len(strategies) == 2 and _RETAIN_KEYS_STRATEGY in strategies:
        return strategies[1] if strategies[0] == _RETAIN_KEYS_STRATEGY else strategies[0]
    raise PatchError(f"unexpected patch strategy: {go_format(list(strategies))}")


# --- maps -----------------------------------------------------------------------------------------


def strategic_merge_patch(
    original: Mapping[str, Any], patch: Mapping[str, Any], schema: Schema
) -> dict[str, Any]:
    """The patched object; neither input is modified."""
    return _merge_map(copy.deepcopy(dict(original)), copy.deepcopy(dict(patch)), schema)


def _merge_map(
    original: dict[str, Any] | None, patch: dict[str, Any], schema: Schema | None
) -> dict[str, Any]:
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)
    for key, value in list(patch.items()):
        delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if delete_list:
            key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST)
        if value is None:
            original.pop(key, None)
            continue
        if key not in original or _kind(original[key]) != _kind(value):
            if not delete_list:
                _take(original, key, value)
            continue
        if isinstance(value, dict):
            child, meta = _lookup(schema, key)
            original[key] = _merge_map_field(original[key], value, child, _strategy(meta.strategies))
        elif isinstance(value, list):
            items, meta = _lookup_slice(schema, key)
            original[key] = _merge_list_field(
                original[key], value, items, _strategy(meta.strategies), meta.merge_key, delete_list
            )
        else:
            _take(original, key, value)
    return original


def _kind(value: Any) -> str:
    return "map" if isinstance(value, dict) else "list" if isinstance(value, list) else "scalar"


def _take(original: dict[str, Any], key: str, value: Any) -> None:
    """A patch value with nothing to merge into: nulls inside it mean nothing, directives go."""
    _discard_nulls(value)
    cleaned, keep = _remove_directives(value)
    if keep:
        original[key] = cleaned
    else:
        original.pop(key, None)


def _map_directive(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if directive == _REPLACE:
        del patch[DIRECTIVE]
        return patch
    if directive == _DELETE:
        return {}
    raise PatchError(f"unknown patch type: {go_format(directive)} in map: {go_format(patch)}")


def _merge_map_field(original: Any, patch: Any, schema: Schema | None, strategy: str) -> Any:
    if strategy == _REPLACE:
        return patch
    return _merge_map(original, patch, schema)


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """(value without $patch directives, whether to keep it at all)."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for k in list(value):
            cleaned, keep = _remove_directives(value[k])
            if keep:
                value[k] = cleaned
            else:
                del value[k]
        return value, True
    if isinstance(value, list):
        kept = [_remove_directives(v) for v in value]
        return [v for v, keep in kept if keep], True
    return value, True


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise BadPatchFormat(
            _PRIMITIVE_LIST if prefix == DELETE_FROM_PRIMITIVE_LIST else _SET_ELEMENT_ORDER_FORMAT
        )
    return rest


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """$retainKeys: fields of `original` not listed are cleared; the patch may set only listed ones."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise BadPatchFormat(_RETAIN_KEYS_FORMAT)
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if key not in retain:
            raise BadPatchFormat(_RETAIN_KEYS_FORMAT)
    for key in [k for k in original if k not in retain]:
        del original[key]


# --- lists ----------------------------------------------------------------------------------------


def _merge_list_field(
    original: list[Any],
    patch: list[Any],
    items: Schema | None,
    strategy: str,
    merge_key: str,
    delete_list: bool,
) -> list[Any]:
    # A deletion list is applied whatever the field's strategy (mergeSliceHandler).
    if strategy == _MERGE or delete_list:
        return _merge_list(original, patch, items, merge_key, delete_list)
    return patch


def _element_kind(*lists: list[Any]) -> str:
    """sliceElementType: every item of every list has one type, and it is not a list."""
    kind = ""
    for values in lists:
        for value in values:
            current = _go_type(value)
            if not kind:
                kind = current
                if isinstance(value, list):
                    raise UnprocessablePatch("lists of lists are not supported")
            elif current != kind:
                raise PatchError(f"list element types are not identical: {go_format(list(lists))}")
    if not kind:
        raise PatchError("no elements in any of the given slices")
    return "map" if kind.startswith("map") else "scalar"


def _merge_list(
    original: list[Any], patch: list[Any], items: Schema | None, merge_key: str, delete_list: bool
) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind != "map":
        if delete_list:
            return [v for v in original if not any(_same(v, d) for d in patch)]
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise PatchError("cannot merge lists without merge key for type map")
        original, patch = _special_elements(original, patch, merge_key)
        merged = _merge_items(original, patch, merge_key, items)
    in_patch, server_only = _partition(merged, patch, merge_key)
    return _normalize_order(in_patch, server_only, patch, original, merge_key, kind)


def _dedupe(values: list[Any]) -> list[Any]:
    """deduplicateScalars, with Go's order (the last item fills a removed duplicate's place)."""
    values = list(values)
    last = len(values) - 1
    i = 0
    while i < last:
        j = i + 1
        while j <= last:
            if _same(values[i], values[j]):
                values[j] = values[last]
                values.pop()
                last -= 1
            else:
                j += 1
        i += 1
    return values


def _special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Items carrying $patch: delete removes from `original`; replace makes the rest the list."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == _DELETE:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            original = [o for o in original if not (merge_key in o and _same(o[merge_key], item[merge_key]))]
        elif directive == _REPLACE:
            replace = True
        elif directive == _MERGE:
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {go_format(directive)} in map: {go_format(item)}")
    return (plain, []) if replace else (original, plain)


def _find(values: list[Any], key: str, value: Any) -> int:
    for i, item in enumerate(values):
        if not isinstance(item, dict):
            raise PatchError(f"value for key {i} is not a map")
        if key in item and _same(item[key], value):
            return i
    return -1


def _merge_items(original: list[Any], patch: list[Any], merge_key: str, items: Schema | None) -> list[Any]:
    merged = list(original)
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        i = _find(merged, merge_key, item[merge_key])
        if i >= 0:
            merged[i] = _merge_map(merged[i], item, items)
        else:
            merged.append(item)
    return merged


def _partition(values: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """(items also named in `by`, the others), each in `values` order."""
    inside: list[Any] = []
    outside: list[Any] = []
    for value in values:
        if merge_key:
            if not isinstance(value, dict):
                raise _bad_arg_type("map[string]interface {}", value)
            if merge_key not in value:
                raise _no_merge_key(value, merge_key)
            found = any(
                isinstance(b, dict) and merge_key in b and _same(b[merge_key], value[merge_key]) for b in by
            )
        else:
            found = any(_same(b, value) for b in by)
        (inside if found else outside).append(value)
    return inside, outside


def _index(values: list[Any], value: Any, merge_key: str, kind: str) -> int:
    def key_of(item: Any) -> Any:
        if kind != "map":
            return item
        return item.get(merge_key) if isinstance(item, dict) else None

    wanted = key_of(value)
    return next((i for i, item in enumerate(values) if _same(key_of(item), wanted)), -1)


def _sort_by(values: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """normalizeSliceOrder; $patch: delete items go last. Insertion sort with Go's comparator."""
    deleted: list[Any] = []
    if kind == "map":
        for item in (*values, *order):
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        deleted = [v for v in values if v.get(DIRECTIVE) == _DELETE]
        values = [v for v in values if v.get(DIRECTIVE) != _DELETE]

    def less(a: Any, b: Any) -> bool:
        ia, ib = _index(order, a, merge_key, kind), _index(order, b, merge_key, kind)
        return ia < ib if ia >= 0 and ib >= 0 else True

    out = list(values)
    for i in range(1, len(out)):
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out + deleted


def _normalize_order(
    in_patch: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """Patch items in patch order, server-only items in server order, interleaved by server order."""
    right = _sort_by(in_patch, patch_order, merge_key, kind)
    left = _sort_by(server_only, server_order, merge_key, kind)
    out: list[Any] = []
    i = j = 0
    while i < len(left) and j < len(right):
        li = _index(server_order, left[i], merge_key, kind)
        ri = _index(server_order, right[j], merge_key, kind)
        if li >= 0 and ri >= 0 and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> None:
    """$setElementOrder/<field>: merge that field's list now and order it as the directive says."""
    for directive in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        key = _extract_key(directive, SET_ELEMENT_ORDER)
        present = ((original.get(key), key in original), (patch.get(key), key in patch))
        for value in (v for v, there in present if there):
            if not isinstance(value, list):
                raise _bad_arg_type("[]interface {}", value)
        # Lists where present (checked just above); an absent side is empty.
        current: list[Any] = original.get(key) or []
        changes: list[Any] = patch.get(key) or []
        items, meta = _lookup_slice(schema, key)
        _check_order(changes or [], order, meta.merge_key)
        if key in original and key not in patch:
            merged = current
        elif key in patch and key not in original:
            merged = _remove_directives(changes)[0]
        elif key in original:
            merged = _merge_list_field(
                current, changes, items, _strategy(meta.strategies), meta.merge_key, False
            )
        else:
            continue
        in_order, server_only = _partition(merged, order, meta.merge_key)
        kind = _element_kind(current or [], changes or [])
        original[key] = _normalize_order(in_order, server_only, order, current or [], meta.merge_key, kind)
        patch.pop(key, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """validatePatchWithSetOrderList: the patch's items appear in the order list, in its order."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
        items = [i for i in patch_list if i.get(DIRECTIVE) != _DELETE]
    p = o = 0
    while p < len(items) and o < len(order):
        if isinstance(items[p], dict) and DIRECTIVE in items[p]:
            p += 1
            continue
        if _key_equal(items[p], order[o], merge_key):
            p += 1
        o += 1
    if p < len(items) and o >= len(order):
        raise PatchError(
            f"the order in patch list:\n{go_format(patch_list)}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{go_format(order)}"
        )


def _key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _same(left[merge_key], right[merge_key])
