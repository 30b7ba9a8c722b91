"""Reading request bodies safely: bounded size and depth, JSON or YAML, duplicate fields found.

Hostile input must end as a 4xx `Status`, never a 500 or a hang: the size cap is kube's 3 MiB,
YAML aliases are refused (an alias bomb is small on the wire and huge in memory), and nesting is
capped so no later recursive step (pruning, encoding) can overflow.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson
import yaml
from aiohttp import web

from apis.meta import errors

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
YAML_TYPE = "application/yaml"


async def read_body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise errors.request_entity_too_large(f"limit is {MAX_BODY_BYTES}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise errors.request_entity_too_large(f"limit is {MAX_BODY_BYTES}")
        chunks.append(chunk)
    return b"".join(chunks)


class _DupDict(dict):
    """A JSON object that remembers which of its keys appeared more than once."""

    __slots__ = ("duplicates",)
    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _DupDict:
    obj = _DupDict()
    dups: list[str] = []
    for key, value in pairs:
        if key in obj and key not in dups:
            dups.append(key)
        obj[key] = value
    obj.duplicates = dups
    return obj


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and records duplicate mapping keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.YAMLError(f"yaml aliases are not allowed (line {event.start_mark.line + 1})")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        self.flatten_mapping(node)
        obj = _DupDict()
        dups: list[str] = []
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):  # a JSON key can only be a string
                raise yaml.constructor.ConstructorError(None, None, "invalid map key", key_node.start_mark)
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):  # as sigs.k8s.io/yaml writes a scalar key: 1, true, null
                key = json.dumps(key) if key is None or isinstance(key, bool) else str(key)
            if key in obj and key not in dups:
                dups.append(key)
            obj[key] = self.construct_object(value_node, deep=deep)
        obj.duplicates = dups
        return obj


def _scalar_as_string(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """YAML timestamps stay strings, as kube's YAML→JSON conversion keeps them."""
    return str(loader.construct_scalar(node))


def _binary_as_string(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """go-yaml decodes `!!binary` into a string of its bytes, and JSON makes invalid UTF-8 U+FFFD."""
    return loader.construct_yaml_binary(node).decode("utf-8", "replace")


def _pairs_as_maps(loader: yaml.SafeLoader, node: yaml.Node) -> list[Any]:
    """`!!omap`/`!!pairs` are a sequence of one-key maps to go-yaml; PyYAML would make tuples."""
    if not isinstance(node, yaml.SequenceNode):
        raise yaml.constructor.ConstructorError(None, None, "expected a sequence", node.start_mark)
    return [loader.construct_object(item, deep=True) for item in node.value]


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _scalar_as_string)
_StrictLoader.add_constructor("tag:yaml.org,2002:binary", _binary_as_string)
# A `!!set` is a map whose values are all null, which is what go-yaml (and so kube) makes of it.
_StrictLoader.add_constructor("tag:yaml.org,2002:set", _StrictLoader.construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:omap", _pairs_as_maps)
_StrictLoader.add_constructor("tag:yaml.org,2002:pairs", _pairs_as_maps)


def decode(raw: bytes, media: str, *, track_duplicates: bool = False) -> tuple[Any, list[str]]:
    """Body bytes → (plain JSON value, duplicate field paths). 400 for anything unparseable or too deep."""
    if not raw.strip():
        raise errors.bad_request("the body of the request is empty")
    if media != YAML_TYPE:
        fast = _plain_json(raw)
        if fast is not None:
            return fast, []
    try:
        if media == YAML_TYPE:
            value = yaml.load(raw, Loader=_StrictLoader)
        elif track_duplicates:
            value = json.loads(raw, object_pairs_hook=_pairs)
        else:
            # orjson refused it (e.g. an escaped lone surrogate, which Go's decoder and plain() make
            # U+FFFD), or it is too deep or has a duplicate: Python's parser decides.
            value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise errors.bad_request(f"error decoding body: json parse error: {e}") from None
    except RecursionError:
        raise errors.bad_request(f"error decoding body: nesting deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        raise errors.bad_request(f"error decoding body: yaml: {e}") from None
    except ValueError as e:  # e.g. an integer literal too long to convert
        raise errors.bad_request(f"error decoding body: {e}") from None
    duplicates = _check_depth_and_duplicates(value)
    return plain(value), duplicates


# Every JSON string token, and whether a colon follows it (then it is an object key). Matching every
# string in turn (the colon is optional) keeps the scan aligned on string boundaries: valid JSON has
# no quote outside strings.
_STRING_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"(\s*:)?')


def _plain_json(raw: bytes) -> Any | None:
    """The common body, parsed by orjson in C: the value when it is already plain JSON data within
    the depth cap and has no duplicate field, else None (the slower parsers then report exactly).

    orjson keeps the last of duplicate keys silently, so the keys it returned are counted against the
    key tokens of the body: equal counts prove there was no duplicate.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    keys = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth >= MAX_DEPTH:
                return None
            keys += len(node)
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            if depth >= MAX_DEPTH:
                return None
            stack.extend((child, depth + 1) for child in node)
        elif type(node) is int and not INT64_MIN <= node <= INT64_MAX:
            return None  # Go makes it a float64: plain() does
    if keys != sum(1 for colon in _STRING_TOKEN.findall(raw) if colon):
        return None
    return value


def _check_depth_and_duplicates(value: Any) -> list[str]:
    """Iterative walk (no recursion, so depth itself cannot crash it)."""
    duplicates: list[str] = []
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise errors.bad_request(f"error decoding body: nesting deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            for key in getattr(node, "duplicates", ()):
                duplicates.append(f"{path}.{key}" if path else key)
            for key, child in node.items():
                stack.append((child, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                stack.append((child, f"{path}[{i}]", depth + 1))
    return sorted(duplicates)


def plain(value: Any) -> Any:
    """Strip the duplicate-tracking dict subclass so the value is plain JSON data again.

    Numbers become what Go's JSON decoding into unstructured data makes of them: an integer that does
    not fit int64 is a float64 (and one too large even for that is a decoding error), so nothing later
    (validation, storage encoding) ever sees an integer it cannot handle. A number that is not finite
    (`1e400`, `NaN`, YAML's `.inf`) is a decoding error too: Go's strconv refuses it and JSON has no way
    to store it. A lone UTF-16 surrogate (`"\\ud800"`, which Python's json and yaml let through) becomes
    U+FFFD, as Go's decoder makes it; left alone it could never be encoded again, not even in an error.
    """
    if isinstance(value, dict):
        return {_text(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise errors.bad_request(f"error decoding body: number {value} out of range")
    if not isinstance(value, int | float | bool | None):  # nothing else is JSON, whatever a loader made
        raise errors.bad_request(f"error decoding body: unsupported value of type {type(value).__name__}")
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        try:
            return float(value)
        except OverflowError:
            raise errors.bad_request(
                f"error decoding body: number {str(value)[:40]}... out of range"
            ) from None
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> str:
    return _SURROGATE.sub("\ufffd", value)
