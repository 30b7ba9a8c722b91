"""TLS cipher suites and versions by kube's names (``--tls-cipher-suites``, ``--tls-min-version``).

Why: Python's default server context offers what OpenSSL's "ECDH+AESGCM:ECDH+CHACHA20:ECDH+AES..."
string picks, which includes two CBC suites Go never offers by default
(ECDHE-RSA-AES128-SHA256 and -AES256-SHA384) and leaves out the SHA-1 CBC ones Go does offer. kube
serves with Go's defaults unless ``--tls-cipher-suites`` names others, using the IANA names that
``k8s.io/component-base/cli/flag/ciphersuites_flag.go`` accepts (Go's ``tls.CipherSuites()`` and
``tls.InsecureCipherSuites()``, plus two CHACHA20 aliases). This maps those names to OpenSSL's.

TLS 1.3 suites are not configurable in Go (``CipherSuites`` applies to TLS 1.0 to 1.2 only), and the
names are accepted and ignored here the same way. Suites OpenSSL no longer builds (RC4) are refused
by ``validate`` rather than at start-up.
"""

from __future__ import annotations

import ssl

# crypto/tls defaultCipherSuites (Go ≥ 1.23: no RSA key exchange, no 3DES), in Go's preference order.
GO_DEFAULT_TLS12_SUITES = (
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
)

# kube's accepted names (secure and insecure) for TLS ≤ 1.2 → the OpenSSL cipher name.
TLS12_SUITES: dict[str, str] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    # tls.InsecureCipherSuites()
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
}

# Accepted by the flag, not configurable (Go always offers all three with TLS 1.3).
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})

# ciphersuites_flag.go's versions (TLS 1.0 and 1.1 need OpenSSL security level 0: see tls.TLSPolicy).
TLS_VERSIONS: dict[str, ssl.TLSVersion] = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}


def openssl_cipher_string(names: list[str]) -> str:
    """The OpenSSL cipher list for kube names (Go's defaults when empty); TLS 1.3 names are skipped,
    so only TLS 1.3 names give "": no TLS 1.2 suite at all, as in Go (see ``server.serving.tls``)."""
    chosen = names or list(GO_DEFAULT_TLS12_SUITES)
    return ":".join(dict.fromkeys(TLS12_SUITES[n] for n in chosen if n in TLS12_SUITES))


def tls_version(name: str) -> ssl.TLSVersion:
    """kube's TLSVersion: empty means TLS 1.2."""
    return TLS_VERSIONS[name] if name else ssl.TLSVersion.TLSv1_2


def cipher_problems(names: list[str]) -> list[str]:
    """kube's error for unknown names, and ours for names this OpenSSL cannot serve."""
    problems = [
        f"Cipher suite {name} not supported or doesn't exist"
        for name in names
        if name not in TLS12_SUITES and name not in TLS13_SUITES
    ]
    if problems:
        return problems
    cipher_string = openssl_cipher_string(names)
    if not cipher_string:
        return []  # only TLS 1.3 names: TLS 1.2 clients find no common suite, as with Go
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(cipher_string)
    except ssl.SSLError:
        return [f"--tls-cipher-suites: none of {', '.join(names)} is available in this server's OpenSSL"]
    return []
