"""autoscaling/v1 Scale: the body every /scale subresource reads and writes, whatever kind it scales.

The structural schema decodes a PUT body (pruning, strict field validation, types) the same way a
kind's own schema decodes its bodies. The JSON written back follows the Go struct's tags:
spec.replicas is `omitempty` (0 is left out), status.replicas is always written, status.selector only
when set.
"""

from __future__ import annotations

from typing import Any

from apis.meta.schemas import object_schema

GROUP = "autoscaling"
VERSION = "v1"
KIND = "Scale"
API_VERSION = f"{GROUP}/{VERSION}"
# ScaleSpec.replicas and ScaleStatus.replicas are int32.
MAX_INT32 = 2**31 - 1

SCALE_SCHEMA: dict[str, Any] = object_schema(
    "Scale represents a scaling request for a resource.",
    {
        "spec": {
            "type": "object",
            "description": "ScaleSpec describes the attributes of a scale subresource.",
            "properties": {
                "replicas": {
                    "type": "integer",
                    "format": "int32",
                    "description": "replicas is the desired number of instances for the scaled object.",
                },
            },
        },
        "status": {
            "type": "object",
            "description": "ScaleStatus represents the current status of a scale subresource.",
            "properties": {
                "replicas": {
                    "type": "integer",
                    "format": "int32",
                    "description": (
                        "replicas is the actual number of observed instances of the scaled object."
                    ),
                },
                "selector": {"type": "string", "description": "selector is the label query over pods."},
            },
        },
    },
)


def scale(
    metadata: dict[str, Any], spec_replicas: int, status_replicas: int, selector: str
) -> dict[str, Any]:
    """The Scale JSON as Go encodes autoscalingv1.Scale."""
    spec: dict[str, Any] = {"replicas": spec_replicas} if spec_replicas else {}
    status: dict[str, Any] = {"replicas": status_replicas}
    if selector:
        status["selector"] = selector
    return {"kind": KIND, "apiVersion": API_VERSION, "metadata": metadata, "spec": spec, "status": status}
