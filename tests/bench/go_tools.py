"""The Go load tools (loadgen, watchfan in `../shared/tools/`, pbwatchfan of ours): build, run, parse them.

Why Go clients and not aiohttp: a Python client on the same two cores would spend as much CPU per
request as the server it measures, so its own limit would be the number reported. The tools print
one summary line each; this module turns that line into numbers and refuses a run that did not do
what was asked (non-2xx answers, transport errors) instead of reporting a misleading rate.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO / ".." / "shared" / "tools"
BUILD_SCRIPT = TOOLS_DIR / "build.sh"
TOOL_NAMES = ("loadgen", "watchfan")
# Ours: watchfan reading kube's protobuf watch frames; built with the Go toolchain build.sh installs.
OWN_TOOLS_DIR = REPO / "tests" / "bench" / "gotools"
PROTOBUF = "application/vnd.kubernetes.protobuf"

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|µs|us|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
_FIELD = re.compile(r"(\w+)=(map\[[^\]]*\]|\S+)")


class ToolError(RuntimeError):
    """A load tool failed, or its answers say the measurement is not valid."""


def tools_out_dir() -> Path:
    """Where build.sh puts the binaries: $OUT, else $XDG_CACHE_HOME or ~/.cache, /pizza-load-tools."""
    if os.environ.get("OUT"):
        return Path(os.environ["OUT"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pizza-load-tools"


@dataclass(frozen=True, slots=True)
class GoTools:
    loadgen: Path
    watchfan: Path
    pbwatchfan: Path


def _stale(binary: Path, sources: Path = TOOLS_DIR) -> bool:
    """Missing, or older than any Go source of it (a colleague changed a tool)."""
    if not binary.exists():
        return True
    built = binary.stat().st_mtime
    return any(src.stat().st_mtime > built for src in (sources / binary.name).glob("*.go"))


def _build_own(name: str, out: Path) -> Path:
    """One of our tools in OWN_TOOLS_DIR, built with build.sh's toolchain and settings (no downloads)."""
    binary = out / name
    if _stale(binary, OWN_TOOLS_DIR):
        env = {
            **os.environ,
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "",
            "GOPROXY": "off",
            "GOCACHE": str(out / "gocache"),
        }
        built = subprocess.run(
            [str(out / "go" / "bin" / "go"), "build", "-o", str(binary), "."],
            cwd=OWN_TOOLS_DIR / name,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if built.returncode != 0:
            raise ToolError(f"building {name} failed ({built.returncode}):\n{built.stdout}\n{built.stderr}")
    return binary


def ensure_tools() -> GoTools:
    """The binaries, running build.sh first when one is missing or stale (blocking; needs only PyPI)."""
    out = tools_out_dir()
    binaries = {name: out / name for name in TOOL_NAMES}
    if any(_stale(path) for path in binaries.values()):
        if not BUILD_SCRIPT.exists():
            raise ToolError(f"{BUILD_SCRIPT.resolve()} not found: the load tools live in ../shared/tools")
        print(f"building the Go load tools with {BUILD_SCRIPT.resolve()} ...", flush=True)
        built = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
        if built.returncode != 0:
            raise ToolError(f"build.sh failed ({built.returncode}):\n{built.stdout}\n{built.stderr}")
    missing = [str(path) for path in binaries.values() if not os.access(path, os.X_OK)]
    if missing:
        raise ToolError(f"load tools missing after build: {missing}")
    return GoTools(binaries["loadgen"], binaries["watchfan"], _build_own("pbwatchfan", out))


def parse_go_duration(text: str) -> float:
    """Go's time.Duration.String() ("1.28ms", "1m2.5s", "950µs", "0s") in seconds."""
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def _fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def _parse_codes(text: str) -> dict[int, int]:
    """`map[200:3000 409:2]` → {200: 3000, 409: 2}."""
    inner = text.removeprefix("map[").removesuffix("]").strip()
    return {int(k): int(v) for k, v in (item.split(":") for item in inner.split())} if inner else {}


@dataclass(frozen=True, slots=True)
class TLSFiles:
    """Client credentials every tool presents: the admin cert (system:masters) and the serving CA."""

    cert: Path
    key: Path
    cacert: Path

    def flags(self) -> list[str]:
        return ["-cert", str(self.cert), "-key", str(self.key), "-cacert", str(self.cacert)]


@dataclass(frozen=True, slots=True)
class LoadResult:
    """One loadgen line: completed requests, rate and latency quantiles (seconds)."""

    requests: int
    connections: int
    elapsed: float
    rps: float
    p50: float
    p90: float
    p99: float
    max: float
    codes: dict[int, int]
    errors: int
    line: str

    @classmethod
    def parse(cls, line: str) -> LoadResult:
        f = _fields(line)
        try:
            return cls(
                requests=int(f["n"]),
                connections=int(f["c"]),
                elapsed=float(f["elapsed"].removesuffix("s")),
                rps=float(f["rps"]),
                p50=parse_go_duration(f["p50"]),
                p90=parse_go_duration(f["p90"]),
                p99=parse_go_duration(f["p99"]),
                max=parse_go_duration(f["max"]),
                codes=_parse_codes(f["codes"]),
                errors=int(f["errors"]),
                line=line,
            )
        except (KeyError, ValueError) as err:
            raise ToolError(f"cannot parse loadgen output {line!r}: {err}") from err


@dataclass(frozen=True, slots=True)
class WatchfanResult:
    """One watchfan line: deliveries, delivery latency quantiles (seconds) and what went wrong."""

    watchers: int
    events: int
    deliveries: int
    p50: float
    p90: float
    p99: float
    max: float
    missing: int
    watch_failed: int
    write_errors: int
    line: str

    @classmethod
    def parse(cls, line: str) -> WatchfanResult:
        f = _fields(line)
        try:
            return cls(
                watchers=int(f["watchers"]),
                events=int(f["events"]),
                deliveries=int(f["deliveries"]),
                p50=parse_go_duration(f["p50"]),
                p90=parse_go_duration(f["p90"]),
                p99=parse_go_duration(f["p99"]),
                max=parse_go_duration(f["max"]),
                missing=int(f["missing"]),
                watch_failed=int(f["watch_failed"]),
                write_errors=int(f["write_errors"]),
                line=line,
            )
        except (KeyError, ValueError) as err:
            raise ToolError(f"cannot parse watchfan output {line!r}: {err}") from err


async def _run(argv: list[str], timeout: float) -> str:
    """Run a tool, return its last stdout line; kill it if we are cancelled (Ctrl-C) or it overruns."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    lines = out.decode(errors="replace").strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ToolError(
            f"{Path(argv[0]).name} exited {proc.returncode}: {err.decode(errors='replace').strip()[-2000:]}"
        )
    return lines[-1]


async def loadgen(
    tools: GoTools,
    tls: TLSFiles,
    url: str,
    *,
    requests: int,
    connections: int,
    max_seconds: float,
    method: str = "GET",
    body: str = "",
    content_type: str = "application/json",
    accept: str = "application/json",
    warmup: int = 20,
    expect: int = 200,
) -> LoadResult:
    """Bounded by both `requests` and `max_seconds`; every answer must be `expect`, or ToolError."""
    argv = [
        str(tools.loadgen),
        "-url",
        url,
        "-method",
        method,
        "-n",
        str(requests),
        "-c",
        str(connections),
        "-max",
        f"{max_seconds:g}s",
        "-warmup",
        str(warmup),
        "-accept",
        accept,
        *tls.flags(),
    ]
    if body:
        argv += ["-body", body, "-content-type", content_type]
    # The tool's own bound plus room for warm-up and a 30 s client timeout on the last request.
    result = LoadResult.parse(await _run(argv, max_seconds + 60 + warmup))
    unexpected = {code: n for code, n in result.codes.items() if code != expect}
    if unexpected or result.errors or result.requests == 0:
        raise ToolError(f"{method} {url}: expected only {expect}, got {result.line}")
    return result


async def watchfan(
    tools: GoTools,
    tls: TLSFiles,
    collection_url: str,
    *,
    body: str,
    watchers: int,
    events: int,
    rate: float,
    max_seconds: float,
    accept: str = "application/json",
) -> WatchfanResult:
    """Open `watchers` watches on the collection, POST `events` objects at `rate`/s, time deliveries.

    Watches in protobuf (`accept` starting with kube's protobuf type) are read by pbwatchfan."""
    protobuf = accept.startswith(PROTOBUF)
    argv = [
        str(tools.pbwatchfan if protobuf else tools.watchfan),
        "-url",
        collection_url,
        "-body",
        body,
        "-watchers",
        str(watchers),
        "-events",
        str(events),
        "-rate",
        f"{rate:g}",
        "-max",
        f"{max_seconds:g}s",
        *tls.flags(),
        *(["-accept", accept] if protobuf else []),
    ]
    return WatchfanResult.parse(await _run(argv, max_seconds + 60))
