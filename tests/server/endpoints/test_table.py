"""meta.k8s.io Table and PartialObjectMetadata renderings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apis.meta.errors import StatusError
from apis.restaurant.install import PIZZA_KIND, TOPPING_KIND
from apis.runtime.kinds import GroupInfo
from server.endpoints.table import (
    human_duration,
    partial_object_metadata,
    partial_object_metadata_list,
    table,
)
from tests.server.endpoints.example_group import EXAMPLE


@pytest.fixture
def example_group() -> GroupInfo:
    """The made-up group (a cluster-scoped kind in two versions, a namespaced one with status)."""
    return EXAMPLE


NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _stamp(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def _widget(name: str, ago: timedelta, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v2",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "creationTimestamp": _stamp(ago),
        },
        "spec": spec,
    }


def _pairs(example_group: GroupInfo, *objs: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    widget = example_group.kind_named("Widget")
    assert widget is not None
    return [(widget.versions["v2"].to_hub(o), o) for o in objs]


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (1, "1s"),
        (70, "70s"),
        (190, "3m10s"),
        (300, "5m"),
        (70 * 60, "70m"),
        (5 * 3600 + 7 * 60, "5h7m"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d1h"),
        ((8 * 24 + 2) * 3600, "8d"),
        (367 * 24 * 3600, "367d"),
        ((365 * 2 * 24 + 25) * 3600, "2y1d"),
        ((365 * 8 * 24 + 2) * 3600, "8y"),
    ],
)
def test_human_duration(seconds: int, expected: str) -> None:
    assert human_duration(seconds) == expected


def test_columns_and_cells(example_group: GroupInfo) -> None:
    widget = example_group.kind_named("Widget")
    assert widget is not None
    objs = _pairs(
        example_group,
        _widget("a", timedelta(minutes=5), size=3, color="red", ready=True, since=_stamp(timedelta(hours=4))),
        _widget("b", timedelta(days=3), size=2.9, color=7, ready="yes"),
    )
    doc = table(widget, objs, include_object="None", table_version="v1", list_meta=None, now=NOW)
    assert doc["kind"] == "Table" and doc["apiVersion"] == "meta.k8s.io/v1"
    columns = doc["columnDefinitions"]
    assert [c["name"] for c in columns] == ["Name", "Size", "Color", "Ready", "Since", "Age"]
    assert columns[0]["type"] == "string" and columns[0]["format"] == "name"
    assert columns[0]["description"].startswith("Name must be unique within a namespace")
    assert columns[-1]["type"] == "date" and columns[-1]["description"].startswith("CreationTimestamp")
    assert columns[2]["priority"] == 1 and columns[1] == {
        "name": "Size",
        "type": "integer",
        "format": "",
        "description": "How big.",
        "priority": 0,
    }
    assert doc["rows"][0]["cells"] == ["a", 3, "red", True, "4h", "5m"]
    # Cells of the wrong type: integer truncates a number, a string column prints it, a bad bool is null.
    assert doc["rows"][1]["cells"] == ["b", 2, "7", None, None, "3d"]
    assert all(row["object"] is None for row in doc["rows"])
    # Several objects without list metadata: no resourceVersion to report.
    assert doc["metadata"] == {}


def test_include_object_metadata_and_object(example_group: GroupInfo) -> None:
    widget = example_group.kind_named("Widget")
    assert widget is not None
    obj = _widget("a", timedelta(seconds=30), size=1)
    pairs = _pairs(example_group, obj)
    meta_table = table(
        widget, pairs, include_object="Metadata", table_version="v1beta1", list_meta=None, now=NOW
    )
    assert meta_table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert meta_table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": obj["metadata"],
    }
    # A single object reports its own resourceVersion.
    assert meta_table["metadata"] == {"resourceVersion": "7"}
    # "" is kube's default: Metadata.
    default = table(widget, pairs, include_object="", table_version="v1", list_meta=None, now=NOW)
    assert default["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    full = table(widget, pairs, include_object="Object", table_version="v1", list_meta=None, now=NOW)
    assert full["rows"][0]["object"] == obj
    assert full["rows"][0]["object"] is not obj


def test_list_meta_and_no_headers(example_group: GroupInfo) -> None:
    widget = example_group.kind_named("Widget")
    assert widget is not None
    list_meta = {"resourceVersion": "42", "continue": "abc", "remainingItemCount": 3, "selfLink": "/x"}
    doc = table(widget, [], include_object="None", table_version="v1", list_meta=list_meta, no_headers=True)
    assert doc["metadata"] == {"resourceVersion": "42", "continue": "abc", "remainingItemCount": 3}
    assert doc["columnDefinitions"] is None
    assert doc["rows"] == []


def test_bad_include_object_and_version(example_group: GroupInfo) -> None:
    widget = example_group.kind_named("Widget")
    assert widget is not None
    with pytest.raises(StatusError) as bad:
        table(widget, [], include_object="Everything", table_version="v1", list_meta=None)
    assert bad.value.status()["code"] == 400
    assert 'unrecognized includeObject value: "Everything"' in bad.value.status()["message"]
    with pytest.raises(StatusError) as unacceptable:
        table(widget, [], include_object="None", table_version="v2", list_meta=None)
    assert unacceptable.value.status()["code"] == 406


def test_restaurant_tables() -> None:
    pizza = {
        "apiVersion": "restaurant.programming-kubernetes.info/v1beta1",
        "kind": "Pizza",
        "metadata": {
            "name": "margherita",
            "namespace": "default",
            "creationTimestamp": _stamp(timedelta(hours=1)),
        },
        "spec": {"toppings": [{"name": "mozzarella", "quantity": 2}, {"name": "tomato", "quantity": 1}]},
        "status": {"cost": 3.5},
    }
    hub = PIZZA_KIND.versions["v1beta1"].to_hub(pizza)
    doc = table(
        PIZZA_KIND, [(hub, pizza)], include_object="Object", table_version="v1", list_meta=None, now=NOW
    )
    assert [c["name"] for c in doc["columnDefinitions"]] == ["Name", "Toppings", "Cost", "Age"]
    assert doc["rows"][0]["cells"] == ["margherita", "2x mozzarella, tomato", 3.5, "60m"]
    assert doc["rows"][0]["object"]["kind"] == "Pizza"

    topping = {
        "apiVersion": "restaurant.programming-kubernetes.info/v1alpha1",
        "kind": "Topping",
        "metadata": {"name": "salami"},
        "spec": {"cost": 1},
    }
    hub_topping = TOPPING_KIND.versions["v1alpha1"].to_hub(topping)
    doc = table(
        TOPPING_KIND, [(hub_topping, topping)], include_object="None", table_version="v1", list_meta=None
    )
    # No creationTimestamp: kube's "<unknown>".
    assert doc["rows"][0]["cells"] == ["salami", 1, "<unknown>"]


def test_partial_object_metadata() -> None:
    obj = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n", "labels": {"a": "b"}},
        "spec": {"k": 1},
    }
    partial = partial_object_metadata(obj, "meta.k8s.io/v1")
    assert partial == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }
    partial["metadata"]["labels"]["a"] = "changed"
    assert obj["metadata"]["labels"]["a"] == "b"

    listed = partial_object_metadata_list([obj, obj], {"resourceVersion": "9"}, "v1beta1")
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["apiVersion"] == "meta.k8s.io/v1beta1"
    assert listed["metadata"] == {"resourceVersion": "9"}
    assert [i["apiVersion"] for i in listed["items"]] == ["meta.k8s.io/v1beta1"] * 2
    assert all(i["kind"] == "PartialObjectMetadata" for i in listed["items"])
    with pytest.raises(StatusError):
        partial_object_metadata(obj, "meta.k8s.io/v2")


def test_a_kind_without_columns_gets_kubes_default_table_convertor(example_group: GroupInfo) -> None:
    """rest.DefaultTableConvertor (sample-apiserver's kinds): Name and Created At, the timestamp as is."""
    gadget = example_group.kind_named("Gadget")
    assert gadget is not None and gadget.columns is None
    obj = {**_widget("g", timedelta(days=2)), "apiVersion": "example.com/v2", "kind": "Gadget"}
    doc = table(gadget, [(gadget.versions["v2"].to_hub(obj), obj)], include_object="None", now=NOW)
    assert [(c["name"], c["type"], c["format"]) for c in doc["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Created At", "date", ""),
    ]
    assert doc["rows"][0]["cells"] == ["g", "2024-04-29T12:00:00Z"]
