"""CEL rules through the real kubectl: the rule's message is what the user reads."""

from __future__ import annotations

import pytest

from tests.fixtures.server import ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"


def _apply(server: ServerProcess, manifest: str, *, check: bool = False):
    return server.kubectl("apply", "-f", "-", input=manifest, check=check)


@pytest.mark.parametrize(
    ("version", "toppings"),
    [
        ("v1beta1", "[{name: salami, quantity: 20}, {name: tomato, quantity: 11}]"),
        ("v1alpha1", "[" + ", ".join(["salami"] * 31) + "]"),
    ],
)
def test_pizza_over_30_portions_shows_the_rules_message(
    server_process: ServerProcess, version: str, toppings: str
) -> None:
    manifest = f"""
apiVersion: {GROUP}/{version}
kind: Pizza
metadata: {{name: too-big}}
spec: {{toppings: {toppings}}}
"""
    result = _apply(server_process, manifest)
    assert result.returncode != 0
    assert 'The Pizza "too-big" is invalid: spec: Invalid value: a pizza holds at most 30 portions' in (
        result.stderr
    ), result.stderr


def test_topping_cost_may_at_most_double(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: truffle}}
spec: {{cost: %s}}
"""
    _apply(server_process, manifest % "3", check=True)  # a create: the transition rule does not run
    result = _apply(server_process, manifest % "6.5")
    assert result.returncode != 0
    assert (
        "spec.cost: Invalid value: 6.5: cost may at most double in one update, from 3 to 6.5" in result.stderr
    ), result.stderr
    assert "configured" in _apply(server_process, manifest % "6", check=True).stdout


def test_explain_shows_the_rules(server_process: ServerProcess) -> None:
    """kubectl explain prints descriptions, not x-kubernetes-validations: the descriptions say the rules."""
    # kubectl wraps descriptions at 80 columns.
    pizza = " ".join(server_process.kubectl("explain", "pizza.spec").stdout.split())
    assert "Rule: a pizza holds at most 30 portions." in pizza
    cost = " ".join(server_process.kubectl("explain", "topping.spec.cost").stdout.split())
    assert "An update may at most double it (rule: self <= oldSelf * 2.0)." in cost
