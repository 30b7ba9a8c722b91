"""matchConditions through the CEL engine: kube's matcher rule and error texts."""

from __future__ import annotations

from collections.abc import Callable

from apis.meta.user import UserInfo
from server.admission.webhook.conditions import CelConditions
from server.admission.webhook.hooks import ClientConfig, Hook, MatchCondition
from server.authz.interface import ALLOW, AuthzAttributes, Decision, deny
from server.authz.subject_access_review import review_spec

HOOK = Hook("h.example.com", "c", 0, False, (), ClientConfig("https://127.0.0.1/"))
REQUEST = {
    "operation": "CREATE",
    "dryRun": False,
    "object": {"metadata": {"name": "p", "labels": {"team": "a"}}, "spec": {"toppings": []}},
    "oldObject": None,
}


def conditions(*pairs: tuple[str, str]) -> tuple[MatchCondition, ...]:
    return tuple(MatchCondition(name, expression) for name, expression in pairs)


async def test_all_true_matches_without_errors() -> None:
    result = await CelConditions().evaluate(
        HOOK,
        conditions(
            ("create", "request.operation == 'CREATE'"), ("team", "object.metadata.labels.team == 'a'")
        ),
        REQUEST,
    )
    assert (result.matches, result.errors) == (True, ())


async def test_a_false_condition_skips_the_hook_even_next_to_an_error() -> None:
    result = await CelConditions().evaluate(
        HOOK, conditions(("broken", "object.spec.nope == 1"), ("dry", "request.dryRun")), REQUEST
    )
    assert (result.matches, result.errors) == (False, ())


async def test_errors_are_counted_up_to_the_first_false_condition() -> None:
    """kube's matcher walks the results in order and stops at the first false one: only the errors
    before it reach apiserver_admission_match_condition_evaluation_errors."""
    broken, false = ("broken", "object.spec.nope == 1"), ("dry", "request.dryRun")
    evaluator = CelConditions()
    counted = [
        (await evaluator.evaluate(HOOK, conditions(*pairs), REQUEST)).counted_errors
        for pairs in ((broken, false), (false, broken), (broken, ("syntax", "object.(")))
    ]
    assert counted == [1, 0, 2]


async def test_errors_carry_kubes_texts() -> None:
    evaluator = CelConditions()
    result = await evaluator.evaluate(
        HOOK,
        conditions(
            ("missing", "object.spec.nope == 1"), ("syntax", "object.("), ("old", "oldObject == null")
        ),
        REQUEST,
    )
    assert result.matches
    assert result.errors[0].startswith("expression 'object.spec.nope == 1' resulted in error: ")
    assert result.errors[1].startswith("compilation error: ")
    assert len(result.errors) == 2


# --- the authorizer variable and kube's cost limits ------------------------------------------------

TOPPINGS_CREATE = (
    "authorizer.group('restaurant.programming-kubernetes.info').resource('toppings')"
    ".check('create').allowed()"
)
ALICE = {
    "username": "alice",
    "uid": "u-1",
    "groups": ["cooks", "system:authenticated"],
    "extra": {"k": ["v"]},
}
PIZZA_REQUEST = {
    **REQUEST,
    "name": "p",
    "namespace": "default",
    "userInfo": ALICE,
    "resource": {
        "group": "restaurant.programming-kubernetes.info",
        "version": "v1alpha1",
        "resource": "pizzas",
    },
    "requestResource": {
        "group": "restaurant.programming-kubernetes.info",
        "version": "v1beta1",
        "resource": "pizzas",
    },
}


class Rules:
    """An Authorizer (server.authz.interface) that allows what `allow` says, recording every question."""

    def __init__(self, allow: Callable[[AuthzAttributes], bool]) -> None:
        self.allow = allow
        self.asked: list[AuthzAttributes] = []

    async def authorize(self, attrs: AuthzAttributes) -> Decision:
        self.asked.append(attrs)
        return ALLOW if self.allow(attrs) else deny("no")


async def test_the_authorizer_is_asked_for_the_requesting_user() -> None:
    rules = Rules(lambda a: a.resource == "toppings")
    conditions_ = conditions(("may-create-toppings", TOPPINGS_CREATE))
    result = await CelConditions(rules).evaluate(HOOK, conditions_, PIZZA_REQUEST)
    assert (result.matches, result.errors) == (True, ())
    [asked] = rules.asked
    assert asked.user == UserInfo("alice", "u-1", ("cooks", "system:authenticated"), {"k": ("v",)})
    assert review_spec(asked) == {
        "user": "alice",
        "uid": "u-1",
        "groups": ["cooks", "system:authenticated"],
        "extra": {"k": ["v"]},
        "resourceAttributes": {
            "verb": "create",
            "group": "restaurant.programming-kubernetes.info",
            "version": "*",
            "resource": "toppings",
        },
    }
    denied = await CelConditions(Rules(lambda a: False)).evaluate(HOOK, conditions_, PIZZA_REQUEST)
    assert (denied.matches, denied.errors) == (False, ())


async def test_request_resource_is_the_requests_own() -> None:
    rules = Rules(lambda a: True)
    result = await CelConditions(rules).evaluate(
        HOOK, conditions(("own", "authorizer.requestResource.check('update').allowed()")), PIZZA_REQUEST
    )
    assert result.matches
    [asked] = rules.asked
    assert (asked.api_group, asked.api_version, asked.resource, asked.namespace, asked.name, asked.verb) == (
        "restaurant.programming-kubernetes.info",
        "*",
        "pizzas",
        "default",
        "p",
        "update",
    )


async def test_service_account_checks_ask_for_the_service_account() -> None:
    rules = Rules(lambda a: a.user.name == "system:serviceaccount:kitchen:oven")
    expression = "authorizer.serviceAccount('kitchen', 'oven').path('/healthz').check('get').allowed()"
    result = await CelConditions(rules).evaluate(HOOK, conditions(("sa", expression)), PIZZA_REQUEST)
    assert result.matches
    [asked] = rules.asked
    assert asked.user == UserInfo(
        "system:serviceaccount:kitchen:oven",
        groups=("system:serviceaccounts", "system:serviceaccounts:kitchen"),
    )
    assert (asked.is_resource_request, asked.path, asked.verb) == (False, "/healthz", "get")


async def test_conditions_without_the_authorizer_never_ask_it() -> None:
    rules = Rules(lambda a: True)
    result = await CelConditions(rules).evaluate(
        HOOK, conditions(("create", "request.operation == 'CREATE'")), PIZZA_REQUEST
    )
    assert result.matches and rules.asked == []


async def test_a_third_check_passes_the_per_call_limit() -> None:
    """Three checks made (3 x 350,000) pass kube's per-call limit of 1e6: an error of that condition
    for the failure policy, the third never asked; a false condition next to it still skips the hook."""
    three = " && ".join(
        TOPPINGS_CREATE.replace("'create'", f"'{verb}'") for verb in ("create", "update", "delete")
    )
    rules = Rules(lambda a: True)
    result = await CelConditions(rules).evaluate(HOOK, conditions(("three", three)), PIZZA_REQUEST)
    assert result.matches
    assert result.errors == (
        f"expression '{three}' resulted in error: operation cancelled: actual cost limit exceeded",
    )
    assert sorted(a.verb for a in rules.asked) == ["create", "update"]
    skipped = await CelConditions(rules).evaluate(
        HOOK, conditions(("three", three), ("dry", "request.dryRun")), PIZZA_REQUEST
    )
    assert (skipped.matches, skipped.errors) == (False, ())


async def test_three_check_sites_pass_when_only_one_check_is_made() -> None:
    """kube charges the checks made, not the checks written: the first allowed check decides `||`."""
    three = " || ".join(
        TOPPINGS_CREATE.replace("'create'", f"'{verb}'") for verb in ("create", "update", "delete")
    )
    rules = Rules(lambda a: True)
    result = await CelConditions(rules).evaluate(HOOK, conditions(("any", three)), PIZZA_REQUEST)
    assert (result.matches, result.errors) == (True, ())
    assert [a.verb for a in rules.asked] == ["create"]


async def test_an_expression_whose_estimate_passes_the_limit_is_refused_before_it_runs() -> None:
    expression = "[1, 2, 3, 4, 5, 6].all(x, object.metadata.name.matches('^p+$') && request.name.size() > 0)"
    long_request = {**PIZZA_REQUEST, "object": {"metadata": {"name": "p" * 2_000_000}}}
    result = await CelConditions().evaluate(HOOK, conditions(("big", expression)), long_request)
    assert result.errors == (
        f"expression '{expression}' resulted in error: operation cancelled: actual cost limit exceeded",
    )


async def test_the_webhooks_conditions_share_kubes_budget() -> None:
    """2.5e6 per webhook: seven single-check conditions fit (7 x 350,003), the eighth does not, and
    then the whole evaluation fails, even a condition that was false."""
    verbs = ["get", "list", "watch", "create", "update", "patch", "delete"]
    seven = [(v, TOPPINGS_CREATE.replace("'create'", f"'{v}'")) for v in verbs]
    rules = Rules(lambda a: True)
    fits = await CelConditions(rules).evaluate(HOOK, conditions(*seven), PIZZA_REQUEST)
    assert (fits.matches, fits.errors) == (True, ())
    assert len(rules.asked) == 7
    eight = [
        ("dry", "request.dryRun"),
        *seven,
        ("again", TOPPINGS_CREATE.replace("'create'", "'deletecollection'")),
    ]
    over = await CelConditions(rules).evaluate(HOOK, conditions(*eight), PIZZA_REQUEST)
    assert over.matches
    assert over.errors == (
        "validation failed due to running out of cost budget, no further validation rules will be run",
    )
