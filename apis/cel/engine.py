"""The one module that talks to the CEL engine (cel-expr-python, Google's C++ CEL; see docs/cel.md).

Everything else — the Kubernetes environment, schema rules, and later admission matchConditions —
goes through `Environment.compile` and `Program.evaluate`, so the engine can be swapped here alone.
Compilation type-checks against declared variables (as cel-go's checker does for kube); the checked
AST is decoded into `apis.cel.ast` nodes so that our cost estimator can walk it, since no Python
engine estimates or tracks cost itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings

from apis.cel import ast, checked, iteration, objects, opaque

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


def optional_of(value: str) -> str:
    """kube's `optional(T)`: a variable of this type is given `NONE` or a value; a function
    returning it returns `NONE` or a value. The expression sees a real CEL optional (see compile)."""
    return f"optional({value})"


class _NoneType:
    def __repr__(self) -> str:
        return "NONE"


NONE: Any = _NoneType()  # optional.none() for an optional variable or function result


def _is_optional(name: str) -> bool:
    return name.startswith("optional(")


def _optional_value_type(name: str) -> str:
    return name[len("optional(") : -1]


def _as_list(value: Any) -> list[Any]:
    return [] if value is NONE else [value]


def _engine_type(name: str) -> cel.Type:
    if name in _SCALARS:
        return _SCALARS[name]
    if objects.is_object_type(name):
        return cel.Type(name)
    head, _, rest = name.partition("(")
    args = _split_args(rest[:-1])
    if head == "list":
        return cel.Type.List(_engine_type(args[0]))
    if head == "map":
        return cel.Type.Map(_engine_type(args[0]), _engine_type(args[1]))
    raise ValueError(f"unknown CEL type {name!r}")


_CONFIG_SCALARS = {DURATION: "google.protobuf.Duration", TIMESTAMP: "google.protobuf.Timestamp", NULL: "null"}


def _config_type(name: str) -> dict[str, Any]:
    """A type in the engine's YAML config, the only way to declare an optional type: the Python
    API's types make `optional_type` a type of kind `type`, which no optional function accepts."""
    if name in _SCALARS or objects.is_object_type(name):
        return {"type_name": _CONFIG_SCALARS.get(name, name)}
    head, _, rest = name.partition("(")
    params = [_config_type(a) for a in _split_args(rest[:-1])]
    if head in ("list", "map"):
        return {"type_name": head, "params": params}
    if head == "optional":
        return {"type_name": "optional_type", "params": params}
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


def ordering(prefix: str, type_: Any, compare: Callable[[Any, Any], int]) -> tuple[Function, ...]:
    """kube's isGreaterThan / isLessThan / compareTo members of an ordered library type (quantity,
    semver), all from one three-way `compare`; overload ids are `<prefix>_is_greater_than` etc."""
    both = [type_, type_]
    greater = Overload(f"{prefix}_is_greater_than", both, BOOL, lambda a, b: compare(a, b) == 1, member=True)
    less = Overload(f"{prefix}_is_less_than", both, BOOL, lambda a, b: compare(a, b) == -1, member=True)
    return (
        Function("isGreaterThan", [greater]),
        Function("isLessThan", [less]),
        Function("compareTo", [Overload(f"{prefix}_compare_to", both, INT, compare, member=True)]),
    )


# (checked expression, source) -> a compile error in the checker's format, or None.
CompileCheck = Callable[[Any, str], "str | None"]


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
    # Variables declared optional: given NONE or a value, passed to the engine as [] or [value].
    _optionals: tuple[str, ...] = ()
    # The same expression with its macros driven from Python, for when the engine's own limit of
    # 10,000 comprehension iterations stops it (apis/cel/iteration.py); None without macros.
    _unlimited: Any = field(default=None, repr=False)
    _macros: tuple[Any, ...] = field(default=(), repr=False)  # what the Python-driven forms call

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """Plain Python result (bool, int, float, str, list, dict, None); EvalError on a CEL error."""
        data = dict(variables)
        for name in self._optionals:
            data[name] = _as_list(data.get(name, NONE))
        unlimited = False
        try:
            if self._macros:  # some macros may run from Python: a fresh iteration budget
                value = iteration.budgeted(lambda: self._expr.eval(data=data))
            else:
                value = self._expr.eval(data=data)
        except RuntimeError as e:
            if _ITERATION_LIMIT not in str(e):
                raise EvalError(_status_text(str(e)).removesuffix(" [INTERNAL]")) from None
            value, unlimited = self._past_the_limit(data), True
        if value.type() == cel.Type.ERROR:
            text = str(value.plain_value())
            # (an error value when a predicate run from Python hit the limit in its own frame)
            if unlimited or _ITERATION_LIMIT not in text or self._unlimited is None:
                raise EvalError(_status_text(text).removesuffix(" [INTERNAL]"))
            value = self._past_the_limit(data)
            if value.type() == cel.Type.ERROR:
                raise EvalError(_status_text(str(value.plain_value())))
        return value.plain_value()

    def _past_the_limit(self, data: dict[str, Any]) -> Any:
        """The evaluation again with every macro driven from Python (apis/cel/iteration.py)."""
        if self._unlimited is None:
            raise EvalError(_ITERATION_LIMIT)
        return iteration.budgeted(lambda: self._unlimited.eval(data=data))


_ITERATION_LIMIT = "Iteration budget exceeded"  # the engine's error at 10,000 iterations


def _status_text(text: str) -> str:
    """The engine's errors carry an absl status code ("NOT_FOUND: Key not found…"); kube's do not."""
    head, sep, rest = text.partition(": ")
    coded = sep and head.isupper() and ("_" in head or head in ("UNKNOWN", "INTERNAL"))
    return rest if coded else text


class Environment:
    """Declared variables plus libraries: the standard library, strings (v4, incl. `format`),
    optionals, and whatever `functions` a caller adds (the Kubernetes libraries)."""

    def __init__(self, variables: Mapping[str, str], functions: Sequence[Function] = ()) -> None:
        merged = _merge(functions)
        declared = [Function(name, overloads) for name, overloads in merged.items()]
        # The engine registers implementations by CEL kind, and every library object is kind
        # "message": `string(ip)` and `string(cidr)` would collide at runtime. Such expressions
        # are type-checked against the precise overloads and then run in an environment where
        # each colliding group is one overload that dispatches on the message type.
        # Optional variables and results cannot cross the binding: the runtime environment takes
        # them as lists of zero or one item, and compile() indexes those with `[?0]`.
        # Programs run in their own environment, which alone declares iteration.FUNCTION.
        runtime = [
            Function(name, [_listed(o) for o in _dispatching(overloads)])
            for name, overloads in merged.items()
        ] + [_COMPREHENSION, _COMPREHENSION_ITEM]
        self._variables = frozenset(variables)
        self._optional_vars = frozenset(n for n, t in variables.items() if _is_optional(t))
        self._optional_overloads = frozenset(
            o.id for f in declared for o in f.overloads if _is_optional(o.result)
        )
        self._env = _new_env(variables, declared)
        runtime_vars = {
            n: list_of(_optional_value_type(t)) if _is_optional(t) else t for n, t in variables.items()
        }
        self._runtime_env = _new_env(runtime_vars, runtime)

    def compile(self, source: str, checks: Sequence[CompileCheck] = ()) -> Program:
        """`checks` see the checked expression and the source, and return a compile error or None
        (what the engine's own checker cannot know, e.g. which fields a schema declares)."""
        try:
            expr = self._env.compile(source)
        except RuntimeError as e:
            raise CompileError(_compile_message(str(e))) from None
        serialized = expr.serialize()
        tree = ast.decode_checked(serialized)
        _reject_object_literals(tree)
        envelope, checked_expr = checked.parse(serialized)
        for check in (opaque.selection_error, *checks):
            if error := check(checked_expr, source):
                raise CompileError(error)
        result_type = _type_name(expr.return_type())
        if self._optional_vars or self._optional_overloads:
            serialized = _index_optionals(
                envelope, checked_expr, self._optional_vars, self._optional_overloads
            )
        used = {n.ident_expr.name for n in checked.reads_of(checked_expr, self._optional_vars)}
        native, map_macros = self._iterating(serialized, large_maps_only=True)
        expr = native if native is not None else self._runtime_env.deserialize(serialized)
        unlimited, macros = self._iterating(serialized, large_maps_only=False)
        return Program(
            source, result_type, tree, expr, tuple(sorted(used)), unlimited, (*map_macros, *macros)
        )

    def _iterating(self, serialized: bytes, *, large_maps_only: bool) -> tuple[Any, list[Any]]:
        """The program with its macros (or only its large maps) driven from Python
        (apis/cel/iteration.py) and those macros, or None if it has none."""
        envelope, checked_expr = checked.parse(serialized)

        def plan(sub: Any) -> Any:
            return self._runtime_env.deserialize(checked.serialize(envelope, sub))

        macros = iteration.rewrite(
            checked_expr, self._variables, plan, self._runtime_env, large_maps_only=large_maps_only
        )
        return (plan(checked_expr) if macros else None), macros


_COMPREHENSION = Function(
    iteration.FUNCTION,
    [Overload(iteration.FUNCTION, [DYN, INT, list_of(DYN)], DYN, iteration.run)],
)
_COMPREHENSION_ITEM = Function(iteration.ITEM, [Overload(iteration.ITEM, [INT], DYN, iteration.item)])


def _listed(o: Overload) -> Overload:
    """An optional-returning overload as the runtime declares it: a list of zero or one item."""
    if not _is_optional(o.result):
        return o
    impl = o.impl
    return Overload(
        o.id, o.params, list_of(_optional_value_type(o.result)), lambda *a: _as_list(impl(*a)), o.member
    )


def _index_optionals(
    envelope: Any, checked_expr: Any, variables: frozenset[str], overloads: frozenset[str]
) -> bytes:
    """The checked expression with every read of an optional variable and every call of an
    optional-returning function `x` turned into `x[?0]`: a real optional again, over the list the
    runtime passes instead (the checker already typed `x` as the optional it now is)."""
    # Innermost first: wrapping a node copies its subtree, so a parent is wrapped after its children.
    nodes = checked.reads_of(checked_expr, variables) + checked.calls_of(checked_expr, overloads)[::-1]
    next_id = checked.max_id(checked_expr.expr) + 1
    for node in nodes:
        checked.wrap_optional_index(node, next_id)
        next_id += 2
    return checked.serialize(envelope, checked_expr)


def _new_env(variables: Mapping[str, str], functions: Sequence[Function]) -> Any:
    typed = [f for f in functions if not any(_mentions_optional(o) for o in f.overloads)]
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
        for f in typed
    ]
    extensions: list[Any] = [ext_strings.ExtStrings(), ext_optional.ExtOptional()]
    if decls:
        extensions.append(cel.CelExtension("kubernetes", decls))
    config = _optional_config(variables, [f for f in functions if f not in typed])
    return cel.NewEnv(
        descriptor_pool=objects.POOL,
        config=config,
        variables={n: _engine_type(t) for n, t in variables.items() if not _is_optional(t)},
        extensions=extensions,
    )


def _mentions_optional(o: Overload) -> bool:
    return _is_optional(o.result) or any(_is_optional(p) for p in o.params)


def _optional_config(variables: Mapping[str, str], functions: Sequence[Function]) -> Any:
    """Declarations with an optional type, through the engine's YAML config (JSON is YAML). They
    are only type-checked here: no implementation is bound (the runtime environment has none)."""
    optional_vars = [{"name": n, **_config_type(t)} for n, t in variables.items() if _is_optional(t)]
    if not optional_vars and not functions:
        return None
    decls = [
        {
            "name": f.name,
            "overloads": [
                {
                    "id": o.id,
                    **({"target": _config_type(o.params[0])} if o.member else {}),
                    "args": [_config_type(p) for p in (o.params[1:] if o.member else o.params)],
                    "return": _config_type(o.result),
                }
                for o in f.overloads
            ],
        }
        for f in functions
    ]
    return cel.NewEnvConfigFromYaml(json.dumps({"variables": optional_vars, "functions": decls}))


def _merge(functions: Sequence[Function]) -> dict[str, list[Overload]]:
    """Libraries may each bring overloads of one name (`isGreaterThan` of quantity and semver)."""
    merged: dict[str, list[Overload]] = {}
    for f in functions:
        merged.setdefault(f.name, []).extend(f.overloads)
    return merged


def _kind(type_name: str) -> str:
    return "message" if objects.is_object_type(type_name) else type_name.partition("(")[0]


def _dispatching(overloads: list[Overload]) -> list[Overload]:
    """The overloads with those that collide at runtime (same kinds) folded into one each."""
    groups: dict[tuple[Any, ...], list[Overload]] = {}
    for o in overloads:
        groups.setdefault((o.member, *map(_kind, o.params)), []).append(o)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
        else:
            first = group[0]
            result = first.result if all(o.result == first.result for o in group) else DYN
            out.append(Overload(first.id, first.params, result, _dispatcher(group), first.member))
    return out


def _dispatcher(group: list[Overload]) -> Callable[..., Any]:
    def dispatch(*args: Any) -> Any:
        for o in group:
            pairs = zip(o.params, args, strict=True)
            if all(not objects.is_object_type(p) or objects.type_of(a) == p for p, a in pairs):
                return o.impl(*args)
        raise ValueError("no such overload")

    return dispatch


def _reject_object_literals(node: ast.Node) -> None:
    """The library's types are messages only to the engine (see apis/cel/objects.py); kube has no
    literal syntax for them, so `kubernetes.Quantity{...}` is refused as cel-go's checker would."""
    if isinstance(node, ast.CreateStruct) and node.message_name:
        raise CompileError(f"undeclared reference to '{node.message_name}'")
    children: tuple[ast.Node | None, ...] = ()
    if isinstance(node, ast.Select):
        children = (node.operand,)
    elif isinstance(node, ast.Call):
        children = (node.target, *node.args)
    elif isinstance(node, ast.CreateList | ast.CreateStruct):
        children = node.values if isinstance(node, ast.CreateStruct) else node.elements
    elif isinstance(node, ast.Comprehension):
        children = (node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result)
    for child in children:
        if child is not None:
            _reject_object_literals(child)


def _compile_message(text: str) -> str:
    """The engine prefixes absl status codes ("INVALID_ARGUMENT: ") and suffixes "[INVALID_ARGUMENT]"."""
    text = text.removeprefix("INVALID_ARGUMENT: ")
    tail = text.rfind(" [")
    return text[:tail] if tail > 0 and text.endswith("]") else text


def _type_name(t: Any) -> str:
    name = t.name()
    if objects.is_object_type(name):
        return str(name)
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
