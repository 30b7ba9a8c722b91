"""Auditing (kube's k8s.io/apiserver pkg/audit + plugin/pkg/audit): who did what, when, with what result.

Modules: `options` (flags), `policy` (which level a request gets), `event` (the audit.k8s.io/v1 Event
of one request), `capture` (request/response bodies), `backend` (batching, truncation, union),
`log_backend` and `webhook_backend` (destinations), `pipeline` (options → a running pipeline, and
where its filters go in the chain). The filters themselves are in server.filters.audit.

This package deliberately re-exports nothing: server.filters.audit imports its submodules, and a
heavy package init would tie the filter chain's imports into a cycle.
"""
