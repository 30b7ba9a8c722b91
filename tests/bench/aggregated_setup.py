"""`--aggregated`'s set-up: both servers behind one kube-aggregator on the cluster's etcd, loaded.

Why both on the cluster's etcd: that is what a user deploys (deploy/ runs the server on an etcd of its
own, but the Go sample-apiserver, the anchor our targets compare with, uses the cluster's), and a
shared etcd is where one group's writes can slow another group's reads. The Go server stores under
/registry/sample-apiserver/ (cluster.GO_ETCD_PREFIX), ours under /registry/<group>/, so the flunders
of the two never mix even though both serve wardle.example.com; only restaurant's APIServices are
registered for ours, wardle.example.com's belongs to the Go server.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tests.bench.api_client import api_client, pizza_body, pizzas_path
from tests.bench.cluster import Cluster, free_port
from tests.bench.go_tools import TLSFiles
from tests.bench.server_process import ServerCommand, ServerProcess, rss_bytes, tree_rss
from tests.bench.workloads import CREATE_NAMESPACE, Bench, Endpoint, Paths, load_collection, load_objects

RESTAURANT = "restaurant.programming-kubernetes.info"
WARDLE = "wardle.example.com"
FLUNDERS_API = f"/apis/{WARDLE}/v1alpha1"
OUR_SERVER_FLAGS = ("--etcd-compaction-interval", "0", "--api-groups", f"{RESTAURANT},{WARDLE}")


def flunders_path(namespace: str, name: str = "") -> str:
    base = f"{FLUNDERS_API}/namespaces/{namespace}/flunders"
    return f"{base}/{name}" if name else base


def flunder_body(prefix: str) -> str:
    """A flunder (v1alpha1, valid for both servers: a reference of type Flunder); `{{n}}` as pizza_body."""
    return orjson.dumps(
        {
            "apiVersion": f"{WARDLE}/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": f"{prefix}-{{{{n}}}}"},
            "spec": {"reference": "flunder-0", "referenceType": "Flunder"},
        }
    ).decode()


@dataclass(slots=True)
class ClusterServer(ServerProcess):
    """Our server with the cluster's credentials: its serving cert is signed by the cluster CA and
    it trusts the cluster's client CA (read from the extension-apiserver-authentication ConfigMap)."""

    cluster_tls: TLSFiles | None = None

    @property
    def client_tls(self) -> TLSFiles:
        assert self.cluster_tls is not None
        return self.cluster_tls


@dataclass(slots=True)
class Side:
    """One server under test: how to reach it directly and through the aggregator, and what to ask."""

    name: str  # "ours" or "go"
    direct_url: str
    aggregator_url: str
    tls: TLSFiles
    collection: str  # the loaded collection (namespace default)
    create_collection: str
    body: str  # what writes post, with {{n}}
    pid: int
    paths: Paths | None = None
    list_bytes: int = 0
    encoded: int = 0

    def url(self, via: str) -> str:
        return self.aggregator_url if via == "aggregator" else self.direct_url

    def object_path(self, namespace: str) -> str:
        """The collection path in another namespace (fan-out, writers)."""
        return self.collection.replace("/namespaces/default/", f"/namespaces/{namespace}/")

    def rss(self) -> dict[int, int]:
        """Every process's RSS (ours: supervisor and workers; Go: one process)."""
        return tree_rss(self.pid) if self.name == "ours" else {self.pid: rss_bytes(self.pid)}


@dataclass(slots=True)
class Deployment:
    cluster: Cluster
    ours: Side
    go: Side
    server: ClusterServer
    # Our server's wardle.example.com (served, not registered): "the other group" its GETs run beside.
    ours_wardle: Side
    namespaces: list[str] = field(default_factory=list)

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.ours, self.go


async def create_namespaces(cluster: Cluster, names: list[str]) -> None:
    """In the cluster, before the servers start: both run NamespaceLifecycle admission against it."""
    async with api_client(cluster.apiserver_url, cluster.tls) as client:
        for name in names:
            body = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            headers = {"Content-Type": "application/json"}
            async with client.session.post("/api/v1/namespaces", data=body, headers=headers) as r:
                if r.status not in (201, 409):
                    raise RuntimeError(f"namespace {name}: {r.status} {(await r.read())[:300]!r}")


# --scale holds 10,000 watches directly and a few more connections: above kube's default cap.
SCALE_MAX_CONNECTIONS = "15000"


async def start_ours(
    bench: Bench,
    cluster: Cluster,
    command: ServerCommand,
    *,
    scale: bool = False,
    extra: tuple[str, ...] = (),
) -> ClusterServer:
    """pizza-apiserver on the cluster's etcd, delegating to the cluster, registered for restaurant only."""
    flags = (*OUR_SERVER_FLAGS, *(["--max-connections", SCALE_MAX_CONNECTIONS] if scale else []), *extra)
    return await start_registered(cluster, bench.workdir, command, flags)


async def start_registered(
    cluster: Cluster, workdir: Path, command: ServerCommand, flags: tuple[str, ...]
) -> ClusterServer:
    """Our server as a cluster runs it, registered behind the aggregator for restaurant's two versions.

    On the cluster's etcd, delegating authentication and authorization to the cluster, serving a
    certificate from the cluster CA with the name the aggregator checks for register.sh's APIService
    (`api.restaurant.svc`). The benchmark and the e2e tests behind the real aggregator share it.
    """
    cert, key = await cluster.mkcert(workdir / "ours-certs", "pizza-apiserver", "DNS:api.restaurant.svc")
    kubeconfig = str(cluster.kubeconfig)
    args = [
        "--etcd-servers",
        cluster.etcd_url,
        "--etcd-prefix",
        "/registry",
        "--authentication-kubeconfig",
        kubeconfig,
        "--authorization-kubeconfig",
        kubeconfig,
        "--kubeconfig",
        kubeconfig,
        "--tls-cert-file",
        str(cert),
        "--tls-private-key-file",
        str(key),
        *flags,
    ]
    server = ClusterServer(
        workdir / "ours-data",
        args,
        workdir / "pizza-apiserver.log",
        command,
        cluster_tls=cluster.tls,
    )
    # --secure-port 0 (ServerProcess.start): the server picks a free port and logs it, no race.
    await asyncio.to_thread(server.start)
    try:
        port = int(server.url.rpartition(":")[2])
        for version in ("v1alpha1", "v1beta1"):
            await cluster.register(RESTAURANT, version, port, "restaurant")
    except BaseException:
        await asyncio.to_thread(server.stop)
        raise
    return server


async def load_flunders(bench: Bench, side: Side) -> None:
    """`objects` flunders into the Go server's default namespace, as load_objects loads pizzas."""
    await load_collection(bench, Endpoint(side.direct_url, side.tls), side.collection, flunder_body("p"))


async def capture(bench: Bench, side: Side) -> None:
    """Count the loaded collection, pick the object the GETs read, size the LIST (as workloads.capture)."""
    async with api_client(side.direct_url, side.tls) as client:
        listed = await client.raw("GET", side.collection, 200)
    items = orjson.loads(listed.body)["items"]
    if len(items) != bench.sizes.objects:
        raise RuntimeError(f"{side.name}: expected {bench.sizes.objects} objects, found {len(items)}")
    side.encoded = sum(len(orjson.dumps(item)) for item in items)
    side.list_bytes = len(listed.body)
    name = items[0]["metadata"]["name"]
    side.paths = Paths(
        one_object=f"{side.collection}/{name}",
        collection=side.collection,
        create_collection=side.create_collection,
        create_body=side.body,
    )


async def deploy(
    bench: Bench,
    cluster: Cluster,
    command: ServerCommand,
    namespaces: list[str],
    *,
    scale: bool = False,
    extra: tuple[str, ...] = (),
) -> Deployment:
    """Start and register both servers; the caller stops ours (deployment.server), down.sh the Go one."""
    await create_namespaces(cluster, [CREATE_NAMESPACE, *namespaces])
    go_port = free_port()
    bench.progress(f"aggregated: starting the Go sample-apiserver on 127.0.0.1:{go_port}")
    await cluster.start_sample_apiserver(go_port)
    bench.progress("aggregated: starting pizza-apiserver on the cluster's etcd")
    server = await start_ours(bench, cluster, command, scale=scale, extra=extra)
    bench.progress(f"aggregated: pizza-apiserver at {server.url}, APIServices Available")
    assert server.proc is not None
    ours = Side(
        "ours",
        server.url,
        cluster.apiserver_url,
        cluster.tls,
        pizzas_path("default"),
        pizzas_path(CREATE_NAMESPACE),
        pizza_body("c"),
        server.proc.pid,
    )
    go = Side(
        "go",
        f"https://127.0.0.1:{go_port}",
        cluster.apiserver_url,
        cluster.tls,
        flunders_path("default"),
        flunders_path(CREATE_NAMESPACE),
        flunder_body("c"),
        cluster.pid("sample-apiserver"),
    )
    ours_wardle = Side(
        "ours-wardle",
        server.url,
        cluster.apiserver_url,
        cluster.tls,
        flunders_path("default"),
        flunders_path(CREATE_NAMESPACE),
        flunder_body("c"),
        server.proc.pid,
    )
    return Deployment(cluster, ours, go, server, ours_wardle, namespaces)


def cpu_roles(deployment: Deployment, backend: str) -> dict[str, list[int]]:
    """Whose CPU a request on `backend`'s side costs (cpu_probe): the aggregator, etcd, the server."""
    server = deployment.go.pid if backend == "go" else deployment.ours.pid
    return {
        "aggregator": [deployment.cluster.pid("kube-apiserver")],
        "etcd": [deployment.cluster.pid("etcd")],
        "server": list(tree_rss(server)),  # ours: the supervisor and every worker
    }


async def load_both(bench: Bench, deployment: Deployment) -> None:
    """Pizzas into ours (load_objects: toppings first), flunders into Go; then capture both."""
    bench.progress(f"aggregated: loading {bench.sizes.objects:,} pizzas into ours")
    await load_objects(bench, deployment.server)
    bench.progress(f"aggregated: loading {bench.sizes.objects:,} flunders into the Go server")
    await load_flunders(bench, deployment.go)
    for side in deployment.sides:
        await capture(bench, side)
