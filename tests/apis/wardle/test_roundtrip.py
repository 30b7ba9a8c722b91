"""wardle's declared kinds: the generated hub types and every version's conversion round-trip.

hub → version → hub is the identity for every valid hub object and every served version (the
book's round-trip test, driven by hypothesis), through the JSON a client would see (pruned and
defaulted by that version's schema, so schema and conversion cannot drift apart).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.meta.schemas import object_schema
from apis.runtime.codec import Codec
from apis.runtime.declare import Version, declare_kind
from apis.runtime.kinds import HubObject
from apis.schema import apply_defaults, prune, validate
from apis.schema.build import array, struct
from apis.wardle.install import FISCHER_KIND, FLUNDER_KIND, GROUP, Fischer, Flunder
from apis.wardle.validation import validate_flunder

_NAMES = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", fullmatch=True)
FlunderSpec = type(Flunder(metadata={}).spec)
FlunderStatus = type(Flunder(metadata={}).status)


@st.composite
def flunders(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from([None, "Flunder", "Fischer"]))
    reference = draw(_NAMES) if kind else None
    spec = FlunderSpec(
        flunder_reference=reference if kind == "Flunder" else None,
        fischer_reference=reference if kind == "Fischer" else None,
        reference_type=kind,
    )
    metadata = {"name": draw(_NAMES), "namespace": draw(_NAMES)}
    return Flunder(metadata=metadata, spec=spec, status=FlunderStatus())


@st.composite
def fischers(draw: st.DrawFn) -> Any:
    return Fischer(metadata={"name": draw(_NAMES)}, disallowed_flunders=draw(st.lists(_NAMES, max_size=4)))


def _through(codec: Codec, hub: HubObject, version: str) -> HubObject:
    data = orjson.loads(orjson.dumps(codec.to_version(hub, version)))
    schema = codec.kind.versions[version].schema
    assert prune(data, schema) == []
    apply_defaults(data, schema)
    assert validate(data, schema) == []
    return codec.from_version(data, version)


@settings(max_examples=200, deadline=None)
@given(flunders())
def test_flunder_round_trips_through_every_version(flunder: Any) -> None:
    assert validate_flunder(flunder) == []
    before = copy.deepcopy(flunder)
    codec = Codec(GROUP.group, FLUNDER_KIND)
    for version in FLUNDER_KIND.versions:
        assert _through(codec, flunder, version) == flunder, version
    assert flunder == before  # conversions never mutate their input


@settings(max_examples=100, deadline=None)
@given(fischers())
def test_fischer_round_trips(fischer: Any) -> None:
    codec = Codec(GROUP.group, FISCHER_KIND)
    assert _through(codec, fischer, "v1alpha1") == fischer


def test_hub_types_follow_the_hub_version_schema() -> None:
    """Attributes are the v1beta1 JSON names in snake_case; Fischer has no spec and no status."""
    assert Flunder.__name__ == "Flunder" and FlunderSpec.__name__ == "FlunderSpec"
    assert FlunderSpec.__slots__ == ("flunder_reference", "fischer_reference", "reference_type")
    assert Fischer.__slots__ == ("metadata", "disallowed_flunders")
    assert isinstance(Fischer(metadata={}), HubObject)


def test_v1alpha1_conversion_as_sample_apiserver() -> None:
    codec = Codec(GROUP.group, FLUNDER_KIND)
    # SetDefaults_FlunderSpec: a reference without a type is a Flunder.
    hub = codec.from_version({"metadata": {}, "spec": {"reference": "a"}}, "v1alpha1")
    assert hub.spec == FlunderSpec(flunder_reference="a", fischer_reference=None, reference_type="Flunder")
    hub = codec.from_version(
        {"metadata": {}, "spec": {"reference": "a", "referenceType": "Fischer"}}, "v1alpha1"
    )
    assert codec.to_version(hub, "v1beta1")["spec"] == {"fischerReference": "a", "referenceType": "Fischer"}
    # Convert_v1alpha1_FlunderSpec_To_wardle_FlunderSpec ignores types it does not know.
    hub = codec.from_version({"metadata": {}, "spec": {"reference": "a", "referenceType": "X"}}, "v1alpha1")
    assert hub.spec == FlunderSpec()
    # Go writes empty structs, never empty fields.
    assert codec.to_version(hub, "v1alpha1") == {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {},
        "spec": {},
        "status": {},
    }


def test_declared_fields_keep_defaulted_empties_and_hold_integers_as_ints() -> None:
    """Go's omitempty leaves out `[]` and `""`; for a field with a schema default that would let the
    default apply on the next read, so such fields are written as they are."""
    items = array({"type": "string"}, "Things.", default=["a"])
    count = {"type": "integer", "description": "Count."}
    schema = object_schema(
        "T.", {"spec": struct("Spec.", things=items, other=array({"type": "string"}, "O."), count=count)}
    )
    kind, _ = declare_kind(
        "Thing",
        hub_version="v1",
        versions={"v1": Version(schema)},
        storage_version="v1",
        namespaced=False,
        module=__name__,
    )
    codec = Codec("g", kind)
    hub = codec.from_version({"metadata": {}, "spec": {"things": [], "other": []}}, "v1")
    assert codec.to_version(hub, "v1")["spec"] == {"things": []}
    # A whole float is a valid integer for the schema; the hub holds it as an int.
    hub = codec.from_version({"metadata": {}, "spec": {"count": 2.0}}, "v1")
    assert type(hub.spec.count) is int and codec.to_version(hub, "v1")["spec"]["count"] == 2
