"""The OpenAPI documents the server publishes about its installed groups (pure functions).

The handlers serve:
- /openapi/v2                      -> openapi_v2(groups, patch_types=..., version_info=...)
- /openapi/v3                      -> openapi_v3_index(groups, patch_types=...)
- /openapi/v3/apis/{g}/{v}         -> encode_document(openapi_v3_group_version(group, v, patch_types=...))
The index's `?hash=` is computed over encode_document's bytes, so serve those bytes (with the same
patch_types) for the hash to name what the client receives.
"""

from __future__ import annotations

from server.endpoints.openapi.operations import definition_name
from server.endpoints.openapi.v2 import openapi_v2
from server.endpoints.openapi.v3 import (
    document_hash,
    encode_document,
    openapi_v3_group_version,
    openapi_v3_index,
)

__all__ = [
    "definition_name",
    "document_hash",
    "encode_document",
    "openapi_v2",
    "openapi_v3_group_version",
    "openapi_v3_index",
]
