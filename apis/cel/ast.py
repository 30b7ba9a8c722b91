"""The checked AST of a compiled expression, decoded from the engine's serialized cel.expr.CheckedExpr.

The cost estimator needs the tree; the engine only hands it out as protobuf bytes. Rather than
depend on generated cel-spec classes (not on PyPI), the few messages of cel/expr/syntax.proto that
matter are read straight off the wire format here: field numbers are the proto's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- protobuf wire format --------------------------------------------------------------------------


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: varints and fixed64 as int, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            out.append((number, value))
        elif wire == 1:
            out.append((number, int.from_bytes(buf[i : i + 8], "little")))
            i += 8
        elif wire == 2:
            size, i = _varint(buf, i)
            out.append((number, buf[i : i + size]))
            i += size
        elif wire == 5:
            out.append((number, int.from_bytes(buf[i : i + 4], "little")))
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _first(fields: list[tuple[int, int | bytes]], number: int, default: int | bytes = b"") -> int | bytes:
    for n, v in fields:
        if n == number:
            return v
    return default


def _all(fields: list[tuple[int, int | bytes]], number: int) -> list[bytes]:
    return [v for n, v in fields if n == number and isinstance(v, bytes)]


# --- the tree --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    id: int


@dataclass(frozen=True, slots=True)
class Const(Node):
    kind: str  # null | bool | int | uint | double | string | bytes
    size: int = 0  # length of a string/bytes literal
    text: str = ""  # a string literal (the field name of `x.?field`)


@dataclass(frozen=True, slots=True)
class Ident(Node):
    name: str


@dataclass(frozen=True, slots=True)
class Select(Node):
    operand: Node
    field: str
    test_only: bool  # has(a.b)


@dataclass(frozen=True, slots=True)
class Call(Node):
    function: str
    target: Node | None
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class CreateList(Node):
    elements: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class CreateStruct(Node):
    values: tuple[Node, ...] = field(default=())
    message_name: str = ""  # empty for a map literal


@dataclass(frozen=True, slots=True)
class Comprehension(Node):
    iter_var: str
    iter_range: Node
    accu_var: str
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node


_CONST_KINDS = {1: "null", 2: "bool", 3: "int", 4: "uint", 5: "double", 6: "string", 7: "bytes"}


def _const(node_id: int, buf: bytes) -> Const:
    fields = _fields(buf)
    if not fields:
        return Const(node_id, "null")
    number, value = fields[0]
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) and number == 6 else ""
    size = len(text)
    if isinstance(value, bytes) and number == 7:
        size = len(value)
    return Const(node_id, _CONST_KINDS.get(number, "unknown"), size, text)


def _expr(buf: bytes) -> Node:
    fields = _fields(buf)
    node_id = int(_first(fields, 2, 0))
    for number, value in fields:
        if not isinstance(value, bytes):
            continue
        if number == 3:
            return _const(node_id, value)
        if number == 4:
            return Ident(node_id, bytes(_first(_fields(value), 1)).decode())
        if number == 5:
            sel = _fields(value)
            return Select(
                node_id, _expr(bytes(_first(sel, 1))), bytes(_first(sel, 2)).decode(), bool(_first(sel, 3, 0))
            )
        if number == 6:
            call = _fields(value)
            target = _first(call, 1)
            return Call(
                node_id,
                bytes(_first(call, 2)).decode(),
                _expr(bytes(target)) if target else None,
                tuple(_expr(a) for a in _all(call, 3)),
            )
        if number == 7:
            return CreateList(node_id, tuple(_expr(e) for e in _all(_fields(value), 1)))
        if number == 8:
            entries = [_fields(e) for e in _all(_fields(value), 2)]
            values = [_expr(bytes(_first(e, 4))) for e in entries if _first(e, 4)]
            keys = [_expr(bytes(_first(e, 3))) for e in entries if _first(e, 3)]
            name = bytes(_first(_fields(value), 1)).decode()
            return CreateStruct(node_id, tuple(keys + values), name)
        if number == 9:
            c = _fields(value)
            return Comprehension(
                node_id,
                bytes(_first(c, 1)).decode(),
                _expr(bytes(_first(c, 2))),
                bytes(_first(c, 3)).decode(),
                _expr(bytes(_first(c, 4))),
                _expr(bytes(_first(c, 5))),
                _expr(bytes(_first(c, 6))),
                _expr(bytes(_first(c, 7))),
            )
    return Const(node_id, "null")


def decode_checked(serialized: bytes) -> Node:
    """The expression of a google.protobuf.Any holding a cel.expr.CheckedExpr (field 4: expr)."""
    any_fields = _fields(serialized)
    checked = _fields(bytes(_first(any_fields, 2)))
    return _expr(bytes(_first(checked, 4)))
