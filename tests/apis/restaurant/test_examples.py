"""examples/ must go through `kubectl apply -f examples/` in one go against a fresh server.

kubectl applies a directory's files in name order and a file's documents in order, so every topping a
pizza names must be defined earlier in that sequence (the PizzaToppings admission plugin rejects
pizzas with unknown toppings).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from apis.restaurant.install import GROUP
from apis.restaurant.validation import validate_pizza, validate_topping
from apis.schema import apply_defaults, prune, validate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _documents() -> list[tuple[str, dict[str, Any]]]:
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):  # kubectl's order
        # Test-time file reading: no event loop is involved here.
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d is not None]
    return docs


def _kind_and_version(doc: dict[str, Any]) -> tuple[Any, Any]:
    group, _, version = doc["apiVersion"].partition("/")
    assert group == GROUP.group
    kind = GROUP.kind_named(doc["kind"])
    assert kind is not None, doc["kind"]
    return kind, kind.versions[version]


def _defaulted_toppings(doc: dict[str, Any], versioned: Any) -> Any:
    spec_schema = versioned.schema["properties"]["spec"]
    return (doc.get("spec") or {}).get("toppings", spec_schema["properties"]["toppings"]["default"])


def test_examples_exist_in_both_versions() -> None:
    docs = _documents()
    seen = {(d["kind"], d["apiVersion"].rpartition("/")[2]) for _, d in docs}
    assert seen == {(k, v) for k in ("Topping", "Pizza") for v in GROUP.versions}
    names = [d["metadata"]["name"] for _, d in docs]
    assert len(names) == len(set(names))


def test_every_example_decodes_converts_and_validates() -> None:
    for filename, doc in _documents():
        kind, versioned = _kind_and_version(doc)
        where = f"{filename} {doc['metadata']['name']}"
        assert "namespace" not in doc["metadata"], f"{where}: kubectl should pick the namespace"
        obj = copy.deepcopy(doc)
        assert prune(obj, versioned.schema) == [], f"{where}: unknown fields (kubectl would fail Strict)"
        apply_defaults(obj, versioned.schema)
        assert validate(obj, versioned.schema) == [], where
        hub = versioned.to_hub(obj)
        errors = validate_pizza(hub) if kind.kind == "Pizza" else validate_topping(hub)
        assert errors == [], f"{where}: {errors}"


def test_pizzas_only_name_toppings_defined_before_them() -> None:
    defined: set[str] = set()
    pizzas = 0
    for filename, doc in _documents():
        kind, versioned = _kind_and_version(doc)
        if kind.kind == "Topping":
            defined.add(doc["metadata"]["name"])
            continue
        pizzas += 1
        hub = versioned.to_hub({**doc, "spec": {"toppings": _defaulted_toppings(doc, versioned)}})
        missing = {t.name for t in hub.spec.toppings} - defined
        assert not missing, f"{filename} {doc['metadata']['name']} needs {missing} first"
    assert pizzas >= 3


@pytest.mark.parametrize("feature", ["repeated v1alpha1 names", "v1beta1 quantities", "defaults"])
def test_examples_show_each_feature(feature: str) -> None:
    pizzas = [d for _, d in _documents() if d["kind"] == "Pizza"]
    if feature == "repeated v1alpha1 names":
        assert any(
            d["apiVersion"].endswith("v1alpha1") and len(set(t := d["spec"]["toppings"])) < len(t)
            for d in pizzas
            if d.get("spec")
        )
    elif feature == "v1beta1 quantities":
        assert any(
            d["apiVersion"].endswith("v1beta1")
            and any(t.get("quantity", 1) > 1 for t in d["spec"]["toppings"])
            for d in pizzas
            if d.get("spec")
        )
    else:
        assert any("toppings" not in (d.get("spec") or {}) for d in pizzas)
