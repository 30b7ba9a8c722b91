"""Strategies on hub objects with and without spec/status (a Fischer has neither)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apis.meta.names import name_is_dns_subdomain, name_is_path_segment
from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping
from registry.generic.strategy import PlainStrategy, SpecStatusStrategy, StatusStrategy


@dataclass
class NoSpec:
    metadata: dict[str, Any]
    disallowed: list[str] = field(default_factory=list)


def test_spec_status_strategy_on_a_kind_without_spec() -> None:
    strategy = SpecStatusStrategy(namespaced=False, has_status=False)
    old = NoSpec({"name": "x", "generation": 1})
    new = NoSpec({"name": "x", "labels": {"a": "b"}}, ["y"])
    strategy.prepare_for_update(new, old)
    assert new.metadata["generation"] == 1
    assert StatusStrategy(main=strategy).prepare_for_update(new, old) is None


def test_spec_status_strategy_counts_spec_changes() -> None:
    strategy = SpecStatusStrategy(namespaced=True, empty_status=PizzaStatus)
    old = Pizza({"name": "p", "generation": 3}, PizzaSpec([PizzaTopping("ham")]), PizzaStatus(cost=2))
    new = Pizza({"name": "p"}, PizzaSpec([PizzaTopping("ham", 2)]), PizzaStatus())
    strategy.prepare_for_update(new, old)
    assert new.metadata["generation"] == 4 and new.status == PizzaStatus(cost=2)


def test_spec_status_strategy_drops_a_status_sent_on_create() -> None:
    """As apiextensions does for a kind with /status; without `empty_status` the status's own type,
    empty, is the reset value (a new group declares nothing for it)."""
    for strategy in (SpecStatusStrategy(namespaced=True), SpecStatusStrategy(True, empty_status=PizzaStatus)):
        pizza = Pizza({"name": "p"}, PizzaSpec([PizzaTopping("ham")]), PizzaStatus(cost=2))
        strategy.prepare_for_create(pizza)
        assert pizza.status == PizzaStatus() and pizza.metadata["generation"] == 1
    no_status = NoSpec({"name": "x"})
    SpecStatusStrategy(namespaced=False).prepare_for_create(no_status)
    assert not hasattr(no_status, "status")


def test_plain_strategy_prepares_nothing_and_checks_path_segments() -> None:
    strategy = PlainStrategy(namespaced=False)
    obj = NoSpec({"name": "x"})
    strategy.prepare_for_create(obj)
    strategy.prepare_for_update(obj, NoSpec({"name": "x", "generation": 5}))
    assert obj.metadata == {"name": "x"}
    assert strategy.validate_name is name_is_path_segment
    assert SpecStatusStrategy(namespaced=True).validate_name is name_is_dns_subdomain
    assert StatusStrategy(main=SpecStatusStrategy(namespaced=True)).validate_name is name_is_dns_subdomain


def test_path_segment_names() -> None:
    assert name_is_path_segment("Upper_Case.ok", False) == []
    assert name_is_path_segment("..", False) == ["may not be '..'"]
    assert name_is_path_segment("a/b%c", False) == ["may not contain '/'", "may not contain '%'"]
    assert name_is_path_segment(".", True) == []  # a generateName prefix gets a suffix
