"""The `pizza-controller` command: flags → API client → (leader election →) the controller, until SIGTERM.

Graceful shutdown: SIGTERM/SIGINT set one stop event; the informers close their watches, the work
queue drains (a reconcile in progress finishes its status write), and a leader releases its Lease so
the next replica takes over at once instead of after the lease duration.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import uuid

from kubernetes import client

from controller.connection import api_client, await_standalone_kubeconfig
from controller.controller import PizzaController
from controller.leader_election import LeaseElector
from controller.options import ControllerOptions, parse_args

logger = logging.getLogger("pizza-controller")


def run(options: ControllerOptions, stop: threading.Event) -> None:
    kubeconfig = options.kubeconfig or await_standalone_kubeconfig(stop)
    if stop.is_set():
        return
    api = api_client(kubeconfig)
    try:
        if not options.leader_elect:
            _controller(api, options).run(stop)
            return
        elector = LeaseElector(
            api,
            options.leader_elect_resource_name,
            options.leader_elect_resource_namespace,
            options.identity or f"{socket.gethostname()}_{uuid.uuid4()}",
            options.leader_elect_lease_duration,
            options.leader_elect_renew_deadline,
            options.leader_elect_retry_period,
        )

        def stop_electing() -> None:
            stop.wait()
            elector.stop()

        threading.Thread(target=stop_electing, daemon=True).start()

        def lead(lost: threading.Event) -> None:
            _controller(api, options).run(lost)

        elector.run(lead)
        if not stop.is_set():
            # client-go's controllers exit when they lose the lease; the pod restarts as a follower.
            raise SystemExit("leader election lost")
    finally:
        api.close()


def _controller(api: client.ApiClient, options: ControllerOptions) -> PizzaController:
    return PizzaController(api, options.bake_delay, options.workers, options.watch_timeout)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    logger.info(
        "pizza-controller: kubeconfig %s, leader election %s, bake delay %ss",
        options.kubeconfig or "(not given: the server's once written, in-cluster or ~/.kube/config)",
        "on" if options.leader_elect else "off",
        options.bake_delay,
    )
    run(options, stop)
    return 0
