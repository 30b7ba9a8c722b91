"""Audit flags, named, defaulted and validated like kube's (k8s.io/apiserver pkg/server/options/audit.go).

Audit happens only with --audit-policy-file and at least one backend (--audit-log-path and/or
--audit-webhook-config-file), as in kube. The log backend defaults to mode "blocking" (the request
waits for its line to be written), the webhook to "batch" (requests only fill a bounded buffer).
Validation of a backend's flags runs only when that backend is enabled, again as in kube.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.audit.backend import MODE_BATCH, MODE_BLOCKING, MODES, BatchConfig, TruncateConfig
from server.audit.log_backend import FORMAT_JSON, FORMATS
from server.audit.policy import GROUP_VERSION
from server.audit.webhook_backend import DEFAULT_INITIAL_BACKOFF
from server.flags import add_bool, add_duration, add_int, add_path, duration_value

_KNOWN_GROUP_VERSIONS = (GROUP_VERSION,)
_TRUNCATE_MAX_BATCH = 10 * 1024 * 1024
_TRUNCATE_MAX_EVENT = 100 * 1024


@dataclass(slots=True)
class AuditOptions:
    """Field names are the argparse dests of the flags (see server.options.FlagGroup)."""

    audit_policy_file: Path | None = None
    # log backend
    audit_log_path: str = ""
    audit_log_maxage: int = 0
    audit_log_maxbackup: int = 0
    audit_log_maxsize: int = 0
    audit_log_format: str = FORMAT_JSON
    audit_log_compress: bool = False
    audit_log_version: str = GROUP_VERSION
    audit_log_mode: str = MODE_BLOCKING
    audit_log_batch_buffer_size: int = 10000
    audit_log_batch_max_size: int = 1
    audit_log_batch_max_wait: float = 0.0
    audit_log_batch_throttle_enable: bool = False
    audit_log_batch_throttle_qps: float = 0.0
    audit_log_batch_throttle_burst: int = 0
    audit_log_truncate_enabled: bool = False
    audit_log_truncate_max_batch_size: int = _TRUNCATE_MAX_BATCH
    audit_log_truncate_max_event_size: int = _TRUNCATE_MAX_EVENT
    # webhook backend
    audit_webhook_config_file: Path | None = None
    audit_webhook_initial_backoff: float = DEFAULT_INITIAL_BACKOFF
    audit_webhook_version: str = GROUP_VERSION
    audit_webhook_mode: str = MODE_BATCH
    audit_webhook_batch_buffer_size: int = 10000
    audit_webhook_batch_max_size: int = 400
    audit_webhook_batch_max_wait: float = 30.0
    audit_webhook_batch_throttle_enable: bool = True
    audit_webhook_batch_throttle_qps: float = 10.0
    audit_webhook_batch_throttle_burst: int = 15
    audit_webhook_truncate_enabled: bool = False
    audit_webhook_truncate_max_batch_size: int = _TRUNCATE_MAX_BATCH
    audit_webhook_truncate_max_event_size: int = _TRUNCATE_MAX_EVENT

    @property
    def log_enabled(self) -> bool:
        return bool(self.audit_log_path)

    @property
    def webhook_enabled(self) -> bool:
        return self.audit_webhook_config_file is not None and str(self.audit_webhook_config_file) != ""

    def batch_config(self, plugin: str) -> BatchConfig:
        """The buffered-backend settings of `plugin` ("log" or "webhook")."""
        return BatchConfig(
            buffer_size=self._get(plugin, "batch_buffer_size"),
            max_batch_size=self._get(plugin, "batch_max_size"),
            max_batch_wait=self._get(plugin, "batch_max_wait"),
            throttle_enable=self._get(plugin, "batch_throttle_enable"),
            throttle_qps=self._get(plugin, "batch_throttle_qps"),
            throttle_burst=self._get(plugin, "batch_throttle_burst"),
            # kube: log batches are written in order by the batching routine; webhook batches in parallel.
            async_delegate=plugin == "webhook",
        )

    def truncate_config(self, plugin: str) -> TruncateConfig | None:
        if not self._get(plugin, "truncate_enabled"):
            return None
        return TruncateConfig(
            max_event_size=self._get(plugin, "truncate_max_event_size"),
            max_batch_size=self._get(plugin, "truncate_max_batch_size"),
        )

    def mode(self, plugin: str) -> str:
        return str(self._get(plugin, "mode"))

    def _get(self, plugin: str, name: str) -> Any:
        return getattr(self, f"audit_{plugin}_{name}")

    def validate(self) -> list[str]:
        problems: list[str] = []
        if self.log_enabled:
            problems += self._validate_plugin("log")
            if self.audit_log_format not in FORMATS:
                problems.append(
                    f"invalid audit log format {self.audit_log_format}, allowed formats are "
                    f'"{",".join(FORMATS)}"'
                )
            for flag, value in (
                ("--audit-log-maxage", self.audit_log_maxage),
                ("--audit-log-maxbackup", self.audit_log_maxbackup),
                ("--audit-log-maxsize", self.audit_log_maxsize),
            ):
                if value < 0:
                    problems.append(f"{flag} {value} can't be a negative number")
        if self.webhook_enabled:
            problems += self._validate_plugin("webhook")
        return problems

    def _validate_plugin(self, plugin: str) -> list[str]:
        problems: list[str] = []
        mode = self.mode(plugin)
        if mode not in MODES:
            problems.append(f'invalid audit {plugin} mode {mode}, allowed modes are "{",".join(MODES)}"')
        elif mode == MODE_BATCH:
            config = self.batch_config(plugin)
            if config.buffer_size <= 0:
                problems.append(
                    f"invalid audit batch {plugin} buffer size {config.buffer_size}, "
                    "must be a positive number"
                )
            elif config.max_batch_size <= 0:
                problems.append(
                    f"invalid audit batch {plugin} max batch size {config.max_batch_size}, "
                    "must be a positive number"
                )
            elif config.throttle_enable and config.throttle_qps <= 0:
                problems.append(
                    f"invalid audit batch {plugin} throttle QPS {_go_float(config.throttle_qps)}, "
                    "must be a positive number"
                )
            elif config.throttle_enable and config.throttle_burst <= 0:
                problems.append(
                    f"invalid audit batch {plugin} throttle burst {config.throttle_burst}, "
                    "must be a positive number"
                )
        max_event = self._get(plugin, "truncate_max_event_size")
        max_batch = self._get(plugin, "truncate_max_batch_size")
        if max_event <= 0:
            problems.append(
                f"invalid audit truncate {plugin} max event size {max_event}, must be a positive number"
            )
        elif max_batch < max_event:
            problems.append(
                f"invalid audit truncate {plugin} max batch size {max_batch}, must be greater than "
                f"max event size ({max_event})"
            )
        version = self._get(plugin, "version")
        if version.count("/") > 1:
            problems.append(f"unexpected GroupVersion string: {version}")
        elif version not in _KNOWN_GROUP_VERSIONS:
            known = ",".join(f'"{v}"' for v in _KNOWN_GROUP_VERSIONS)
            problems.append(f"invalid group version, allowed versions are [{known}]")
        return problems

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        d = AuditOptions()
        group = parser.add_argument_group("audit")
        add_path(
            group, "--audit-policy-file", "Path to the file that defines the audit policy configuration."
        )
        group.add_argument(
            "--audit-log-path",
            default=d.audit_log_path,
            metavar="string",
            help="If set, all requests coming to the apiserver will be logged to this file.  "
            "'-' means standard out.",
        )
        add_int(
            group,
            "--audit-log-maxage",
            d.audit_log_maxage,
            "The maximum number of days to retain old audit log files based on the timestamp encoded "
            "in their filename.",
        )
        add_int(
            group,
            "--audit-log-maxbackup",
            d.audit_log_maxbackup,
            "The maximum number of old audit log files to retain.",
        )
        add_int(
            group,
            "--audit-log-maxsize",
            d.audit_log_maxsize,
            "The maximum size in megabytes of the audit log file before it gets rotated.",
        )
        group.add_argument(
            "--audit-log-format",
            default=d.audit_log_format,
            metavar="string",
            help='Format of saved audits. "legacy" indicates 1-line text format for each event. "json" '
            f'indicates structured json format. Known formats are {",".join(FORMATS)}. (default "json")',
        )
        add_bool(
            group,
            "--audit-log-compress",
            d.audit_log_compress,
            "If set, the rotated log files will be compressed using gzip.",
        )
        group.add_argument(
            "--audit-log-version",
            default=d.audit_log_version,
            metavar="string",
            help="API group and version used for serializing audit events written to log. "
            '(default "audit.k8s.io/v1")',
        )
        _batch_flags(group, "log", d)
        _truncate_flags(group, "log", d)
        add_path(
            group,
            "--audit-webhook-config-file",
            "Path to a kubeconfig formatted file that defines the audit webhook configuration.",
        )
        add_duration(
            group,
            "--audit-webhook-initial-backoff",
            d.audit_webhook_initial_backoff,
            "The amount of time to wait before retrying the first failed request.",
        )
        group.add_argument(
            "--audit-webhook-batch-initial-backoff",
            dest="audit_webhook_initial_backoff",
            type=duration_value,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,  # deprecated in kube for --audit-webhook-initial-backoff
        )
        group.add_argument(
            "--audit-webhook-version",
            default=d.audit_webhook_version,
            metavar="string",
            help="API group and version used for serializing audit events written to webhook. "
            '(default "audit.k8s.io/v1")',
        )
        _batch_flags(group, "webhook", d)
        _truncate_flags(group, "webhook", d)


def _batch_flags(group: argparse._ArgumentGroup, plugin: str, d: AuditOptions) -> None:
    group.add_argument(
        f"--audit-{plugin}-mode",
        default=d.mode(plugin),
        metavar="string",
        help="Strategy for sending audit events. Blocking indicates sending events should block server "
        "responses. Batch causes the backend to buffer and write events asynchronously. Known modes are "
        f'{",".join(MODES)}. (default "{d.mode(plugin)}")',
    )
    config = d.batch_config(plugin)
    add_int(
        group,
        f"--audit-{plugin}-batch-buffer-size",
        config.buffer_size,
        "The size of the buffer to store events before batching and writing. Only used in batch mode.",
    )
    add_int(
        group,
        f"--audit-{plugin}-batch-max-size",
        config.max_batch_size,
        "The maximum size of a batch. Only used in batch mode.",
    )
    add_duration(
        group,
        f"--audit-{plugin}-batch-max-wait",
        config.max_batch_wait,
        "The amount of time to wait before force writing the batch that hadn't reached the max size. "
        "Only used in batch mode.",
    )
    add_bool(
        group,
        f"--audit-{plugin}-batch-throttle-enable",
        config.throttle_enable,
        "Whether batching throttling is enabled. Only used in batch mode.",
    )
    group.add_argument(
        f"--audit-{plugin}-batch-throttle-qps",
        type=float,
        default=config.throttle_qps,
        metavar="float32",
        help="Maximum average number of batches per second. Only used in batch mode.",
    )
    add_int(
        group,
        f"--audit-{plugin}-batch-throttle-burst",
        config.throttle_burst,
        "Maximum number of requests sent at the same moment if ThrottleQPS was not utilized before. "
        "Only used in batch mode.",
    )


def _truncate_flags(group: argparse._ArgumentGroup, plugin: str, d: AuditOptions) -> None:
    add_bool(
        group,
        f"--audit-{plugin}-truncate-enabled",
        d._get(plugin, "truncate_enabled"),
        "Whether event and batch truncating is enabled.",
    )
    add_int(
        group,
        f"--audit-{plugin}-truncate-max-batch-size",
        d._get(plugin, "truncate_max_batch_size"),
        "Maximum size of the batch sent to the underlying backend. Actual serialized size can be several "
        "hundreds of bytes greater. If a batch exceeds this limit, it is split into several batches of "
        "smaller size.",
    )
    add_int(
        group,
        f"--audit-{plugin}-truncate-max-event-size",
        d._get(plugin, "truncate_max_event_size"),
        "Maximum size of the audit event sent to the underlying backend. If the size of an event is "
        "greater than this number, first request and response are removed, and if this doesn't reduce "
        "the size enough, event is discarded.",
    )


def _go_float(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)
