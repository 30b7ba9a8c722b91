"""YAML request bodies (Content-Type application/yaml) and YAML responses (Accept application/yaml)."""

from __future__ import annotations

import yaml

GROUP = "restaurant.programming-kubernetes.info"

PIZZA_YAML = f"""\
apiVersion: {GROUP}/v1alpha1
kind: Pizza
metadata:
  name: yammy
  labels:
    created: "2024-01-01"   # a quoted date stays a string
  annotations:
    when: 2024-01-01T10:00:00Z
spec:
  toppings:
  - ham
  - ham
  - "yes"
"""


async def test_yaml_in_yaml_out(any_api) -> None:
    api = any_api
    await api.create_toppings("ham", "yes")
    r = await api.request(
        "POST",
        api.pizzas_path("v1alpha1"),
        data=PIZZA_YAML,
        headers={"Content-Type": "application/yaml", "Accept": "application/yaml"},
    )
    assert r.status == 201, r
    assert r.headers["Content-Type"] == "application/yaml"
    created = yaml.safe_load(r.text)
    assert created["kind"] == "Pizza"
    assert created["spec"]["toppings"] == ["ham", "ham", "yes"]
    assert created["metadata"]["labels"] == {"created": "2024-01-01"}
    # An unquoted timestamp in YAML is still a string in JSON (kube converts YAML → JSON first).
    annotations = created["metadata"]["annotations"]
    assert annotations.pop(f"{api.GROUP}/spec.orderNumber").isdigit()  # v1alpha1 carries it so
    assert annotations == {"when": "2024-01-01T10:00:00Z"}

    r = await api.get(api.pizzas_path("v1beta1", "yammy"), headers={"Accept": "application/yaml"})
    assert r.status == 200
    assert r.headers["Content-Type"] == "application/yaml"
    got = yaml.safe_load(r.text)
    assert got["apiVersion"] == f"{GROUP}/v1beta1"
    assert sorted(got["spec"]["toppings"], key=lambda t: t["name"]) == [
        {"name": "ham", "quantity": 2},
        {"name": "yes", "quantity": 1},
    ]
    assert isinstance(got["metadata"]["resourceVersion"], str)

    r = await api.get(api.pizzas_path("v1beta1"), headers={"Accept": "application/yaml"})
    listed = yaml.safe_load(r.text)
    assert listed["kind"] == "PizzaList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["yammy"]


async def test_yaml_update_and_text_yaml(api) -> None:
    r = await api.request(
        "POST",
        api.toppings_path(),
        data=f"apiVersion: {GROUP}/v1beta1\nkind: Topping\nmetadata:\n  name: y\nspec:\n  cost: 1.25\n",
        headers={"Content-Type": "text/yaml"},
    )
    assert r.status == 201, r
    assert r.headers["Content-Type"] == "application/json"
    rv = r.body["metadata"]["resourceVersion"]
    text = (
        f"apiVersion: {GROUP}/v1beta1\nkind: Topping\nmetadata:\n  name: y\n  resourceVersion: '{rv}'\n"
        "spec:\n  cost: 2\n"
    )
    r = await api.request(
        "PUT", api.toppings_path("v1beta1", "y"), data=text, headers={"Content-Type": "application/yaml"}
    )
    assert r.status == 200, r
    assert r.body["spec"] == {"cost": 2}


async def test_yaml_errors_come_back_as_json_status(api) -> None:
    r = await api.request(
        "POST",
        api.toppings_path(),
        data=f"apiVersion: {GROUP}/v1beta1\nkind: Topping\nmetadata:\n  name: neg\nspec:\n  cost: -2\n",
        headers={"Content-Type": "application/yaml", "Accept": "application/yaml"},
    )
    assert r.status == 422, r
    status = yaml.safe_load(r.text)  # JSON is YAML, whichever the server picked
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.cost"]
