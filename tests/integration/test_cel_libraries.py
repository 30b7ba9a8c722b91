"""A schema rule using kube's URL library, evaluated by the server over real HTTPS.

wardle v1beta1 `Flunder.spec.flunderReference` carries `!isURL(self) || url(self).getScheme() == ''`
(apis/wardle/v1beta1.py): the rule is compiled at startup with the Kubernetes library and runs on
every write, like a CRD's rule on kube-apiserver.
"""

from __future__ import annotations

from tests.integration.conftest import Api

GROUP = "wardle.example.com"
FLUNDERS = f"/apis/{GROUP}/v1beta1/namespaces/default/flunders"


def _flunder(name: str, reference: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": name},
        "spec": {"flunderReference": reference, "referenceType": "Flunder"},
    }


async def test_url_rule_refuses_an_absolute_url_and_accepts_a_name(api: Api) -> None:
    r = await api.post(FLUNDERS, _flunder("bad", "https://example.com/f0"))
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    causes = [(c["reason"], c["field"], c["message"]) for c in r.body["details"]["causes"]]
    assert causes == [
        (
            "FieldValueInvalid",
            "spec.flunderReference",
            'Invalid value: "https://example.com/f0": is a name, not a URL',
        )
    ]
    assert (await api.get(f"{FLUNDERS}/bad")).status == 404

    # A name is no URL (isURL is false); an absolute path is a URL without a scheme: both pass.
    for name, reference in (("good", "f0"), ("path", "/f0")):
        r = await api.post(FLUNDERS, _flunder(name, reference))
        assert r.status == 201, r
        assert r.body["spec"]["flunderReference"] == reference


async def test_url_rule_is_published_in_openapi(api: Api) -> None:
    r = await api.get(f"/openapi/v3/apis/{GROUP}/v1beta1")
    assert r.status == 200, r
    flunder = r.body["components"]["schemas"]["com.example.wardle.v1beta1.Flunder"]
    rules = flunder["properties"]["spec"]["properties"]["flunderReference"]["x-kubernetes-validations"]
    assert rules == [
        {"rule": "!isURL(self) || url(self).getScheme() == ''", "message": "is a name, not a URL"}
    ]
