"""`optionalOldSelf` rules over real HTTPS: oldSelf is optional.none() on create and
optional.of(the stored value) on update, as kube-apiserver binds it for a CRD.

The rules sit on a test-only group (tests/fixtures/cel_test_group.py), installed through an entry
point as any group is. The messages are the rules' own, in kube's cause shape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cel_test_group import GROUP_NAME, installed_as_distribution
from tests.fixtures.server import running_server
from tests.integration.conftest import Api

GADGETS = f"/apis/{GROUP_NAME}/v1/namespaces/default/gadgets"


@pytest.fixture
async def gadget_api(tmp_path: Path) -> AsyncIterator[Api]:
    with installed_as_distribution(tmp_path / "site"):
        async with (
            running_server(tmp_path / "data", "--api-groups", GROUP_NAME) as server,
            server.session() as session,
        ):
            yield Api(server, session)


def _gadget(name: str, replicas: int, mode: str = "fast") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP_NAME}/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "mode": mode},
    }


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_optional_old_self_on_create(gadget_api: Api) -> None:
    api = gadget_api
    # oldSelf is optional.none(): orValue(0) holds, the immutability rule passes, the create-only one runs.
    r = await api.post(GADGETS, _gadget("big", 11))
    assert r.status == 422, r
    assert _causes(r.body) == [("FieldValueInvalid", "spec", "Invalid value: start with at most 10 replicas")]
    r = await api.post(GADGETS, _gadget("negative", -1))
    assert r.status == 422, r
    assert _causes(r.body) == [
        ("FieldValueInvalid", "spec", "Invalid value: replicas may not go down, from 0 to -1")
    ]
    r = await api.post(GADGETS, _gadget("ok", 3))
    assert r.status == 201, r


async def test_optional_old_self_on_update(gadget_api: Api) -> None:
    api = gadget_api
    r = await api.post(GADGETS, _gadget("g", 3))
    assert r.status == 201, r
    current = r.body
    # oldSelf is optional.of(the stored spec): the create-only rule no longer applies.
    current["spec"]["replicas"] = 12
    r = await api.put(f"{GADGETS}/g", current)
    assert r.status == 200, r
    current = r.body
    current["spec"]["replicas"] = 5
    current["spec"]["mode"] = "slow"
    r = await api.put(f"{GADGETS}/g", current)
    assert r.status == 422, r
    assert _causes(r.body) == [
        ("FieldValueInvalid", "spec", "Invalid value: replicas may not go down, from 12 to 5"),
        ("FieldValueInvalid", "spec", "Invalid value: mode is immutable"),
    ]
    assert r.body["message"] == (
        f'Gadget.{GROUP_NAME} "g" is invalid: [spec: Invalid value: replicas may not go down, from 12 to 5, '
        "spec: Invalid value: mode is immutable]"
    )
    r = await api.patch(f"{GADGETS}/g", {"spec": {"replicas": 13}}, "application/merge-patch+json")
    assert r.status == 200, r
    assert r.body["spec"] == {"replicas": 13, "mode": "fast"}
