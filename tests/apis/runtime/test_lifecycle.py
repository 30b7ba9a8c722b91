"""kube's deprecation warning text and rule (k8s.io/apiserver pkg/endpoints/deprecation)."""

from __future__ import annotations

from apis.runtime.lifecycle import Lifecycle


def test_sample_apiserver_v1alpha1_warning() -> None:
    """introduced=1.0, removed=1.10: deprecated three minors after the introduction."""
    lifecycle = Lifecycle(introduced=(1, 0), removed=(1, 10))
    assert lifecycle.warning("wardle.example.com/v1alpha1", "Flunder") == (
        "wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+"
    )


def test_defaults_and_replacement() -> None:
    lifecycle = Lifecycle(introduced=(1, 20), replacement=("g/v1", "Thing"))
    assert lifecycle.deprecated_in == (1, 23) and lifecycle.removed_in == (1, 26)
    assert lifecycle.warning("g/v1beta1", "Thing") == (
        "g/v1beta1 Thing is deprecated in v1.23+, unavailable in v1.26+; use g/v1 Thing"
    )


def test_deprecated_only_from_the_deprecation_release() -> None:
    lifecycle = Lifecycle(introduced=(1, 0), deprecated=(1, 3))
    assert not lifecycle.is_deprecated((1, 2))
    assert lifecycle.is_deprecated((1, 3)) and lifecycle.is_deprecated((1, 32))
    assert lifecycle.is_deprecated((0, 0))  # a server that does not know its release warns
