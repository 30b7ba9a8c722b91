"""/healthz, /livez and /readyz with kube's exact output (k8s.io/apiserver pkg/server/healthz/healthz.go).

Probes and humans parse this text: `ok` when healthy; with `?verbose` one `[+]name ok` line per check
and `<endpoint> check passed`; on failure always verbose, HTTP 500, `[-]name failed: reason withheld`
(details go to the log only, since these endpoints are open to anonymous users) and
`<endpoint> check failed`. `?exclude=<name>` skips a check; `/<endpoint>/<check>` runs one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aiohttp import web

from apis.goformat import go_quote

logger = logging.getLogger(__name__)

HEALTHZ, LIVEZ, READYZ = "/healthz", "/livez", "/readyz"
HEALTH_PATHS = (HEALTHZ, LIVEZ, READYZ)

_TEXT = "text/plain"
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}


@dataclass(frozen=True, slots=True)
class HealthCheck:
    """A named check; `check` raises to report failure. It should bound its own run time."""

    name: str
    check: Callable[[], Awaitable[None]]


async def _always_ok() -> None:
    return None


PING = HealthCheck("ping", _always_ok)


class HealthChecks:
    """The three health endpoints. `checks` run on all of them; `readiness` only on /readyz.

    kube's /readyz has extra checks (e.g. "shutdown", which fails once graceful shutdown begins so
    load balancers stop sending traffic while /livez stays healthy).
    """

    __slots__ = ("_by_path",)

    def __init__(self, checks: Sequence[HealthCheck] = (), *, readiness: Sequence[HealthCheck] = ()) -> None:
        live = (PING, *checks)
        self._by_path: dict[str, tuple[HealthCheck, ...]] = {
            HEALTHZ: live,
            LIVEZ: live,
            READYZ: (*live, *readiness),
        }
        for path, named in self._by_path.items():
            names = [c.name for c in named]
            if len(set(names)) != len(names):
                raise ValueError(f"duplicate health check names for {path}: {names}")

    def routes(self) -> list[web.RouteDef]:
        """GET (and HEAD) routes for every endpoint and each of its checks."""
        routes: list[web.RouteDef] = []
        for path, checks in self._by_path.items():
            routes.append(web.get(path, self._root_handler(path, checks)))
            routes.extend(web.get(f"{path}/{c.name}", _single_handler(c)) for c in checks)
        return routes

    def _root_handler(
        self, path: str, checks: tuple[HealthCheck, ...]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        endpoint = path.removeprefix("/")

        async def handle(request: web.Request) -> web.Response:
            return await _report(endpoint, checks, request)

        return handle


async def _report(endpoint: str, checks: tuple[HealthCheck, ...], request: web.Request) -> web.Response:
    excluded = set(request.query.getall("exclude", []))
    active = [c for c in checks if c.name not in excluded]
    # kube runs checks one after another; running them together only makes a slow one cost less.
    errors = await asyncio.gather(*(_run(c) for c in active))
    failures = dict(zip((c.name for c in active), errors, strict=True))
    lines: list[str] = []
    failed: list[str] = []
    for check in checks:
        if check.name in excluded:
            excluded.discard(check.name)
            lines.append(f"[+]{check.name} excluded: ok")
        elif failures[check.name] is None:
            lines.append(f"[+]{check.name} ok")
        else:
            lines.append(f"[-]{check.name} failed: reason withheld")
            failed.append(check.name)
    if excluded:
        quoted = ",".join(go_quote(name) for name in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        logger.warning("cannot exclude some health checks, none installed matching %s", quoted)
    body = "".join(line + "\n" for line in lines)
    if failed:
        details = "".join(f"[-]{name} failed: {failures[name]}\n" for name in failed)
        logger.info("%s check failed: %s\n%s", ",".join(failed), endpoint, details)
        # Go's http.Error: the message plus a newline.
        return _text(f"{body}{endpoint} check failed\n", status=500)
    if "verbose" not in request.query:
        return _text("ok")
    return _text(f"{body}{endpoint} check passed\n")


def _single_handler(check: HealthCheck) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        error = await _run(check)
        if error is not None:
            return _text(f"internal server error: {error}\n", status=500)
        return _text("ok")

    return handle


async def _run(check: HealthCheck) -> str | None:
    """The failure message of a check, or None when it passed."""
    try:
        await check.check()
    except Exception as err:  # any failure of a check is a health failure, never a server error
        return str(err) or type(err).__name__
    return None


def _text(body: str, *, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, content_type=_TEXT, charset="utf-8", headers=_NOSNIFF)
