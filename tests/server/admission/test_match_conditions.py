"""matchConditions through the CEL engine: kube's matcher rule and error texts."""

from __future__ import annotations

from server.admission.webhook.conditions import CelConditions
from server.admission.webhook.hooks import ClientConfig, Hook, MatchCondition

HOOK = Hook("h.example.com", "c", 0, False, (), ClientConfig("https://127.0.0.1/"))
REQUEST = {
    "operation": "CREATE",
    "dryRun": False,
    "object": {"metadata": {"name": "p", "labels": {"team": "a"}}, "spec": {"toppings": []}},
    "oldObject": None,
}


def conditions(*pairs: tuple[str, str]) -> tuple[MatchCondition, ...]:
    return tuple(MatchCondition(name, expression) for name, expression in pairs)


def test_all_true_matches_without_errors() -> None:
    result = CelConditions().evaluate(
        HOOK,
        conditions(
            ("create", "request.operation == 'CREATE'"), ("team", "object.metadata.labels.team == 'a'")
        ),
        REQUEST,
    )
    assert (result.matches, result.errors) == (True, ())


def test_a_false_condition_skips_the_hook_even_next_to_an_error() -> None:
    result = CelConditions().evaluate(
        HOOK, conditions(("broken", "object.spec.nope == 1"), ("dry", "request.dryRun")), REQUEST
    )
    assert (result.matches, result.errors) == (False, ())


def test_errors_carry_kubes_texts() -> None:
    evaluator = CelConditions()
    result = evaluator.evaluate(
        HOOK,
        conditions(
            ("missing", "object.spec.nope == 1"), ("syntax", "object.("), ("old", "oldObject == null")
        ),
        REQUEST,
    )
    assert result.matches
    assert result.errors[0].startswith("expression 'object.spec.nope == 1' resulted in error: ")
    assert result.errors[1].startswith("compilation error: ")
    assert len(result.errors) == 2
