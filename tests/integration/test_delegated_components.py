"""The pieces behind delegation, each against the fake control plane over real HTTPS.

What the whole-server tests cannot easily show: the ConfigMap watch outliving ended and expired
streams, one TokenReview shared by concurrent requests, kube's retry rules, credential rotation.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from apis.meta.user import UserInfo
from server.authn.configmap import ConfigMapWatcher
from server.authn.token import CachedTokenReviewer, TokenReviewer, TokenReviewError
from server.authz.interface import AuthzAttributes, Verdict
from server.authz.subject_access_review import SUBJECT_ACCESS_REVIEW_PATH, SubjectAccessReviewAuthorizer
from server.cluster.cache import ExpiringLRU
from server.cluster.client import Backoff, ClusterClient, ClusterError
from server.cluster.credentials import CredentialSource
from server.request_info import resolve
from tests.fixtures.control_plane import (
    ControlPlane,
    control_plane_fixture,  # noqa: F401 - provides the control_plane fixture
)

FAST = Backoff(initial=0.01, factor=1.5, jitter=0.0, steps=5)
WAIT_BOUND = 10.0


async def connect(kubeconfig: Path, **kwargs: object) -> ClusterClient:
    return await ClusterClient.connect(CredentialSource(kubeconfig), **kwargs)  # type: ignore[arg-type]


async def eventually(condition: object, bound: float = WAIT_BOUND) -> None:
    async with asyncio.timeout(bound):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.02)


async def test_configmap_watch_outlives_ended_and_expired_streams(control_plane: ControlPlane) -> None:
    plane = control_plane
    client = await connect(plane.kubeconfig)
    changes: list[int] = []

    async def changed() -> None:
        changes.append(1)

    watcher = ConfigMapWatcher(client, changed)
    try:
        first = await watcher.load()
        assert first.request_header is not None
        assert first.request_header.allowed_names == ("front-proxy-client",)
        assert first.request_header.names.username == ("X-Remote-User",)
        watcher.start()
        await eventually(lambda: plane.calls["configmap-watch"] == 1)

        # The server ends the stream (its timeout): the watcher comes back from where it was.
        plane.end_watches()
        await eventually(lambda: plane.calls["configmap-watch"] == 2)
        plane.set_configmap({**plane.default_configmap(), "requestheader-allowed-names": '["aggregator"]'})
        await eventually(lambda: changes == [1])
        assert watcher.current.request_header is not None
        assert watcher.current.request_header.allowed_names == ("aggregator",)
        gets = plane.calls["configmap-get"]

        # History compacted past the watcher's resourceVersion: 410, then a fresh GET and a new watch.
        plane.compact()
        plane.end_watches()
        await eventually(
            lambda: plane.calls["configmap-get"] == gets + 1 and plane.calls["configmap-watch"] >= 4
        )
        plane.set_configmap({**plane.default_configmap(), "requestheader-allowed-names": '["third"]'})
        await eventually(lambda: len(changes) == 2)
        assert watcher.current.request_header.allowed_names == ("third",)

        # Broken data keeps the last good settings.
        plane.set_configmap({**plane.default_configmap(), "requestheader-allowed-names": "not json"})
        await asyncio.sleep(0.2)
        assert watcher.current.request_header.allowed_names == ("third",)
    finally:
        await watcher.stop()
        await client.close()


async def test_concurrent_lookups_of_one_token_share_a_review(control_plane: ControlPlane) -> None:
    plane = control_plane
    plane.tokens["slow"] = {"username": "sam", "groups": ["cooks"]}
    plane.review_delay = 0.2
    client = await connect(plane.kubeconfig)
    try:
        reviewer = CachedTokenReviewer(TokenReviewer(client), success_ttl=10, failure_ttl=10)
        reviews = await asyncio.gather(*(reviewer.review("slow", ()) for _ in range(5)))
        assert plane.calls["tokenreviews"] == 1
        sam = UserInfo("sam", groups=("cooks",))
        assert [r.result.user if r.result else None for r in reviews] == [sam] * 5

        # Errors reach every waiter and are not cached.
        plane.token_errors["flaky"] = "backend down"
        outcomes = await asyncio.gather(
            *(reviewer.review("flaky", ()) for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(o, TokenReviewError) for o in outcomes)
        assert plane.calls["tokenreviews"] == 2
        with pytest.raises(TokenReviewError):
            await reviewer.review("flaky", ())
        assert plane.calls["tokenreviews"] == 3
    finally:
        await client.close()


async def test_only_transient_failures_are_retried(control_plane: ControlPlane) -> None:
    plane = control_plane
    client = await connect(plane.kubeconfig, backoff=FAST)
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "x"}}
    try:
        plane.sar_failure = 500  # kube's InternalError: retried, five attempts in all
        with pytest.raises(ClusterError) as failure:
            await client.create(SUBJECT_ACCESS_REVIEW_PATH, body)
        assert failure.value.status == 500
        assert plane.calls["subjectaccessreviews"] == 5

        plane.sar_failure = 403  # a permanent answer: asked once
        with pytest.raises(ClusterError):
            await client.create(SUBJECT_ACCESS_REVIEW_PATH, body)
        assert plane.calls["subjectaccessreviews"] == 6

        plane.sar_failure = None
        answer = await client.create(SUBJECT_ACCESS_REVIEW_PATH, body)
        assert answer["status"] == {"allowed": False}
    finally:
        await client.close()


async def test_rotated_token_file_is_read_again_after_a_401(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    token_file = tmp_path / "token"
    token_file.write_text(plane.api_token)
    kubeconfig = plane.write_kubeconfig(tmp_path / "token.kubeconfig", token="placeholder")
    text = kubeconfig.read_text().replace("token: placeholder", f"tokenFile: {token_file}")
    kubeconfig.write_text(text)
    client = await connect(kubeconfig, backoff=FAST)
    try:
        assert (
            await client.get("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")
        )["kind"] == "ConfigMap"
        # The cluster rotates the token; the file is updated like a projected service-account token.
        plane.api_token = "rotated-token"
        token_file.write_text("rotated-token")
        answer = await client.get(
            "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
        )
        assert answer["kind"] == "ConfigMap"
        assert plane.bearer_tokens_seen[-2:] == ["control-plane-token", "rotated-token"]
    finally:
        await client.close()


async def test_review_answers_map_to_decisions(control_plane: ControlPlane) -> None:
    plane = control_plane
    client = await connect(plane.kubeconfig)
    authorizer = SubjectAccessReviewAuthorizer(client, authorized_ttl=10, unauthorized_ttl=10)
    attrs = AuthzAttributes(UserInfo("u"), resolve("GET", "/apis/g/v1/things", {}))
    try:
        plane.sar_rule = lambda spec: {"allowed": True, "denied": True, "reason": "confused"}
        decision = await authorizer.authorize(attrs)
        assert decision.verdict is Verdict.DENY and "both allow and deny" in decision.error
        assert plane.access_reviews[-1]["spec"]["resourceAttributes"]["resource"] == "things"
    finally:
        await client.close()


def test_expiring_lru_evicts_oldest_and_expires() -> None:
    now = [0.0]
    cache: ExpiringLRU[str] = ExpiringLRU(2, clock=lambda: now[0])
    cache.add("a", "A", ttl=10)
    cache.add("b", "B", ttl=1)
    assert cache.get("a") == "A"  # a is now the most recently used
    cache.add("c", "C", ttl=10)
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    now[0] = 10.0
    assert cache.get("a") is None and len(cache) == 1
    cache.add("d", "D", ttl=0)  # a zero TTL caches nothing
    assert cache.get("d") is None
