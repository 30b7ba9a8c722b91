"""Options → a running configuration: certificates on disk, TLS context, storage opened, groups installed.

This is kube's "options → config → completed config" step. Everything that touches the disk or the
network runs off the event loop (`asyncio.to_thread`) or through async clients, so building a config
inside a running loop (tests do) never blocks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from registry.generic.allocation_repair import repair_every, repairs_for
from registry.generic.cache.feed import GroupFeed
from registry.generic.installation import GroupInstallation, attach_background_feed, attach_watch_cache
from registry.generic.key_migration import move_legacy_keys
from server.admission.setup import Admission, start_admission
from server.audit.pipeline import AuditPipeline, build_audit
from server.authn.delegated import Authentication, start_authentication
from server.authz.delegated import authorizer_from_options
from server.authz.interface import Authorizer
from server.background_task import BackgroundTask
from server.cluster.connections import ClusterConnections
from server.options import Options
from server.serving import certs
from server.serving.kubeconfig import write_kubeconfig
from server.serving.tls import ReloadingTLS, TLSPolicy
from storage.interface import Interface

logger = logging.getLogger(__name__)

# A storage call's share of --request-timeout (storage_deadline), and its deadline without one.
STORAGE_SHARE = 0.9
DEFAULT_STORAGE_DEADLINE = 60.0
# How long start-up waits for the watch caches to be filled before serving anyway.
CACHE_FILL_WAIT = 30.0


@dataclass(frozen=True)
class ServingCerts:
    """Where the serving and client-auth material lives (generated or given by flags)."""

    cert_path: Path
    key_path: Path
    ca_path: Path | None  # CA of the serving cert when self-signed (goes into the admin kubeconfig)
    client_ca_path: Path
    client_ca_key_path: Path


@dataclass(frozen=True)
class Security:
    """Who may do what: authentication and authorization as the flags and the environment decide.

    Delegated when a cluster is reachable for either (a kubeconfig flag, or running in a pod);
    standalone otherwise. Both go through the same chain; standalone just has fewer sources.
    """

    authentication: Authentication
    authorizer: Authorizer
    connections: ClusterConnections
    delegated: bool

    async def close(self) -> None:
        await self.authentication.close()
        await self.connections.close()


@dataclass
class Config:
    options: Options
    certs: ServingCerts
    tls: ReloadingTLS
    storage: Interface
    installations: list[GroupInstallation]
    security: Security
    # None when no audit backend is configured.
    audit: AuditPipeline | None = None
    # The watch caches' feeds, one per group (with --watch-cache=false, only those graceful
    # deletion needs, serving no reads).
    feeds: list[GroupFeed] = field(default_factory=list)
    # The cluster-backed admission plugins and their informers (empty when standalone).
    admission: Admission = field(default_factory=Admission)
    # The repair of allocated numbers (registry/generic/allocation_repair.py); None when none.
    allocation_repair: BackgroundTask | None = None

    async def close(self) -> None:
        """After the HTTP runner is cleaned up: flush audit (events of requests that were still running
        included), then stop the clients and storage."""
        if self.audit is not None:
            await self.audit.shutdown()
        with contextlib.suppress(Exception):
            await self.tls.stop()
        await self.admission.close()
        await self.security.close()
        if self.allocation_repair is not None:
            await self.allocation_repair.stop()
        for feed in self.feeds:
            await feed.stop()
        await self.storage.close()


def start_allocation_repair(
    options: Options, installations: list[GroupInstallation]
) -> BackgroundTask | None:
    """Every worker and server repairs (each step is a compare-and-swap), at start and periodically."""
    repairs = repairs_for(store for installation in installations for store in installation.stores.values())
    if not repairs:
        return None
    interval = options.groups.allocation_repair_interval
    task = BackgroundTask("allocation-repair", lambda: repair_every(repairs, interval))
    task.start()
    return task


def prepare_certs(options: Options) -> ServingCerts:
    """Synchronous file work: run through asyncio.to_thread."""
    assert options.serving.cert_dir is not None
    options.serving.cert_dir.mkdir(parents=True, exist_ok=True)
    if options.serving.generates_serving_cert:
        files = certs.ensure_self_signed(
            options.serving.cert_dir,
            dns_names=options.serving.serving_cert_dns_names,
            ip_addresses=options.serving.serving_cert_ip_addresses,
        )
        cert, key, ca = files.cert_path, files.key_path, files.ca_cert_path
    else:
        assert options.serving.tls_cert_file is not None and options.serving.tls_private_key_file is not None
        cert, key, ca = options.serving.tls_cert_file, options.serving.tls_private_key_file, None
    client_ca, client_ca_key = certs.ensure_client_ca(options.serving.cert_dir)
    return ServingCerts(cert, key, ca, client_ca, client_ca_key)


def storage_deadline(request_timeout: float) -> float:
    """How long one storage call may take: a little less than the request's own deadline.

    Storage knows whether a write was sent (504: outcome unknown) or surely not (503); it must give
    that answer before the timeout filter ends the request with a generic 504. Without a request
    timeout (0), storage calls still end after a minute, kube's default.
    """
    if request_timeout <= 0:
        return DEFAULT_STORAGE_DEADLINE
    return request_timeout * STORAGE_SHARE


async def open_storage(options: Options, *, join: bool = False) -> Interface:
    """The storage the flags name. `join`: next to the server that owns an embedded store, as a
    maintenance command does (storage.embedded.open_embedded); etcd needs no such distinction."""
    if options.etcd.uses_embedded_storage:
        from storage.embedded import open_embedded

        path = options.generic.data_dir / "storage.db"
        if join:
            return await open_embedded(path, prefix=options.etcd.etcd_prefix, join=True)
        await asyncio.to_thread(options.generic.data_dir.mkdir, parents=True, exist_ok=True)
        return await open_embedded(path, prefix=options.etcd.etcd_prefix)
    from storage.etcd import EtcdConfig, open_etcd

    return await open_etcd(
        EtcdConfig(
            servers=list(options.etcd.etcd_servers),
            prefix=options.etcd.etcd_prefix,
            cafile=str(options.etcd.etcd_cafile) if options.etcd.etcd_cafile else None,
            certfile=str(options.etcd.etcd_certfile) if options.etcd.etcd_certfile else None,
            keyfile=str(options.etcd.etcd_keyfile) if options.etcd.etcd_keyfile else None,
            request_timeout=storage_deadline(options.generic.request_timeout),
            compaction_interval=options.etcd.etcd_compaction_interval,
        )
    )


async def start_security(options: Options, serving: ServingCerts, tls: ReloadingTLS) -> Security:
    """Connect to the cluster if there is one, load every CA source, and hand client CAs to TLS."""
    connections = ClusterConnections()
    try:
        authn_client = await connections.open(
            options.authentication.authentication_kubeconfig, "authentication"
        )
        authz_client = await connections.open(options.authorization.authorization_kubeconfig, "authorization")
        delegated = authn_client is not None or authz_client is not None
        authentication = await start_authentication(
            options.authentication,
            client=authn_client,
            own_client_ca=serving.client_ca_path,
            delegated=delegated,
            on_trust_change=tls.set_extra_client_cas,
        )
    except BaseException:
        await connections.close()
        raise
    authorizer = authorizer_from_options(options.authorization, authz_client)
    logger.info(
        "authentication and authorization: %s", "delegated to the cluster" if delegated else "standalone"
    )
    return Security(authentication, authorizer, connections, delegated)


async def build_config(options: Options) -> Config:
    serving = await asyncio.to_thread(prepare_certs, options)
    policy = TLSPolicy.from_flags(
        options.serving.tls_min_version,
        options.serving.tls_cipher_suites,
        options.serving.curve_ids,
        http2=not options.serving.disable_http2_serving,
    )
    tls = await ReloadingTLS.load(
        serving.cert_path, serving.key_path, [serving.client_ca_path], policy=policy
    )
    audit = await build_audit(options.audit)
    security = await start_security(options, serving, tls)
    try:
        storage = await open_storage(options)
    except BaseException:
        await security.close()
        raise
    installations = options.groups.install(storage)
    for installation in installations:
        for store in installation.stores.values():
            store.delete_collection_workers = options.deletion.delete_collection_workers
    feeds: list[GroupFeed] = []
    try:
        for installation in installations:
            for store in installation.stores.values():
                await move_legacy_keys(store)
        if options.watch_cache.watch_cache:
            feeds = [attach_watch_cache(installation) for installation in installations]
        else:
            # Derived resources and graceful deletion finishers keep caches of their own (installation.py).
            feeds = [f for i in installations if (f := attach_background_feed(i)) is not None]
        for feed in feeds:
            feed.start()
        # Serving before the caches are filled would be correct (reads go to storage meanwhile),
        # but the first requests would be slow; kube likewise waits for its caches to sync.
        for feed in feeds:
            if not await feed.wait_ready(CACHE_FILL_WAIT):
                logger.warning("watch cache for %s not filled yet; serving from storage", feed.prefix)
        # After the groups are installed (their plugin names are known) and before serving, so that
        # the informers are filling while the server starts; /readyz reports their sync.
        admission = await start_admission(
            options.admission, security.connections, installations, authorizer=security.authorizer
        )
    except BaseException:
        for feed in feeds:
            await feed.stop()
        await storage.close()
        await security.close()
        raise
    repair = start_allocation_repair(options, installations)
    return Config(options, serving, tls, storage, installations, security, audit, feeds, admission, repair)


def write_admin_kubeconfig(config: Config, server_url: str) -> Path:
    """Standalone mode's way in: a system:masters client cert signed by the server's own client CA.

    Synchronous file work: run through asyncio.to_thread.
    """
    return write_admin_kubeconfig_for(config.options, config.certs, server_url)


def write_admin_kubeconfig_for(options: Options, serving: ServingCerts, server_url: str) -> Path:
    """The same from the flags and certificates alone: the --workers supervisor writes it once for
    every worker, and has no running config of its own. Synchronous file work."""
    assert options.generic.admin_kubeconfig is not None and options.serving.cert_dir is not None
    cert, key = certs.issue_client_cert(
        serving.client_ca_path,
        serving.client_ca_key_path,
        common_name="admin",
        organizations=["system:masters"],
        out_dir=options.serving.cert_dir,
        basename="admin",
    )
    write_kubeconfig(
        options.generic.admin_kubeconfig,
        server_url=server_url,
        ca_cert_path=serving.ca_path or serving.cert_path,
        client_cert_path=cert,
        client_key_path=key,
    )
    return options.generic.admin_kubeconfig
