"""Typed keys for what the filter chain leaves on a request (and the app's own settings).

One module, so every filter, handler and test reads the same key objects: aiohttp compares typed
keys by identity, and the types make a misspelt or mistyped use visible to a type checker.
"""

from __future__ import annotations

from datetime import datetime

from aiohttp import web

from apis.meta.user import UserInfo
from server.authz.interface import Authorizer
from server.request_info import RequestInfo

# The parsed request (verb, group, version, namespace, resource, subresource, name).
REQUEST_INFO = web.RequestKey("request_info", RequestInfo)
# The effective user: authenticated, or impersonated.
USER = web.RequestKey("user", UserInfo)
# The authenticated caller when USER is an impersonated user.
IMPERSONATED_BY = web.RequestKey("impersonated_by", UserInfo)
# Annotations for the request's audit event (e.g. the authorization decision).
AUDIT_ANNOTATIONS = web.RequestKey("audit_annotations", dict)
# Warnings admission webhooks returned; sent as `Warning` headers when the response is prepared.
ADMISSION_WARNINGS = web.RequestKey("admission_warnings", list)
# This request's audit ID and arrival time (kube's WithAuditInit / WithRequestReceivedTimestamp).
AUDIT_ID = web.RequestKey("audit_id", str)
RECEIVED = web.RequestKey("request_received_timestamp", datetime)
# The authorizer the chain decided with, for decisions a handler makes later (kube's create-on-update
# check of an apply that creates: withAuthorization in handlers/patch.go).
AUTHORIZER = web.RequestKey("authorizer", Authorizer)
# The per-request audit state of an audited request (server.filters.audit.RequestAudit).
AUDIT = web.RequestKey("audit", object)

# --min-request-timeout, for the server-chosen timeout of watches.
MIN_REQUEST_TIMEOUT = web.AppKey("min_request_timeout", float)
