"""StoredObject.at_revision: the state a DELETED event carries, stamped with the delete's revision."""

from __future__ import annotations

import orjson

from apis.restaurant.install import GROUP, TOPPING_KIND
from apis.runtime.codec import Codec
from registry.generic.cache.stored import StoredObject

CODEC = Codec(GROUP.group, TOPPING_KIND)


def test_at_revision_changes_only_the_resource_version() -> None:
    stored = {
        "apiVersion": f"{GROUP.group}/v1beta1",
        "kind": "Topping",
        "metadata": {"name": "ham", "uid": "u-1", "labels": {"meat": "yes"}, "generation": 1},
        "spec": {"cost": 2.5},
    }
    hub = CODEC.decode(orjson.dumps(stored), 7)
    fields = {"metadata.name": "ham"}
    obj = StoredObject.from_hub(CODEC, "/toppings/ham", hub, fields, keep_hub=False)

    deleted = obj.at_revision(9)

    before, after = orjson.loads(obj.json("v1beta1")), orjson.loads(deleted.json("v1beta1"))
    assert after["metadata"].pop("resourceVersion") == "9"
    assert before["metadata"].pop("resourceVersion") == "7"
    assert after == before
    # The same as decoding the state and encoding it at the new revision, in every served version.
    again = CODEC.decode(orjson.dumps(stored), 9)
    for version in ("v1beta1", "v1alpha1"):
        assert deleted.json(version) == orjson.dumps(CODEC.to_version(again, version))
    assert (deleted.key, deleted.labels, deleted.fields) == (obj.key, {"meat": "yes"}, fields)
