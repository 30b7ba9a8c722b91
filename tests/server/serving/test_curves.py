"""Key exchange groups: kube's --tls-curve-preferences checks, Go's order, and failing safe.

The handshakes themselves are tested over real TLS with ``openssl s_client`` in
tests/fault/test_connections.py; these check the flag's errors and what is set on a context.
"""

from __future__ import annotations

import logging
import ssl

import pytest

from server.options import parse_args
from server.serving.curves import apply_groups, group_available, groups_list


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "curve preference 0 is out of range (must be 1-65535)"),
        ("65536", "curve preference 65536 is out of range (must be 1-65535)"),
        ("29,23,29", "duplicate curve preference 29"),
        ("30", "curve preference 30 is not supported by the current Go version"),
        (
            "29,x",
            'invalid argument "29,x" for "--tls-curve-preferences" flag: strconv.ParseInt: parsing "x": '
            "invalid syntax",
        ),
    ],
)
def test_bad_curve_preferences_get_kubes_errors(value: str, problem: str) -> None:
    assert parse_args([f"--tls-curve-preferences={value}"]).validate() == [problem]


def test_curve_preferences_keep_gos_order_and_skip_what_openssl_lacks() -> None:
    assert parse_args(["--tls-curve-preferences=25,23,29"]).validate() == []
    assert groups_list((25, 23, 29)) == "X25519:P-256:P-521"  # the order given is ignored, as in Go
    # Go's defaults; the ML-KEM hybrids lead where OpenSSL (≥ 3.5) has them.
    assert groups_list(()).endswith("X25519:P-256:P-384:P-521")
    assert groups_list(()).startswith("X25519MLKEM768:" if group_available("X25519MLKEM768") else "X25519:")
    assert "X448" not in groups_list(())


def test_groups_openssl_refuses_keep_its_defaults_and_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with caplog.at_level(logging.WARNING, logger="server.serving.curves"):
        assert not apply_groups(context, "X25519:no-such-group")
        assert not apply_groups(context, "X25519:no-such-group")
    assert [r.getMessage() for r in caplog.records] == [
        "OpenSSL refused the key exchange groups 'X25519:no-such-group'; its defaults stay in use"
    ]
    # No OpenSSL error is left behind for the next ssl call to misreport.
    context.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
    assert apply_groups(context, "P-256")
