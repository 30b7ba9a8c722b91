"""Micro-benchmark of a write's CEL step: `evaluate_rules` on restaurant objects (docs/cel.md).

Not part of the suite (timings on a shared machine are not assertions). Run
`python -m tests.bench.cel_rules [N]`: µs per call over N calls (default 20,000) of each case, the
best of 5 rounds of N/5 (the machine is shared: the best round is the least disturbed).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from apis.restaurant.v1beta1.schema import PIZZA_SCHEMA, TOPPING_SCHEMA
from apis.schema.cel_eval import evaluate_rules
from apis.schema.cel_rules import RuleNode, compile_rules


def _pizza(toppings: int) -> dict[str, Any]:
    return {
        "apiVersion": "restaurant.programming-kubernetes.info/v1beta1",
        "kind": "Pizza",
        "metadata": {
            "name": "margherita",
            "namespace": "default",
            "uid": "5b1b7b4e-0000-4000-8000-000000000000",
            "resourceVersion": "12",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "pizza"},
        },
        "spec": {"toppings": [{"name": f"topping-{i}", "quantity": 1} for i in range(toppings)]},
        "status": {"cost": 3.5, "replicas": 0},
    }


def _topping(cost: float) -> dict[str, Any]:
    return {
        "apiVersion": "restaurant.programming-kubernetes.info/v1beta1",
        "kind": "Topping",
        "metadata": {"name": "salami", "uid": "5b1b7b4e-0000-4000-8000-000000000001", "generation": 1},
        "spec": {"cost": cost},
    }


def _rules(schema: dict[str, Any]) -> RuleNode:
    rules = compile_rules(schema)
    assert rules is not None
    return rules


def main(n: int) -> None:
    pizza, topping = _rules(PIZZA_SCHEMA), _rules(TOPPING_SCHEMA)
    cases: list[tuple[str, RuleNode, tuple[Any, ...], int]] = [
        ("pizza create, 3 toppings", pizza, (_pizza(3),), 0),
        ("pizza create, 10 toppings", pizza, (_pizza(10),), 0),
        ("pizza update, 10 toppings", pizza, (_pizza(10), _pizza(10)), 0),
        ("pizza create, 30 toppings", pizza, (_pizza(30),), 0),
        # At the schema's bound: 100 portions, refused by the 30-portion rule (its message is built).
        ("pizza create, 100 toppings", pizza, (_pizza(100),), 1),
        ("topping create", topping, (_topping(2.0),), 0),
        ("topping update", topping, (_topping(2.0), _topping(1.5)), 0),
    ]
    for name, rules, args, errors in cases:
        outcome = evaluate_rules(rules, *args)
        assert len(outcome.errors) == errors, outcome.errors
        calls = max(1, n // 5)
        rounds = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                evaluate_rules(rules, *args)
            rounds.append((time.perf_counter() - start) / calls)
        print(f"{name:28} {min(rounds) * 1e6:8.1f} µs/call (best of 5 x {calls} calls)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
