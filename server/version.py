"""/version: kube's version.Info document (k8s.io/apimachinery pkg/version/types.go).

The server reports the Kubernetes minor it follows (KUBE_MAJOR.KUBE_MINOR) so `kubectl version`
sees a sensible server and its skew warning stays quiet for kubectl within one minor of it.
`gitVersion` is semver `v1.32.0+pizza-apiserver.<our version>`: the build-metadata suffix names this
server without making it sort before v1.32.0, as a `-pre-release` suffix would. Go-specific fields
carry their Python counterparts (goVersion "python3.11.7", compiler "cpython"); `platform` keeps
Go's `<os>/<arch>` spelling because clients display it as is.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from server.responses import object_response

KUBE_MAJOR = "1"
KUBE_MINOR = "32"
# Keep in step with pyproject.toml's version.
SERVER_VERSION = "0.1.0"
# kube's buildDate when the build did not stamp one.
UNSTAMPED_BUILD_DATE = "1970-01-01T00:00:00Z"

_GOARCH = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "i386": "386",
    "i686": "386",
}


@dataclass(frozen=True, slots=True)
class VersionInfo:
    major: str
    minor: str
    git_version: str
    git_commit: str = ""
    git_tree_state: str = ""
    build_date: str = UNSTAMPED_BUILD_DATE
    go_version: str = ""
    compiler: str = ""
    platform: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "major": self.major,
            "minor": self.minor,
            "emulationMajor": self.major,
            "emulationMinor": self.minor,
            "minCompatibilityMajor": self.major,
            "minCompatibilityMinor": str(int(self.minor) - 1),
            "gitVersion": self.git_version,
            "gitCommit": self.git_commit,
            "gitTreeState": self.git_tree_state,
            "buildDate": self.build_date,
            "goVersion": self.go_version,
            "compiler": self.compiler,
            "platform": self.platform,
        }


def version_info(
    *,
    server_version: str = SERVER_VERSION,
    git_commit: str = "",
    git_tree_state: str = "",
    build_date: str = "",
) -> VersionInfo:
    """This server's version document; commit and date may be stamped in by the build (e.g. env vars)."""
    return VersionInfo(
        major=KUBE_MAJOR,
        minor=KUBE_MINOR,
        git_version=f"v{KUBE_MAJOR}.{KUBE_MINOR}.0+pizza-apiserver.{server_version}",
        git_commit=git_commit,
        git_tree_state=git_tree_state,
        build_date=build_date or UNSTAMPED_BUILD_DATE,
        go_version=f"python{platform.python_version()}",
        compiler=sys.implementation.name,
        platform=f"{sys.platform}/{_GOARCH.get(platform.machine().lower(), platform.machine().lower())}",
    )


def version_handler(info: VersionInfo) -> Callable[[web.Request], Awaitable[web.Response]]:
    """An aiohttp handler serving `info`, indented like kube's WriteRawJSON."""
    body = info.to_dict()

    async def handle(request: web.Request) -> web.Response:
        return object_response(body, pretty=True)

    return handle
