"""matchConditions evaluated with the CEL engine of the schema rules (apis/cel).

kube's webhook matcher (`pkg/admission/plugin/webhook/matchconditions`) gives every condition the
variables `object`, `oldObject` and `request` (the AdmissionRequest the hook would receive) and
applies its rule to the results: a false condition skips the hook; otherwise any error goes to the
failure policy. Errors carry kube's texts (`pkg/admission/plugin/cel/activation.go`). Not carried:
the `authorizer` variable, and kube's per-call cost budget (conditions are bounded by the engine's own
iteration limit).

Expressions are compiled once, on first use, and kept: configurations rarely change, and the same
hook is evaluated on every matching request. Evaluation is cheap (microseconds) and runs on the event
loop.
"""

from __future__ import annotations

from typing import Any

from apis.cel.engine import DYN, CompileError, Environment, EvalError, Program
from server.admission.webhook.hooks import Hook, MatchCondition
from server.admission.webhook.matching import MatchResult

# Past this many distinct expressions the cache starts over (configurations that churn).
MAX_PROGRAMS = 1024


class CelConditions:
    """A ConditionEvaluator (server/admission/webhook/matching.py) backed by apis/cel."""

    def __init__(self) -> None:
        self._env = Environment({"object": DYN, "oldObject": DYN, "request": DYN})
        self._programs: dict[str, Program | str] = {}

    def _program(self, expression: str) -> Program | str:
        """The compiled program, or kube's text for an expression that does not compile."""
        found = self._programs.get(expression)
        if found is None:
            if len(self._programs) >= MAX_PROGRAMS:
                self._programs.clear()
            try:
                found = self._env.compile(expression)
            except CompileError as e:
                found = f"compilation error: {e}"
            self._programs[expression] = found
        return found

    def evaluate(
        self, hook: Hook, conditions: tuple[MatchCondition, ...], request: dict[str, Any]
    ) -> MatchResult:
        variables = {
            "object": request.get("object"),
            "oldObject": request.get("oldObject"),
            "request": request,
        }
        errors: list[str] = []
        for condition in conditions:
            program = self._program(condition.expression)
            if isinstance(program, str):
                errors.append(program)
                continue
            try:
                result = program.evaluate(variables)
            except EvalError as e:
                errors.append(f"expression '{condition.expression}' resulted in error: {e}")
                continue
            if result is False:
                return MatchResult(False)
            if result is not True:
                errors.append(
                    f"expression '{condition.expression}' resulted in error: "
                    f"no such overload: expected bool, got {type(result).__name__}"
                )
        return MatchResult(True, tuple(errors))
