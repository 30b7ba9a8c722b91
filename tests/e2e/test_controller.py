"""The two-command story: `pizza-apiserver & pizza-controller`, then the user waits with kubectl.

Both are real processes: the server on the embedded store and the controller started the way the
README says, from the directory holding `.pizza-apiserver/` so it finds the admin kubeconfig itself.
Status is written by server-side apply on /status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.fixtures.server import REPO, ServerProcess, start_server_process

pytestmark = pytest.mark.e2e
WAIT = "--timeout=90s"  # a loaded machine: the bound of `kubectl wait`, not a target


@pytest.fixture(scope="module")
def bakery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, subprocess.Popen]]:
    home = tmp_path_factory.mktemp("bakery")
    log = (home / "controller.log").open("ab")
    # The controller first, as `pizza-apiserver & pizza-controller` may have it in a fresh directory:
    # the admin kubeconfig does not exist yet, and nothing else names an API server (no $KUBECONFIG,
    # no ~/.kube/config under this HOME), so it must wait for the file.
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    controller = subprocess.Popen(
        [sys.executable, "-m", "controller"],
        cwd=home,
        stdout=log,
        stderr=log,
        env={**environment, "HOME": str(home), "PYTHONPATH": str(REPO)},
    )
    server: ServerProcess | None = None
    try:
        server = start_server_process(home / ".pizza-apiserver")
        yield server, controller
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait(15)
        log.close()
        if server is not None:
            server.stop()


def test_kubectl_waits_for_the_cost(bakery: tuple[ServerProcess, subprocess.Popen]) -> None:
    server, _ = bakery
    server.kubectl("apply", "-f", str(REPO / "examples"))
    # margherita: mozzarella 1.0 + tomato 0.5 + basil 0.25
    server.kubectl("wait", "--for=jsonpath={.status.cost}=1.75", "pizza/margherita", WAIT, timeout=120)
    got = server.kubectl("get", "pizza", "margherita", "-o", "jsonpath={.status.observedGeneration}").stdout
    assert got == "1"
    # The COST column of `kubectl get pizzas` is filled.
    table = server.kubectl("get", "pizza", "margherita").stdout
    assert "1.75" in table.splitlines()[1]


def test_a_topping_price_change_reprices(bakery: tuple[ServerProcess, subprocess.Popen]) -> None:
    server, _ = bakery
    server.kubectl("patch", "topping", "mozzarella", "--type=merge", "-p", '{"spec":{"cost":2}}')
    server.kubectl("wait", "--for=jsonpath={.status.cost}=2.75", "pizza/margherita", WAIT, timeout=120)


def test_a_pizza_deleted_with_a_grace_period_is_taken_out_early(
    bakery: tuple[ServerProcess, subprocess.Popen],
) -> None:
    """Ten minutes asked for; the controller deletes it with grace 0 on seeing the timestamp."""
    server, _ = bakery
    server.kubectl("delete", "pizza", "margherita", "--grace-period=600", "--wait=false")
    server.kubectl("wait", "--for=delete", "pizza/margherita", WAIT, timeout=120)
    assert server.kubectl("get", "pizza", "margherita", check=False).returncode != 0


def test_sigterm_stops_the_controller_cleanly(bakery: tuple[ServerProcess, subprocess.Popen]) -> None:
    _, controller = bakery
    controller.send_signal(signal.SIGTERM)
    assert controller.wait(60) == 0  # stopped its watches and workers and exited, not killed
