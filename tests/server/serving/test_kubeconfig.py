"""The admin kubeconfig is what the real kubectl reads and uses to reach the server."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from aiohttp import web

from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert, peer_identity
from server.serving.kubeconfig import write_kubeconfig
from server.serving.tls import build_server_context

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
TIMEOUT = 30.0


def _material(tmp_path: Path) -> tuple[Path, Path, Path, Path, Path, Path]:
    serving = ensure_self_signed(tmp_path / "certs", dns_names=[], ip_addresses=[])
    client_ca, client_ca_key = ensure_client_ca(tmp_path / "certs")
    cert, key = issue_client_cert(
        client_ca,
        client_ca_key,
        common_name="admin",
        organizations=["system:masters"],
        out_dir=tmp_path / "certs",
        basename="admin",
    )
    return serving.ca_cert_path, serving.cert_path, serving.key_path, client_ca, cert, key


async def _kubectl(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),  # no stray ~/.kube/config may leak into the test
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
    }
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_kubectl_parses_the_kubeconfig(tmp_path: Path) -> None:
    ca, _, _, _, cert, key = await asyncio.to_thread(_material, tmp_path)
    path = tmp_path / "nested" / "admin.kubeconfig"
    await asyncio.to_thread(
        write_kubeconfig,
        path,
        server_url="https://127.0.0.1:8443",
        ca_cert_path=ca,
        client_cert_path=cert,
        client_key_path=key,
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    code, out, err = await _kubectl(
        tmp_path, "config", "view", "--kubeconfig", str(path), "--raw", "-o", "json"
    )

    assert code == 0, err
    view = json.loads(out)
    assert view["current-context"] == "admin@pizza-apiserver"
    (cluster,) = view["clusters"]
    assert cluster["name"] == "pizza-apiserver"
    assert cluster["cluster"]["server"] == "https://127.0.0.1:8443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == ca.read_bytes()
    (user,) = view["users"]
    assert user["name"] == "admin"
    assert base64.b64decode(user["user"]["client-certificate-data"]) == cert.read_bytes()
    assert base64.b64decode(user["user"]["client-key-data"]) == key.read_bytes()
    (context,) = view["contexts"]
    assert context["context"] == {"cluster": "pizza-apiserver", "user": "admin"}


async def test_kubectl_reaches_the_server_as_admin(tmp_path: Path) -> None:
    """kubectl must trust the generated CA and present the admin client certificate."""
    ca, serving_cert, serving_key, client_ca, cert, key = await asyncio.to_thread(_material, tmp_path)
    context = await asyncio.to_thread(build_server_context, serving_cert, serving_key, [client_ca])

    async def whoami(request: web.Request) -> web.Response:
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object else None
        user, groups = peer_identity(der) if der else ("anonymous", [])
        return web.Response(text=f"{user}:{','.join(groups)}")

    app = web.Application()
    app.router.add_get("/whoami", whoami)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        port = runner.addresses[0][1]
        path = tmp_path / "admin.kubeconfig"
        await asyncio.to_thread(
            write_kubeconfig,
            path,
            server_url=f"https://127.0.0.1:{port}",
            ca_cert_path=ca,
            client_cert_path=cert,
            client_key_path=key,
            cluster_name="local",
            user="root",
        )
        code, out, err = await _kubectl(tmp_path, "--kubeconfig", str(path), "get", "--raw", "/whoami")
        assert code == 0, err
        assert out.strip() == "admin:system:masters"
    finally:
        await runner.cleanup()
