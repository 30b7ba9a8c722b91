"""Assembles authorization from the flags (kube's DelegatingAuthorizationOptions.toAuthorizer).

system:masters, then the always-allowed paths, then — with a cluster to ask — a SubjectAccessReview.
Without a cluster (standalone) nothing else is allowed: the same chain, one link shorter.
"""

from __future__ import annotations

import logging

from server.authz import build_authorizer
from server.authz.interface import Authorizer
from server.authz.options import AuthorizationOptions
from server.authz.subject_access_review import SubjectAccessReviewAuthorizer
from server.cluster.client import ClusterClient

logger = logging.getLogger(__name__)


def authorizer_from_options(options: AuthorizationOptions, client: ClusterClient | None) -> Authorizer:
    delegates: list[Authorizer] = []
    if client is None:
        logger.debug("no authorization-kubeconfig and not in a cluster: SubjectAccessReviews are not used")
    else:
        delegates.append(
            SubjectAccessReviewAuthorizer(
                client,
                authorized_ttl=options.authorization_webhook_cache_authorized_ttl,
                unauthorized_ttl=options.authorization_webhook_cache_unauthorized_ttl,
            )
        )
    return build_authorizer(always_allow_paths=options.authorization_always_allow_paths, delegates=delegates)
