"""Property tests: every valid hub object survives hub → version → hub, for every served version.

This is the book's roundtrip test (RoundTripTestForAPIGroup with a fuzzer that keeps toppings unique
and quantities positive), driven by hypothesis over the versions the installed GroupInfo serves.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.restaurant.install import GROUP, PIZZA_KIND, TOPPING_KIND
from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping, Topping, ToppingSpec
from apis.restaurant.v1alpha1.conversion import ORDER_NUMBER_ANNOTATION
from apis.restaurant.validation import validate_pizza, validate_topping
from apis.schema import apply_defaults, prune, validate

V1ALPHA1_PIZZA = PIZZA_KIND.versions["v1alpha1"]

_DNS_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
_LABEL_VALUES = st.from_regex(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?)?", fullmatch=True)
_COSTS = st.one_of(
    st.integers(min_value=0, max_value=10**9),
    st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False),
)


@st.composite
def metadata(draw: st.DrawFn, namespaced: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": draw(_DNS_LABEL)}
    if namespaced:
        meta["namespace"] = draw(_DNS_LABEL)
    if draw(st.booleans()):
        meta["labels"] = draw(st.dictionaries(_DNS_LABEL, _LABEL_VALUES, max_size=3))
    if draw(st.booleans()):
        # min_size=1: an empty map and no map are the same ObjectMeta (omitempty), and v1alpha1's
        # replicas annotations do not keep them apart.
        meta["annotations"] = draw(st.dictionaries(_DNS_LABEL, st.text(max_size=20), min_size=1, max_size=3))
    if draw(st.booleans()):
        meta["resourceVersion"] = str(draw(st.integers(min_value=1, max_value=10**12)))
        meta["uid"] = str(draw(st.uuids()))
        meta["generation"] = draw(st.integers(min_value=1, max_value=1000))
        meta["creationTimestamp"] = "2024-05-01T12:00:00Z"
    return meta


_TOPPING_NAMES = st.from_regex(r"[a-z]([a-z0-9-]{0,12}[a-z0-9])?", fullmatch=True)

pizza_toppings = st.lists(_TOPPING_NAMES, unique=True, max_size=6).flatmap(
    lambda names: st.tuples(*[st.integers(min_value=1, max_value=10) for _ in names]).map(
        lambda quantities: [PizzaTopping(name=n, quantity=q) for n, q in zip(names, quantities, strict=True)]
    )
)

pizzas = st.builds(
    Pizza,
    metadata=metadata(namespaced=True),
    spec=st.builds(
        PizzaSpec,
        toppings=pizza_toppings,
        replicas=st.none() | st.integers(0, 100),
        order_number=st.none() | st.integers(1, 10**9),
    ),
    status=st.builds(PizzaStatus, cost=st.none() | _COSTS, replicas=st.none() | st.integers(0, 10**6)),
)

toppings = st.builds(Topping, metadata=metadata(namespaced=False), spec=st.builds(ToppingSpec, cost=_COSTS))

_PIZZA_VERSIONS = list(PIZZA_KIND.versions.values())
_TOPPING_VERSIONS = list(TOPPING_KIND.versions.values())


def test_every_served_version_is_tested() -> None:
    assert [v.version for v in _PIZZA_VERSIONS] == list(GROUP.versions)
    assert [v.version for v in _TOPPING_VERSIONS] == list(GROUP.versions)


@pytest.mark.parametrize("kind", _PIZZA_VERSIONS, ids=lambda k: k.version)
@given(pizza=pizzas)
def test_pizza_roundtrips_through_every_version(kind: Any, pizza: Pizza) -> None:
    assert validate_pizza(pizza) == []
    assert kind.to_hub(kind.from_hub(pizza)) == pizza


@pytest.mark.parametrize("kind", _TOPPING_VERSIONS, ids=lambda k: k.version)
@given(topping=toppings)
def test_topping_roundtrips_through_every_version(kind: Any, topping: Topping) -> None:
    assert validate_topping(topping) == []
    back = kind.to_hub(kind.from_hub(topping))
    assert back == topping
    # int stays int: `cost: 2` must not come back as 2.0 (kubectl apply would report a change).
    assert type(back.spec.cost) is type(topping.spec.cost)


@given(pizza=pizzas)
def test_pizza_roundtrips_between_versions(pizza: Pizza) -> None:
    """hub → v1beta1 → hub → v1alpha1 → hub → v1beta1 gives back the first v1beta1 object."""
    beta, alpha = PIZZA_KIND.versions["v1beta1"], PIZZA_KIND.versions["v1alpha1"]
    first = beta.from_hub(pizza)
    again = beta.from_hub(alpha.to_hub(alpha.from_hub(beta.to_hub(first))))
    assert again == first


@pytest.mark.parametrize("kind", _PIZZA_VERSIONS, ids=lambda k: k.version)
@given(pizza=pizzas)
def test_pizza_conversions_do_not_mutate_or_alias_their_input(kind: Any, pizza: Pizza) -> None:
    hub_before = copy.deepcopy(pizza)
    versioned = kind.from_hub(pizza)
    assert pizza == hub_before
    assert "apiVersion" not in versioned and "kind" not in versioned

    versioned_before = copy.deepcopy(versioned)
    hub = kind.to_hub(versioned)
    assert versioned == versioned_before

    # Nothing done to an output may reach the input.
    hub.metadata.setdefault("labels", {})["touched"] = "yes"
    hub.spec.toppings.append(PizzaTopping(name="touched", quantity=1))
    hub.status.cost = -1
    assert versioned == versioned_before
    versioned["metadata"].setdefault("annotations", {})["touched"] = "yes"
    versioned["spec"]["toppings"].append("touched")
    assert pizza == hub_before


@pytest.mark.parametrize("kind", _TOPPING_VERSIONS, ids=lambda k: k.version)
@given(topping=toppings)
def test_topping_conversions_do_not_mutate_or_alias_their_input(kind: Any, topping: Topping) -> None:
    hub_before = copy.deepcopy(topping)
    versioned = kind.from_hub(topping)
    versioned_before = copy.deepcopy(versioned)
    hub = kind.to_hub(versioned)
    hub.metadata["name"] = "touched"
    hub.spec.cost = -1
    assert versioned == versioned_before
    versioned["metadata"]["name"] = "touched-too"
    assert topping == hub_before


@settings(max_examples=200)
@given(names=st.lists(st.sampled_from(["salami", "mozzarella", "tomato", "basil"]), max_size=12))
def test_v1alpha1_repeated_names_collapse_into_quantities(names: list[str]) -> None:
    hub = V1ALPHA1_PIZZA.to_hub({"metadata": {"name": "p"}, "spec": {"toppings": names}})
    assert validate_pizza(hub) == []
    # First-occurrence order, one entry per name, quantities count the repetitions.
    assert [t.name for t in hub.spec.toppings] == list(dict.fromkeys(names))
    assert all(t.quantity == names.count(t.name) for t in hub.spec.toppings)
    # Back in v1alpha1 the same multiset of portions, grouped by topping.
    back = V1ALPHA1_PIZZA.from_hub(hub)["spec"]["toppings"]
    assert sorted(back) == sorted(names)
    assert V1ALPHA1_PIZZA.to_hub(V1ALPHA1_PIZZA.from_hub(hub)) == hub


@given(pizza=pizzas, number=st.integers(1, 10**9))
def test_v1alpha1_carries_the_order_number_in_an_annotation(pizza: Pizza, number: int) -> None:
    pizza.spec.order_number = number
    alpha = V1ALPHA1_PIZZA.from_hub(pizza)
    assert "orderNumber" not in alpha["spec"]
    assert alpha["metadata"]["annotations"][ORDER_NUMBER_ANNOTATION] == str(number)
    back = V1ALPHA1_PIZZA.to_hub(alpha)
    assert back.spec.order_number == number
    assert ORDER_NUMBER_ANNOTATION not in (back.metadata.get("annotations") or {})


def _with_type_meta(obj: dict[str, Any], kind: str, version: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP.group}/{version}", "kind": kind, **obj}


@pytest.mark.parametrize("kind", _PIZZA_VERSIONS, ids=lambda k: k.version)
@given(pizza=pizzas)
def test_converted_pizzas_are_stable_under_the_schema_engine(kind: Any, pizza: Pizza) -> None:
    """What the server writes and returns is never pruned, re-defaulted or rejected by its own schema."""
    obj = _with_type_meta(kind.from_hub(pizza), "Pizza", kind.version)
    before = copy.deepcopy(obj)
    assert prune(obj, kind.schema) == []
    apply_defaults(obj, kind.schema)
    assert obj == before
    assert validate(obj, kind.schema) == []


@pytest.mark.parametrize("kind", _TOPPING_VERSIONS, ids=lambda k: k.version)
@given(topping=toppings)
def test_converted_toppings_are_stable_under_the_schema_engine(kind: Any, topping: Topping) -> None:
    obj = _with_type_meta(kind.from_hub(topping), "Topping", kind.version)
    before = copy.deepcopy(obj)
    assert prune(obj, kind.schema) == []
    apply_defaults(obj, kind.schema)
    assert obj == before
    assert validate(obj, kind.schema) == []
