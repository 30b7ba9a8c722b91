"""Admission metrics with kube's names and labels (k8s.io/apiserver pkg/admission/metrics/metrics.go).

Dashboards for kube-apiserver's admission work unchanged: step and controller latencies, per-webhook
latency, requests, rejections and fail-opens. Two of kube's counters are named `..._count`, which
prometheus_client cannot expose for a counter (it always appends `_total`), so those two are exposed
under their exact names as gauges that only ever go up (rate() and increase() read them the same);
under `--workers N` those gauges are summed over the workers, as the counters are.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

STEP_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5)
WEBHOOK_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25)
CALLING_WEBHOOK_ERROR = "calling_webhook_error"
APISERVER_INTERNAL_ERROR = "apiserver_internal_error"
NO_ERROR = "no_error"


def _code(code: int) -> str:
    """kube records codes above 600 as 600."""
    return str(min(code, 600))


class AdmissionMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.step = Histogram(
            "apiserver_admission_step_admission_duration_seconds",
            "Admission sub-step latency histogram in seconds, broken out for each operation and API resource "
            "and step type (validate or admit).",
            ("type", "operation", "rejected"),
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.controller = Histogram(
            "apiserver_admission_controller_admission_duration_seconds",
            "Admission controller latency histogram in seconds, identified by name and broken out for each "
            "operation and API resource and type (validate or admit).",
            ("name", "type", "operation", "rejected"),
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.webhook = Histogram(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each "
            "operation and API resource and type (validate or admit).",
            ("name", "type", "operation", "rejected"),
            buckets=WEBHOOK_BUCKETS,
            registry=r,
        )
        self.webhook_requests = Counter(
            "apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each admission type "
            "(validating or mutating) and operation. Additional labels specify whether the request was "
            "rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep "
            "the metrics cardinality bounded.",
            ("name", "type", "operation", "code", "rejected"),
            registry=r,
        )
        self.rejections = Gauge(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each admission type "
            "(validating or admit) and operation. Additional labels specify an error type "
            "(calling_webhook_error or apiserver_internal_error if an error occurred; no_error "
            "otherwise) "
            "and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status "
            "code (honored by the apiserver when the code is greater or equal to 400). Codes greater "
            "than 600 "
            "are truncated to 600, to keep the metrics cardinality bounded.",
            ("name", "type", "operation", "error_type", "rejection_code"),
            registry=r,
            multiprocess_mode="sum",
        )
        self.fail_open = Gauge(
            "apiserver_admission_webhook_fail_open_count",
            "Admission webhook fail open count, identified by name and broken out for each admission type "
            "(validating or admit).",
            ("name", "type"),
            registry=r,
            multiprocess_mode="sum",
        )
        self.condition_errors = Counter(
            "apiserver_admission_match_condition_evaluation_errors",
            "Admission match condition evaluation errors count, identified by name of resource containing "
            "the match condition and broken out for each kind containing matchConditions (webhook or "
            "policy), operation and admission type (validate or admit).",
            ("name", "kind", "type", "operation"),
            registry=r,
        )
        self.condition_exclusions = Counter(
            "apiserver_admission_match_condition_exclusions",
            "Admission match condition evaluation exclusions count, identified by name of resource "
            "containing the match condition and broken out for each kind containing matchConditions "
            "(webhook or policy), operation and admission type (validate or admit).",
            ("name", "kind", "type", "operation"),
            registry=r,
        )

    def observe_step(self, kind: str, operation: str, rejected: bool, seconds: float) -> None:
        self.step.labels(kind, operation, str(rejected).lower()).observe(seconds)

    def observe_controller(
        self, name: str, kind: str, operation: str, rejected: bool, seconds: float
    ) -> None:
        self.controller.labels(name, kind, operation, str(rejected).lower()).observe(seconds)

    def observe_webhook(
        self, name: str, kind: str, operation: str, rejected: bool, code: int, seconds: float
    ) -> None:
        flag = str(rejected).lower()
        self.webhook.labels(name, kind, operation, flag).observe(seconds)
        self.webhook_requests.labels(name, kind, operation, _code(code), flag).inc()

    def observe_rejection(self, name: str, kind: str, operation: str, error_type: str, code: int) -> None:
        self.rejections.labels(name, kind, operation, error_type, _code(code)).inc()

    def observe_fail_open(self, name: str, kind: str) -> None:
        self.fail_open.labels(name, kind).inc()

    def observe_match_condition_errors(self, name: str, kind: str, operation: str, count: int) -> None:
        """kube's ObserveMatchConditionEvalError, once per condition that failed to evaluate; `kind`
        is the hook's type (admit/validating), the metric's `kind` label what holds the conditions."""
        if count:
            self.condition_errors.labels(name, "webhook", kind, operation).inc(count)

    def observe_match_condition_exclusion(self, name: str, kind: str, operation: str) -> None:
        """kube's ObserveMatchConditionExclusion: a hook not called because of its matchConditions."""
        self.condition_exclusions.labels(name, "webhook", kind, operation).inc()
