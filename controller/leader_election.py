"""Leader election through a coordination.k8s.io/v1 Lease, with client-go's leaderelection rules.

Only one replica of the controller may reconcile at a time (two would race their status writes and
double their API load). client-go's algorithm (tryAcquireOrRenew), kept here:
- no Lease → create it holding it (acquireTime = renewTime = now, leaseTransitions 0);
- a Lease held by another → it is theirs until `leaseDurationSeconds` have passed since *this*
  process last saw its record change (local clock only: no clock-skew assumptions between hosts);
- taking it over → holderIdentity = me, acquireTime = now, leaseTransitions + 1;
- renewing → renewTime = now; every write is an update carrying the read resourceVersion, so two
  candidates racing get one 409 Conflict and one lease;
- the leader that cannot renew within `renew_deadline` stops leading; on shutdown it releases the
  Lease (holderIdentity "", leaseDurationSeconds 1) so a successor need not wait out the duration.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

logger = logging.getLogger(__name__)


@dataclass
class LeaseElector:
    api: client.ApiClient
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    _observed: tuple[str, str, str] | None = None  # (holder, renewTime, resourceVersion) last seen
    _observed_at: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    is_leader: threading.Event = field(default_factory=threading.Event)

    def run(self, lead: Callable[[threading.Event], None]) -> None:
        """Acquire, then run `lead(lost)` in a thread while renewing; returns when lost or stopped.

        `lost` is set when leadership ends (renewal failed or stop): `lead` must return then.
        """
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                break
            self._stop.wait(self.retry_period)
        if self._stop.is_set():
            return
        logger.info("%s acquired lease %s/%s", self.identity, self.namespace, self.name)
        self.is_leader.set()
        lost = threading.Event()
        leader = threading.Thread(target=lead, args=(lost,), name="leader", daemon=True)
        leader.start()
        try:
            self._renew_loop()
        finally:
            self.is_leader.clear()
            lost.set()
            leader.join()
            if self._stop.is_set():
                self.release()

    def stop(self) -> None:
        self._stop.set()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.retry_period):
            if not self._renew():
                logger.warning("%s failed to renew lease %s/%s", self.identity, self.namespace, self.name)
                return

    def _renew(self) -> bool:
        """client-go's renew: try at once, then every `retry_period` until `renew_deadline` has passed
        (a failing API server is asked a few times, not hammered in a loop)."""
        deadline = time.monotonic() + self.renew_deadline
        while not self.try_acquire_or_renew():
            left = deadline - time.monotonic()
            if left <= 0 or self._stop.wait(min(self.retry_period, left)):
                return False
        return True

    def try_acquire_or_renew(self) -> bool:
        """One attempt; False when the lease is someone else's or the API could not be reached."""
        try:
            return self._try_acquire_or_renew()
        except (urllib3.exceptions.HTTPError, OSError) as err:
            logger.info("lease %s/%s: %s", self.namespace, self.name, err)
            return False

    def _try_acquire_or_renew(self) -> bool:
        leases = client.CoordinationV1Api(self.api)
        now = datetime.now(UTC)
        try:
            lease = leases.read_namespaced_lease(self.name, self.namespace)
        except ApiException as err:
            if err.status != 404:
                logger.info("reading lease %s/%s: %s", self.namespace, self.name, err.reason)
                return False
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                spec=client.V1LeaseSpec(
                    holder_identity=self.identity,
                    lease_duration_seconds=int(self.lease_duration),
                    acquire_time=now,
                    renew_time=now,
                    lease_transitions=0,
                ),
            )
            return self._write(lambda: leases.create_namespaced_lease(self.namespace, body))
        spec = lease.spec or client.V1LeaseSpec()
        record = (spec.holder_identity or "", str(spec.renew_time), _resource_version(lease))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        holder = spec.holder_identity or ""
        duration = spec.lease_duration_seconds or self.lease_duration
        if holder and holder != self.identity and time.monotonic() < self._observed_at + duration:
            return False  # someone else's, and not expired as this process sees it
        if holder != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = int(self.lease_duration)
        spec.renew_time = now
        lease.spec = spec
        return self._write(lambda: leases.replace_namespaced_lease(self.name, self.namespace, lease))

    def _write(self, call: Callable[[], client.V1Lease]) -> bool:
        try:
            written = call()
        except ApiException as err:
            logger.info("lease %s/%s not taken: %s %s", self.namespace, self.name, err.status, err.reason)
            return False
        spec = written.spec or client.V1LeaseSpec()
        self._observed = (spec.holder_identity or "", str(spec.renew_time), _resource_version(written))
        self._observed_at = time.monotonic()
        return True

    def release(self) -> None:
        """Give the lease up at shutdown (client-go's ReleaseOnCancel)."""
        leases = client.CoordinationV1Api(self.api)
        try:
            lease = leases.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            now = datetime.now(UTC)
            lease.spec.holder_identity = ""
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = now
            lease.spec.acquire_time = now
            leases.replace_namespaced_lease(self.name, self.namespace, lease)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as err:
            logger.info("releasing lease %s/%s: %s", self.namespace, self.name, err)


def _resource_version(lease: client.V1Lease) -> str:
    return (lease.metadata.resource_version if lease.metadata else None) or ""
