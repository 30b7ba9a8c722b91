"""Converts between an object in its JSON shape and a generated kube protobuf message, both ways.

An object is served in JSON and in protobuf, so the two must say the same thing field for field. The
conversion is read off the message descriptor (go-to-protobuf names each proto field after the Go
field's JSON name) and precomputed once per message type into a plan of field handlers, because it
runs for every object of a protobuf LIST or WATCH.

Two presence rules, because the messages come from two places:

- kube's own types (meta.k8s.io/v1, runtime, intstr) are Go structs marshalled by gogo-protobuf, which
  writes every non-pointer field even when empty and a pointer field only when set. `to_message`
  builds the same message (the same bytes, the same `HasField`), from `GO_POINTER_FIELDS`. Back to
  JSON, `from_message` drops what encoding/json drops (`omitempty`, kept in `GO_JSON_ALWAYS`) in the
  Go struct's field order, which is the .proto's declaration order.
- any other message (a group's own kinds, proto2 `optional` fields) holds exactly the fields its JSON
  had, and gives back exactly those.

kube's types with their own JSON spelling are converted by full name: Time (RFC 3339, seconds; Go's
zero time is an empty message and JSON null), MicroTime (6 fraction digits), Duration (Go's duration
string), FieldsV1 and RawExtension (raw JSON bytes), Verbs (a list), IntOrString (a number or a
string). bytes are base64, maps are written with sorted keys.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from apis.goformat import go_json_string
from apis.runtime.protobuf import MAGIC, ProtobufError

M = TypeVar("M", bound=Message)

META_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1."
RUNTIME = "k8s.io.apimachinery.pkg.runtime."
INTSTR = "k8s.io.apimachinery.pkg.util.intstr."
# The packages whose messages are Go structs marshalled by gogo-protobuf (runtime covers runtime.schema).
GO_PACKAGES = (META_V1, RUNTIME, INTSTR)

# Per Go struct, the proto names of its pointer fields (types.go: `*int64`, `*Time`, `*StatusDetails`):
# gogo writes them only when set. Every other singular field of a GO_PACKAGES message is written
# always; repeated fields and maps have no presence, and bytes are written when not nil (as pointers).
GO_POINTER_FIELDS: dict[str, frozenset[str]] = {
    META_V1 + "ListMeta": frozenset({"remainingItemCount", "shardInfo"}),
    META_V1 + "ObjectMeta": frozenset({"deletionTimestamp", "deletionGracePeriodSeconds"}),
    META_V1 + "OwnerReference": frozenset({"controller", "blockOwnerDeletion"}),
    META_V1 + "ListOptions": frozenset({"timeoutSeconds", "sendInitialEvents"}),
    META_V1 + "DeleteOptions": frozenset(
        {
            "gracePeriodSeconds",
            "preconditions",
            "orphanDependents",
            "propagationPolicy",
            "ignoreStoreReadErrorWithClusterBreakingPotential",
        }
    ),
    META_V1 + "PatchOptions": frozenset({"force"}),
    META_V1 + "Preconditions": frozenset({"uid", "resourceVersion"}),
    META_V1 + "Status": frozenset({"details"}),
    META_V1 + "ManagedFieldsEntry": frozenset({"time", "fieldsV1"}),
}

# Per Go struct, the fields whose JSON tag has no `omitempty`: encoding/json writes them even empty.
# (A non-pointer struct field is written even with `omitempty`; `omitzero` is in GO_JSON_OMITZERO.)
GO_JSON_ALWAYS: dict[str, frozenset[str]] = {
    META_V1 + "GroupResource": frozenset({"group", "resource"}),
    META_V1 + "GroupVersionResource": frozenset({"group", "version", "resource"}),
    META_V1 + "GroupKind": frozenset({"group", "kind"}),
    META_V1 + "GroupVersionKind": frozenset({"group", "version", "kind"}),
    META_V1 + "GroupVersion": frozenset({"group", "version"}),
    META_V1 + "Timestamp": frozenset({"seconds", "nanos"}),
    META_V1 + "ShardInfo": frozenset({"selector"}),
    META_V1 + "OwnerReference": frozenset({"apiVersion", "kind", "name", "uid"}),
    META_V1 + "ApplyOptions": frozenset({"force", "fieldManager"}),
    META_V1 + "List": frozenset({"items"}),
    META_V1 + "APIVersions": frozenset({"versions", "serverAddressByClientCIDRs"}),
    META_V1 + "APIGroupList": frozenset({"groups"}),
    META_V1 + "APIGroup": frozenset({"name", "versions"}),
    META_V1 + "ServerAddressByClientCIDR": frozenset({"clientCIDR", "serverAddress"}),
    META_V1 + "GroupVersionForDiscovery": frozenset({"groupVersion", "version"}),
    META_V1 + "APIResource": frozenset({"name", "singularName", "namespaced", "kind", "verbs"}),
    META_V1 + "APIResourceList": frozenset({"groupVersion", "resources"}),
    META_V1 + "RootPaths": frozenset({"paths"}),
    META_V1 + "LabelSelectorRequirement": frozenset({"key", "operator"}),
    META_V1 + "FieldSelectorRequirement": frozenset({"key", "operator"}),
    META_V1 + "PartialObjectMetadataList": frozenset({"items"}),
    META_V1 + "Condition": frozenset({"type", "status", "lastTransitionTime", "reason", "message"}),
    META_V1 + "WatchEvent": frozenset({"type", "object"}),
}
# Non-pointer struct fields tagged `omitzero`: encoding/json leaves them out when zero.
GO_JSON_OMITZERO: dict[str, frozenset[str]] = {META_V1 + "ObjectMeta": frozenset({"creationTimestamp"})}

# The JSON keys of an inline TypeMeta: in protobuf they travel in the runtime.Unknown envelope.
TYPE_META_KEYS = frozenset({"apiVersion", "kind"})

# Go's zero time.Time as Unix seconds: Time.Unmarshal turns it back into the zero time.
ZERO_TIME_SECONDS = -62135596800
_MAX_SECONDS = 253402300799  # 9999-12-31T23:59:59Z


class ConversionError(ProtobufError):
    """An object that does not fit its message: the message names the field and what was wrong."""


_OMIT = object()  # a from-message handler's answer for "encoding/json would not write this field"

Loader = Callable[[Message, Any, str], None]  # fills a message from a JSON value; the str is its path
Dumper = Callable[[Message], Any]  # the JSON value of a message


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    load: Callable[[Message, Any, str], None]  # sets the field of the parent from the JSON value
    dump: Callable[[Message], Any]  # the JSON value of the field of the parent, or _OMIT
    default: Callable[[Message], None] | None  # writes Go's empty value when the JSON left it out


@dataclass(frozen=True, slots=True)
class _MessagePlan:
    full_name: str
    fields: dict[str, _FieldPlan]  # by JSON name, in the .proto's (the Go struct's) order
    defaults: tuple[tuple[str, Callable[[Message], None]], ...]  # Go's always-written fields
    ignores_type_meta: bool  # the message has no apiVersion/kind: those keys belong to the envelope


_PLANS: dict[str, _MessagePlan] = {}


def to_message(obj: Mapping[str, Any], cls: type[M]) -> M:
    """The message `cls` holding `obj` (a decoded JSON object as the API serves it).

    Raises `ConversionError` for a value of the wrong type, an unknown field, an unparseable time.
    """
    message = cls()
    _load_message(message, obj, "")
    return message


def from_message(message: Message, *, api_version: str = "", kind: str = "") -> dict[str, Any]:
    """The JSON shape of `message`; `api_version` and `kind`, when given, lead as Go's inline TypeMeta."""
    out: dict[str, Any] = {}
    if kind:
        out["kind"] = kind
    if api_version:
        out["apiVersion"] = api_version
    out.update(_dump_message(message))
    return out


def _plan(descriptor: Descriptor) -> _MessagePlan:
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        plan = _build_plan(descriptor)
        _PLANS[descriptor.full_name] = plan
    return plan


def _load_message(message: Message, obj: Any, path: str) -> None:
    if not isinstance(obj, Mapping):
        raise ConversionError(f"{_where(path)}expected an object, got {_json_type(obj)}")
    plan = _plan(message.DESCRIPTOR)
    fields = plan.fields
    for key, value in obj.items():
        field = fields.get(key)
        if field is None:
            if plan.ignores_type_meta and key in TYPE_META_KEYS:
                continue
            raise ConversionError(f'{_where(path)}unknown field "{key}" in {plan.full_name}')
        if value is not None:
            field.load(message, value, f"{path}.{key}" if path else key)
    if plan.defaults:
        _apply_defaults(message, plan)
    else:
        message.SetInParent()


def _apply_defaults(message: Message, plan: _MessagePlan) -> None:
    for name, default in plan.defaults:
        if not message.HasField(name):
            default(message)


def _dump_message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in _plan(message.DESCRIPTOR).fields.items():
        value = field.dump(message)
        if value is not _OMIT:
            out[name] = value
    return out


def _build_plan(descriptor: Descriptor) -> _MessagePlan:
    full_name = descriptor.full_name
    go_struct = full_name.startswith(GO_PACKAGES)
    pointers = GO_POINTER_FIELDS.get(full_name, frozenset())
    json_always = GO_JSON_ALWAYS.get(full_name, frozenset())
    omitzero = GO_JSON_OMITZERO.get(full_name, frozenset())
    fields: dict[str, _FieldPlan] = {}
    defaults: list[tuple[str, Callable[[Message], None]]] = []
    for fd in descriptor.fields:
        repeated = fd.is_repeated
        # Go writes a non-pointer field always (bytes only when not nil, i.e. like a pointer).
        always_written = (
            go_struct and not repeated and fd.name not in pointers and fd.type != FieldDescriptor.TYPE_BYTES
        )
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            plan = _map_field(fd)
        elif repeated:
            plan = _repeated_field(fd, go_struct and fd.name in json_always)
        elif fd.message_type is not None:
            # encoding/json writes a non-pointer struct even with omitempty, unless omitzero.
            written = go_struct and (fd.name in json_always or (always_written and fd.name not in omitzero))
            plan = _message_field(fd, always_written, written, go_struct and fd.name in omitzero)
        else:
            plan = _scalar_field(fd, go_struct, go_struct and fd.name in json_always)
        fields[fd.name] = plan
        if always_written and plan.default is not None:
            defaults.append((fd.name, plan.default))
    return _MessagePlan(
        full_name=full_name,
        fields=fields,
        defaults=tuple(defaults),
        ignores_type_meta=not (TYPE_META_KEYS & fields.keys()),
    )


# --- scalars ---------------------------------------------------------------------------------------

_INT_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, 2**64 - 1),
}


def _scalar_reader(fd: FieldDescriptor) -> Callable[[Any, str], Any]:
    """JSON value -> the Python value the runtime stores for the field, refusing what Go refuses."""
    cpp = fd.cpp_type
    if fd.type == FieldDescriptor.TYPE_BYTES:

        def read_bytes(value: Any, path: str) -> bytes:
            if not isinstance(value, str):
                raise ConversionError(f"{_where(path)}expected a base64 string, got {_json_type(value)}")
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as err:
                raise ConversionError(f"{_where(path)}illegal base64 data: {err}") from err

        return read_bytes
    if cpp == FieldDescriptor.CPPTYPE_STRING:

        def read_string(value: Any, path: str) -> str:
            if not isinstance(value, str):
                raise ConversionError(f"{_where(path)}expected a string, got {_json_type(value)}")
            return value

        return read_string
    if cpp == FieldDescriptor.CPPTYPE_BOOL:

        def read_bool(value: Any, path: str) -> bool:
            if not isinstance(value, bool):
                raise ConversionError(f"{_where(path)}expected a boolean, got {_json_type(value)}")
            return value

        return read_bool
    if cpp in _INT_RANGES:
        low, high = _INT_RANGES[cpp]

        def read_int(value: Any, path: str) -> int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConversionError(f"{_where(path)}expected an integer, got {_json_type(value)}")
            if not low <= value <= high:
                raise ConversionError(f"{_where(path)}{value} is out of range for {fd.full_name}")
            return value

        return read_int
    if cpp in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):

        def read_float(value: Any, path: str) -> float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConversionError(f"{_where(path)}expected a number, got {_json_type(value)}")
            return float(value)

        return read_float
    if cpp == FieldDescriptor.CPPTYPE_ENUM:

        def read_enum(value: Any, path: str) -> int:
            number = fd.enum_type.values_by_name.get(value) if isinstance(value, str) else None
            if number is None:
                raise ConversionError(f"{_where(path)}not a value of {fd.enum_type.full_name}: {value!r}")
            return int(number.number)

        return read_enum
    raise TypeError(f"unsupported field type of {fd.full_name}")


def _scalar_writer(fd: FieldDescriptor) -> Callable[[Any], Any]:
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return lambda value: base64.b64encode(value).decode("ascii")
    if fd.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        return lambda value: fd.enum_type.values_by_number[value].name
    return _identity


def _identity(value: Any) -> Any:
    return value


def _scalar_field(fd: FieldDescriptor, go_struct: bool, json_always: bool) -> _FieldPlan:
    name = fd.name
    read = _scalar_reader(fd)
    write = _scalar_writer(fd)
    empty = fd.default_value

    def load(message: Message, value: Any, path: str) -> None:
        setattr(message, name, read(value, path))

    def default(message: Message) -> None:
        setattr(message, name, empty)

    if not go_struct:

        def dump_present(message: Message) -> Any:
            return write(getattr(message, name)) if message.HasField(name) else _OMIT

        return _FieldPlan(name, load, dump_present, None)
    if json_always:
        return _FieldPlan(name, load, lambda message: write(getattr(message, name)), default)

    # A pointer (and a []byte) is written when set, even to an empty value; a plain value when not empty.
    pointer = fd.type == FieldDescriptor.TYPE_BYTES or name in GO_POINTER_FIELDS.get(
        fd.containing_type.full_name, frozenset()
    )

    def dump_omitempty(message: Message) -> Any:
        if not message.HasField(name):
            return _OMIT
        value = getattr(message, name)
        return write(value) if value or pointer else _OMIT

    return _FieldPlan(name, load, dump_omitempty, default)


def _repeated_field(fd: FieldDescriptor, json_always: bool) -> _FieldPlan:
    name = fd.name
    if fd.message_type is not None:
        element_load, element_dump = _message_codec(fd.message_type)

        def load_messages(message: Message, value: Any, path: str) -> None:
            if not isinstance(value, list):
                raise ConversionError(f"{_where(path)}expected an array, got {_json_type(value)}")
            container = getattr(message, name)
            for index, item in enumerate(value):
                element = container.add()
                if item is not None:
                    element_load(element, item, f"{path}[{index}]")
                elif _plan(fd.message_type).defaults:
                    _apply_defaults(element, _plan(fd.message_type))

        def dump_messages(message: Message) -> Any:
            container = getattr(message, name)
            if not container and not json_always:
                return _OMIT
            return [element_dump(element) for element in container]

        return _FieldPlan(name, load_messages, dump_messages, None)
    read = _scalar_reader(fd)
    write = _scalar_writer(fd)

    def load_scalars(message: Message, value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise ConversionError(f"{_where(path)}expected an array, got {_json_type(value)}")
        getattr(message, name).extend([read(item, f"{path}[{i}]") for i, item in enumerate(value)])

    def dump_scalars(message: Message) -> Any:
        container = getattr(message, name)
        if not container and not json_always:
            return _OMIT
        return [write(item) for item in container]

    return _FieldPlan(name, load_scalars, dump_scalars, None)


def _map_field(fd: FieldDescriptor) -> _FieldPlan:
    name = fd.name
    key_fd = fd.message_type.fields_by_name["key"]
    value_fd = fd.message_type.fields_by_name["value"]
    read_key = _scalar_reader(key_fd)
    if key_fd.cpp_type != FieldDescriptor.CPPTYPE_STRING:
        raise TypeError(f"map {fd.full_name}: only string keys have a JSON spelling")

    if value_fd.message_type is not None:
        value_load, value_dump = _message_codec(value_fd.message_type)

        def load_message_map(message: Message, value: Any, path: str) -> None:
            if not isinstance(value, Mapping):
                raise ConversionError(f"{_where(path)}expected an object, got {_json_type(value)}")
            container = getattr(message, name)
            for key, item in value.items():
                entry = container[read_key(key, path)]
                if item is not None:
                    value_load(entry, item, f"{path}[{key}]")

        def dump_message_map(message: Message) -> Any:
            container = getattr(message, name)
            if not container:
                return _OMIT
            return {key: value_dump(container[key]) for key in sorted(container)}

        return _FieldPlan(name, load_message_map, dump_message_map, None)
    read_value = _scalar_reader(value_fd)
    write_value = _scalar_writer(value_fd)

    def load_map(message: Message, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise ConversionError(f"{_where(path)}expected an object, got {_json_type(value)}")
        container = getattr(message, name)
        for key, item in value.items():
            # Go's decoder stores a JSON null as the value type's zero value.
            container[read_key(key, path)] = (
                value_fd.default_value if item is None else read_value(item, f"{path}[{key}]")
            )

    def dump_map(message: Message) -> Any:
        container = getattr(message, name)
        if not container:
            return _OMIT
        return {key: write_value(container[key]) for key in sorted(container)}

    return _FieldPlan(name, load_map, dump_map, None)


def _message_field(
    fd: FieldDescriptor, always_written: bool, json_written: bool, omitzero: bool
) -> _FieldPlan:
    name = fd.name
    element_load, element_dump = _message_codec(fd.message_type)
    special = _SPECIAL.get(fd.message_type.full_name)
    is_zero = special.is_zero if special is not None else None

    def load(message: Message, value: Any, path: str) -> None:
        element_load(getattr(message, name), value, path)

    def default(message: Message) -> None:
        sub = getattr(message, name)
        sub.SetInParent()
        sub_plan = _plan(fd.message_type)
        if sub_plan.defaults and special is None:
            _apply_defaults(sub, sub_plan)

    def dump(message: Message) -> Any:
        if not message.HasField(name):
            if not json_written or omitzero:
                return _OMIT
            return None if special is not None else _dump_message(getattr(message, name))
        sub = getattr(message, name)
        if omitzero and is_zero is not None and is_zero(sub):
            return _OMIT
        return element_dump(sub)

    return _FieldPlan(name, load, dump, default if always_written else None)


def _message_codec(descriptor: Descriptor) -> tuple[Loader, Dumper]:
    special = _SPECIAL.get(descriptor.full_name)
    if special is not None:
        return special.load, special.dump
    return _load_message, _dump_message


# --- kube's types with their own JSON -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Special:
    load: Loader
    dump: Dumper
    is_zero: Callable[[Message], bool] | None = None


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))\Z"
)


def _parse_rfc3339(value: Any, path: str) -> tuple[int, int]:
    """Unix seconds and nanoseconds of an RFC 3339 time, as Go's time.Parse(time.RFC3339, ...) reads it."""
    if not isinstance(value, str):
        raise ConversionError(f"{_where(path)}expected an RFC 3339 time string, got {_json_type(value)}")
    try:
        return _rfc3339(value)
    except ValueError as err:
        raise ConversionError(f'{_where(path)}parsing time "{value}": {err}') from None


@functools.lru_cache(maxsize=4096)
def _rfc3339(value: str) -> tuple[int, int]:
    # Cached: the objects of a list share a handful of timestamps (creation, managedFields).
    match = _RFC3339.match(value)
    if match is None:
        raise ValueError("not an RFC 3339 time")
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year or 2000, month)[1]):
        raise ValueError("day out of range")
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError("time out of range")
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if match[9]:
        offset = int(match[10]) * 3600 + int(match[11]) * 60
        seconds -= offset if match[9] == "+" else -offset
    nanos = int((match[7] or "").ljust(9, "0"))
    return seconds, nanos


def _format_rfc3339(seconds: int, micros: int | None = None) -> str:
    if not ZERO_TIME_SECONDS <= seconds <= _MAX_SECONDS:
        raise ConversionError(f"time {seconds}s since the epoch is outside the years 1 to 9999")
    return _format_seconds(seconds) + ("Z" if micros is None else f".{micros:06d}Z")


@functools.lru_cache(maxsize=4096)
def _format_seconds(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    year, month, day = _civil(days)
    return f"{year:04d}-{month:02d}-{day:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"


def _civil(days: int) -> tuple[int, int, int]:
    """Year, month, day of a day count since 1970-01-01 (Howard Hinnant's civil_from_days)."""
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _time_is_zero(message: Message) -> bool:
    # Time.Unmarshal: no bytes is the zero time, and so is time.Unix(ZERO_TIME_SECONDS, 0).
    return (not message.HasField("seconds") and not message.HasField("nanos")) or (
        message.seconds == ZERO_TIME_SECONDS and message.nanos == 0
    )


def _load_time(message: Message, value: Any, path: str) -> None:
    # Time.ProtoTime keeps whole seconds; Timestamp's marshaller writes seconds and nanos always.
    seconds, _ = _parse_rfc3339(value, path)
    message.SetInParent()
    if seconds != ZERO_TIME_SECONDS:
        message.seconds = seconds
        message.nanos = 0


def _dump_time(message: Message) -> Any:
    return None if _time_is_zero(message) else _format_rfc3339(message.seconds)


def _load_micro_time(message: Message, value: Any, path: str) -> None:
    seconds, nanos = _parse_rfc3339(value, path)
    message.SetInParent()
    if seconds != ZERO_TIME_SECONDS or nanos:
        message.seconds = seconds
        message.nanos = nanos - nanos % 1000


def _dump_micro_time(message: Message) -> Any:
    if _time_is_zero(message):
        return None
    return _format_rfc3339(message.seconds, message.nanos // 1000)


def _load_fields_v1(message: Message, value: Any, path: str) -> None:
    # The raw bytes are the JSON text itself, as Go's decoder kept it. A fieldsV1 tree is only
    # objects, so the C encoder writes it as Go does once the characters Go escapes are fixed up.
    if not isinstance(value, dict):
        raise ConversionError(f"{_where(path)}expected an object, got {_json_type(value)}")
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        raw = text.encode()
    except (TypeError, ValueError, UnicodeEncodeError):
        raw = _raw_json(value, path).encode()
    else:
        if _GO_ESCAPED.search(text) is not None:
            raw = _raw_json(value, path).encode()
    message.Raw = raw


def _load_raw_extension(message: Message, value: Any, path: str) -> None:
    message.raw = _raw_json(value, path).encode()


# What json.dumps writes otherwise than Go's encoding/json in a tree of objects: HTML characters and
# U+2028/U+2029 (escaped by Go), lone surrogates (U+FFFD in Go). (Numbers have no place in fieldsV1.)
_GO_ESCAPED = re.compile("[<>&\\u2028\\u2029\\ud800-\\udfff]")


def _dump_raw_json(message: Message) -> Any:
    raw: bytes = message.Raw if message.DESCRIPTOR.fields_by_name.get("Raw") is not None else message.raw
    if not raw:
        return None
    if raw.startswith(MAGIC):
        raise ConversionError(
            "the embedded object is protobuf, not JSON: decode it with apis.runtime.protobuf.decode_message"
        )
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as err:
        raise ConversionError(f"the embedded object is not valid JSON: {err}") from err


def _raw_json(value: Any, path: str) -> str:
    """Compact JSON in the value's own key order, Go's string escapes (what a Go client sent)."""
    if isinstance(value, str):
        return go_json_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConversionError(f"{_where(path)}{value} is not a JSON number")
        return json.dumps(int(value)) if value.is_integer() and abs(value) < 1e21 else json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{go_json_string(k)}:{_raw_json(v, path)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_raw_json(v, path) for v in value) + "]"
    raise ConversionError(f"{_where(path)}not a JSON value: {type(value).__name__}")


def _load_verbs(message: Message, value: Any, path: str) -> None:
    if not isinstance(value, list) or not all(isinstance(verb, str) for verb in value):
        raise ConversionError(f"{_where(path)}expected an array of strings, got {_json_type(value)}")
    message.SetInParent()
    message.items.extend(value)


def _dump_verbs(message: Message) -> Any:
    return list(message.items)


def _load_duration(message: Message, value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise ConversionError(f"{_where(path)}expected a duration string, got {_json_type(value)}")
    message.duration = parse_go_duration(value, path)


def _dump_duration(message: Message) -> Any:
    return format_go_duration(message.duration)


def _load_int_or_string(message: Message, value: Any, path: str) -> None:
    # IntOrString's marshaller writes type, intVal and strVal always.
    if isinstance(value, str):
        message.type, message.intVal, message.strVal = 1, 0, value
    elif isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31:
        message.type, message.intVal, message.strVal = 0, value, ""
    else:
        raise ConversionError(f"{_where(path)}expected an int32 or a string, got {_json_type(value)}")


def _dump_int_or_string(message: Message) -> Any:
    return message.strVal if message.type == 1 else message.intVal


_SPECIAL: dict[str, _Special] = {
    META_V1 + "Time": _Special(_load_time, _dump_time, _time_is_zero),
    META_V1 + "MicroTime": _Special(_load_micro_time, _dump_micro_time, _time_is_zero),
    META_V1 + "Duration": _Special(_load_duration, _dump_duration),
    META_V1 + "FieldsV1": _Special(_load_fields_v1, _dump_raw_json),
    META_V1 + "Verbs": _Special(_load_verbs, _dump_verbs),
    RUNTIME + "RawExtension": _Special(_load_raw_extension, _dump_raw_json),
    INTSTR + "IntOrString": _Special(_load_int_or_string, _dump_int_or_string),
}


# --- Go durations ---------------------------------------------------------------------------------

_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5
    "μs": 1_000,  # U+03BC
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str, path: str = "") -> int:
    """Nanoseconds of a Go duration string ("1h2m3.5s"), as time.ParseDuration reads it."""
    body = text[1:] if text[:1] in "+-" else text
    negative = text.startswith("-")
    if body == "0":
        return 0
    total, position = 0, 0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None or not (match[1] or match[2]):
            raise ConversionError(f'{_where(path)}time: invalid duration "{text}"')
        unit = _DURATION_UNITS[match[3]]
        whole = int(match[1] or "0") * unit
        fraction = match[2] or ""
        total += whole + (int(fraction) * unit // 10 ** len(fraction) if fraction else 0)
        position = match.end()
    if not body or total > 2**63 - 1 + negative:
        raise ConversionError(f'{_where(path)}time: invalid duration "{text}"')
    return -total if negative else total


def format_go_duration(nanos: int) -> str:
    """Go's Duration.String() of a nanosecond count: "1h2m3.5s", "1.5ms", "0s"."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    value = abs(nanos)
    if value < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if value < size * 1000:
                return sign + _decimal(value, size) + unit
    hours, rest = divmod(value, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _where(path: str) -> str:
    return f"{path}: " if path else ""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
