"""The kinds' .proto files: written from the schemas, checked in, and numbered for good.

The checked-in files are the record of every field number a client or a stored byte may rely on, so
these tests hold the files to today's schemas and the generator to never renumbering: a new field
gets the next number, a removed one is reserved, a re-added name gets a new number.
"""

from __future__ import annotations

import copy
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apis.proto import generate
from apis.restaurant.install import GROUP as RESTAURANT
from apis.restaurant.v1beta1 import schema as v1beta1_schema
from apis.runtime.kinds import GroupInfo
from apis.runtime.proto_kinds import proto_messages
from apis.runtime.proto_schema import (
    COMMAND,
    RAW,
    TIME,
    ProtoKind,
    ProtoSchemaError,
    parse,
    proto_package,
    render,
    render_version,
)
from apis.wardle.install import GROUP as WARDLE

REPO = Path(__file__).resolve().parents[3]
GROUPS = generate.groups()
VERSIONS = [(group, version) for group in GROUPS for version in group.versions]


def _id(case: tuple[GroupInfo, str]) -> str:
    return f"{case[0].group}/{case[1]}"


def test_every_group_of_this_repository_has_messages() -> None:
    assert {g.group for g in GROUPS} == {RESTAURANT.group, WARDLE.group}
    assert {str(generate.kind_proto(g, v)) for g, v in VERSIONS} == {
        "apis/restaurant/v1alpha1/generated.proto",
        "apis/restaurant/v1beta1/generated.proto",
        "apis/wardle/proto/v1alpha1/generated.proto",
        "apis/wardle/proto/v1beta1/generated.proto",
    }


@pytest.mark.parametrize("case", VERSIONS, ids=_id)
def test_checked_in_proto_is_what_the_schemas_give(case: tuple[GroupInfo, str]) -> None:
    group, version = case
    path = generate.kind_proto(group, version)
    checked_in = (REPO / path).read_text()
    assert render_version(group, version, checked_in) == checked_in, (
        f"{path} does not match the schemas of {group.group}/{version}: run `{COMMAND}` and commit the result"
    )


@pytest.mark.parametrize("case", VERSIONS, ids=_id)
def test_generated_modules_are_compiled_from_the_checked_in_proto(case: tuple[GroupInfo, str]) -> None:
    """Every message and field number of the .proto is in the generated module, and nothing else."""
    group, version = case
    recorded = parse((REPO / generate.kind_proto(group, version)).read_text())
    module = importlib.import_module(f"{group.protobuf}.{version}.generated_pb2")
    assert module.DESCRIPTOR.package == proto_package(group.group, version)
    assert set(module.DESCRIPTOR.message_types_by_name) == set(recorded), f"run `{COMMAND}`"
    for name, message in recorded.items():
        descriptor = module.DESCRIPTOR.message_types_by_name[name]
        assert {f.name: f.number for f in descriptor.fields} == message.numbers, f"{name}: run `{COMMAND}`"


def test_package_names_come_from_the_group_and_version() -> None:
    assert proto_package(RESTAURANT.group, "v1beta1") == "restaurant.programming_kubernetes.info.v1beta1"
    assert proto_package("x.3com.io", "v1") == "x._3com.io.v1"


def test_messages_follow_go_to_protobuf() -> None:
    """Kind, list and nested messages as go-to-protobuf would write them for the equivalent Go types."""
    module = importlib.import_module("apis.restaurant.v1beta1.generated_pb2")
    fields = {
        name: {f.name: (f.number, f.message_type.full_name if f.message_type else f.type) for f in d.fields}
        for name, d in module.DESCRIPTOR.message_types_by_name.items()
    }
    meta = "k8s.io.apimachinery.pkg.apis.meta.v1"
    package = "restaurant.programming_kubernetes.info.v1beta1"
    assert fields["Pizza"] == {
        "metadata": (1, f"{meta}.ObjectMeta"),
        "spec": (2, f"{package}.PizzaSpec"),
        "status": (3, f"{package}.PizzaStatus"),
    }
    assert fields["PizzaList"] == {"metadata": (1, f"{meta}.ListMeta"), "items": (2, f"{package}.Pizza")}
    assert fields["PizzaSpec"]["toppings"] == (1, f"{package}.PizzaTopping")
    assert set(fields["PizzaSpec"]) == {"toppings", "replicas", "orderNumber"}
    assert set(fields) == {
        "Pizza", "PizzaList", "PizzaSpec", "PizzaStatus", "PizzaTopping",
        "Topping", "ToppingList", "ToppingSpec",
        "MenuItem", "MenuItemList", "MenuItemTopping",
    }  # fmt: skip
    spec = module.PizzaSpec.DESCRIPTOR.fields_by_name
    assert spec["toppings"].is_repeated
    assert spec["replicas"].type == spec["replicas"].TYPE_INT64


def _pizza(change: Any = None) -> list[ProtoKind]:
    schema = copy.deepcopy(v1beta1_schema.PIZZA_SCHEMA)
    if change is not None:
        change(schema["properties"]["spec"]["properties"])
    return [ProtoKind("Pizza", "PizzaList", schema, {"spec.toppings": "PizzaTopping"})]


def _render(kinds: list[ProtoKind], existing: str | None = None) -> str:
    return render(RESTAURANT.group, "v1beta1", kinds, existing)


def _numbers(text: str, message: str) -> dict[str, int]:
    return parse(text)[message].numbers


TODAY = _render(_pizza())


def test_a_new_field_takes_the_next_number_and_leaves_the_others() -> None:
    def add(spec: dict[str, Any]) -> None:
        # First in schema order, yet numbered after every field the record has.
        others = dict(spec)
        spec.clear()
        spec.update({"crust": {"type": "string", "description": "crust is the dough."}, **others})

    text = _render(_pizza(add), TODAY)
    before, after = _numbers(TODAY, "PizzaSpec"), _numbers(text, "PizzaSpec")
    assert after == {**before, "crust": max(before.values()) + 1}
    for message in ("Pizza", "PizzaList", "PizzaStatus", "PizzaTopping"):
        assert _numbers(text, message) == _numbers(TODAY, message)
    assert "\n  reserved" not in text
    assert list(parse(text)["PizzaSpec"].numbers)[-1] == "crust"  # written in number order


def test_a_removed_field_is_reserved_and_a_readded_name_gets_a_new_number() -> None:
    removed = _render(_pizza(lambda spec: spec.pop("replicas")), TODAY)
    spec = parse(removed)["PizzaSpec"]
    old = _numbers(TODAY, "PizzaSpec")
    assert spec.numbers == {k: v for k, v in old.items() if k != "replicas"}
    assert spec.reserved_numbers == {old["replicas"]} and spec.reserved_names == {"replicas"}
    assert f'  reserved {old["replicas"]};\n  reserved "replicas";' in removed

    readded = parse(_render(_pizza(), removed))["PizzaSpec"]
    assert readded.numbers == {**old, "replicas": max(old.values()) + 1}
    assert readded.reserved_numbers == {old["replicas"]} and readded.reserved_names == set()

    # and the record goes on: removing another field later keeps the first reservation
    again = parse(_render(_pizza(lambda spec: spec.pop("orderNumber")), _render(_pizza(), removed)))
    assert again["PizzaSpec"].reserved_numbers == {old["replicas"], old["orderNumber"]}
    assert again["PizzaSpec"].reserved_names == {"orderNumber"}


def test_a_field_whose_type_changes_is_a_new_field() -> None:
    def retype(spec: dict[str, Any]) -> None:
        spec["replicas"] = {"type": "string"}

    text = _render(_pizza(retype), TODAY)
    spec, old = parse(text)["PizzaSpec"], _numbers(TODAY, "PizzaSpec")
    assert spec.numbers["replicas"] == max(old.values()) + 1
    assert spec.signatures["replicas"] == "optional string"
    assert spec.reserved_numbers == {old["replicas"]} and spec.reserved_names == set()


def test_rendering_its_own_output_changes_nothing() -> None:
    text = _render(_pizza(lambda spec: spec.pop("replicas")), TODAY)
    assert _render(_pizza(lambda spec: spec.pop("replicas")), text) == text


WIDGET = {
    "type": "object",
    "description": "Widget exercises every construct.",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "format": "int32"},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "on": {"type": "boolean"},
                "since": {"type": "string", "format": "date-time"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "parts": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "properties": {"weight": {"type": "number"}}},
                },
                "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "port": {"x-kubernetes-int-or-string": True},
                "times": {"type": "array", "items": {"type": "string", "format": "date-time"}},
                "empty": {"type": "object"},
            },
        },
    },
}


def test_types_of_every_construct() -> None:
    spec = parse(render("example.com", "v1", [ProtoKind("Widget", "WidgetList", WIDGET)]))["WidgetSpec"]
    assert spec.signatures == {
        "size": "optional int32",
        "count": "optional int64",
        "ratio": "optional double",
        "on": "optional bool",
        "since": f"optional {TIME}",
        "labels": "map<string, string>",
        "parts": "map<string, WidgetSpecPartsValue>",
        "grid": f"optional {RAW}",
        "free": f"optional {RAW}",
        "port": f"optional {RAW}",
        "times": f"repeated {TIME}",
        "empty": "optional WidgetSpecEmpty",
    }


def test_every_construct_compiles(tmp_path: Path) -> None:
    """protoc accepts what the generator writes, imports included (the proto-gen extra's protoc)."""
    pytest.importorskip("grpc_tools")
    text = render("example.com", "v1", [ProtoKind("Widget", "WidgetList", WIDGET)])
    names = generate.stage(tmp_path, [])
    (tmp_path / "widget.proto").write_text(text.replace(generate.UPSTREAM_IMPORT, generate.STAGED_IMPORT))
    script = (
        "import sys; from importlib import resources; from grpc_tools import protoc; "
        "sys.exit(protoc.main(['protoc', '-I.', f'-I{resources.files(\"grpc_tools\") / \"_proto\"}', "
        "'--python_out=out', *sys.argv[1:]]))"
    )
    (tmp_path / "out").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, "widget.proto", *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "widget_pb2.py").exists()


def test_schemas_without_a_message_are_refused() -> None:
    bad = copy.deepcopy(WIDGET)
    bad["properties"]["spec"]["properties"]["x-count"] = {"type": "integer"}
    with pytest.raises(ProtoSchemaError, match="'x-count' cannot be a protobuf field name"):
        render("example.com", "v1", [ProtoKind("Widget", "WidgetList", bad)])
    clash = ProtoKind("Widget", "WidgetList", WIDGET, {"spec.empty": "WidgetSpec"})
    with pytest.raises(ProtoSchemaError, match="both be the protobuf message WidgetSpec"):
        render("example.com", "v1", [clash])


def test_proto_messages_finds_each_kind_and_its_list() -> None:
    for group, version in VERSIONS:
        for kind in group.kinds:
            found = proto_messages(group, version, kind.kind)
            if version not in kind.versions:
                assert found is None
                continue
            assert found is not None
            message, list_message = found
            package = proto_package(group.group, version)
            assert message.DESCRIPTOR.full_name == f"{package}.{kind.kind}"
            assert list_message.DESCRIPTOR.full_name == f"{package}.{kind.list_kind}"
    assert proto_messages(RESTAURANT, "v1beta1", "Bill") is None
    assert proto_messages(RESTAURANT, "v2", "Pizza") is None
    json_only = GroupInfo("plain.example.com", ("v1beta1",), RESTAURANT.kinds)
    assert proto_messages(json_only, "v1beta1", "Pizza") is None
