"""kube's authorizer library (k8s.io/apiserver/pkg/cel/library/authz.go, with AuthzSelectors).

`authorizer.path(p)`, `.group(g)`, `.resource(r)`, `.subresource(s)`, `.namespace(ns)`, `.name(n)`,
`.fieldSelector(s)`, `.labelSelector(s)`, `.check(verb)` → a Decision with `allowed()`, `reason()`,
`errored()`, `error()`; `authorizer.serviceAccount(ns, name)` checks for that service account
instead of the requesting user; `authorizer.requestResource` is the request's own resource, ready to
`.check(verb)`. Types, overload ids and error texts are kube's; the values are messages of the same
names (apis/cel/objects.py), and `requestResource` is a field of the Authorizer message rather than a
dotted variable (the engine has no qualified variable names), which reads the same in an expression.

Why evaluation is re-run rather than blocking: CEL evaluates synchronously, while our authorizer
(a SubjectAccessReview to the cluster, behind a cache) is async. Blocking a worker thread per
evaluation (asyncio.to_thread + run_coroutine_threadsafe) would hold a thread per request waiting on
the network, and could deadlock the default executor that aiohttp's DNS resolution itself needs.
Instead `evaluate` runs the expression on the loop; the first `check` whose decision is not known yet
is recorded and fails that evaluation; it is then authorized (awaited on the loop, never blocking
it), and the expression is evaluated again with the answer. CEL is pure, so each round takes the
same path as kube's evaluation up to its first unknown check: the checks asked are exactly those
kube's evaluation would make, in the same order, and the rounds are one more than the checks made
(at most two per expression within the per-call cost limit; `limit` enforces it, and a check past it
stops the evaluation as cel-go's cost limit does, without being asked). Expressions that do not use
`authorizer` do not come here at all. Re-running costs microseconds of CPU per round; a check
costs a SubjectAccessReview round trip (or a cache hit) either way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from apis.cel import ast, objects
from apis.cel.engine import BOOL, STRING, EvalError, Function, Overload, Program
from apis.meta.names import name_is_dns_label, name_is_dns_subdomain

AUTHORIZER = "kubernetes.authorization.Authorizer"
PATH_CHECK = "kubernetes.authorization.PathCheck"
GROUP_CHECK = "kubernetes.authorization.GroupCheck"
RESOURCE_CHECK = "kubernetes.authorization.ResourceCheck"
DECISION = "kubernetes.authorization.Decision"

# Rounds of evaluation before giving up: far more than the cost limits let an expression check.
MAX_ROUNDS = 16
_PENDING = "authorization check pending"
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"  # cel-go's text


@dataclass(frozen=True, slots=True)
class Check:
    """One authorization question, as kube's authorizer.AttributesRecord holds it: a path and
    verb (non-resource), or a resource (apiVersion always "*"). `service_account` is (namespace,
    name) for `serviceAccount(...)` checks, None for the requesting user."""

    verb: str
    service_account: tuple[str, str] | None = None
    path: str = ""
    resource_request: bool = False
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    field_selector: str = ""
    label_selector: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the authorizer said: allowed only on an explicit allow (no opinion is not allowed)."""

    allowed: bool
    reason: str = ""
    error: str = ""


Authorize = Callable[[Check], Awaitable[Verdict]]


class CostLimitExceeded(EvalError):
    """The expression made more checks than its per-call cost limit allows (cel-go stops the
    evaluation there, whatever the expression would have made of the error)."""


@dataclass
class Checks:
    """The checks of one evaluation (one webhook's conditions): decisions so far, the first check
    of the current round whose decision is not known yet, and the calls made in the current round,
    of which at most `limit` are allowed (None: no limit)."""

    authorize: Authorize
    decisions: dict[Check, Verdict] = field(default_factory=dict)
    pending: Check | None = None
    limit: int | None = None
    calls: int = 0
    exceeded: bool = False

    async def resolve(self) -> None:
        if self.pending is not None:
            asked, self.pending = self.pending, None
            self.decisions[asked] = await self.authorize(asked)


_CURRENT: ContextVar[Checks | None] = ContextVar("cel_authz_checks", default=None)


def uses_authorizer(node: ast.Node) -> bool:
    """Whether an expression reads the `authorizer` variable (else it takes the plain path)."""
    if isinstance(node, ast.Ident):
        return node.name == "authorizer"
    children: tuple[ast.Node | None, ...] = ()
    if isinstance(node, ast.Select):
        children = (node.operand,)
    elif isinstance(node, ast.Call):
        children = (node.target, *node.args)
    elif isinstance(node, ast.CreateList):
        children = node.elements
    elif isinstance(node, ast.CreateStruct):
        children = node.values
    elif isinstance(node, ast.Comprehension):
        children = (node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result)
    return any(child is not None and uses_authorizer(child) for child in children)


async def evaluate(
    program: Program, variables: Mapping[str, Any], checks: Checks, *, limit: int | None = None
) -> tuple[Any, int]:
    """`program.evaluate(variables)` where `check` calls are answered by `checks.authorize`, and
    the number of checks it made (kube charges each). The expression runs on the loop, and again
    after the first unknown check of each run has been authorized. More than `limit` calls stop it with
    CostLimitExceeded; a call past the limit is never sent to the authorizer."""
    checks.limit = limit
    for _ in range(MAX_ROUNDS):
        checks.calls, checks.exceeded = 0, False
        token = _CURRENT.set(checks)
        failure: EvalError | None = None
        try:
            result = program.evaluate(variables)
        except EvalError as e:
            failure = e
        finally:
            _CURRENT.reset(token)
        if checks.pending is None:
            if checks.exceeded:
                raise CostLimitExceeded(COST_LIMIT_EXCEEDED)
            if failure is not None:
                raise failure
            return result, checks.calls
        await checks.resolve()
    raise EvalError("too many authorization checks")


def authorizer_value(request_resource: Check | None = None) -> Any:
    """The `authorizer` variable: the requesting user's authorizer, with `requestResource` (kube's
    NewResourceAuthorizerVal) when the request is for a resource."""
    fields: dict[str, Any] = {}
    if request_resource is not None:
        fields["requestResource"] = objects.new(
            RESOURCE_CHECK,
            group=request_resource.group,
            resource=request_resource.resource,
            subresource=request_resource.subresource,
            namespace=request_resource.namespace,
            name=request_resource.name,
        )
    return objects.new(AUTHORIZER, **fields)


def _service_account(value: Any) -> tuple[str, str] | None:
    return (value.sa_namespace, value.sa_name) if value.sa_name else None


def _principal(value: Any) -> dict[str, str]:
    return {"sa_namespace": value.sa_namespace, "sa_name": value.sa_name}


def _path(authorizer: Any, path: str) -> Any:
    if not path.strip():
        raise ValueError("path must not be empty")
    return objects.new(PATH_CHECK, path=path, **_principal(authorizer))


def _group(authorizer: Any, group: str) -> Any:
    return objects.new(GROUP_CHECK, group=group, **_principal(authorizer))


def _service_account_authorizer(authorizer: Any, namespace: str, name: str) -> Any:
    # kube validates the name first (ValidateServiceAccountName), then the namespace.
    if name_is_dns_subdomain(name, False):
        raise ValueError("Invalid service account name")
    if name_is_dns_label(namespace, False):
        raise ValueError("Invalid service account namespace")
    return objects.new(AUTHORIZER, sa_namespace=namespace, sa_name=name)


def _resource(group_check: Any, resource: str) -> Any:
    if not resource.strip():
        raise ValueError("resource must not be empty")
    return objects.new(RESOURCE_CHECK, group=group_check.group, resource=resource, **_principal(group_check))


def _with(field_name: str) -> Callable[[Any, str], Any]:
    """A ResourceCheck builder: a copy with one field set ("" unsets it, as in kube)."""

    def build(check: Any, value: str) -> Any:
        out = objects.new(RESOURCE_CHECK)
        out.CopyFrom(check)
        setattr(out, field_name, value)
        return out

    return build


def _decide(check: Check) -> Any:
    checks = _CURRENT.get()
    if checks is None:
        raise ValueError("no authorizer is available to this expression")
    checks.calls += 1
    if checks.limit is not None and checks.calls > checks.limit:
        checks.exceeded = True
        raise ValueError(COST_LIMIT_EXCEEDED)
    verdict = checks.decisions.get(check)
    if verdict is None:
        # Only the first unknown check of a round is asked: up to it the evaluation took the path
        # kube's would, past it the path depends on the answer (`a || b` needs b only if a fails).
        if checks.pending is None:
            checks.pending = check
        raise ValueError(_PENDING)
    return objects.new(DECISION, allowed=verdict.allowed, reason=verdict.reason, error=verdict.error)


def _path_check(path_check: Any, verb: str) -> Any:
    return _decide(Check(verb=verb, service_account=_service_account(path_check), path=path_check.path))


def _resource_check(rc: Any, verb: str) -> Any:
    return _decide(
        Check(
            verb=verb,
            service_account=_service_account(rc),
            resource_request=True,
            group=rc.group,
            resource=rc.resource,
            subresource=rc.subresource,
            namespace=rc.namespace,
            name=rc.name,
            field_selector=rc.field_selector,
            label_selector=rc.label_selector,
        )
    )


def _member(name: str, overload: str, params: list[str], result: str, impl: Callable[..., Any]) -> Function:
    return Function(name, [Overload(overload, params, result, impl, member=True)])


# kube's authzLibraryDecls and authzSelectorsLibraryDecls, overload ids included.
AUTHZ_LIBRARY: tuple[Function, ...] = (
    _member("path", "authorizer_path", [AUTHORIZER, STRING], PATH_CHECK, _path),
    _member("group", "authorizer_group", [AUTHORIZER, STRING], GROUP_CHECK, _group),
    _member(
        "serviceAccount",
        "authorizer_serviceaccount",
        [AUTHORIZER, STRING, STRING],
        AUTHORIZER,
        _service_account_authorizer,
    ),
    _member("resource", "groupcheck_resource", [GROUP_CHECK, STRING], RESOURCE_CHECK, _resource),
    _member(
        "subresource",
        "resourcecheck_subresource",
        [RESOURCE_CHECK, STRING],
        RESOURCE_CHECK,
        _with("subresource"),
    ),
    _member(
        "namespace", "resourcecheck_namespace", [RESOURCE_CHECK, STRING], RESOURCE_CHECK, _with("namespace")
    ),
    _member("name", "resourcecheck_name", [RESOURCE_CHECK, STRING], RESOURCE_CHECK, _with("name")),
    _member(
        "fieldSelector",
        "authorizer_fieldselector",
        [RESOURCE_CHECK, STRING],
        RESOURCE_CHECK,
        _with("field_selector"),
    ),
    _member(
        "labelSelector",
        "authorizer_labelselector",
        [RESOURCE_CHECK, STRING],
        RESOURCE_CHECK,
        _with("label_selector"),
    ),
    Function(
        "check",
        [
            Overload("pathcheck_check", [PATH_CHECK, STRING], DECISION, _path_check, member=True),
            Overload("resourcecheck_check", [RESOURCE_CHECK, STRING], DECISION, _resource_check, member=True),
        ],
    ),
    _member("errored", "decision_errored", [DECISION], BOOL, lambda d: bool(d.error)),
    _member("error", "decision_error", [DECISION], STRING, lambda d: d.error),
    _member("allowed", "decision_allowed", [DECISION], BOOL, lambda d: d.allowed),
    _member("reason", "decision_reason", [DECISION], STRING, lambda d: d.reason),
)
