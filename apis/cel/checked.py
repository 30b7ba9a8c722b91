"""The engine's checked expression (cel.expr.CheckedExpr) as editable protobuf messages.

Some of kube's results cannot cross the Python binding: a CEL optional cannot be passed in as a
variable nor returned from a Python function. The checker handles them fine (optional types are
declared through the engine's YAML config), so engine.py type-checks the expression as written and
then edits the checked tree before planning it: each read of an optional variable and each call of
an optional-returning function becomes `x[?0]` over a zero- or one-element list, which the engine's
own optional library turns into `optional.none()` / `optional.of(v)`. (apis/cel/iteration.py edits
it too, to drive macros from Python.) The edit needs the tree as messages; cel-spec's generated
classes are not on PyPI, so the messages of cel/expr/syntax.proto and checked.proto that matter
are declared here from descriptors (field numbers are the protos'); any field not declared
survives a parse and re-serialize as an unknown field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "k8s_cel_checked"

# message → [(field, number, proto type, message type or "", repeated)]; "map:K:V" for map fields.
_MESSAGES: dict[str, list[tuple[str, int, int, str, bool]]] = {
    "Any": [("type_url", 1, _F.TYPE_STRING, "", False), ("value", 2, _F.TYPE_BYTES, "", False)],
    "Constant": [
        ("null_value", 1, _F.TYPE_INT32, "", False),
        ("bool_value", 2, _F.TYPE_BOOL, "", False),
        ("int64_value", 3, _F.TYPE_INT64, "", False),
        ("uint64_value", 4, _F.TYPE_UINT64, "", False),
        ("double_value", 5, _F.TYPE_DOUBLE, "", False),
        ("string_value", 6, _F.TYPE_STRING, "", False),
        ("bytes_value", 7, _F.TYPE_BYTES, "", False),
    ],
    "Ident": [("name", 1, _F.TYPE_STRING, "", False)],
    "Select": [
        ("operand", 1, _F.TYPE_MESSAGE, "Expr", False),
        ("field", 2, _F.TYPE_STRING, "", False),
        ("test_only", 3, _F.TYPE_BOOL, "", False),
    ],
    "Call": [
        ("target", 1, _F.TYPE_MESSAGE, "Expr", False),
        ("function", 2, _F.TYPE_STRING, "", False),
        ("args", 3, _F.TYPE_MESSAGE, "Expr", True),
    ],
    "CreateList": [
        ("elements", 1, _F.TYPE_MESSAGE, "Expr", True),
        ("optional_indices", 2, _F.TYPE_INT32, "", True),
    ],
    "Entry": [
        ("id", 1, _F.TYPE_INT64, "", False),
        ("field_key", 2, _F.TYPE_STRING, "", False),
        ("map_key", 3, _F.TYPE_MESSAGE, "Expr", False),
        ("value", 4, _F.TYPE_MESSAGE, "Expr", False),
        ("optional_entry", 5, _F.TYPE_BOOL, "", False),
    ],
    "CreateStruct": [
        ("message_name", 1, _F.TYPE_STRING, "", False),
        ("entries", 2, _F.TYPE_MESSAGE, "Entry", True),
    ],
    "Comprehension": [
        ("iter_var", 1, _F.TYPE_STRING, "", False),
        ("iter_range", 2, _F.TYPE_MESSAGE, "Expr", False),
        ("accu_var", 3, _F.TYPE_STRING, "", False),
        ("accu_init", 4, _F.TYPE_MESSAGE, "Expr", False),
        ("loop_condition", 5, _F.TYPE_MESSAGE, "Expr", False),
        ("loop_step", 6, _F.TYPE_MESSAGE, "Expr", False),
        ("result", 7, _F.TYPE_MESSAGE, "Expr", False),
        ("iter_var2", 8, _F.TYPE_STRING, "", False),
    ],
    "Expr": [
        ("id", 2, _F.TYPE_INT64, "", False),
        ("const_expr", 3, _F.TYPE_MESSAGE, "Constant", False),
        ("ident_expr", 4, _F.TYPE_MESSAGE, "Ident", False),
        ("select_expr", 5, _F.TYPE_MESSAGE, "Select", False),
        ("call_expr", 6, _F.TYPE_MESSAGE, "Call", False),
        ("list_expr", 7, _F.TYPE_MESSAGE, "CreateList", False),
        ("struct_expr", 8, _F.TYPE_MESSAGE, "CreateStruct", False),
        ("comprehension_expr", 9, _F.TYPE_MESSAGE, "Comprehension", False),
    ],
    "AbstractType": [
        ("name", 1, _F.TYPE_STRING, "", False),
        ("parameter_types", 2, _F.TYPE_MESSAGE, "Type", True),
    ],
    "Type": [
        ("message_type", 9, _F.TYPE_STRING, "", False),
        ("abstract_type", 14, _F.TYPE_MESSAGE, "AbstractType", False),
    ],
    "Reference": [("name", 1, _F.TYPE_STRING, "", False), ("overload_id", 3, _F.TYPE_STRING, "", True)],
    "SourceInfo": [
        ("location", 2, _F.TYPE_STRING, "", False),
        ("line_offsets", 3, _F.TYPE_INT32, "", True),
        ("positions", 4, _F.TYPE_MESSAGE, "map:int64:int32", True),
    ],
    "CheckedExpr": [
        ("reference_map", 2, _F.TYPE_MESSAGE, "map:int64:Reference", True),
        ("type_map", 3, _F.TYPE_MESSAGE, "map:int64:Type", True),
        ("expr", 4, _F.TYPE_MESSAGE, "Expr", False),
        ("source_info", 5, _F.TYPE_MESSAGE, "SourceInfo", False),
    ],
}

_SCALAR_KINDS = {"int64": _F.TYPE_INT64, "int32": _F.TYPE_INT32}


def _build() -> descriptor_pool.DescriptorPool:
    fdp = descriptor_pb2.FileDescriptorProto(name=f"{_PACKAGE}.proto", package=_PACKAGE, syntax="proto2")
    for name, fields in _MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        for field, number, kind, type_name, repeated in fields:
            label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if type_name.startswith("map:"):
                _, key, value = type_name.split(":")
                entry = msg.nested_type.add(name=f"{field.title().replace('_', '')}Entry")
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=_SCALAR_KINDS[key], label=_F.LABEL_OPTIONAL)
                if value in _SCALAR_KINDS:
                    entry.field.add(
                        name="value", number=2, type=_SCALAR_KINDS[value], label=_F.LABEL_OPTIONAL
                    )
                else:
                    entry.field.add(
                        name="value",
                        number=2,
                        type=_F.TYPE_MESSAGE,
                        type_name=f".{_PACKAGE}.{value}",
                        label=_F.LABEL_OPTIONAL,
                    )
                type_name = f".{_PACKAGE}.{name}.{entry.name}"
            elif type_name:
                type_name = f".{_PACKAGE}.{type_name}"
            msg.field.add(name=field, number=number, type=kind, label=label, type_name=type_name or None)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return pool


_POOL = _build()
_CLASSES = {
    n: message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.{n}")) for n in _MESSAGES
}
Expr = _CLASSES["Expr"]


def parse(serialized: bytes) -> tuple[Any, Any]:
    """The CheckedExpr inside the engine's serialized google.protobuf.Any."""
    envelope = _CLASSES["Any"].FromString(serialized)
    return envelope, _CLASSES["CheckedExpr"].FromString(envelope.value)


def serialize(envelope: Any, checked: Any) -> bytes:
    envelope.value = checked.SerializeToString()
    return bytes(envelope.SerializeToString())


def children(expr: Any) -> Iterator[Any]:
    """The direct sub-expressions of `expr`, as mutable messages."""
    what = kind(expr)
    if what == "select_expr":
        yield expr.select_expr.operand
    elif what == "call_expr":
        if expr.call_expr.HasField("target"):
            yield expr.call_expr.target
        yield from expr.call_expr.args
    elif what == "list_expr":
        yield from expr.list_expr.elements
    elif what == "struct_expr":
        for entry in expr.struct_expr.entries:
            if entry.HasField("map_key"):
                yield entry.map_key
            yield entry.value
    elif what == "comprehension_expr":
        c = expr.comprehension_expr
        yield from (c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result)


_KINDS = (
    "const_expr",
    "ident_expr",
    "select_expr",
    "call_expr",
    "list_expr",
    "struct_expr",
    "comprehension_expr",
)


def kind(expr: Any) -> str:
    """Which of the expression kinds `expr` is ("call_expr", …; "" for an empty node)."""
    for k in _KINDS:
        if expr.HasField(k):
            return k
    return ""


def walk(expr: Any) -> Iterator[Any]:
    """Every node of the tree, parents before children."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def walk_scoped(expr: Any, bound: frozenset[str] = frozenset()) -> Iterator[tuple[Any, frozenset[str]]]:
    """Every node with the comprehension variables in scope there (they shadow declared ones)."""
    yield expr, bound
    if kind(expr) == "comprehension_expr":
        c = expr.comprehension_expr
        inner = bound | {c.iter_var, c.accu_var} | ({c.iter_var2} if c.iter_var2 else set())
        yield from walk_scoped(c.iter_range, bound)
        yield from walk_scoped(c.accu_init, bound)
        for part in (c.loop_condition, c.loop_step):
            yield from walk_scoped(part, inner)
        yield from walk_scoped(c.result, bound | {c.accu_var})
        return
    for child in children(expr):
        yield from walk_scoped(child, bound)


def reads_of(checked_expr: Any, names: frozenset[str]) -> list[Any]:
    """The identifier nodes that read one of the declared variables `names`."""
    return [
        node
        for node, bound in walk_scoped(checked_expr.expr)
        if kind(node) == "ident_expr" and node.ident_expr.name in names and node.ident_expr.name not in bound
    ]


def calls_of(checked_expr: Any, overload_ids: frozenset[str]) -> list[Any]:
    """The call nodes the checker resolved to one of `overload_ids` only."""
    refs = checked_expr.reference_map
    return [
        node
        for node in walk(checked_expr.expr)
        if kind(node) == "call_expr"
        and node.id in refs
        and refs[node.id].overload_id
        and set(refs[node.id].overload_id) <= overload_ids
    ]


def max_id(expr: Any) -> int:
    return max(int(e.id) for e in walk(expr))


def wrap_optional_index(expr: Any, wrapper_id: int) -> None:
    """Turn `expr` (a list of zero or one item) into `expr[?0]` in place. The wrapper and its `0`
    take the new ids `wrapper_id` and `wrapper_id + 1`; the inner node keeps its own id, and so its
    reference, by which the planner resolves the variable or function."""
    inner = Expr()
    inner.CopyFrom(expr)
    expr.Clear()
    expr.id = wrapper_id
    call = expr.call_expr
    call.function = "_[?_]"
    call.args.add().CopyFrom(inner)
    zero = call.args.add()
    zero.id = wrapper_id + 1
    zero.const_expr.int64_value = 0
