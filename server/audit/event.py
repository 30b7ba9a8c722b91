"""One request's audit record and the audit.k8s.io/v1 Event dicts it produces at each stage.

Mirrors k8s.io/apiserver pkg/audit/{request,context,format}.go. The record is mutated as the request
moves on (response code, objects, annotations); every emitted event is a fresh dict, so a backend that
holds on to an event (a batch waiting for the webhook) never sees later changes — kube deep-copies for
the same reason. Keys are in the order of kube's Go struct, so logs diff cleanly against kube's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from apis.goformat import go_quote
from apis.meta.user import UserInfo
from server.audit.policy import GROUP_VERSION, LEVEL_REQUEST, LEVEL_REQUEST_RESPONSE, level_rank
from server.request_info import RequestInfo

MAX_USER_AGENT_LENGTH = 1024
USER_AGENT_TRUNCATE_SUFFIX = "...TRUNCATED"


def micro_time(t: datetime) -> str:
    """metav1.MicroTime's JSON form: RFC 3339 in UTC with exactly six fractional digits."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_nano(t: datetime) -> str:
    """Go's time.RFC3339Nano (trailing zeros of the fraction dropped), used by the legacy format."""
    base = t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{t.microsecond:06d}".rstrip("0")
    return f"{base}.{fraction}Z" if fraction else f"{base}Z"


def source_ips(headers: Mapping[str, str], remote: str | None) -> list[str]:
    """kube's utilnet.SourceIPs: X-Forwarded-For chain, then X-Real-Ip, then the peer address."""
    ips: list[str] = []
    forwarded = headers.get("X-Forwarded-For", "")
    for part in forwarded.split(",") if forwarded else []:
        ip = _parse_ip(part.strip())
        if ip is not None:
            ips.append(ip)
    real = _parse_ip(headers.get("X-Real-Ip", ""))
    if real is not None and real not in ips:
        ips.append(real)
    peer = _parse_ip(remote or "")
    # The peer cannot be spoofed, so it is always there; not repeated if the chain already ends with it.
    if peer is not None and (not ips or ips[-1] != peer):
        ips.append(peer)
    return ips


def _parse_ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return None


def user_agent(headers: Mapping[str, str]) -> str:
    agent = headers.get("User-Agent", "")
    if len(agent) > MAX_USER_AGENT_LENGTH:
        agent = agent[:MAX_USER_AGENT_LENGTH] + USER_AGENT_TRUNCATE_SUFFIX
    return agent


def object_ref(info: RequestInfo) -> dict[str, str] | None:
    """audit ObjectReference for resource requests, keys in kube's order, empty values left out."""
    if not info.is_resource_request:
        return None
    ref = {
        "resource": info.resource,
        "namespace": info.namespace,
        "name": info.name,
        "apiGroup": info.api_group,
        "apiVersion": info.api_version,
        "subresource": info.subresource,
    }
    return {k: v for k, v in ref.items() if v}


_OBJECT_REF_ORDER = ("resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion")


def response_status(code: int, status: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bounded copy of a Status kube keeps in an event (status, message, reason, details, code)."""
    out: dict[str, Any] = {"metadata": {}}
    if status is not None:
        for key in ("status", "message", "reason", "details"):
            if status.get(key):
                out[key] = status[key]
    out["code"] = code
    return out


def without_managed_fields(obj: Any) -> Any:
    """A copy with metadata.managedFields dropped from an object, a list's items or a Table's rows."""
    if not isinstance(obj, dict):
        return obj
    out = _drop_managed(obj)
    if isinstance(obj.get("items"), list):
        out["items"] = [_drop_managed(i) if isinstance(i, dict) else i for i in obj["items"]]
    if obj.get("kind") == "Table" and isinstance(obj.get("rows"), list):
        rows = []
        for row in obj["rows"]:
            if isinstance(row, dict) and isinstance(row.get("object"), dict):
                row = {**row, "object": _drop_managed(row["object"])}
            rows.append(row)
        out["rows"] = rows
    return out


def _drop_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return dict(obj)
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


@dataclass(slots=True)
class AuditRecord:
    """What is known about one audited request so far (kube's AuditContext + its Event)."""

    level: str
    audit_id: str
    request_uri: str
    verb: str
    user: dict[str, Any]
    source_ips: list[str]
    user_agent: str
    object_ref: dict[str, str] | None
    received: datetime
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False
    impersonated_user: dict[str, Any] | None = None
    response_status: dict[str, Any] | None = None
    request_object: Any = None
    response_object: Any = None
    annotations: dict[str, str] = field(default_factory=dict)

    def add_annotation(self, key: str, value: str) -> None:
        """First value wins, as kube's logAnnotation refuses to overwrite a different one."""
        self.annotations.setdefault(key, value)

    def log_impersonated_user(self, user: UserInfo) -> None:
        self.impersonated_user = user.to_dict()

    def log_request_object(self, obj: Any, *, enrich_ref: bool) -> None:
        """kube's LogRequestObject: fill objectRef gaps from the object; keep the object at Request+."""
        if enrich_ref and isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            meta = obj["metadata"]
            ref = dict(self.object_ref or {})
            for key, meta_key in (
                ("namespace", "namespace"),
                ("name", "name"),
                ("uid", "uid"),
                ("resourceVersion", "resourceVersion"),
            ):
                if not ref.get(key) and isinstance(meta.get(meta_key), str) and meta[meta_key]:
                    ref[key] = meta[meta_key]
            self.object_ref = {k: ref[k] for k in (*_OBJECT_REF_ORDER, "subresource") if ref.get(k)}
        if level_rank(self.level) >= level_rank(LEVEL_REQUEST):
            self.request_object = without_managed_fields(obj) if self.omit_managed_fields else obj

    def log_response_object(self, code: int, obj: Any, *, keep_object: bool) -> None:
        """kube's LogResponseObject: a Status body becomes responseStatus; the object at RequestResponse."""
        if isinstance(obj, dict) and obj.get("kind") == "Status":
            self.response_status = response_status(code, obj)
        if keep_object and level_rank(self.level) >= level_rank(LEVEL_REQUEST_RESPONSE):
            self.response_object = without_managed_fields(obj) if self.omit_managed_fields else obj

    def set_code(self, code: int) -> None:
        if self.response_status is None:
            self.response_status = response_status(code)
        else:
            self.response_status["code"] = code

    def event(self, stage: str, now: datetime) -> dict[str, Any]:
        """A fresh Event dict for `stage`; RequestReceived is stamped with the receive time, as in kube."""
        ev: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": GROUP_VERSION,
            "level": self.level,
            "auditID": self.audit_id,
            "stage": stage,
            "requestURI": self.request_uri,
            "verb": self.verb,
            "user": dict(self.user),
        }
        if self.impersonated_user is not None:
            ev["impersonatedUser"] = dict(self.impersonated_user)
        if self.source_ips:
            ev["sourceIPs"] = list(self.source_ips)
        if self.user_agent:
            ev["userAgent"] = self.user_agent
        if self.object_ref is not None:
            ev["objectRef"] = dict(self.object_ref)
        if self.response_status is not None:
            ev["responseStatus"] = dict(self.response_status)
        if self.request_object is not None:
            ev["requestObject"] = self.request_object
        if self.response_object is not None:
            ev["responseObject"] = self.response_object
        ev["requestReceivedTimestamp"] = micro_time(self.received)
        ev["stageTimestamp"] = micro_time(self.received if stage == "RequestReceived" else now)
        if self.annotations:
            ev["annotations"] = dict(self.annotations)
        return ev


def event_string(ev: Mapping[str, Any]) -> str:
    """kube's EventString: the one-line `legacy` log format."""
    user = ev.get("user") or {}
    username, groups = "<none>", "<none>"
    if user.get("username"):
        username = user["username"]
        if user.get("groups"):
            groups = ",".join(go_quote(g) for g in user["groups"])
    as_user, as_groups = "<self>", "<lookup>"
    impersonated = ev.get("impersonatedUser")
    if impersonated is not None:
        as_user = impersonated.get("username", "")
        if impersonated.get("groups") is not None:
            as_groups = ",".join(go_quote(g) for g in impersonated["groups"])
    namespace = (ev.get("objectRef") or {}).get("namespace") or "<none>"
    status = ev.get("responseStatus")
    response = str(status.get("code", 0)) if status is not None else "<deferred>"
    ips = ev.get("sourceIPs") or []
    received = datetime.strptime(ev["requestReceivedTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    fields = [
        ("id", ev.get("auditID", "")),
        ("stage", ev.get("stage", "")),
        ("ip", ips[0] if ips else "<unknown>"),
        ("method", ev.get("verb", "")),
        ("user", username),
        ("groups", groups),
        ("as", as_user),
        ("asgroups", as_groups),
        ("user-agent", ev.get("userAgent", "")),
        ("namespace", namespace),
        ("uri", ev.get("requestURI", "")),
    ]
    text = " ".join(f"{k}={go_quote(v)}" for k, v in fields)
    return f'{rfc3339_nano(received)} AUDIT: {text} response="{response}"'
