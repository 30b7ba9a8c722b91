"""matchConditions evaluated with the CEL engine of the schema rules (apis/cel).

kube's webhook matcher (`pkg/admission/plugin/webhook/matchconditions`) gives every condition the
variables `object`, `oldObject`, `request` (the AdmissionRequest the hook would receive) and
`authorizer` (the server's authorizer for the requesting user, with `authorizer.requestResource`),
with the Kubernetes libraries, and applies its rule to the results: a false condition skips the hook;
otherwise any error goes to the failure policy. Errors carry kube's texts
(`pkg/admission/plugin/cel/activation.go`).

Cost, as kube limits it (`pkg/apis/cel/config.go`): each condition at most `PER_CALL_LIMIT`
(else `operation cancelled: actual cost limit exceeded`, an error of that condition), all the
conditions of one webhook together at most `RUNTIME_BUDGET` (else the whole evaluation fails with
`validation failed due to running out of cost budget, ...`, which goes to the failure policy).
kube has no compile-time limit for them: the cluster accepts any configuration that compiles, and an
expensive condition fails when it runs. Our engine tracks no cost: a condition is charged its
estimate on the actual values (apis/cel/cost.py, an upper bound of kube's tracked cost) for all but
its authorization checks, and kube's fixed 350,000 for each check it actually makes (so, as in kube,
`a || b || c` passes when `a` is allowed, and a third check made stops the condition); a condition
whose estimate alone passes the limit is refused before it runs.

Expressions are compiled once, on first use, and kept: configurations rarely change, and the same
hook is evaluated on every matching request. A condition without `authorizer` is evaluated once on
the event loop (microseconds); one with it goes through `library_authz.evaluate`, which awaits the
authorizer between evaluations instead of blocking (see that module for why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apis.cel import cost, library_authz
from apis.cel.engine import DYN, CompileError, Environment, EvalError, Program
from apis.cel.library import KUBERNETES_LIBRARY
from apis.cel.library_authz import COST_LIMIT_EXCEEDED
from server.admission.webhook.condition_authorizer import authorize_for, request_resource, request_user
from server.admission.webhook.hooks import Hook, MatchCondition
from server.admission.webhook.matching import MatchResult
from server.authz.interface import Authorizer

# Past this many distinct expressions the cache starts over (configurations that churn).
MAX_PROGRAMS = 1024
PER_CALL_LIMIT = 1_000_000  # celconfig.PerCallLimit
RUNTIME_BUDGET = 2_500_000  # celconfig.RuntimeCELCostBudgetMatchConditions, per webhook
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


@dataclass(frozen=True, slots=True)
class _Compiled:
    program: Program
    uses_authorizer: bool


class CelConditions:
    """A ConditionEvaluator (server/admission/webhook/matching.py) backed by apis/cel.

    `authorizer` is the server's authorization chain; without one (tests of the plain path) the
    `authorizer` variable is declared but unbound, so using it is an evaluation error.
    """

    def __init__(self, authorizer: Authorizer | None = None) -> None:
        variables = {"object": DYN, "oldObject": DYN, "request": DYN, "authorizer": library_authz.AUTHORIZER}
        self._env = Environment(variables, KUBERNETES_LIBRARY + library_authz.AUTHZ_LIBRARY)
        self._authorizer = authorizer
        self._programs: dict[str, _Compiled | str] = {}

    def _program(self, expression: str) -> _Compiled | str:
        """The compiled program, or kube's text for an expression that does not compile."""
        found = self._programs.get(expression)
        if found is None:
            if len(self._programs) >= MAX_PROGRAMS:
                self._programs.clear()
            try:
                program = self._env.compile(expression)
                found = _Compiled(program, library_authz.uses_authorizer(program.tree))
            except CompileError as e:
                found = f"compilation error: {e}"
            self._programs[expression] = found
        return found

    async def evaluate(
        self, hook: Hook, conditions: tuple[MatchCondition, ...], request: dict[str, Any]
    ) -> MatchResult:
        variables: dict[str, Any] = {
            "object": request.get("object"),
            "oldObject": request.get("oldObject"),
            "request": request,
        }
        shapes = {name: cost.value_shape(value) for name, value in variables.items()}
        checks: library_authz.Checks | None = None
        budget = float(RUNTIME_BUDGET)
        errors: list[str] = []
        matches = True
        counted = 0  # errors before the first false condition (kube's evaluation-errors metric)
        for condition in conditions:
            compiled = self._program(condition.expression)
            if isinstance(compiled, str):
                errors.append(compiled)
                counted += matches
                continue
            # Everything but the checks is charged its estimate; each check made, kube's fixed cost.
            spent = cost.estimate_without_checks(compiled.program.tree, shapes)
            failure: str | None = None
            result: Any = None
            if spent > PER_CALL_LIMIT:
                spent, failure = PER_CALL_LIMIT, COST_LIMIT_EXCEEDED  # kube's tracked cost stops there
            else:
                try:
                    if compiled.uses_authorizer and self._authorizer is not None:
                        if checks is None:
                            user = request_user(request)
                            checks = library_authz.Checks(authorize_for(self._authorizer, user))
                            variables["authorizer"] = library_authz.authorizer_value(
                                request_resource(request)
                            )
                        limit = int((PER_CALL_LIMIT - spent) // cost.AUTHZ_CHECK)
                        result, made = await library_authz.evaluate(
                            compiled.program, variables, checks, limit=limit
                        )
                        spent += made * cost.AUTHZ_CHECK
                    else:
                        result = compiled.program.evaluate(variables)
                except library_authz.CostLimitExceeded:
                    spent, failure = PER_CALL_LIMIT, COST_LIMIT_EXCEEDED
                except EvalError as e:
                    failure = str(e)
            # As activation.go: the budget is checked after the evaluation, before its error.
            budget -= spent
            if budget < 0:
                # kube's ForInput fails as a whole: not even an earlier false condition stands.
                return MatchResult(True, (OUT_OF_BUDGET,))
            if failure is not None:
                errors.append(f"expression '{condition.expression}' resulted in error: {failure}")
                counted += matches
            elif result is False:
                matches = False  # kube evaluates every condition (and charges it) before deciding
            elif result is not True:
                errors.append(
                    f"expression '{condition.expression}' resulted in error: "
                    f"no such overload: expected bool, got {type(result).__name__}"
                )
                counted += matches
        if matches:
            return MatchResult(True, tuple(errors), counted)
        return MatchResult(False, counted_errors=counted)
