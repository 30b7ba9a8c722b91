"""Key exchange groups ("curves") as Go's crypto/tls offers them, and kube's ``--tls-curve-preferences``.

Why: OpenSSL's default groups are X25519, P-256, X448, P-521, P-384; Go's (``defaultCurvePreferences``
in crypto/tls/defaults.go) are X25519, P-256, P-384, P-521, led since Go 1.24 by the X25519MLKEM768
hybrid and since Go 1.26 also SecP256r1MLKEM768 and SecP384r1MLKEM1024. So a Python server offers
X448, which kube never does. kube's ``--tls-curve-preferences`` (component-base ≥ 0.36) takes numeric
CurveIDs and keeps Go's preference order, the list only filtering it.

Python 3.11's ``ssl`` can only pin one curve (``set_ecdh_curve``), so the list is set through
OpenSSL itself: ``SSL_CTX_ctrl(ctx, SSL_CTRL_SET_GROUPS_LIST, ...)`` (what the
``SSL_CTX_set1_groups_list`` macro expands to) on the ``SSL_CTX*`` that an ``ssl.SSLContext`` holds
as its first field, called through the libssl that ``_ssl`` is linked against. The pointer is only
trusted after OpenSSL's view of it (its options) matches Python's; anything unexpected leaves the
context with OpenSSL's defaults and is logged once.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import ssl
from dataclasses import dataclass

logger = logging.getLogger(__name__)

# Go's CurveID values (crypto/tls/common.go) → OpenSSL group names, in Go's preference order.
GO_CURVES: dict[int, str] = {
    4588: "X25519MLKEM768",
    4587: "SecP256r1MLKEM768",
    4589: "SecP384r1MLKEM1024",
    29: "X25519",
    23: "P-256",
    24: "P-384",
    25: "P-521",
}
# Go 1.26's defaultCurvePreferences: every curve Go knows.
GO_DEFAULT_CURVES: tuple[int, ...] = tuple(GO_CURVES)

_MAX_CURVE_ID = 65535
_SSL_CTRL_SET_GROUPS_LIST = 92


def curve_problems(ids: list[int]) -> list[str]:
    """kube's errors (cliflag.TLSCurvePreferences), plus ours for groups this OpenSSL lacks."""
    seen: set[int] = set()
    for curve_id in ids:
        if curve_id <= 0 or curve_id > _MAX_CURVE_ID:
            return [f"curve preference {curve_id} is out of range (must be 1-{_MAX_CURVE_ID})"]
        if curve_id in seen:
            return [f"duplicate curve preference {curve_id}"]
        seen.add(curve_id)
        if curve_id not in GO_CURVES:
            return [f"curve preference {curve_id} is not supported by the current Go version"]
    if not ids:
        return []
    if _groups_setter() is None:
        return [
            "--tls-curve-preferences can not be applied: this Python's ssl module gives no access to "
            "OpenSSL's groups list"
        ]
    usable = [i for i in ids if group_available(GO_CURVES[i])]
    if not usable:
        names = ", ".join(GO_CURVES[i] for i in ids)
        return [f"--tls-curve-preferences: none of {names} is available in this server's OpenSSL"]
    return []


def groups_list(ids: tuple[int, ...]) -> str:
    """OpenSSL's groups list for kube's CurveIDs (Go's defaults when empty), in Go's order.

    Like Go, which offers only the hybrids it implements, groups this OpenSSL lacks (the ML-KEM
    hybrids before OpenSSL 3.5) are left out.
    """
    chosen = set(ids or GO_DEFAULT_CURVES)
    return ":".join(
        name for curve_id, name in GO_CURVES.items() if curve_id in chosen and group_available(name)
    )


def apply_groups(context: ssl.SSLContext, groups: str) -> bool:
    """Set the context's key exchange groups; False (logged once) if it could not be done."""
    setter = _groups_setter()
    if setter is None or not groups:
        _warn_once("OpenSSL's default key exchange groups stay in use (X448 is offered, unlike Go)")
        return False
    if not setter.set(context, groups):
        _warn_once(f"OpenSSL refused the key exchange groups {groups!r}; its defaults stay in use")
        return False
    return True


@functools.cache
def group_available(name: str) -> bool:
    """Whether this OpenSSL knows the group (tried on a scratch context)."""
    setter = _groups_setter()
    return setter is not None and setter.set(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), name)


@dataclass(frozen=True, slots=True)
class _GroupsSetter:
    ctrl: ctypes._NamedFuncPointer
    get_options: ctypes._NamedFuncPointer
    clear_errors: ctypes._NamedFuncPointer

    def set(self, context: ssl.SSLContext, groups: str) -> bool:
        ctx = _ssl_ctx_pointer(context)
        if ctx is None or self.get_options(ctx) != int(context.options):
            return False
        if self.ctrl(ctx, _SSL_CTRL_SET_GROUPS_LIST, 0, groups.encode("ascii")) == 1:
            return True
        self.clear_errors()  # leave no error on the thread's queue for the next ssl call to misreport
        return False


def _ssl_ctx_pointer(context: ssl.SSLContext) -> int | None:
    """The ``SSL_CTX*``: PySSLContext's first field, right after the object header."""
    if type(context).__basicsize__ < object.__basicsize__ + ctypes.sizeof(ctypes.c_void_p):
        return None
    return ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value


@functools.cache
def _groups_setter() -> _GroupsSetter | None:
    """OpenSSL's functions from the libssl ``_ssl`` uses (its dependency, so dlsym finds them)."""
    try:
        import _ssl

        library = ctypes.CDLL(getattr(_ssl, "__file__", None))  # None: _ssl is built into python
        ctrl = library.SSL_CTX_ctrl
        get_options = library.SSL_CTX_get_options
        clear_errors = library.ERR_clear_error
    except (OSError, AttributeError) as err:
        logger.info("no access to OpenSSL's SSL_CTX functions: %s", err)
        return None
    ctrl.restype = ctypes.c_long
    ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_char_p]
    get_options.restype = ctypes.c_uint64
    get_options.argtypes = [ctypes.c_void_p]
    clear_errors.restype = None
    clear_errors.argtypes = []
    return _GroupsSetter(ctrl, get_options, clear_errors)


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)
