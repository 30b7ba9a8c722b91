"""Lease leader election against the HTTPS control-plane stand-in (coordination.k8s.io/v1 Leases)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from controller.connection import api_client
from controller.leader_election import LeaseElector
from tests.fixtures.control_plane import ControlPlane, control_plane_fixture  # noqa: F401 (fixture)

NAMESPACE = "kube-system"
WAIT = 60.0


def elector(plane: ControlPlane, identity: str) -> LeaseElector:
    return LeaseElector(
        api_client(plane.kubeconfig),
        "pizza-controller",
        NAMESPACE,
        identity,
        lease_duration=3,
        renew_deadline=2,
        retry_period=0.2,
    )


@asynccontextmanager
async def campaigning(candidate: LeaseElector) -> AsyncIterator[threading.Event]:
    """The candidate runs for leadership in a thread; yields the event its `lead` sets."""
    leading = threading.Event()

    def lead(lost: threading.Event) -> None:
        leading.set()
        lost.wait()

    thread = threading.Thread(target=candidate.run, args=(lead,), daemon=True)
    thread.start()
    try:
        yield leading
    finally:
        candidate.stop()
        # Joined off the event loop: the control plane answers the release on this loop.
        await asyncio.to_thread(thread.join, WAIT)
        assert not thread.is_alive()


def lease(plane: ControlPlane) -> dict:
    return plane.leases[(NAMESPACE, "pizza-controller")]["spec"]


async def test_one_leader_release_and_takeover(control_plane: ControlPlane) -> None:
    a, b = elector(control_plane, "a"), elector(control_plane, "b")
    async with campaigning(a) as a_leads:
        assert await asyncio.to_thread(a_leads.wait, WAIT)
        spec = lease(control_plane)
        assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == ("a", 3, 0)
        assert spec["acquireTime"] and spec["renewTime"]
        acquired = spec["acquireTime"]
        # b sees a's lease renewed (never expiring) and is refused every time it tries.
        for _ in range(5):
            assert not await asyncio.to_thread(b.try_acquire_or_renew)
            await asyncio.sleep(0.3)
        # a kept renewing: renewTime moves, acquireTime does not.
        assert lease(control_plane)["acquireTime"] == acquired
        assert lease(control_plane)["renewTime"] != acquired
    # a stopped: it released the lease (kube's ReleaseOnCancel), so b takes it without waiting it out.
    assert lease(control_plane)["holderIdentity"] == ""
    assert lease(control_plane)["leaseDurationSeconds"] == 1
    async with campaigning(b) as b_leads:
        assert await asyncio.to_thread(b_leads.wait, WAIT)
        spec = lease(control_plane)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
        assert spec["acquireTime"] != acquired


async def test_an_expired_lease_is_taken_over(control_plane: ControlPlane) -> None:
    """A holder that stops renewing (crashed: no release) loses the lease after its duration."""
    crashed, b = elector(control_plane, "crashed"), elector(control_plane, "b")
    assert await asyncio.to_thread(crashed.try_acquire_or_renew)
    assert not await asyncio.to_thread(b.try_acquire_or_renew)  # fresh: not b's
    async with campaigning(b) as b_leads:
        assert await asyncio.to_thread(b_leads.wait, WAIT)
    assert control_plane.calls["lease-update"] >= 1
    assert control_plane.leases[(NAMESPACE, "pizza-controller")]["spec"]["leaseTransitions"] == 1


async def test_a_stale_write_is_a_conflict(control_plane: ControlPlane) -> None:
    """Two candidates racing on one read: the second write carries a stale resourceVersion → 409."""
    a = elector(control_plane, "a")
    assert await asyncio.to_thread(a.try_acquire_or_renew)
    leases = client.CoordinationV1Api(api_client(control_plane.kubeconfig))
    stale = await asyncio.to_thread(leases.read_namespaced_lease, "pizza-controller", NAMESPACE)
    assert await asyncio.to_thread(a.try_acquire_or_renew)  # renewed: a new resourceVersion
    stale.spec.holder_identity = "intruder"
    with pytest.raises(ApiException) as raised:
        await asyncio.to_thread(leases.replace_namespaced_lease, "pizza-controller", NAMESPACE, stale)
    assert raised.value.status == 409
    assert "the object has been modified" in str(raised.value.body)
    assert lease(control_plane)["holderIdentity"] == "a"
    # Creating it again is AlreadyExists, which a candidate treats as "not acquired".
    body = client.V1Lease(metadata=client.V1ObjectMeta(name="pizza-controller"), spec=client.V1LeaseSpec())
    with pytest.raises(ApiException) as exists:
        await asyncio.to_thread(leases.create_namespaced_lease, NAMESPACE, body)
    assert exists.value.status == 409 and "already exists" in str(exists.value.body)


async def test_a_leader_that_cannot_renew_stops_leading(control_plane: ControlPlane) -> None:
    """Someone else took the lease: the leader retries every retry period until its renew deadline,
    then stops leading (its work is told through `lost`) and does not release a lease not its own."""
    a = elector(control_plane, "a")
    leading, lost_seen = threading.Event(), threading.Event()

    def lead(lost: threading.Event) -> None:
        leading.set()
        lost.wait()
        lost_seen.set()

    thread = threading.Thread(target=a.run, args=(lead,), daemon=True)
    thread.start()
    try:
        assert await asyncio.to_thread(leading.wait, WAIT)
        leases = client.CoordinationV1Api(api_client(control_plane.kubeconfig))
        taken = await asyncio.to_thread(leases.read_namespaced_lease, "pizza-controller", NAMESPACE)
        taken.spec.holder_identity = "intruder"
        taken.spec.lease_duration_seconds = 3600
        await asyncio.to_thread(leases.replace_namespaced_lease, "pizza-controller", NAMESPACE, taken)
        reads_before = control_plane.calls["lease-get"]
        assert await asyncio.to_thread(lost_seen.wait, WAIT)
        await asyncio.to_thread(thread.join, WAIT)
        assert not thread.is_alive() and not a.is_leader.is_set()
        # renew_deadline 2s / retry_period 0.2s: about ten reads, one attempt per period (plus the
        # renewal that may have been under way), never a tight loop of requests.
        reads = control_plane.calls["lease-get"] - reads_before
        assert 1 <= reads <= 2 / 0.2 + 3, reads
        assert lease(control_plane)["holderIdentity"] == "intruder"
    finally:
        a.stop()
        await asyncio.to_thread(thread.join, WAIT)
