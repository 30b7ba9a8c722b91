"""Audit flags: kube's names and defaults, pflag-style values, kube's validation messages."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from server.audit.options import AuditOptions
from server.audit.pipeline import build_audit


def parse(*argv: str) -> AuditOptions:
    parser = argparse.ArgumentParser(exit_on_error=False)
    AuditOptions.add_flags(parser)
    return AuditOptions(**vars(parser.parse_args(list(argv))))


def test_defaults_match_kube() -> None:
    options = parse()
    assert options == AuditOptions()
    assert options.audit_log_format == "json"
    assert (options.audit_log_mode, options.audit_webhook_mode) == ("blocking", "batch")
    webhook = options.batch_config("webhook")
    assert (webhook.buffer_size, webhook.max_batch_size, webhook.max_batch_wait) == (10000, 400, 30.0)
    assert (webhook.throttle_enable, webhook.throttle_qps, webhook.throttle_burst) == (True, 10.0, 15)
    log = options.batch_config("log")
    assert (log.buffer_size, log.max_batch_size, log.throttle_enable, log.async_delegate) == (
        10000,
        1,
        False,
        False,
    )
    assert options.audit_webhook_initial_backoff == 10.0
    assert options.audit_log_version == options.audit_webhook_version == "audit.k8s.io/v1"
    assert options.truncate_config("log") is None
    # Every dataclass field is a flag dest and vice versa (the FlagGroup contract of server.options).
    parser = argparse.ArgumentParser()
    AuditOptions.add_flags(parser)
    assert set(vars(parser.parse_args([]))) == {f.name for f in dataclasses.fields(AuditOptions)}


def test_flag_values() -> None:
    options = parse(
        "--audit-policy-file=/etc/audit/policy.yaml",
        "--audit-log-path",
        "-",
        "--audit-log-maxage=7",
        "--audit-log-maxbackup=3",
        "--audit-log-maxsize=50",
        "--audit-log-compress",
        "--audit-log-format=legacy",
        "--audit-webhook-config-file=/etc/audit/webhook.kubeconfig",
        "--audit-webhook-batch-max-wait=1m30s",
        "--audit-webhook-batch-throttle-enable=false",
        "--audit-webhook-batch-initial-backoff=250ms",
        "--audit-webhook-truncate-enabled=true",
    )
    assert options.audit_policy_file == Path("/etc/audit/policy.yaml")
    assert options.audit_log_path == "-"
    assert (options.audit_log_maxage, options.audit_log_maxbackup, options.audit_log_maxsize) == (7, 3, 50)
    assert options.audit_log_compress is True
    assert options.audit_log_format == "legacy"
    assert options.audit_webhook_config_file == Path("/etc/audit/webhook.kubeconfig")
    assert options.audit_webhook_batch_max_wait == 90.0
    assert options.audit_webhook_batch_throttle_enable is False
    assert options.audit_webhook_initial_backoff == 0.25  # the deprecated spelling still works
    truncate = options.truncate_config("webhook")
    assert truncate is not None and (truncate.max_event_size, truncate.max_batch_size) == (102400, 10485760)
    assert options.validate() == []


def test_bad_flag_values_are_usage_errors() -> None:
    with pytest.raises(argparse.ArgumentError, match="invalid duration"):
        parse("--audit-webhook-batch-max-wait=soon")
    with pytest.raises(argparse.ArgumentError, match=r"strconv\.ParseBool"):
        parse("--audit-log-compress=yes")


def test_validation_only_for_enabled_backends() -> None:
    bad = dict(audit_log_maxage=-1, audit_log_format="xml", audit_webhook_mode="fast")
    assert AuditOptions(**bad).validate() == []
    assert AuditOptions(audit_log_path="/var/log/audit.log", **bad).validate() == [
        'invalid audit log format xml, allowed formats are "legacy,json"',
        "--audit-log-maxage -1 can't be a negative number",
    ]
    assert AuditOptions(audit_webhook_config_file=Path("w.yaml"), **bad).validate() == [
        'invalid audit webhook mode fast, allowed modes are "batch,blocking,blocking-strict"'
    ]


def test_validation_messages() -> None:
    options = AuditOptions(
        audit_log_path="a.log",
        audit_log_mode="batch",
        audit_log_batch_buffer_size=0,
        audit_log_truncate_max_event_size=10,
        audit_log_truncate_max_batch_size=5,
        audit_log_maxbackup=-2,
        audit_log_maxsize=-3,
        audit_webhook_config_file=Path("w.yaml"),
        audit_webhook_batch_throttle_qps=0,
        audit_webhook_version="audit.k8s.io/v1beta1",
    )
    assert options.validate() == [
        "invalid audit batch log buffer size 0, must be a positive number",
        "invalid audit truncate log max batch size 5, must be greater than max event size (10)",
        "--audit-log-maxbackup -2 can't be a negative number",
        "--audit-log-maxsize -3 can't be a negative number",
        "invalid audit batch webhook throttle QPS 0, must be a positive number",
        'invalid group version, allowed versions are ["audit.k8s.io/v1"]',
    ]


async def test_audit_is_off_without_policy_or_backend(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    assert await build_audit(AuditOptions(audit_log_path=str(tmp_path / "a.log"))) is None
    assert await build_audit(AuditOptions(audit_policy_file=policy)) is None
    pipeline = await build_audit(
        AuditOptions(audit_policy_file=policy, audit_log_path=str(tmp_path / "a.log"))
    )
    assert pipeline is not None
    await pipeline.shutdown()


async def test_build_errors_name_the_file(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
    with pytest.raises(
        ValueError, match=r"^loading audit policy file: loaded illegal policy with 0 rules: from"
    ):
        await build_audit(AuditOptions(audit_policy_file=policy, audit_log_path="-"))
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    kubeconfig = tmp_path / "webhook.kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with pytest.raises(
        ValueError, match=r"^initializing audit webhook: invalid configuration: no server found"
    ):
        await build_audit(AuditOptions(audit_policy_file=policy, audit_webhook_config_file=kubeconfig))
