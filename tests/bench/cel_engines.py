"""Probe the PyPI CEL engines: speed on the restaurant rules, and the k8s CEL features (docs/cel.md).

Not part of the suite: the candidates other than cel-expr-python are not dependencies. Install them
into a venv first (`pip install common-expression-language cel-python celparser`), then
`python -m tests.bench.cel_engines [N]`.
"""

from __future__ import annotations

import sys
import time

PIZZA = {"toppings": [{"name": f"t{i}", "quantity": 2} for i in range(10)]}
RULES = [
    ("pizza", "!has(self.toppings) || self.toppings.map(t, t.quantity).sum() <= 30", {"self": PIZZA}),
    ("cost", "self <= oldSelf * 2.0", {"self": 6.5, "oldSelf": 3.0}),
]
FEATURES = [
    ("has() on map", "has(self.a)", {"self": {"a": 1}}, True),
    (
        "map/filter/all/exists",
        "self.l.filter(x, x > 1).all(x, x > 1) && self.l.exists(x, x == 3)",
        {"self": {"l": [1, 2, 3]}},
        True,
    ),
    ("exists_one", "self.l.exists_one(x, x == 3)", {"self": {"l": [1, 2, 3]}}, True),
    ("int/double compare (heterogeneous)", "self.a < 2.5", {"self": {"a": 2}}, True),
    ("string format", "'%s to %s'.format([3.0, 6.5]) == '3 to 6.5'", {}, True),
    ("strings ext: split/join/lowerAscii", "'A,B'.lowerAscii().split(',').join('-') == 'a-b'", {}, True),
    (
        "strings ext: indexOf/substring/replace/trim",
        "' ab '.trim().indexOf('b') == 1 && 'abc'.substring(1) == 'bc' && 'aa'.replace('a','b') == 'bb'",
        {},
        True,
    ),
    ("optional: self.?a.orValue", "self.?b.orValue(5) == 5", {"self": {"a": 1}}, True),
    ("optional.none()/hasValue", "!optional.none().hasValue() && optional.of(1).value() == 1", {}, True),
    ("matches (RE2)", "'abc'.matches('^a.c$')", {}, True),
    (
        "timestamp/duration",
        "timestamp('2024-01-01T00:00:00Z') + duration('1h') > timestamp('2024-01-01T00:00:00Z')",
        {},
        True,
    ),
    ("list +, in, size", "size([1] + [2]) == 2 && 2 in [1,2]", {}, True),
    ("math.greatest (ext)", "math.greatest(1, 2) == 2", {}, True),
    ("sets.contains (k8s)", "sets.contains([1,2,3], [1,2])", {}, True),
    ("lists: sum (k8s)", "[1,2,3].sum() == 6", {}, True),
    ("lists: min/max (k8s)", "[1,2,3].min() == 1 && [1,2,3].max() == 3", {}, True),
    ("lists: isSorted/indexOf (k8s)", "[1,2,3].isSorted() && [1,2,3].indexOf(2) == 1", {}, True),
    ("regex find/findAll (k8s)", "'abc123'.find('[0-9]+') == '123'", {}, True),
    ("url (k8s)", "url('https://a.b/c').getHost() == 'a.b'", {}, True),
    ("quantity (k8s)", "quantity('1Gi').isGreaterThan(quantity('1M'))", {}, True),
    ("two-var comprehension (1.32)", "[1,2].all(i, v, v > i)", {}, True),
    ("lists ext v3: sort/distinct (1.34)", "[2,1,1].distinct().sort() == [1,2]", {}, True),
    ("int overflow is an error", "9223372036854775807 + 1 > 0", {}, "error"),
    ("division by zero is an error", "1 / 0 == 0", {}, "error"),
    ("no such key is an error", "self.b == 1", {"self": {"a": 1}}, "error"),
]


def engine_cel_rust():
    import cel

    def comp(expr):
        p = cel.compile(expr)
        return lambda vars: p.execute(cel.Context(variables=vars) if vars else None)

    return comp


def engine_cel_expr():
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_math, ext_optional, ext_strings

    exts = (
        [ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_math.ExtMath()]
        if hasattr(ext_math, "ExtMath")
        else [ext_strings.ExtStrings(), ext_optional.ExtOptional()]
    )
    env = cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN}, extensions=exts)

    def comp(expr):
        e = env.compile(expr)
        return lambda vars: _checked(e.eval(data=vars), cel)

    return comp


def _checked(value, cel):
    if value.type() == cel.Type.ERROR:
        raise RuntimeError(value.plain_value())
    return value.plain_value()


def engine_celpy():
    import celpy

    env = celpy.Environment()

    def comp(expr):
        ast = env.compile(expr)
        prg = env.program(ast)
        return lambda vars: prg.evaluate({k: celpy.json_to_cel(v) for k, v in vars.items()})

    return comp


def engine_celparser():
    import celparser

    def comp(expr):
        c = celparser.compile(expr)
        return lambda vars: c(vars)

    return comp


ENGINES = {
    "common-expression-language": engine_cel_rust,
    "cel-expr-python": engine_cel_expr,
    "cel-python": engine_celpy,
    "celparser": engine_celparser,
}
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
for name, make in ENGINES.items():
    print(f"## {name}")
    try:
        comp = make()
    except Exception as e:
        print("  setup failed:", e)
        continue
    for rname, expr, vars in RULES:
        try:
            t0 = time.perf_counter()
            f = comp(expr)
            t1 = time.perf_counter()
            r = f(vars)
            t2 = time.perf_counter()
            for _ in range(N):
                f(vars)
            t3 = time.perf_counter()
            print(f"  {rname}: result={r!r} compile={1e6 * (t1 - t0):.0f}us eval={1e6 * (t3 - t2) / N:.1f}us")
        except Exception as e:
            print(f"  {rname}: FAILED {type(e).__name__}: {str(e)[:150]}")
    ok = 0
    for fname, expr, vars, want in FEATURES:
        try:
            r = comp(expr)(vars)
            res = "ok" if want is True and bool(r) is True else f"WRONG ({r!r})"
        except Exception as e:
            res = "ok (error)" if want == "error" else f"no: {type(e).__name__}: {str(e)[:90]}"
        if res.startswith("ok"):
            ok += 1
        print(f"  [{fname}] {res}")
    print(f"  features: {ok}/{len(FEATURES)}")
