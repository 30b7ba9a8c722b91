"""Flags parse with kube's names and defaults; validation reports every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.options import Options, build_parser, parse_args
from server.options.etcd import DEFAULT_ETCD_PREFIX, EtcdOptions
from server.options.generic import GenericOptions
from server.options.log import LogOptions
from server.serving.options import ServingOptions


def test_defaults_match_kube_and_the_brief() -> None:
    options = parse_args([])

    assert options == Options()
    assert options.serving.bind_address == "127.0.0.1"
    assert options.serving.secure_port == 8443
    assert options.generic.data_dir == Path(".pizza-apiserver")
    assert options.serving.cert_dir is None and options.generic.admin_kubeconfig is None
    assert options.serving.tls_cert_file is None and options.serving.tls_private_key_file is None
    assert options.serving.serving_cert_dns_names == [] and options.etcd.etcd_servers == []
    assert options.etcd.etcd_prefix == DEFAULT_ETCD_PREFIX == "/registry"
    assert options.etcd.etcd_compaction_interval == 300.0  # kube: 5m
    assert options.etcd.etcd_healthcheck_timeout == 2.0 and options.etcd.etcd_readycheck_timeout == 2.0
    assert (options.generic.max_requests_inflight, options.generic.max_mutating_requests_inflight) == (
        400,
        200,
    )
    assert options.generic.request_timeout == 60.0  # kube: 1m0s
    assert options.generic.min_request_timeout == 1800
    assert options.generic.shutdown_delay_duration == 0.0
    assert options.logs.verbosity == 0
    assert options.etcd.uses_embedded_storage and options.serving.generates_serving_cert
    assert options.validate() == []


def test_complete_derives_paths_and_sans_from_other_flags() -> None:
    options = parse_args(
        ["--data-dir", "/var/lib/pizza", "--serving-cert-dns-names", "api.pizza-apiserver.svc,10.0.0.5"]
    ).complete()

    assert options.serving.cert_dir == Path("/var/lib/pizza/certs")
    assert options.generic.admin_kubeconfig == Path("/var/lib/pizza/admin.kubeconfig")
    assert options.serving.serving_cert_dns_names == ["api.pizza-apiserver.svc"]
    # The specific bind address becomes an IP SAN, as kube's MaybeDefaultWithSelfSignedCerts does.
    assert options.serving.serving_cert_ip_addresses == ["127.0.0.1", "10.0.0.5"]
    assert options.validate() == []


def test_complete_keeps_explicit_paths_and_skips_unspecified_bind_address() -> None:
    options = parse_args(
        ["--bind-address", "0.0.0.0", "--cert-dir", "/c", "--admin-kubeconfig", "/k/admin.yaml"]
    ).complete()
    assert options.serving.cert_dir == Path("/c")
    assert options.generic.admin_kubeconfig == Path("/k/admin.yaml")
    assert options.serving.serving_cert_ip_addresses == []

    blank = parse_args(["--bind-address", ""]).complete()
    assert blank.serving.bind_address == "0.0.0.0"  # kube: blank means all interfaces


def test_every_flag_parses() -> None:
    options = parse_args(
        [
            "--bind-address=::1",
            "--secure-port=0",
            "--cert-dir=/certs",
            "--tls-cert-file=/tls/tls.crt",
            "--tls-private-key-file=/tls/tls.key",
            "--data-dir=/data",
            "--admin-kubeconfig=/data/kc",
            "--max-requests-inflight=10",
            "--max-mutating-requests-inflight=5",
            "--request-timeout=1m30s",
            "--min-request-timeout=60",
            "--shutdown-delay-duration=500ms",
            "--etcd-servers=https://127.0.0.1:2379,https://127.0.0.2:2379",
            "--etcd-servers",
            "https://127.0.0.3:2379",
            "--etcd-prefix=/registry/other",
            "--etcd-cafile=/etcd/ca.crt",
            "--etcd-certfile=/etcd/client.crt",
            "--etcd-keyfile=/etcd/client.key",
            "--etcd-compaction-interval=0",
            "--etcd-healthcheck-timeout=3s",
            "--etcd-readycheck-timeout=1.5s",
            "--v=4",
        ]
    )

    assert options == Options(
        serving=ServingOptions(
            bind_address="::1",
            secure_port=0,
            cert_dir=Path("/certs"),
            tls_cert_file=Path("/tls/tls.crt"),
            tls_private_key_file=Path("/tls/tls.key"),
        ),
        generic=GenericOptions(
            data_dir=Path("/data"),
            admin_kubeconfig=Path("/data/kc"),
            max_requests_inflight=10,
            max_mutating_requests_inflight=5,
            request_timeout=90.0,
            min_request_timeout=60,
            shutdown_delay_duration=0.5,
        ),
        etcd=EtcdOptions(
            etcd_servers=["https://127.0.0.1:2379", "https://127.0.0.2:2379", "https://127.0.0.3:2379"],
            etcd_prefix="/registry/other",
            etcd_cafile=Path("/etcd/ca.crt"),
            etcd_certfile=Path("/etcd/client.crt"),
            etcd_keyfile=Path("/etcd/client.key"),
            etcd_compaction_interval=0.0,
            etcd_healthcheck_timeout=3.0,
            etcd_readycheck_timeout=1.5,
        ),
        logs=LogOptions(verbosity=4),
    )
    assert not options.etcd.uses_embedded_storage and not options.serving.generates_serving_cert
    assert options.validate() == []


@pytest.mark.parametrize("argv", [["-v", "3"], ["-v3"], ["--v", "3"], ["--v=3"]])
def test_verbosity_spellings(argv: list[str]) -> None:
    assert parse_args(argv).logs.verbosity == 3


def test_comma_lists_drop_blanks_and_an_empty_value_means_none() -> None:
    assert parse_args(["--serving-cert-dns-names", " a.svc, ,b.svc,"]).serving.serving_cert_dns_names == [
        "a.svc",
        "b.svc",
    ]
    assert parse_args(["--etcd-servers="]).etcd.etcd_servers == []
    # Each parse starts from a fresh default: no state leaks between parses.
    assert parse_args([]).serving.serving_cert_dns_names == []


def test_invalid_combinations_are_reported_together() -> None:
    options = parse_args(
        [
            "--bind-address=not-an-ip",
            "--secure-port=70000",
            "--tls-cert-file=/only/cert.crt",
            "--serving-cert-dns-names=Bad_Name,ok.svc",
            "--max-requests-inflight=-1",
            "--max-mutating-requests-inflight=-2",
            "--request-timeout=-1s",
            "--min-request-timeout=-5",
            "--shutdown-delay-duration=-1s",
            "--etcd-prefix=registry",
            "--etcd-certfile=/etcd/client.crt",
            "--etcd-compaction-interval=-5m",
            "--etcd-healthcheck-timeout=0",
            "--etcd-readycheck-timeout=0",
            "--v=-1",
        ]
    )

    problems = options.validate()

    assert problems == [
        "--bind-address 'not-an-ip' is not a valid IP address",
        "--secure-port 70000 must be between 0 and 65535, inclusive. 0 for picking a free port",
        "--tls-cert-file and --tls-private-key-file must be specified together",
        "--serving-cert-dns-names only applies to the generated certificate; it can not be combined with "
        "--tls-cert-file",
        "--serving-cert-dns-names 'Bad_Name' is neither a DNS-1123 subdomain nor an IP address",
        "--max-requests-inflight can not be negative value",
        "--max-mutating-requests-inflight can not be negative value",
        "--request-timeout can not be negative value",
        "--min-request-timeout can not be negative value",
        "--shutdown-delay-duration can not be negative value",
        "--etcd-prefix 'registry' must start with '/'",
        "--etcd-certfile and --etcd-keyfile must be specified together",
        "--etcd-certfile require --etcd-servers (the embedded storage has no TLS)",
        "--etcd-compaction-interval can not be negative value",
        "--etcd-healthcheck-timeout must be greater than 0",
        "--etcd-readycheck-timeout must be greater than 0",
        "-v can not be negative value",
    ]


@pytest.mark.parametrize(
    "server",
    ["127.0.0.1:2379", "ftp://127.0.0.1:2379", "https://", "https://127.0.0.1:2379/v3/kv"],
)
def test_malformed_etcd_servers_are_rejected(server: str) -> None:
    problems = parse_args([f"--etcd-servers={server}"]).validate()
    assert problems == [f"--etcd-servers {server!r} must be a URL like https://127.0.0.1:2379"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--request-timeout=5"], 'time: missing unit in duration "5"'),
        (["--etcd-compaction-interval", "5d"], 'time: unknown unit "d" in duration "5d"'),
        (["--secure-port=https"], "invalid int value: 'https'"),
        (["--etcd"], "unrecognized arguments: --etcd"),  # no prefix abbreviations, as with pflag
    ],
)
def test_malformed_values_exit_with_usage(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    assert fragment in capsys.readouterr().err


def test_help_shows_go_style_duration_defaults() -> None:
    text = build_parser().format_help()
    assert "(default 1m0s)" in text  # --request-timeout
    assert "(default 5m0s)" in text  # --etcd-compaction-interval
    assert "(default 0s)" in text  # --shutdown-delay-duration
