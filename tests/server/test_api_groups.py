"""Groups installed, not imported: entry points, `--api-groups`, and servers built from a choice.

The installations are built over a real embedded store, the way server/config.py builds them.
"""

from __future__ import annotations

import argparse

import pytest

from server.api_groups import ApiGroupsOptions
from server.endpoints.registry import build_registry
from server.installed import install_groups, installed_group_names
from storage.embedded import EmbeddedStorage
from storage.interface import Interface

RESTAURANT = "restaurant.programming-kubernetes.info"
WARDLE = "wardle.example.com"


@pytest.fixture
def storage(embedded_storage: EmbeddedStorage) -> Interface:
    return embedded_storage


def _parse(*argv: str) -> ApiGroupsOptions:
    parser = argparse.ArgumentParser()
    ApiGroupsOptions.add_flags(parser)
    return ApiGroupsOptions(**vars(parser.parse_args(argv)))


def test_both_groups_are_installed_through_entry_points() -> None:
    assert {RESTAURANT, WARDLE} <= set(installed_group_names())


def test_flag_defaults_to_every_installed_group() -> None:
    options = _parse()
    assert options.api_groups == [] and options.validate() == []
    assert _parse("--api-groups", f"{WARDLE},{RESTAURANT}").api_groups == [WARDLE, RESTAURANT]


def test_flag_refuses_groups_not_installed() -> None:
    [problem] = _parse("--api-groups", f"{WARDLE},nope.example.com").validate()
    assert problem.startswith("--api-groups: 'nope.example.com' is not an installed API group")


async def test_a_server_with_only_wardle(storage: Interface) -> None:
    installations = _parse("--api-groups", WARDLE).install(storage)
    registry = build_registry(installations)
    assert [g.group for g in registry.groups] == [WARDLE]
    assert registry.lookup(WARDLE, "v1beta1", "flunders") is not None
    assert registry.lookup(WARDLE, "v1beta1", "fischers") is None
    assert registry.lookup(RESTAURANT, "v1beta1", "pizzas") is None
    # Only the deprecated version's scopes carry kube's warning.
    assert registry.lookup(WARDLE, "v1beta1", "flunders").warnings == ()
    assert registry.lookup(WARDLE, "v1alpha1", "fischers").warnings == (
        "wardle.example.com/v1alpha1 Fischer is deprecated in v1.3+, unavailable in v1.10+",
    )


async def test_every_group_by_default(storage: Interface) -> None:
    groups = [i.group.group for i in install_groups(storage)]
    assert groups == sorted(installed_group_names())
    with pytest.raises(ValueError, match="not installed: nope"):
        install_groups(storage, ["nope"])
