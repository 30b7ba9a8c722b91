"""kube's authorizer library: expressions, their results and errors, what the authorizer is asked, costs.

Cases follow k8s.io/apiserver/pkg/cel/library/authz.go's documented examples and cost_test.go's
TestAuthzLibrary (same expressions, same estimated costs). The authorizer here is a table of answers
keyed by what is asked, so each case also shows the exact attributes a check sends.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from apis.cel import cost, library_authz
from apis.cel.engine import DYN, CompileError, Environment, EvalError
from apis.cel.library import KUBERNETES_LIBRARY
from apis.cel.library_authz import Check, Checks, Verdict

ENV = Environment(
    {"authorizer": library_authz.AUTHORIZER, "object": DYN}, KUBERNETES_LIBRARY + library_authz.AUTHZ_LIBRARY
)
PIZZAS = Check(
    verb="",
    resource_request=True,
    group="restaurant.programming-kubernetes.info",
    resource="pizzas",
    namespace="default",
    name="margherita",
)
DEPLOYMENTS_STATUS = Check(
    "create",
    resource_request=True,
    group="apps",
    resource="deployments",
    subresource="status",
    namespace="test",
    name="backend",
)


class Answers:
    """An authorizer answering from a table (unknown checks: no opinion), recording every call."""

    def __init__(self, table: dict[Check, Verdict]) -> None:
        self.table = table
        self.asked: list[Check] = []

    async def __call__(self, check: Check) -> Verdict:
        self.asked.append(check)
        return self.table.get(check, Verdict(False))


async def run(expression: str, table: dict[Check, Verdict] | None = None) -> tuple[Any, list[Check]]:
    answers = Answers(table or {})
    program = ENV.compile(expression)
    variables = {"authorizer": library_authz.authorizer_value(PIZZAS), "object": {}}
    result, made = await library_authz.evaluate(program, variables, Checks(answers))
    assert made >= len(answers.asked)  # every check made is charged, asked once or not
    return result, answers.asked


ALLOWED = Verdict(True, "RBAC: allowed by ClusterRoleBinding")
DENIED = Verdict(False, "no RBAC policy matched")
BROKEN = Verdict(False, "", "Post https://cluster/...: connection refused")

CASES: list[tuple[str, dict[Check, Verdict], Any, list[Check]]] = [
    (
        "authorizer.path('/healthz').check('get').allowed()",
        {Check("get", path="/healthz"): ALLOWED},
        True,
        [Check("get", path="/healthz")],
    ),
    (
        "authorizer.path('/healthz').check('get').reason()",
        {Check("get", path="/healthz"): ALLOWED},
        "RBAC: allowed by ClusterRoleBinding",
        [Check("get", path="/healthz")],
    ),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test')"
        ".name('backend').check('create').allowed()",
        {DEPLOYMENTS_STATUS: DENIED},
        False,
        [DEPLOYMENTS_STATUS],
    ),
    (
        # "" unsets subresource and name again, as in kube
        "authorizer.group('apps').resource('deployments').subresource('status').subresource('')"
        ".namespace('test').name('backend').name('').check('list').allowed()",
        {
            Check(
                "list", resource_request=True, group="apps", resource="deployments", namespace="test"
            ): ALLOWED
        },
        True,
        [Check("list", resource_request=True, group="apps", resource="deployments", namespace="test")],
    ),
    (
        "authorizer.group('').resource('pods').namespace('default').check('create').errored()",
        {Check("create", resource_request=True, resource="pods", namespace="default"): BROKEN},
        True,
        [Check("create", resource_request=True, resource="pods", namespace="default")],
    ),
    (
        "authorizer.group('').resource('pods').namespace('default').check('create').error()",
        {Check("create", resource_request=True, resource="pods", namespace="default"): BROKEN},
        "Post https://cluster/...: connection refused",
        [Check("create", resource_request=True, resource="pods", namespace="default")],
    ),
    (
        "authorizer.group('').resource('pods').namespace('default').check('create').error()",
        {},
        "",
        [Check("create", resource_request=True, resource="pods", namespace="default")],
    ),
    (
        # the request's own resource, with its namespace and name
        "authorizer.requestResource.check('delete').allowed()",
        {replace(PIZZAS, verb="delete"): ALLOWED},
        True,
        [replace(PIZZAS, verb="delete")],
    ),
    (
        "authorizer.serviceAccount('default', 'builder').group('').resource('pods').check('list').allowed()",
        {
            Check("list", ("default", "builder"), resource_request=True, resource="pods"): ALLOWED,
        },
        True,
        [Check("list", ("default", "builder"), resource_request=True, resource="pods")],
    ),
    (
        "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n1').labelSelector('app=web')"
        ".check('list').allowed()",
        {},
        False,
        [
            Check(
                "list",
                resource_request=True,
                resource="pods",
                field_selector="spec.nodeName=n1",
                label_selector="app=web",
            )
        ],
    ),
    (
        # the second check is asked only because the first one is not allowed
        "authorizer.group('apps').resource('deployments').check('update').allowed() || "
        "authorizer.group('apps').resource('deployments').check('patch').allowed()",
        {Check("patch", resource_request=True, group="apps", resource="deployments"): ALLOWED},
        True,
        [
            Check("update", resource_request=True, group="apps", resource="deployments"),
            Check("patch", resource_request=True, group="apps", resource="deployments"),
        ],
    ),
    (
        # one answer per distinct check, however often the expression asks it
        "authorizer.path('/metrics').check('get').allowed() == "
        "authorizer.path('/metrics').check('get').allowed()",
        {},
        True,
        [Check("get", path="/metrics")],
    ),
]


@pytest.mark.parametrize(("expression", "table", "expected", "asked"), CASES)
async def test_checks(
    expression: str, table: dict[Check, Verdict], expected: Any, asked: list[Check]
) -> None:
    result, seen = await run(expression, table)
    assert result == expected
    assert sorted(seen, key=repr) == sorted(asked, key=repr)


ERRORS = [
    ("authorizer.path('')", "path must not be empty"),
    ("authorizer.path('  ')", "path must not be empty"),
    ("authorizer.group('apps').resource('')", "resource must not be empty"),
    ("authorizer.group('apps').resource('  ')", "resource must not be empty"),
    ("authorizer.serviceAccount('not@a#valid!namespace', 'validname')", "Invalid service account namespace"),
    ("authorizer.serviceAccount('valid.example.com', 'invalid@*name')", "Invalid service account name"),
    ("authorizer.serviceAccount('default.svc', 'ok')", "Invalid service account namespace"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS)
async def test_errors(expression: str, message: str) -> None:
    with pytest.raises(EvalError) as caught:
        await run(expression)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "expression",
    [
        "authorizer.path('/healthz').resource('pods')",  # a PathCheck has no resource()
        "authorizer.group('apps').check('get')",  # nor a GroupCheck check()
        "authorizer.group('apps').resource('deployments').check(1)",
        "authorizer.path('/x').check('get') == true",
    ],
)
def test_types_are_checked_at_compile_time(expression: str) -> None:
    with pytest.raises(CompileError):
        ENV.compile(expression)


async def test_a_check_without_an_authorizer_is_an_error() -> None:
    program = ENV.compile("authorizer.path('/healthz').check('get').allowed()")
    with pytest.raises(EvalError) as caught:
        program.evaluate({"authorizer": library_authz.authorizer_value(), "object": {}})
    assert str(caught.value) == "no authorizer is available to this expression"


def test_uses_authorizer() -> None:
    assert library_authz.uses_authorizer(
        ENV.compile("object.all(k, authorizer.path(k).check('get').allowed())").tree
    )
    assert not library_authz.uses_authorizer(ENV.compile("object.size() > 1").tree)


# cost_test.go TestAuthzLibrary: the estimated costs (also kube's runtime costs).
COSTS = [
    ("authorizer.path('/healthz')", 2),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')",
        6,
    ),
    (
        "authorizer.group('').resource('pods')"
        ".fieldSelector('spec.nodeName=example-node-name.fully.qualified.domain.name.example.com')",
        1821,
    ),
    (
        "authorizer.group('').resource('pods')"
        ".labelSelector('spec.nodeName=example-node-name.fully.qualified.domain.name.example.com')",
        1821,
    ),
    ("authorizer.path('/healthz').check('get').allowed()", 350003),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')"
        ".check('create').allowed()",
        350007,
    ),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')"
        ".check('create').errored()",
        350007,
    ),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')"
        ".check('create').error()",
        350007,
    ),
]


@pytest.mark.parametrize(("expression", "expected"), COSTS)
def test_costs_are_kubes(expression: str, expected: int) -> None:
    assert cost.estimate(ENV.compile(expression).tree, {}) == expected


THREE = " || ".join(f"authorizer.path('/{p}').check('get').allowed()" for p in ("a", "b", "c"))


async def test_a_check_past_the_limit_stops_the_evaluation_and_is_never_asked() -> None:
    """cel-go stops at the cost limit whatever the expression would make of the error (here `||`,
    which would absorb an error): the third check is refused, and nobody is asked about it."""
    answers = Answers({})
    program = ENV.compile(THREE)
    with pytest.raises(library_authz.CostLimitExceeded) as caught:
        await library_authz.evaluate(
            program, {"authorizer": library_authz.authorizer_value()}, Checks(answers), limit=2
        )
    assert str(caught.value) == "operation cancelled: actual cost limit exceeded"
    assert sorted(c.path for c in answers.asked) == ["/a", "/b"]


async def test_checks_short_circuited_away_are_neither_made_nor_charged() -> None:
    answers = Answers({Check("get", path="/a"): ALLOWED})
    program = ENV.compile(THREE)
    result, made = await library_authz.evaluate(
        program, {"authorizer": library_authz.authorizer_value()}, Checks(answers), limit=2
    )
    assert (result, made) == (True, 1)
    assert [c.path for c in answers.asked] == ["/a"]
