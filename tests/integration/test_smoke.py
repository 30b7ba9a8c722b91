"""The server comes up over HTTPS on each backend and serves the restaurant group end to end."""

from __future__ import annotations

GROUP = "restaurant.programming-kubernetes.info"


async def test_create_read_in_both_versions(api_server) -> None:
    async with api_server.session() as s:
        r = await s.post(
            f"/apis/{GROUP}/v1beta1/toppings",
            json={
                "apiVersion": f"{GROUP}/v1beta1",
                "kind": "Topping",
                "metadata": {"name": "tomato"},
                "spec": {"cost": 1},
            },
        )
        assert r.status == 201, await r.text()
        r = await s.post(
            f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas",
            json={
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": "Pizza",
                "metadata": {"name": "p"},
                "spec": {"toppings": ["tomato", "tomato"]},
            },
        )
        assert r.status == 201, await r.text()
        r = await s.get(f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas/p")
        body = await r.json()
        assert body["spec"]["toppings"] == [{"name": "tomato", "quantity": 2}]
