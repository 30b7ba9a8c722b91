"""wardle.example.com/v1beta1 (sample-apiserver's pkg/apis/wardle/v1beta1): the hub's shape.

One addition to sample-apiserver's type: a CEL rule on `flunderReference` (a flunder's name, so
never an absolute URL), which exercises the Kubernetes URL library through the server; the
restaurant types keep only the rules their issue asked for.
"""

from __future__ import annotations

from apis.meta.schemas import object_schema
from apis.schema.build import string, struct

VERSION = "v1beta1"

NOT_A_URL = {"rule": "!isURL(self) || url(self).getScheme() == ''", "message": "is a name, not a URL"}

FLUNDER = object_schema(
    "Flunder is an example type with a spec and a status.",
    {
        "spec": struct(
            "FlunderSpec is the specification of a Flunder.",
            flunderReference=string(
                "A name of another flunder, mutually exclusive to the FischerReference.",
                **{"x-kubernetes-validations": [NOT_A_URL]},
            ),
            fischerReference=string("A name of a fischer, mutually exclusive to the FlunderReference."),
            referenceType=string("The reference type."),
        ),
        "status": struct("FlunderStatus is the status of a Flunder."),
    },
)
