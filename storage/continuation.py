"""The opaque `continue` token of paginated lists, byte-compatible with kube's.

A port of k8s.io/apiserver pkg/storage/continue.go: base64 (URL alphabet, no padding) of the JSON
`{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<next key after the key prefix>"}`. Matching the Go
encoding byte for byte means a token minted by kube-apiserver for the same list decodes here and vice
versa, and that clients which (wrongly) inspect tokens see what they are used to.

The caller passes the *directory* key prefix (ending in "/") and the next key to read, which is the
last returned key + "\\x00" — exactly what kube's etcd3 store passes. Decoding defends against path
traversal the way kube does, so a crafted token can never range outside `key_prefix`.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

__all__ = ["InvalidContinue", "decode_continue", "encode_continue"]

_VERSION = "meta.k8s.io/v1"
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_RAW_URL_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

# The messages of continue.go's sentinel errors, so API errors read the same as kube's.
ERR_INVALID_START_RV = (
    "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
)
ERR_EMPTY_START_KEY = "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
ERR_GENERIC_INVALID_KEY = "continue key is not valid"
ERR_UNRECOGNIZED_ENCODED_VERSION = "continue key is not valid: server does not recognize this encoded version"


class InvalidContinue(ValueError):
    """The client sent a token this server cannot use (kube answers 400 BadRequest)."""


def encode_continue(key_after_prefix: str, key_prefix: str, revision: int) -> str:
    """Token for resuming a list at `key_after_prefix` (a full key under `key_prefix`) at `revision`.

    Like Go's EncodeContinue, the key must start with the prefix; anything else is a programming error.
    """
    next_key = key_after_prefix.removeprefix(key_prefix)
    if next_key == key_after_prefix:
        raise ValueError(
            "unable to encode next field: the key and key prefix do not match "
            f"{key_prefix} {key_after_prefix}"
        )
    payload = f'{{"v":"{_VERSION}","rv":{int(revision)},"start":{_go_json_string(next_key)}}}'
    return base64.urlsafe_b64encode(payload.encode("utf-8")).rstrip(b"=").decode("ascii")


def decode_continue(token: str, key_prefix: str) -> tuple[str, int]:
    """The start key (inclusive, already prefixed with `key_prefix`) and the revision of a token."""
    try:
        data = _raw_url_b64decode(token)
    except _CorruptInput as err:
        raise InvalidContinue(f"{ERR_GENERIC_INVALID_KEY}: {err}") from None
    version, revision, start = _unmarshal_token(data)
    if version != _VERSION:
        raise InvalidContinue(f"{ERR_UNRECOGNIZED_ENCODED_VERSION} {version}")
    if revision == 0:
        raise InvalidContinue(ERR_INVALID_START_RV)
    if not start:
        raise InvalidContinue(ERR_EMPTY_START_KEY)
    key = start if start.startswith("/") else "/" + start
    # path.Clean normalisation must be a no-op: "..", ".", "//" or a trailing "/" could otherwise
    # move the range above key_prefix once the prefix is prepended.
    if _clean_rooted_path(key) != key:
        raise InvalidContinue(f"{ERR_GENERIC_INVALID_KEY}: {start}")
    return key_prefix + key[1:], revision


class _CorruptInput(ValueError):
    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")


def _raw_url_b64decode(token: str) -> bytes:
    """Go's base64.RawURLEncoding.DecodeString: no padding allowed, CR/LF ignored, error offsets kept."""
    raw = token.encode("utf-8", "surrogateescape")
    symbols = 0
    for offset, byte in enumerate(raw):
        if byte in (0x0A, 0x0D):
            continue
        if byte not in _RAW_URL_ALPHABET:
            raise _CorruptInput(offset)
        symbols += 1
    if symbols % 4 == 1:
        # A lone symbol in the last quantum carries fewer than 8 bits; Go reports the quantum's start.
        raise _CorruptInput(len(raw) - 1)
    compact = raw.replace(b"\n", b"").replace(b"\r", b"")
    try:
        return base64.urlsafe_b64decode(compact + b"=" * (-len(compact) % 4))
    except binascii.Error as err:  # unreachable after the checks above; kept as a guard
        raise _CorruptInput(0) from err


class _JSONObject(list[tuple[str, Any]]):
    """Key/value pairs in document order, so duplicate and case-folded keys resolve like Go's decoder."""


class _JSONFloat(str):
    """A number literal that is not an integer; Go refuses it for an int64 field."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def _unmarshal_token(data: bytes) -> tuple[str, int, str]:
    """json.Unmarshal into continueToken: case-insensitive names, last duplicate wins, strict types."""
    invalid = ERR_GENERIC_INVALID_KEY
    try:
        document = json.loads(
            _go_lossy_utf8(data),
            object_pairs_hook=_JSONObject,
            parse_float=_JSONFloat,
            parse_constant=_reject_constant,
        )
    except ValueError as err:
        raise InvalidContinue(f"{invalid}: {err}") from None
    if document is None:  # `null` unmarshals into a struct as a no-op
        return "", 0, ""
    if not isinstance(document, _JSONObject):
        kind = _json_kind(document)
        raise InvalidContinue(
            f"{invalid}: json: cannot unmarshal {kind} into Go value of type storage.continueToken"
        )
    version, revision, start = "", 0, ""
    for name, value in document:
        if _fold_equal(name, "v"):
            version = _string_field("v", value, version)
        elif _fold_equal(name, "rv"):
            revision = _int64_field(value, revision)
        elif _fold_equal(name, "start"):
            start = _string_field("start", value, start)
    return version, revision, start


def _string_field(name: str, value: Any, current: str) -> str:
    if value is None:
        return current
    if not isinstance(value, str) or isinstance(value, _JSONFloat):
        raise InvalidContinue(
            f"{ERR_GENERIC_INVALID_KEY}: json: cannot unmarshal {_json_kind(value)} into Go struct field "
            f"continueToken.{name} of type string"
        )
    # Go decodes an unpaired surrogate escape (\ud800) to U+FFFD.
    return "".join("\ufffd" if 0xD800 <= ord(char) <= 0xDFFF else char for char in value)


def _int64_field(value: Any, current: int) -> int:
    if value is None:
        return current
    if isinstance(value, int) and not isinstance(value, bool) and _INT64_MIN <= value <= _INT64_MAX:
        return value
    kind = _json_kind(value)
    if kind == "number":
        kind = f"number {value}"
    raise InvalidContinue(
        f"{ERR_GENERIC_INVALID_KEY}: json: cannot unmarshal {kind} into Go struct field "
        "continueToken.rv of type int64"
    )


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | _JSONFloat):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, _JSONObject):
        return "object"
    return "array"


# Non-ASCII runes whose Unicode simple case folding reaches an ASCII letter (Go's EqualFold).
_FOLDS_TO_ASCII = {"\u017f": "s", "\u212a": "k"}


def _fold_equal(name: str, field: str) -> bool:
    """Go's encoding/json field matching: exact or Unicode simple-fold equal, rune by rune."""
    if len(name) != len(field):
        return False
    for char, want in zip(name, field, strict=True):
        folded = _FOLDS_TO_ASCII.get(char, char.lower() if char.isascii() else char)
        if folded != want:
            return False
    return True


def _go_lossy_utf8(data: bytes) -> str:
    """Decode UTF-8 replacing each invalid byte with U+FFFD, as Go's decoder does inside strings."""
    pieces: list[str] = []
    position = 0
    while position < len(data):
        try:
            pieces.append(data[position:].decode("utf-8"))
            break
        except UnicodeDecodeError as err:
            pieces.append(data[position : position + err.start].decode("utf-8"))
            pieces.append("\ufffd")
            position += err.start + 1
    return "".join(pieces)


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# encoding/json escapes these even though JSON does not require it (HTML safety, JS line separators).
_HTML_AND_JS_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _go_json_string(text: str) -> str:
    """A JSON string literal exactly as Go's json.Marshal (escapeHTML on, Go >= 1.22) writes it."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif char in _HTML_AND_JS_ESCAPES:
            out.append(_HTML_AND_JS_ESCAPES[char])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:  # not encodable as UTF-8; Go writes invalid input as U+FFFD
            out.append("\ufffd")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _clean_rooted_path(key: str) -> str:
    """Go's path.Clean for a path starting with "/": collapse "//", drop ".", resolve ".." at the root."""
    parts: list[str] = []
    for segment in key.split("/")[1:]:
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue
        parts.append(segment)
    return "/" + "/".join(parts)
