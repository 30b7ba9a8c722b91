"""Comprehensions past the engine's 10,000-iteration limit (apis/cel/iteration.py).

kube (cel-go) has no iteration limit, only cost limits; each expression here evaluates as cel-go
would over a 20,000-item list. The macros driven from Python must keep CEL's semantics, errors
included: every expression is also run on small lists both natively and driven from Python, and
the two must agree.
"""

from __future__ import annotations

from typing import Any

import pytest

from apis.cel import iteration
from apis.cel.engine import NONE, Environment, EvalError, optional_of

ENV = Environment({"self": "list(int)", "m": "map(string, int)", "oldSelf": optional_of("list(int)")})
LONG = list(range(1, 20001))

# expression over self = [1..20000] → value, or ("error", text)
LONG_CASES: list[tuple[str, Any]] = [
    ("self.all(x, x > 0)", True),
    ("self.all(x, x < 20000)", False),
    ("self.exists(x, x == 20000)", True),
    ("self.exists(x, x > 20000)", False),
    ("self.exists_one(x, x == 5)", True),
    ("self.exists_one(x, x > 19998)", False),
    ("self.map(x, x * 2).size()", 20000),
    ("self.map(x, x * 2)[19999]", 40000),
    ("self.filter(x, x % 2 == 0).size()", 10000),
    ("self.map(x, x > 19997, x - 19997)", [1, 2, 3]),
    ("self.map(x, x).filter(y, y > 19998)", [19999, 20000]),
    ("self.all(x, x <= self.size())", True),
    # errors: all/exists absorb them as && / || do where another item decides, else fail
    ("self.all(x, x != 7 || x / 0 == 1)", ("error", "divide by zero")),
    ("self.all(x, x == 7 && x / 0 == 1 || x > 7)", False),
    ("self.exists(x, x / (x - 5) == 2)", True),
    ("self.exists(x, x / (x - 5) > 20000)", ("error", "divide by zero")),
    ("self.exists_one(x, x / (x - 5) == 1)", ("error", "divide by zero")),
    ("self.map(x, 100 / (x - 10000)).size()", ("error", "divide by zero")),
    # nested macros and outer variables
    ("self.all(x, [x, x + 1].exists(y, y == x + 1))", True),
    ("self.filter(x, x > 19990).all(x, self.exists(y, y == x - 19990))", True),
    ("m.all(k, self.exists(x, x == m[k]))", True),
    ("oldSelf.orValue(self).all(x, x > 0)", True),
]


def _value(expr: str, items: list[int], evaluate: str = "evaluate") -> Any:
    program = ENV.compile(expr)
    variables = {"self": items, "m": {"a": 19999, "b": 3}, "oldSelf": NONE}
    try:
        if evaluate == "native":
            return program._expr.eval(data=dict(variables, oldSelf=[])).plain_value()
        if evaluate == "python":
            assert program._unlimited is not None
            data = dict(variables, oldSelf=[])
            return iteration.budgeted(lambda: program._unlimited.eval(data=data)).plain_value()
        return program.evaluate(variables)
    except EvalError as e:
        return ("error", str(e))


@pytest.mark.parametrize(("expr", "expected"), LONG_CASES)
def test_long_lists_evaluate(expr: str, expected: Any) -> None:
    assert _value(expr, LONG) == expected


SMALL = [[], [1, 2, 3], [5], [4, 5, 6], [0, 10, 5, 10]]


@pytest.mark.parametrize(("expr", "_"), LONG_CASES)
@pytest.mark.parametrize("items", SMALL)
def test_python_driven_macros_agree_with_the_engine(expr: str, _: Any, items: list[int]) -> None:
    native, driven = _value(expr, items, "native"), _value(expr, items, "python")
    assert _error_text(driven) == _error_text(native)


def _error_text(value: Any) -> Any:
    """An error value's text without the engine's status code (which EvalError drops too)."""
    return value.split(": ", 1)[-1] if isinstance(value, str) and value.isascii() and ": " in value else value


def test_runaway_evaluation_is_bounded() -> None:
    program = ENV.compile("self.all(x, self.all(y, x >= 0))")
    assert program._unlimited is not None
    value = iteration.budgeted(lambda: program._unlimited.eval(data={"self": list(range(100))}), limit=5000)
    assert "Iteration budget exceeded" in str(value.plain_value())


def test_non_macro_comprehensions_are_left_alone() -> None:
    """optMap's single-iteration comprehension is not a macro over a range."""
    program = ENV.compile("oldSelf.optMap(o, o.size()).orValue(-1) == -1")
    assert program._unlimited is None
    assert program.evaluate({"self": [], "m": {}, "oldSelf": NONE}) is True


def test_a_predicate_past_the_limit_in_its_own_frame_falls_back_too() -> None:
    """A map over 501 items runs from Python (NATIVE_MAP_ITEMS), its predicates natively; one of
    them iterates 501 x 21 times in its own frame, past the engine's limit: the whole evaluation
    is redone with every macro driven from Python."""
    twenty = list(range(1, 21))
    program = ENV.compile(f"self.map(x, x == 0 ? self.all(y, {twenty}.all(z, z > 0)) : true).all(b, b)")
    assert program.evaluate({"self": list(range(501)), "m": {}, "oldSelf": NONE}) is True


def test_macros_live_as_long_as_their_program() -> None:
    import gc

    before = len(iteration._MACROS)
    program = ENV.compile("self.map(x, x + 1).all(y, self.exists(z, z == y - 1))")
    assert len(iteration._MACROS) == before + 4  # map in the native form; map, all, exists in the other
    del program
    gc.collect()
    assert len(iteration._MACROS) == before


def test_every_evaluation_gets_a_fresh_iteration_budget() -> None:
    """A map over more than NATIVE_MAP_ITEMS runs from Python in the first program already; what it
    spends of the guard's budget must not carry over to the next evaluation."""
    program = ENV.compile("self.map(x, x + 1).size() == 600")
    for _ in range(3):
        assert program.evaluate({"self": list(range(600)), "m": {}, "oldSelf": NONE}) is True
        assert iteration._state.left == iteration.ITERATION_LIMIT


def test_a_predicate_that_is_not_a_bool_is_an_error() -> None:
    """The same error as the engine's own loop gives (the test runs both)."""
    env = Environment({"self": "list(dyn)"})
    for expr in ("self.all(x, x)", "self.exists(x, x)", "self.exists_one(x, x)", "self.map(x, x, x) == []"):
        program = env.compile(expr)
        with pytest.raises(EvalError) as native:
            program.evaluate({"self": [1, 2]})
        assert program._unlimited is not None
        value = iteration.budgeted(lambda p=program: p._unlimited.eval(data={"self": [1, 2]}))
        assert _error_text(str(value.plain_value())) == str(native.value)


@pytest.mark.parametrize("value", ["abc", 5, None])
@pytest.mark.parametrize(
    "expr", ["self.all(x, true)", "self.map(x, x).size() == 0", "self.exists_one(x, true)"]
)
def test_a_range_that_is_not_a_list_or_map_is_the_engines_error(expr: str, value: Any) -> None:
    program = Environment({"self": "dyn"}).compile(expr)
    with pytest.raises(EvalError, match="No matching overloads found : <iter_range>"):
        program.evaluate({"self": value})
    assert program._unlimited is not None
    driven = iteration.budgeted(lambda: program._unlimited.eval(data={"self": value}))
    assert _error_text(str(driven.plain_value())) == "No matching overloads found : <iter_range>"
