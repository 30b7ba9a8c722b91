"""The structural-schema engine: one schema drives pruning, defaulting, validation and published OpenAPI."""

from apis.schema.defaults import apply_defaults
from apis.schema.openapi import published_v2, published_v3
from apis.schema.prune import prune, unknown_fields
from apis.schema.validate import validate

__all__ = ["apply_defaults", "prune", "published_v2", "published_v3", "unknown_fields", "validate"]
