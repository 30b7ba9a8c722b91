"""kube's protobuf for the resource endpoints: objects, lists, errors, watch frames and request bodies.

The wire format itself (the `k8s\\x00` envelope) is apis/runtime/protobuf.py and the JSON <-> message
conversion apis/runtime/proto_json.py; this module decides what goes in them, as k8s.io/apiserver's
handlers do. An object's message bytes are made once per version (and once for metadata only) and
kept on its StoredObject beside its JSON, only after some client asked for protobuf: a LIST joins the
items' kept bytes (kube's streaming list encoder) and a watch event's frame is made once for every
watcher of its version and format. docs/protobuf.md gives the layout as the Go server writes it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.internal.decoder import _DecodeVarint as _decode_varint
from google.protobuf.internal.encoder import TagBytes, _VarintBytes
from google.protobuf.internal.wire_format import WIRETYPE_LENGTH_DELIMITED
from google.protobuf.message import DecodeError, Message

from apis.meta import errors
from apis.proto.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_pb2
from apis.proto.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb2
from apis.runtime import proto_kinds
from apis.runtime import protobuf as wire
from apis.runtime.proto_json import from_message, to_message
from apis.runtime.protobuf import MAGIC, ProtobufError
from registry.generic.cache.stored import StoredObject
from registry.generic.options import ObjectList
from server.endpoints.decode import DecodingError
from server.endpoints.negotiation import PROTOBUF, Output, negotiate_output
from server.endpoints.scope import ResourceScope
from server.endpoints.table import partial_object_metadata

META_GROUP = "meta.k8s.io"
WATCH_CONTENT_TYPE = f"{PROTOBUF};stream=watch"
PARTIAL = ("PartialObjectMetadata", "PartialObjectMetadataList")

_LEN_PREFIX = struct.Struct(">I")  # apimachinery's LengthDelimitedFramer: 4 bytes, big-endian


def kind_messages(scope: ResourceScope) -> tuple[type[Message], type[Message]] | None:
    """The kind's message and its list's in the URL's version, or None: the group generated none."""
    return proto_kinds.kind_messages(scope.group, scope.version, scope.kind)


def go_type(scope: ResourceScope) -> str:
    """How Go names the kind's type in its errors (`*v1alpha1.Flunder`)."""
    return f"*{scope.version}.{scope.kind.kind}"


def negotiate(accept: str | None, scope: ResourceScope, allow_transforms: tuple[str, ...]) -> Output:
    """negotiate_output for this resource: a plain protobuf entry counts only when the kind has
    messages (the meta types always have). A JSON client pays one comparison."""
    output = negotiate_output(accept, allow_transforms=allow_transforms, protobuf=True)
    if output.media == PROTOBUF and not output.transform and kind_messages(scope) is None:
        output = negotiate_output(
            accept, allow_transforms=allow_transforms, protobuf=True, no_protobuf=go_type(scope)
        )
    return output


def _serialize(message: Message) -> bytes:
    """Deterministic: Go writes map entries (labels, annotations) sorted by key."""
    return message.SerializeToString(deterministic=True)


def _messages(scope: ResourceScope) -> tuple[type[Message], type[Message]]:
    messages = kind_messages(scope)
    if messages is None:  # negotiate() never picks protobuf for such a kind
        raise errors.not_acceptable(
            f"object {go_type(scope)} does not implement the protobuf marshalling interface "
            "and cannot be encoded to a protobuf message"
        )
    return messages


def _type_meta(scope: ResourceScope, output: Output, *, listed: bool) -> tuple[str, str]:
    """apiVersion and kind of the answer's envelope."""
    if output.transform in PARTIAL:
        kind = "PartialObjectMetadataList" if listed else "PartialObjectMetadata"
        return f"{META_GROUP}/{output.transform_version}", kind
    return scope.api_version, scope.kind.list_kind if listed else scope.kind.kind


# Every list message has its items as field 2 (kube's lists, and proto_schema's `<Kind>List`), so an
# object's message is kept as a list element, (tag, length, bytes): a LIST joins them as they are.
ITEMS_FIELD = 2
_ITEM_TAG = TagBytes(ITEMS_FIELD, WIRETYPE_LENGTH_DELIMITED)


def _as_item(message: bytes) -> bytes:
    return _ITEM_TAG + _VarintBytes(len(message)) + message


def _item_message(item: bytes) -> bytes:
    """The object's message out of its kept list element (what a GET and a watch event send)."""
    length, start = _decode_varint(item, len(_ITEM_TAG))
    return item[start : start + length]


def item_encoder(scope: ResourceScope, output: Output) -> tuple[str, Callable[[StoredObject], bytes]]:
    """The memo key and the encoder of an object's list element in the URL's version (or of its
    PartialObjectMetadata, one message in meta v1 and v1beta1: one memo serves both), resolved once
    per request rather than per object of a LIST."""
    version = scope.version
    if output.transform in PARTIAL:

        def partial(o: StoredObject) -> bytes:
            meta = partial_object_metadata(o.versioned(version), f"{META_GROUP}/v1")
            return _as_item(_serialize(to_message(meta, meta_pb2.PartialObjectMetadata)))

        return f"protobuf/{version}/meta", partial
    cls = _messages(scope)[0]
    return f"protobuf/{version}", lambda o: _as_item(_serialize(to_message(o.versioned(version), cls)))


def object_message(scope: ResourceScope, obj: StoredObject, output: Output) -> bytes:
    """The object's message bytes in the URL's version (or its PartialObjectMetadata), from its memo."""
    return _item_message(obj.encoded(*item_encoder(scope, output)))


def object_body(scope: ResourceScope, obj: StoredObject, output: Output) -> bytes:
    """A GET's body: the object's kept message bytes in their envelope."""
    api_version, kind = _type_meta(scope, output, listed=False)
    return wire.encode(wire.Envelope(api_version, kind, object_message(scope, obj, output)))


def dict_body(
    scope: ResourceScope, data: Mapping[str, Any], output: Output, *, listed: bool = False
) -> bytes:
    """A write's answer: the object (or with `listed` a deletecollection's list) as a dict in the
    URL's version, or its metadata only."""
    api_version, kind = _type_meta(scope, output, listed=listed)
    if output.transform in PARTIAL:
        cls: type[Message] = meta_pb2.PartialObjectMetadataList if listed else meta_pb2.PartialObjectMetadata
    else:
        cls = _messages(scope)[1 if listed else 0]
    return wire.encode_message(api_version, kind, to_message(data, cls))


def list_parts(scope: ResourceScope, result: ObjectList, meta: dict[str, Any], output: Output) -> list[bytes]:
    """A LIST's body as parts to send in order: the envelope's head, the ListMeta, each item's kept
    message bytes as one more element of the repeated `items` field, the envelope's tail.

    Protobuf's encoding of a repeated message field is the concatenation of its elements (tag,
    length, bytes), so the parts are byte for byte the list message serialized whole (kube's
    streaming list encoder writes lists this way too), without a list message in memory."""
    api_version, kind = _type_meta(scope, output, listed=True)
    list_cls = meta_pb2.PartialObjectMetadataList if output.transform in PARTIAL else _messages(scope)[1]
    fields = list_cls.DESCRIPTOR.fields_by_name
    assert fields["items"].number == ITEMS_FIELD, list_cls
    meta_tag = TagBytes(fields["metadata"].number, WIRETYPE_LENGTH_DELIMITED)
    list_meta = _serialize(to_message(meta, meta_pb2.ListMeta))
    key, make = item_encoder(scope, output)
    parts = [meta_tag + _VarintBytes(len(list_meta)) + list_meta]
    parts += [obj.encoded(key, make) for obj in result.items]
    size = sum(map(len, parts))
    # The envelope (runtime.Unknown: typeMeta 1, raw 2, contentEncoding 3, contentType 4) around
    # the parts, its other fields serialized by the runtime as encode() writes them.
    head = runtime_pb2.Unknown()
    head.typeMeta.apiVersion, head.typeMeta.kind = api_version, kind
    raw_tag = TagBytes(runtime_pb2.Unknown.DESCRIPTOR.fields_by_name["raw"].number, WIRETYPE_LENGTH_DELIMITED)
    tail = runtime_pb2.Unknown(contentEncoding="", contentType="")
    return [MAGIC + head.SerializeToString() + raw_tag + _VarintBytes(size), *parts, tail.SerializeToString()]


def status_body(status: Mapping[str, Any]) -> bytes:
    """A `Status` (an error's body) as kube writes it to a protobuf client: v1 Status in its envelope."""
    return wire.encode_message("v1", "Status", to_message(status, meta_pb2.Status))


def frame(event_type: str, envelope: bytes) -> bytes:
    """One watch event in kube's protobuf stream: a 4-byte big-endian length, then a bare WatchEvent
    (no magic: the stream serializer is the raw one) whose object's raw bytes are the object's own
    envelope, the same bytes a GET of it answers."""
    event = meta_pb2.WatchEvent(type=event_type)
    event.object.raw = envelope
    data = event.SerializeToString()
    return _LEN_PREFIX.pack(len(data)) + data


def bookmark_body(scope: ResourceScope, output: Output, bookmark: Mapping[str, Any]) -> bytes:
    """A BOOKMARK's object: the negotiated kind holding only metadata (resourceVersion, and the
    initial-events-end annotation); as for any Go object, its ObjectMeta's fields are all written."""
    return dict_body(scope, {"metadata": bookmark["metadata"]}, output)


def decode_body(scope: ResourceScope, raw: bytes) -> dict[str, Any]:
    """A create or update body in protobuf, as the JSON object the decode path takes from there
    (defaulting, pruning and validation are the same). An envelope with no apiVersion/kind is the
    URL's, as kube's decoder defaults them; another version or kind is refused as a JSON body's is."""
    cls = _messages(scope)[0]
    try:
        envelope = wire.decode(raw)
    except ProtobufError as err:
        # kube's transformDecodeError when the body's type could not be read.
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {scope.kind.kind}): {err} "
            f"({_summary(raw)})"
        ) from None
    api_version = envelope.api_version or scope.api_version
    kind = envelope.kind or scope.kind.kind
    version = api_version.rpartition("/")[2]
    if envelope.content_encoding:
        raise DecodingError(
            f"unsupported content encoding {envelope.content_encoding!r}", kind, version
        ).status(scope)
    if kind != scope.kind.kind:
        raise DecodingError(
            f"no kind {kind!r} is registered for version {api_version!r}", kind, version
        ).status(scope)
    message = cls()
    try:
        message.ParseFromString(envelope.raw)
        return from_message(message, api_version=api_version, kind=kind)
    except DecodeError as err:
        raise DecodingError(f"unable to decode protobuf: {err}", kind, version).status(scope) from None
    except ProtobufError as err:  # a value with no JSON form (conversion)
        raise DecodingError(str(err), kind, version).status(scope) from None


def _summary(data: bytes, limit: int = 30) -> str:
    """kube's summarizeData: a JSON object's start as text, anything else in hex."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data[:limit].decode("utf-8", "replace")
        return text + " ..." if len(data) > limit else text
    return data[:limit].hex() + " ..." if len(data) > limit else data.hex()
