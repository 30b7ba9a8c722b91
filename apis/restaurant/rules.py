"""The CEL rules both restaurant versions declare (x-kubernetes-validations), written once.

They run on the versioned object after defaulting, as kube runs a CRD's rules: each version states
the 30-portion limit on its own shape (v1beta1 sums quantities, v1alpha1 counts repeated names).
The cost rule is a transition rule: it compares with the stored cost, so it runs only on update.
`format` rather than `+ string(x)`, because kube's cost estimator refuses the latter as unbounded.
"""

from __future__ import annotations

from typing import Any

MAX_PORTIONS = 30
PORTIONS_MESSAGE = f"a pizza holds at most {MAX_PORTIONS} portions"

COST_MAY_AT_MOST_DOUBLE: dict[str, Any] = {
    "rule": "self <= oldSelf * 2.0",
    "messageExpression": "'cost may at most double in one update, from %s to %s'.format([oldSelf, self])",
}
