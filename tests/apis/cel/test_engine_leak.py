"""cel-expr-python 0.1.3 keeps every argument tuple it builds to call a function implemented in Python.

Found measuring the server's memory: each pizza write kept ~120 bytes for good (the v1beta1 portion
rule calls our `sum()`), 1 MB per 8,000 creates, for as long as the process lives. The binding's
PyCelFunctionAdapter::Invoke makes the tuple with PyTuple_New and never drops it, so the tuple and
everything in it (converted lists, Quantity and URL results passed on to the next call) stay alive.
Nothing on our side of the binding can release it (the tuple is not reachable from Python).

The second test is strict xfail: it starts passing, and so fails the suite, when a fixed release is
installed, which is the moment to drop it and the note in docs/cel.md.
"""

from __future__ import annotations

import gc
import sys

import pytest

from apis.cel.engine import Environment
from apis.schema.cel_rules import KUBERNETES_LIBRARY

EVALUATIONS = 2_000


def _blocks_kept(source: str) -> int:
    """Allocated blocks still held after EVALUATIONS evaluations (warmed up first, so memos and
    free lists filled by the first calls do not count)."""
    program = Environment({"self": "dyn"}, KUBERNETES_LIBRARY).compile(source)
    variables = {"self": {"toppings": [{"name": "tomato", "quantity": 1}]}}
    for _ in range(200):
        assert program.evaluate(variables) is True
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(EVALUATIONS):
        program.evaluate(variables)
    gc.collect()
    return sys.getallocatedblocks() - before


def test_rules_the_engine_runs_alone_keep_nothing() -> None:
    """The measure itself: macros and built-in functions leave no block per evaluation."""
    assert _blocks_kept("self.toppings.map(t, t.quantity).size() == 1 && 'a'.lowerAscii() == 'a'") < 100


@pytest.mark.xfail(strict=True, reason="cel-expr-python 0.1.3 leaks the argument tuple of Python functions")
def test_functions_implemented_in_python_keep_nothing() -> None:
    assert _blocks_kept("self.toppings.map(t, t.quantity).sum() == 1") < EVALUATIONS // 10
