"""The one module that talks to the CEL engine (cel-expr-python, Google's C++ CEL; see docs/cel.md).

Everything else — the Kubernetes environment, schema rules, and later admission matchConditions —
goes through `Environment.compile` and `Program.evaluate`, so the engine can be swapped here alone.
Compilation type-checks against declared variables (as cel-go's checker does for kube); the checked
AST is decoded into `apis.cel.ast` nodes so that our cost estimator can walk it, since no Python
engine estimates or tracks cost itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings

from apis.cel import ast

# CEL types by the names kube's DeclTypes use; `list(...)`/`map(...)` are built with the helpers.
BOOL, INT, UINT, DOUBLE, STRING, BYTES = "bool", "int", "uint", "double", "string", "bytes"
DURATION, TIMESTAMP, DYN, NULL = "duration", "timestamp", "dyn", "null_type"

_SCALARS = {
    BOOL: cel.Type.BOOL,
    INT: cel.Type.INT,
    UINT: cel.Type.UINT,
    DOUBLE: cel.Type.DOUBLE,
    STRING: cel.Type.STRING,
    BYTES: cel.Type.BYTES,
    DURATION: cel.Type.DURATION,
    TIMESTAMP: cel.Type.TIMESTAMP,
    DYN: cel.Type.DYN,
    NULL: cel.Type.NULL,
}


def list_of(item: str) -> str:
    return f"list({item})"


def map_of(key: str, value: str) -> str:
    return f"map({key}, {value})"


def _engine_type(name: str) -> cel.Type:
    if name in _SCALARS:
        return _SCALARS[name]
    head, _, rest = name.partition("(")
    args = _split_args(rest[:-1])
    if head == "list":
        return cel.Type.List(_engine_type(args[0]))
    if head == "map":
        return cel.Type.Map(_engine_type(args[0]), _engine_type(args[1]))
    raise ValueError(f"unknown CEL type {name!r}")


def _split_args(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


@dataclass(frozen=True, slots=True)
class Overload:
    """One signature of a library function; `impl` receives and returns plain Python values."""

    id: str
    params: Sequence[str]
    result: str
    impl: Callable[..., Any]
    member: bool = False


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    overloads: Sequence[Overload]


class CompileError(ValueError):
    """Parse or type-check failure; the text is the engine's, as kube shows cel-go's."""


class EvalError(RuntimeError):
    """An evaluation error (no such key, overflow, division by zero, a library function's error)."""


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled, type-checked expression: compile once at startup, evaluate per request."""

    source: str
    result_type: str
    tree: ast.Node
    _expr: Any = field(repr=False)

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """Plain Python result (bool, int, float, str, list, dict, None); EvalError on a CEL error."""
        try:
            value = self._expr.eval(data=dict(variables))
        except RuntimeError as e:  # e.g. the engine's own comprehension iteration limit
            raise EvalError(_status_text(str(e)).removesuffix(" [INTERNAL]")) from None
        if value.type() == cel.Type.ERROR:
            raise EvalError(_status_text(str(value.plain_value())))
        result = value.plain_value()
        return result


def _status_text(text: str) -> str:
    """The engine's errors carry an absl status code ("NOT_FOUND: Key not found…"); kube's do not."""
    head, sep, rest = text.partition(": ")
    coded = sep and head.isupper() and ("_" in head or head in ("UNKNOWN", "INTERNAL"))
    return rest if coded else text


class Environment:
    """Declared variables plus libraries: the standard library, strings (v4, incl. `format`),
    optionals, and whatever `functions` a caller adds (the Kubernetes libraries)."""

    def __init__(self, variables: Mapping[str, str], functions: Sequence[Function] = ()) -> None:
        decls = [
            cel.FunctionDecl(
                f.name,
                [
                    cel.Overload(
                        o.id,
                        _engine_type(o.result),
                        [_engine_type(p) for p in o.params],
                        is_member=o.member,
                        impl=o.impl,
                    )
                    for o in f.overloads
                ],
            )
            for f in functions
        ]
        extensions: list[Any] = [ext_strings.ExtStrings(), ext_optional.ExtOptional()]
        if decls:
            extensions.append(cel.CelExtension("kubernetes", decls))
        self._env = cel.NewEnv(
            variables={name: _engine_type(t) for name, t in variables.items()}, extensions=extensions
        )

    def compile(self, source: str) -> Program:
        try:
            expr = self._env.compile(source)
        except RuntimeError as e:
            raise CompileError(_compile_message(str(e))) from None
        return Program(source, _type_name(expr.return_type()), ast.decode_checked(expr.serialize()), expr)


def _compile_message(text: str) -> str:
    """The engine prefixes absl status codes ("INVALID_ARGUMENT: ") and suffixes "[INVALID_ARGUMENT]"."""
    text = text.removeprefix("INVALID_ARGUMENT: ")
    tail = text.rfind(" [")
    return text[:tail] if tail > 0 and text.endswith("]") else text


def _type_name(t: Any) -> str:
    name = t.name()
    return {
        "BOOL": BOOL,
        "INT": INT,
        "UINT": UINT,
        "DOUBLE": DOUBLE,
        "STRING": STRING,
        "BYTES": BYTES,
        "DYN": DYN,
        "NULL_TYPE": NULL,
    }.get(name, name.lower())
