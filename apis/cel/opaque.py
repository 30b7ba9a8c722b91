"""kube's library types are opaque: selecting a field of one is a compile error.

cel-go's checker sees `kubernetes.Quantity`, `net.IP`, … as opaque types without fields, so
`quantity('1').value`, `has(url(s).host)` and `ip(s).?addr` fail to compile there ("type '…' does
not support field selection"). Our engine carries them as protobuf messages (apis/cel/objects.py)
and would read the field, so the checked tree is searched for such a selection instead, and the
error is reported in the checker's format at the selection.
"""

from __future__ import annotations

from typing import Any

from apis.cel import checked, objects

# Fields that stand for a kube variable rather than a field: kube declares `authorizer.requestResource`
# as a variable of its own, which library_authz carries as a field of the Authorizer message.
VARIABLE_FIELDS = frozenset({("kubernetes.authorization.Authorizer", "requestResource")})


def selection_error(checked_expr: Any, source: str) -> str | None:
    """The compile error of the first field selection on a library type, or None."""
    types = checked_expr.type_map
    for node in checked.walk(checked_expr.expr):
        kind = checked.kind(node)
        if kind == "select_expr":
            operand, field = node.select_expr.operand, node.select_expr.field
        elif kind == "call_expr" and node.call_expr.function == "_?._" and len(node.call_expr.args) == 2:
            operand, field = node.call_expr.args[0], node.call_expr.args[1].const_expr.string_value
        else:
            continue
        if operand.id not in types:
            continue
        t = types[operand.id]
        if t.HasField("abstract_type") and t.abstract_type.name == "optional_type":
            # A selection on an optional selects on its value (optional chaining, as in cel-go).
            t = t.abstract_type.parameter_types[0] if t.abstract_type.parameter_types else t
        if (t.message_type, field) in VARIABLE_FIELDS and kind == "select_expr":
            continue
        if t.message_type and objects.is_object_type(t.message_type):
            message = f"type '{t.message_type}' does not support field selection"
            return located(checked_expr, node.id, source, message)
    return None


def located(checked_expr: Any, node_id: int, source: str, message: str) -> str:
    """An error in the checker's format: `ERROR: <input>:line:column: message`, the line, a caret."""
    info = checked_expr.source_info
    offset = info.positions.get(node_id, 0)
    starts = [0, *info.line_offsets]
    line = max(i for i, start in enumerate(starts) if start <= offset or i == 0)
    column = offset - starts[line]
    lines = source.split("\n")
    text = lines[line] if line < len(lines) else ""
    return f"ERROR: <input>:{line + 1}:{column + 1}: {message}\n | {text}\n | {'.' * column}^"
