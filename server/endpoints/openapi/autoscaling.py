"""The autoscaling/v1 Scale definitions, for kinds that serve /scale, named and described as kube's.

kube-openapi names them io.k8s.api.autoscaling.v1.*; kube-aggregator merges identical definitions
across servers, so they are the same text as kube-apiserver publishes (written in v2 form; v3.py
rewrites the refs).
"""

from __future__ import annotations

from typing import Any

from apis.autoscaling import v1 as autoscaling
from server.endpoints.openapi import meta

PREFIX = "io.k8s.api.autoscaling.v1."
SCALE = PREFIX + "Scale"
_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"


def definitions() -> dict[str, dict[str, Any]]:
    return {
        SCALE: {
            "description": "Scale represents a scaling request for a resource.",
            "type": "object",
            "properties": {
                "apiVersion": {"description": meta.API_VERSION_DESCRIPTION, "type": "string"},
                "kind": {"description": meta.KIND_DESCRIPTION, "type": "string"},
                "metadata": {
                    "$ref": meta.V2_PREFIX + meta.OBJECT_META,
                    "description": f"Standard object metadata; More info: {_CONVENTIONS}#metadata.",
                },
                "spec": {
                    "$ref": meta.V2_PREFIX + PREFIX + "ScaleSpec",
                    "description": "spec defines the behavior of the scale. More info: "
                    f"{_CONVENTIONS}#spec-and-status.",
                },
                "status": {
                    "$ref": meta.V2_PREFIX + PREFIX + "ScaleStatus",
                    "description": "status is the current status of the scale. More info: "
                    f"{_CONVENTIONS}#spec-and-status. Read-only.",
                },
            },
            "x-kubernetes-group-version-kind": [
                {"group": autoscaling.GROUP, "kind": autoscaling.KIND, "version": autoscaling.VERSION}
            ],
        },
        PREFIX + "ScaleSpec": {
            "description": "ScaleSpec describes the attributes of a scale subresource.",
            "type": "object",
            "properties": {
                "replicas": {
                    "description": "replicas is the desired number of instances for the scaled object.",
                    "type": "integer",
                    "format": "int32",
                },
            },
        },
        PREFIX + "ScaleStatus": {
            "description": "ScaleStatus represents the current status of a scale subresource.",
            "type": "object",
            "required": ["replicas"],
            "properties": {
                "replicas": {
                    "description": (
                        "replicas is the actual number of observed instances of the scaled object."
                    ),
                    "type": "integer",
                    "format": "int32",
                },
                "selector": {
                    "description": "selector is the label query over pods that should match the replicas "
                    "count. This is same as the label selector but in the string format to avoid "
                    "introspection by the clients. The string will be in the same format as the query-param "
                    "syntax. More info about label selectors: "
                    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels",
                    "type": "string",
                },
            },
        },
    }
