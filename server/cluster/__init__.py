"""Talking to the Kubernetes cluster this server extends: the few calls delegated auth needs.

Credentials are resolved with the `kubernetes` package's config loader (kubeconfig contexts, exec
plugins, token files, in-cluster service account), off the event loop; the calls themselves
(TokenReview, SubjectAccessReview, ConfigMap get and watch) go through a small aiohttp client so the
request path never touches a synchronous library. docs/cluster.md explains the choice.
"""
