"""kube's protobuf wire envelope: the `k8s\\x00` magic followed by a `runtime.Unknown`.

Every `application/vnd.kubernetes.protobuf` body (and every object stored in protobuf by
kube-apiserver) is this envelope around the object's own message, so a client can tell the type
before it decodes the payload (k8s.io/apimachinery pkg/runtime/serializer/protobuf). The envelope is
the generated `runtime.Unknown`, filled the way Go's serializer writes an object (Unknown.NestedMarshalTo):
every field, even empty ones (proto2 presence makes the Python runtime write a field exactly when it
was set), so the bytes equal Go's. Decoding separates
the ways a body can be bad, so a handler can answer each with its own Status: not protobuf at all (a
JSON body sent with the protobuf content type, the wrong magic), and protobuf that does not parse
(truncated, corrupt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import Message

from apis.proto.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb2

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

M = TypeVar("M", bound=Message)


class ProtobufError(ValueError):
    """A body that cannot be read as a kube protobuf object; the message says why, in kube's words."""


class NotProtobufError(ProtobufError):
    """The bytes are not a kube protobuf envelope at all: empty, or without the `k8s\\x00` magic."""


class MalformedProtobufError(ProtobufError):
    """The magic is there but what follows does not parse: truncated or corrupt."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """A decoded `runtime.Unknown`: the object's type and its still-encoded message."""

    api_version: str
    kind: str
    raw: bytes
    content_encoding: str = ""
    content_type: str = ""


def recognizes(data: bytes) -> bool:
    """Whether `data` starts with the protobuf magic (kube's RecognizesData)."""
    return data.startswith(MAGIC)


def encode(envelope: Envelope) -> bytes:
    """The magic and the `runtime.Unknown` of `envelope`, as Go's serializer writes them."""
    unknown = runtime_pb2.Unknown()
    unknown.typeMeta.apiVersion = envelope.api_version
    unknown.typeMeta.kind = envelope.kind
    unknown.raw = envelope.raw
    unknown.contentEncoding = envelope.content_encoding
    unknown.contentType = envelope.content_type
    return MAGIC + unknown.SerializeToString()


def encode_message(api_version: str, kind: str, message: Message) -> bytes:
    """`message` (an ObjectMeta, a PartialObjectMetadataList, a kind's own) in its envelope.

    Deterministic, because Go's marshallers write map entries (labels, annotations) sorted by key.
    """
    return encode(
        Envelope(api_version=api_version, kind=kind, raw=message.SerializeToString(deterministic=True))
    )


def decode(data: bytes) -> Envelope:
    """The envelope of a protobuf body; raises `NotProtobufError` or `MalformedProtobufError`."""
    if not data:
        raise NotProtobufError("empty data")
    if not recognizes(data):
        raise NotProtobufError(
            f"provided data does not appear to be a protobuf message, expected prefix {list(MAGIC)}"
        )
    if len(data) == len(MAGIC):
        raise NotProtobufError("empty body")
    unknown = runtime_pb2.Unknown()
    try:
        unknown.ParseFromString(data[len(MAGIC) :])
    except _ProtobufDecodeError as err:
        raise MalformedProtobufError(f"unable to decode the protobuf envelope: {err}") from err
    return Envelope(
        api_version=_text(unknown.typeMeta.apiVersion, "typeMeta.apiVersion"),
        kind=_text(unknown.typeMeta.kind, "typeMeta.kind"),
        raw=unknown.raw,
        content_encoding=_text(unknown.contentEncoding, "contentEncoding"),
        content_type=_text(unknown.contentType, "contentType"),
    )


def _text(value: str | bytes, field: str) -> str:
    """A proto2 string field as text: the runtime hands back the raw bytes when they are not UTF-8."""
    if isinstance(value, bytes):
        raise MalformedProtobufError(f"unable to decode the protobuf envelope: {field} is not UTF-8")
    return value


def decode_message(data: bytes, message_type: type[M]) -> tuple[Envelope, M]:
    """The envelope of `data` and its payload parsed as `message_type`.

    The caller checks `envelope.kind`/`api_version` against what it expects: which types a body may
    carry is the scheme's business, not the wire format's. kube's messages are proto2, whose strings
    the runtime does not check: one that is not UTF-8 comes back as bytes, for the caller to refuse.
    """
    envelope = decode(data)
    message = message_type()
    try:
        message.ParseFromString(envelope.raw)
    except _ProtobufDecodeError as err:
        raise MalformedProtobufError(
            f"unable to decode {envelope.api_version} {envelope.kind} from protobuf: {err}"
        ) from err
    return envelope, message
